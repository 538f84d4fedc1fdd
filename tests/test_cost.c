/*
 * The alpha-beta-gamma model. The textbook crossover between ring and
 * recursive-doubling allreduce for alpha = 10 us and 50 GB/s links (gamma
 * left out, as the textbook does): ring 2(p-1) alpha + 2(p-1)/p n beta
 * against RD log2(p) (alpha + n beta) meet at
 *   n = (2(p-1) - log2 p) alpha / ((log2 p - 2(p-1)/p) beta)
 * = 4.4 MB at p = 8 and 72.3 MB at p = 512 for a per-message alpha. The
 * model prices a message beyond the mailboxes (64 KiB; all of them here) as
 * a rendezvous, DPC_COST_RNDV_ALPHAS = 5 alphas, so its crossover is the
 * same formula with 5 alpha: 22 MB and 361.6 MB. The closed form is the
 * independent reference; the model is searched numerically.
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include <math.h>
#include "dpc_config.h"
#include "dpc_cost.h"
#include "direct.h"   /* DPC_PUSH_BETA_SCALE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static double closed_form(int p, double alpha, double beta)
{
    double L = log2(p);
    return (2.0 * (p - 1) - L) * alpha / ((L - 2.0 * (p - 1) / p) * beta);
}

static void check_crossover(int p, double expect_mb)
{
    const dpc_algo_t *ring = dpc_algo_find(DPC_ALLREDUCE, "ring");
    const dpc_algo_t *rd = dpc_algo_find(DPC_ALLREDUCE, "recursive_doubling");
    ck_assert_ptr_nonnull(ring);
    ck_assert_ptr_nonnull(rd);
    dpc_cost_params_t c = {.alpha = 10e-6, .beta = 1.0 / 50e9, .gamma = 0,
                           .alpha_rndv = 5 * 10e-6};
    /* one message per ring step, as in the textbook (no segmenting) */
    dpc_coll_args_t a = {.coll = DPC_ALLREDUCE, .size = p, .dtype = DPC_UINT8,
                         .seg_bytes = (size_t)1 << 40};
    double x = dpc_cost_crossover(rd, ring, &a, &c, 1, 1e12);
    double want = closed_form(p, c.alpha_rndv, c.beta);   /* every message a rendezvous */
    ck_assert_msg(fabs(x - want) / want < 1e-6, "p=%d: model %.0f B, closed form %.0f B", p, x, want);
    ck_assert_msg(fabs(x / 1e6 - expect_mb) < 0.05 * expect_mb, "p=%d: crossover %.2f MB, textbook %.1f MB",
                  p, x / 1e6, expect_mb);
    /* and on each side of it the model picks the right one */
    a.count = (size_t)(x * 0.5);
    ck_assert(rd->cost(&a, &c) < ring->cost(&a, &c));
    a.count = (size_t)(x * 2);
    ck_assert(ring->cost(&a, &c) < rd->cost(&a, &c));
}

START_TEST(test_crossover_p8) { check_crossover(8, 22.0); }
END_TEST
START_TEST(test_crossover_p512) { check_crossover(512, 361.6); }
END_TEST

START_TEST(test_select)
{
    /* small messages go to a latency algorithm, large ones to a bandwidth
     * one; the choice depends only on the arguments every rank shares */
    dpc_cost_params_t c = {.alpha = 10e-6, .beta = 1.0 / 50e9, .gamma = 1.0 / 20e9,
                           .alpha_rndv = 5 * 10e-6};
    dpc_coll_args_t a = {.coll = DPC_ALLREDUCE, .size = 8, .dtype = DPC_FLOAT, .count = 2};
    ck_assert_str_eq(dpc_cost_select(&a, &c)->name, "recursive_doubling");
    a.count = 64u << 20;
    const dpc_algo_t *large = dpc_cost_select(&a, &c);
    ck_assert_str_ne(large->name, "recursive_doubling");   /* a bandwidth-optimal one */
    for (int r = 0; r < 8; r++) {
        a.rank = r;
        ck_assert_ptr_eq(dpc_cost_select(&a, &c), large);
    }
    /* at p = 7 Rabenseifner pays for the fold: the ring (one message per
     * step, as above) is cheaper */
    a.size = 7;
    a.seg_bytes = (size_t)1 << 40;
    ck_assert_str_eq(dpc_cost_select(&a, &c)->name, "ring");
    /* alltoall at 2 ranks: a block beyond the 64 KiB mailboxes as a
     * rendezvous (5 alphas) costs more than the direct one's two mailbox
     * records and a kernel copy (4); a 64 KiB or a 4 KiB block as one
     * mailbox record (1) less */
    dpc_coll_args_t t = {.coll = DPC_ALLTOALL, .size = 2, .dtype = DPC_INT8,
                         .count = 2 * 65536, .one_sided = true};
    dpc_cost_params_t tc = {.alpha = 1e-6, .beta = 1e-10, .gamma = 1e-10, .alpha_rndv = 5e-6};
    ck_assert_str_eq(dpc_cost_select(&t, &tc)->name, "direct");
    t.count = 65536;
    ck_assert_str_eq(dpc_cost_select(&t, &tc)->name, "pairwise");
    t.count = 4096;
    ck_assert_str_eq(dpc_cost_select(&t, &tc)->name, "pairwise");
    /* ... where the job's mailboxes carry 64 KiB: in one whose carry 8 KiB
     * (DPCOLL_SHM_MAX=8192, or UCX's eager limit) a 64 KiB block is a
     * rendezvous too, and a 4 KiB one still a record */
    t.eager_max = 8192;
    t.count = 65536;
    ck_assert_str_eq(dpc_cost_select(&t, &tc)->name, "direct");
    t.count = 4096;
    ck_assert_str_eq(dpc_cost_select(&t, &tc)->name, "pairwise");
    /* Bruck alltoall cannot take per-rank counts: never selected for them */
    size_t cnt[4] = {1, 2, 3, 4};
    dpc_coll_args_t v = {.coll = DPC_ALLTOALL, .size = 4, .dtype = DPC_INT8, .count = 1,
                         .scounts = cnt};
    ck_assert(!dpc_algo_applies(dpc_algo_find(DPC_ALLTOALL, "bruck"), &v));
}
END_TEST

START_TEST(test_ties_go_to_the_first)
{
    /* at 2 ranks ring and recursive doubling allgather have the same
     * formula, summed in another order: rounding must not pick the one
     * registered later (it did at 8, 64, 256 B and 8 KiB with the one-node
     * model; recursive doubling runs slower there) */
    dpc_cost_model_t m = dpc_cost_model_one_node();
    for (size_t n = 1; n <= 16384; n = n * 2 + (n & 1)) {
        dpc_coll_args_t a = {.coll = DPC_ALLGATHER, .size = 2, .dtype = DPC_BYTE, .count = n,
                             .seg_bytes = DPC_DEFAULT_SEG_BYTES};
        const dpc_algo_t *ring = dpc_algo_find(DPC_ALLGATHER, "ring"),
                         *rd = dpc_algo_find(DPC_ALLGATHER, "recursive_doubling");
        double tr = dpc_cost_predict(ring, &a, &m), td = dpc_cost_predict(rd, &a, &m);
        ck_assert_msg(fabs(tr - td) <= 1e-9 * tr, "%zu B: ring %g s, recursive doubling %g s", n,
                      tr, td);
        ck_assert_msg(dpc_cost_select_model(&a, &m) != rd, "%zu B a block: recursive doubling "
                      "picked on a tie", n);
    }
}
END_TEST

