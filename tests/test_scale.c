/*
 * Scale: every registered algorithm at p = 256 and p = 1024 simulated ranks
 * with small counts, checked like the matrix (exact results, traffic equal
 * to the formula). All-to-all runs at 256 only: its p^2 messages at 1024
 * would measure the simulator, not the algorithm.
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include <stdlib.h>
#include "matrix.h"

static const int scale_ps[] = {256, 1024};
static int nalgos;

START_TEST(test_scale)
{
    const dpc_algo_t *al = dpc_algos()[_i / 2];
    int p = scale_ps[_i % 2];
    if (getenv("DPC_TEST_QUICK") && atoi(getenv("DPC_TEST_QUICK")))
        p /= 8;    /* under valgrind */
    bool a2a = al->coll == DPC_ALLTOALL || al->coll == DPC_ALLTOALLV;
    if (a2a && p > 256)
        return;
    bool total = al->coll == DPC_ALLREDUCE || al->coll == DPC_BCAST;
    size_t counts[2] = {total ? (size_t)p + 3 : 1, total ? 5 : 2};
    for (int k = 0; k < 2; k++) {
        mx_case_t c = {.algo = al, .p = p, .count = counts[k], .in_place = k,
                       .dt = dpc_coll_reduces(al->coll) ? DPC_INT32 : DPC_INT8, .op = DPC_OP_SUM};
        char msg[512];
        if (mx_run(&c, msg, sizeof(msg)))
            ck_abort_msg("%s/%s p=%d count=%zu: %s", dpc_coll_name(al->coll), al->name, p,
                         c.count, msg);
    }
}
END_TEST

int main(void)
{
    while (dpc_algos()[nalgos])
        nalgos++;
    Suite *su = suite_create("scale");
    TCase *tc = tcase_create("large p");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_scale, 0, nalgos * 2);
    suite_add_tcase(su, tc);
    return check_run(su);
}
