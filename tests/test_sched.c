/*
 * The schedule engine on its own: dependency order, local steps, scratch,
 * errors while building and while running (a failed step cancels the rest
 * and is reported with the peers still waited for), timeouts on the
 * transport's clock, cancel on destroy, and device memory never reduced on
 * the host.
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dpc_sched.h"
#include "dpc_copy.h"
#include "dpc_sim.h"

static dpc_sched_t *mk(dpc_sim_t *sim, int rank, uint64_t timeout)
{
    dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, rank), .tag_base = 1ull << 40,
                              .timeout_ns = timeout, .mem = DPC_MEM_HOST};
    dpc_sched_t *s = NULL;
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    return s;
}

/* drive a set of schedules to the end; returns rounds taken */
static int drive(dpc_sim_t *sim, dpc_sched_t **s, dpc_status_t *st, int n)
{
    int rounds = 0, running = n;
    for (int i = 0; i < n; i++)
        st[i] = DPC_INPROGRESS;
    while (running && rounds < 10000) {
        uint64_t ev = dpc_sim_events(sim);
        for (int i = 0; i < n; i++)
            if (st[i] == DPC_INPROGRESS && (st[i] = dpc_sched_test(s[i])) != DPC_INPROGRESS)
                running--;
        dpc_sim_deliver(sim);
        if (dpc_sim_events(sim) == ev)
            dpc_sim_advance(sim, 1000000000ull);
        rounds++;
    }
    return rounds;
}

/* Start two ranks' schedules and drive them: both must succeed. */
static void run_both_ok(dpc_sim_t *sim, dpc_sched_t **s)
{
    dpc_status_t st[2];
    ck_assert_int_eq(dpc_sched_start(s[0]), DPC_OK);
    ck_assert_int_eq(dpc_sched_start(s[1]), DPC_OK);
    drive(sim, s, st, 2);
    ck_assert_int_eq(st[0], DPC_OK);
    ck_assert_int_eq(st[1], DPC_OK);
}

/* Rank 0's region shared with rank 1: s[0] exposes buf and sends rank 1
 * its descriptor (tag 1), behind a join of the exposure with join_first
 * (as the direct algorithms send theirs); with wait_done, s[0] then waits
 * for rank 1's word that it is done with the region (tag 2). Returns s[1]'s
 * receive of the descriptor, which lands in *theirs. */
static dpc_step_id_t share_region(dpc_sched_t *s[2], void *buf, size_t len, bool join_first,
                                  bool wait_done, char **theirs)
{
    char *mine = dpc_sched_scratch(s[0], DPC_REGION_DESC_MAX);
    *theirs = dpc_sched_scratch(s[1], DPC_REGION_DESC_MAX);
    dpc_step_id_t e = dpc_sched_expose(s[0], buf, len, mine, DPC_NO_DEPS);
    if (join_first)
        e = dpc_sched_nop(s[0], DPC_AFTER(e));
    dpc_step_id_t sd = dpc_sched_send(s[0], 1, 1, mine, DPC_REGION_DESC_MAX, DPC_AFTER(e));
    if (wait_done)
        dpc_sched_recv(s[0], 1, 2, NULL, 0, DPC_AFTER(sd));
    return dpc_sched_recv(s[1], 0, 1, *theirs, DPC_REGION_DESC_MAX, DPC_NO_DEPS);
}

/* One-sided steps: rank 0 exposes a buffer and sends its descriptor; rank
 * 1 reads part of it, and writes into another part; stats count both. */
START_TEST(test_one_sided)
{
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_sched_t *s[2] = {mk(sim, 0, 0), mk(sim, 1, 0)};
    int32_t buf[8] = {1, 2, 3, 4, 5, 6, 7, 8}, got[3] = {0}, put[2] = {-1, -2};
    ck_assert(dpc_sched_one_sided(s[0]));
    char *theirs;
    /* rank 0 ends only when rank 1 says it is done with the region */
    dpc_step_id_t rv = share_region(s, buf, sizeof(buf), false, true, &theirs);
    dpc_step_id_t g = dpc_sched_get(s[1], 0, theirs, 2 * sizeof(int32_t), got, sizeof(got),
                                    DPC_AFTER(rv));
    dpc_step_id_t pt = dpc_sched_put(s[1], 0, theirs, 6 * sizeof(int32_t), put, sizeof(put),
                                     DPC_AFTER(rv));
    dpc_sched_send(s[1], 0, 2, NULL, 0, DPC_AFTER(g, pt));
    run_both_ok(sim, s);
    ck_assert_int_eq(got[0], 3);
    ck_assert_int_eq(got[2], 5);
    ck_assert_int_eq(buf[6], -1);
    ck_assert_int_eq(buf[7], -2);
    ck_assert_int_eq(buf[5], 6);
    dpc_sched_stats_t stt;
    dpc_sched_get_stats(s[1], &stt);
    ck_assert_uint_eq(stt.gets, 1);
    ck_assert_uint_eq(stt.bytes_got, sizeof(got));
    ck_assert_uint_eq(stt.puts, 1);
    ck_assert_uint_eq(stt.bytes_put, sizeof(put));
    ck_assert_int_eq(dpc_sim_regions(sim, 0), 1);     /* exposed until the schedule goes */
    dpc_sched_destroy(s[0]);
    ck_assert_int_eq(dpc_sim_regions(sim, 0), 0);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
}
END_TEST

/* defer_local: exposing runs at start (a peer waits for the descriptor),
 * and what it makes ready is kept for test(), not dropped (it was: the
 * descriptor was never sent, and a nonblocking one-sided allreduce hung). */
START_TEST(test_defer_local_expose)
{
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 0), .tag_base = 1ull << 40,
                              .mem = DPC_MEM_HOST, .defer_local = true};
    dpc_sched_t *s[2] = {NULL, mk(sim, 1, 0)};
    ck_assert_int_eq(dpc_sched_create(&prm, &s[0]), DPC_OK);
    int32_t buf[2] = {7, 8}, got[2] = {0};
    char *theirs;
    dpc_step_id_t rv = share_region(s, buf, sizeof(buf), true, true, &theirs);
    dpc_step_id_t g = dpc_sched_get(s[1], 0, theirs, 0, got, sizeof(got), DPC_AFTER(rv));
    dpc_sched_send(s[1], 0, 2, NULL, 0, DPC_AFTER(g));
    run_both_ok(sim, s);
    ck_assert_int_eq(got[1], 8);
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
}
END_TEST

/* Two simulated ranks, a schedule each, rank 0's deferring its local work
 * (defer_local) and rank 1's not; big[0..n) filled with its indices. */
static dpc_sim_t *two_ranks_first_defers(dpc_sched_t *s[2], int32_t *big, int n)
{
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    for (int r = 0; r < 2; r++) {
        dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, r), .tag_base = 1ull << 40,
                                  .mem = DPC_MEM_HOST, .defer_local = r == 0};
        ck_assert_int_eq(dpc_sched_create(&prm, &s[r]), DPC_OK);
    }
    for (int i = 0; i < n; i++)
        big[i] = i;
    return sim;
}

/* ... then, rank 0's schedule started (and looked at), rank 1's too, and
 * both run to their end without error. */
static void start_second_and_drive(dpc_sim_t *sim, dpc_sched_t *s[2])
{
    ck_assert_int_eq(dpc_sched_start(s[1]), DPC_OK);
    dpc_status_t st[2];
    drive(sim, s, st, 2);
    ck_assert_int_eq(st[0], DPC_OK);
    ck_assert_int_eq(st[1], DPC_OK);
}

/* defer_local: start() also completes the ready joins (NOP steps) and
 * sends what they free, in place of the first test(): a peer waits for such
 * a send (the direct algorithms' descriptor, behind the join of their
 * exposures), which used to go out only when the program came back to wait.
 * A join behind a deferred copy still waits for the copy. */
