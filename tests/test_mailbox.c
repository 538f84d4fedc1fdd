/*
 * The UCX transport's mailbox path (ucx_glue/dpc_ucx.c over dpc_shm.c), in
 * one process talking to itself: a real UCX context and worker, a
 * one-process mailbox segment, and a one-rank group. Small messages go by
 * mailbox, and the matching rules are the transport contract's: by (peer,
 * tag), in the order sent; a record nobody has asked for stays in the ring
 * until a receive needs it out of the way; a full ring makes sends wait,
 * in order; cancel ends a posted receive; large messages go by UCX, or,
 * where processes can read each other's memory, by the rings' own
 * rendezvous (a description, the receiver's read, its FIN).
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "dpc_sched.h"
#include "dpc_shm.h"
#include "dpc_ucx.h"

static dpc_ucx_t *ux;
static dpc_shm_t *shm;
static dpc_transport_t *tp;

/* cma: every process may read the others' memory (dpc_ucx_set_cma), so
 * large messages go by the transport's own rendezvous through the rings */
static void setup_max(int cma, size_t max_msg)
{
    char err[256], prefix[64];
    ck_assert_int_eq(dpc_ucx_create(0, 1, &ux, err, sizeof(err)), DPC_OK);
    const void *addr;
    size_t len;
    ck_assert_int_eq(dpc_ucx_address(ux, &addr, &len), DPC_OK);
    size_t off = 0;
    ck_assert_int_eq(dpc_ucx_set_peers(ux, 1, addr, &off, &len), DPC_OK);
    snprintf(prefix, sizeof(prefix), "/dpcoll-test.%ld", (long)getpid());
    ck_assert_int_eq(dpc_shm_create(prefix, 1, 0, &shm, err, sizeof(err)), DPC_OK);
    ck_assert_int_eq(dpc_shm_attach(shm, err, sizeof(err)), DPC_OK);
    dpc_shm_unlink(shm);
    /* (more than the rings carry: refused, nothing taken over) */
    ck_assert_int_eq(dpc_ucx_set_shm(ux, shm, NULL, DPC_SHM_MAX_MSG + 1), DPC_ERR_ARG);
    ck_assert_int_eq(dpc_ucx_set_shm(ux, shm, NULL, max_msg), DPC_OK);
    int64_t pid = getpid();
    if (cma)
        ck_assert_int_eq(dpc_ucx_set_cma(ux, 1, &pid), DPC_OK);
    int world = 0;
    ck_assert_int_eq(dpc_ucx_group_create(ux, 0, 1, &world, &tp), DPC_OK);
}

static void setup_with(int cma)
{
    setup_max(cma, 8192);
}

static void setup(void)
{
    setup_with(0);
}

static void teardown(void)
{
    dpc_ucx_group_destroy(tp);
    dpc_ucx_destroy(ux);     /* (and the mailboxes with it) */
}

typedef struct { int calls; dpc_status_t st; } done_t;
static void cb(void *arg, dpc_status_t st)
{
    done_t *d = arg;
    d->calls++;
    d->st = st;
}

static void drive(done_t *d, int n)
{
    for (int i = 0; i < 100000; i++) {
        tp->ops->progress(tp);
        int all = 1;
        for (int k = 0; k < n; k++)
            all &= d[k].calls == 1;
        if (all)
            return;
    }
    ck_abort_msg("transfers did not complete");
}

static void send(uint64_t tag, const void *buf, size_t len, done_t *d)
{
    dpc_xfer_t *x;
    ck_assert_int_eq(tp->ops->isend(tp, 0, tag, buf, len, DPC_MEM_HOST, cb, d, &x), DPC_OK);
}

static void recv(uint64_t tag, void *buf, size_t len, done_t *d)
{
    dpc_xfer_t *x;
    ck_assert_int_eq(tp->ops->irecv(tp, 0, tag, buf, len, DPC_MEM_HOST, cb, d, &x), DPC_OK);
}

/* Nobody asked for it: the record stays in the ring, and its receive
 * later copies it from there. */
START_TEST(test_left_in_ring)
{
    setup();
    int v = 42, got = 0;
    done_t s = {0}, r = {0};
    send(5, &v, sizeof(v), &s);
    for (int i = 0; i < 10; i++)
        tp->ops->progress(tp);
    ck_assert_int_eq(s.calls, 1);          /* a send is done once it is in the ring */
    uint64_t tag;
    unsigned kind;
    const void *data;
    size_t len;
    ck_assert_msg(dpc_shm_peek(shm, 0, &tag, &kind, &data, &len),
                  "an unrequested record was taken out of the ring");
    recv(5, &got, sizeof(got), &r);
    drive(&r, 1);
    ck_assert_int_eq(r.st, DPC_OK);
    ck_assert_int_eq(got, 42);
    ck_assert(!dpc_shm_peek(shm, 0, &tag, &kind, &data, &len));
    teardown();
}
END_TEST

/* Matching by tag, in the order sent: a receive for a later tag moves the
 * earlier records aside; two messages with one tag arrive in order. */