START_TEST(test_every_algorithm_has_a_model)
{
    dpc_cost_params_t c = dpc_cost_defaults();
    for (const dpc_algo_t *const *al = dpc_algos(); *al; al++) {
        dpc_coll_args_t a = {.coll = (*al)->coll, .size = 16, .dtype = DPC_FLOAT, .count = 1000,
                             .op = DPC_OP_SUM};
        double t1 = (*al)->cost(&a, &c);
        a.count = 1000000;
        double t2 = (*al)->cost(&a, &c);
        ck_assert_msg(t1 > 0 && t2 > t1, "%s/%s: cost %g then %g", dpc_coll_name((*al)->coll),
                      (*al)->name, t1, t2);
    }
}
END_TEST

START_TEST(test_tune_file)
{
    /* written then read back exactly (to the printed precision); bad files
     * refused with the line that is wrong */
    char path[] = "/tmp/dpc_tune_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    dpc_cost_model_t w = {
        .set[0] = {.alpha = 1.25e-6, .beta = 8.5e-11, .gamma = 4e-11, .alpha_rndv = 3.5e-6,
                  .alpha_get = 1.5e-6, .alpha_call = 2.5e-7, .beta_concurrent = 6.5e-11},
        .set[1] = {.alpha = 9e-6, .beta = 1.5e-10, .gamma = 6e-11, .alpha_rndv = 2.25e-5,
                  .alpha_get = 4.5e-6, .alpha_call = 5e-7},
        .set[2] = {.alpha = 2e-5, .beta = 3.5e-10, .gamma = 1.25e-10, .alpha_rndv = 7.5e-5,
                  .alpha_get = 8.5e-6, .alpha_call = 0},
        .set[3] = {.alpha = 3e-5, .beta = 7.5e-10, .gamma = 2.5e-10, .alpha_rndv = 9.5e-5,
                  .alpha_get = 1.5e-5, .alpha_call = 1e-7, .beta_concurrent = 1.25e-11,
                  .beta_reread = 1.5e-10},
        .from[1] = 65536, .from[2] = 4u << 20, .from[3] = 32u << 20, .push_max = 3u << 20}, r;
    ck_assert_int_eq(dpc_tune_write(path, &w, "test"), DPC_OK);
    char err[200];
    ck_assert_int_eq(dpc_tune_read(path, &r, err, sizeof(err)), DPC_OK);
    ck_assert(fabs(r.set[0].alpha - w.set[0].alpha) < 1e-12 && fabs(r.set[0].beta - w.set[0].beta) < 1e-17 &&
              fabs(r.set[0].gamma - w.set[0].gamma) < 1e-17 && fabs(r.set[1].alpha - w.set[1].alpha) < 1e-12 &&
              fabs(r.set[1].beta - w.set[1].beta) < 1e-17 && r.from[1] == 65536 &&
              fabs(r.set[2].alpha - w.set[2].alpha) < 1e-12 && fabs(r.set[2].gamma - w.set[2].gamma) < 1e-17 &&
              r.from[2] == 4u << 20 && fabs(r.set[0].alpha_rndv - 3.5e-6) < 1e-12 &&
              fabs(r.set[1].alpha_rndv - 2.25e-5) < 1e-12 && fabs(r.set[2].alpha_rndv - 7.5e-5) < 1e-12);
    ck_assert(fabs(r.set[0].alpha_get - 1.5e-6) < 1e-12 && fabs(r.set[1].alpha_get - 4.5e-6) < 1e-12 &&
              fabs(r.set[2].alpha_get - 8.5e-6) < 1e-12 && fabs(r.set[0].alpha_call - 2.5e-7) < 1e-13 &&
              fabs(r.set[1].alpha_call - 5e-7) < 1e-13 && r.set[2].alpha_call == 0);
    ck_assert(r.from[3] == 32u << 20 && fabs(r.set[3].beta - 7.5e-10) < 1e-17 &&
              fabs(r.set[3].alpha_get - 1.5e-5) < 1e-12 && fabs(r.set[3].alpha_call - 1e-7) < 1e-13);
    ck_assert(fabs(r.set[0].beta_concurrent - 6.5e-11) < 1e-17 && r.set[1].beta_concurrent == 0 &&
              fabs(r.set[3].beta_concurrent - 1.25e-11) < 1e-17);
    ck_assert(r.set[0].beta_reread == 0 && r.set[2].beta_reread == 0 &&
              fabs(r.set[3].beta_reread - 1.5e-10) < 1e-17);
    ck_assert_uint_eq(r.push_max, 3u << 20);
    /* the regime follows the bytes the call's buffers span: an allreduce's
     * input and output, 2n (thresholds 64 KiB, 4 MiB, 32 MiB) */
    dpc_coll_args_t a = {.coll = DPC_ALLREDUCE, .size = 4, .dtype = DPC_FLOAT, .count = 8191};
    ck_assert_ptr_eq(dpc_cost_regime(&r, &a), &r.set[0]);
    a.count = 8192;
    ck_assert_ptr_eq(dpc_cost_regime(&r, &a), &r.set[1]);
    a.count = (2u << 20) / sizeof(float) - 1;
    ck_assert_ptr_eq(dpc_cost_regime(&r, &a), &r.set[1]);
    a.count++;
    ck_assert_ptr_eq(dpc_cost_regime(&r, &a), &r.set[2]);
    a.count = (16u << 20) / sizeof(float);
    ck_assert_ptr_eq(dpc_cost_regime(&r, &a), &r.set[3]);
    /* a bcast's buffer as the root's input and the others' output, 2n; an
     * allgather's output n and own block n/p */
    dpc_coll_args_t bc = {.coll = DPC_BCAST, .size = 4, .dtype = DPC_BYTE, .count = 32767};
    ck_assert_uint_eq(dpc_coll_footprint(&bc), 65534);
    ck_assert_ptr_eq(dpc_cost_regime(&r, &bc), &r.set[0]);
    bc.count = 32768;
    ck_assert_ptr_eq(dpc_cost_regime(&r, &bc), &r.set[1]);
    dpc_coll_args_t g = {.coll = DPC_ALLGATHER, .size = 4, .dtype = DPC_BYTE, .count = 1000};
    ck_assert_uint_eq(dpc_coll_footprint(&g), 4000 + 1000);
    g.in_place = true;   /* the same on every rank, in place or not */
    ck_assert_uint_eq(dpc_coll_footprint(&g), 5000);
    dpc_coll_args_t x = {.coll = DPC_ALLTOALL, .size = 4, .dtype = DPC_BYTE, .count = 1000};
    ck_assert_uint_eq(dpc_coll_footprint(&x), 8000);
    ck_assert_int_eq(dpc_cost_nsets(&r), 4);
    FILE *f = fopen(path, "w");
    fprintf(f, "# only beta\nbeta = 1e-9\n");
    fclose(f);
    ck_assert_int_eq(dpc_tune_read(path, &r, err, sizeof(err)), DPC_OK);
    ck_assert(r.set[0].beta == 1e-9 && r.set[0].alpha == dpc_cost_defaults().alpha &&
              r.set[1].beta == 1e-9 && r.from[1] == 0 && r.set[2].beta == 1e-9 &&
              r.from[2] == 0 && r.push_max == 0);
    /* a file of an older dpcoll_tune (no alpha_rndv): a rendezvous at
     * DPC_COST_RNDV_ALPHAS of each set's alpha, as it was priced then */
    f = fopen(path, "w");
    fprintf(f, "alpha = 1e-6\nalpha_large = 2e-6\nalpha_huge = 4e-6\n");
    fclose(f);
    ck_assert_int_eq(dpc_tune_read(path, &r, err, sizeof(err)), DPC_OK);
    ck_assert(fabs(r.set[0].alpha_rndv - DPC_COST_RNDV_ALPHAS * 1e-6) < 1e-15 &&
              fabs(r.set[1].alpha_rndv - DPC_COST_RNDV_ALPHAS * 2e-6) < 1e-15 &&
              fabs(r.set[2].alpha_rndv - DPC_COST_RNDV_ALPHAS * 4e-6) < 1e-15);
    /* ... likewise a one-sided read (no alpha_get), and no per-call cost */
    ck_assert(fabs(r.set[0].alpha_get - DPC_COST_GET_ALPHAS * 1e-6) < 1e-15 &&
              fabs(r.set[1].alpha_get - DPC_COST_GET_ALPHAS * 2e-6) < 1e-15 &&
              fabs(r.set[2].alpha_get - DPC_COST_GET_ALPHAS * 4e-6) < 1e-15);
    ck_assert(r.set[0].alpha_call == 0 && r.set[1].alpha_call == 0 && r.set[2].alpha_call == 0);
    /* ... nor a second concurrent copy (the direct bcast as it was priced) */
    ck_assert(r.set[0].beta_concurrent == 0 && r.set[2].beta_concurrent == 0);
    /* ... and one with alpha_rndv alone: the other sets take it */
    f = fopen(path, "w");
    fprintf(f, "alpha = 1e-6\nalpha_rndv = 3e-6\n");
    fclose(f);
    ck_assert_int_eq(dpc_tune_read(path, &r, err, sizeof(err)), DPC_OK);
    ck_assert(r.set[0].alpha_rndv == 3e-6 && r.set[1].alpha_rndv == 3e-6 && r.set[2].alpha_rndv == 3e-6);
    /* (and a set without its own alpha_call takes the one before's) */
    f = fopen(path, "w");
    fprintf(f, "alpha = 1e-6\nalpha_call = 2e-7\nalpha_call_huge = 0\nlarge_bytes = 4096\n");
    fclose(f);
    ck_assert_int_eq(dpc_tune_read(path, &r, err, sizeof(err)), DPC_OK);
    ck_assert(r.set[0].alpha_call == 2e-7 && r.set[1].alpha_call == 2e-7 && r.set[2].alpha_call == 0);
    /* a prediction is the formula plus the call's constant, which never
     * changes the choice */
    dpc_coll_args_t b = {.coll = DPC_ALLREDUCE, .size = 4, .dtype = DPC_FLOAT, .count = 64,
                         .op = DPC_OP_SUM};
    const dpc_algo_t *picked = dpc_cost_select_model(&b, &r);
    ck_assert(fabs(dpc_cost_predict(picked, &b, &r) - (2e-7 + picked->cost(&b, &r.set[0]))) < 1e-15);
    dpc_cost_model_t none = r;
    none.set[0].alpha_call = 0;
    ck_assert_ptr_eq(dpc_cost_select_model(&b, &none), picked);
    f = fopen(path, "w");
    fprintf(f, "alpha = 1e-6\ndelta = 3\n");
    fclose(f);
    ck_assert_int_eq(dpc_tune_read(path, &r, err, sizeof(err)), DPC_ERR_ARG);
    ck_assert_msg(strstr(err, "line 2") != NULL && strstr(err, "beta_concurrent") != NULL, "%s",
                  err);
    f = fopen(path, "w");
    fprintf(f, "alpha = -1\n");
    fclose(f);
    ck_assert_int_eq(dpc_tune_read(path, &r, err, sizeof(err)), DPC_ERR_ARG);
    unlink(path);
    ck_assert_int_eq(dpc_tune_read(path, &r, err, sizeof(err)), DPC_ERR_ARG);
}
END_TEST