START_TEST(test_defer_local_joins)
{
    dpc_sched_t *s[2];
    static int32_t big[1 << 16], dst[1 << 16];
    int32_t a[2] = {5, 6}, b[2] = {7, 8}, got_a[2] = {0}, got_b[2] = {0};
    dpc_sim_t *sim = two_ranks_first_defers(s, big, 1 << 16);
    /* queued first: a copy, then a join after it, then a free join */
    dpc_step_id_t c = dpc_sched_copy(s[0], dst, big, sizeof(big), DPC_NO_DEPS);
    dpc_step_id_t after_copy = dpc_sched_nop(s[0], DPC_AFTER(c));
    dpc_step_id_t free_join = dpc_sched_nop(s[0], DPC_NO_DEPS);
    dpc_step_id_t j2 = dpc_sched_nop(s[0], DPC_AFTER(free_join));   /* a join of a join */
    dpc_sched_send(s[0], 1, 4, a, sizeof(a), DPC_AFTER(j2));
    dpc_sched_send(s[0], 1, 5, b, sizeof(b), DPC_AFTER(after_copy));
    dpc_sched_recv(s[1], 0, 4, got_a, sizeof(got_a), DPC_NO_DEPS);
    dpc_sched_recv(s[1], 0, 5, got_b, sizeof(got_b), DPC_NO_DEPS);
    ck_assert_int_eq(dpc_sched_start(s[0]), DPC_OK);
    dpc_sched_stats_t stt;
    dpc_sched_get_stats(s[0], &stt);
    ck_assert_uint_eq(stt.sends, 1);       /* the send behind the free joins */
    ck_assert_uint_eq(stt.copies, 0);      /* the copy still deferred ... */
    ck_assert_int_eq(dst[4321], 0);
    start_second_and_drive(sim, s);
    dpc_sched_get_stats(s[0], &stt);
    ck_assert_uint_eq(stt.sends, 2);       /* ... and the send behind it after it */
    ck_assert_uint_eq(stt.copies, 1);
    ck_assert_int_eq(dst[4321], 4321);
    ck_assert_int_eq(got_a[1], 6);
    ck_assert_int_eq(got_b[1], 8);
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
}
END_TEST

/* defer_local: a start does not read or write more than
 * SCHED_DEFER_NOW_MAX bytes of a peer's memory, even where the peer's
 * descriptor is already there: on one node such a read is a kernel copy
 * made within the call (a nonblocking bcast's start took the whole call's
 * time at 4-16 MiB, and delayed its own descriptor, which its peer waited
 * for). It goes first at the next test; a small read still goes at once.
 * Rank 1 defers; rank 0's descriptor reaches it before it starts. */
START_TEST(test_defer_local_one_sided)
{
    enum { BIG = 64 << 10, SMALL = 16 };
    dpc_sched_t *s[2];
    static int32_t big[BIG / 4], got_big[BIG / 4];
    int32_t got_small[SMALL / 4] = {0};
    /* (eager: the descriptor lands in the mailbox, as on one node) */
    dpc_sim_t *sim = dpc_sim_create(2, &(dpc_sim_opts_t){.eager_max = 4096});
    for (int r = 0; r < 2; r++) {
        dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, r), .tag_base = 1ull << 40,
                                  .mem = DPC_MEM_HOST, .defer_local = r == 1};
        ck_assert_int_eq(dpc_sched_create(&prm, &s[r]), DPC_OK);
    }
    for (int i = 0; i < BIG / 4; i++)
        big[i] = i;
    char *theirs;
    dpc_step_id_t rv = share_region(s, big, sizeof(big), false, true, &theirs);
    dpc_step_id_t gb = dpc_sched_get(s[1], 0, theirs, 0, got_big, BIG, DPC_AFTER(rv));
    dpc_step_id_t gs = dpc_sched_get(s[1], 0, theirs, 40, got_small, SMALL, DPC_AFTER(rv));
    dpc_sched_send(s[1], 0, 2, NULL, 0, DPC_AFTER(gb, gs));
    ck_assert_int_eq(dpc_sched_start(s[0]), DPC_OK);
    dpc_sim_deliver(sim);                        /* the descriptor is there ... */
    ck_assert_int_eq(dpc_sched_start(s[1]), DPC_OK);
    dpc_sched_stats_t stt;
    dpc_sched_get_stats(s[1], &stt);
    ck_assert_uint_eq(stt.gets, 1);              /* ... the small read went, */
    ck_assert_uint_eq(stt.bytes_got, SMALL);     /* the large one waits for a test */
    ck_assert(dpc_sched_has_local_work(s[1]));   /* (a progress thread is woken for it) */
    ck_assert_int_eq(dpc_sched_test(s[1]), DPC_INPROGRESS);
    dpc_sched_get_stats(s[1], &stt);
    ck_assert_uint_eq(stt.gets, 2);
    ck_assert_uint_eq(stt.bytes_got, SMALL + BIG);
    dpc_status_t st[2];
    drive(sim, s, st, 2);
    ck_assert_int_eq(st[0], DPC_OK);
    ck_assert_int_eq(st[1], DPC_OK);
    ck_assert_int_eq(got_small[1], 11);
    for (int i = 0; i < BIG / 4; i++)
        ck_assert_int_eq(got_big[i], i);
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
}
END_TEST

/* remote_slice_bytes: a read or write of a peer's memory goes in slices of
 * that size, one after the other, each at its own offset on both sides
 * (the progress thread made a whole one under the engine's lock: a 16 MiB
 * nonblocking allgather's read held a program's MPI_Test for 2.4 ms). The
 * schedule's stats still count one read and one write of the whole size,
 * the data are exact, and a replay starts the slices from the beginning. */
START_TEST(test_one_sided_slices)
{
    enum { REGION = 128 << 10, SLICE = 5000, GOT_AT = 40, GOT = 60000, PUT_AT = 70000,
           PUT = 20000 };
    static unsigned char region[REGION], got[GOT], put[PUT];
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_sched_t *s[2];
    for (int r = 0; r < 2; r++) {
        dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, r), .tag_base = 1ull << 40,
                                  .mem = DPC_MEM_HOST,
                                  .remote_slice_bytes = r == 1 ? SLICE : 0};
        ck_assert_int_eq(dpc_sched_create(&prm, &s[r]), DPC_OK);
    }
    char *theirs;
    dpc_step_id_t rv = share_region(s, region, sizeof(region), false, true, &theirs);
    dpc_step_id_t g = dpc_sched_get(s[1], 0, theirs, GOT_AT, got, GOT, DPC_AFTER(rv));
    dpc_step_id_t pt = dpc_sched_put(s[1], 0, theirs, PUT_AT, put, PUT, DPC_AFTER(rv));
    dpc_sched_send(s[1], 0, 2, NULL, 0, DPC_AFTER(g, pt));
    for (int run = 0; run < 2; run++) {
        for (int i = 0; i < REGION; i++)
            region[i] = (unsigned char)(i * 7 + run);
        for (int i = 0; i < PUT; i++)
            put[i] = (unsigned char)(i * 13 + 5 * run + 1);
        memset(got, 0, sizeof(got));
        if (run)
            for (int r = 0; r < 2; r++)
                ck_assert_int_eq(dpc_sched_replay_tags(s[r], 2ull << 40, NULL), DPC_OK);
        /* driven by hand: part way through the read, rank 1 has local
         * work, also while the queue is empty and a slice in flight (a
         * progress thread that took that for a wait on the network napped
         * between slices) */
        ck_assert_int_eq(dpc_sched_start(s[0]), DPC_OK);
        ck_assert_int_eq(dpc_sched_start(s[1]), DPC_OK);
        dpc_status_t st[2] = {DPC_INPROGRESS, DPC_INPROGRESS};
        int midway = 0;
        for (int round = 0; round < 10000 && (st[0] == DPC_INPROGRESS || st[1] == DPC_INPROGRESS);
             round++) {
            for (int r = 0; r < 2; r++)
                if (st[r] == DPC_INPROGRESS)
                    st[r] = dpc_sched_test(s[r]);
            dpc_sched_stats_t now;
            dpc_sched_get_stats(s[1], &now);
            if (st[1] == DPC_INPROGRESS && now.bytes_got > 0 && now.bytes_got < GOT) {
                ck_assert(dpc_sched_has_local_work(s[1]));
                midway++;
            }
            dpc_sim_deliver(sim);
        }
        ck_assert_int_eq(st[0], DPC_OK);
        ck_assert_int_eq(st[1], DPC_OK);
        ck_assert_int_gt(midway, 0);
        for (int i = 0; i < GOT; i++)
            ck_assert_uint_eq(got[i], (unsigned char)((i + GOT_AT) * 7 + run));
        for (int i = 0; i < PUT; i++)
            ck_assert_uint_eq(region[PUT_AT + i], put[i]);
        ck_assert_uint_eq(region[PUT_AT - 1], (unsigned char)((PUT_AT - 1) * 7 + run));
        ck_assert_uint_eq(region[PUT_AT + PUT], (unsigned char)((PUT_AT + PUT) * 7 + run));
        /* the transport saw slices: ceil(60000 / 5000) reads a run, and the
         * written bytes once */
        ck_assert_uint_eq(dpc_sim_gets(sim, 1), (uint64_t)(run + 1) * ((GOT + SLICE - 1) / SLICE));
        ck_assert_uint_eq(dpc_sim_bytes_got(sim, 1), (uint64_t)(run + 1) * GOT);
        ck_assert_uint_eq(dpc_sim_bytes_put(sim, 1), (uint64_t)(run + 1) * PUT);
        dpc_sched_stats_t stt;
        dpc_sched_get_stats(s[1], &stt);
        ck_assert_uint_eq(stt.gets, 1);
        ck_assert_uint_eq(stt.bytes_got, GOT);
        ck_assert_uint_eq(stt.puts, 1);
        ck_assert_uint_eq(stt.bytes_put, PUT);
    }
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
}
END_TEST

