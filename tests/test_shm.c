/*
 * The shared-memory mailboxes (ucx_glue/dpc_shm.c) between real processes:
 * a forked producer streams records of every length from 0 to the largest
 * (so the ring wraps, with pad records, many times over and fills up) to a
 * consumer that checks each one's tag, kind, length and bytes in order; both
 * directions at once; the sleeping flag makes a put report "ring the
 * owner" exactly once; segments of the wrong job are refused; names are
 * gone from /dev/shm after unlink; payloads of 256 bytes and more sit on
 * cache-line boundaries; the ring size every process derives.
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "dpc_shm.h"

static char prefix[64];

/* Waits give up after 20 s: a lost record fails the test, not the clock. */
static time_t deadline;
static bool late(void)
{
    return time(NULL) > deadline;
}

static void name_prefix(void)
{
    snprintf(prefix, sizeof(prefix), "/dpcoll-test.%ld", (long)getpid());
}

/* Record k: tag, length and bytes all follow from k. */
static size_t len_of(unsigned k)
{
    return (k * 2654435761u) % (DPC_SHM_MAX_MSG + 1);
}
static unsigned char byte_of(unsigned k, size_t i)
{
    return (unsigned char)(k * 31 + i * 7);
}

/* The consumer starts only once the producer has found the ring full (a
 * consumer that kept up would leave the full case untested): the
 * producer writes a byte here then, or at its end if it never was. */
static int go_fd = -1;

static void let_consumer_go(void)
{
    char c = 1;
    if (go_fd >= 0 && write(go_fd, &c, 1) == 1)
        go_fd = -1;
}

/* Sends n records to dst, waiting (yielding) whenever the ring is full. */
static int produce(dpc_shm_t *s, int dst, unsigned n)
{
    static unsigned char space[DPC_SHM_MAX_MSG + 8];
    unsigned full = 0;
    for (unsigned k = 0; k < n; k++) {
        size_t len = len_of(k);
        unsigned char *buf = space + k % 8;   /* (sources on any alignment) */
        for (size_t i = 0; i < len; i++)
            buf[i] = byte_of(k, i);
        while (dpc_shm_put(s, dst, 0xabc0000000000000ull | k, k % 3, buf, len) < 0) {
            full++;
            let_consumer_go();
            if (late())
                return -1;
            sched_yield();
        }
    }
    let_consumer_go();
    return full > 0;        /* the ring did fill up at times */
}

/* Receives n records from src and checks them; 0 if all were right. */
static int consume(dpc_shm_t *s, int src, unsigned n)
{
    for (unsigned k = 0; k < n; k++) {
        uint64_t tag;
        unsigned kind;
        const void *data;
        size_t len;
        while (!dpc_shm_peek(s, src, &tag, &kind, &data, &len)) {
            if (late())
                return 4;
            sched_yield();
        }
        if (tag != (0xabc0000000000000ull | k) || kind != k % 3 || len != len_of(k))
            return 1;
        if (len >= DPC_SHM_ALIGNED_FROM && ((uintptr_t)data & 63))
            return 6;       /* a larger payload off its cache line */
        const unsigned char *d = data;
        for (size_t i = 0; i < len; i++)
            if (d[i] != byte_of(k, i))
                return 2;
        dpc_shm_pop(s, src);
    }
    return dpc_shm_pending(s) ? 3 : 0;
}

