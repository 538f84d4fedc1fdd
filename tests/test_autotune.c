/*
 * DPCOLL_AUTOTUNE's pure parts (src/dpc_autotune.c): which algorithms a
 * call's signature is measured with (the model's pick first, then those it
 * prices within DPC_AUTOTUNE_SPREAD of that, at most
 * DPC_AUTOTUNE_CANDIDATES, each priced independently here), the median of
 * a candidate's calls, and the decision from every rank's medians: the
 * slowest rank's time counts, another algorithm than the model's only by a
 * margin, and the same answer on every rank from the same times.
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include <math.h>
#include "dpc_autotune.h"
#include "dpc_config.h"
#include "dpc_cost.h"

/* The candidates against the model priced here algorithm by algorithm. */
static void check_candidates(dpc_coll_args_t a)
{
    dpc_cost_model_t m = dpc_cost_model_one_node();
    const dpc_algo_t *cand[DPC_AUTOTUNE_CANDIDATES];
    double pred[DPC_AUTOTUNE_CANDIDATES];
    int n = dpc_autotune_candidates(&a, &m, cand, pred);
    const dpc_algo_t *pick = dpc_cost_select_model(&a, &m);
    ck_assert_int_ge(n, 1);
    ck_assert_int_le(n, DPC_AUTOTUNE_CANDIDATES);
    ck_assert_ptr_eq(cand[0], pick);
    double t0 = dpc_cost_predict(pick, &a, &m);
    ck_assert(pred[0] == t0);
    int within = 0;
    for (const dpc_algo_t *const *al = dpc_algos(); *al; al++) {
        if (!dpc_algo_applies(*al, &a))
            continue;
        double t = dpc_cost_predict(*al, &a, &m);
        bool in = false;
        for (int k = 0; k < n; k++)
            in |= cand[k] == *al;
        within += t <= DPC_AUTOTUNE_SPREAD * t0;
        /* priced beyond the spread: never tried */
        ck_assert_msg(!in || t <= DPC_AUTOTUNE_SPREAD * t0, "%s %s tried at %g s, the pick %g s",
                      dpc_coll_name(a.coll), (*al)->name, t, t0);
    }
    /* every one within the spread is tried, up to the most there may be */
    ck_assert_int_eq(n, within < DPC_AUTOTUNE_CANDIDATES ? within : DPC_AUTOTUNE_CANDIDATES);
    /* after the pick, cheapest first, each with its price */
    for (int k = 1; k < n; k++) {
        ck_assert(pred[k] == dpc_cost_predict(cand[k], &a, &m));
        if (k > 1)
            ck_assert(pred[k - 1] <= pred[k]);
    }
}

START_TEST(test_candidates)
{
    dpc_coll_args_t ar = {.coll = DPC_ALLREDUCE, .size = 2, .dtype = DPC_FLOAT, .op = DPC_OP_SUM,
                          .count = 1u << 18, .one_sided = true, .seg_bytes = DPC_DEFAULT_SEG_BYTES};
    check_candidates(ar);
    ar.count = 4u << 20;
    check_candidates(ar);
    ar.size = 3;
    ar.one_sided = false;
    check_candidates(ar);
    dpc_coll_args_t ag = {.coll = DPC_ALLGATHER, .size = 2, .dtype = DPC_BYTE, .count = 1u << 20,
                          .one_sided = true, .seg_bytes = DPC_DEFAULT_SEG_BYTES,
                          .push_min = DPC_PUSH_MIN, .push_max = 1u << 20};
    check_candidates(ag);
    dpc_coll_args_t bc = {.coll = DPC_BCAST, .size = 4, .dtype = DPC_BYTE, .count = 1u << 20,
                          .root = 3, .one_sided = true, .seg_bytes = DPC_DEFAULT_SEG_BYTES};
    check_candidates(bc);
    /* a small call: the direct algorithms' alphas price them out */
    dpc_coll_args_t small = ar;
    small.size = 2;
    small.one_sided = true;
    small.count = 2;
    check_candidates(small);
    const dpc_algo_t *cand[DPC_AUTOTUNE_CANDIDATES];
    dpc_cost_model_t m = dpc_cost_model_one_node();
    int n = dpc_autotune_candidates(&small, &m, cand, NULL);
    for (int k = 0; k < n; k++)
        ck_assert_str_ne(cand[k]->name, "direct");
}
END_TEST

