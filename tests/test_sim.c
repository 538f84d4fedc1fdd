/*
 * The simulated transport itself: matching on (source, tag) whatever the
 * order of posting, callbacks only from progress, counters per rank and per
 * peer, seeded reordering (repeatable, and really reordering), faults, and
 * the rendezvous rule (a send completes only when received).
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include <stdlib.h>
#include <string.h>
#include "dpc_sim.h"

typedef struct { int calls; dpc_status_t st; int order; } done_t;
static int completion_clock;

static void cb(void *arg, dpc_status_t st)
{
    done_t *d = arg;
    d->calls++;
    d->st = st;
    d->order = completion_clock++;
}

static void progress_all(dpc_sim_t *sim)
{
    for (int r = 0; r < dpc_sim_size(sim); r++) {
        dpc_transport_t *tp = dpc_sim_transport(sim, r);
        tp->ops->progress(tp);
    }
}

START_TEST(test_tag_matching)
{
    dpc_sim_opts_t o = {.per_peer_counters = true};
    dpc_sim_t *sim = dpc_sim_create(3, &o);
    dpc_transport_t *t0 = dpc_sim_transport(sim, 0), *t1 = dpc_sim_transport(sim, 1),
                    *t2 = dpc_sim_transport(sim, 2);
    int a = 11, b = 22, c = 33, ra = 0, rb = 0, rc = 0;
    done_t d[6] = {{0}};
    dpc_xfer_t *x;
    /* receives posted in the opposite order of the sends, one from another source */
    ck_assert_int_eq(t1->ops->irecv(t1, 0, 2, &rb, sizeof(int), DPC_MEM_HOST, cb, &d[0], &x), DPC_OK);
    ck_assert_int_eq(t1->ops->irecv(t1, 2, 1, &rc, sizeof(int), DPC_MEM_HOST, cb, &d[1], &x), DPC_OK);
    ck_assert_int_eq(t0->ops->isend(t0, 1, 1, &a, sizeof(int), DPC_MEM_HOST, cb, &d[2], &x), DPC_OK);
    ck_assert_int_eq(t0->ops->isend(t0, 1, 2, &b, sizeof(int), DPC_MEM_HOST, cb, &d[3], &x), DPC_OK);
    ck_assert_int_eq(t2->ops->isend(t2, 1, 1, &c, sizeof(int), DPC_MEM_HOST, cb, &d[4], &x), DPC_OK);
    dpc_sim_deliver(sim);
    /* the (0, tag 1) message waits as unexpected until its receive comes */
    ck_assert_int_eq(t1->ops->irecv(t1, 0, 1, &ra, sizeof(int), DPC_MEM_HOST, cb, &d[5], &x), DPC_OK);
    ck_assert_int_eq(d[5].calls, 0);      /* never from inside irecv */
    progress_all(sim);
    ck_assert_int_eq(ra, 11);
    ck_assert_int_eq(rb, 22);
    ck_assert_int_eq(rc, 33);
    for (int i = 0; i < 6; i++) {
        ck_assert_int_eq(d[i].calls, 1);
        ck_assert_int_eq(d[i].st, DPC_OK);
    }
    ck_assert_uint_eq(dpc_sim_msgs_sent(sim, 0), 2);
    ck_assert_uint_eq(dpc_sim_bytes_sent(sim, 0), 2 * sizeof(int));
    ck_assert_uint_eq(dpc_sim_bytes_to(sim, 2, 1), sizeof(int));
    ck_assert_uint_eq(dpc_sim_msgs_to(sim, 0, 1), 2);
    ck_assert_uint_eq(dpc_sim_msgs_to(sim, 1, 0), 0);
    ck_assert_int_eq(dpc_sim_pending(sim), 0);
    dpc_sim_destroy(sim);
}
END_TEST

START_TEST(test_rendezvous)
{
    /* a send with no receive stays incomplete however long we wait */
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    dpc_transport_t *t0 = dpc_sim_transport(sim, 0);
    int v = 5;
    done_t d = {0};
    dpc_xfer_t *x;
    t0->ops->isend(t0, 1, 9, &v, sizeof(v), DPC_MEM_HOST, cb, &d, &x);
    for (int i = 0; i < 10; i++) {
        dpc_sim_deliver(sim);
        progress_all(sim);
    }
    ck_assert_int_eq(d.calls, 0);
    t0->ops->cancel(t0, x);
    progress_all(sim);
    ck_assert_int_eq(d.calls, 1);
    ck_assert_int_eq(d.st, DPC_ERR_CANCELED);
    ck_assert_int_eq(dpc_sim_pending(sim), 0);
    dpc_sim_destroy(sim);
}
END_TEST

