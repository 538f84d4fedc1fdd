/*
 * Huge pages for reused large host buffers (src/dpc_hugepage.h): a range is
 * made of 2 MiB pages the second time it is passed, never the first, only
 * its whole 2 MiB pages, with its contents unchanged; small ranges and a
 * turned-off library are left alone. What the kernel did is read back from
 * /proc/self/smaps (AnonHugePages of the mapping), not taken from the
 * function's word. Where the machine gives no huge pages on request
 * (transparent huge pages "never", a kernel before 6.1, none free), the
 * test says so and checks only what needs none.
 */
#include "config.h"
#include "smaps.h"
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "check_run.h"
#include "dpc_hugepage.h"

START_TEST(test_second_sighting)
{
    size_t n = 8u << 20;
    /* 10 MiB mapped, the buffer placed 1 MiB + 64 B into it: not aligned,
     * so its whole 2 MiB pages are three (2-4, 4-6, 6-8 MiB of the map) */
    char *map = mmap(NULL, n + (2u << 20), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    ck_assert(map != MAP_FAILED);
    char *map_al = (char *)(((uintptr_t)map + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
    char *buf = map_al + (1u << 20) + 64;
    size_t len = n - (2u << 20);   /* 6 MiB: ends 7 MiB + 64 B into the aligned part */
    for (size_t i = 0; i < len; i++)
        buf[i] = (char)(i * 131 + 7);
    dpc_hugepage_enable(1);
    ck_assert_int_eq(dpc_hugepage_note(buf, 1u << 20), DPC_HUGEPAGE_SMALL);
    dpc_hugepage_t first = dpc_hugepage_note(buf, len);
    if (first == DPC_HUGEPAGE_OFF) {
        printf("test_hugepage: this machine gives no huge pages on request "
               "(transparent_hugepage never, or a kernel before 6.1): checked the small and "
               "off cases only\n");
        munmap(map, n + (2u << 20));
        return;
    }
    ck_assert_int_eq(first, DPC_HUGEPAGE_NOTED);
    ck_assert_msg(smaps_huge_bytes_at(buf) == 0, "huge after one sighting: %ld", smaps_huge_bytes_at(buf));
    dpc_hugepage_t second = dpc_hugepage_note(buf, len);
    ck_assert(second == DPC_HUGEPAGE_MADE || second == DPC_HUGEPAGE_REFUSED);
    if (second == DPC_HUGEPAGE_REFUSED) {
        printf("test_hugepage: the kernel refused to collapse the range (no free huge page?): "
               "the contents checked only\n");
    } else {
        long got = smaps_huge_bytes_at(buf);
        /* whole pages inside [buf, buf + len): 2 MiB-aligned 2..6 MiB of
         * the aligned part, two of them (the first partial, 1-2 MiB, and
         * the last, 6-7 MiB, stay small) */
        ck_assert_msg(got == (long)(4u << 20), "AnonHugePages %ld, expected the two whole pages",
                      got);
    }
    for (size_t i = 0; i < len; i++)
        if (buf[i] != (char)(i * 131 + 7))
            ck_abort_msg("byte %zu changed by the collapse", i);
    ck_assert_int_eq(dpc_hugepage_note(buf, len), DPC_HUGEPAGE_DONE);
    dpc_hugepage_enable(0);
    ck_assert_int_eq(dpc_hugepage_note(buf, len), DPC_HUGEPAGE_OFF);
    dpc_hugepage_enable(1);
    munmap(map, n + (2u << 20));
}
END_TEST

/* More ranges than slots: the one seen longest ago gives way, and a range
 * seen twice in a row is still made huge (or refused) on its second
 * sighting. */
START_TEST(test_many_ranges)
{
    dpc_hugepage_enable(1);
    size_t n = 4u << 20;
    char *map = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ck_assert(map != MAP_FAILED);
    memset(map, 1, n);
    if (dpc_hugepage_note(map, n) == DPC_HUGEPAGE_OFF) {
        munmap(map, n);
        return;
    }
    /* addresses far apart, never mapped: only noted once each */
    for (uintptr_t k = 1; k <= 2 * DPC_HUGEPAGE_SLOTS; k++)
        ck_assert_int_eq(dpc_hugepage_note((void *)(k << 32), 4u << 20), DPC_HUGEPAGE_NOTED);
    /* map's sighting was pushed out by them: seen afresh, then made */
    ck_assert_int_eq(dpc_hugepage_note(map, n), DPC_HUGEPAGE_NOTED);
    dpc_hugepage_t again = dpc_hugepage_note(map, n);
    ck_assert(again == DPC_HUGEPAGE_MADE || again == DPC_HUGEPAGE_REFUSED);
    munmap(map, n);
}
END_TEST

int main(void)
{
    Suite *s = suite_create("hugepage");
    TCase *tc = tcase_create("hugepage");
    tcase_add_test(tc, test_second_sighting);
    tcase_add_test(tc, test_many_ranges);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return check_run(s);
}