/* Streaming copies (non-temporal stores) land every byte, whatever the
 * alignment of either end and the tail; and a copy step large enough to
 * stream, run in slices that start off any 16-byte boundary, is exact. */
START_TEST(test_streaming_copy)
{
    enum { MAX = 5000 };
    unsigned char *src = malloc(MAX + 64), *dst = malloc(MAX + 64), *want = malloc(MAX + 64);
    for (int i = 0; i < MAX + 64; i++)
        src[i] = (unsigned char)(i * 131 + 7);
    static const size_t sizes[] = {0, 1, 255, 256, 257, 1000, 4096 + 13, MAX};
    for (size_t k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
        for (int so = 0; so < 17; so += 3)
            for (int d0 = 0; d0 < 17; d0 += 2) {
                memset(dst, 0xEE, MAX + 64);
                memset(want, 0xEE, MAX + 64);
                memcpy(want + d0, src + so, sizes[k]);
                dpc_copy(dst + d0, src + so, sizes[k], 1);
                ck_assert_msg(!memcmp(dst, want, MAX + 64), "%zu bytes, src +%d, dst +%d",
                              sizes[k], so, d0);
            }
    free(src);
    free(dst);
    free(want);
    /* a schedule's copy step beyond the threshold, in 1 MiB + 5 byte slices */
    size_t n = DPC_STREAM_COPY_MIN + 77;
    char *a = malloc(n), *b = malloc(n + 3);
    for (size_t i = 0; i < n; i++)
        a[i] = (char)(i * 2654435761u >> 13);
    memset(b, 0, n + 3);
    dpc_sim_t *sim = dpc_sim_create(1, NULL);
    dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 0), .tag_base = 1ull << 40,
                              .mem = DPC_MEM_HOST, .local_slice_bytes = (1u << 20) + 5};
    dpc_sched_t *s = NULL;
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    dpc_sched_copy(s, b + 3, a, n, DPC_NO_DEPS);
    ck_assert_int_eq(dpc_sched_start(s), DPC_OK);
    dpc_status_t st;
    while ((st = dpc_sched_test(s)) == DPC_INPROGRESS)
        ;
    ck_assert_int_eq(st, DPC_OK);
    ck_assert(!memcmp(b + 3, a, n) && b[0] == 0 && b[1] == 0 && b[2] == 0);
    dpc_sched_destroy(s);
    dpc_sim_destroy(sim);
    free(a);
    free(b);
}
END_TEST

/* Both ranks' finished schedules rearmed for run number `run` (its own tag
 * base): with new parameters, or (tags_only) the last ones but the tags. */
static void replay_both(dpc_sim_t *sim, dpc_sched_t **s, int run, bool tags_only)
{
    for (int r = 0; r < 2; r++) {
        dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, r),
                                  .tag_base = (uint64_t)(run + 1) << 40, .mem = DPC_MEM_HOST};
        ck_assert_int_eq(tags_only ? dpc_sched_replay_tags(s[r], prm.tag_base, NULL)
                                   : dpc_sched_replay(s[r], &prm),
                         DPC_OK);
    }
}

/* A finished schedule run again (replay, and replay with only new tags):
 * same steps, new tag base, new data in the same buffers; refused while it
 * runs, when its scratch came from a pool, and for a tag base with step
 * bits. */
START_TEST(test_replay)
{
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_sched_t *s[2] = {mk(sim, 0, 0), mk(sim, 1, 0)};
    int32_t x[4], y[4], out[4];
    int32_t *tmp = dpc_sched_scratch(s[1], sizeof(x));
    dpc_sched_send(s[0], 1, 5, x, sizeof(x), DPC_NO_DEPS);
    dpc_step_id_t rv = dpc_sched_recv(s[1], 0, 5, tmp, sizeof(x), DPC_NO_DEPS);
    dpc_sched_reduce(s[1], out, tmp, y, 4, DPC_INT32, DPC_OP_SUM, DPC_AFTER(rv));
    for (int run = 0; run < 4; run++) {
        for (int i = 0; i < 4; i++) {
            x[i] = run * 100 + i;
            y[i] = 1000 * (run + 1);
        }
        if (run > 0) {
            ck_assert_int_eq(dpc_sched_replay_tags(s[0], ((uint64_t)(run + 1) << 40) | 1, NULL),
                             DPC_ERR_STATE);
            replay_both(sim, s, run, run >= 2);
        }
        dpc_status_t st[2];
        ck_assert_int_eq(dpc_sched_start(s[0]), DPC_OK);
        ck_assert_int_eq(dpc_sched_start(s[1]), DPC_OK);
        if (run == 0) {      /* running: no replay */
            dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 1), .tag_base = 1ull << 40,
                                      .mem = DPC_MEM_HOST};
            ck_assert_int_eq(dpc_sched_replay(s[1], &prm), DPC_ERR_STATE);
            ck_assert_int_eq(dpc_sched_replay_tags(s[1], 2ull << 40, NULL), DPC_ERR_STATE);
        }
        drive(sim, s, st, 2);
        ck_assert_int_eq(st[0], DPC_OK);
        ck_assert_int_eq(st[1], DPC_OK);
        for (int i = 0; i < 4; i++)
            ck_assert_int_eq(out[i], run * 100 + i + 1000 * (run + 1));
        dpc_sched_stats_t stt;
        dpc_sched_get_stats(s[1], &stt);
        ck_assert_uint_eq(stt.recvs, 1);
        ck_assert_uint_eq(stt.reduces, 1);
    }
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    /* scratch from a pool: not replayable */
    dpc_scratch_pool_t pool = {0};
    dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 0), .tag_base = 1ull << 40,
                              .mem = DPC_MEM_HOST, .pool = &pool};
    dpc_sched_t *q = NULL;
    for (int k = 0; k < 2; k++) {     /* the second schedule gets the grown pool */
        ck_assert_int_eq(dpc_sched_create(&prm, &q), DPC_OK);
        ck_assert_ptr_nonnull(dpc_sched_scratch(q, 1024));
        dpc_sched_nop(q, DPC_NO_DEPS);
        ck_assert_int_eq(dpc_sched_start(q), DPC_OK);
        ck_assert_int_eq(dpc_sched_test(q), DPC_OK);
        if (k == 1) {
            dpc_sched_params_t p2 = prm;
            p2.pool = NULL;
            ck_assert_int_eq(dpc_sched_replay(q, &p2), DPC_ERR_STATE);
            ck_assert_int_eq(dpc_sched_replay_tags(q, 2ull << 40, NULL), DPC_ERR_STATE);
        }
        dpc_sched_destroy(q);
    }
    dpc_scratch_pool_fini(&pool);
    dpc_sim_destroy(sim);
}
END_TEST

/* An exchange and a sum at 2 ranks (rank r sends x[r] and adds what comes
 * to y[r] into out[r], then copies that to out2[r]): a small blocking
 * allreduce's shape. */
static void build_exchange(dpc_sched_t **s, int32_t (*x)[4], int32_t (*y)[4], int32_t (*tmp)[4],
                           int32_t (*out)[4], int32_t (*out2)[4])
{
    for (int r = 0; r < 2; r++) {
        dpc_sched_send(s[r], 1 - r, 5 + r, x[r], sizeof(x[r]), DPC_NO_DEPS);
        dpc_step_id_t rv = dpc_sched_recv(s[r], 1 - r, 6 - r, tmp[r], sizeof(tmp[r]), DPC_NO_DEPS);
        dpc_step_id_t sum = dpc_sched_reduce(s[r], out[r], tmp[r], y[r], 4, DPC_INT32, DPC_OP_SUM,
                                             DPC_AFTER(rv));
        dpc_sched_copy(s[r], out2[r], out[r], sizeof(out[r]), DPC_AFTER(sum));
    }
}

/* A finished schedule run again within the call (dpc_sched_rerun): with
 * its peer's message there, it ends in the call, its sends taken by
 * send_now; with the message not there yet, it hands what is left to the
 * engine after max_idle passes, and the engine finishes it; either way the
 * results are right and it is replayable again. Refused, with nothing
 * done, while running, on a transport without send_now, with a one-sided
 * step, with a message send_now cannot take, or with a bad tag base; a
 * send that fails fails it, as a start would, and says which step. */
