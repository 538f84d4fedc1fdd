/*
 * MPI integration beyond results: bad input (an MPI error class through the
 * communicator's error handler, a message naming the call and argument, the
 * communicator still usable), timeouts that name the ranks waited for,
 * communicator dup/free cycles that leave memory flat, MPI_THREAD_MULTIPLE,
 * DPCOLL_DISABLE, large-count calls beyond int, dpcoll_predict against the
 * algorithms calls run, MPI_Comm_idup's duplicates used in crossed orders,
 * the MPI library's own operations in flight across ours. The mode is
 * argv[1]; tests/mpi/run.sh runs each.
 */
#include "config.h"
#include "../smaps.h"
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "dpcoll.h"
#include "mpi_util.h"

static void expect_class(int rc, int cls, const char *what, const char *needle)
{
    int got = MPI_SUCCESS;
    char str[MPI_MAX_ERROR_STRING] = "";
    int len;
    t_cases++;
    if (rc != MPI_SUCCESS) {
        MPI_Error_class(rc, &got);
        snprintf(str, sizeof(str), "%s", dpcoll_error_message());
    }
    (void)len;
    if (got != cls)
        t_fail("%s: error class %d, expected %d (%s)", what, got, cls, str);
    else if (needle && !strstr(str, needle))
        t_fail("%s: message \"%s\" does not name \"%s\"", what, str, needle);
}

static int allreduce_works(MPI_Comm comm)
{
    int in = t_rank + 1, out = 0, p;
    MPI_Comm_size(comm, &p);
    int rc = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, comm);
    return rc == MPI_SUCCESS && out == p * (p + 1) / 2;
}

START_TEST(test_bad_input)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int a[8] = {0}, b[8] = {0}, counts[64], displs[64];
    for (int i = 0; i < 64; i++)
        counts[i] = 1, displs[i] = i;
    expect_class(MPI_Allreduce(a, b, -1, MPI_INT, MPI_SUM, c), MPI_ERR_COUNT, "allreduce count -1", "count");
    expect_class(MPI_Allreduce(a, b, 2, MPI_DATATYPE_NULL, MPI_SUM, c), MPI_ERR_TYPE, "null type", "datatype");
    expect_class(MPI_Allreduce(a, b, 2, MPI_INT, MPI_OP_NULL, c), MPI_ERR_OP, "null op", "op");
    expect_class(MPI_Allreduce(a, b, 2, MPI_FLOAT, MPI_BXOR, c), MPI_ERR_OP, "bxor on float", "bxor");
    expect_class(MPI_Allreduce(a, NULL, 2, MPI_INT, MPI_SUM, c), MPI_ERR_BUFFER, "null recvbuf", "recvbuf");
    expect_class(MPI_Allreduce(a, a, 2, MPI_INT, MPI_SUM, c), MPI_ERR_BUFFER, "aliased buffers", "MPI_IN_PLACE");
    expect_class(MPI_Bcast(a, 2, MPI_INT, t_size, c), MPI_ERR_ROOT, "bcast root = size", "root");
    expect_class(MPI_Bcast(a, 2, MPI_INT, -1, c), MPI_ERR_ROOT, "bcast root -1", "root");
    expect_class(MPI_Bcast(a, -5, MPI_INT, 0, c), MPI_ERR_COUNT, "bcast count -5", "count");
    expect_class(MPI_Allgather(a, -1, MPI_INT, b, 1, MPI_INT, c), MPI_ERR_COUNT, "allgather sendcount", "sendcount");
    expect_class(MPI_Allgather(a, 2, MPI_INT, b, 1, MPI_INT, c), MPI_ERR_TRUNCATE, "allgather sizes differ", "bytes");
    counts[t_rank] = -2;
    expect_class(MPI_Allgatherv(a, 1, MPI_INT, b, counts, displs, MPI_INT, c), MPI_ERR_COUNT,
                 "allgatherv recvcounts", "recvcounts");
    expect_class(MPI_Reduce_scatter(a, b, counts, MPI_INT, MPI_SUM, c), MPI_ERR_COUNT,
                 "reduce_scatter recvcounts", "recvcounts");
    counts[t_rank] = 1;
    expect_class(MPI_Alltoallv(a, counts, NULL, MPI_INT, b, counts, displs, MPI_INT, c), MPI_ERR_ARG,
                 "alltoallv sdispls NULL", "sdispls");
    expect_class(MPI_Alltoall(a, 1, MPI_INT, b, -3, MPI_INT, c), MPI_ERR_COUNT, "alltoall recvcount", "recvcount");
    expect_class(MPI_Reduce_scatter_block(a, b, -1, MPI_INT, MPI_SUM, c), MPI_ERR_COUNT,
                 "reduce_scatter_block recvcount", "recvcount");
    expect_class(MPI_Allreduce(a, b, 1, MPI_INT, MPI_SUM, MPI_COMM_NULL), MPI_ERR_COMM, "null comm", "comm");
    /* (read as the block form, this was a zero-count call that returned
     * MPI_SUCCESS) */
    expect_class(MPI_Reduce_scatter(a, b, NULL, MPI_INT, MPI_SUM, c), MPI_ERR_COUNT,
                 "reduce_scatter recvcounts NULL", "recvcounts");
    /* the large-count forms check the same way */
    MPI_Count lcounts[64];
    MPI_Aint ldispls[64];
    for (int i = 0; i < 64; i++)
        lcounts[i] = 1, ldispls[i] = i;
    expect_class(MPI_Allreduce_c(a, b, -1, MPI_INT, MPI_SUM, c), MPI_ERR_COUNT, "allreduce_c count -1", "count");
    expect_class(MPI_Allgatherv_c(a, 1, MPI_INT, b, NULL, ldispls, MPI_INT, c), MPI_ERR_COUNT,
                 "allgatherv_c recvcounts NULL", "recvcounts");
    expect_class(MPI_Reduce_scatter_c(a, b, NULL, MPI_INT, MPI_SUM, c), MPI_ERR_COUNT,
                 "reduce_scatter_c recvcounts NULL", "recvcounts");
    expect_class(MPI_Alltoallv_c(a, lcounts, NULL, MPI_INT, b, lcounts, ldispls, MPI_INT, c),
                 MPI_ERR_ARG, "alltoallv_c sdispls NULL", "sdispls");
    expect_class(MPI_Bcast_c(a, 2, MPI_INT, t_size, c), MPI_ERR_ROOT, "bcast_c root = size", "root");
    /* nothing was sent: the communicator works as before */
    t_cases++;
    if (!allreduce_works(c))
        t_fail("the communicator is not usable after the errors");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_free(&c);
    t_agree("bad input");
}
END_TEST

/* Default handler: the run aborts, and says what was wrong (run.sh checks
 * the message and the non-zero exit). */
START_TEST(test_fatal)
{
    int a = 0, b = 0;
    MPI_Allreduce(&a, &b, -7, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    ck_abort_msg("MPI_Allreduce with count -7 returned under MPI_ERRORS_ARE_FATAL");
}
END_TEST

/* Run with DPCOLL_TIMEOUT=2: rank 0 skips a collective; the others time out
 * with an error that names the collective and rank 0. */
START_TEST(test_timeout)
{
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_name(c, "skipped");
    int in = 1, out = 0;
    t_cases++;
    if (!allreduce_works(c))     /* a first one that everybody calls */
        t_fail("first allreduce on the communicator failed");
    if (t_rank != 0) {
        int rc = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, c);
        expect_class(rc, MPI_ERR_OTHER, "allreduce with rank 0 absent", "waiting for rank");
        const char *str = dpcoll_error_message();
        if (!strstr(str, "MPI_Allreduce") || !strstr(str, "skipped"))
            t_fail("timeout message does not name the call and communicator: %s", str);
        if (t_rank == 1 && !strstr(str, " 0"))
            t_fail("rank 1's timeout message does not name rank 0: %s", str);
    }
    t_agree("timeout");
    /* the communicator's sequence is off now: it is not used again */
    /* A persistent one, rank 0 absent again, completed by MPI_Waitany and
     * by MPI_Waitsome among a null request: the error is in what they
     * return (MPI_ERR_IN_STATUS and the status, for -some), at index 1. */
    for (int f = 0; f < 2; f++) {
        MPI_Comm d;
        MPI_Comm_dup(MPI_COMM_WORLD, &d);
        MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
        t_cases++;
        if (!allreduce_works(d))
            t_fail("first allreduce on the persistent one's communicator failed");
        if (t_rank != 0) {
            MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
            MPI_Status st[2];
            int idx = -1, outc = 0, ids[2] = {-1, -1}, rc;
            MPI_Allreduce_init(&in, &out, 1, MPI_INT, MPI_SUM, d, MPI_INFO_NULL, &r[1]);
            MPI_Start(&r[1]);
            if (f == 0) {
                rc = MPI_Waitany(2, r, &idx, &st[0]);
                expect_class(rc, MPI_ERR_OTHER, "MPI_Waitany on a persistent allreduce with rank 0 absent",
                             "waiting for rank");
            } else {
                rc = MPI_Waitsome(2, r, &outc, ids, st);
                idx = outc == 1 ? ids[0] : -1;
                t_cases++;
                if (rc != MPI_ERR_IN_STATUS)
                    t_fail("MPI_Waitsome on a persistent allreduce with rank 0 absent returned %d, "
                           "expected MPI_ERR_IN_STATUS", rc);
                expect_class(st[0].MPI_ERROR, MPI_ERR_OTHER, "its status", "waiting for rank");
            }
            t_cases++;
            if (idx != 1)
                t_fail("%s with rank 0 absent: index %d, expected 1", f ? "MPI_Waitsome" : "MPI_Waitany", idx);
            MPI_Request_free(&r[1]);
        }
        MPI_Comm_free(&d);
    }
    t_agree("persistent timeouts reported by MPI_Waitany and MPI_Waitsome");
}
END_TEST

/* A context agreement that times out (rank 1 comes to the new
 * communicator's first call after rank 0's DPCOLL_TIMEOUT) leaves its
 * MPI_Iallreduce in flight; when rank 1 does come, the MPI library
 * completes it inside rank 0's later calls and writes its result. Those
 * buffers must still be the request's: once they were agree_ctx's stack,
 * and the late result landed in whatever frame was there by then (here a
 * canary filled at the same depth). Run with DPCOLL_TIMEOUT=1. */
#define CANARY_BYTES 65536
static int barrier_under_canary(void)
{
    volatile unsigned char canary[CANARY_BYTES];
    for (int i = 0; i < CANARY_BYTES; i++)
        canary[i] = 0xA5;
    MPI_Barrier(MPI_COMM_WORLD);   /* the late member's agreement completes here */
    int changed = 0;
    for (int i = 0; i < CANARY_BYTES; i++)
        changed += canary[i] != 0xA5;
    return changed;
}

