/*
 * The test matrix: every registered algorithm, for every p in the list, over
 * counts {0, 1, p-1, p, p+1, large}, in place and not, across (type, op)
 * pairs; results checked exactly against the reference, bitwise identical on
 * every rank, bytes and messages sent equal to the algorithm's own formula,
 * and the same result under seeded reordering. A newly registered algorithm
 * is picked up with no change here; the few that the model never picks (used
 * by name, as the device pipeline uses the owner allreduce) are listed in
 * unlisted[].
 *
 * DPC_TEST_QUICK=1 (used under valgrind) trims p and the large count.
 */
#include "config.h"
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include "matrix.h"
#include "nodes.h"
#include "ring.h"

static const int full_ps[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 17, 31, 32, 64};
static const int quick_ps[] = {1, 2, 3, 4, 5, 7, 8, 13, 16, 17};
static const int *ps = full_ps;
static int nps = sizeof(full_ps) / sizeof(int);
static int nalgos, nregistered;
static bool quick;

static const dpc_algo_t *const unlisted[] = {&dpc_algo_allreduce_owner,
                                             &dpc_algo_reduce_scatter_block_owner,
                                             &dpc_algo_reduce_scatter_owner};

static const dpc_algo_t *algo_at(int i)
{
    return i < nregistered ? dpc_algos()[i] : unlisted[i - nregistered];
}

static dpc_dtype_t tdts[256];
static dpc_op_t tops[256];
static int ntypeops;
/* element types for the collectives that only move data: 1, 2, 8, 12/16 bytes */
static const dpc_dtype_t move_dts[] = {DPC_INT8, DPC_FLOAT16, DPC_DOUBLE, DPC_LONG_DOUBLE_INT};

static size_t large_count(const dpc_algo_t *al, int p)
{
    size_t big = quick ? 1003 : 100003;   /* prime: p never divides it */
    bool per_block = al->coll != DPC_ALLREDUCE && al->coll != DPC_BCAST;
    if (per_block) {
        size_t c = big / (size_t)p;       /* keep p * count about the same */
        return c % 2 ? c : c + 1;
    }
    return big;
}

/* loop index i = algorithm * nps + p index */
START_TEST(test_algo_p)
{
    const dpc_algo_t *al = algo_at(_i / nps);
    int p = ps[_i % nps];
    size_t counts[6] = {0, 1, (size_t)p - 1, (size_t)p, (size_t)p + 1, large_count(al, p)};
    bool reduces = dpc_coll_reduces(al->coll);
    int cases = 0;
    for (int ci = 0; ci < 6; ci++) {
        for (int ip = 0; ip < 2; ip++) {
            /* several (type, op) pairs per case, rotating so the matrix as a
             * whole covers all of them */
            int nt = reduces ? 3 : 2;
            for (int t = 0; t < nt; t++) {
                mx_case_t c = {.algo = al, .p = p, .count = counts[ci], .in_place = ip};
                int k = (_i * 7 + ci * 5 + ip * 3 + t * 11);
                if (reduces) {
                    c.dt = tdts[k % ntypeops];
                    c.op = tops[k % ntypeops];
                } else {
                    c.dt = move_dts[k % 4];
                }
                /* small segments on the large case, so pipelines really split */
                c.seg_bytes = ci == 5 ? 4096 : 0;
                /* one-sided allgathers and all-to-alls both ways: pushing
                 * their blocks (every size) and pulling them (never pushing) */
                c.push_max = (ci + ip + t) % 2 ? SIZE_MAX : 0;
                c.reorder_seed = ci < 5 || !quick ? (uint64_t)(_i * 100 + ci * 10 + ip + 1) : 0;
                if (!mx_applies(&c))
                    continue;
                char msg[512];
                if (mx_run(&c, msg, sizeof(msg)))
                    ck_abort_msg("%s/%s p=%d count=%zu %s %s/%s: %s", dpc_coll_name(al->coll),
                                 al->name, p, c.count, ip ? "in-place" : "out-of-place",
                                 dpc_dtype_name(c.dt), reduces ? dpc_op_name(c.op) : "-", msg);
                cases++;
            }
        }
    }
    /* (an algorithm for ranks on several nodes has no layout at some p:
     * test_node_layouts runs it on many) */
    ck_assert(cases > 0 || ((al->flags & DPC_ALGO_NODES) && test_default_nodes(p) == 0));
}
END_TEST

/* Ranks on several nodes. The algorithms for them, on every even layout
 * of 4-16 ranks (N nodes of L ranks, both 2 or more), with consecutive
 * ranks together and dealt round-robin, over counts {0, 1, p-1, p, p+1,
 * large} in place and not; every other algorithm (the rings take each
 * node's ranks together: ring.h) on those of 6 and 8 ranks and 3 nodes of
 * 2 and 3 ranks (uneven: 5 ranks) over counts {1, p+1, large}: checked as
 * the matrix checks (exact results, the same bits on every rank and under
 * reordering, traffic equal to the formula). And where the first may not
 * run: ranks on one node, one rank on a node, nodes with unequal numbers
 * of ranks. */