START_TEST(test_rerun)
{
    dpc_sim_opts_t o = {.eager_max = 64};
    dpc_sim_t *sim = dpc_sim_create(2, &o);
    dpc_sched_t *s[2] = {mk(sim, 0, 0), mk(sim, 1, 0)};
    static int32_t x[2][4], y[2][4], tmp[2][4], out[2][4], out2[2][4];
    build_exchange(s, x, y, tmp, out, out2);
    bool ran;
    for (int run = 0; run < 5; run++) {
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < 4; i++) {
                x[r][i] = run * 100 + r * 10 + i;
                y[r][i] = 1000 * (run + 1) + r;
                out[r][i] = out2[r][i] = -1;
            }
        dpc_status_t st[2] = {DPC_INPROGRESS, DPC_INPROGRESS};
        uint64_t tb = (uint64_t)(run + 1) << 40;
        if (run == 0) {     /* the first run builds; still running: no rerun */
            ck_assert_int_eq(dpc_sched_start(s[0]), DPC_OK);
            ck_assert_int_eq(dpc_sched_rerun(s[0], tb, NULL, 4, &ran), DPC_ERR_STATE);
            ck_assert(!ran);
            ck_assert_int_eq(dpc_sched_start(s[1]), DPC_OK);
            drive(sim, s, st, 2);
        } else {
            /* the first to come waits for the other's message: handed over;
             * the second finds it there (each rank first by turns) */
            int first = run % 2, second = 1 - first;
            ck_assert_int_eq(dpc_sched_rerun(s[first], tb | 1, NULL, 4, &ran), DPC_ERR_STATE);
            ck_assert(!ran);
            st[first] = dpc_sched_rerun(s[first], tb, NULL, 4, &ran);
            ck_assert(ran);
            ck_assert_int_eq(st[first], DPC_INPROGRESS);
            ck_assert(!dpc_sched_idle(s[first]));
            dpc_sim_deliver(sim);
            st[second] = dpc_sched_rerun(s[second], tb, NULL, 4, &ran);
            ck_assert(ran);
            ck_assert_int_eq(st[second], DPC_OK);      /* ended in the call */
            ck_assert(dpc_sched_idle(s[second]));
            drive(sim, s, st, 2);                      /* the other one, by the engine */
        }
        ck_assert_int_eq(st[0], DPC_OK);
        ck_assert_int_eq(st[1], DPC_OK);
        for (int r = 0; r < 2; r++)
            for (int i = 0; i < 4; i++) {
                ck_assert_int_eq(out[r][i], x[1 - r][i] + y[r][i]);
                ck_assert_int_eq(out2[r][i], out[r][i]);
            }
    }
    /* a failed send fails the rerun at that step; the schedule is left
     * failed with nothing in flight */
    dpc_sim_fail_send(sim, 0, (int)dpc_sim_msgs_sent(sim, 0) + 1);
    ck_assert_int_eq(dpc_sched_rerun(s[0], 9ull << 40, NULL, 4, &ran), DPC_ERR_TRANSPORT);
    ck_assert(ran);
    ck_assert(dpc_sched_idle(s[0]));
    char why[256];
    dpc_sched_describe(s[0], why, sizeof(why));
    ck_assert_msg(strstr(why, "in step 0 (send to rank 1)"), "%s", why);
    ck_assert_int_eq(dpc_sched_rerun(s[0], 10ull << 40, NULL, 4, &ran), DPC_ERR_STATE);
    ck_assert(!ran);
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
    /* without send_now, with a one-sided step, and with a send too large
     * for send_now (sim's eager_max 8 bytes): never, nothing done */
    for (int k = 0; k < 3; k++) {
        dpc_sim_opts_t o2 = {.eager_max = k == 1 ? 64 : k == 2 ? 8 : 0};
        sim = dpc_sim_create(2, &o2);
        dpc_sched_t *q[2] = {mk(sim, 0, 0), mk(sim, 1, 0)};
        if (k == 1) {
            static char region[64], desc[DPC_REGION_DESC_MAX];
            dpc_step_id_t e = dpc_sched_expose(q[0], region, sizeof(region), desc, DPC_NO_DEPS);
            dpc_sched_send(q[0], 1, 7, desc, sizeof(desc), DPC_AFTER(e));
            static char got[DPC_REGION_DESC_MAX];
            dpc_sched_recv(q[1], 0, 7, got, sizeof(got), DPC_NO_DEPS);
        } else {
            build_exchange(q, x, y, tmp, out, out2);
        }
        run_both_ok(sim, q);
        ck_assert_int_eq(dpc_sched_rerun(q[0], 2ull << 40, NULL, 4, &ran), DPC_ERR_STATE);
        ck_assert(!ran);
        ck_assert(dpc_sched_idle(q[0]));
        dpc_sched_destroy(q[0]);
        dpc_sched_destroy(q[1]);
        dpc_sim_destroy(sim);
    }
}
END_TEST

/* A replayed schedule moved onto other buffers (dpc_sched_rebase): its
 * send reads from the new input, its reduce writes the new output from the
 * new operand, scratch stays where it was, the old buffers are left alone;
 * refused unless the schedule is rearmed for a replay. */
START_TEST(test_rebase)
{
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_sched_t *s[2] = {mk(sim, 0, 0), mk(sim, 1, 0)};
    int32_t bufs[3][3][4];   /* per run: x (rank 0's input), y, out (rank 1's) */
    int32_t *tmp = dpc_sched_scratch(s[1], 4 * sizeof(int32_t));
    dpc_sched_send(s[0], 1, 5, bufs[0][0], 4 * sizeof(int32_t), DPC_NO_DEPS);
    dpc_step_id_t rv = dpc_sched_recv(s[1], 0, 5, tmp, 4 * sizeof(int32_t), DPC_NO_DEPS);
    dpc_sched_reduce(s[1], bufs[0][2], tmp, bufs[0][1], 4, DPC_INT32, DPC_OP_SUM, DPC_AFTER(rv));
    dpc_sched_move_t mv[2] = {{bufs[0][0], NULL, sizeof(bufs[0][0])}};
    ck_assert_int_eq(dpc_sched_rebase(s[0], mv, 1), DPC_ERR_STATE);   /* not rearmed */
    for (int run = 0; run < 3; run++) {
        for (int b = 0; b < 3; b++)
            for (int i = 0; i < 4; i++)
                bufs[run][b][i] = b == 2 ? -1 : (b + 1) * 100 * (run + 1) + i;
        if (run > 0) {
            replay_both(sim, s, run, false);
            /* (rank 1: output first, then the operand, as the shim lists them) */
            dpc_sched_move_t m0 = {bufs[run - 1][0], bufs[run][0], sizeof(bufs[0][0])};
            dpc_sched_move_t m1[2] = {{bufs[run - 1][2], bufs[run][2], sizeof(bufs[0][2])},
                                      {bufs[run - 1][1], bufs[run][1], sizeof(bufs[0][1])}};
            ck_assert_int_eq(dpc_sched_rebase(s[0], &m0, 1), DPC_OK);
            ck_assert_int_eq(dpc_sched_rebase(s[1], m1, 2), DPC_OK);
        }
        run_both_ok(sim, s);
        for (int i = 0; i < 4; i++) {
            ck_assert_int_eq(bufs[run][2][i], 100 * (run + 1) + i + 200 * (run + 1) + i);
            for (int r = 0; r < run; r++)   /* earlier outputs untouched */
                ck_assert_int_eq(bufs[r][2][i], 100 * (r + 1) + i + 200 * (r + 1) + i);
        }
    }
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
}
END_TEST

/* A region ends with its schedule: a read that comes later (an algorithm
 * whose owner did not wait for its peers) fails, and says from whom, and
 * so does a read out of the region's bounds. */
START_TEST(test_one_sided_after_owner_left)
{
    for (int late = 0; late < 2; late++) {
        dpc_sim_t *sim = dpc_sim_create(2, NULL);
        dpc_sched_t *s[2] = {mk(sim, 0, 0), mk(sim, 1, 0)};
        int32_t buf[4] = {1, 2, 3, 4}, got[4];
        char *theirs;
        dpc_step_id_t rv = share_region(s, buf, sizeof(buf), false, false, &theirs);
        /* late: in bounds, but after the owner is gone; else: one past the end */
        dpc_sched_get(s[1], 0, theirs, late ? 0 : sizeof(int32_t), got, sizeof(buf),
                      DPC_AFTER(rv));
        dpc_status_t st[2];
        ck_assert_int_eq(dpc_sched_start(s[0]), DPC_OK);
        ck_assert_int_eq(dpc_sched_start(s[1]), DPC_OK);
        drive(sim, s, st, 1);          /* the owner alone: it sends and is done */
        ck_assert_int_eq(st[0], DPC_OK);
        if (late)
            dpc_sched_destroy(s[0]);
        drive(sim, s + 1, st + 1, 1);
        ck_assert_int_eq(st[1], DPC_ERR_ARG);
        char why[256];
        dpc_sched_describe(s[1], why, sizeof(why));
        ck_assert_msg(strstr(why, "get from rank 0"), "%s", why);
        if (!late)
            dpc_sched_destroy(s[0]);
        dpc_sched_destroy(s[1]);
        dpc_sim_destroy(sim);
    }
}
END_TEST