START_TEST(test_bcast_direct_prices_the_second_copy)
{
    /* 2 ranks, 1 MiB: the root writes the tail (512 KiB), the other reads
     * the head (512 KiB) at once; one message each way for the buffers'
     * descriptors and one for "done", one one-sided copy:
     *   2 alpha + alpha_get + 512 Ki beta + 512 Ki beta_concurrent */
    const dpc_algo_t *direct = dpc_algo_find(DPC_BCAST, "direct");
    dpc_coll_args_t a = {.coll = DPC_BCAST, .size = 2, .dtype = DPC_BYTE, .count = 1u << 20,
                         .one_sided = true};
    dpc_cost_params_t c = {.alpha = 1e-6, .beta = 1e-10, .alpha_get = 3e-6};
    double fixed = 2 * 1e-6 + 3e-6, half = 524288;
    ck_assert_double_eq_tol(direct->cost(&a, &c), fixed + half * 1e-10, 1e-12);
    c.beta_concurrent = 4e-11;
    ck_assert_double_eq_tol(direct->cost(&a, &c), fixed + half * 1e-10 + half * 4e-11, 1e-12);
    /* 4 ranks, 1 MiB: the root writes 256 KiB into each of 3 (768 KiB),
     * each other rank reads the other 768 KiB: equal, one at each rate */
    a.size = 4;
    ck_assert_double_eq_tol(direct->cost(&a, &c), 3 * fixed + 786432 * (1e-10 + 4e-11), 1e-12);
    /* when the second copy costs what the first does, a tree's one copy of
     * everything (the binomial bcast at 2 ranks, one rendezvous message)
     * is the cheaper: the split is worth it only where the copies overlap */
    a.size = 2;
    c.beta_concurrent = c.beta;
    c.alpha_rndv = 5e-6;
    ck_assert_ptr_eq(dpc_cost_select(&a, &c), dpc_algo_find(DPC_BCAST, "binomial"));
    c.beta_concurrent = 0;
    ck_assert_ptr_eq(dpc_cost_select(&a, &c), direct);
}
END_TEST

