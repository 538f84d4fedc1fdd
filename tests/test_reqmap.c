/*
 * The request map of persistent collectives (src/pmpi/reqmap.c) against a
 * plain array searched from end to end: random puts, replacements and
 * deletions of handles shaped like MPICH's (a kind in the high bits over
 * an index), many of them landing in the same runs of slots, checked
 * after every step for every handle ever used.
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include "pmpi/reqmap.h"   /* (not by -I src/pmpi: its check.h would hide Check's) */
#include <stdint.h>
#include <stdlib.h>

#define HANDLES 3000

static MPI_Request handle(int i)
{
    /* (MPI_Request is an int in MPICH's ABI) */
    return (MPI_Request)(0x2c000000 | (i * 7));
}

START_TEST(test_against_array)
{
    static void *ref[HANDLES];   /* what handle(i) maps to, NULL for nothing */
    static char vals[HANDLES * 2];
    dpc_reqmap_t m = {0};
    unsigned seed = 12345;
    size_t live = 0;
    for (int step = 0; step < 40000; step++) {
        int i = (int)(rand_r(&seed) % HANDLES);
        /* mostly puts early, mostly deletions late: the table grows, then
         * empties through long runs of deletions */
        int put_pct = step < 20000 ? 70 : 30;
        if ((int)(rand_r(&seed) % 100) < put_pct) {
            void *v = &vals[2 * i + (int)(rand_r(&seed) % 2)];
            ck_assert_int_eq(dpc_reqmap_put(&m, handle(i), v), 0);
            live += ref[i] == NULL;
            ref[i] = v;
        } else {
            dpc_reqmap_del(&m, handle(i));
            live -= ref[i] != NULL;
            ref[i] = NULL;
        }
        ck_assert_uint_eq(m.n, live);
        ck_assert_uint_ge(m.cap, 2 * m.n);
        if (step % 97 == 0 || step > 39800)
            for (int k = 0; k < HANDLES; k++)
                ck_assert_msg(dpc_reqmap_get(&m, handle(k)) == ref[k],
                              "step %d: handle %d maps to %p, expected %p", step, k,
                              dpc_reqmap_get(&m, handle(k)), ref[k]);
    }
    /* handles never put */
    for (int k = HANDLES; k < 2 * HANDLES; k++)
        ck_assert_ptr_null(dpc_reqmap_get(&m, handle(k)));
    dpc_reqmap_free(&m);
    ck_assert_ptr_null(dpc_reqmap_get(&m, handle(1)));
}
END_TEST

int main(void)
{
    Suite *su = suite_create("reqmap");
    TCase *tc = tcase_create("map");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_against_array);
    suite_add_tcase(su, tc);
    return check_run(su);
}