START_TEST(test_node_layouts)
{
    static const int lps[] = {4, 5, 6, 8, 9, 12, 16};
    int cases = 0;
    for (int ai = 0; ai < nalgos; ai++) {
        const dpc_algo_t *al = algo_at(ai);
        bool spread = al->flags & DPC_ALGO_NODES;
        bool reduces = dpc_coll_reduces(al->coll);
        for (unsigned pi = 0; pi < sizeof(lps) / sizeof(int); pi++) {
            int p = lps[pi];
            if (!spread && p != 5 && p != 6 && p != 8)
                continue;
            for (int nodes = 2; nodes * 2 <= p; nodes++) {
                if (spread ? p % nodes != 0 : p == 5 ? nodes != 2 : p % nodes != 0)
                    continue;
                for (int rr = 0; rr < 2; rr++) {
                    size_t counts[6] = {0, 1, (size_t)p - 1, (size_t)p, (size_t)p + 1,
                                        large_count(al, p)};
                    for (int ci = 0; ci < 6; ci++)
                        for (int ip = 0; ip < 2; ip++) {
                            if (!spread && ci != 1 && ci != 4 && ci != 5)
                                continue;
                            int k = ai * 13 + p * 7 + nodes * 5 + rr * 3 + ci * 2 + ip;
                            mx_case_t c = {.algo = al, .p = p, .count = counts[ci],
                                           .in_place = ip, .nodes = nodes, .round_robin = rr,
                                           .seg_bytes = ci == 5 ? 4096 : 0,
                                           .reorder_seed = (uint64_t)(k + 1)};
                            c.dt = reduces ? tdts[k % ntypeops] : move_dts[k % 4];
                            c.op = reduces ? tops[k % ntypeops] : DPC_OP_SUM;
                            if (spread)
                                ck_assert_msg(mx_applies(&c), "%s/%s: %d ranks on %d nodes%s refused",
                                              dpc_coll_name(al->coll), al->name, p, nodes,
                                              rr ? " round-robin" : "");
                            else if (!mx_applies(&c))
                                continue;
                            char msg[512];
                            if (mx_run(&c, msg, sizeof(msg)))
                                ck_abort_msg("%s/%s p=%d on %d nodes%s count=%zu %s %s/%s: %s",
                                             dpc_coll_name(al->coll), al->name, p, nodes,
                                             rr ? " round-robin" : "", c.count,
                                             ip ? "in-place" : "out-of-place",
                                             dpc_dtype_name(c.dt),
                                             reduces ? dpc_op_name(c.op) : "-", msg);
                            cases++;
                        }
                }
            }
        }
        if (!spread)
            continue;
        /* no layout to run on: one node, one rank a node, unequal nodes */
        int node[8];
        dpc_coll_args_t a = {.coll = al->coll, .size = 4, .op = DPC_OP_SUM, .dtype = DPC_INT32,
                             .one_sided = true};
        ck_assert(!dpc_algo_applies(al, &a));
        a.node = node;
        a.nnodes = 1;
        a.node_ranks = test_node_map(4, 1, false, node);
        ck_assert(!dpc_algo_applies(al, &a));
        a.nnodes = 4;
        a.node_ranks = test_node_map(4, 4, false, node);
        ck_assert(!dpc_algo_applies(al, &a));
        a.size = 5;
        a.nnodes = 2;
        a.node_ranks = test_node_map(5, 2, false, node);
        ck_assert_int_eq(a.node_ranks, 0);
        ck_assert(!dpc_algo_applies(al, &a));
    }
    ck_assert_int_ge(cases, 13 * 2 * 6 * 2 + 20 * 5 * 2 * 3 * 2);
}
END_TEST

/* A program's op (DPC_OP_USER) on every reducing algorithm: sums through
 * the schedule's callback in several element types, checked against the
 * reference; and a non-commutative op, whose allreduce results must still
 * be the same bits on every rank and under reordering (each element's
 * operands combined in one order everywhere). Loop index: algorithm. */