START_TEST(test_whole_message_reductions_reread)
{
    /* beta_reread is paid per byte a reduction reads of a whole message it
     * received, by the algorithms that reduce such messages, and by no
     * other: at 2 ranks, 16 MiB, recursive halving and Rabenseifner reduce
     * one received half (8 MiB), recursive doubling the whole vector; the
     * ring's segments and the direct algorithms' chunks are reduced from
     * cache. At 3 ranks the fold adds the folded rank's whole vector. The
     * owners reduce the (p-1)/p of the vector that comes to them whole. */
    dpc_cost_params_t c = {.alpha = 1e-6, .beta = 1e-10, .gamma = 2e-10, .alpha_rndv = 4e-6,
                           .alpha_get = 3e-6};
    struct { dpc_coll_t coll; const char *name; double at2, at3; const dpc_algo_t *unlisted; } want[] = {
        {DPC_ALLREDUCE, "rabenseifner", 8 << 20, (8 << 20) + (16 << 20), NULL},
        {DPC_ALLREDUCE, "recursive_doubling", 16 << 20, (16 << 20) + (16 << 20), NULL},
        {DPC_ALLREDUCE, "ring", 0, 0, NULL},
        {DPC_ALLREDUCE, "direct", 0, 0, NULL},
        /* (at 3 ranks new rank 0 stands for ranks 0 and 1 and keeps their
         * two blocks, 16 MiB: the halves are of new ranks, not of bytes) */
        {DPC_REDUCE_SCATTER_BLOCK, "recursive_halving", 8 << 20, (16 << 20) + (24 << 20), NULL},
        /* (the device pipeline's, not in the registry) */
        {DPC_ALLREDUCE, "owner", 8 << 20, (16 << 20) * 2.0 / 3, &dpc_algo_allreduce_owner},
        {DPC_REDUCE_SCATTER_BLOCK, "owner", 8 << 20, 16 << 20, &dpc_algo_reduce_scatter_block_owner},
        {DPC_REDUCE_SCATTER_BLOCK, "ring", 0, 0, NULL},
        {DPC_REDUCE_SCATTER_BLOCK, "direct", 0, 0, NULL},
    };
    for (unsigned i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const dpc_algo_t *al = want[i].unlisted ? want[i].unlisted
                                                : dpc_algo_find(want[i].coll, want[i].name);
        ck_assert_ptr_nonnull(al);
        for (int p = 2; p <= 3; p++) {
            /* 16 MiB of floats: the allreduce's vector, the reduce-scatter's
             * whole input at 2 ranks (at 3, 24 MiB: the halving reduces 16) */
            size_t count = want[i].coll == DPC_ALLREDUCE ? 4u << 20 : 2u << 20;
            dpc_coll_args_t a = {.coll = want[i].coll, .size = p, .dtype = DPC_FLOAT,
                                 .count = count, .one_sided = true};
            dpc_cost_params_t r = c;
            r.beta_reread = 1e-10;
            double extra = al->cost(&a, &r) - al->cost(&a, &c);
            double bytes = p == 2 ? want[i].at2 : want[i].at3;
            ck_assert_msg(fabs(extra - bytes * 1e-10) < 1e-9, "%s %s at %d ranks: %g s more, want %g",
                          dpc_coll_name(want[i].coll), want[i].name, p, extra, bytes * 1e-10);
        }
    }
    /* the built-in constants for one node choose the direct allreduce at
     * 2 ranks from 8 MiB, as 17 of 20 runs measured it the faster
     * (src/dpc_cost.c); session 31's chose Rabenseifner's there */
    dpc_cost_model_t m = dpc_cost_model_one_node();
    for (size_t mib = 8; mib <= 64; mib *= 2) {
        dpc_coll_args_t a = {.coll = DPC_ALLREDUCE, .size = 2, .dtype = DPC_FLOAT,
                             .count = mib << 18, .one_sided = true};
        ck_assert_msg(!strcmp(dpc_cost_select_model(&a, &m)->name, "direct"), "%zu MiB: %s", mib,
                      dpc_cost_select_model(&a, &m)->name);
    }
}
END_TEST

/* What the direct `coll` saves by pushing a 512 KiB call at 2 ranks
 * against the same call pulling: 256 KiB written to the peer, priced at
 * DPC_PUSH_BETA_SCALE of beta instead of the whole (the writer's source
 * is in its own cache, where the program has just written it). Returns
 * the pushing call for more checks. */
static dpc_coll_args_t check_push_saving(dpc_coll_t coll, dpc_cost_params_t *c)
{
    const dpc_algo_t *direct = dpc_algo_find(coll, "direct");
    *c = (dpc_cost_params_t){.alpha = 1e-6, .beta = 1e-10, .alpha_get = 3e-6};
    dpc_coll_args_t a = {.coll = coll, .size = 2, .dtype = DPC_BYTE, .count = 256 << 10,
                         .one_sided = true, .push_min = DPC_PUSH_MIN,
                         .push_max = DPC_PUSH_MAX_ALL};
    dpc_coll_args_t pull = a;
    pull.push_max = 0;
    double saved = direct->cost(&pull, c) - direct->cost(&a, c);
    double want = (256 << 10) * 1e-10 * (1 - DPC_PUSH_BETA_SCALE);
    ck_assert_msg(fabs(saved - want) < 1e-12, "%s: pushing saves %g s, want %g",
                  dpc_coll_name(coll), saved, want);
    /* below push_min it pulls, and is priced so */
    dpc_coll_args_t small = a;
    small.push_min = (512 << 10) + 1;
    ck_assert_msg(direct->cost(&small, c) == direct->cost(&pull, c), "%s below push_min",
                  dpc_coll_name(coll));
    return a;
}

/* A direct allgather that pushes (a whole output from push_min to
 * push_max) pays DPC_PUSH_BETA_SCALE of beta for the bytes it writes to its
 * peers, one that pulls (outside those bounds) the whole beta; with
 * per-rank counts as well (allgatherv: where a peer keeps a block comes in
 * its message). */
START_TEST(test_allgather_push_priced)
{
    dpc_cost_params_t c;
    dpc_coll_args_t a = check_push_saving(DPC_ALLGATHER, &c);
    const dpc_algo_t *direct = dpc_algo_find(DPC_ALLGATHER, "direct");
    /* per-rank counts (allgatherv): pushed the same, priced the same */
    size_t counts[2] = {256 << 10, 256 << 10}, displs[2] = {0, 256 << 10};
    dpc_coll_args_t v = a, pull = a;
    v.coll = DPC_ALLGATHERV;
    v.counts = counts;
    v.displs = displs;
    pull.push_max = 0;
    const dpc_algo_t *vdirect = dpc_algo_find(DPC_ALLGATHERV, "direct");
    ck_assert(vdirect->cost(&v, &c) == direct->cost(&a, &c));
    ck_assert(vdirect->cost(&v, &c) < direct->cost(&pull, &c));
}
END_TEST

/* The direct all-to-all pushes as the allgather does, but not in place (a
 * peer's write could land in block q before this rank has read what it
 * sends there) nor beyond DPC_ALLTOALL_PUSH_UP_TO of output: those are
 * priced as the pulls they are. */
START_TEST(test_alltoall_push_priced)
{
    dpc_cost_params_t c;
    dpc_coll_args_t a = check_push_saving(DPC_ALLTOALL, &c);
    const dpc_algo_t *direct = dpc_algo_find(DPC_ALLTOALL, "direct");
    dpc_coll_args_t in_place = a, in_place_pull;
    in_place.in_place = true;
    in_place_pull = in_place;
    in_place_pull.push_max = 0;
    ck_assert_msg(direct->cost(&in_place, &c) == direct->cost(&in_place_pull, &c),
                  "in place priced as a push (it never pushes)");
    dpc_coll_args_t big = a, big_pull = a;
    big.count = big_pull.count = DPC_ALLTOALL_PUSH_UP_TO;   /* twice that of output */
    big_pull.push_max = 0;
    ck_assert_msg(direct->cost(&big, &c) == direct->cost(&big_pull, &c),
                  "beyond DPC_ALLTOALL_PUSH_UP_TO priced as a push (it pulls there)");
}
END_TEST

/* The built-in one-node model against what was measured: at every size
 * where, in twelve dpcoll_bench -a all -t runs at 2 ranks of session 43
 * (docs/bench/fit/ and fit/check*: the four it was fitted to and eight
 * after; ten of them reach below 512 KiB), one algorithm's median time
 * was 1.1x or more below every other's and it was the fastest in all but
 * at most two of the runs, the model
 * (constants and measured choices, a blocking call) takes that
 * algorithm. Sizes are the bytes dpcoll_bench reports: the vector
 * (allreduce, bcast), or all blocks of a rank (the others). */