START_TEST(test_local_chain)
{
    /* copy -> reduce -> copy, declared in an order the deps must fix */
    dpc_sim_t *sim = dpc_sim_create(1, NULL);
    dpc_sched_t *s = mk(sim, 0, 0);
    int32_t a[4] = {1, 2, 3, 4}, b[4] = {10, 20, 30, 40}, t[4] = {0}, out[4] = {0};
    dpc_step_id_t c1 = dpc_sched_copy(s, t, a, sizeof(a), DPC_NO_DEPS);
    dpc_step_id_t r = dpc_sched_reduce(s, t, t, b, 4, DPC_INT32, DPC_OP_SUM, DPC_AFTER(c1));
    dpc_sched_copy(s, out, t, sizeof(t), DPC_AFTER(r, DPC_STEP_NONE));
    ck_assert_int_eq(dpc_sched_nsteps(s), 3);
    ck_assert_int_eq(dpc_sched_start(s), DPC_OK);
    ck_assert_int_eq(dpc_sched_test(s), DPC_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(out[i], a[i] + b[i]);
    dpc_sched_stats_t stt;
    dpc_sched_get_stats(s, &stt);
    ck_assert_uint_eq(stt.copies, 2);
    ck_assert_uint_eq(stt.reduces, 1);
    ck_assert_uint_eq(stt.elems_reduced, 4);
    ck_assert_int_eq(dpc_sched_start(s), DPC_ERR_STATE);     /* no second start */
    dpc_sched_destroy(s);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_defer_local)
{
    /* defer_local: start() posts the transfers but no copy or reduction (a
     * nonblocking call must return at once); the first test() does them */
    dpc_sched_t *s[2];
    static int32_t big[1 << 16], dst[1 << 16], got[4];
    int32_t small[4] = {1, 2, 3, 4};
    dpc_sim_t *sim = two_ranks_first_defers(s, big, 1 << 16);
    dpc_sched_copy(s[0], dst, big, sizeof(big), DPC_NO_DEPS);
    dpc_sched_send(s[0], 1, 3, small, sizeof(small), DPC_NO_DEPS);
    dpc_sched_recv(s[1], 0, 3, got, sizeof(got), DPC_NO_DEPS);
    ck_assert_int_eq(dpc_sched_start(s[0]), DPC_OK);
    dpc_sched_stats_t stt;
    dpc_sched_get_stats(s[0], &stt);
    ck_assert_uint_eq(stt.copies, 0);      /* not done by start */
    ck_assert_uint_eq(stt.sends, 1);       /* but the send is out */
    ck_assert_int_eq(dst[12345], 0);
    start_second_and_drive(sim, s);
    dpc_sched_get_stats(s[0], &stt);
    ck_assert_uint_eq(stt.copies, 1);
    ck_assert_int_eq(dst[12345], 12345);
    ck_assert_int_eq(got[3], 4);
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_local_slices)
{
    /* local_slice_bytes: a 1 MiB copy and a 256 Ki-element reduction take
     * one slice per test() (so a caller holding a lock lets go soon), and
     * still give exact results; an overlapping copy goes in one piece */
    dpc_sim_t *sim = dpc_sim_create(1, NULL);
    dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 0), .tag_base = 1ull << 40,
                              .mem = DPC_MEM_HOST, .local_slice_bytes = 64 << 10};
    dpc_sched_t *s;
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    enum { N = 1 << 18 };
    int32_t *a = malloc(sizeof(int32_t) * N), *b = malloc(sizeof(int32_t) * N);
    int32_t *c = malloc(sizeof(int32_t) * N), *o = malloc(sizeof(int32_t) * (N + 8));
    for (int i = 0; i < N; i++)
        a[i] = i, b[i] = 3 * i, o[i] = i;
    dpc_step_id_t cp = dpc_sched_copy(s, c, a, sizeof(int32_t) * N, DPC_NO_DEPS);
    dpc_step_id_t rd = dpc_sched_reduce(s, c, c, b, N, DPC_INT32, DPC_OP_SUM, DPC_AFTER(cp));
    dpc_sched_copy(s, o + 8, o, sizeof(int32_t) * N, DPC_AFTER(rd));   /* overlapping */
    ck_assert_int_eq(dpc_sched_start(s), DPC_OK);
    int tests = 1;
    dpc_status_t st;
    while ((st = dpc_sched_test(s)) == DPC_INPROGRESS) {
        ck_assert(dpc_sched_has_local_work(s));
        tests++;
    }
    ck_assert_int_eq(st, DPC_OK);
    /* 1 MiB / 64 KiB = 16 slices, twice, plus the overlapping copy in one
     * go: 33; a test() runs at most one slice before and one after the
     * transport's progress, plus the first of the next step when one ends */
    ck_assert_int_ge(tests, 11);
    for (int i = 0; i < N; i++) {
        ck_assert_int_eq(c[i], 4 * i);
        ck_assert_int_eq(o[i + 8], i);
    }
    dpc_sched_stats_t stt;
    dpc_sched_get_stats(s, &stt);
    ck_assert_uint_eq(stt.copies, 2);
    ck_assert_uint_eq(stt.reduces, 1);
    ck_assert_uint_eq(stt.elems_reduced, N);
    free(a); free(b); free(c); free(o);
    dpc_sched_destroy(s);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_local_work_per_test)
{
    /* local_slice_bytes bounds the copies, reductions and reads of peers'
     * memory of one test() in all (two slices' worth), not each step's:
     * pieces of 16 KiB, none over a slice, ran on in one test for as long
     * as any were ready
     * (on one node, where a read ends within the call, a 16 MiB
     * MPI_Iallreduce's chain of reads, reductions and writes ran 170-340
     * us in a program's MPI_Test). Rank 1 copies 6 pieces, and once rank
     * 0's descriptor is in, reads a piece of its region and copies 3 more
     * pieces (queued behind the read) */
    enum { PIECE = 16 << 10, SHARE = 2 * PIECE, BEFORE = 6, AFTER = 3 };
    static unsigned char region[PIECE], src[BEFORE + AFTER][PIECE], dst[BEFORE + AFTER][PIECE],
        got[PIECE];
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_sched_t *s[2];
    for (int r = 0; r < 2; r++) {
        dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, r), .tag_base = 1ull << 40,
                                  .mem = DPC_MEM_HOST, .defer_local = true,
                                  .local_slice_bytes = r == 1 ? PIECE : 0};
        ck_assert_int_eq(dpc_sched_create(&prm, &s[r]), DPC_OK);
    }
    for (int i = 0; i < PIECE; i++)
        region[i] = (unsigned char)(i * 5 + 1);
    for (int k = 0; k < BEFORE + AFTER; k++)
        for (int i = 0; i < PIECE; i++)
            src[k][i] = (unsigned char)(i * 3 + k);
    char *theirs;
    dpc_step_id_t rv = share_region(s, region, sizeof(region), false, true, &theirs);
    for (int k = 0; k < BEFORE; k++)
        dpc_sched_copy(s[1], dst[k], src[k], PIECE, DPC_NO_DEPS);
    dpc_step_id_t g = dpc_sched_get(s[1], 0, theirs, 0, got, PIECE, DPC_AFTER(rv));
    for (int k = BEFORE; k < BEFORE + AFTER; k++)
        dpc_sched_copy(s[1], dst[k], src[k], PIECE, DPC_AFTER(rv));
    dpc_sched_send(s[1], 0, 2, NULL, 0, DPC_AFTER(g));
    ck_assert_int_eq(dpc_sched_start(s[0]), DPC_OK);
    ck_assert_int_eq(dpc_sched_start(s[1]), DPC_OK);
    dpc_status_t st[2] = {DPC_INPROGRESS, DPC_INPROGRESS};
    uint64_t before = 0, most = 0;
    int tests = 0;
    for (int round = 0; round < 1000 && (st[0] == DPC_INPROGRESS || st[1] == DPC_INPROGRESS);
         round++) {
        if (st[0] == DPC_INPROGRESS)
            st[0] = dpc_sched_test(s[0]);
        if (st[1] == DPC_INPROGRESS) {
            st[1] = dpc_sched_test(s[1]);
            tests++;
            dpc_sched_stats_t now;
            dpc_sched_get_stats(s[1], &now);
            uint64_t work = now.bytes_copied + now.bytes_got;
            ck_assert_msg(work - before <= SHARE, "test %d made %llu bytes of local work "
                          "(copies and reads), more than two slices (%d)", tests,
                          (unsigned long long)(work - before), SHARE);
            most = work - before > most ? work - before : most;
            before = work;
        }
        dpc_sim_deliver(sim);
    }
    ck_assert_int_eq(st[0], DPC_OK);
    ck_assert_int_eq(st[1], DPC_OK);
    ck_assert_uint_eq(most, SHARE);   /* (the budget is used, not just respected) */
    ck_assert_int_ge(tests, (BEFORE + AFTER + 1) * PIECE / SHARE);
    for (int k = 0; k < BEFORE + AFTER; k++)
        ck_assert_mem_eq(dst[k], src[k], PIECE);
    ck_assert_mem_eq(got, region, PIECE);
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_sliced_read_goes_on)
{
    /* A read made in slices is bounded by its slices, not by a test()'s
     * share of local work: the slice after one that ended goes out in the
     * test that learns of the end, spent share or not. Held until the
     * copies queued before it were made, a read took twice the turns (a
     * nonblocking 4 MiB bcast at 4 ranks, the non-roots' reads of the
     * root's buffer in 1 MiB slices, took 1.19x as long; docs/bench/s49).
     * Rank 1 reads 4 slices of rank 0's region, with 12 copies made ready
     * with it, each its own slice, two of them a test's share */
    enum { PIECE = 16 << 10, SLICES = 4, COPIES = 12 };
    static unsigned char region[SLICES * PIECE], got[SLICES * PIECE], src[COPIES][PIECE],
        dst[COPIES][PIECE];
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_sched_t *s[2];
    for (int r = 0; r < 2; r++) {
        dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, r), .tag_base = 1ull << 40,
                                  .mem = DPC_MEM_HOST, .defer_local = true,
                                  .local_slice_bytes = r == 1 ? PIECE : 0,
                                  .remote_slice_bytes = r == 1 ? PIECE : 0};
        ck_assert_int_eq(dpc_sched_create(&prm, &s[r]), DPC_OK);
    }
    for (int i = 0; i < SLICES * PIECE; i++)
        region[i] = (unsigned char)(i * 11 + 3);
    for (int k = 0; k < COPIES; k++)
        memset(src[k], k + 1, PIECE);
    char *theirs;
    dpc_step_id_t rv = share_region(s, region, sizeof(region), false, true, &theirs);
    dpc_step_id_t g = dpc_sched_get(s[1], 0, theirs, 0, got, sizeof(got), DPC_AFTER(rv));
    for (int k = 0; k < COPIES; k++)
        dpc_sched_copy(s[1], dst[k], src[k], PIECE, DPC_AFTER(rv));
    dpc_sched_send(s[1], 0, 2, NULL, 0, DPC_AFTER(g));
    ck_assert_int_eq(dpc_sched_start(s[0]), DPC_OK);
    ck_assert_int_eq(dpc_sched_start(s[1]), DPC_OK);
    dpc_status_t st[2] = {DPC_INPROGRESS, DPC_INPROGRESS};
    int first = -1, last = -1;
    for (int round = 0; round < 1000 && (st[0] == DPC_INPROGRESS || st[1] == DPC_INPROGRESS);
         round++) {
        for (int r = 0; r < 2; r++)
            if (st[r] == DPC_INPROGRESS)
                st[r] = dpc_sched_test(s[r]);
        uint64_t gets = dpc_sim_gets(sim, 1);
        if (gets >= 1 && first < 0)
            first = round;
        if (gets == SLICES && last < 0)
            last = round;
        dpc_sim_deliver(sim);
    }
    ck_assert_int_eq(st[0], DPC_OK);
    ck_assert_int_eq(st[1], DPC_OK);
    ck_assert_int_ge(first, 0);
    ck_assert_msg(last - first == SLICES - 1, "the read's %d slices went out in rounds %d to %d "
                  "(one a round: its slices waited behind the copies)", SLICES, first, last);
    ck_assert_mem_eq(got, region, sizeof(got));
    for (int k = 0; k < COPIES; k++)
        ck_assert_mem_eq(dst[k], src[k], PIECE);
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_send_recv_deps)
{
    /* rank 1 forwards what it receives only after receiving it */
    dpc_sim_t *sim = dpc_sim_create(3, NULL);
    dpc_sched_t *s[3] = {mk(sim, 0, 0), mk(sim, 1, 0), mk(sim, 2, 0)};
    double x[100], y[100], z[100];
    for (int i = 0; i < 100; i++)
        x[i] = i * 0.5, y[i] = z[i] = -1;
    dpc_sched_send(s[0], 1, 7, x, sizeof(x), DPC_NO_DEPS);
    dpc_step_id_t rv = dpc_sched_recv(s[1], 0, 7, y, sizeof(y), DPC_NO_DEPS);
    dpc_sched_send(s[1], 2, 8, y, sizeof(y), DPC_AFTER(rv));
    dpc_sched_recv(s[2], 1, 8, z, sizeof(z), DPC_NO_DEPS);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(dpc_sched_start(s[i]), DPC_OK);
    dpc_status_t st[3];
    drive(sim, s, st, 3);
    for (int i = 0; i < 3; i++)
        ck_assert_int_eq(st[i], DPC_OK);
    ck_assert_mem_eq(z, x, sizeof(x));
    ck_assert_uint_eq(dpc_sim_bytes_sent(sim, 1), sizeof(x));
    for (int i = 0; i < 3; i++)
        dpc_sched_destroy(s[i]);
    ck_assert_int_eq(dpc_sim_pending(sim), 0);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_build_errors)
{
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    char buf[8];
    /* a dependency on a later step would allow a cycle: refused */
    dpc_sched_t *s = mk(sim, 0, 0);
    ck_assert_int_eq(dpc_sched_copy(s, buf, buf, 8, DPC_AFTER(5)), DPC_STEP_NONE);
    ck_assert_int_eq(dpc_sched_start(s), DPC_ERR_ARG);
    dpc_sched_destroy(s);
    /* a peer outside the group */
    s = mk(sim, 0, 0);
    ck_assert_int_eq(dpc_sched_send(s, 2, 0, buf, 8, DPC_NO_DEPS), DPC_STEP_NONE);
    ck_assert_int_eq(dpc_sched_start(s), DPC_ERR_ARG);
    dpc_sched_destroy(s);
    /* an op MPI does not define on the type */
    s = mk(sim, 0, 0);
    ck_assert_int_eq(dpc_sched_reduce(s, buf, buf, buf, 1, DPC_FLOAT, DPC_OP_BXOR, DPC_NO_DEPS),
                     DPC_STEP_NONE);
    ck_assert_int_eq(dpc_sched_start(s), DPC_ERR_UNSUPPORTED);
    dpc_sched_destroy(s);
    /* tag_base overlapping the step-tag bits */
    dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 0), .tag_base = 5};
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_ERR_ARG);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_failure_cancels_rest)
{
    /* rank 0's 2nd send fails: rank 0 fails at once, cancels its pending
     * receive; rank 1 waits for the message that never comes and times out,
     * naming rank 0 */
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_sched_t *s[2] = {mk(sim, 0, 5000000000ull), mk(sim, 1, 5000000000ull)};
    int v[4] = {1, 2, 3, 4}, w[4], u[4];
    dpc_step_id_t s1 = dpc_sched_send(s[0], 1, 1, v, sizeof(v), DPC_NO_DEPS);
    dpc_sched_send(s[0], 1, 2, v, sizeof(v), DPC_AFTER(s1));
    dpc_sched_recv(s[0], 1, 3, u, sizeof(u), DPC_NO_DEPS);
    dpc_step_id_t r1 = dpc_sched_recv(s[1], 0, 1, w, sizeof(w), DPC_NO_DEPS);
    dpc_step_id_t r2 = dpc_sched_recv(s[1], 0, 2, w, sizeof(w), DPC_AFTER(r1));
    dpc_sched_send(s[1], 0, 3, w, sizeof(w), DPC_AFTER(r2));
    dpc_sim_fail_send(sim, 0, 2);
    ck_assert_int_eq(dpc_sched_start(s[0]), DPC_OK);
    ck_assert_int_eq(dpc_sched_start(s[1]), DPC_OK);
    dpc_status_t st[2];
    drive(sim, s, st, 2);
    ck_assert_int_eq(st[0], DPC_ERR_TRANSPORT);
    ck_assert_int_eq(st[1], DPC_ERR_TIMEOUT);
    char msg[256];
    dpc_sched_describe(s[0], msg, sizeof(msg));
    ck_assert_msg(strstr(msg, "send to rank 1") != NULL, "%s", msg);
    dpc_sched_describe(s[1], msg, sizeof(msg));
    ck_assert_msg(strstr(msg, "waiting for rank 0") != NULL, "%s", msg);
    int peers[4];
    ck_assert_int_eq(dpc_sched_waiting_peers(s[1], peers, 4), 1);
    ck_assert_int_eq(peers[0], 0);
    /* later test calls keep returning the first error */
    ck_assert_int_eq(dpc_sched_test(s[0]), DPC_ERR_TRANSPORT);
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    ck_assert_int_eq(dpc_sim_pending(sim), 0);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_destroy_while_running)
{
    /* a schedule destroyed mid-flight cancels its transfers; the transport
     * holds nothing of it afterwards */
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_sched_t *s = mk(sim, 0, 0);
    char b[64];
    dpc_sched_recv(s, 1, 0, b, sizeof(b), DPC_NO_DEPS);
    dpc_sched_send(s, 1, 1, b, sizeof(b), DPC_NO_DEPS);
    ck_assert_int_eq(dpc_sched_start(s), DPC_OK);
    ck_assert_int_eq(dpc_sched_test(s), DPC_INPROGRESS);
    ck_assert_int_eq(dpc_sim_pending(sim), 2);
    dpc_sched_destroy(s);
    ck_assert_int_eq(dpc_sim_pending(sim), 0);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_truncation)
{
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_sched_t *s[2] = {mk(sim, 0, 0), mk(sim, 1, 0)};
    char big[32] = {0}, small[16];
    dpc_sched_send(s[0], 1, 0, big, sizeof(big), DPC_NO_DEPS);
    dpc_sched_recv(s[1], 0, 0, small, sizeof(small), DPC_NO_DEPS);
    dpc_sched_start(s[0]);
    dpc_sched_start(s[1]);
    dpc_status_t st[2];
    drive(sim, s, st, 2);
    ck_assert_int_eq(st[0], DPC_ERR_TRUNCATE);
    ck_assert_int_eq(st[1], DPC_ERR_TRUNCATE);
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
}
END_TEST