START_TEST(test_match_order)
{
    setup();
    int a1 = 1, a2 = 2, b = 3, c = 4, r1 = 0, r2 = 0, rb = 0, rc = 0;
    done_t s[4] = {{0}}, r[4] = {{0}};
    send(7, &a1, sizeof(int), &s[0]);
    send(8, &b, sizeof(int), &s[1]);
    send(7, &a2, sizeof(int), &s[2]);
    send(9, &c, sizeof(int), &s[3]);
    recv(9, &rc, sizeof(int), &r[0]);      /* the last one first */
    drive(r, 1);
    ck_assert_int_eq(rc, 4);
    recv(7, &r1, sizeof(int), &r[1]);
    recv(7, &r2, sizeof(int), &r[2]);
    recv(8, &rb, sizeof(int), &r[3]);
    drive(r, 4);
    ck_assert_int_eq(r1, 1);
    ck_assert_int_eq(r2, 2);
    ck_assert_int_eq(rb, 3);
    drive(s, 4);
    teardown();
}
END_TEST

/* More than the ring holds: sends wait, in order, and all arrive intact. */
START_TEST(test_full_ring)
{
    setup();
    enum { LEN = 8000 };
    /* (one more than fits, and some) */
    int N = (int)(dpc_shm_ring_bytes(1) / LEN) + 8;
    char (*out)[LEN] = calloc((size_t)N, LEN), (*in)[LEN] = calloc((size_t)N, LEN);
    done_t *s = calloc((size_t)N, sizeof(*s)), *r = calloc((size_t)N, sizeof(*r));
    ck_assert(out && in && s && r);
    for (int k = 0; k < N; k++) {
        memset(out[k], 'a' + k % 26, LEN);
        send(100 + (uint64_t)(k % 3), out[k], LEN, &s[k]);  /* tags repeat: order matters */
    }
    for (int i = 0; i < 10; i++)
        tp->ops->progress(tp);
    int waiting = 0;
    for (int k = 0; k < N; k++)
        waiting += s[k].calls == 0;
    ck_assert_msg(waiting > 0, "the ring took all %d x %d bytes: the full case went untested",
                  N, LEN);
    for (int k = 0; k < N; k++)
        recv(100 + (uint64_t)(k % 3), in[k], LEN, &r[k]);
    drive(r, N);
    drive(s, N);
    for (int k = 0; k < N; k++) {
        ck_assert_int_eq(r[k].st, DPC_OK);
        ck_assert_msg(in[k][0] == 'a' + k % 26 && in[k][LEN - 1] == 'a' + k % 26,
                      "message %d out of order or damaged", k);
    }
    free(out);
    free(in);
    free(s);
    free(r);
    teardown();
}
END_TEST

/* Cancel ends a posted receive; a message beyond the mailbox size goes by
 * UCX (the same calls, the same matching). */
START_TEST(test_cancel_and_large)
{
    setup();
    int x = 0;
    done_t r = {0};
    dpc_xfer_t *h;
    ck_assert_int_eq(tp->ops->irecv(tp, 0, 11, &x, sizeof(x), DPC_MEM_HOST, cb, &r, &h), DPC_OK);
    tp->ops->cancel(tp, h);
    drive(&r, 1);
    ck_assert_int_eq(r.st, DPC_ERR_CANCELED);
    enum { BIG = 100000 };
    char *big = malloc(BIG), *back = calloc(1, BIG);
    for (int i = 0; i < BIG; i++)
        big[i] = (char)(i * 7);
    done_t d[2] = {{0}};
    recv(12, back, BIG, &d[0]);
    send(12, big, BIG, &d[1]);
    drive(d, 2);
    ck_assert_int_eq(d[0].st, DPC_OK);
    ck_assert_int_eq(memcmp(big, back, BIG), 0);
    uint64_t tag;
    unsigned kind;
    const void *data;
    size_t len;
    ck_assert(!dpc_shm_peek(shm, 0, &tag, &kind, &data, &len));   /* not by mailbox */
    free(big);
    free(back);
    teardown();
}
END_TEST

/* send_now and recv_now finish within the call or do nothing: a send
 * behind others still waiting for room waits too (order), a receive takes
 * only its own record (from the ring's head or from those kept aside),
 * a record too long for the receive is an error, and a large message is
 * never theirs. */