/* Two processes, each sending n records to the other while receiving. */
static void exchange(unsigned n, bool both_ways)
{
    name_prefix();
    deadline = time(NULL) + 20;
    char err[256];
    dpc_shm_t *a = NULL;
    /* each process creates its own segment; the child is process 1 */
    ck_assert_int_eq(dpc_shm_create(prefix, 2, 0, &a, err, sizeof(err)), DPC_OK);
    int ready[2], go[2];
    ck_assert_int_eq(pipe(ready), 0);
    ck_assert_int_eq(pipe(go), 0);
    pid_t pid = fork();
    if (pid == 0) {
        dpc_shm_t *b = NULL;
        char e2[256];
        if (dpc_shm_create(prefix, 2, 1, &b, e2, sizeof(e2)) != DPC_OK ||
            dpc_shm_attach(b, e2, sizeof(e2)) != DPC_OK)
            _exit(10);
        char c = 1;
        if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) != 1)
            _exit(11);
        int rc = consume(b, 0, n);
        if (!rc && both_ways && produce(b, 0, n) < 0)
            rc = 5;
        dpc_shm_destroy(b);
        _exit(rc);
    }
    char c;
    ck_assert_int_eq(read(ready[0], &c, 1), 1);
    ck_assert_int_eq(dpc_shm_attach(a, err, sizeof(err)), DPC_OK);
    go_fd = go[1];
    int filled = produce(a, 1, n);
    int mine = both_ways ? consume(a, 1, n) : 0;
    int st = 0;
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "consumer failed: %d", WEXITSTATUS(st));
    ck_assert_int_eq(mine, 0);
    ck_assert_msg(filled >= 0, "the ring stayed full: the consumer took nothing");
    ck_assert_msg(filled, "the ring never filled up: the full case went untested");
    dpc_shm_destroy(a);
    close(ready[0]);
    close(ready[1]);
    close(go[0]);
    close(go[1]);
}

START_TEST(test_stream)
{
    exchange(20000, false);
}
END_TEST

/* Records from DPC_SHM_STREAM_FROM up written with streaming stores
 * (DPCOLL_SHM_STREAM=1): every byte arrives, whole lines and the tail
 * after them, from sources on any alignment, both ways at once */
START_TEST(test_streamed_records)
{
    dpc_shm_set_streaming(true);
    exchange(20000, true);
    dpc_shm_set_streaming(false);
}
END_TEST

START_TEST(test_both_ways)
{
    exchange(5000, true);
}
END_TEST

/* One process owning both ends: the sleeping flag, and a foreign segment. */
START_TEST(test_sleep_flag)
{
    name_prefix();
    char err[256];
    dpc_shm_t *s = NULL;
    ck_assert_int_eq(dpc_shm_create(prefix, 1, 0, &s, err, sizeof(err)), DPC_OK);
    ck_assert_int_eq(dpc_shm_attach(s, err, sizeof(err)), DPC_OK);
    int v = 7;
    ck_assert(dpc_shm_sleep_begin(s));               /* nothing waits: may sleep */
    ck_assert_int_eq(dpc_shm_put(s, 0, 1, DPC_SHM_MSG, &v, sizeof(v)), 1);   /* ring it */
    ck_assert_int_eq(dpc_shm_put(s, 0, 2, DPC_SHM_MSG, &v, sizeof(v)), 0);   /* once */
    ck_assert(!dpc_shm_sleep_begin(s));              /* records wait: do not sleep */
    uint64_t tag;
    unsigned kind;
    const void *d;
    size_t len;
    for (uint64_t want = 1; want <= 2; want++) {
        ck_assert(dpc_shm_peek(s, 0, &tag, &kind, &d, &len));
        ck_assert_uint_eq(tag, want);
        ck_assert_uint_eq(len, sizeof(int));
        ck_assert_int_eq(*(const int *)d, 7);
        dpc_shm_pop(s, 0);
    }
    ck_assert(!dpc_shm_peek(s, 0, &tag, &kind, &d, &len));
    ck_assert(dpc_shm_sleep_begin(s));
    dpc_shm_sleep_end(s);
    ck_assert_int_eq(dpc_shm_put(s, 0, 3, DPC_SHM_MSG, &v, 0), 0);  /* awake: no ring; empty record */
    ck_assert(dpc_shm_peek(s, 0, &tag, &kind, &d, &len));
    ck_assert_uint_eq(len, 0);
    dpc_shm_pop(s, 0);
    /* the name is gone once unlinked, the mapping stays usable */
    char nm[128];
    snprintf(nm, sizeof(nm), "/dev/shm%s.0", prefix);
    ck_assert_int_eq(access(nm, F_OK), 0);
    dpc_shm_unlink(s);
    ck_assert_int_ne(access(nm, F_OK), 0);
    ck_assert_int_eq(dpc_shm_put(s, 0, 4, DPC_SHM_MSG, &v, sizeof(v)), 0);
    dpc_shm_destroy(s);
}
END_TEST