/* an algorithm taken wherever it applies is the only candidate */
START_TEST(test_first_choice_alone)
{
    size_t cnt[2] = {1u << 16, 3u << 16}, dsp[2] = {0, 1u << 16};
    dpc_coll_args_t a = {.coll = DPC_ALLTOALLV, .size = 2, .dtype = DPC_BYTE, .counts = cnt,
                         .displs = dsp, .scounts = cnt, .sdispls = dsp, .one_sided = true,
                         .seg_bytes = DPC_DEFAULT_SEG_BYTES};
    const dpc_algo_t *direct = dpc_algo_find(DPC_ALLTOALLV, "direct");
    ck_assert(direct && (direct->flags & DPC_ALGO_FIRST_CHOICE) && dpc_algo_applies(direct, &a));
    dpc_cost_model_t m = dpc_cost_model_one_node();
    const dpc_algo_t *cand[DPC_AUTOTUNE_CANDIDATES];
    ck_assert_int_eq(dpc_autotune_candidates(&a, &m, cand, NULL), 1);
    ck_assert_ptr_eq(cand[0], direct);
    /* where it may not run (no one-sided transport), the others compete */
    a.one_sided = false;
    ck_assert_int_ge(dpc_autotune_candidates(&a, &m, cand, NULL), 1);
    ck_assert_ptr_ne(cand[0], direct);
}
END_TEST

START_TEST(test_median)
{
    double odd[] = {5, 1, 3}, even[] = {4, 1, 3, 2}, one[] = {7};
    ck_assert(dpc_autotune_median(odd, 3) == 3);
    ck_assert(dpc_autotune_median(even, 4) == 2.5);
    ck_assert(dpc_autotune_median(one, 1) == 7);
    ck_assert(isinf(dpc_autotune_median(NULL, 0)));
}
END_TEST

START_TEST(test_decide)
{
    /* 2 ranks x 3 candidates (candidate 0: the model's pick), seconds */
    double slowest[3];
    /* candidate 1 a fifth faster on both ranks: kept */
    double faster[] = {10, 8, 12, /* rank 1 */ 10, 8, 12};
    ck_assert_int_eq(dpc_autotune_decide(faster, 2, 3, 0.05, slowest), 1);
    ck_assert(slowest[0] == 10 && slowest[1] == 8 && slowest[2] == 12);
    /* candidate 1 fastest on rank 0 but slowest on rank 1: the call lasts
     * as long as rank 1, so candidate 2, even on both, wins */
    double uneven[] = {10, 5, 8, /* rank 1 */ 10, 14, 8};
    ck_assert_int_eq(dpc_autotune_decide(uneven, 2, 3, 0.05, slowest), 2);
    ck_assert(slowest[1] == 14 && slowest[2] == 8);
    /* 3% faster: within the margin the model's pick stays; without one, not */
    double close[] = {10, 9.7, 11, /* rank 1 */ 9, 9.7, 11};
    ck_assert_int_eq(dpc_autotune_decide(close, 2, 3, 0.05, NULL), 0);
    ck_assert_int_eq(dpc_autotune_decide(close, 2, 3, 0, NULL), 1);
    /* a rank without a time for candidate 1 (its calls failed): never kept */
    double missing[] = {10, 1, 12, /* rank 1 */ 10, NAN, 12};
    ck_assert_int_eq(dpc_autotune_decide(missing, 2, 3, 0.05, slowest), 0);
    ck_assert(isinf(slowest[1]));
    /* equal times: the lower index */
    double tie[] = {10, 7, 7, /* rank 1 */ 10, 7, 7};
    ck_assert_int_eq(dpc_autotune_decide(tie, 2, 3, 0.05, NULL), 1);
    /* one candidate: itself */
    double alone[] = {3, 4};
    ck_assert_int_eq(dpc_autotune_decide(alone, 2, 1, 0.05, NULL), 0);
}
END_TEST