START_TEST(test_user_op)
{
    const dpc_algo_t *al = algo_at(_i);
    if (!dpc_coll_reduces(al->coll))
        return;
    static const dpc_dtype_t dts[] = {DPC_INT32, DPC_FLOAT, DPC_DOUBLE, DPC_UINT8, DPC_INT16,
                                      DPC_INT64};
    static const int ups[] = {1, 2, 3, 4, 5, 7, 8, 13, 16};
    int cases = 0;
    for (unsigned pi = 0; pi < sizeof(ups) / sizeof(int); pi++) {
        int p = ups[pi];
        size_t counts[4] = {0, 1, (size_t)p + 1, large_count(al, p)};
        for (int ci = 0; ci < 4; ci++)
            for (int ip = 0; ip < 2; ip++)
                for (int order = 0; order < 2; order++) {
                    if (order && al->coll != DPC_ALLREDUCE)
                        continue;   /* (one rank computes each block there) */
                    mx_case_t c = {.algo = al, .p = p, .count = counts[ci], .in_place = ip,
                                   .op = DPC_OP_USER, .order_only = order,
                                   .dt = order ? DPC_UINT32 : dts[(pi + ci * 2 + ip) % 6],
                                   .seg_bytes = ci == 3 ? 4096 : 0,
                                   .reorder_seed = (uint64_t)(_i * 1000 + pi * 10 + ci * 2 + ip + 1)};
                    if (!mx_applies(&c))
                        continue;     /* (no node layout at this p) */
                    char msg[512];
                    if (mx_run(&c, msg, sizeof(msg)))
                        ck_abort_msg("%s/%s p=%d count=%zu %s %s user op%s: %s",
                                     dpc_coll_name(al->coll), al->name, p, c.count,
                                     ip ? "in-place" : "out-of-place", dpc_dtype_name(c.dt),
                                     order ? " (not commutative)" : "", msg);
                    cases++;
                }
    }
    ck_assert_int_gt(cases, 0);
}
END_TEST

/* A program's op that does not commute (DPC_OP_USER_ORDERED: affine maps
 * composed, exact on uint32): every algorithm that says it may run one
 * (dpc_algo_applies) gives the operands combined in rank order, at every
 * group size, in and out of place, also under reordered messages; and
 * every reducing collective has such an algorithm at every size, so the
 * model always finds one. Loop index: algorithm. */
START_TEST(test_rank_order)
{
    const dpc_algo_t *al = algo_at(_i);
    if (!dpc_coll_reduces(al->coll))
        return;
    static const int ops_p[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 13, 16};
    for (unsigned pi = 0; pi < sizeof(ops_p) / sizeof(int); pi++) {
        int p = ops_p[pi];
        dpc_coll_args_t probe = {.coll = al->coll, .size = p, .op = DPC_OP_USER_ORDERED,
                                 .dtype = DPC_UINT64, .one_sided = true};
        bool any = false;
        for (const dpc_algo_t *const *x = dpc_algos(); *x; x++)
            any |= dpc_algo_applies(*x, &probe);
        ck_assert_msg(any, "%s, %d ranks: no algorithm may run an op that does not commute",
                      dpc_coll_name(al->coll), p);
        if (!dpc_algo_applies(al, &probe))
            continue;
        size_t counts[4] = {0, 1, (size_t)p + 3, large_count(al, p)};
        for (int ci = 0; ci < 4; ci++)
            for (int ip = 0; ip < 2; ip++) {
                mx_case_t c = {.algo = al, .p = p, .count = counts[ci], .in_place = ip,
                               .op = DPC_OP_USER_ORDERED, .dt = DPC_UINT64,
                               .seg_bytes = ci == 3 ? 4096 : 0,
                               .reorder_seed = (uint64_t)(_i * 7919 + pi * 10 + ci * 2 + ip + 1)};
                char msg[512];
                if (mx_run(&c, msg, sizeof(msg)))
                    ck_abort_msg("%s/%s p=%d count=%zu %s, an op that does not commute: %s",
                                 dpc_coll_name(al->coll), al->name, p, c.count,
                                 ip ? "in-place" : "out-of-place", msg);
            }
    }
}
END_TEST

/* Faults: a failed send, a failed receive, a lost peer; every rank ends
 * (error or right result), none hangs, nothing is left behind. */
START_TEST(test_faults)
{
    const dpc_algo_t *al = algo_at(_i);
    static const int fps[] = {2, 3, 4, 7, 8};
    int nf = 0;
    for (unsigned pi = 0; pi < sizeof(fps) / sizeof(int); pi++) {
        int p = fps[pi];
        mx_fault_t faults[] = {
            {1, p - 1, 1}, {1, 0, 2}, {2, p / 2, 1}, {2, 0, 3}, {3, p / 2, 0}, {3, 0, 0},
        };
        for (unsigned fi = 0; fi < sizeof(faults) / sizeof(faults[0]); fi++) {
            mx_case_t c = {.algo = al, .p = p, .count = 4099, .dt = DPC_INT32,
                           .op = DPC_OP_SUM, .seg_bytes = 1024};
            if (!mx_applies(&c))
                continue;     /* (no node layout at this p) */
            char msg[512];
            if (mx_run_fault(&c, &faults[fi], msg, sizeof(msg)))
                ck_abort_msg("%s/%s p=%d fault %d on rank %d (k=%d): %s", dpc_coll_name(al->coll),
                             al->name, p, faults[fi].kind, faults[fi].rank, faults[fi].k, msg);
            nf++;
        }
    }
    ck_assert_int_gt(nf, 0);
}
END_TEST