/* MPI_Comm_idup's duplicate, its duplication complete. */
static void idup_dup(MPI_Comm parent, MPI_Comm *c)
{
    MPI_Request r;
    MPI_Comm_idup(parent, c, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
}

/* Duplicates never used: while they live, their context agreements hold
 * every window of ids (128 of them: dpcoll.7), and a duplicate made then
 * is set up at its first collective. */
#define HOLDERS 160
static MPI_Comm holders[HOLDERS];
static bool holding;

static void holders_free(void)
{
    if (holding)
        for (int i = 0; i < HOLDERS; i++)
            MPI_Comm_free(&holders[i]);
    holding = false;
}

/* A communicator that gets its libdpcoll state at its first collective
 * (the blocking constructors set it up as they make it, and MPI_Comm_idup
 * posts its agreement with the duplication while there are windows:
 * comm_create.c, ctx.c). */
static void lazy_dup(MPI_Comm parent, MPI_Comm *c)
{
    if (!holding)
        for (int i = 0; i < HOLDERS; i++)
            idup_dup(MPI_COMM_WORLD, &holders[i]);
    holding = true;
    idup_dup(parent, c);
}

/* Two duplicates from MPI_Comm_idup (from_group: two communicators from
 * MPI_Comm_create_from_group), first used by nonblocking calls that the
 * even ranks post in one order and the odd ranks in the other (MPI allows
 * any order across communicators). When their context ids were agreed at
 * their first collectives, each rank's first call waited there for the
 * other ranks' first call on the same communicator, and all of them timed
 * out (DPCOLL_TIMEOUT); the agreement now goes with the duplication, or
 * with the making. Returns the number of wrong results. */
static int cross_orders(bool from_group)
{
    MPI_Comm d[2];
    MPI_Request r[2], q[2];
    MPI_Status st[2];
    if (from_group) {   /* (MPI-4's, blocking: set up as it is made) */
        MPI_Group g;
        MPI_Comm_group(MPI_COMM_WORLD, &g);
        MPI_Comm_create_from_group(g, "org.dpcoll.test.a", MPI_INFO_NULL, MPI_ERRORS_RETURN, &d[0]);
        MPI_Comm_create_from_group(g, "org.dpcoll.test.b", MPI_INFO_NULL, MPI_ERRORS_RETURN, &d[1]);
        MPI_Group_free(&g);
    } else {
        MPI_Comm_idup(MPI_COMM_WORLD, &d[0], &r[0]);
        MPI_Comm_idup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &d[1], &r[1]);
        MPI_Waitall(2, r, st);
    }
    long in[2] = {t_rank + 1, 1000L * (t_rank + 1)}, out[2] = {0, 0};
    long want = (long)t_size * (t_size + 1) / 2;
    int bad = 0;
    for (int k = 0; k < 2; k++) {
        int i = (t_rank % 2) ^ k;
        MPI_Comm_set_errhandler(d[i], MPI_ERRORS_RETURN);
        int rc = MPI_Iallreduce(&in[i], &out[i], 1, MPI_LONG, MPI_SUM, d[i], &q[i]);
        if (rc != MPI_SUCCESS) {
            t_fail("MPI_Iallreduce on %s %d, posted %s: %s", from_group ? "new communicator" :
                   "duplicate", i, k ? "second" : "first", dpcoll_error_message());
            q[i] = MPI_REQUEST_NULL;
            bad++;
        }
    }
    if (MPI_Waitall(2, q, st) != MPI_SUCCESS) {
        t_fail("MPI_Waitall on the two new communicators failed: %s", dpcoll_error_message());
        bad++;
    }
    for (int i = 0; i < 2; i++) {
        t_cases++;
        if (out[i] != (i ? 1000 : 1) * want) {
            t_fail("%s %d: sum %ld, expected %ld", from_group ? "new communicator" : "duplicate",
                   i, out[i], (i ? 1000 : 1) * want);
            bad++;
        }
        MPI_Comm_free(&d[i]);
    }
    return bad;
}

/* More duplicates in flight at once than there are windows of ids for
 * their agreements (comm.c: the later ones are set up at their first
 * call, when the others still hold their windows), a third of them freed unused (their windows come back), the rest
 * used newest first, each alternately blocking and nonblocking. Then the
 * crossed orders again: they hang if the windows did not come back. */
#define IDUP_MANY 160
START_TEST(test_idup_orders)
{
    cross_orders(false);
    cross_orders(true);
    MPI_Comm d[IDUP_MANY];
    MPI_Request r[IDUP_MANY];
    for (int i = 0; i < IDUP_MANY; i++)
        MPI_Comm_idup(MPI_COMM_WORLD, &d[i], &r[i]);
    for (int i = 0; i < IDUP_MANY; i++)
        MPI_Wait(&r[i], MPI_STATUS_IGNORE);
    for (int i = IDUP_MANY - 1; i >= 0; i--) {
        if (i % 3 == 1) {
            MPI_Comm_free(&d[i]);
            continue;
        }
        int in = t_rank + i, out = -1;
        MPI_Request q;
        if (i % 2)
            MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, d[i]);
        else {
            MPI_Iallreduce(&in, &out, 1, MPI_INT, MPI_SUM, d[i], &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        }
        t_cases++;
        if (out != t_size * (t_size - 1) / 2 + t_size * i)
            t_fail("duplicate %d of %d in flight at once: sum %d, expected %d", i, IDUP_MANY,
                   out, t_size * (t_size - 1) / 2 + t_size * i);
        MPI_Comm_free(&d[i]);
    }
    for (int round = 0; round < 3; round++)
        cross_orders(false);
    t_agree("MPI_Comm_idup duplicates (and MPI_Comm_create_from_group communicators) first "
            "used in crossed orders, and many duplicates in flight");
}
END_TEST

START_TEST(test_late_context)
{
    MPI_Comm c;
    lazy_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    int in = 1, out = 0;
    t_cases++;
    if (t_rank == 0) {
        int rc = MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, c);
        expect_class(rc, MPI_ERR_OTHER, "first call with rank 1 late", "context id");
        int changed = barrier_under_canary();
        if (changed)
            t_fail("the timed-out context agreement's late result overwrote %d bytes of a "
                   "stack frame of the program's", changed);
    } else {
        sleep(2);
        /* (its agreement completes; its collective then times out: rank 0
         * is not in it) */
        MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, c);
        MPI_Barrier(MPI_COMM_WORLD);
    }
    t_agree("a late member after a timed-out context agreement");
    /* (c's state differs between the ranks now: it is not used again) */
}
END_TEST

static long rss_kb(void)
{
    long pages = 0, rss = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (f) {
        if (fscanf(f, "%ld %ld", &pages, &rss) != 2)
            rss = 0;
        fclose(f);
    }
    return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

/* A communicator of the ranks of this rank's parity, in reverse order of
 * world rank (split with key -rank): the sum of their world ranks + 1, and
 * the world ranks gathered in that order. */
static int parity_split_works(MPI_Comm s)
{
    int in = t_rank + 1, out = 0, want = 0, got[64];
    for (int w = 0; w < t_size; w++)
        if (w % 2 == t_rank % 2)
            want += w + 1;
    if (MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_SUM, s) != MPI_SUCCESS || out != want)
        return 0;
    if (MPI_Allgather(&t_rank, 1, MPI_INT, got, 1, MPI_INT, s) != MPI_SUCCESS)
        return 0;
    for (int w = t_size - 1, i = 0; w >= 0; w--)
        if (w % 2 == t_rank % 2 && got[i++] != w)
            return 0;
    return 1;
}

/* Every other cycle makes a communicator of another shape (the ranks of
 * one parity, reversed), which MPI may give the handle just freed: the
 * state libdpcoll remembers for that handle must not outlive the free. */
START_TEST(test_dup_free_cycles)
{
    long before = 0;
    for (int i = 0; i < 1100; i++) {
        if (i == 100)
            before = rss_kb();
        MPI_Comm c;
        if (i % 2) {
            MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, -t_rank, &c);
        } else {
            MPI_Comm_dup(MPI_COMM_WORLD, &c);
        }
        t_cases++;
        if (i % 2 ? !parity_split_works(c) : !allreduce_works(c))
            t_fail("cycle %d (%s): wrong result", i, i % 2 ? "parity split" : "dup");
        MPI_Comm_free(&c);
    }
    long growth = rss_kb() - before;
    if (growth > 1024)
        t_fail("resident memory grew by %ld KiB over 1000 dup/allreduce/free cycles", growth);
    t_agree("dup/free cycles");
}
END_TEST

/* One thread's communicator and its data: each thread's values are its
 * own (base), so that messages of one communicator taken for the other's
 * (both given the same libdpcoll context id when their first calls agree
 * on one at the same time) show as wrong sums. */
typedef struct { MPI_Comm c; long base; } thread_arg_t;
#define THREAD_ROUNDS 10
#define THREAD_CALLS 40

static void *thread_body(void *arg)
{
    MPI_Comm c = ((thread_arg_t *)arg)->c;
    long base = ((thread_arg_t *)arg)->base;
    int p;
    MPI_Comm_size(c, &p);
    for (int i = 0; i < THREAD_CALLS; i++) {
        long in[64], out[64];
        for (int k = 0; k < 64; k++)
            in[k] = base + t_rank * 1000 + i + k;
        if (i % 3 == 1) {   /* nonblocking, tested to completion */
            MPI_Request r;
            int done = 0;
            MPI_Iallreduce(in, out, 64, MPI_LONG, MPI_SUM, c, &r);
            while (!done)
                MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        } else if (i % 3 == 2) {   /* persistent, made in both threads at once */
            MPI_Request r;
            MPI_Allreduce_init(in, out, 64, MPI_LONG, MPI_SUM, c, MPI_INFO_NULL, &r);
            MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            MPI_Request_free(&r);
        } else {
            MPI_Allreduce(in, out, 64, MPI_LONG, MPI_SUM, c);
        }
        for (int k = 0; k < 64; k++)
            if (out[k] != p * base + 1000L * p * (p - 1) / 2 + (long)p * (i + k)) {
                t_fail("thread allreduce %d: element %d wrong", i, k);
                break;
            }
    }
    return NULL;
}

START_TEST(test_threads)
{
    int provided;
    MPI_Query_thread(&provided);
    if (provided < MPI_THREAD_MULTIPLE) {
        t_agree("threads (MPI_THREAD_MULTIPLE not provided)");
        return;
    }
    /* fresh communicators each round, set up lazily, so that every round's
     * first calls set up their libdpcoll state at the same moment in both
     * threads */
    for (int round = 0; round < THREAD_ROUNDS; round++) {
        MPI_Comm c[2];
        /* (every other round the second from MPI_Comm_idup: its agreement,
         * posted with the duplication, beside the first's at its first call) */
        lazy_dup(MPI_COMM_WORLD, &c[0]);
        if (round % 2) {
            holders_free();   /* (their windows come back) */
            idup_dup(MPI_COMM_WORLD, &c[1]);
        } else {
            lazy_dup(MPI_COMM_WORLD, &c[1]);
        }
        pthread_t th[2];
        thread_arg_t ta[2] = {{c[0], 0}, {c[1], 1000000}};
        for (int i = 0; i < 2; i++)
            pthread_create(&th[i], NULL, thread_body, &ta[i]);
        for (int i = 0; i < 2; i++)
            pthread_join(th[i], NULL);
        t_cases += 2 * THREAD_CALLS;
        MPI_Comm_free(&c[0]);
        MPI_Comm_free(&c[1]);
    }
    t_agree("two threads, two communicators, blocking, nonblocking and persistent");
}
END_TEST

/* dpcoll_op_avg: the sum then one division, the same bits on every rank;
 * dpcoll_type_bfloat16 reduced in float. Integer-valued data, so the sums are
 * exact and (sum / p) is the one correctly rounded quotient. */
START_TEST(test_average)
{
    enum { N = 1000 };
    static float f[N], fo[N], fall[N * 64];
    static double d[N];
    static uint16_t b[N], bo[N];
    int p = t_size;
    for (int i = 0; i < N; i++) {
        f[i] = (float)((t_rank + 1) * (i % 7));
        d[i] = (double)(t_rank * 3 + i % 5);
        b[i] = (uint16_t)(((union { float x; uint32_t u; }){.x = (float)(t_rank + i % 3)}).u >> 16);
    }
    t_cases += 4;
    if (MPI_Allreduce(f, fo, N, MPI_FLOAT, dpcoll_op_avg(), MPI_COMM_WORLD) != MPI_SUCCESS)
        t_fail("float average failed");
    for (int i = 0; i < N; i++) {
        float sum = (float)(p * (p + 1) / 2 * (i % 7));
        if (fo[i] != sum / (float)p) {
            t_fail("float average [%d] = %g, want %g", i, (double)fo[i], (double)(sum / (float)p));
            break;
        }
    }
    /* bit for bit the same on every rank */
    PMPI_Allgather(fo, N, MPI_FLOAT, fall, N, MPI_FLOAT, MPI_COMM_WORLD);
    for (int r = 1; r < p; r++)
        if (memcmp(fall, fall + (size_t)r * N, sizeof(fo)))
            t_fail("rank %d's average differs bitwise from rank 0's", r);
    MPI_Allreduce(MPI_IN_PLACE, d, N, MPI_DOUBLE, dpcoll_op_avg(), MPI_COMM_WORLD);
    for (int i = 0; i < N; i++) {
        double sum = 3.0 * p * (p - 1) / 2 + (double)p * (i % 5);
        if (d[i] != sum / p) {
            t_fail("double average [%d] = %g, want %g", i, d[i], sum / p);
            break;
        }
    }
    /* (MPICH has no bfloat16: with libdpcoll disabled this part cannot run) */
    if (dpcoll_active())
        MPI_Allreduce(b, bo, N, dpcoll_type_bfloat16(), MPI_SUM, MPI_COMM_WORLD);
    for (int i = 0; i < N && dpcoll_active(); i++) {
        float want = (float)(p * (p - 1) / 2 + p * (i % 3));
        float got = ((union { uint32_t u; float x; }){.u = (uint32_t)bo[i] << 16}).x;
        if (got != want) {
            t_fail("bfloat16 sum [%d] = %g, want %g", i, (double)got, (double)want);
            break;
        }
    }
    /* reduce-scatter average: this rank's block */
    static double rs_in[64 * 4], rs_out[4];
    for (int i = 0; i < 4 * p; i++)
        rs_in[i] = (double)(t_rank + i);
    MPI_Reduce_scatter_block(rs_in, rs_out, 4, MPI_DOUBLE, dpcoll_op_avg(), MPI_COMM_WORLD);
    for (int i = 0; i < 4; i++) {
        double want = ((double)p * (p - 1) / 2 + (double)p * (4 * t_rank + i)) / p;
        if (rs_out[i] != want)
            t_fail("reduce_scatter_block average [%d] = %g, want %g", i, rs_out[i], want);
    }
    /* and refused on integers, before anything is sent */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int x = 1, y;
    expect_class(MPI_Allreduce(&x, &y, 1, MPI_INT, dpcoll_op_avg(), MPI_COMM_WORLD), MPI_ERR_OP,
                 "average of int", "avg");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    t_agree("average and bfloat16");
}
END_TEST