START_TEST(test_now)
{
    setup();
    int one = 1, two = 2, three = 3, got = 0;
    ck_assert_int_eq(tp->ops->send_now(tp, 0, 20, &one, sizeof(int), DPC_MEM_HOST), DPC_OK);
    ck_assert_int_eq(tp->ops->send_now(tp, 0, 21, &two, sizeof(int), DPC_MEM_HOST), DPC_OK);
    /* 21 is behind 20 in the ring: not taken now, and 20 stays where it is */
    ck_assert_int_eq(tp->ops->recv_now(tp, 0, 21, &got, sizeof(int), DPC_MEM_HOST),
                     DPC_INPROGRESS);
    ck_assert_int_eq(got, 0);
    /* a receive posted for 21 moves 20 aside; recv_now then finds it there */
    done_t r = {0};
    recv(21, &got, sizeof(int), &r);
    drive(&r, 1);
    ck_assert_int_eq(got, 2);
    got = 0;
    ck_assert_int_eq(tp->ops->recv_now(tp, 0, 20, &got, sizeof(int), DPC_MEM_HOST), DPC_OK);
    ck_assert_int_eq(got, 1);
    ck_assert_int_eq(tp->ops->recv_now(tp, 0, 20, &got, sizeof(int), DPC_MEM_HOST),
                     DPC_INPROGRESS);                 /* taken once */
    /* at the head of the ring */
    ck_assert_int_eq(tp->ops->send_now(tp, 0, 22, &three, sizeof(int), DPC_MEM_HOST), DPC_OK);
    ck_assert_int_eq(tp->ops->recv_now(tp, 0, 22, &got, sizeof(int), DPC_MEM_HOST), DPC_OK);
    ck_assert_int_eq(got, 3);
    /* longer than the receive: an error, and the record is used up */
    long long wide = 0x1122334455667788LL;
    ck_assert_int_eq(tp->ops->send_now(tp, 0, 23, &wide, sizeof(wide), DPC_MEM_HOST), DPC_OK);
    ck_assert_int_eq(tp->ops->recv_now(tp, 0, 23, &got, sizeof(int), DPC_MEM_HOST),
                     DPC_ERR_TRUNCATE);
    uint64_t tag;
    unsigned kind;
    const void *data;
    size_t len;
    ck_assert(!dpc_shm_peek(shm, 0, &tag, &kind, &data, &len));
    /* large: by UCX, never now */
    enum { BIG = 100000 };
    char *big = calloc(1, BIG);
    ck_assert_int_eq(tp->ops->send_now(tp, 0, 24, big, BIG, DPC_MEM_HOST), DPC_INPROGRESS);
    ck_assert_int_eq(tp->ops->recv_now(tp, 0, 24, big, BIG, DPC_MEM_HOST), DPC_INPROGRESS);
    free(big);
    /* a full ring: the send waits in order, and send_now does not pass it */
    enum { LEN = 8000 };
    int N = (int)(dpc_shm_ring_bytes(1) / LEN) + 2;
    char (*out)[LEN] = calloc((size_t)N, LEN), (*in)[LEN] = calloc((size_t)N, LEN);
    done_t *s = calloc((size_t)N, sizeof(*s)), *rr = calloc((size_t)N, sizeof(*rr));
    ck_assert(out && in && s && rr);
    for (int k = 0; k < N; k++) {
        memset(out[k], 'a' + k % 26, LEN);
        send(30 + (uint64_t)k, out[k], LEN, &s[k]);
    }
    ck_assert_int_eq(s[N - 1].calls, 0);            /* waiting for room */
    /* room again, taken straight from the ring, the waiting sends not yet
     * moved: a send now would pass them */
    ck_assert(dpc_shm_peek(shm, 0, &tag, &kind, &data, &len));
    ck_assert_int_eq(len, LEN);
    memcpy(in[0], data, LEN);
    dpc_shm_pop(shm, 0);
    ck_assert_int_eq(tp->ops->send_now(tp, 0, 29, &one, sizeof(int), DPC_MEM_HOST),
                     DPC_INPROGRESS);
    rr[0].calls = 1;
    for (int k = 1; k < N; k++)
        recv(30 + (uint64_t)k, in[k], LEN, &rr[k]);
    drive(rr, N);
    drive(s, N);
    for (int k = 0; k < N; k++)
        ck_assert_msg(in[k][0] == 'a' + k % 26 && in[k][LEN - 1] == 'a' + k % 26,
                      "message %d out of order or damaged", k);
    free(out);
    free(in);
    free(s);
    free(rr);
    teardown();
}
END_TEST

/* A blocking call's polled receive (params.poll_recvs) whose message sits
 * behind another in the ring, for a receive of the same schedule that
 * waits for it: polling alone never gets past the first record, so the
 * polled receive must be posted in the end, and the record in its way
 * moves aside for the second receive to find. */
START_TEST(test_polled_behind_another)
{
    setup();
    dpc_sched_params_t prm = {.tp = tp, .tag_base = UINT64_C(1) << DPC_STEP_TAG_BITS,
                              .timeout_ns = 2000000000u, .mem = DPC_MEM_HOST,
                              .poll_recvs = true};
    dpc_sched_t *sc;
    ck_assert_int_eq(dpc_sched_create(&prm, &sc), DPC_OK);
    int one = 1, two = 2, got1 = 0, got2 = 0;
    dpc_step_id_t s1 = dpc_sched_send(sc, 0, 1, &one, sizeof(int), DPC_NO_DEPS);
    dpc_sched_send(sc, 0, 2, &two, sizeof(int), DPC_AFTER(s1));       /* behind tag 1 */
    dpc_step_id_t r2 = dpc_sched_recv(sc, 0, 2, &got2, sizeof(int), DPC_NO_DEPS);
    dpc_sched_recv(sc, 0, 1, &got1, sizeof(int), DPC_AFTER(r2));       /* only after it */
    dpc_status_t st = dpc_sched_start(sc);
    while (st == DPC_OK || st == DPC_INPROGRESS) {
        if ((st = dpc_sched_test(sc)) == DPC_OK)
            break;
    }
    ck_assert_msg(st == DPC_OK, "the schedule ended with %s", dpc_status_str(st));
    ck_assert_int_eq(got1, 1);
    ck_assert_int_eq(got2, 2);
    dpc_sched_destroy(sc);
    teardown();
}
END_TEST

