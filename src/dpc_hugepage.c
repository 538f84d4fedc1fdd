/* Huge pages for reused large host buffers (see dpc_hugepage.h). */
#include "config.h"
#include "dpc_hugepage.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/utsname.h>

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25   /* Linux 6.1 (older C library headers lack the name) */
#endif

typedef struct {
    uintptr_t lo, hi;   /* whole 2 MiB pages; hi == 0: a free slot */
    unsigned seen;      /* > DPC_HUGEPAGE_AFTER: made huge or refused */
    uint64_t when;      /* the last sighting (a count of them): the oldest gives way */
} range_t;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static range_t ranges[DPC_HUGEPAGE_SLOTS];
static int state = -1;   /* -1: not looked yet, 0: off, 1: on */
static uint64_t sightings;

/* Whether transparent huge pages may be asked for: not where the
 * administrator chose "never" (MADV_COLLAPSE itself would not ask), nor on
 * a kernel without them or older than the advice (6.1: an older one
 * refuses it with EINVAL, as a newer one refuses a range it cannot make
 * huge). */
static bool machine_allows(void)
{
    char buf[128] = "";
    struct utsname u;
    int major = 0, minor = 0;
    if (uname(&u) != 0 || sscanf(u.release, "%d.%d", &major, &minor) != 2 ||
        major * 1000 + minor < 6001)
        return false;
    FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (!f)
        return false;
    bool ok = fgets(buf, sizeof(buf), f) && !strstr(buf, "[never]");
    fclose(f);
    return ok;
}

void dpc_hugepage_enable(int on)
{
    pthread_mutex_lock(&lock);
    state = on ? machine_allows() : 0;
    memset(ranges, 0, sizeof(ranges));
    pthread_mutex_unlock(&lock);
}

/* The range's slot, a new one in place of the one seen longest ago if it
 * has none (so a program passing more than DPC_HUGEPAGE_SLOTS large buffers
 * in turn has none made huge: each gives way before its second sighting). */
static range_t *slot_for(uintptr_t lo, uintptr_t hi)
{
    range_t *oldest = &ranges[0];
    for (int i = 0; i < DPC_HUGEPAGE_SLOTS; i++) {
        if (ranges[i].lo == lo && ranges[i].hi == hi) {
            ranges[i].when = ++sightings;
            return &ranges[i];
        }
        if (ranges[i].when < oldest->when)
            oldest = &ranges[i];
    }
    *oldest = (range_t){.lo = lo, .hi = hi, .seen = 0, .when = ++sightings};
    return oldest;
}

dpc_hugepage_t dpc_hugepage_note(const void *p, size_t bytes)
{
    uintptr_t mask = (uintptr_t)DPC_HUGEPAGE_BYTES - 1;
    uintptr_t lo = ((uintptr_t)p + mask) & ~mask;
    uintptr_t hi = ((uintptr_t)p + bytes) & ~mask;
    if (!p || bytes < DPC_HUGEPAGE_BYTES || hi <= lo)
        return DPC_HUGEPAGE_SMALL;
    pthread_mutex_lock(&lock);
    if (state < 0)
        state = machine_allows();
    dpc_hugepage_t did = DPC_HUGEPAGE_OFF;
    if (state) {
        range_t *r = slot_for(lo, hi);
        r->seen += r->seen <= DPC_HUGEPAGE_AFTER;
        did = r->seen < DPC_HUGEPAGE_AFTER ? DPC_HUGEPAGE_NOTED
              : r->seen > DPC_HUGEPAGE_AFTER ? DPC_HUGEPAGE_DONE : DPC_HUGEPAGE_MADE;
        if (did == DPC_HUGEPAGE_MADE) {
            r->seen++;   /* (once, whatever the answer) */
            if (madvise((void *)lo, hi - lo, MADV_COLLAPSE) != 0)
                did = DPC_HUGEPAGE_REFUSED;   /* (pinned, shared, not anonymous...) */
        }
    }
    pthread_mutex_unlock(&lock);
    return did;
}