START_TEST(test_disabled)
{
    t_cases++;
    if (dpcoll_active())
        t_fail("DPCOLL_DISABLE=1 but libdpcoll is active");
    if (!allreduce_works(MPI_COMM_WORLD))
        t_fail("allreduce through PMPI gave a wrong result");
    t_agree("disabled");
}
END_TEST

/* The same call again and again on the same buffers (its schedule is then
 * replayed, not rebuilt) with new data every time, interleaved with other
 * algorithms and counts on those buffers: every result against PMPI's. */
START_TEST(test_repeat)
{
    enum { N = 512 };
    int p = t_size;
    static int in[N * 8], out[N * 8], ref[N * 8];
    static const char *const algos[] = {"auto", "ring", "recursive_doubling", "direct"};
    for (int it = 0; it < 300; it++) {
        int count = it % 7 == 6 ? N / 2 : N;         /* now and then another count */
        const char *al = algos[(it / 50) % 4];        /* and another algorithm */
        dpcoll_set_algorithm("allreduce", al);
        for (int i = 0; i < N * p; i++)
            in[i] = (i * 7 + it * 13 + t_rank * 101) % 1000 - 500;
        int k = it % 4;
        t_cases++;
        if (k == 0) {
            MPI_Allreduce(in, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            PMPI_Allreduce(in, ref, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        } else if (k == 1) {
            MPI_Allgather(in, count / p, MPI_INT, out, count / p, MPI_INT, MPI_COMM_WORLD);
            PMPI_Allgather(in, count / p, MPI_INT, ref, count / p, MPI_INT, MPI_COMM_WORLD);
            count = count / p * p;
        } else if (k == 2) {
            memcpy(out, in, sizeof(int) * (size_t)count);
            memcpy(ref, in, sizeof(int) * (size_t)count);
            MPI_Bcast(out, count, MPI_INT, it % p, MPI_COMM_WORLD);
            PMPI_Bcast(ref, count, MPI_INT, it % p, MPI_COMM_WORLD);
        } else {
            MPI_Alltoall(in, count / p, MPI_INT, out, count / p, MPI_INT, MPI_COMM_WORLD);
            PMPI_Alltoall(in, count / p, MPI_INT, ref, count / p, MPI_INT, MPI_COMM_WORLD);
            count = count / p * p;
        }
        if (memcmp(out, ref, sizeof(int) * (size_t)count))
            t_fail("repeat %d (%s, kind %d, count %d): differs from PMPI", it, al, k, count);
    }
    dpcoll_set_algorithm("allreduce", "auto");
    t_agree("repeated calls on the same buffers");
}
END_TEST

/* A value of rank r's block, element i, in round it. */
static int shape_value(int r, int i, int it)
{
    return (i * 7 + it * 13 + r * 101) % 1000 - 500;
}

/* Blocking bcasts, allgathers, allreduces, all-to-alls and reduce-scatters
 * on contiguous host data that repeat a kept call take a short way past
 * the job (run.c's dpc_run_repeat, which runs the kept schedule within
 * the call, or hands it to the engine when a peer is late: one round in
 * three here), with the arguments the job's staging would have made
 * worked out in the wrapper: here a contiguous type whose data start 8
 * bytes past the buffer's address (true lower bound 8; the 8 bytes before
 * must stay untouched), an allgather, an allreduce and a reduce-scatter in
 * place, and ranks whose datatypes differ (a bcast's root contiguous, so
 * taking the short way, the others every other int, through staging: the
 * same bytes travel). Each shape six times in a row with new data; every
 * result against its closed form. */
START_TEST(test_repeat_shapes)
{
    enum { N = 24, SENT = -7777 };
    int p = t_size, r = t_rank;
    static int buf[2 + 2 * N * 8], all[2 + N * 8];
    MPI_Datatype shifted, spaced, ints = MPI_INT;
    int two = 2;
    MPI_Aint at = 8;
    MPI_Type_create_struct(1, &two, &at, &ints, &shifted);   /* 2 ints at byte 8 */
    MPI_Type_commit(&shifted);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &spaced);   /* every other int */
    MPI_Type_commit(&spaced);
    for (int it = 0; it < 48; it++) {
        int shape = it / 6, root = (it / 3) % p, bad = 0;
        for (size_t i = 0; i < sizeof(buf) / sizeof(buf[0]); i++)
            buf[i] = SENT;
        for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
            all[i] = SENT;
        int *data = buf + 2;   /* where the shifted type's data start */
        /* one round in three, rank 0 comes 2 ms late: the others' repeats
         * wait for it past the few passes made within the call, and the
         * engine takes them on (dpc_sched_rerun's hand-over) */
        if (it % 3 == 2 && r == 0)
            usleep(2000);
        if (shape == 0) {      /* bcast of N ints as N/2 shifted pairs */
            if (r == root)
                for (int i = 0; i < N; i++)
                    data[i] = shape_value(root, i, it);
            MPI_Bcast(buf, N / 2, shifted, root, MPI_COMM_WORLD);
            for (int i = 0; i < N; i++)
                bad += data[i] != shape_value(root, i, it);
            bad += buf[0] != SENT || buf[1] != SENT || data[N] != SENT;
        } else if (shape == 1) {   /* bcast: the root's ints dense, the others' spaced */
            for (int i = 0; i < N; i++)
                if (r == root)
                    buf[i] = shape_value(root, i, it);
            if (r == root)
                MPI_Bcast(buf, N, MPI_INT, root, MPI_COMM_WORLD);
            else
                MPI_Bcast(buf, N, spaced, root, MPI_COMM_WORLD);
            for (int i = 0; i < N; i++)
                bad += buf[r == root ? i : 2 * i] != shape_value(root, i, it);
            for (int i = 0; r != root && i < N; i++)
                bad += buf[2 * i + 1] != SENT;   /* the gaps untouched */
        } else if (shape == 2) {   /* allgather in place */
            for (int i = 0; i < N; i++)
                all[r * N + i] = shape_value(r, i, it);
            MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all, N, MPI_INT, MPI_COMM_WORLD);
            for (int q = 0; q < p; q++)
                for (int i = 0; i < N; i++)
                    bad += all[q * N + i] != shape_value(q, i, it);
            bad += all[p * N] != SENT;
        } else if (shape == 3) {   /* allgather of shifted pairs into shifted pairs */
            for (int i = 0; i < N; i++)
                data[i] = shape_value(r, i, it);
            MPI_Allgather(buf, N / 2, shifted, all, N / 2, shifted, MPI_COMM_WORLD);
            for (int q = 0; q < p; q++)
                for (int i = 0; i < N; i++)
                    bad += all[2 + q * N + i] != shape_value(q, i, it);
            bad += all[0] != SENT || all[1] != SENT || all[2 + p * N] != SENT;
        } else if (shape == 4) {   /* allreduce of shifted pairs into shifted pairs */
            for (int i = 0; i < N; i++)
                data[i] = shape_value(r, i, it);
            MPI_Allreduce(buf, all, N / 2, shifted, MPI_SUM, MPI_COMM_WORLD);
            for (int i = 0; i < N; i++) {
                int sum = 0;
                for (int q = 0; q < p; q++)
                    sum += shape_value(q, i, it);
                bad += all[2 + i] != sum;
            }
            bad += all[0] != SENT || all[1] != SENT || all[2 + N] != SENT;
        } else if (shape == 6) {   /* alltoall of shifted pairs into shifted pairs */
            for (int i = 0; i < p * N; i++)
                data[i] = shape_value(r, i, it);
            MPI_Alltoall(buf, N / 2, shifted, all, N / 2, shifted, MPI_COMM_WORLD);
            for (int q = 0; q < p; q++)
                for (int i = 0; i < N; i++)
                    bad += all[2 + q * N + i] != shape_value(q, r * N + i, it);
            bad += all[0] != SENT || all[1] != SENT || all[2 + p * N] != SENT;
        } else if (shape == 7) {   /* reduce-scatter in place */
            for (int i = 0; i < p * N; i++)
                all[i] = shape_value(r, i, it);
            MPI_Reduce_scatter_block(MPI_IN_PLACE, all, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            for (int i = 0; i < N; i++) {
                int sum = 0;
                for (int q = 0; q < p; q++)
                    sum += shape_value(q, r * N + i, it);
                bad += all[i] != sum;
            }
            bad += all[p * N] != SENT;
        } else {                   /* allreduce in place */
            for (int i = 0; i < N; i++)
                all[i] = shape_value(r, i, it);
            MPI_Allreduce(MPI_IN_PLACE, all, N, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            for (int i = 0; i < N; i++) {
                int mx = shape_value(0, i, it);
                for (int q = 1; q < p; q++)
                    mx = shape_value(q, i, it) > mx ? shape_value(q, i, it) : mx;
                bad += all[i] != mx;
            }
            bad += all[N] != SENT;
        }
        t_cases++;
        if (bad)
            t_fail("repeated shape %d, round %d (root %d): %d elements wrong", shape, it, root, bad);
    }
    MPI_Type_free(&shifted);
    MPI_Type_free(&spaced);
    t_agree("repeats of contiguous shapes (true lower bound, in place, mixed types; five collectives)");
}
END_TEST

/* The v-variants' blocking repeats take the short way too (jobs.c's
 * dpc_movev_repeat and dpc_reduce_repeat with counts): counts and
 * displacements unequal and with gaps between the blocks, which must stay
 * untouched; a type whose data start 8 bytes in; in place; and, between
 * two shapes, the same count and displacement arrays given new contents
 * (a repeat is by what they hold, not where they are: the kept schedule
 * of the old counts would put the blocks where they were). Each shape
 * eight times in a row with new data, rank 0 late one round in three;
 * every result against its closed form. */
START_TEST(test_repeat_vectors)
{
    enum { SENT = -7777, MAXP = 8, ROOM = 512 };
    int p = t_size, r = t_rank;
    ck_assert_int_le(p, MAXP);
    static int cnt[MAXP], dsp[MAXP], scnt[MAXP], sdsp[MAXP], in[ROOM], all[ROOM];
    MPI_Datatype shifted, ints = MPI_INT;
    int two = 2;
    MPI_Aint at = 8;
    MPI_Type_create_struct(1, &two, &at, &ints, &shifted);   /* 2 ints at byte 8 */
    MPI_Type_commit(&shifted);
    for (int it = 0; it < 64; it++) {
        int shape = it / 8, bad = 0, gap = 0;
        for (int i = 0; i < ROOM; i++)
            in[i] = all[i] = SENT;
        if (it % 3 == 2 && r == 0)
            usleep(2000);
        /* the blocks: counts by shape, each followed by a gap (shapes 0-2
         * and 4 of 1 element or pair, 3 and 5-7 of 2) */
        for (int q = 0; q < p; q++) {
            /* (shape 1: block 0 as shape 0's, the rest larger: the same
             * first count, which the kept schedules' keys hold) */
            cnt[q] = shape == 1 ? (q + 1) * 3 + (q ? 2 : 0) : shape == 3 || shape == 5 ? (q + r) % p + 1
                     : shape >= 6 ? q + 2 : (q + 1) * 3;
            gap = shape == 3 || shape >= 5 ? 2 : 1;
            dsp[q] = q ? dsp[q - 1] + cnt[q - 1] + gap : 0;
            scnt[q] = (r + q) % p + 1;   /* (alltoallv: what we send q, what q sends us) */
            sdsp[q] = q ? sdsp[q - 1] + scnt[q - 1] + gap : 0;
        }
        if (shape <= 2) {   /* allgatherv: our share, into blocks with gaps; 2 in place */
            int *src = shape == 2 ? all + dsp[r] : in;
            for (int i = 0; i < cnt[r]; i++)
                src[i] = shape_value(r, i, it);
            MPI_Allgatherv(shape == 2 ? MPI_IN_PLACE : in, cnt[r], MPI_INT, all, cnt, dsp, MPI_INT,
                           MPI_COMM_WORLD);
            for (int q = 0; q < p; q++) {
                for (int i = 0; i < cnt[q]; i++)
                    bad += all[dsp[q] + i] != shape_value(q, i, it);
                bad += all[dsp[q] + cnt[q]] != SENT;   /* the gap after it */
            }
        } else if (shape == 4) {   /* allgatherv of shifted pairs: displacements in pairs */
            for (int i = 0; i < 2 * cnt[r]; i++)
                in[2 + i] = shape_value(r, i, it);
            MPI_Allgatherv(in, cnt[r], shifted, all, cnt, dsp, shifted, MPI_COMM_WORLD);
            for (int q = 0; q < p; q++) {
                for (int i = 0; i < 2 * cnt[q]; i++)
                    bad += all[2 + 2 * dsp[q] + i] != shape_value(q, i, it);
                bad += all[2 + 2 * (dsp[q] + cnt[q])] != SENT;
            }
            bad += all[0] != SENT || all[1] != SENT;
        } else if (shape == 3 || shape == 5) {   /* alltoallv; 5 in place */
            int *src = shape == 5 ? all : in;
            for (int q = 0; q < p; q++)
                for (int i = 0; i < scnt[q]; i++)
                    src[(shape == 5 ? dsp[q] : sdsp[q]) + i] = shape_value(r, q * 100 + i, it);
            if (shape == 3)
                MPI_Alltoallv(in, scnt, sdsp, MPI_INT, all, cnt, dsp, MPI_INT, MPI_COMM_WORLD);
            else
                MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, all, cnt, dsp, MPI_INT,
                              MPI_COMM_WORLD);
            for (int q = 0; q < p; q++) {
                for (int i = 0; i < cnt[q]; i++)
                    bad += all[dsp[q] + i] != shape_value(q, r * 100 + i, it);
                bad += all[dsp[q] + cnt[q]] != SENT;
            }
        } else {   /* reduce_scatter of the whole vector (no gaps); 7 in place */
            int total = 0, off = 0;
            for (int q = 0; q < p; q++) {
                off += q < r ? cnt[q] : 0;
                total += cnt[q];
            }
            int *src = shape == 7 ? all : in;
            for (int i = 0; i < total; i++)
                src[i] = shape_value(r, i, it);
            MPI_Reduce_scatter(shape == 7 ? MPI_IN_PLACE : in, all, cnt, MPI_INT, MPI_SUM,
                               MPI_COMM_WORLD);
            for (int i = 0; i < cnt[r]; i++) {
                int sum = 0;
                for (int q = 0; q < p; q++)
                    sum += shape_value(q, off + i, it);
                bad += all[i] != sum;
            }
            bad += shape == 6 && all[cnt[r]] != SENT;
        }
        t_cases++;
        if (bad)
            t_fail("repeated v-variant shape %d, round %d: %d elements wrong", shape, it, bad);
    }
    MPI_Type_free(&shifted);
    t_agree("repeats of the v-variants (unequal counts, gaps, shifted type, in place, new counts "
            "in the same arrays)");
}
END_TEST

/* A program's op for test_repeat_exact: an integer sum. */
static void int_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((const int *)in)[i];
}