static int device_reduces;
static dpc_status_t pseudo_device_reduce(void *dst, const void *a, const void *b, size_t n,
                                         dpc_dtype_t dt, dpc_op_t op, dpc_memtype_t mem, void *ctx)
{
    (void)dst; (void)a; (void)b; (void)n; (void)dt; (void)op; (void)ctx;
    ck_assert_int_eq(mem, DPC_MEM_PSEUDO_DEVICE);
    device_reduces++;
    return DPC_OK;
}

START_TEST(test_device_memory_not_touched_by_host)
{
    dpc_sim_t *sim = dpc_sim_create(1, NULL);
    char x[8], y[8];
    /* without a device reducer: refused, not done on the host */
    dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 0), .mem = DPC_MEM_PSEUDO_DEVICE};
    dpc_sched_t *s;
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    dpc_sched_reduce(s, x, x, y, 2, DPC_INT32, DPC_OP_SUM, DPC_NO_DEPS);
    ck_assert_int_eq(dpc_sched_start(s), DPC_ERR_UNSUPPORTED);
    dpc_sched_destroy(s);
    /* with one: it gets the work */
    prm.device_reduce = pseudo_device_reduce;
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    dpc_sched_reduce(s, x, x, y, 2, DPC_INT32, DPC_OP_SUM, DPC_NO_DEPS);
    ck_assert_int_eq(dpc_sched_start(s), DPC_OK);
    ck_assert_int_eq(device_reduces, 1);
    dpc_sched_destroy(s);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_many_steps_scratch)
{
    /* 10000 chained steps and many scratch buffers: all freed (valgrind) */
    dpc_sim_t *sim = dpc_sim_create(1, NULL);
    dpc_sched_t *s = mk(sim, 0, 0);
    int64_t acc = 0, one = 1;
    dpc_step_id_t prev = DPC_STEP_NONE;
    for (int i = 0; i < 10000; i++) {
        if (i % 100 == 0)
            ck_assert_ptr_nonnull(dpc_sched_scratch(s, 4096));
        prev = dpc_sched_reduce(s, &acc, &acc, &one, 1, DPC_INT64, DPC_OP_SUM, DPC_AFTER(prev));
    }
    ck_assert_int_eq(dpc_sched_start(s), DPC_OK);
    ck_assert_int_eq(dpc_sched_test(s), DPC_OK);
    ck_assert_int_eq(acc, 10000);
    dpc_sched_destroy(s);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_reinit)
{
    /* a finished schedule runs a second collective; a running one refuses */
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_sched_t *s[2] = {mk(sim, 0, 0), mk(sim, 1, 0)};
    int v[3] = {1, 2, 3}, w[3] = {0};
    for (int round = 0; round < 2; round++) {
        if (round) {
            dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 0), .tag_base = 2ull << 40};
            ck_assert_int_eq(dpc_sched_reinit(s[0], &prm), DPC_OK);
            prm.tp = dpc_sim_transport(sim, 1);
            ck_assert_int_eq(dpc_sched_reinit(s[1], &prm), DPC_OK);
            ck_assert_int_eq(dpc_sched_nsteps(s[0]), 0);
            v[0] = 7;
        }
        dpc_sched_send(s[0], 1, 0, v, sizeof(v), DPC_NO_DEPS);
        dpc_sched_recv(s[1], 0, 0, w, sizeof(w), DPC_NO_DEPS);
        dpc_sched_start(s[0]);
        dpc_sched_start(s[1]);
        dpc_status_t st[2];
        drive(sim, s, st, 2);
        ck_assert_int_eq(st[0], DPC_OK);
        ck_assert_int_eq(st[1], DPC_OK);
        ck_assert_mem_eq(w, v, sizeof(v));
    }
    /* a running schedule cannot be reused */
    dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 1)};
    ck_assert_int_eq(dpc_sched_reinit(s[1], &prm), DPC_OK);
    dpc_sched_recv(s[1], 0, 5, w, sizeof(w), DPC_NO_DEPS);
    dpc_sched_start(s[1]);
    ck_assert_int_eq(dpc_sched_reinit(s[1], &prm), DPC_ERR_STATE);
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    ck_assert_int_eq(dpc_sim_pending(sim), 0);
    dpc_sim_destroy(sim);
}
END_TEST