/* Every allgather sends its own block in its first step from where it is,
 * not after copying it into place: at p a power of two (where every rank's
 * first message is its own block alone), with the start's local work
 * deferred, each rank's first send is issued within the start and no copy
 * has run. (Sent from the copy, a large block's reader waited for it: at 2
 * ranks, recursive doubling and Bruck took 2.2x the ring's time from 256
 * KiB.) */
START_TEST(test_own_block_first)
{
    static const int fps[] = {2, 4, 8};
    int checked = 0;
    for (int ai = 0; ai < nregistered; ai++) {
        const dpc_algo_t *al = algo_at(ai);
        if (al->coll != DPC_ALLGATHER)
            continue;
        for (unsigned pi = 0; pi < sizeof(fps) / sizeof(int); pi++) {
            int p = fps[pi];
            size_t blk = 1u << 16;
            char *in = malloc(blk), *out = malloc(blk * (size_t)p);
            dpc_sim_t *sim = dpc_sim_create(p, NULL);
            ck_assert_ptr_nonnull(in);
            ck_assert_ptr_nonnull(out);
            ck_assert_ptr_nonnull(sim);
            memset(in, 1, blk);
            for (int r = 0; r < p; r++) {
                dpc_coll_args_t a = {.coll = DPC_ALLGATHER, .rank = r, .size = p, .sbuf = in,
                                     .rbuf = out, .count = blk, .dtype = DPC_BYTE,
                                     .one_sided = true};
                if (!dpc_algo_applies(al, &a))
                    continue;
                dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, r), .tag_base = 1ull << 40,
                                          .mem = DPC_MEM_HOST, .defer_local = true};
                dpc_sched_t *sc = NULL;
                ck_assert_int_eq(dpc_sched_create(&prm, &sc), DPC_OK);
                ck_assert_int_eq(al->build(&a, sc), DPC_OK);
                ck_assert_int_eq(dpc_sched_start(sc), DPC_OK);
                dpc_sched_stats_t st;
                dpc_sched_get_stats(sc, &st);
                if (st.sends + st.gets + st.puts == 0 || st.copies != 0)
                    ck_abort_msg("allgather/%s p=%d rank %d: after the start %llu sends, %llu "
                                 "reads, %llu writes and %llu copies (a message first, no copy)",
                                 al->name, p, r, (unsigned long long)st.sends,
                                 (unsigned long long)st.gets, (unsigned long long)st.puts,
                                 (unsigned long long)st.copies);
                dpc_sched_destroy(sc);
                checked++;
            }
            dpc_sim_destroy(sim);
            free(in);
            free(out);
        }
    }
    ck_assert_int_ge(checked, 3 * 3 * 2);
}
END_TEST

/* The one-sided data movers copy a rank's own block into place before
 * that rank reads or writes a peer's memory (coll/direct.h: in the other
 * order, which a nonblocking start took whenever its peers' descriptors
 * were already there, the same copies took 1.3-1.9x as long). Each rank's
 * schedule defers its local work and copies in small slices, as a
 * nonblocking call's does, and every rank is started before any is tested,
 * so every descriptor is there when the first transfer could go: after
 * every test, a rank that has made a transfer has finished its copy. The
 * results are checked too. */
