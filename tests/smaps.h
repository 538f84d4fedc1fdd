/* What the kernel did with a process's pages, read from /proc/self/smaps
 * (test_hugepage, test_mpi_misc). */
#ifndef DPC_TEST_SMAPS_H
#define DPC_TEST_SMAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* AnonHugePages (bytes) of the mapping holding p, -1 if not found */
static inline long smaps_huge_bytes_at(const void *p)
{
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    bool inside = false;
    long kb = -1;
    while (f && fgets(line, sizeof(line), f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' '))
            inside = (uintptr_t)p >= lo && (uintptr_t)p < hi;
        else if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            break;
    }
    if (f)
        fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

#endif