static bool in_pool(const dpc_scratch_pool_t *pool, const char *p, size_t n)
{
    for (int k = 0; k < pool->nchunks; k++)
        if (p >= pool->chunk[k] && p + n <= pool->chunk[k] + pool->cap[k])
            return true;
    return false;
}

START_TEST(test_scratch_pool)
{
    /* the first schedule sizes the pool; the next one gets all its scratch
     * from it; a schedule built while the pool is held uses malloc */
    dpc_sim_t *sim = dpc_sim_create(1, NULL);
    dpc_scratch_pool_t pool = {0};
    dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 0), .pool = &pool};
    dpc_sched_t *s, *t;
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    char *a0 = dpc_sched_scratch(s, 1000), *b0 = dpc_sched_scratch(s, 5000);
    ck_assert_ptr_nonnull(a0);
    ck_assert_ptr_nonnull(b0);
    memset(a0, 1, 1000);
    memset(b0, 2, 5000);
    dpc_sched_destroy(s);
    ck_assert_uint_ge(pool.held, 6000);
    ck_assert_int_eq(pool.busy, 0);
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    ck_assert_int_eq(dpc_sched_create(&prm, &t), DPC_OK);
    char *a = dpc_sched_scratch(s, 1000), *b = dpc_sched_scratch(s, 5000);
    char *c = dpc_sched_scratch(t, 100);
    ck_assert(in_pool(&pool, a, 1000) && in_pool(&pool, b, 5000));
    ck_assert(b >= a + 1000 || a >= b + 5000);
    ck_assert(!in_pool(&pool, c, 100));
    /* the same call again runs on the very memory the first one wrote (not
     * on fresh pages, whose first writes cost the VM milliseconds) */
    ck_assert_ptr_eq(a, a0);
    ck_assert_ptr_eq(b, b0);
    ck_assert_uint_eq((uintptr_t)a % 64, 0);
    ck_assert_uint_eq((uintptr_t)b % 64, 0);
    memset(a, 1, 1000);
    memset(b, 2, 5000);
    dpc_sched_destroy(t);
    dpc_sched_destroy(s);
    /* a larger call: its own pieces join the pool, and the next such call
     * takes the first ones' chunks and its own */
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    char *p0[3];
    for (int i = 0; i < 3; i++) {
        p0[i] = dpc_sched_scratch(s, 3000 + 1000 * (size_t)i);
        memset(p0[i], i, 3000 + 1000 * (size_t)i);
    }
    dpc_sched_destroy(s);
    ck_assert_int_eq(pool.nchunks, 4);   /* (1000 and 5000, then 3000 and 5000 kept) */
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    for (int i = 0; i < 3; i++) {
        char *q = dpc_sched_scratch(s, 3000 + 1000 * (size_t)i);
        ck_assert(in_pool(&pool, q, 3000 + 1000 * (size_t)i));
        memset(q, i, 3000 + 1000 * (size_t)i);
    }
    dpc_sched_destroy(s);
    ck_assert_int_eq(pool.nchunks, 4);
    /* more pieces than the pool keeps: one block of the largest total */
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    for (int i = 0; i < 12; i++)
        memset(dpc_sched_scratch(s, 6000), 3, 6000);
    dpc_sched_destroy(s);
    ck_assert_int_eq(pool.nchunks, 1);
    ck_assert_uint_eq(pool.held, 12 * 6016);
    ck_assert_uint_eq(pool.want, 12 * 6016);
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    for (int i = 0; i < 12; i++)
        ck_assert(in_pool(&pool, dpc_sched_scratch(s, 6000), 6000));
    dpc_sched_destroy(s);
    /* whatever the calls: at most DPC_SCRATCH_CHUNKS chunks, never more
     * than twice the largest total held, and every piece usable */
    unsigned x = 12345;
    for (int call = 0; call < 200; call++) {
        ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
        int n = 1 + (int)((x = x * 1103515245u + 12345u) >> 16) % 10;
        for (int i = 0; i < n; i++) {
            size_t len = 1 + ((x = x * 1103515245u + 12345u) >> 12) % 200000;
            memset(dpc_sched_scratch(s, len), 4, len);
        }
        dpc_sched_destroy(s);
        ck_assert_int_le(pool.nchunks, DPC_SCRATCH_CHUNKS);
        ck_assert_uint_le(pool.held, 2 * pool.want);
    }
    dpc_scratch_pool_fini(&pool);
    dpc_sim_destroy(sim);
}
END_TEST