START_TEST(test_own_copy_before_transfers)
{
    static const dpc_coll_t colls[] = {DPC_ALLGATHER, DPC_ALLGATHERV, DPC_ALLTOALL,
                                       DPC_ALLTOALLV};
    enum { MAXP = 4, BLK = 128 << 10 };   /* blocks beyond the mailboxes: transferred */
    int checked = 0;
    for (size_t ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ci++)
        for (int p = 2; p <= MAXP; p++)
            for (int push = 0; push < 2; push++) {
                const dpc_algo_t *al = dpc_algo_find(colls[ci], "direct");
                bool a2a = colls[ci] == DPC_ALLTOALL || colls[ci] == DPC_ALLTOALLV;
                size_t nin = a2a ? (size_t)p * BLK : BLK, counts[MAXP], displs[MAXP];
                char *in[MAXP], *out[MAXP];
                dpc_sched_t *sc[MAXP];
                dpc_sim_t *sim = dpc_sim_create(p, NULL);
                ck_assert_ptr_nonnull(al);
                ck_assert_ptr_nonnull(sim);
                for (int q = 0; q < p; q++) {
                    counts[q] = BLK;
                    displs[q] = (size_t)(p - 1 - q) * BLK;   /* (v: not in rank order) */
                }
                for (int r = 0; r < p; r++) {
                    in[r] = malloc(nin);
                    out[r] = calloc((size_t)p, BLK);
                    ck_assert_ptr_nonnull(in[r]);
                    ck_assert_ptr_nonnull(out[r]);
                    for (size_t i = 0; i < nin; i++)
                        in[r][i] = (char)(r * 37 + i % 251);
                    bool v = colls[ci] == DPC_ALLGATHERV || colls[ci] == DPC_ALLTOALLV;
                    dpc_coll_args_t a = {.coll = colls[ci], .rank = r, .size = p, .sbuf = in[r],
                                         .rbuf = out[r], .count = BLK, .dtype = DPC_BYTE,
                                         .one_sided = true, .push_min = 0,
                                         .push_max = push ? SIZE_MAX : 0,
                                         .counts = v ? counts : NULL, .displs = v ? displs : NULL,
                                         .scounts = colls[ci] == DPC_ALLTOALLV ? counts : NULL,
                                         .sdispls = colls[ci] == DPC_ALLTOALLV ? displs : NULL};
                    ck_assert(dpc_algo_applies(al, &a));
                    dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, r),
                                              .tag_base = 1ull << 40, .mem = DPC_MEM_HOST,
                                              .defer_local = true, .local_slice_bytes = 8192,
                                              .remote_slice_bytes = 8192};
                    ck_assert_int_eq(dpc_sched_create(&prm, &sc[r]), DPC_OK);
                    ck_assert_int_eq(al->build(&a, sc[r]), DPC_OK);
                }
                for (int r = 0; r < p; r++)
                    ck_assert_int_eq(dpc_sched_start(sc[r]), DPC_OK);
                bool done[MAXP] = {false};
                int left = p;
                uint64_t moved = 0;
                for (int round = 0; left && round < 100000; round++) {
                    for (int r = 0; r < p; r++) {
                        if (done[r])
                            continue;
                        dpc_status_t st = dpc_sched_test(sc[r]);
                        dpc_sched_stats_t ss;
                        dpc_sched_get_stats(sc[r], &ss);
                        if (ss.gets + ss.puts > 0 && ss.copies == 0)
                            ck_abort_msg("%s/direct p=%d %s rank %d: %llu reads and %llu writes "
                                         "of peers' memory before its own block's copy",
                                         dpc_coll_name(colls[ci]), p, push ? "push" : "pull", r,
                                         (unsigned long long)ss.gets,
                                         (unsigned long long)ss.puts);
                        if (st != DPC_INPROGRESS) {
                            ck_assert_int_eq(st, DPC_OK);
                            done[r] = true;
                            left--;
                            moved += ss.gets + ss.puts;
                        }
                    }
                    dpc_sim_deliver(sim);
                }
                ck_assert_int_eq(left, 0);
                ck_assert_uint_eq(moved, (uint64_t)p * (uint64_t)(p - 1));
                /* rank r's block from q: q's input (allgather), q's block r (all-to-all) */
                for (int r = 0; r < p; r++)
                    for (int q = 0; q < p; q++) {
                        bool v = colls[ci] == DPC_ALLGATHERV || colls[ci] == DPC_ALLTOALLV;
                        const char *got = out[r] + (v ? displs[q] : (size_t)q * BLK);
                        const char *want = in[q] + (a2a ? (v ? displs[r] : (size_t)r * BLK) : 0);
                        if (memcmp(got, want, BLK))
                            ck_abort_msg("%s/direct p=%d %s: rank %d's block from %d is wrong",
                                         dpc_coll_name(colls[ci]), p, push ? "push" : "pull", r,
                                         q);
                    }
                for (int r = 0; r < p; r++) {
                    dpc_sched_destroy(sc[r]);
                    free(in[r]);
                    free(out[r]);
                }
                dpc_sim_destroy(sim);
                checked++;
            }
    ck_assert_int_eq(checked, 4 * 3 * 2);
}
END_TEST

/* The rings' segments: the reducing rings' (allreduce, reduce-scatter) as
 * large as the mailboxes carry where they carry 64 KiB (the job's eager
 * limit; 0, the one-node default, is 64 KiB), the vector is at most 1 MiB
 * (allreduce) or 4 MiB (reduce-scatter) and the call blocks,
 * DPC_DEFAULT_SEG_BYTES where the mailboxes carry less, the vector is
 * larger or the call is nonblocking, DPCOLL_SEG_BYTES
 * (args.seg_bytes) where set; the allgather's ring DPC_DEFAULT_SEG_BYTES
 * whatever the mailboxes. Counted in the messages each rank sends, against
 * the closed form steps x ceil(block / segment). */