START_TEST(test_builtin_takes_the_measured_fastest)
{
    static const struct { dpc_coll_t coll; size_t lo, hi; const char *name; } fastest[] = {
        {DPC_ALLREDUCE, 8, 16384, "recursive_doubling"},     /* 1.2-1.6x */
        {DPC_ALLREDUCE, 2u << 20, 8u << 20, "direct"},        /* 1.12-1.24x */
        {DPC_ALLREDUCE, 32u << 20, 32u << 20, "direct"},      /* 1.13x */
        {DPC_REDUCE_SCATTER_BLOCK, 256 << 10, 1u << 20, "ring"},   /* 1.13-1.55x */
        {DPC_ALLGATHER, 512 << 10, 1u << 20, "direct"},       /* 1.18-1.21x */
        {DPC_ALLGATHER, 32u << 20, 64u << 20, "direct"},      /* 1.46x */
        {DPC_BCAST, 128, 512, "binomial"},                    /* 1.27x */
        {DPC_BCAST, 2048, 4096, "binomial"},                  /* 1.12-1.35x */
        {DPC_BCAST, 32768, 131072, "scatter_allgather"},      /* 1.16-1.53x */
        {DPC_BCAST, 1u << 20, 64u << 20, "direct"},           /* 1.17-1.97x */
        {DPC_ALLTOALL, 8, 131072, "pairwise"},                /* 1.33-1.89x */
        {DPC_ALLTOALL, 2u << 20, 4u << 20, "pairwise"},       /* 1.16-1.26x */
    };
    dpc_cost_model_t m = dpc_cost_model_one_node();
    for (size_t i = 0; i < sizeof(fastest) / sizeof(fastest[0]); i++)
        for (size_t n = fastest[i].lo; n <= fastest[i].hi; n *= 2) {
            bool whole = fastest[i].coll == DPC_ALLREDUCE || fastest[i].coll == DPC_BCAST;
            dpc_coll_args_t a = {.coll = fastest[i].coll, .size = 2, .dtype = DPC_BYTE,
                                 .count = whole ? n : n / 2, .op = DPC_OP_SUM,
                                 .one_sided = true, .push_min = DPC_PUSH_MIN,
                                 .push_max = DPC_PUSH_MAX_ALL};
            const dpc_algo_t *got = dpc_cost_select_model(&a, &m);
            ck_assert_msg(!strcmp(got->name, fastest[i].name), "%s, %zu bytes: %s, measured %s",
                          dpc_coll_name(fastest[i].coll), n, got->name, fastest[i].name);
        }
}
END_TEST

/* dpcoll_tune's push limit from its measured push/pull ratios: reading
 * faster at every size from some size up puts the limit below it; a slow
 * size with faster ones above is noise; slower everywhere: never write;
 * faster everywhere: no limit. */
START_TEST(test_push_limit)
{
    const size_t s[] = {256u << 10, 512u << 10, 1u << 20, 2u << 20, 4u << 20};
    const double all_faster[] = {0.9, 0.8, 0.8, 0.7, 0.75};
    const double beyond_cache[] = {0.8, 0.9, 1.0, 1.12, 1.15};
    const double one_slow[] = {0.8, 1.2, 0.9, 1.3, 0.95};
    const double slow_last[] = {0.8, 0.9, 1.0, 0.95, 1.3};
    const double all_slower[] = {1.1, 1.2, 1.3, 1.2, 1.1};
    const double within_noise[] = {1.04, 1.05, 1.02, 1.03, 1.01};
    ck_assert(dpc_push_limit(s, all_faster, 5, 1.05, 256u << 10) == (size_t)-1);
    ck_assert_uint_eq(dpc_push_limit(s, beyond_cache, 5, 1.05, 256u << 10), 1u << 20);
    ck_assert(dpc_push_limit(s, one_slow, 5, 1.05, 256u << 10) == (size_t)-1);
    ck_assert_uint_eq(dpc_push_limit(s, slow_last, 5, 1.05, 256u << 10), 2u << 20);
    ck_assert_uint_eq(dpc_push_limit(s, all_slower, 5, 1.05, 256u << 10), (256u << 10) - 1);
    ck_assert(dpc_push_limit(s, within_noise, 5, 1.05, 256u << 10) == (size_t)-1);
    ck_assert(dpc_push_limit(s, all_faster, 0, 1.05, 256u << 10) == (size_t)-1);
}
END_TEST

/* The one-node model's own measured choice: a blocking bcast of 16-128 KiB
 * at 2 ranks runs scatter-allgather (the constants choose another at some
 * of those sizes); one byte either side, another group size, a
 * nonblocking call: the constants' pick. */
START_TEST(test_builtin_bcast_choice)
{
    dpc_cost_model_t m = dpc_cost_model_one_node(), plain = m;
    plain.nrules = 0;
    const dpc_algo_t *sa = dpc_algo_find(DPC_BCAST, "scatter_allgather");
    dpc_coll_args_t a = {.coll = DPC_BCAST, .size = 2, .dtype = DPC_BYTE, .one_sided = true};
    int needed = 0;   /* sizes where the constants alone choose otherwise */
    for (size_t n = 16384; n <= 131072; n *= 2) {
        a.count = n;
        ck_assert_ptr_eq(dpc_cost_select_model(&a, &m), sa);
        needed += dpc_cost_select_model(&a, &plain) != sa;
    }
    ck_assert_msg(needed > 0, "the constants alone choose scatter-allgather at 16-128 KiB "
                  "(the measured choice is then not needed)");
    size_t outside[] = {16383, 131073};
    for (int i = 0; i < 2; i++) {
        a.count = outside[i];
        ck_assert_ptr_eq(dpc_cost_select_model(&a, &m), dpc_cost_select_model(&a, &plain));
    }
    a.count = 65536;
    dpc_coll_args_t nb = a, three = a;
    nb.nonblocking = true;
    three.size = 3;
    ck_assert_ptr_eq(dpc_cost_select_model(&nb, &m), dpc_cost_select_model(&nb, &plain));
    ck_assert_ptr_eq(dpc_cost_select_model(&three, &m), dpc_cost_select_model(&three, &plain));
}
END_TEST

/* Measured choices (a tune file's "choose" lines): one that matches the
 * collective, the ranks and the bytes (inclusive) and applies replaces the
 * constants' pick, the first of several that match wins, and one that
 * does not apply (a one-sided algorithm without one-sided transfers, an
 * order-free one for an op that does not commute) leaves the constants'
 * pick; written and read back as they were; bad lines refused by number. */