static char *pattern(size_t n, int seed)
{
    char *b = malloc(n);
    ck_assert(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (char)(i * 7 + (size_t)seed);
    return b;
}

/* Large messages by rendezvous: the description goes through the ring, the
 * receiver reads the sender's buffer, and the send ends only with the
 * receiver's FIN (not when its record is written, as a small send does,
 * and not by cancel); the schedule needs no acknowledgements of its own. */
START_TEST(test_rndv_basic)
{
    setup_with(1);
    ck_assert_int_eq(tp->ack_min, 0);
    enum { BIG = 300000 };
    char *a = pattern(BIG, 1), *b = pattern(BIG, 2), *ra = calloc(1, BIG), *rb = calloc(1, BIG);
    done_t s[2] = {{0}}, r[2] = {{0}};
    dpc_xfer_t *h;
    ck_assert_int_eq(tp->ops->isend(tp, 0, 40, a, BIG, DPC_MEM_HOST, cb, &s[0], &h), DPC_OK);
    send(41, b, BIG, &s[1]);
    tp->ops->cancel(tp, h);                 /* the peer may be reading it: no effect */
    for (int i = 0; i < 100; i++)
        tp->ops->progress(tp);
    ck_assert_msg(s[0].calls == 0 && s[1].calls == 0, "a large send ended before it was read");
    ck_assert(tp->ops->settled(tp, h));     /* the reader needs nothing more of us */
    /* the second first: the first's description moves aside */
    recv(41, rb, BIG, &r[1]);
    drive(&r[1], 1);
    ck_assert_int_eq(r[1].st, DPC_OK);
    ck_assert_int_eq(memcmp(b, rb, BIG), 0);
    drive(&s[1], 1);
    ck_assert_int_eq(s[1].st, DPC_OK);
    ck_assert_int_eq(s[0].calls, 0);
    recv(40, ra, BIG, &r[0]);
    drive(r, 2);
    drive(s, 2);
    ck_assert_int_eq(s[0].st, DPC_OK);
    ck_assert_int_eq(memcmp(a, ra, BIG), 0);
    /* too short a receive (still large): its error, not the sender's */
    done_t s3 = {0}, r3 = {0};
    send(42, a, BIG, &s3);
    recv(42, rb, BIG / 2, &r3);
    drive(&r3, 1);
    drive(&s3, 1);
    ck_assert_int_eq(r3.st, DPC_ERR_TRUNCATE);
    ck_assert_int_eq(s3.st, DPC_OK);
    ck_assert_int_eq(memcmp(a, rb, BIG / 2), 0);
    uint64_t tag;
    unsigned kind;
    const void *data;
    size_t len;
    ck_assert(!dpc_shm_peek(shm, 0, &tag, &kind, &data, &len));
    free(a);
    free(b);
    free(ra);
    free(rb);
    teardown();
}
END_TEST

/* recv_now reads a large message whose description is here (in the ring
 * or kept aside), and its FIN ends the send; a large send is never sent
 * now. */
START_TEST(test_rndv_now)
{
    setup_with(1);
    enum { BIG = 100000 };
    char *a = pattern(BIG, 3), *got = calloc(1, BIG);
    done_t s = {0};
    send(50, a, BIG, &s);
    ck_assert_int_eq(tp->ops->send_now(tp, 0, 50, a, BIG, DPC_MEM_HOST), DPC_INPROGRESS);
    ck_assert_int_eq(tp->ops->recv_now(tp, 0, 50, got, BIG, DPC_MEM_HOST), DPC_OK);
    ck_assert_int_eq(memcmp(a, got, BIG), 0);
    drive(&s, 1);
    ck_assert_int_eq(s.st, DPC_OK);
    /* kept aside by a receive for the small message behind it */
    int one = 1, rone = 0;
    done_t s2[2] = {{0}}, r2 = {0};
    memset(got, 0, BIG);
    send(51, a, BIG, &s2[0]);
    send(52, &one, sizeof(one), &s2[1]);
    recv(52, &rone, sizeof(rone), &r2);
    drive(&r2, 1);
    ck_assert_int_eq(rone, 1);
    ck_assert_int_eq(tp->ops->recv_now(tp, 0, 51, got, BIG, DPC_MEM_HOST), DPC_OK);
    ck_assert_int_eq(memcmp(a, got, BIG), 0);
    drive(s2, 2);
    free(a);
    free(got);
    teardown();
}
END_TEST

/* A FIN behind a record nobody has asked for yet: the large send waiting
 * for it must still end (the record moves aside; left in the ring, the
 * FIN behind it would never be seen by a rank whose next receive waits
 * for the send to end). */
START_TEST(test_rndv_fin_behind_record)
{
    setup_with(1);
    enum { BIG = 100000 };
    char *a = pattern(BIG, 4), *got = calloc(1, BIG);
    int v = 9, rv = 0;
    done_t s[2] = {{0}}, r = {0}, r2 = {0};
    send(60, a, BIG, &s[0]);
    send(61, &v, sizeof(v), &s[1]);         /* into the ring before the FIN */
    recv(60, got, BIG, &r);
    drive(&r, 1);
    drive(s, 2);                             /* the FIN came from behind 61 */
    ck_assert_int_eq(memcmp(a, got, BIG), 0);
    recv(61, &rv, sizeof(rv), &r2);
    drive(&r2, 1);
    ck_assert_int_eq(rv, 9);
    free(a);
    free(got);
    teardown();
}
END_TEST

/* A receive that has read ends only when its FIN is in the sender's ring:
 * with the ring full and sends waiting for room, it waits behind them.
 * (The description is written by hand, as from another process: a large
 * send of this one would be waiting for a FIN, and then every record in
 * the way moves aside at once.) */
START_TEST(test_rndv_fin_waits_for_room)
{
    setup_with(1);
    enum { BIG = 100000, LEN = 8000 };
    char *a = pattern(BIG, 5), *got = calloc(1, BIG);
    int N = (int)(dpc_shm_ring_bytes(1) / LEN) + 2;
    char (*out)[LEN] = calloc((size_t)N, LEN), (*in)[LEN] = calloc((size_t)N, LEN);
    done_t *s = calloc((size_t)N, sizeof(*s)), *rr = calloc((size_t)N + 1, sizeof(*rr));
    ck_assert(out && in && s && rr);
    uint64_t t70 = 70;      /* as the transport tags it: rank 0's */
    dpc_shm_rndv_t d = {(uintptr_t)a, BIG, 12345};
    ck_assert_int_eq(dpc_shm_put(shm, 0, t70, DPC_SHM_RNDV, &d, sizeof(d)), 0);
    for (int k = 0; k < N; k++) {
        memset(out[k], 'a' + k % 26, LEN);
        send(80 + (uint64_t)k, out[k], LEN, &s[k]);
    }
    ck_assert_int_eq(s[N - 1].calls, 0);    /* waiting for room */
    recv(70, got, BIG, &rr[N]);
    for (int i = 0; i < 100; i++)
        tp->ops->progress(tp);
    ck_assert_msg(rr[N].calls == 0, "a receive ended with its FIN not sent");
    ck_assert_int_eq(memcmp(a, got, BIG), 0);   /* (read already) */
    for (int k = 0; k < N; k++)
        recv(80 + (uint64_t)k, in[k], LEN, &rr[k]);
    drive(rr, N + 1);
    drive(s, N);
    ck_assert_int_eq(rr[N].st, DPC_OK);
    for (int k = 0; k < N; k++)
        ck_assert_msg(in[k][0] == 'a' + k % 26 && in[k][LEN - 1] == 'a' + k % 26,
                      "message %d out of order or damaged", k);
    /* last in the ring: the FIN, naming the send, with the read's status */
    uint64_t tag;
    unsigned kind;
    const void *data;
    size_t len;
    int32_t st;
    ck_assert(dpc_shm_peek(shm, 0, &tag, &kind, &data, &len));
    ck_assert_int_eq(kind, DPC_SHM_FIN);
    ck_assert_int_eq(tag, 12345);
    ck_assert_int_eq(len, sizeof(st));
    memcpy(&st, data, sizeof(st));
    ck_assert_int_eq(st, DPC_OK);
    dpc_shm_pop(shm, 0);
    free(a);
    free(got);
    free(out);
    free(in);
    free(s);
    free(rr);
    teardown();
}
END_TEST

/* A large message is read at a progress, never within irecv, nor within
 * the start of a schedule that defers its local work (a nonblocking call's:
 * the program goes back to its computation at once and the progress
 * thread copies meanwhile). */
START_TEST(test_rndv_deferred)
{
    setup_with(1);
    enum { BIG = 200000 };
    char *a = pattern(BIG, 6), *got = calloc(1, BIG), *zero = calloc(1, BIG);
    done_t s = {0}, r = {0};
    send(90, a, BIG, &s);
    recv(90, got, BIG, &r);                 /* its description is here already */
    ck_assert_msg(memcmp(got, zero, BIG) == 0, "irecv read a large message within the call");
    drive(&r, 1);
    drive(&s, 1);
    ck_assert_int_eq(memcmp(a, got, BIG), 0);
    /* through the engine: a sending schedule, then a receiving one that
     * defers; its start only posts */
    memset(got, 0, BIG);
    dpc_sched_params_t prm = {.tp = tp, .tag_base = UINT64_C(1) << DPC_STEP_TAG_BITS,
                              .timeout_ns = 2000000000u, .mem = DPC_MEM_HOST};
    dpc_sched_t *snd, *rcv;
    ck_assert_int_eq(dpc_sched_create(&prm, &snd), DPC_OK);
    prm.defer_local = true;
    ck_assert_int_eq(dpc_sched_create(&prm, &rcv), DPC_OK);
    dpc_sched_send(snd, 0, 3, a, BIG, DPC_NO_DEPS);
    dpc_sched_recv(rcv, 0, 3, got, BIG, DPC_NO_DEPS);
    dpc_status_t ss = dpc_sched_start(snd), rs = dpc_sched_start(rcv);
    ck_assert_msg(memcmp(got, zero, BIG) == 0, "a deferring start read a large message");
    for (int i = 0; i < 1000000 && (ss == DPC_OK || ss == DPC_INPROGRESS ||
                                    rs == DPC_OK || rs == DPC_INPROGRESS); i++) {
        if (rs == DPC_OK || rs == DPC_INPROGRESS)
            rs = dpc_sched_test(rcv);
        if (ss == DPC_OK || ss == DPC_INPROGRESS)
            ss = dpc_sched_test(snd);
        if (rs != DPC_INPROGRESS && ss != DPC_INPROGRESS)
            break;
    }
    ck_assert_msg(ss == DPC_OK && rs == DPC_OK, "schedules ended with %s, %s",
                  dpc_status_str(ss), dpc_status_str(rs));
    ck_assert_int_eq(memcmp(a, got, BIG), 0);
    dpc_sched_destroy(snd);
    dpc_sched_destroy(rcv);
    free(a);
    free(got);
    free(zero);
    teardown();
}
END_TEST

/* What keeps the arm busy, told apart for the progress thread, which
 * naps after many busy turns in a row: a one-sided read's end, reported at
 * the next progress, is work (the direct allreduce makes hundreds of
 * reads, and counted as busy turns they made the thread nap between them:
 * a 64 MiB MPI_Iallreduce behind a sleep hid 65%, 100% without); a record
 * no receive wants yet is not (that one the thread naps on). */
START_TEST(test_work_pending)
{
    setup_with(1);
    enum { N = 4096 };
    char *src = pattern(N, 9), *dst = calloc(1, N), desc[DPC_REGION_DESC_MAX];
    void *h = NULL, *remote = NULL;
    ck_assert_int_eq(tp->ops->expose(tp, src, N, DPC_MEM_HOST, desc, &h), DPC_OK);
    ck_assert_int_eq(tp->ops->import(tp, 0, desc, &remote), DPC_OK);
    ck_assert(!dpc_ucx_work_pending(ux));
    done_t g = {0};
    dpc_xfer_t *x;
    ck_assert_int_eq(tp->ops->iget(tp, 0, remote, 0, dst, N, DPC_MEM_HOST, cb, &g, &x), DPC_OK);
    ck_assert_int_eq(g.calls, 0);             /* (its end comes from progress) */
    ck_assert(dpc_ucx_work_pending(ux));
    ck_assert_int_eq(dpc_ucx_arm(ux), DPC_UCX_ARM_BUSY);
    drive(&g, 1);
    ck_assert_int_eq(g.st, DPC_OK);
    ck_assert_int_eq(memcmp(src, dst, N), 0);
    ck_assert(!dpc_ucx_work_pending(ux));
    /* a record nobody has asked for: busy, but no work */
    done_t s = {0};
    send(77, src, 16, &s);
    for (int i = 0; i < 10; i++)
        tp->ops->progress(tp);
    ck_assert_int_eq(dpc_ucx_arm(ux), DPC_UCX_ARM_BUSY);
    ck_assert(!dpc_ucx_work_pending(ux));
    done_t r = {0};
    recv(77, dst, 16, &r);
    drive(&r, 1);
    tp->ops->unimport(tp, remote);
    tp->ops->unexpose(tp, h);
    free(src);
    free(dst);
    teardown();
}
END_TEST

/* The mailboxes at their largest (DPC_SHM_MAX_MSG, 64 KiB): a message of
 * that size goes by a record (sent and received now), one byte more by the
 * rendezvous; one kept aside for a later receive gets a block of its own
 * size (larger than the reused spares) and arrives whole. */
START_TEST(test_largest_message)
{
    setup_max(1, DPC_SHM_MAX_MSG);
    const size_t M = DPC_SHM_MAX_MSG;
    ck_assert_uint_eq(M, dpc_shm_max_msg(1));
    ck_assert(tp->ops->now_way(tp, 0, M, DPC_MEM_HOST, true));
    ck_assert(!tp->ops->now_way(tp, 0, M + 1, DPC_MEM_HOST, true));
    char *a = pattern(M + 1, 5), *b = pattern(M, 6), *got = calloc(1, M + 1);
    ck_assert_int_eq(tp->ops->send_now(tp, 0, 60, a, M, DPC_MEM_HOST), DPC_OK);
    ck_assert_int_eq(tp->ops->recv_now(tp, 0, 60, got, M, DPC_MEM_HOST), DPC_OK);
    ck_assert_int_eq(memcmp(a, got, M), 0);
    ck_assert_int_eq(tp->ops->send_now(tp, 0, 61, a, M + 1, DPC_MEM_HOST), DPC_INPROGRESS);
    /* 62 waits for a receive; one for 63, behind it, moves it aside */
    done_t s[3] = {{0}}, r[3] = {{0}};
    send(62, a, M, &s[0]);
    send(63, b, M, &s[1]);
    send(64, a, M + 1, &s[2]);               /* beyond: the rendezvous */
    memset(got, 0, M + 1);
    char *got2 = calloc(1, M), *got3 = calloc(1, M + 1);
    recv(63, got2, M, &r[1]);
    drive(&r[1], 1);
    ck_assert_int_eq(r[1].st, DPC_OK);
    ck_assert_int_eq(memcmp(b, got2, M), 0);
    recv(62, got, M, &r[0]);
    recv(64, got3, M + 1, &r[2]);
    drive(r, 3);
    drive(s, 3);
    for (int k = 0; k < 3; k++)
        ck_assert_msg(s[k].st == DPC_OK && r[k].st == DPC_OK, "transfer %d: %s / %s", k,
                      dpc_status_str(s[k].st), dpc_status_str(r[k].st));
    ck_assert_int_eq(memcmp(a, got, M), 0);
    ck_assert_int_eq(memcmp(a, got3, M + 1), 0);
    free(a);
    free(b);
    free(got);
    free(got2);
    free(got3);
    teardown();
}
END_TEST

/* A job on two nodes, seen from process 0: process 1 is on another node
 * (slot -1, its pid 0: not readable). Both processes' addresses are our
 * own worker's, so a group of process 1 alone talks to us by UCX, and a
 * group of process 0 alone through our ring. */
static void setup_two_nodes(void)
{
    char err[256], prefix[64];
    ck_assert_int_eq(dpc_ucx_create(0, 0, &ux, err, sizeof(err)), DPC_OK);
    const void *addr;
    size_t len;
    ck_assert_int_eq(dpc_ucx_address(ux, &addr, &len), DPC_OK);
    size_t offs[2] = {0, 0}, lens[2] = {len, len};
    ck_assert_int_eq(dpc_ucx_set_peers(ux, 2, addr, offs, lens), DPC_OK);
    snprintf(prefix, sizeof(prefix), "/dpcoll-test2.%ld", (long)getpid());
    ck_assert_int_eq(dpc_shm_create(prefix, 1, 0, &shm, err, sizeof(err)), DPC_OK);
    ck_assert_int_eq(dpc_shm_attach(shm, err, sizeof(err)), DPC_OK);
    dpc_shm_unlink(shm);
    /* the slots must name the segment's one process once, and no more */
    int none[2] = {-1, -1}, twice[2] = {0, 0}, beyond[2] = {0, 1}, bad[2] = {-2, 0};
    ck_assert_int_eq(dpc_ucx_set_shm(ux, shm, none, 8192), DPC_ERR_ARG);
    ck_assert_int_eq(dpc_ucx_set_shm(ux, shm, twice, 8192), DPC_ERR_ARG);
    ck_assert_int_eq(dpc_ucx_set_shm(ux, shm, beyond, 8192), DPC_ERR_ARG);
    ck_assert_int_eq(dpc_ucx_set_shm(ux, shm, bad, 8192), DPC_ERR_ARG);
    ck_assert_int_eq(dpc_ucx_set_shm(ux, shm, NULL, 8192), DPC_ERR_ARG);   /* 2 processes, 1 box */
    int slots[2] = {0, -1};
    ck_assert_int_eq(dpc_ucx_set_shm(ux, shm, slots, 8192), DPC_OK);
    int64_t pids[2] = {getpid(), 0};
    ck_assert_int_eq(dpc_ucx_set_cma(ux, 2, pids), DPC_OK);
}

static bool ring_empty(void)
{
    uint64_t tag;
    unsigned kind;
    const void *data;
    size_t len;
    return !dpc_shm_peek(shm, 0, &tag, &kind, &data, &len);
}

/* Each message goes the way its peer's node says: through the ring (small,
 * or a large one's description) to a process of this node, by UCX to one
 * of another; a group with a member elsewhere has no one-sided reads,
 * prices by UCX's eager limit and asks for acknowledgements. */
START_TEST(test_other_node)
{
    setup_two_nodes();
    int here = 0, there = 1, both[2] = {0, 1};
    dpc_transport_t *near, *far, *mixed;
    ck_assert_int_eq(dpc_ucx_group_create(ux, 0, 1, &here, &near), DPC_OK);
    ck_assert_int_eq(dpc_ucx_group_create(ux, 0, 1, &there, &far), DPC_OK);
    ck_assert_int_eq(dpc_ucx_group_create(ux, 0, 2, both, &mixed), DPC_OK);
    int out_of_range = 2;
    dpc_transport_t *bad = NULL;
    ck_assert_int_eq(dpc_ucx_group_create(ux, 0, 1, &out_of_range, &bad), DPC_ERR_ARG);
    ck_assert(dpc_transport_one_sided(near));
    ck_assert(!dpc_transport_one_sided(far));
    ck_assert(!dpc_transport_one_sided(mixed));
    ck_assert_uint_eq(near->eager_max, 8192);
    ck_assert_uint_eq(near->ack_min, 0);
    ck_assert_uint_gt(mixed->ack_min, 0);
    ck_assert_uint_eq(mixed->ack_min, far->ack_min);
    ck_assert_uint_eq(mixed->eager_max, far->eager_max);

    enum { BIG = 100000 };
    char *a = pattern(BIG, 9), *got = calloc(1, BIG);
    int v = 7, w = 0;
    done_t s = {0}, r = {0};
    dpc_xfer_t *x;
    /* to the other node: nothing in our ring, nor to send or take now */
    ck_assert_int_eq(far->ops->send_now(far, 0, 3, &v, sizeof(v), DPC_MEM_HOST), DPC_INPROGRESS);
    ck_assert(!far->ops->now_way(far, 0, sizeof(v), DPC_MEM_HOST, true));
    ck_assert(near->ops->now_way(near, 0, sizeof(v), DPC_MEM_HOST, true));
    ck_assert_int_eq(far->ops->isend(far, 0, 3, &v, sizeof(v), DPC_MEM_HOST, cb, &s, &x), DPC_OK);
    for (int i = 0; i < 10; i++)
        far->ops->progress(far);
    ck_assert_msg(ring_empty(), "a message to another node went through the mailbox");
    ck_assert_int_eq(far->ops->irecv(far, 0, 3, &w, sizeof(w), DPC_MEM_HOST, cb, &r, &x), DPC_OK);
    for (int i = 0; i < 100000 && (s.calls == 0 || r.calls == 0); i++)
        far->ops->progress(far);
    ck_assert_int_eq(s.calls + r.calls, 2);
    ck_assert_int_eq(r.st, DPC_OK);
    ck_assert_int_eq(w, 7);
    /* a large one too: by UCX, whole */
    s = r = (done_t){0};
    ck_assert_int_eq(far->ops->isend(far, 0, 4, a, BIG, DPC_MEM_HOST, cb, &s, &x), DPC_OK);
    ck_assert_int_eq(far->ops->irecv(far, 0, 4, got, BIG, DPC_MEM_HOST, cb, &r, &x), DPC_OK);
    for (int i = 0; i < 100000 && (s.calls == 0 || r.calls == 0); i++)
        far->ops->progress(far);
    ck_assert_int_eq(s.st, DPC_OK);
    ck_assert_int_eq(r.st, DPC_OK);
    ck_assert_int_eq(memcmp(a, got, BIG), 0);
    ck_assert(ring_empty());
    /* to this node: the record waits in the ring until asked for */
    s = r = (done_t){0};
    w = 0;
    ck_assert_int_eq(near->ops->isend(near, 0, 5, &v, sizeof(v), DPC_MEM_HOST, cb, &s, &x),
                     DPC_OK);
    for (int i = 0; i < 10; i++)
        near->ops->progress(near);
    ck_assert_msg(!ring_empty(), "a message within the node did not go through the mailbox");
    ck_assert_int_eq(near->ops->recv_now(near, 0, 5, &w, sizeof(w), DPC_MEM_HOST), DPC_OK);
    ck_assert_int_eq(w, 7);
    ck_assert(ring_empty());
    dpc_ucx_group_destroy(near);
    dpc_ucx_group_destroy(far);
    dpc_ucx_group_destroy(mixed);
    free(a);
    free(got);
    dpc_ucx_destroy(ux);
}
END_TEST

int main(void)
{
    Suite *su = suite_create("mailbox");
    TCase *tc = tcase_create("mailbox");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, test_left_in_ring);
    tcase_add_test(tc, test_match_order);
    tcase_add_test(tc, test_full_ring);
    tcase_add_test(tc, test_cancel_and_large);
    tcase_add_test(tc, test_now);
    tcase_add_test(tc, test_polled_behind_another);
    tcase_add_test(tc, test_rndv_basic);
    tcase_add_test(tc, test_rndv_now);
    tcase_add_test(tc, test_rndv_fin_behind_record);
    tcase_add_test(tc, test_rndv_fin_waits_for_room);
    tcase_add_test(tc, test_rndv_deferred);
    tcase_add_test(tc, test_largest_message);
    tcase_add_test(tc, test_work_pending);
    tcase_add_test(tc, test_other_node);
    suite_add_tcase(su, tc);
    return check_run(su);
}