START_TEST(test_ring_segments)
{
    enum { K = 1024, DEF = DPC_DEFAULT_SEG_BYTES };
    static const struct {
        dpc_coll_t coll;
        int p;
        size_t block, eager, seg, want_seg;
        bool nonblocking;
    } cases[] = {
        {DPC_ALLREDUCE, 2, 256 * K, 0, 0, 64 * K, false},
        {DPC_ALLREDUCE, 3, 256 * K, 65536, 0, 64 * K, false},
        {DPC_ALLREDUCE, 3, 256 * K, 32768, 0, DEF, false},
        {DPC_ALLREDUCE, 3, 256 * K, 8192, 0, DEF, false},
        {DPC_ALLREDUCE, 3, 256 * K, 65536, 131072, 128 * K, false},
        {DPC_ALLREDUCE, 2, 1024 * K, 65536, 0, DEF, false},          /* a 2 MiB vector */
        {DPC_ALLREDUCE, 2, 256 * K, 65536, 0, DEF, true},
        {DPC_REDUCE_SCATTER_BLOCK, 3, 256 * K, 65536, 0, DEF, true},
        {DPC_REDUCE_SCATTER_BLOCK, 2, 256 * K, 0, 0, 64 * K, false},
        {DPC_REDUCE_SCATTER_BLOCK, 3, 256 * K, 8192, 0, DEF, false},
        {DPC_REDUCE_SCATTER_BLOCK, 3, 256 * K, 65536, 131072, 128 * K, false},
        {DPC_REDUCE_SCATTER_BLOCK, 2, 2048 * K, 65536, 0, 64 * K, false},   /* 4 MiB */
        {DPC_REDUCE_SCATTER_BLOCK, 2, 3072 * K, 65536, 0, DEF, false},      /* 6 MiB */
        {DPC_ALLGATHER, 3, 256 * K, 65536, 0, DEF, false},
        {DPC_ALLGATHER, 3, 256 * K, 65536, 131072, 128 * K, false},
    };
    for (size_t ci = 0; ci < sizeof(cases) / sizeof(cases[0]); ci++) {
        dpc_coll_t coll = cases[ci].coll;
        int p = cases[ci].p;
        const dpc_algo_t *al = dpc_algo_find(coll, "ring");
        size_t per = cases[ci].block / sizeof(float);   /* a block's elements */
        size_t count = coll == DPC_ALLREDUCE ? per * (size_t)p : per;
        size_t in_n = coll == DPC_REDUCE_SCATTER_BLOCK ? per * (size_t)p : count;
        size_t out_n = coll == DPC_ALLGATHER ? per * (size_t)p : count;
        float *in = calloc(in_n * (size_t)p, sizeof(float));
        float *out = calloc(out_n * (size_t)p, sizeof(float));
        dpc_coll_args_t args[3];
        dpc_status_t st[3];
        ck_assert_ptr_nonnull(in);
        ck_assert_ptr_nonnull(out);
        for (int r = 0; r < p; r++)
            args[r] = (dpc_coll_args_t){.coll = coll, .rank = r, .size = p,
                                        .sbuf = in + in_n * (size_t)r,
                                        .rbuf = out + out_n * (size_t)r, .count = count,
                                        .dtype = DPC_FLOAT, .op = DPC_OP_SUM,
                                        .seg_bytes = cases[ci].seg, .eager_max = cases[ci].eager,
                                        .nonblocking = cases[ci].nonblocking};
        dpc_sim_t *sim = dpc_sim_create(p, NULL);
        ck_assert_ptr_nonnull(sim);
        ck_assert_int_eq(dpc_sim_run(sim, al, args, 0, st, NULL, NULL, NULL), DPC_OK);
        /* (p - 1 steps a phase; an allgather phase of 2 ranks sends each
         * block whole: nothing is forwarded, ring.c's ag_seg) */
        size_t seg = cases[ci].want_seg;
        uint64_t per_step = (cases[ci].block + seg - 1) / seg, ag_step = p == 2 ? 1 : per_step;
        uint64_t want = coll == DPC_ALLREDUCE   ? (uint64_t)(p - 1) * (per_step + ag_step)
                        : coll == DPC_ALLGATHER ? (uint64_t)(p - 1) * ag_step
                                                : (uint64_t)(p - 1) * per_step;
        for (int r = 0; r < p; r++) {
            ck_assert_int_eq(st[r], DPC_OK);
            ck_assert_msg(dpc_sim_msgs_sent(sim, r) == want,
                          "%s ring p=%d, blocks of %zu, mailboxes of %zu bytes, DPCOLL_SEG_BYTES "
                          "%zu%s: rank %d sent %llu messages, expected %llu (segments of %zu)",
                          dpc_coll_name(coll), p, cases[ci].block, cases[ci].eager, cases[ci].seg,
                          cases[ci].nonblocking ? ", nonblocking" : "", r, (unsigned long long)dpc_sim_msgs_sent(sim, r),
                          (unsigned long long)want, seg);
        }
        dpc_sim_destroy(sim);
        free(in);
        free(out);
    }
}
END_TEST