START_TEST(test_measured_choices)
{
    /* (the one-node constants without their own measured choice) */
    dpc_cost_model_t m = dpc_cost_model_one_node();
    m.nrules = 0;
    dpc_cost_model_t plain = m;
    char err[256] = "";
    dpc_coll_args_t a = {.coll = DPC_ALLREDUCE, .size = 2, .dtype = DPC_FLOAT,
                         .count = 1u << 18, .op = DPC_OP_SUM, .one_sided = true};
    const dpc_algo_t *base = dpc_cost_select_model(&a, &plain);
    const dpc_algo_t *ring = dpc_algo_find(DPC_ALLREDUCE, "ring");
    const dpc_algo_t *rd = dpc_algo_find(DPC_ALLREDUCE, "recursive_doubling");
    const dpc_algo_t *direct = dpc_algo_find(DPC_ALLREDUCE, "direct");
    const dpc_algo_t *x = base == ring ? rd : ring;   /* not the constants' pick */
    ck_assert(x && direct && x != base);
    ck_assert_ptr_null(dpc_cost_rule_for(&a, &m));
    ck_assert_int_eq(dpc_cost_rule_add(&m, DPC_ALLREDUCE, 2, 1, 1u << 20, 1u << 20, x,
                                       DPC_CALLS_ANY, err,
                                       sizeof(err)), DPC_OK);
    ck_assert_ptr_eq(dpc_cost_select_model(&a, &m), x);
    ck_assert_ptr_eq(dpc_cost_rule_for(&a, &m), x);
    /* one element either side of the range, other ranks: the constants' pick */
    for (int k = 0; k < 3; k++) {
        dpc_coll_args_t b = a;
        if (k < 2)
            b.count = k ? a.count + 1 : a.count - 1;
        else
            b.size = 4;
        ck_assert_ptr_null(dpc_cost_rule_for(&b, &m));
        ck_assert_ptr_eq(dpc_cost_select_model(&b, &m), dpc_cost_select_model(&b, &plain));
    }
    /* the first that matches: an earlier rule over a wider range wins */
    dpc_cost_model_t two = plain;
    ck_assert_int_eq(dpc_cost_rule_add(&two, DPC_ALLREDUCE, 2, 1, 0, 1u << 30, direct,
                                       DPC_CALLS_ANY, err,
                                       sizeof(err)), DPC_OK);
    ck_assert_int_eq(dpc_cost_rule_add(&two, DPC_ALLREDUCE, 2, 1, 1u << 20, 1u << 20, x,
                                       DPC_CALLS_ANY, err,
                                       sizeof(err)), DPC_OK);
    ck_assert_ptr_eq(dpc_cost_select_model(&a, &two), direct);
    /* ... unless it does not apply: then the next that matches */
    dpc_coll_args_t no_get = a;
    no_get.one_sided = false;
    ck_assert_ptr_eq(dpc_cost_select_model(&no_get, &two), x);
    /* an op that does not commute: the ring (not rank order) never runs it */
    dpc_cost_model_t r1 = plain;
    ck_assert_int_eq(dpc_cost_rule_add(&r1, DPC_ALLREDUCE, 2, 1, 0, 1u << 30, ring, DPC_CALLS_ANY, err,
                                       sizeof(err)), DPC_OK);
    dpc_coll_args_t ordered = a;
    ordered.op = DPC_OP_USER_ORDERED;
    ck_assert_ptr_null(dpc_cost_rule_for(&ordered, &r1));
    ck_assert(dpc_cost_select_model(&ordered, &r1) != ring);
    /* an algorithm taken wherever it applies (alltoallv's) stays so */
    dpc_cost_model_t v = plain;
    const dpc_algo_t *va = dpc_algo_find(DPC_ALLTOALLV, "direct");
    ck_assert(va && (va->flags & DPC_ALGO_FIRST_CHOICE));
    size_t cnt[2] = {8, 8};
    dpc_coll_args_t av = {.coll = DPC_ALLTOALLV, .size = 2, .dtype = DPC_BYTE, .counts = cnt,
                          .scounts = cnt, .one_sided = true};
    ck_assert_ptr_eq(dpc_cost_select_model(&av, &v), va);
    /* a choice for one kind of call: blocking ones only, or nonblocking
     * (and persistent) ones only */
    dpc_cost_model_t kinds = plain;
    ck_assert_int_eq(dpc_cost_rule_add(&kinds, DPC_ALLREDUCE, 2, 1, 0, 1u << 30, x,
                                       DPC_CALLS_BLOCKING, err, sizeof(err)), DPC_OK);
    dpc_coll_args_t nb = a;
    nb.nonblocking = true;
    ck_assert_ptr_eq(dpc_cost_select_model(&a, &kinds), x);
    ck_assert_ptr_eq(dpc_cost_select_model(&nb, &kinds), dpc_cost_select_model(&nb, &plain));
    kinds.rule[0].calls = DPC_CALLS_NONBLOCKING;
    ck_assert_ptr_eq(dpc_cost_select_model(&nb, &kinds), x);
    ck_assert_ptr_eq(dpc_cost_select_model(&a, &kinds), base);
    ck_assert_int_eq(dpc_cost_rule_add(&kinds, DPC_ALLREDUCE, 2, 1, 0, 9, x, 0, err, sizeof(err)),
                     DPC_ERR_ARG);
    /* refused: another collective's algorithm, an empty range, no ranks,
     * one too many */
    ck_assert_int_eq(dpc_cost_rule_add(&v, DPC_BCAST, 2, 1, 0, 9, ring,
                                       DPC_CALLS_ANY, err, sizeof(err)),
                     DPC_ERR_ARG);
    ck_assert_int_eq(dpc_cost_rule_add(&v, DPC_ALLREDUCE, 2, 1, 9, 8, ring,
                                       DPC_CALLS_ANY, err, sizeof(err)),
                     DPC_ERR_ARG);
    ck_assert_int_eq(dpc_cost_rule_add(&v, DPC_ALLREDUCE, 0, 1, 0, 9, ring,
                                       DPC_CALLS_ANY, err, sizeof(err)),
                     DPC_ERR_ARG);
    for (int i = 0; i < DPC_COST_RULES; i++)
        ck_assert_int_eq(dpc_cost_rule_add(&v, DPC_ALLREDUCE, 2, 1, (size_t)i, (size_t)i, ring,
                                           DPC_CALLS_ANY, err,
                                           sizeof(err)), DPC_OK);
    ck_assert_int_eq(dpc_cost_rule_add(&v, DPC_ALLREDUCE, 2, 1, 99, 99, ring,
                                       DPC_CALLS_ANY, err, sizeof(err)),
                     DPC_ERR_ARG);
    ck_assert_int_eq(v.nrules, DPC_COST_RULES);

    /* a file: written, read back the same, in order */
    char path[] = "/tmp/dpc_choose_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    two.rule[1].calls = DPC_CALLS_NONBLOCKING;   /* (written and read back too) */
    ck_assert_int_eq(dpc_tune_write(path, &two, "test"), DPC_OK);
    dpc_cost_model_t back;
    ck_assert_int_eq(dpc_tune_read(path, &back, err, sizeof(err)), DPC_OK);
    ck_assert_int_eq(back.nrules, 2);
    for (int i = 0; i < 2; i++)
        ck_assert(back.rule[i].coll == two.rule[i].coll &&
                  back.rule[i].nranks == two.rule[i].nranks && back.rule[i].lo == two.rule[i].lo &&
                  back.rule[i].hi == two.rule[i].hi && back.rule[i].al == two.rule[i].al &&
                  back.rule[i].calls == two.rule[i].calls);
    ck_assert(back.rule[0].calls == DPC_CALLS_ANY && back.rule[1].calls == DPC_CALLS_NONBLOCKING);
    ck_assert_ptr_eq(dpc_cost_select_model(&a, &back), direct);
    /* and travelling from rank 0 with the other settings */
    dpc_config_t root, other;
    dpc_config_defaults(&root);
    dpc_config_defaults(&other);
    root.cost = two;
    long long packed[DPC_CONFIG_SHARED_INTS];
    dpc_config_pack_shared(&root, packed);
    dpc_config_unpack_shared(&other, packed);
    ck_assert_int_eq(other.cost.nrules, 2);
    ck_assert_ptr_eq(dpc_cost_select_model(&a, &other.cost), direct);
    ck_assert_ptr_eq(dpc_cost_select_model(&no_get, &other.cost), base);   /* (blocking) */
    no_get.nonblocking = true;
    ck_assert_ptr_eq(dpc_cost_select_model(&no_get, &other.cost), x);
    ck_assert_int_eq(other.cost.rule[1].calls, DPC_CALLS_NONBLOCKING);
    const char *bad[] = {
        "choose = allreduce 2 10 5 ring\n",          /* empty range */
        "choose = allreduce 2 1 5 bogus\n",          /* no such algorithm */
        "choose = allreduce 2 1 5 binomial\n",       /* another collective's */
        "choose = allreduce -2 1 5 ring\n",          /* no ranks */
        "choose = allreduce 2 -1 5 ring\n",          /* no bytes */
        "choose = allreduce 2 1 5 ring extra\n",     /* more than a choice */
        "choose = allreduce 2 1 ring\n",             /* less */
        "choose = allreduce 2 1 5 ring sometimes\n", /* no such kind of call */
        "choose = allreduce 2 1 5 ring any more\n",  /* more */
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        FILE *f = fopen(path, "w");
        fprintf(f, "alpha = 1e-6\n%s", bad[i]);
        fclose(f);
        err[0] = 0;
        ck_assert_int_eq(dpc_tune_read(path, &back, err, sizeof(err)), DPC_ERR_ARG);
        ck_assert_msg(strstr(err, "line 2") != NULL, "%s: %s", bad[i], err);
    }
    unlink(path);
}
END_TEST