/* Every process agrees on the ring size from the job's size alone: 512 KiB
 * for small jobs, halved as jobs grow so that a segment stays within 8 MiB,
 * never below 64 KiB. */
START_TEST(test_ring_sizes)
{
    size_t prev = (size_t)-1;
    for (int np = 1; np <= DPC_SHM_MAX_PROCS; np++) {
        size_t rb = dpc_shm_ring_bytes(np);
        ck_assert_msg((rb & (rb - 1)) == 0, "np %d: %zu bytes is no power of two", np, rb);
        ck_assert_uint_ge(rb, 64 * 1024);
        /* the largest message: at most an eighth of a ring, 64 KiB where
         * rings are 512 KiB, never under 8 KiB */
        size_t mm = dpc_shm_max_msg(np);
        ck_assert_uint_ge(rb, 8 * mm);
        ck_assert_uint_le(mm, DPC_SHM_MAX_MSG);
        ck_assert_uint_ge(mm, 8192);
        if (np <= 16)
            ck_assert_uint_eq(mm, 64 * 1024);
        ck_assert_uint_le(rb, prev);
        if (np <= 16)
            ck_assert_uint_eq(rb, 512 * 1024);
        ck_assert_msg(rb == 64 * 1024 || (size_t)np * rb <= 8u << 20, "np %d: %zu", np, rb);
        ck_assert_msg((size_t)np * rb * 2 > 8u << 20 || rb == 512 * 1024,
                      "np %d: %zu bytes, where twice as much fits", np, rb);
        prev = rb;
    }
}
END_TEST

START_TEST(test_wrong_job)
{
    name_prefix();
    char err[256];
    dpc_shm_t *a = NULL, *b = NULL;
    /* process 1's segment made for a job of 3: a job of 2 must refuse it */
    ck_assert_int_eq(dpc_shm_create(prefix, 3, 1, &b, err, sizeof(err)), DPC_OK);
    ck_assert_int_eq(dpc_shm_create(prefix, 2, 0, &a, err, sizeof(err)), DPC_OK);
    ck_assert_int_eq(dpc_shm_attach(a, err, sizeof(err)), DPC_ERR_TRANSPORT);
    ck_assert_msg(strstr(err, "not this job's"), "%s", err);
    dpc_shm_destroy(a);
    dpc_shm_destroy(b);
    /* and a missing one is named */
    ck_assert_int_eq(dpc_shm_create(prefix, 2, 0, &a, err, sizeof(err)), DPC_OK);
    ck_assert_int_eq(dpc_shm_attach(a, err, sizeof(err)), DPC_ERR_TRANSPORT);
    ck_assert_msg(strstr(err, prefix), "%s", err);
    dpc_shm_destroy(a);
    ck_assert_int_eq(dpc_shm_create(prefix, DPC_SHM_MAX_PROCS + 1, 0, &a, err, sizeof(err)),
                     DPC_ERR_ARG);
    /* a name that exists is another job's: refused, and left alone */
    ck_assert_int_eq(dpc_shm_create(prefix, 1, 0, &a, err, sizeof(err)), DPC_OK);
    ck_assert_int_eq(dpc_shm_create(prefix, 1, 0, &b, err, sizeof(err)), DPC_ERR_TRANSPORT);
    ck_assert_int_eq(dpc_shm_attach(a, err, sizeof(err)), DPC_OK);
    char nm[128];
    snprintf(nm, sizeof(nm), "/dev/shm%s.0", prefix);
    ck_assert_int_eq(access(nm, F_OK), 0);
    dpc_shm_destroy(a);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("shm");
    TCase *tc = tcase_create("shm");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, test_stream);
    tcase_add_test(tc, test_both_ways);
    tcase_add_test(tc, test_streamed_records);
    tcase_add_test(tc, test_sleep_flag);
    tcase_add_test(tc, test_wrong_job);
    tcase_add_test(tc, test_ring_sizes);
    suite_add_tcase(su, tc);
    return check_run(su);
}