/* Which candidate runs each call of a signature, and which calls count */
START_TEST(test_turn)
{
    int counted;
    unsigned slot;
    /* N = 1, 3 candidates: the signature's first call (the model's pick: the
     * program's buffers cold, the slowest call there is) not counted, then
     * for each candidate one call not counted and one counted */
    int want1[] = {0, 0, 0, 1, 1, 2, 2}, count1[] = {0, 0, 1, 0, 1, 0, 1};
    for (unsigned c = 0; c < 7; c++) {
        ck_assert_int_eq(dpc_autotune_turn(c, 1, 3, &counted, &slot), want1[c]);
        ck_assert_int_eq(counted, count1[c]);
        ck_assert_uint_eq(slot, 0);
    }
    ck_assert_int_eq(dpc_autotune_turn(7, 1, 3, &counted, &slot), -1);
    ck_assert_int_eq(counted, 0);
    ck_assert_uint_eq(DPC_AUTOTUNE_TRIAL_CALLS(1, 3), 7);
    /* N = 3, 2 candidates: slots 0, 1, 2 of each after its first call */
    int want3[] = {0, 0, 0, 0, 0, 1, 1, 1, 1}, count3[] = {0, 0, 1, 1, 1, 0, 1, 1, 1};
    unsigned slot3[] = {0, 0, 0, 1, 2, 0, 0, 1, 2};
    for (unsigned c = 0; c < 9; c++) {
        ck_assert_int_eq(dpc_autotune_turn(c, 3, 2, &counted, &slot), want3[c]);
        ck_assert_int_eq(counted, count3[c]);
        ck_assert_uint_eq(slot, slot3[c]);
    }
    ck_assert_int_eq(dpc_autotune_turn(9, 3, 2, &counted, &slot), -1);
    /* whatever N: the first two calls of the model's pick not counted, and
     * each candidate's N slots counted once each, its calls in a row */
    for (unsigned n = 1; n <= DPC_AUTOTUNE_MAX_CALLS; n++) {
        int per[DPC_AUTOTUNE_CANDIDATES][DPC_AUTOTUNE_MAX_CALLS] = {{0}}, last = 0;
        for (unsigned c = 0; c < DPC_AUTOTUNE_TRIAL_CALLS(n, DPC_AUTOTUNE_CANDIDATES); c++) {
            int k = dpc_autotune_turn(c, n, DPC_AUTOTUNE_CANDIDATES, &counted, &slot);
            ck_assert(k >= last && k <= last + 1 && k < DPC_AUTOTUNE_CANDIDATES);
            last = k;
            ck_assert(!(counted && c < 2));
            ck_assert_uint_lt(slot, n);
            per[k][slot] += counted;
        }
        for (int k = 0; k < DPC_AUTOTUNE_CANDIDATES; k++)
            for (unsigned i = 0; i < n; i++)
                ck_assert_int_eq(per[k][i], 1);
    }
    /* off, or nothing to try */
    ck_assert_int_eq(dpc_autotune_turn(0, 0, 3, &counted, &slot), -1);
    ck_assert_int_eq(dpc_autotune_turn(0, 2, 0, &counted, &slot), -1);
}
END_TEST

/* When a decided signature is measured again: after the calls that come
 * in `period` seconds at the program's pace, rounded up; never sooner
 * than DPC_AUTOTUNE_AGAIN_TRIALS measurements' worth of calls; never
 * where the period is 0 or the pace unknown (no time, infinite, NaN). */
START_TEST(test_again_after)
{
    /* 5 s at 1 ms a call: 5000 calls; at 3 ms, 1667 (1666.67 up) */
    ck_assert_uint_eq(dpc_autotune_again_after(1e-3, 5, 9), 5000);
    ck_assert_uint_eq(dpc_autotune_again_after(3e-3, 5, 9), 1667);
    /* a slow pace: at least 4 measurements' worth (9 calls each) */
    ck_assert_uint_eq(dpc_autotune_again_after(0.5, 5, 9), DPC_AUTOTUNE_AGAIN_TRIALS * 9);
    ck_assert_uint_eq(dpc_autotune_again_after(1e-6, 1e-9, 7), DPC_AUTOTUNE_AGAIN_TRIALS * 7);
    ck_assert_uint_eq(dpc_autotune_again_after(1e-3, 0, 9), 0);
    ck_assert_uint_eq(dpc_autotune_again_after(0, 5, 9), 0);
    ck_assert_uint_eq(dpc_autotune_again_after(INFINITY, 5, 9), 0);
    ck_assert_uint_eq(dpc_autotune_again_after(NAN, 5, 9), 0);
    ck_assert_uint_eq(dpc_autotune_again_after(-1e-3, 5, 9), 0);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("autotune");
    TCase *tc = tcase_create("autotune");
    tcase_add_test(tc, test_candidates);
    tcase_add_test(tc, test_first_choice_alone);
    tcase_add_test(tc, test_median);
    tcase_add_test(tc, test_decide);
    tcase_add_test(tc, test_turn);
    tcase_add_test(tc, test_again_after);
    suite_add_tcase(su, tc);
    return check_run(su);
}