/* A v-variant whose counts are equal is priced as its block collective, by
 * every algorithm, at powers of two and not: the unequal-share formulas
 * (coll/shares.h) must reduce to the equal-block ones, or the constants
 * fitted on block collectives would price the v-variants differently. */
/* Groups spread over nodes: a flat algorithm is priced with the constants
 * between nodes in place of those within (every one of its steps waits for
 * a message that crosses), the hierarchical allreduce with both (closed
 * form), a group within one node as before; the choice follows the
 * network; tune files carry the three constants and choices per number of
 * nodes; measured choices for one node do not reach groups spread over
 * several, nor the other way. */
START_TEST(test_network_constants)
{
    dpc_cost_params_t c = {.alpha = 1e-6, .beta = 1e-10, .gamma = 1e-10, .alpha_rndv = 5e-6,
                           .alpha_net = 20e-6, .alpha_rndv_net = 60e-6, .beta_net = 1e-9};
    int node[8] = {0, 0, 0, 0, 1, 1, 1, 1};
    size_t n = 4u << 20;   /* bytes: every message a rendezvous */
    dpc_coll_args_t one = {.coll = DPC_ALLREDUCE, .size = 8, .dtype = DPC_UINT8, .count = n,
                           .seg_bytes = (size_t)1 << 40};
    dpc_coll_args_t two = one;
    two.node = node, two.nnodes = 2, two.node_ranks = 4;
    const dpc_algo_t *ring = dpc_algo_find(DPC_ALLREDUCE, "ring");
    const dpc_algo_t *rab = dpc_algo_find(DPC_ALLREDUCE, "rabenseifner");
    const dpc_algo_t *hier = dpc_algo_find(DPC_ALLREDUCE, "hierarchical");
    ck_assert(ring && rab && hier);
    /* the flat ring: 2(p-1) rendezvous and 2(p-1)/p n bytes at the
     * network's constants, (p-1)/p n reduced */
    double p = 8, want_ring = 2 * (p - 1) * 60e-6 + 2 * (p - 1) / p * n * 1e-9 + (p - 1) / p * n * 1e-10;
    ck_assert_double_eq_tol(dpc_cost_formula(ring, &two, &c), want_ring, 1e-12);
    ck_assert_double_eq_tol(dpc_cost_of(ring, &two, &c), want_ring, 1e-12);   /* (alpha_call 0) */
    /* ... and within a node the constants within */
    double want_one = 2 * (p - 1) * 5e-6 + 2 * (p - 1) / p * n * 1e-10 + (p - 1) / p * n * 1e-10;
    ck_assert_double_eq_tol(dpc_cost_formula(ring, &one, &c), want_one, 1e-12);
    /* the hierarchical: the node's rings (L = 4: 3 steps each way) within,
     * the middle ring (N = 2: one step each way) between, 2(L-1)/L n and
     * 2(N-1)/N n/L bytes */
    double L = 4, N = 2;
    double want_h = 2 * (L - 1) * 5e-6 + 2 * (L - 1) / L * n * 1e-10 + 2 * (N - 1) * 60e-6 +
                    2 * (N - 1) / N * (n / L) * 1e-9 + (p - 1) / p * n * 1e-10;
    ck_assert_double_eq_tol(dpc_cost_formula(hier, &two, &c), want_h, 1e-12);
    /* the choice follows the network: dear, the hierarchy (it sends a
     * quarter of the bytes across); as cheap as the node, not */
    ck_assert_ptr_eq(dpc_cost_select(&two, &c), hier);
    dpc_cost_params_t flat = c;
    flat.alpha_net = c.alpha, flat.alpha_rndv_net = c.alpha_rndv, flat.beta_net = c.beta;
    ck_assert_ptr_ne(dpc_cost_select(&two, &flat), hier);
    ck_assert_double_eq_tol(dpc_cost_formula(rab, &two, &flat), dpc_cost_formula(rab, &one, &c), 1e-15);
    /* measured choices by nodes */
    dpc_cost_model_t m = dpc_cost_model_defaults();
    char err[160];
    ck_assert_int_eq(dpc_cost_rule_add(&m, DPC_ALLREDUCE, 8, 2, 0, SIZE_MAX, ring, DPC_CALLS_ANY,
                                       err, sizeof(err)), DPC_OK);
    ck_assert_ptr_eq(dpc_cost_rule_for(&two, &m), ring);
    ck_assert_ptr_null(dpc_cost_rule_for(&one, &m));
    ck_assert_int_eq(dpc_cost_rule_add(&m, DPC_ALLREDUCE, 8, 1, 0, SIZE_MAX, rab, DPC_CALLS_ANY,
                                       err, sizeof(err)), DPC_OK);
    ck_assert_ptr_eq(dpc_cost_rule_for(&one, &m), rab);
    ck_assert_ptr_eq(dpc_cost_rule_for(&two, &m), ring);
    ck_assert_int_eq(dpc_cost_rule_add(&m, DPC_ALLREDUCE, 8, 9, 0, 1, ring, DPC_CALLS_ANY, err,
                                       sizeof(err)), DPC_ERR_ARG);
    ck_assert_int_eq(dpc_cost_rule_add(&m, DPC_ALLREDUCE, 8, 0, 0, 1, ring, DPC_CALLS_ANY, err,
                                       sizeof(err)), DPC_ERR_ARG);
    /* tune files: the constants and "RANKS/NODES" written and read back;
     * a file that names no constant between nodes keeps the defaults' */
    char path[] = "/tmp/dpc_tune_net_XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    m.set[0] = c;
    m.set[0].alpha_net = 2.5e-5;
    ck_assert_int_eq(dpc_tune_write(path, &m, "test"), DPC_OK);
    dpc_cost_model_t r;
    ck_assert_int_eq(dpc_tune_read(path, &r, err, sizeof(err)), DPC_OK);
    ck_assert(fabs(r.set[0].alpha_net - 2.5e-5) < 1e-12 &&
              fabs(r.set[0].alpha_rndv_net - 60e-6) < 1e-12 && fabs(r.set[0].beta_net - 1e-9) < 1e-17);
    ck_assert_int_eq(r.nrules, 2);
    ck_assert(r.rule[0].nodes == 2 && r.rule[0].nranks == 8 && r.rule[0].al == ring);
    ck_assert(r.rule[1].nodes == 1 && r.rule[1].al == rab);
    FILE *f = fopen(path, "w");
    fprintf(f, "alpha = 1e-6\nchoose = allreduce 4/2 0 100 ring\n");
    fclose(f);
    ck_assert_int_eq(dpc_tune_read(path, &r, err, sizeof(err)), DPC_OK);
    dpc_cost_params_t d = dpc_cost_defaults();
    ck_assert(r.set[0].alpha_net == d.alpha_net && r.set[0].beta_net == d.beta_net &&
              r.set[0].alpha_rndv_net == d.alpha_rndv_net && r.rule[0].nodes == 2);
    static const char *bad[] = {"choose = allreduce 4/0 0 100 ring\n",
                                "choose = allreduce 4/5 0 100 ring\n",
                                "choose = allreduce 4/x 0 100 ring\n",
                                "choose = allreduce 4/2/1 0 100 ring\n", "beta_net = 2\n"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        f = fopen(path, "w");
        fprintf(f, "alpha = 1e-6\n%s", bad[i]);
        fclose(f);
        ck_assert_msg(dpc_tune_read(path, &r, err, sizeof(err)) == DPC_ERR_ARG &&
                      strstr(err, "line 2"), "%s: accepted or not named (%s)", bad[i], err);
    }
    unlink(path);
    /* the built-in model prices a network by the defaults */
    dpc_cost_model_t b = dpc_cost_model_one_node();
    for (int i = 0; i < DPC_COST_SETS; i++)
        ck_assert(b.set[i].alpha_net == d.alpha_net && b.set[i].beta_net == d.beta_net &&
                  b.set[i].alpha_rndv_net == d.alpha_rndv_net);
}
END_TEST