/* the order in which 8 messages to one rank are delivered, for a seed */
static void delivery_order(uint64_t seed, int *order)
{
    dpc_sim_opts_t o = {.reorder_seed = seed};
    dpc_sim_t *sim = dpc_sim_create(2, &o);
    dpc_transport_t *t0 = dpc_sim_transport(sim, 0), *t1 = dpc_sim_transport(sim, 1);
    int v[8], r[8];
    done_t d[8] = {{0}};
    dpc_xfer_t *x;
    completion_clock = 0;
    for (int i = 0; i < 8; i++) {
        v[i] = i;
        t1->ops->irecv(t1, 0, (uint64_t)i, &r[i], sizeof(int), DPC_MEM_HOST, cb, &d[i], &x);
    }
    done_t sd[8] = {{0}};
    for (int i = 0; i < 8; i++)
        t0->ops->isend(t0, 1, (uint64_t)i, &v[i], sizeof(int), DPC_MEM_HOST, cb, &sd[i], &x);
    int rounds = 0;
    while (dpc_sim_pending(sim) && rounds++ < 100) {
        dpc_sim_deliver(sim);
        t1->ops->progress(t1);   /* records receive completion order */
        t0->ops->progress(t0);
    }
    for (int i = 0; i < 8; i++) {
        ck_assert_int_eq(r[i], i);
        order[i] = d[i].order;
    }
    dpc_sim_destroy(sim);
}

START_TEST(test_reordering)
{
    int a[8], b[8], c[8], in_order[8];
    delivery_order(0, in_order);
    for (int i = 0; i < 8; i++)
        ck_assert_int_eq(in_order[i], i);           /* no seed: FIFO */
    delivery_order(42, a);
    delivery_order(42, b);
    ck_assert_mem_eq(a, b, sizeof(a));              /* same seed: same order */
    int differs = 0;
    for (uint64_t seed = 1; seed < 20 && !differs; seed++) {
        delivery_order(seed, c);
        differs = memcmp(c, in_order, sizeof(c)) != 0;
    }
    ck_assert_msg(differs, "seeded delivery never left FIFO order");
}
END_TEST

START_TEST(test_faults)
{
    dpc_sim_t *sim = dpc_sim_create(3, NULL);
    dpc_transport_t *t0 = dpc_sim_transport(sim, 0), *t1 = dpc_sim_transport(sim, 1),
                    *t2 = dpc_sim_transport(sim, 2);
    int v = 1, r = 0;
    done_t d[4] = {{0}};
    dpc_xfer_t *x;
    /* 2nd send of rank 0 fails at once, without a callback */
    dpc_sim_fail_send(sim, 0, 2);
    ck_assert_int_eq(t0->ops->isend(t0, 1, 0, &v, sizeof(v), DPC_MEM_HOST, cb, &d[0], &x), DPC_OK);
    ck_assert_int_eq(t0->ops->isend(t0, 1, 1, &v, sizeof(v), DPC_MEM_HOST, cb, &d[1], &x),
                     DPC_ERR_TRANSPORT);
    /* 1st receive of rank 1 completes with an error */
    dpc_sim_fail_recv(sim, 1, 1);
    ck_assert_int_eq(t1->ops->irecv(t1, 0, 0, &r, sizeof(r), DPC_MEM_HOST, cb, &d[2], &x), DPC_OK);
    progress_all(sim);
    ck_assert_int_eq(d[2].st, DPC_ERR_TRANSPORT);
    ck_assert_int_eq(d[1].calls, 0);
    /* rank 2 dies: what was in flight from it and what is posted for it fail */
    ck_assert_int_eq(t1->ops->irecv(t1, 2, 5, &r, sizeof(r), DPC_MEM_HOST, cb, &d[3], &x), DPC_OK);
    dpc_sim_kill(sim, 2);
    progress_all(sim);
    ck_assert_int_eq(d[3].st, DPC_ERR_PEER_LOST);
    ck_assert_int_eq(t2->ops->isend(t2, 0, 0, &v, sizeof(v), DPC_MEM_HOST, cb, &d[3], &x),
                     DPC_ERR_PEER_LOST);
    dpc_sim_destroy(sim);    /* frees what is still queued (rank 0's first send) */
}
END_TEST

int main(void)
{
    Suite *su = suite_create("sim");
    TCase *tc = tcase_create("transport");
    tcase_add_test(tc, test_tag_matching);
    tcase_add_test(tc, test_rendezvous);
    tcase_add_test(tc, test_reordering);
    tcase_add_test(tc, test_faults);
    suite_add_tcase(su, tc);
    return check_run(su);
}