/* The call below d frames of its own, each with a stack of its own: the
 * job (on the wrapper's stack) is somewhere else at every depth. */
static int __attribute__((noinline)) allreduce_at_depth(int d, const int *in, int *out, int n,
                                                        MPI_Op op)
{
    volatile char pad[512];
    pad[d] = (char)d;
    if (d > 0)
        return allreduce_at_depth(d - 1, in, out, n, op) + pad[d] - d;
    return MPI_Allreduce(in, out, n, MPI_INT, op, MPI_COMM_WORLD);
}

/* One call repeated exactly, the same arguments and buffers, data new each
 * time: libdpcoll runs its schedule again by a short way (dpc_op_start's
 * repeat_start). Each algorithm forced in turn between repeats: the repeat
 * runs the one forced now (dpcoll_last_algorithm: the algorithm the same
 * call chose on other buffers, where the short way does not apply), and
 * some switch changes it, or the check proves nothing. A program's op from
 * stacks at different depths: its reduction is applied with this call's
 * context, not a finished call's. Every result against PMPI's. */
START_TEST(test_repeat_exact)
{
    enum { N = 96 };
    int p = t_size;
    static int in[N * 8], out[N * 8], ref[N * 8], other[N * 8];
    static const char *const colls[] = {"allreduce", "allgather", "bcast", "alltoall",
                                        "reduce_scatter_block"};
    int changes = 0;
    for (size_t ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ci++) {
        const char *co = colls[ci];
        int n = strcmp(co, "allreduce") && strcmp(co, "bcast") ? N / 8 : N;
        char before[64] = "";
        for (int ai = -1; ai < 0 || dpcoll_algorithm_name(co, ai); ai++) {
            dpcoll_set_algorithm(co, ai < 0 ? "auto" : dpcoll_algorithm_name(co, ai));
            char want[64] = "";
            for (int it = 0; it < 6; it++) {
                bool first = it == 0;   /* on other buffers: the general way */
                int *o = first ? other : out;
                for (int i = 0; i < N * p; i++)
                    in[i] = (i * 5 + it * 17 + (ai + 2) * 3 + t_rank * 29) % 200 - 100;
                memcpy(o, in, sizeof(in[0]) * (size_t)(N * p));
                memcpy(ref, in, sizeof(in[0]) * (size_t)(N * p));
                int m = n;   /* elements compared */
                if (!strcmp(co, "allreduce")) {
                    MPI_Allreduce(in, o, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                    PMPI_Allreduce(in, ref, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                } else if (!strcmp(co, "allgather")) {
                    MPI_Allgather(in, n, MPI_INT, o, n, MPI_INT, MPI_COMM_WORLD);
                    PMPI_Allgather(in, n, MPI_INT, ref, n, MPI_INT, MPI_COMM_WORLD);
                    m = n * p;
                } else if (!strcmp(co, "bcast")) {
                    MPI_Bcast(o, n, MPI_INT, 1 % p, MPI_COMM_WORLD);
                    PMPI_Bcast(ref, n, MPI_INT, 1 % p, MPI_COMM_WORLD);
                } else if (!strcmp(co, "alltoall")) {
                    MPI_Alltoall(in, n, MPI_INT, o, n, MPI_INT, MPI_COMM_WORLD);
                    PMPI_Alltoall(in, n, MPI_INT, ref, n, MPI_INT, MPI_COMM_WORLD);
                    m = n * p;
                } else {
                    MPI_Reduce_scatter_block(in, o, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                    PMPI_Reduce_scatter_block(in, ref, n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                }
                t_cases++;
                if (memcmp(o, ref, sizeof(int) * (size_t)m))
                    t_fail("%s (%s), repeat %d: differs from PMPI", co,
                           ai < 0 ? "auto" : dpcoll_algorithm_name(co, ai), it);
                if (first) {
                    snprintf(want, sizeof(want), "%s", dpcoll_last_algorithm());
                    continue;
                }
                t_cases++;
                if (strcmp(dpcoll_last_algorithm(), want))
                    t_fail("%s, repeat %d with %s forced: ran %s, the call on other buffers %s",
                           co, it, ai < 0 ? "auto" : dpcoll_algorithm_name(co, ai),
                           dpcoll_last_algorithm(), want);
            }
            changes += before[0] && strcmp(before, want);
            snprintf(before, sizeof(before), "%s", want);
        }
        dpcoll_set_algorithm(co, "auto");
    }
    t_cases++;
    if (!changes)
        t_fail("no forced algorithm changed what a repeat ran: the check proves nothing");
    MPI_Op sum;
    MPI_Op_create(int_sum, 1, &sum);
    for (int it = 0; it < 12; it++) {
        for (int i = 0; i < N; i++)
            in[i] = (i * 3 + it * 7 + t_rank * 11) % 100 - 50;
        int rc = allreduce_at_depth(it % 4, in, out, N, sum);
        PMPI_Allreduce(in, ref, N, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        t_cases++;
        if (rc != MPI_SUCCESS || memcmp(out, ref, sizeof(int) * N))
            t_fail("a program's op, repeat %d at depth %d: rc %d or differs from PMPI", it,
                   it % 4, rc);
    }
    MPI_Op_free(&sum);
    t_agree("one call repeated exactly");
}
END_TEST

/* The same calls on other buffers each time (as a program that makes fresh
 * arrays for each call: a kept schedule is then moved onto them, not
 * rebuilt), for every algorithm of every collective, in place and not, at
 * three counts, buffers at odd offsets: every result against PMPI's, and
 * the input left as it was. */
static void rotated_call(const char *coll, bool in_place, int count, int root, int *in,
                         int *out, bool native)
{
    int p = t_size;
    void *sb = in_place ? MPI_IN_PLACE : in;
    if (!strcmp(coll, "allreduce"))
        (native ? PMPI_Allreduce : MPI_Allreduce)(sb, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "reduce_scatter_block"))
        (native ? PMPI_Reduce_scatter_block : MPI_Reduce_scatter_block)(
            sb, out, count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "allgather"))
        (native ? PMPI_Allgather : MPI_Allgather)(sb, count, MPI_INT, out, count, MPI_INT,
                                                  MPI_COMM_WORLD);
    else if (!strcmp(coll, "alltoall"))
        (native ? PMPI_Alltoall : MPI_Alltoall)(sb, count, MPI_INT, out, count, MPI_INT,
                                                MPI_COMM_WORLD);
    else
        (native ? PMPI_Bcast : MPI_Bcast)(out, count * p, MPI_INT, root, MPI_COMM_WORLD);
}

START_TEST(test_rotate)
{
    enum { SETS = 5, MAXC = 1500, SPAN = MAXC * 8 + 64 };
    static const char *const colls[] = {"allreduce", "reduce_scatter_block", "allgather", "bcast",
                                        "alltoall"};
    static const int counts[] = {1, 37, MAXC};
    int p = t_size;
    int *arena = malloc(sizeof(int) * (size_t)SETS * 2 * SPAN);
    int *ref = malloc(sizeof(int) * SPAN), *keep = malloc(sizeof(int) * SPAN);
    for (size_t ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ci++)
        for (int ai = -1; ai < 0 || dpcoll_algorithm_name(colls[ci], ai); ai++) {
            const char *al = ai < 0 ? "auto" : dpcoll_algorithm_name(colls[ci], ai);
            dpcoll_set_algorithm(colls[ci], al);
            for (int it = 0; it < 3 * 2 * 2 * SETS; it++) {
                int count = counts[it % 3];
                bool in_place = (it / 3) % 2 && strcmp(colls[ci], "bcast");
                int set = (it / 6) % SETS, root = (it / 6) % p;
                /* each set's buffers at its own odd offset into the arena */
                int *in = arena + (size_t)set * 2 * SPAN + set;
                int *out = in + SPAN;
                int n_in = !strcmp(colls[ci], "allreduce") || !strcmp(colls[ci], "allgather")
                               ? count : count * p;
                int n_out = !strcmp(colls[ci], "reduce_scatter_block") ? count : count * p;
                if (!strcmp(colls[ci], "allreduce"))
                    n_out = count;
                for (int i = 0; i < count * p; i++) {
                    in[i] = (i * 7 + it * 13 + t_rank * 101 + set) % 1000 - 500;
                    out[i] = -7;
                }
                if (in_place) {   /* the input where MPI_IN_PLACE takes it */
                    if (!strcmp(colls[ci], "allgather"))
                        memcpy(out + t_rank * count, in, sizeof(int) * (size_t)count);
                    else
                        memcpy(out, in, sizeof(int) * (size_t)n_in);
                }
                if (!strcmp(colls[ci], "bcast") && t_rank == root)
                    memcpy(out, in, sizeof(int) * (size_t)(count * p));
                memcpy(ref, out, sizeof(int) * (size_t)(count * p));
                memcpy(keep, in, sizeof(int) * (size_t)n_in);
                rotated_call(colls[ci], in_place, count, root, in, ref, true);
                rotated_call(colls[ci], in_place, count, root, in, out, false);
                t_cases++;
                if (memcmp(out, ref, sizeof(int) * (size_t)n_out))
                    t_fail("%s (%s), %d ints%s, buffer set %d: differs from PMPI", colls[ci], al,
                           count, in_place ? ", in place" : "", set);
                else if (!in_place && memcmp(in, keep, sizeof(int) * (size_t)n_in))
                    t_fail("%s (%s), %d ints, buffer set %d: the input changed", colls[ci], al,
                           count, set);
            }
            dpcoll_set_algorithm(colls[ci], "auto");
        }
    free(arena);
    free(ref);
    free(keep);
    t_agree("the same calls on other buffers each time");
}
END_TEST

/* The v-variants repeated (their kept schedules are found by their counts
 * and displacements, moved onto other buffers): two count vectors with the
 * same first count and total but blocks elsewhere, alternating, with gaps
 * between the blocks, on rotating buffers, against PMPI. */
START_TEST(test_rotate_v)
{
    enum { SETS = 3, SPAN = 4096 };
    int p = t_size;
    int *arena = malloc(sizeof(int) * (size_t)SETS * 3 * SPAN);
    int cnt[2][64], dsp[2][64], scnt[64], sdsp[64];
    for (int v = 0; v < 2; v++)
        for (int i = 0, at = 0; i < p; i++) {
            /* v 0: 5, 7, 9...; v 1: 5, then the rest reversed (same total) */
            cnt[v][i] = 5 + 2 * (v && i ? p - i : i);
            dsp[v][i] = at + 3 * v;
            at += cnt[v][i] + 3;
        }
    for (int i = 0, at = 0; i < p; i++) {   /* alltoallv: what this rank sends each */
        scnt[i] = 1 + (t_rank + 2 * i) % 5;
        sdsp[i] = at;
        at += scnt[i] + 1;
    }
    for (int it = 0; it < 36; it++) {
        int kind = it % 3, v = (it / 3) % 2, set = (it / 6) % SETS;
        int *in = arena + (size_t)set * 3 * SPAN + set, *out = in + SPAN, *ref = out + SPAN;
        for (int i = 0; i < SPAN - 8; i++) {
            in[i] = (i * 11 + it * 7 + t_rank * 131) % 1000 - 500;
            out[i] = ref[i] = -3;
        }
        int n = 0;
        t_cases++;
        if (kind == 0) {
            MPI_Allgatherv(in, cnt[v][t_rank], MPI_INT, out, cnt[v], dsp[v], MPI_INT, MPI_COMM_WORLD);
            PMPI_Allgatherv(in, cnt[v][t_rank], MPI_INT, ref, cnt[v], dsp[v], MPI_INT, MPI_COMM_WORLD);
            n = dsp[v][p - 1] + cnt[v][p - 1];
        } else if (kind == 1) {
            /* what each rank receives from rank i: what i sends to it */
            int rcnt[64], rdsp[64];
            for (int i = 0, at = 0; i < p; i++) {
                rcnt[i] = 1 + (i + 2 * t_rank) % 5;
                rdsp[i] = at + v;
                at += rcnt[i] + 2;
                n = rdsp[i] + rcnt[i];
            }
            MPI_Alltoallv(in, scnt, sdsp, MPI_INT, out, rcnt, rdsp, MPI_INT, MPI_COMM_WORLD);
            PMPI_Alltoallv(in, scnt, sdsp, MPI_INT, ref, rcnt, rdsp, MPI_INT, MPI_COMM_WORLD);
        } else {
            MPI_Reduce_scatter(in, out, cnt[v], MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            PMPI_Reduce_scatter(in, ref, cnt[v], MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            n = cnt[v][t_rank];
        }
        if (memcmp(out, ref, sizeof(int) * (size_t)n))
            t_fail("v-variant %d, counts %d, buffer set %d: differs from PMPI", kind, v, set);
    }
    free(arena);
    t_agree("v-variants repeated on other buffers");
}
END_TEST

/* A root that runs ahead: 20000 bcasts of 8 KiB back to back, the root
 * done with each as soon as its message is out. The others must not pile
 * the messages up in memory (the mailboxes leave what nobody has asked for
 * in the ring, so the root waits for room; before, they were copied out
 * and kept: a heap growing by up to 160 MiB, at 14 us a call). Results
 * checked every 1000th call. */
static void my_sum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* Large-count calls whose counts (shared by all ranks) do not fit an int go
 * to the MPI library's own _c forms (DPCOLL_STATS says "count beyond int";
 * run.sh checks): a
 * type of size 0 makes 2^31 elements cost nothing. An average of that many
 * is refused, not handed to the MPI library (which would sum without the
 * division). */
START_TEST(test_large_count)
{
    MPI_Datatype none;
    MPI_Type_contiguous(0, MPI_INT, &none);
    MPI_Type_commit(&none);
    MPI_Count big = (MPI_Count)INT32_MAX + 1;
    int a[4] = {0}, b[4] = {0};
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    expect_class(MPI_Bcast_c(a, big, none, 0, c), MPI_SUCCESS, "bcast_c of 2^31 empty elements", NULL);
    expect_class(MPI_Allgather_c(a, big, none, b, big, none, c), MPI_SUCCESS,
                 "allgather_c of 2^31 empty elements", NULL);
    MPI_Request r;
    expect_class(MPI_Ibcast_c(a, big, none, 0, c, &r), MPI_SUCCESS, "ibcast_c of 2^31 empty elements", NULL);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    expect_class(MPI_Allreduce_c(a, b, big, MPI_FLOAT, dpcoll_op_avg(), c), MPI_ERR_COUNT,
                 "allreduce_c average of 2^31 elements", "dpcoll_op_avg");
    expect_class(MPI_Reduce_scatter_block_c(a, b, big, MPI_FLOAT, dpcoll_op_avg(), c),
                 MPI_ERR_COUNT, "reduce_scatter_block_c average of 2^31 elements a block",
                 "dpcoll_op_avg");
    /* values each rank passes for itself cannot decide that alone: beyond
     * an int they are refused before anything is sent (here on every rank) */
    MPI_Count cnt[64];
    MPI_Aint dsp[64], bigd[64];
    for (int i = 0; i < 64; i++)
        cnt[i] = 1, dsp[i] = i, bigd[i] = (MPI_Aint)INT32_MAX + 1 + i;
    if (dpcoll_active()) {   /* (the MPI library would read past the buffers) */
        expect_class(MPI_Alltoallv_c(a, cnt, bigd, MPI_INT, b, cnt, dsp, MPI_INT, c),
                     MPI_ERR_COUNT, "alltoallv_c sdispls beyond int", "sdispls");
        expect_class(MPI_Allgatherv_c(a, 1, MPI_INT, b, cnt, bigd, MPI_INT, c), MPI_ERR_COUNT,
                     "allgatherv_c displs beyond int", "displs");
    }
    /* a nonblocking reduce-scatter with a user op goes to the MPI library,
     * with the caller's MPI_Count array, which outlives the call as MPI
     * requires (the ints converted for the int form do not; MPICH happens to
     * copy the counts at the start, so this checks the route and the
     * result, not that lifetime) */
    MPI_Op sum_op;
    MPI_Op_create(my_sum, 1, &sum_op);
    int rin[3 * 64], rout[3];
    for (int i = 0; i < 3 * t_size; i++)
        rin[i] = t_rank + i;
    MPI_Count rcounts[64];
    for (int i = 0; i < t_size; i++)
        rcounts[i] = 3;
    expect_class(MPI_Ireduce_scatter_c(rin, rout, rcounts, MPI_INT, sum_op, c, &r), MPI_SUCCESS,
                 "ireduce_scatter_c with a user op", NULL);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    t_cases++;
    for (int i = 0; i < 3; i++) {
        int want = 0;   /* sum over ranks k of (k + 3 * my rank + i) */
        for (int k = 0; k < t_size; k++)
            want += k + 3 * t_rank + i;
        if (rout[i] != want)
            t_fail("ireduce_scatter_c with a user op: element %d is %d, want %d", i, rout[i], want);
    }
    MPI_Op_free(&sum_op);
    t_cases++;
    if (!allreduce_works(c))
        t_fail("the communicator is not usable after the large-count calls");
    MPI_Comm_free(&c);
    MPI_Type_free(&none);
    t_agree("large count");
}
END_TEST

START_TEST(test_flood)
{
    enum { N = 2048, CALLS = 20000 };
    static int buf[N];
    long before = 0;
    for (int it = 0; it < CALLS; it++) {
        if (it == 1000)
            before = rss_kb();
        if (t_rank == 0)
            for (int i = 0; i < N; i += 97)
                buf[i] = it + i;
        MPI_Bcast(buf, N, MPI_INT, 0, MPI_COMM_WORLD);
        if (it % 1000 == 999) {
            t_cases++;
            for (int i = 0; i < N; i += 97)
                if (buf[i] != it + i) {
                    t_fail("bcast %d: element %d is %d, want %d", it, i, buf[i], it + i);
                    break;
                }
        }
    }
    long growth = rss_kb() - before;
    if (growth > 8192)
        t_fail("rank %d: resident memory grew by %ld KiB over %d bcasts with the root ahead",
               t_rank, growth, CALLS - 1000);
    t_agree("a root running ahead of its bcasts");
}
END_TEST

/* One call of a collective on n floats (count as dpcoll_predict takes it). */
static void call_coll(const char *coll, int n, float *in, float *out)
{
    if (!strcmp(coll, "allreduce"))
        MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "reduce_scatter_block"))
        MPI_Reduce_scatter_block(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    else if (!strcmp(coll, "allgather"))
        MPI_Allgather(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD);
    else if (!strcmp(coll, "bcast"))
        MPI_Bcast(out, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    else
        MPI_Alltoall(in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD);
}

/* The one-node model's measured choices (src/dpc_cost.c), blocking calls
 * at 2 ranks, by the bytes of a rank's vector (all its blocks). */
static const struct {
    const char *coll;
    size_t lo, hi;
    const char *algo;
} builtin_choices[] = {
    {"bcast", 16384, 131072, "scatter_allgather"},
    {"allreduce", 11586, 23170, "recursive_doubling"},
    {"allreduce", 185364, 5931641, "direct"},
    {"reduce_scatter_block", 2965821, 11863283, "recursive_halving"},
    {"alltoall", 1482911, 5931641, "pairwise"},
};

/* The algorithm a blocking call of n floats should run where the lowest
 * prediction is best's: with no tune file, the one-node model's measured
 * choice where one covers it and its algorithm can run (a one-sided one
 * needs one-sided transfers: dpcoll_predict says), else best. */
static const char *expected_algo(const char *coll, int n, const char *best)
{
    bool blocks = strcmp(coll, "allreduce") && strcmp(coll, "bcast");
    size_t bytes = (size_t)n * sizeof(float) * (blocks ? (size_t)t_size : 1);
    if (!best || getenv("DPCOLL_TUNE_FILE") || t_size != 2)
        return best;
    for (size_t i = 0; i < sizeof(builtin_choices) / sizeof(builtin_choices[0]); i++)
        if (!strcmp(coll, builtin_choices[i].coll) && bytes >= builtin_choices[i].lo &&
            bytes <= builtin_choices[i].hi &&
            dpcoll_predict(coll, builtin_choices[i].algo, n, MPI_FLOAT, MPI_COMM_WORLD) >= 0)
            return builtin_choices[i].algo;
    return best;
}

/* The algorithm of coll whose price is lowest (the first of equal ones, as
 * the engine picks), its price in *best_t; NULL where none can run. price
 * is dpcoll_predict's or dpcoll_predictv's, for the call arg describes. */
typedef double (*price_fn)(const char *coll, const char *algo, const void *arg);
static const char *lowest_prediction(const char *coll, price_fn price, const void *arg,
                                     double *best_t)
{
    const char *best = NULL;
    *best_t = 0;
    for (int i = 0; dpcoll_algorithm_name(coll, i); i++) {
        const char *al = dpcoll_algorithm_name(coll, i);
        double t = price(coll, al, arg);
        if (t >= 0 && (!best || t < *best_t * (1 - 1e-9))) {
            best = al;
            *best_t = t;
        }
    }
    return best;
}
static double price_of_count(const char *coll, const char *algo, const void *n)
{
    return dpcoll_predict(coll, algo, *(const int *)n, MPI_FLOAT, MPI_COMM_WORLD);
}
static double price_of_counts(const char *coll, const char *algo, const void *counts)
{
    return dpcoll_predictv(coll, algo, counts, MPI_FLOAT, MPI_COMM_WORLD);
}

/* dpcoll_predictv prices the v-variants with their counts as the engine
 * does: a call with unequal counts runs the algorithm of the lowest
 * prediction and "auto" is that one's time; equal counts cost what
 * dpcoll_predict says; unequal ones cost the reduce-scatter's ring more
 * than equal ones of the same total (its busiest rank receives and reduces
 * all but the smallest block; an allgather's rank copies its own block as
 * well, n in all whatever the shares); wrong input gives a negative
 * value. */
START_TEST(test_predictv)
{
    static const char *colls[] = {"reduce_scatter", "allgatherv"};
    int p = t_size, *counts = malloc(sizeof(int) * (size_t)p), *displs = malloc(sizeof(int) * (size_t)p);
    int *equal = malloc(sizeof(int) * (size_t)p);
    enum { MAXM = 1 << 16 };
    float *in = calloc((size_t)MAXM * (size_t)p * (size_t)p, sizeof(float));
    float *out = calloc((size_t)MAXM * (size_t)p * (size_t)p, sizeof(float));
    for (int ci = 0; ci < 2; ci++)
        for (int m = 1; m <= MAXM; m *= 8) {
            /* rank i: (2i + 1) m elements, p^2 m in all; equal: p m each */
            for (int i = 0, at = 0; i < p; i++) {
                counts[i] = (2 * i + 1) * m;
                displs[i] = at;
                at += counts[i];
                equal[i] = p * m;
            }
            if (ci == 0)
                MPI_Reduce_scatter(in, out, counts, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            else
                MPI_Allgatherv(in, counts[t_rank], MPI_FLOAT, out, counts, displs, MPI_FLOAT,
                               MPI_COMM_WORLD);
            const char *ran = dpcoll_last_algorithm();
            double best_t;
            const char *best = lowest_prediction(colls[ci], price_of_counts, counts, &best_t);
            for (int i = 0; dpcoll_algorithm_name(colls[ci], i); i++) {
                const char *al = dpcoll_algorithm_name(colls[ci], i);
                double t = dpcoll_predictv(colls[ci], al, counts, MPI_FLOAT, MPI_COMM_WORLD);
                double te = dpcoll_predictv(colls[ci], al, equal, MPI_FLOAT, MPI_COMM_WORLD);
                double tb = dpcoll_predict(colls[ci], al, p * m, MPI_FLOAT, MPI_COMM_WORLD);
                t_cases++;
                if (te != tb)
                    t_fail("%s %s of %d x %d floats: %g s by its counts, %g s by its count",
                           colls[ci], al, p, p * m, te, tb);
                if (ci == 0 && !strcmp(al, "ring") && p > 1 && !(t > te))
                    t_fail("%s ring of %d floats: unequal shares %g s, equal %g s", colls[ci],
                           p * p * m, t, te);
            }
            double aut = dpcoll_predictv(colls[ci], "auto", counts, MPI_FLOAT, MPI_COMM_WORLD);
            t_cases++;
            if (!best || strcmp(best, ran))
                t_fail("%s of %d floats in unequal shares: ran %s, the lowest prediction is %s's",
                       colls[ci], p * p * m, ran, best ? best : "nobody's");
            else if (!(aut > 0) || aut != best_t)
                t_fail("%s of %d floats: auto predicted %g s, %s %g s", colls[ci], p * p * m, aut,
                       best, best_t);
        }
    counts[0] = -1;
    struct { const char *coll; const int *c; const char *what; } bad[] = {
        {"reduce_scatter", counts, "a negative count"},
        {"alltoallv", equal, "an alltoallv (its counts are each rank's own)"},
        {"allreduce", equal, "a block collective"},
        {"allgatherv", NULL, "no counts"},
        {"allgatherv", equal, NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        t_cases++;
        double t = dpcoll_predictv(bad[i].coll, "auto", bad[i].c, MPI_FLOAT, MPI_COMM_WORLD);
        if (bad[i].what && t >= 0)
            t_fail("dpcoll_predictv takes %s", bad[i].what);
        if (!bad[i].what && !(t > 0))
            t_fail("dpcoll_predictv does not price an allgatherv of equal counts");
    }
    free(counts);
    free(displs);
    free(equal);
    free(in);
    free(out);
    t_agree("dpcoll_predictv against the algorithms v-calls run");
}
END_TEST

/* dpcoll_predict prices a call as the engine does: the algorithm a real
 * call runs is the one whose prediction is lowest (so the arguments it
 * builds are the engine's: a count in the wrong unit, another op or the
 * one-sided flag left out would make the two disagree at some size), "auto"
 * is that one's time, and wrong input gives a negative value. */
START_TEST(test_predict)
{
    static const char *colls[] = {"allreduce", "reduce_scatter_block", "allgather", "bcast",
                                  "alltoall"};
    enum { MAXN = 1 << 20, NCOLL = sizeof(colls) / sizeof(colls[0]), NSIZE = 11, NSIG = NCOLL * NSIZE };
    float *in = calloc((size_t)MAXN * (size_t)t_size, sizeof(float));
    float *out = calloc((size_t)MAXN * (size_t)t_size, sizeof(float));
    const char *lowest[NSIG] = {NULL};   /* by signature: collective x size */
    for (size_t ci = 0; ci < NCOLL; ci++)
        for (int n = 1, si = 0; n <= MAXN; n *= 4, si++) {
            call_coll(colls[ci], n, in, out);
            const char *ran = dpcoll_last_algorithm();
            double best_t;
            const char *best = lowest_prediction(colls[ci], price_of_count, &n, &best_t);
            double aut = dpcoll_predict(colls[ci], "auto", n, MPI_FLOAT, MPI_COMM_WORLD);
            const char *want = expected_algo(colls[ci], n, best);
            double want_t = want && want != best
                                ? dpcoll_predict(colls[ci], want, n, MPI_FLOAT, MPI_COMM_WORLD)
                                : best_t;
            lowest[ci * NSIZE + (size_t)si] = want;
            t_cases++;
            if (!want || strcmp(want, ran))
                t_fail("%s of %d floats: ran %s, the lowest prediction is %s's%s", colls[ci], n,
                       ran, best ? best : "nobody", want != best ? " (a measured choice)" : "");
            else if (!(aut > 0) || aut != want_t)
                t_fail("%s of %d floats: auto predicted %g s, %s %g s", colls[ci], n, aut, want,
                       want_t);
        }
    /* the engine keeps its recent choices: calls that alternate between
     * signatures, more of them than it keeps, each still run the algorithm
     * of their own lowest prediction; and a forced algorithm overrides a
     * kept choice for the same arguments, until "auto" again */
    for (int k = 0; k < 2 * NSIG; k++) {
        int sig = k % 2 ? (k / 2 * 7) % NSIG : k / 2;
        int n = 1 << (2 * (sig % NSIZE));
        const char *coll = colls[sig / NSIZE];
        call_coll(coll, n, in, out);
        t_cases++;
        if (lowest[sig] && strcmp(lowest[sig], dpcoll_last_algorithm()))
            t_fail("%s of %d floats among other calls: ran %s, the lowest prediction is %s's",
                   coll, n, dpcoll_last_algorithm(), lowest[sig]);
        if (sig % NSIZE == 0 && k % 2 == 0) {
            /* forced: some other algorithm of this collective for the same call */
            const char *other = dpcoll_algorithm_name(coll, 0);
            if (lowest[sig] && !strcmp(other, lowest[sig]))
                other = dpcoll_algorithm_name(coll, 1);
            dpcoll_set_algorithm(coll, other);
            call_coll(coll, n, in, out);
            const char *forced_ran = dpcoll_last_algorithm();
            dpcoll_set_algorithm(coll, "auto");
            call_coll(coll, n, in, out);
            t_cases++;
            if (other && dpcoll_predict(coll, other, n, MPI_FLOAT, MPI_COMM_WORLD) >= 0 &&
                strcmp(forced_ran, other))
                t_fail("%s of %d floats forced to %s ran %s", coll, n, other, forced_ran);
            if (lowest[sig] && strcmp(lowest[sig], dpcoll_last_algorithm()))
                t_fail("%s of %d floats back on auto ran %s, the lowest prediction is %s's", coll,
                       n, dpcoll_last_algorithm(), lowest[sig]);
        }
    }
    t_cases++;
    if (dpcoll_predict("allreduce", "auto", 1 << 20, MPI_FLOAT, MPI_COMM_WORLD) <=
        dpcoll_predict("allreduce", "auto", 1 << 10, MPI_FLOAT, MPI_COMM_WORLD))
        t_fail("a 4 MiB allreduce is not predicted slower than a 4 KiB one");
    /* a datatype is priced by its bytes: 2 floats cost what a 2-float contiguous type does */
    MPI_Datatype two;
    MPI_Type_contiguous(2, MPI_FLOAT, &two);
    MPI_Type_commit(&two);
    t_cases++;
    if (dpcoll_predict("allgather", "ring", 4096, MPI_FLOAT, MPI_COMM_WORLD) !=
        dpcoll_predict("allgather", "ring", 2048, two, MPI_COMM_WORLD))
        t_fail("allgather of 4096 floats and of 2048 pairs of floats priced differently");
    MPI_Type_free(&two);
    /* a float and an int: moved by any collective, reduced by none (a
     * reduce_scatter was priced as one that moves bytes before session 44) */
    MPI_Datatype mixed, parts[2] = {MPI_FLOAT, MPI_INT};
    int lens[2] = {1, 1};
    MPI_Aint disp[2] = {0, sizeof(float)};
    MPI_Type_create_struct(2, lens, disp, parts, &mixed);
    MPI_Type_commit(&mixed);
    t_cases++;
    if (dpcoll_predict("allgatherv", "ring", 4, mixed, MPI_COMM_WORLD) <= 0)
        t_fail("dpcoll_predict does not price an allgatherv of a float and an int");
    struct { const char *coll, *al; int n; MPI_Datatype dt; const char *what; } bad[] = {
        {"allsum", "auto", 4, MPI_FLOAT, "an unknown collective"},
        {"allreduce", "hypercube", 4, MPI_FLOAT, "an unknown algorithm"},
        {"allreduce", "auto", -1, MPI_FLOAT, "a negative count"},
        {"allreduce", "auto", 4, MPI_DATATYPE_NULL, "MPI_DATATYPE_NULL"},
        {"bcast", "ring", 4, MPI_FLOAT, "another collective's algorithm"},
        {"reduce_scatter_block", "auto", 4, mixed, "a reduce_scatter_block of a float and an int"},
        {"reduce_scatter", "auto", 4, mixed, "a reduce_scatter of a float and an int"},
        {"allreduce", "auto", 4, mixed, "an allreduce of a float and an int"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        t_cases++;
        if (dpcoll_predict(bad[i].coll, bad[i].al, bad[i].n, bad[i].dt, MPI_COMM_WORLD) >= 0)
            t_fail("dpcoll_predict takes %s", bad[i].what);
    }
    t_cases++;
    MPI_Type_free(&mixed);
    if (dpcoll_predict("allreduce", "auto", 4, MPI_FLOAT, MPI_COMM_NULL) >= 0)
        t_fail("dpcoll_predict takes MPI_COMM_NULL");
    free(in);
    free(out);
    t_agree("dpcoll_predict against the algorithms calls run");
}
END_TEST

/* The model prices a message beyond the job's own eager limit as a
 * rendezvous, and no other: the pairwise all-to-all's prediction jumps
 * (alpha_rndv over alpha, microseconds) between blocks of B and B + 1 bytes
 * where B is the largest message the mailboxes carry in this job
 * (DPC_TEST_EAGER_MAX, which tests/mpi/run.sh sets beside DPCOLL_SHM_MAX or
 * DPCOLL_SHM=0: 65536 by default, 8192 by UCX), and grows by a byte's price
 * at the other candidates. Until session 41 the model took the build's
 * default (65536) whatever the job's mailboxes carried. */
static double a2a_pairwise_at(int block)
{
    return dpcoll_predict("alltoall", "pairwise", block, MPI_BYTE, MPI_COMM_WORLD);
}

START_TEST(test_eager_bound)
{
    const char *env = getenv("DPC_TEST_EAGER_MAX");
    int bound = env ? atoi(env) : 65536;
    static const int candidates[] = {256, 8192, 65536};
    for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
        int b = candidates[i];
        double before = a2a_pairwise_at(b - 1), at = a2a_pairwise_at(b), after = a2a_pairwise_at(b + 1);
        double byte = at - before, step = after - at;
        t_cases++;
        if (!(before > 0 && byte > 0)) {
            t_fail("pairwise all-to-all of %d-byte blocks predicted %g s, of %d %g s", b - 1,
                   before, b, at);
            continue;
        }
        if (b == bound && !(step > 100 * byte))
            t_fail("the job's mailboxes carry %d bytes, but a block of %d is predicted only "
                   "%g s dearer (a byte: %g s): not priced as a rendezvous", bound, b + 1, step,
                   byte);
        if (b != bound && !(step < 10 * byte))
            t_fail("a block of %d bytes is predicted %g s dearer than one of %d (a byte: %g s), "
                   "but this job's eager limit is %d", b + 1, step, b, byte, bound);
    }
    t_agree("the model's rendezvous boundary is the job's eager limit");
}
END_TEST

/* dpcoll_set_push_max turns the direct allgather's and all-to-all's writing
 * into peers on and off (dpcoll_tune times them both ways through it): the
 * prediction follows it (a push's bytes at DPC_PUSH_BETA_SCALE of beta),
 * and both ways give MPICH's result, byte for byte, for 1 MiB of output. */
START_TEST(test_push_way)
{
    int p, r;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    const char *env = getenv("DPCOLL_PUSH_MAX");
    size_t start = env ? (size_t)strtoull(env, NULL, 10) : (size_t)-1;
    int block = (1 << 20) / p;
    unsigned char *in = malloc((size_t)block * p), *out = malloc((size_t)block * p),
                  *ref = malloc((size_t)block * p);
    for (int i = 0; i < block * p; i++)
        in[i] = (unsigned char)(i * 7 + r * 13 + 1);
    static const char *const colls[] = {"allgather", "alltoall"};
    for (int c = 0; c < 2; c++) {
        double pred[2];
        for (int way = 0; way < 2; way++) {   /* 0: writing, 1: reading */
            dpcoll_set_push_max(way == 0 ? (size_t)-1 : 0);
            pred[way] = dpcoll_predict(colls[c], "direct", block, MPI_BYTE, MPI_COMM_WORLD);
            dpcoll_set_algorithm(colls[c], "direct");
            memset(out, 0, (size_t)block * p);
            memset(ref, 1, (size_t)block * p);
            if (c == 0) {
                MPI_Allgather(in, block, MPI_BYTE, out, block, MPI_BYTE, MPI_COMM_WORLD);
                PMPI_Allgather(in, block, MPI_BYTE, ref, block, MPI_BYTE, MPI_COMM_WORLD);
            } else {
                MPI_Alltoall(in, block, MPI_BYTE, out, block, MPI_BYTE, MPI_COMM_WORLD);
                PMPI_Alltoall(in, block, MPI_BYTE, ref, block, MPI_BYTE, MPI_COMM_WORLD);
            }
            dpcoll_set_algorithm(colls[c], "auto");
            t_cases++;
            if (memcmp(out, ref, (size_t)block * p))
                t_fail("%s/direct, %s: differs from PMPI", colls[c],
                       way == 0 ? "writing into peers" : "reading from them");
        }
        t_cases++;
        if (pred[0] < 0 || pred[1] < 0)
            continue;   /* (no one-sided transport in this job: nothing to price) */
        if (!(pred[0] < pred[1]))
            t_fail("%s/direct of 1 MiB: predicted %g s writing into peers, %g s reading: the "
                   "prediction does not follow dpcoll_set_push_max", colls[c], pred[0], pred[1]);
    }
    dpcoll_set_push_max(start);
    free(in);
    free(out);
    free(ref);
    t_agree("dpcoll_set_push_max: both ways priced apart and equal to MPICH's result");
}
END_TEST

/* The shim makes a reused large host buffer of huge pages (dpc_hugepage.h):
 * after one 8 MiB allreduce neither buffer is; after the second both are
 * (their whole 2 MiB pages), unless DPCOLL_HUGEPAGES=0 or the machine
 * gives none (said, and then only the results checked); the results equal
 * MPICH's all along. */
START_TEST(test_hugepages_used)
{
    size_t n = 8u << 20, count = n / sizeof(int);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int *in = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int *out = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    int *ref = malloc(n);
    ck_assert(in != MAP_FAILED && out != MAP_FAILED && ref);
    for (size_t i = 0; i < count; i++)
        in[i] = (int)(i % 1000) + r;
    PMPI_Allreduce(in, ref, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    long huge[2][2];
    for (int call = 0; call < 2; call++) {
        MPI_Allreduce(in, out, (int)count, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        t_cases++;
        if (memcmp(out, ref, n))
            t_fail("allreduce %d of 8 MiB differs from PMPI's", call + 1);
        huge[call][0] = smaps_huge_bytes_at(in);
        huge[call][1] = smaps_huge_bytes_at(out);
    }
    const char *env = getenv("DPCOLL_HUGEPAGES");
    bool off = env && !strcmp(env, "0");
    /* (buffers are made huge where the data cross by cross-memory attach,
     * which the direct algorithms need too: priced only with it) */
    bool one_sided = dpcoll_predict("allreduce", "direct", 1 << 20, MPI_INT, MPI_COMM_WORLD) >= 0;
    /* whether this kernel makes huge pages on request at all: asked here
     * for a scratch range (MADV_COLLAPSE, 25) */
    size_t pn = 4u << 20;
    char *probe = mmap(NULL, pn, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    bool kernel_can = false;
    if (probe != MAP_FAILED) {
        memset(probe, 1, pn);
        char *al = (char *)(((uintptr_t)probe + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1));
        FILE *f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
        char thp[128] = "";
        if (f) {
            if (!fgets(thp, sizeof(thp), f))
                thp[0] = 0;
            fclose(f);
        }
        kernel_can = thp[0] && !strstr(thp, "[never]") && madvise(al, 2u << 20, 25) == 0;
        munmap(probe, pn);
    }
    t_cases++;
    if (huge[0][0] > 0 || huge[0][1] > 0)
        t_fail("huge pages after the first call (in %ld, out %ld bytes)", huge[0][0], huge[0][1]);
    else if (off && (huge[1][0] > 0 || huge[1][1] > 0))
        t_fail("DPCOLL_HUGEPAGES=0, yet huge pages after the second call (in %ld, out %ld)",
               huge[1][0], huge[1][1]);
    else if (!off && kernel_can && one_sided && (huge[1][0] <= 0 || huge[1][1] <= 0))
        t_fail("the kernel makes huge pages on request, but after the second call in has %ld "
               "bytes of them, out %ld", huge[1][0], huge[1][1]);
    else if (!off && (!kernel_can || !one_sided) && r == 0)
        printf("test_hugepages_used: %s: only the results checked\n",
               !kernel_can ? "this kernel makes no huge pages on request (transparent_hugepage "
                             "never, or no MADV_COLLAPSE)"
                           : "the direct algorithms are off (DPCOLL_ONE_SIDED=0, or no cross-memory attach)");
    munmap(in, n);
    munmap(out, n);
    free(ref);
    t_agree("reused 8 MiB buffers made of huge pages on their second use");
}
END_TEST

/* A rank done with a collective of large messages must leave nothing its
 * peers still need from it: the program may next block in the MPI
 * library's own calls (here MPICH's barrier), which do not progress
 * libdpcoll's UCX worker. Without the engine's acknowledgements a
 * nonblocking ring allgather of 16 MiB blocks at 3 ranks left, about one
 * time in three, the last word of a rendezvous (UCX's "the data are in
 * your buffer") in a rank's queue: its neighbour timed out (DPCOLL_TIMEOUT)
 * waiting for it while the others sat in MPICH's barrier. */
START_TEST(test_left_behind)
{
    enum { N = 4 << 20, ROUNDS = 8 };   /* 16 MiB of ints a block */
    int *in = malloc(sizeof(int) * N), *out = malloc(sizeof(int) * (size_t)N * (size_t)t_size);
    for (int i = 0; i < N; i++)
        in[i] = t_rank * 7 + i;
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    dpcoll_set_algorithm("allgather", "ring");   /* 64 segment messages a block in flight */
    for (int round = 0; round < ROUNDS; round++) {
        MPI_Request q;
        int rc = MPI_Iallgather(in, N, MPI_INT, out, N, MPI_INT, MPI_COMM_WORLD, &q);
        if (rc == MPI_SUCCESS)
            rc = MPI_Wait(&q, MPI_STATUS_IGNORE);
        t_cases++;
        if (rc != MPI_SUCCESS) {
            t_fail("round %d: %s", round, dpcoll_error_message());
        } else {
            long bad = 0;
            for (int k = 0; k < t_size; k++)
                for (int i = 0; i < N; i += 4099)
                    bad += out[(size_t)k * N + (size_t)i] != k * 7 + i;
            if (bad)
                t_fail("round %d: %ld elements wrong", round, bad);
        }
        PMPI_Barrier(MPI_COMM_WORLD);   /* MPICH's own: progresses only MPICH */
    }
    dpcoll_set_algorithm("allgather", "auto");
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
    free(in);
    free(out);
    t_agree("large nonblocking allgathers each followed by MPICH's own barrier");
}
END_TEST

/* Batches of small nonblocking and persistent calls in flight together,
 * completed by one MPI_Waitall each, as a training step posts its small
 * gradient buckets: allreduces and bcasts (exact integer values).
 * tests/mpi/run.sh runs it with DPCOLL_STATS=1 at 2 ranks and checks that
 * the progress thread was not woken for them: each rank's messages are out
 * when it posts, so the program's own MPI_Waitall finishes them. (It once
 * was woken at every MPI_Waitall, and at every call beyond the 4th in
 * flight: a batch of 16 8-byte MPI_Iallreduce took 2.6-2.8 us a call where
 * MPICH's took 1.5.) */
#define BATCH 16
#define BATCH_ROUNDS 200
static void post_batch_call(int bcast, int pers, int in[8], int out[8], MPI_Request *r)
{
    if (bcast && pers)
        MPI_Bcast_init(out, 8, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, r);
    else if (bcast)
        MPI_Ibcast(out, 8, MPI_INT, 0, MPI_COMM_WORLD, r);
    else if (pers)
        MPI_Allreduce_init(in, out, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, r);
    else
        MPI_Iallreduce(in, out, 8, MPI_INT, MPI_SUM, MPI_COMM_WORLD, r);
}

/* 4 MPI_Iallgather, then 4 MPI_Ialltoall, of 16 KiB each in flight and
 * one MPI_Waitall, BATCH_ROUNDS times: at 2 ranks blocks of 8 KiB, which
 * go through the mailboxes within the call, so these are left to the
 * program too. (Calls up to 8 KiB were, these were not: the thread woken
 * at their starts took 3-37 us a call at 2 ranks, in spells of tens of
 * rounds, against 1.1-1.7 us without it and 1.5-2 for MPICH's own.) */
#define BLOCK_CALLS 4
#define BLOCK_INTS (8192 / (int)sizeof(int))
static void batches_of_blocks(void)
{
    int p = t_size, n = BLOCK_INTS * 2 / p;   /* (16 KiB a call at any size) */
    size_t stride = (size_t)n * (size_t)p;    /* each call's buffers, in ints */
    int *in = malloc(sizeof(int) * stride * BLOCK_CALLS);
    int *out = malloc(sizeof(int) * stride * BLOCK_CALLS);
    MPI_Request r[BLOCK_CALLS];
    MPI_Status st[BLOCK_CALLS];
    for (int kind = 0; kind < 2; kind++)
        for (int round = 0; round < BATCH_ROUNDS; round++) {
            /* input element k of call i, for rank q: unique, round by round */
            for (int i = 0; i < BLOCK_CALLS; i++)
                for (int k = 0; k < (kind ? n * p : n); k++)
                    in[(size_t)i * stride + (size_t)k] = ((round * BLOCK_CALLS + i) * p + t_rank) * 4096 + k;
            for (int i = 0; i < BLOCK_CALLS; i++) {
                int *ii = in + (size_t)i * stride, *oo = out + (size_t)i * stride;
                memset(oo, 0xff, sizeof(int) * stride);
                if (kind)
                    MPI_Ialltoall(ii, n, MPI_INT, oo, n, MPI_INT, MPI_COMM_WORLD, &r[i]);
                else
                    MPI_Iallgather(ii, n, MPI_INT, oo, n, MPI_INT, MPI_COMM_WORLD, &r[i]);
            }
            if (MPI_Waitall(BLOCK_CALLS, r, st) != MPI_SUCCESS)
                t_fail("%s batch %d: MPI_Waitall failed", kind ? "alltoall" : "allgather", round);
            for (int i = 0; i < BLOCK_CALLS; i++)
                for (int q = 0; q < p; q++)
                    for (int k = 0; k < n; k++) {
                        /* block q: rank q's input, its whole (allgather) or
                         * its block for this rank (all-to-all) */
                        int want = ((round * BLOCK_CALLS + i) * p + q) * 4096 + (kind ? t_rank * n + k : k);
                        int got = out[(size_t)i * stride + (size_t)(q * n + k)];
                        t_cases++;
                        if (got != want) {
                            t_fail("%s batch %d, call %d, block %d, element %d: %d, expected %d",
                                   kind ? "alltoall" : "allgather", round, i, q, k, got, want);
                            q = p;
                            break;
                        }
                    }
        }
    free(in);
    free(out);
}

START_TEST(test_batches)
{
    int in[BATCH][8], out[BATCH][8];
    MPI_Request r[BATCH];
    MPI_Status st[BATCH];
    for (int kind = 0; kind < 4; kind++) {
        int pers = kind & 1, bcast = kind >> 1;
        const char *what = bcast ? (pers ? "persistent bcast" : "nonblocking bcast")
                                 : (pers ? "persistent allreduce" : "nonblocking allreduce");
        if (pers)
            for (int i = 0; i < BATCH; i++)
                post_batch_call(bcast, 1, in[i], out[i], &r[i]);
        for (int round = 0; round < BATCH_ROUNDS; round++) {
            for (int i = 0; i < BATCH; i++)
                for (int k = 0; k < 8; k++) {
                    in[i][k] = (t_rank + 1) * (round + 1) + 100 * i + k;
                    out[i][k] = bcast && t_rank == 0 ? 1000 * round + 10 * i + k : -1;
                }
            if (pers)
                MPI_Startall(BATCH, r);
            else
                for (int i = 0; i < BATCH; i++)
                    post_batch_call(bcast, 0, in[i], out[i], &r[i]);
            if (MPI_Waitall(BATCH, r, st) != MPI_SUCCESS)
                t_fail("%s batch %d: MPI_Waitall failed", what, round);
            for (int i = 0; i < BATCH; i++)
                for (int k = 0; k < 8; k++) {
                    int want = bcast ? 1000 * round + 10 * i + k
                                     : t_size * (t_size + 1) / 2 * (round + 1) + t_size * (100 * i + k);
                    t_cases++;
                    if (out[i][k] != want) {
                        t_fail("%s batch %d, call %d, element %d: %d, expected %d", what, round,
                               i, k, out[i][k], want);
                        break;
                    }
                }
        }
        if (pers)
            for (int i = 0; i < BATCH; i++)
                MPI_Request_free(&r[i]);
    }
    batches_of_blocks();
    t_agree("batches of 16 small nonblocking and persistent allreduces and bcasts, 4 allgathers "
            "and 4 all-to-alls of 16 KiB");
}
END_TEST

/* Rounds of 4 MPI_Iallreduce of 64 KiB in flight (together beyond what is
 * left to the program's wait: each needs progress after its start), checked
 * exactly. how: 0 one MPI_Waitall at once, 1 an MPI_Wait for each at once,
 * 2 persistent (MPI_Startall, MPI_Waitall) at once, 3 the program computes
 * for COMPUTE_US before its MPI_Waitall, 4 it computes after its first
 * start (as a training step's backward pass between its buckets) and waits
 * at once for the other three. In 0-2, one round in HICCUP_EVERY stalls
 * for COMPUTE_US between its starts and its wait: the program's thread
 * preempted there, as on a busy machine. tests/mpi/run.sh runs "waitnow"
 * (0-2) and "waitlater" (0, 3, 4) with DPCOLL_STATS=1 at 2 ranks and
 * checks how often the progress thread was woken: at most 1 start in 20
 * when the program waits at once (it drives the calls itself; a wake-up
 * cost about 10 us of a core and at 64 KiB made the calls 2x slower, in
 * the runs that woke it at most starts, and every MPI_Wait that left
 * calls running woke it; one stall woke it for the next rounds, whose
 * wake-ups preempted the program again), at least once a round when it
 * computes. */
#define WAIT_CALLS 4
#define WAIT_INTS (65536 / (int)sizeof(int))
#define WAIT_ROUNDS 150
#define COMPUTE_US 300.0
#define HICCUP_EVERY 25
static void compute_for(double us)
{
    double until = MPI_Wtime() + us * 1e-6;
    while (MPI_Wtime() < until)
        ;
}
static void rounds_of_allreduces(int how)
{
    size_t n = WAIT_INTS;
    int *in = malloc(sizeof(int) * n * WAIT_CALLS), *out = malloc(sizeof(int) * n * WAIT_CALLS);
    MPI_Request r[WAIT_CALLS];
    if (how == 2)
        for (int i = 0; i < WAIT_CALLS; i++)
            MPI_Allreduce_init(in + i * n, out + i * n, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                               MPI_INFO_NULL, &r[i]);
    for (int round = 0; round < WAIT_ROUNDS; round++) {
        for (size_t k = 0; k < n * WAIT_CALLS; k++) {
            in[k] = (t_rank + 1) * (round + 1) + (int)(k % 1000);
            out[k] = -1;
        }
        if (how == 2)
            MPI_Startall(WAIT_CALLS, r);
        else
            for (int i = 0; i < WAIT_CALLS; i++) {
                MPI_Iallreduce(in + i * n, out + i * n, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                               &r[i]);
                if (how == 4 && i == 0)
                    compute_for(COMPUTE_US);
            }
        if (how == 3)
            compute_for(COMPUTE_US);
        else if (how < 3 && round % HICCUP_EVERY == HICCUP_EVERY / 2)
            usleep((useconds_t)COMPUTE_US);
        if (how == 1) {
            for (int i = 0; i < WAIT_CALLS; i++)
                MPI_Wait(&r[i], MPI_STATUS_IGNORE);
        } else if (MPI_Waitall(WAIT_CALLS, r, MPI_STATUSES_IGNORE) != MPI_SUCCESS) {
            t_fail("allreduce round %d (%d): MPI_Waitall failed", round, how);
        }
        for (size_t k = 0; k < n * WAIT_CALLS; k++) {
            int want = t_size * (t_size + 1) / 2 * (round + 1) + t_size * (int)(k % 1000);
            t_cases++;
            if (out[k] != want) {
                t_fail("allreduce round %d (%d), element %zu: %d, expected %d", round, how, k,
                       out[k], want);
                break;
            }
        }
    }
    if (how == 2)
        for (int i = 0; i < WAIT_CALLS; i++)
            MPI_Request_free(&r[i]);
    free(in);
    free(out);
}

START_TEST(test_wait_now)
{
    for (int how = 0; how < 3; how++)
        rounds_of_allreduces(how);
    t_agree("4 allreduces of 64 KiB in flight, waited for at once: MPI_Waitall, MPI_Wait "
            "each, persistent");
}
END_TEST

START_TEST(test_wait_later)
{
    rounds_of_allreduces(0);
    rounds_of_allreduces(3);
    rounds_of_allreduces(4);
    t_agree("4 allreduces of 64 KiB in flight, waited for at once, then after computing, then "
            "with computing after the first start");
}
END_TEST

/* Rounds of two MPI_Iallreduce of 4 MiB waited for at once, then a third
 * with the program sleeping between its start and its wait (a computation
 * elsewhere: a GPU, a file), checked exactly. The late ask of the slept
 * call ends the at-once streak by itself (src/pmpi/streak.c): the calls
 * waited for at once in between kept it for good before, and the slept
 * call waited for the thread's 1 ms watch (dpcoll_overlap -k sleep).
 * tests/mpi/run.sh runs it with DPCOLL_STATS=1 at 2 ranks and checks that
 * starts left the thread asleep at most once in 20. */
#define SLEPT_INTS ((4 << 20) / (int)sizeof(int))
#define SLEPT_ROUNDS 40
START_TEST(test_sleep_later)
{
    size_t n = SLEPT_INTS;
    int *in = malloc(sizeof(int) * n), *out = malloc(sizeof(int) * n);
    for (int round = 0; round < SLEPT_ROUNDS; round++)
        for (int call = 0; call < 3; call++) {
            int gen = round * 3 + call + 1;
            for (size_t k = 0; k < n; k++) {
                in[k] = (t_rank + 1) * gen + (int)(k % 1000);
                out[k] = -1;
            }
            MPI_Request r;
            MPI_Iallreduce(in, out, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
            if (call == 2)
                usleep((useconds_t)COMPUTE_US);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            for (size_t k = 0; k < n; k++) {
                int want = t_size * (t_size + 1) / 2 * gen + t_size * (int)(k % 1000);
                t_cases++;
                if (out[k] != want) {
                    t_fail("allreduce round %d call %d, element %zu: %d, expected %d", round,
                           call, k, out[k], want);
                    break;
                }
            }
        }
    free(in);
    free(out);
    t_agree("allreduces of 4 MiB, two waited for at once, then one after a sleep");
}
END_TEST

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "errors";
    if (!strcmp(mode, "threads")) {
        int provided;
        MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    } else {
        MPI_Init(&argc, &argv);
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    Suite *s = suite_create(mode);
    TCase *tc = tcase_create(mode);
    tcase_set_timeout(tc, 0);
    if (!strcmp(mode, "errors"))
        tcase_add_test(tc, test_bad_input);
    else if (!strcmp(mode, "fatal"))
        tcase_add_test(tc, test_fatal);
    else if (!strcmp(mode, "latectx"))
        tcase_add_test(tc, test_late_context);
    else if (!strcmp(mode, "timeout"))
        tcase_add_test(tc, test_timeout);
    else if (!strcmp(mode, "cycles"))
        tcase_add_test(tc, test_dup_free_cycles);
    else if (!strcmp(mode, "threads")) {
        tcase_add_test(tc, test_threads);
        add_handle_reuse_test(tc);
    }
    else if (!strcmp(mode, "disabled"))
        tcase_add_test(tc, test_disabled);
    else if (!strcmp(mode, "average"))
        tcase_add_test(tc, test_average);
    else if (!strcmp(mode, "repeat")) {
        tcase_add_test(tc, test_repeat);
        tcase_add_test(tc, test_repeat_exact);
        tcase_add_test(tc, test_repeat_shapes);
        tcase_add_test(tc, test_repeat_vectors);
        tcase_add_test(tc, test_rotate);
        tcase_add_test(tc, test_rotate_v);
    }
    else if (!strcmp(mode, "flood"))
        tcase_add_test(tc, test_flood);
    else if (!strcmp(mode, "largecount"))
        tcase_add_test(tc, test_large_count);
    else if (!strcmp(mode, "predict")) {
        tcase_add_test(tc, test_predict);
        tcase_add_test(tc, test_predictv);
        tcase_add_test(tc, test_eager_bound);
        tcase_add_test(tc, test_push_way);
        tcase_add_test(tc, test_hugepages_used);
    }
    else if (!strcmp(mode, "leftbehind"))
        tcase_add_test(tc, test_left_behind);
    else if (!strcmp(mode, "idup"))
        tcase_add_test(tc, test_idup_orders);
    else if (!strcmp(mode, "batch"))
        tcase_add_test(tc, test_batches);
    else if (!strcmp(mode, "waitnow"))
        tcase_add_test(tc, test_wait_now);
    else if (!strcmp(mode, "waitlater"))
        tcase_add_test(tc, test_wait_later);
    else if (!strcmp(mode, "sleeplater"))
        tcase_add_test(tc, test_sleep_later);
    else if (!strcmp(mode, "mpiprogress"))
        add_mpi_progress_test(tc);
    suite_add_tcase(s, tc);
    int failed = t_run(s);
    holders_free();
    MPI_Finalize();
    return failed ? 1 : 0;
}