/* Ranks dealt round-robin over nodes (8 on 2, 12 on 3): the rings cross
 * between nodes at one hop a node (ring.h: each node's ranks together),
 * and the hierarchical allreduce sends 2(N-1) n bytes between nodes in
 * all, the bytes of one ring over the nodes (a ring in rank order: at every
 * hop, 2(p-1) n), the hierarchical reduce-scatters and allgathers (N-1) n
 * (the flat rings' N hops carry N(p-1)/p n). Counted per pair of ranks on
 * the simulated transport. */
START_TEST(test_rings_cross_once_a_node)
{
    static const struct { dpc_coll_t coll; const char *name; } algos[] = {
        {DPC_ALLREDUCE, "ring"}, {DPC_REDUCE_SCATTER_BLOCK, "ring"}, {DPC_REDUCE_SCATTER, "ring"},
        {DPC_ALLGATHER, "ring"}, {DPC_ALLGATHERV, "ring"}, {DPC_ALLREDUCE, "hierarchical"},
        {DPC_REDUCE_SCATTER_BLOCK, "hierarchical"}, {DPC_REDUCE_SCATTER, "hierarchical"},
        {DPC_ALLGATHER, "hierarchical"}, {DPC_ALLGATHERV, "hierarchical"},
    };
    static const struct { int p, nodes; } layouts[] = {{8, 2}, {12, 3}};
    for (size_t li = 0; li < sizeof(layouts) / sizeof(layouts[0]); li++)
        for (size_t ai = 0; ai < sizeof(algos) / sizeof(algos[0]); ai++) {
            int p = layouts[li].p, nodes = layouts[li].nodes, node[12];
            const dpc_algo_t *al = dpc_algo_find(algos[ai].coll, algos[ai].name);
            ck_assert_ptr_nonnull(al);
            int node_ranks = test_node_map(p, nodes, true, node);
            size_t per = 1200;   /* elements a rank's block (allreduce: the vector / p) */
            bool whole = al->coll == DPC_ALLREDUCE;
            size_t count = whole ? per * (size_t)p : per, counts[12], displs[12];
            for (int i = 0; i < p; i++)
                counts[i] = per, displs[i] = (size_t)i * per;
            bool v = al->coll == DPC_REDUCE_SCATTER || al->coll == DPC_ALLGATHERV;
            size_t in_n = al->coll == DPC_ALLGATHER || al->coll == DPC_ALLGATHERV ? per
                                                                                   : per * (size_t)p;
            size_t out_n = whole || al->coll == DPC_ALLGATHER || al->coll == DPC_ALLGATHERV
                               ? per * (size_t)p : per;
            int32_t *in = calloc(in_n * (size_t)p, sizeof(int32_t));
            int32_t *out = calloc(out_n * (size_t)p, sizeof(int32_t));
            ck_assert_ptr_nonnull(in);
            ck_assert_ptr_nonnull(out);
            dpc_coll_args_t args[12];
            dpc_status_t st[12];
            for (int r = 0; r < p; r++)
                args[r] = (dpc_coll_args_t){.coll = al->coll, .rank = r, .size = p,
                                            .sbuf = in + in_n * (size_t)r,
                                            .rbuf = out + out_n * (size_t)r, .count = count,
                                            .counts = v ? counts : NULL,
                                            .displs = v ? displs : NULL, .dtype = DPC_INT32,
                                            .op = DPC_OP_SUM, .node = node, .nnodes = nodes,
                                            .node_ranks = node_ranks};
            ck_assert(dpc_algo_applies(al, &args[0]));
            dpc_sim_t *sim = dpc_sim_create(p, &(dpc_sim_opts_t){.per_peer_counters = true});
            ck_assert_ptr_nonnull(sim);
            ck_assert_int_eq(dpc_sim_run(sim, al, args, 0, st, NULL, NULL, NULL), DPC_OK);
            int crossing = 0;
            uint64_t across = 0;
            for (int i = 0; i < p; i++) {
                ck_assert_int_eq(st[i], DPC_OK);
                for (int k = 0; k < p; k++)
                    if (node[i] != node[k] && dpc_sim_bytes_to(sim, i, k)) {
                        crossing++;
                        across += dpc_sim_bytes_to(sim, i, k);
                    }
            }
            /* (the hierarchies: only their rings of one rank a node cross,
             * each rank's twice over its 1/L of the vector for the
             * allreduce, once over its column of N blocks for the others) */
            uint64_t n = (uint64_t)per * (size_t)p * sizeof(int32_t);
            uint64_t want = (whole ? 2 : 1) * (uint64_t)(nodes - 1) * n;
            if (!strcmp(al->name, "hierarchical"))
                ck_assert_msg(across == want,
                              "%s/hierarchical, %d ranks dealt over %d nodes: %llu bytes between "
                              "nodes, the nodes' rings send %llu", dpc_coll_name(al->coll), p,
                              nodes, (unsigned long long)across, (unsigned long long)want);
            else
                ck_assert_msg(crossing == nodes, "%s/ring, %d ranks dealt over %d nodes: %d pairs "
                              "of ranks on different nodes exchange data, the ring has %d such hops",
                              dpc_coll_name(al->coll), p, nodes, crossing, nodes);
            dpc_sim_destroy(sim);
            free(in);
            free(out);
        }
}
END_TEST