/* A transport that records the order of the calls made on it and forwards
 * them to the simulator's. */
typedef struct {
    dpc_transport_t base;
    dpc_transport_t *inner;
    char log[16];
    int n;
    const int32_t *watch;   /* a local copy's destination: written yet? */
} rec_tp_t;
static dpc_transport_ops_t rec_ops;

static void rec_note(rec_tp_t *r, char what)
{
    if (r->n < (int)sizeof(r->log) - 2) {
        r->log[r->n++] = what;
        /* 'c': the copy had already run when this transfer was issued */
        if (r->watch && *r->watch)
            r->log[r->n++] = 'c';
        r->log[r->n] = 0;
    }
}
static dpc_status_t rec_isend(dpc_transport_t *tp, int peer, uint64_t tag, const void *buf,
                              size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb, void *arg,
                              dpc_xfer_t **xfer_p)
{
    rec_tp_t *r = (rec_tp_t *)tp;
    rec_note(r, 's');
    return r->inner->ops->isend(r->inner, peer, tag, buf, len, mem, cb, arg, xfer_p);
}
static dpc_status_t rec_irecv(dpc_transport_t *tp, int peer, uint64_t tag, void *buf,
                              size_t len, dpc_memtype_t mem, dpc_xfer_cb_t cb, void *arg,
                              dpc_xfer_t **xfer_p)
{
    rec_tp_t *r = (rec_tp_t *)tp;
    rec_note(r, 'r');
    return r->inner->ops->irecv(r->inner, peer, tag, buf, len, mem, cb, arg, xfer_p);
}
static int rec_progress(dpc_transport_t *tp)
{
    rec_tp_t *r = (rec_tp_t *)tp;
    return r->inner->ops->progress(r->inner);
}
static void rec_cancel(dpc_transport_t *tp, dpc_xfer_t *x)
{
    rec_tp_t *r = (rec_tp_t *)tp;
    r->inner->ops->cancel(r->inner, x);
}
static uint64_t rec_now(dpc_transport_t *tp)
{
    rec_tp_t *r = (rec_tp_t *)tp;
    return r->inner->ops->now_ns(r->inner);
}

/* At start, sends go out before receives are posted and before local
 * copies run, whatever the order the steps were declared in: a receive may
 * find its message already in a mailbox and copy it out on the spot, and
 * the peers waiting for our data would wait for that copy (and for ours).
 * Blocking and deferred starts alike; and transfers made ready later go
 * before the local steps made ready with them. */
START_TEST(test_sends_first)
{
    rec_ops = (dpc_transport_ops_t){.isend = rec_isend, .irecv = rec_irecv,
                                    .progress = rec_progress, .cancel = rec_cancel,
                                    .now_ns = rec_now};
    for (int defer = 0; defer <= 1; defer++) {
        dpc_sim_t *sim = dpc_sim_create(2, NULL);
        int32_t src[4] = {1, 2, 3, 4}, dst[4] = {0}, in0[4] = {0}, in1[4] = {0};
        rec_tp_t rt = {.base = {.ops = &rec_ops, .rank = 0, .size = 2},
                       .inner = dpc_sim_transport(sim, 0), .watch = &dst[0]};
        dpc_sched_params_t prm = {.tp = &rt.base, .tag_base = 1ull << 40,
                                  .mem = DPC_MEM_HOST, .defer_local = defer};
        dpc_sched_t *s[2] = {NULL, mk(sim, 1, 0)};
        ck_assert_int_eq(dpc_sched_create(&prm, &s[0]), DPC_OK);
        /* declared: copy, receive, send */
        dpc_sched_copy(s[0], dst, src, sizeof(src), DPC_NO_DEPS);
        dpc_sched_recv(s[0], 1, 7, in0, sizeof(in0), DPC_NO_DEPS);
        dpc_sched_send(s[0], 1, 8, src, sizeof(src), DPC_NO_DEPS);
        dpc_sched_send(s[1], 0, 7, src, sizeof(src), DPC_NO_DEPS);
        dpc_sched_recv(s[1], 0, 8, in1, sizeof(in1), DPC_NO_DEPS);
        run_both_ok(sim, s);
        ck_assert_msg(strcmp(rt.log, "sr") == 0, "defer %d: issued in the order \"%s\"", defer,
                      rt.log);
        ck_assert_int_eq(dst[3], 4);
        ck_assert_int_eq(in0[3], 4);
        ck_assert_int_eq(in1[3], 4);
        dpc_sched_destroy(s[0]);
        dpc_sched_destroy(s[1]);
        dpc_sim_destroy(sim);
    }
    /* and later too: a receive's successors, a copy declared before a
     * send, go send first */
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    int32_t src[4] = {1, 2, 3, 4}, dst[4] = {0}, in0[4] = {0}, in1[4] = {0};
    rec_tp_t rt = {.base = {.ops = &rec_ops, .rank = 0, .size = 2},
                   .inner = dpc_sim_transport(sim, 0), .watch = &dst[0]};
    dpc_sched_params_t prm = {.tp = &rt.base, .tag_base = 1ull << 40, .mem = DPC_MEM_HOST};
    dpc_sched_t *s[2] = {NULL, mk(sim, 1, 0)};
    ck_assert_int_eq(dpc_sched_create(&prm, &s[0]), DPC_OK);
    dpc_step_id_t r = dpc_sched_recv(s[0], 1, 7, in0, sizeof(in0), DPC_NO_DEPS);
    dpc_sched_copy(s[0], dst, src, sizeof(src), DPC_AFTER(r));
    dpc_sched_send(s[0], 1, 8, src, sizeof(src), DPC_AFTER(r));
    dpc_sched_send(s[1], 0, 7, src, sizeof(src), DPC_NO_DEPS);
    dpc_sched_recv(s[1], 0, 8, in1, sizeof(in1), DPC_NO_DEPS);
    run_both_ok(sim, s);
    ck_assert_msg(strcmp(rt.log, "rs") == 0, "issued in the order \"%s\"", rt.log);
    ck_assert_int_eq(dst[3], 4);
    ck_assert_int_eq(in1[3], 4);
    dpc_sched_destroy(s[0]);
    dpc_sched_destroy(s[1]);
    dpc_sim_destroy(sim);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("sched");
    TCase *tc = tcase_create("engine");
    tcase_add_test(tc, test_local_chain);
    tcase_add_test(tc, test_one_sided);
    tcase_add_test(tc, test_one_sided_after_owner_left);
    tcase_add_test(tc, test_defer_local_expose);
    tcase_add_test(tc, test_replay);
    tcase_add_test(tc, test_rerun);
    tcase_add_test(tc, test_rebase);
    tcase_add_test(tc, test_send_recv_deps);
    tcase_add_test(tc, test_defer_local);
    tcase_add_test(tc, test_defer_local_joins);
    tcase_add_test(tc, test_defer_local_one_sided);
    tcase_add_test(tc, test_one_sided_slices);
    tcase_add_test(tc, test_local_slices);
    tcase_add_test(tc, test_local_work_per_test);
    tcase_add_test(tc, test_sliced_read_goes_on);
    tcase_add_test(tc, test_build_errors);
    tcase_add_test(tc, test_failure_cancels_rest);
    tcase_add_test(tc, test_destroy_while_running);
    tcase_add_test(tc, test_truncation);
    tcase_add_test(tc, test_device_memory_not_touched_by_host);
    tcase_add_test(tc, test_many_steps_scratch);
    tcase_add_test(tc, test_scratch_pool);
    tcase_add_test(tc, test_reinit);
    tcase_add_test(tc, test_sends_first);
    tcase_add_test(tc, test_streaming_copy);
    suite_add_tcase(su, tc);
    return check_run(su);
}