START_TEST(test_v_equal_counts_priced_as_blocks)
{
    static const struct { dpc_coll_t v, block; } pairs[] = {
        {DPC_ALLGATHERV, DPC_ALLGATHER}, {DPC_REDUCE_SCATTER, DPC_REDUCE_SCATTER_BLOCK}};
    dpc_cost_params_t c = {.alpha = 1e-6, .beta = 1e-10, .gamma = 2e-10, .alpha_rndv = 5e-6,
                           .alpha_get = 3e-6, .alpha_call = 2e-7, .beta_concurrent = 1e-11,
                           .beta_reread = 3e-11};
    static const size_t counts_per_rank[] = {1, 1000, 300000};
    size_t counts[9], displs[9];
    for (size_t k = 0; k < 2; k++)
        for (int p = 2; p <= 9; p++)
            for (size_t ci = 0; ci < 3; ci++)
                for (int in_place = 0; in_place < 2; in_place++) {
                    size_t n = counts_per_rank[ci];
                    for (int i = 0; i < p; i++)
                        counts[i] = n, displs[i] = (size_t)i * n;
                    dpc_coll_args_t b = {.coll = pairs[k].block, .size = p, .dtype = DPC_FLOAT,
                                         .count = n, .in_place = in_place, .one_sided = true};
                    dpc_coll_args_t v = b;
                    v.coll = pairs[k].v;
                    v.counts = counts;
                    v.displs = displs;
                    for (const dpc_algo_t *const *al = dpc_algos(); *al; al++) {
                        if ((*al)->coll != pairs[k].v)
                            continue;
                        const dpc_algo_t *blk = dpc_algo_find(pairs[k].block, (*al)->name);
                        ck_assert_ptr_nonnull(blk);
                        double tv = (*al)->cost(&v, &c), tb = blk->cost(&b, &c);
                        ck_assert_msg(fabs(tv - tb) <= 1e-12 * tb, "%s %s p=%d n=%zu: %g against %g",
                                      dpc_coll_name(v.coll), (*al)->name, p, n, tv, tb);
                    }
                }
}
END_TEST

/* Unequal shares cost what the busiest rank does, from the algorithms'
 * own data movement (per-byte terms only: start-ups 0, beta 1 ns, in place
 * so that no own block is copied). 4 ranks with blocks of 1, 2, 3 and 4 K
 * bytes (n = 10 K):
 *  - ring allgather and reduce-scatter, direct allgather: every rank gets
 *    every block but its own, the rank with block 1K the most: 9 K;
 *  - direct reduce-scatter and owner: each rank reads its own block from
 *    3 peers, the rank with block 4K the most: 12 K;
 *  - recursive doubling allgather and recursive halving: a step of single
 *    blocks (3K and 4K swap: 4K) and one of pairs ({0,1} = 3K against
 *    {2,3} = 7K: 7K): 11 K;
 *  - Bruck: every rank receives all but its own, copies its own into
 *    scratch and rotates the whole: 2n = 20 K.
 * The equal-block formulas priced all but Bruck at 7.5 K, so at 4 ranks
 * the direct reduce-scatter tied with the ring where it reads a third
 * more. And 3 ranks of 1K each, recursive doubling: rank 0 hands 1K to
 * rank 1, rank 1 (blocks 0 and 1) and rank 2 swap (2K), rank 0 gets the
 * whole 3K back: 6 K, where (p'-1)/p' n priced the swap 1.5 K. */
START_TEST(test_v_unequal_shares_priced_by_the_busiest_rank)
{
    const double K = 100000, ns = 1e-9;
    dpc_cost_params_t c = {.beta = ns};
    size_t counts[4] = {1 * 100000, 2 * 100000, 3 * 100000, 4 * 100000};
    size_t displs[4] = {0, 100000, 300000, 600000};
    dpc_coll_args_t ag = {.coll = DPC_ALLGATHERV, .size = 4, .dtype = DPC_UINT8, .count = counts[0],
                          .counts = counts, .displs = displs, .in_place = true, .one_sided = true};
    dpc_coll_args_t rs = ag;
    rs.coll = DPC_REDUCE_SCATTER;
    rs.op = DPC_OP_SUM;
    rs.displs = NULL;
    static const struct { dpc_coll_t coll; const char *name; double k; } want[] = {
        {DPC_ALLGATHERV, "ring", 9}, {DPC_ALLGATHERV, "direct", 9},
        {DPC_ALLGATHERV, "recursive_doubling", 11}, {DPC_ALLGATHERV, "bruck", 20},
        {DPC_REDUCE_SCATTER, "ring", 9}, {DPC_REDUCE_SCATTER, "direct", 12},
        {DPC_REDUCE_SCATTER, "recursive_halving", 11},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        const dpc_algo_t *al = dpc_algo_find(want[i].coll, want[i].name);
        ck_assert_ptr_nonnull(al);
        double t = al->cost(want[i].coll == DPC_ALLGATHERV ? &ag : &rs, &c);
        ck_assert_msg(fabs(t - want[i].k * K * ns) < 1e-9 * t, "%s %s: %g s, the busiest rank's %g",
                      dpc_coll_name(want[i].coll), want[i].name, t, want[i].k * K * ns);
    }
    double t = dpc_algo_reduce_scatter_owner.cost(&rs, &c);
    ck_assert_msg(fabs(t - 12 * K * ns) < 1e-9 * t, "owner reduce-scatter: %g s", t);
    /* and the model's choice between them: the ring, which does less */
    dpc_cost_model_t m = {.set = {c}};
    ck_assert_str_eq(dpc_cost_select_model(&rs, &m)->name, "ring");
    /* a fold at 3 equal ranks */
    dpc_coll_args_t three = {.coll = DPC_ALLGATHER, .size = 3, .dtype = DPC_UINT8,
                             .count = 100000, .in_place = true};
    t = dpc_algo_find(DPC_ALLGATHER, "recursive_doubling")->cost(&three, &c);
    ck_assert_msg(fabs(t - 6 * K * ns) < 1e-9 * t, "folded recursive doubling: %g s", t);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("cost");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, test_crossover_p8);
    tcase_add_test(tc, test_crossover_p512);
    tcase_add_test(tc, test_select);
    tcase_add_test(tc, test_ties_go_to_the_first);
    tcase_add_test(tc, test_every_algorithm_has_a_model);
    tcase_add_test(tc, test_tune_file);
    tcase_add_test(tc, test_bcast_direct_prices_the_second_copy);
    tcase_add_test(tc, test_whole_message_reductions_reread);
    tcase_add_test(tc, test_measured_choices);
    tcase_add_test(tc, test_builtin_bcast_choice);
    tcase_add_test(tc, test_allgather_push_priced);
    tcase_add_test(tc, test_alltoall_push_priced);
    tcase_add_test(tc, test_push_limit);
    tcase_add_test(tc, test_builtin_takes_the_measured_fastest);
    tcase_add_test(tc, test_v_equal_counts_priced_as_blocks);
    tcase_add_test(tc, test_v_unequal_shares_priced_by_the_busiest_rank);
    tcase_add_test(tc, test_network_constants);
    suite_add_tcase(su, tc);
    return check_run(su);
}