/* The ring's order one rank at a time (ring_position, ring_member: what
 * the traffic formulas use) is the order the rings are built in
 * (ring_node_order), on placements consecutive, round-robin and mixed. */
START_TEST(test_ring_position)
{
    static const int mixed[9] = {0, 1, 1, 0, 2, 1, 2, 0, 2};   /* numbered by lowest rank */
    for (int p = 2; p <= 9; p++)
        for (int nodes = 1; nodes <= p; nodes++)
            for (int way = 0; way < 3; way++) {
                int node[9];
                if (way == 2 && (p != 9 || nodes != 3))
                    continue;
                if (way == 2)
                    memcpy(node, mixed, sizeof(node));
                else
                    test_node_map(p, nodes, way == 1, node);
                dpc_coll_args_t a = {.coll = DPC_ALLREDUCE, .size = p, .node = node,
                                     .nnodes = nodes};
                for (int r = 0; r < p; r++) {
                    int *order, pos;
                    ck_assert_int_eq(ring_node_order(&a, r, &order, &pos), 0);
                    ck_assert_msg(ring_position(&a, r) == pos,
                                  "%d ranks on %d nodes (way %d): rank %d at %d, built at %d", p,
                                  nodes, way, r, ring_position(&a, r), pos);
                    for (int q = 0; q < p; q++)
                        ck_assert_int_eq(ring_member(&a, q), order ? order[q] : q);
                    free(order);
                }
            }
}
END_TEST

int main(void)
{
    quick = getenv("DPC_TEST_QUICK") && atoi(getenv("DPC_TEST_QUICK"));
    if (quick) {
        ps = quick_ps;
        nps = sizeof(quick_ps) / sizeof(int);
    }
    while (dpc_algos()[nregistered])
        nregistered++;
    nalgos = nregistered + (int)(sizeof(unlisted) / sizeof(unlisted[0]));
    ntypeops = mx_type_ops(tdts, tops, 256);
    Suite *s = suite_create("matrix");
    TCase *tc = tcase_create("algorithms");
    tcase_set_timeout(tc, 900);
    tcase_add_loop_test(tc, test_algo_p, 0, nalgos * nps);
    suite_add_tcase(s, tc);
    TCase *tu = tcase_create("user_op");
    tcase_set_timeout(tu, 900);
    tcase_add_loop_test(tu, test_user_op, 0, nalgos);
    suite_add_tcase(s, tu);
    TCase *to = tcase_create("rank_order");
    tcase_set_timeout(to, 900);
    tcase_add_loop_test(to, test_rank_order, 0, nalgos);
    suite_add_tcase(s, to);
    TCase *tb = tcase_create("own_block_first");
    tcase_add_test(tb, test_own_block_first);
    suite_add_tcase(s, tb);
    TCase *toc = tcase_create("own_copy_first");
    tcase_add_test(toc, test_own_copy_before_transfers);
    suite_add_tcase(s, toc);
    TCase *tn = tcase_create("node_layouts");
    tcase_set_timeout(tn, 900);
    tcase_add_test(tn, test_node_layouts);
    suite_add_tcase(s, tn);
    TCase *tx = tcase_create("rings_across_nodes");
    tcase_add_test(tx, test_rings_cross_once_a_node);
    tcase_add_test(tx, test_ring_position);
    suite_add_tcase(s, tx);
    TCase *tsg = tcase_create("ring_segments");
    tcase_add_test(tsg, test_ring_segments);
    suite_add_tcase(s, tsg);
    TCase *tf = tcase_create("faults");
    tcase_set_timeout(tf, 900);
    tcase_add_loop_test(tf, test_faults, 0, nalgos);
    suite_add_tcase(s, tf);
    SRunner *sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    /* the cases test_algo_p runs (each in its own forked child, so they
     * are counted here from the same loops rather than collected) */
    long cases = 0;
    for (int a = 0; a < nalgos; a++)
        for (int pi = 0; pi < nps; pi++)
            if (!(algo_at(a)->flags & DPC_ALGO_NODES) || test_default_nodes(ps[pi]))
                cases += 6 * 2 * (dpc_coll_reduces(algo_at(a)->coll) ? 3 : 2);
    printf("matrix: %d algorithms x %d group sizes = %ld checked cases (+ a reordered rerun "
           "of each), %d x 30 fault runs\n", nalgos, nps, cases, nalgos);
    srunner_free(sr);
    return failed ? 1 : 0;
}
