/*
 * Allreduce, recursive doubling: in step k every rank swaps its whole vector
 * with the partner whose (new) rank differs in bit k and reduces; after
 * log2 p' steps everyone holds the total. A non-power-of-two p is folded
 * first (fold.h): each even rank r < 2 rem gives its vector to r+1 and gets
 * the result back at the end.
 *
 * Restrictions: any p, any count. Both partners reduce (lower-ranked data)
 * op (higher-ranked data), so they compute the same bits; and as step k
 * pairs aligned runs of 2^k consecutive new ranks (the fold pairs
 * neighbours too), every element is reduced in rank order: an op that does
 * not commute runs here (DPC_ALGO_RANK_ORDER).
 *
 * Cost (n bytes, L = log2 p'): L (alpha + n beta + n gamma + n beta_reread),
 *   plus 2 (alpha + n beta) + n (gamma + beta_reread) when p is not a power
 *   of two (every reduction reads a whole message received: beta_reread,
 *   dpc_cost_params_t).
 * Latency-optimal for small n; moves L n bytes, far more than the ring's
 * 2 n for large n.
 * Bytes sent by rank r: n if r sits out (even, r < 2 rem); else L n, plus n
 * for the odd ranks r < 2 rem that return the result.
 */
#include "config.h"
#include "coll_util.h"
#include "fold.h"
#include "rd.h"

dpc_step_id_t dpc_rd_allreduce_steps(const dpc_coll_args_t *a, dpc_sched_t *s, const char *in,
                                     char *out, size_t count)
{
    int p = a->size, r = a->rank;
    size_t n = count * elsize(a);
    fold_t f = fold_make(p, r);
    uint32_t tag_unfold = (uint32_t)f.steps + 1;
    if (n == 0)
        return DPC_STEP_NONE;
    if (f.newrank < 0) {             /* sits out: give, then receive the result */
        dpc_step_id_t sd = dpc_sched_send(s, r + 1, 0, in, n, DPC_NO_DEPS);
        return dpc_sched_recv(s, r + 1, tag_unfold, out, n, DPC_AFTER(sd));
    }
    char *tmp[2];
    tmp[0] = dpc_sched_scratch(s, 2 * n);
    if (!tmp[0])
        return DPC_STEP_NONE;        /* (the schedule has the error) */
    tmp[1] = tmp[0] + n;
    const char *cur = in;            /* where this rank's partial result is */
    dpc_step_id_t last = DPC_STEP_NONE, red_prev[2] = {DPC_STEP_NONE, DPC_STEP_NONE};
    if (r < 2 * f.rem) {             /* odd: take the even neighbour's vector */
        dpc_step_id_t rv = dpc_sched_recv(s, r - 1, 0, tmp[1], n, DPC_NO_DEPS);
        last = red_prev[1] = dpc_sched_reduce(s, out, tmp[1], in, count, a->dtype, a->op,
                                              DPC_AFTER(rv));
        cur = out;
    }
    for (int k = 0; k < f.steps; k++) {
        int peer = fold_rank(&f, f.newrank ^ (1 << k));
        bool lower = f.newrank < (f.newrank ^ (1 << k));
        char *t = tmp[k % 2];
        dpc_step_id_t sd = dpc_sched_send(s, peer, (uint32_t)k + 1, cur, n, DPC_AFTER(last));
        /* the slot was last read by the reduce two steps back */
        dpc_step_id_t rv = dpc_sched_recv(s, peer, (uint32_t)k + 1, t, n,
                                          DPC_AFTER(red_prev[k % 2]));
        /* overwriting cur (== out) must wait for the send reading it */
        last = dpc_sched_reduce(s, out, lower ? cur : t, lower ? t : cur, count, a->dtype,
                                a->op, DPC_AFTER(sd, rv, last));
        red_prev[k % 2] = last;
        cur = out;
    }
    if (cur != out)                  /* p == 1 */
        last = dpc_sched_copy(s, out, cur, n, DPC_AFTER(last));
    if (r < 2 * f.rem)
        dpc_sched_send(s, r - 1, tag_unfold, out, n, DPC_AFTER(last));
    return last;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    dpc_rd_allreduce_steps(a, s, input_of(a), a->rbuf, a->count);
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    fold_t f = fold_make(a->size, 0);
    double n = (double)(a->count * elsize(a));
    double t = f.steps * (msg_alpha(a, c, n) + n * (c->beta + c->gamma + c->beta_reread));
    if (f.rem)
        t += 2 * (msg_alpha(a, c, n) + n * c->beta) + n * (c->gamma + c->beta_reread);
    return t;
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    fold_t f = fold_make(a->size, r);
    uint64_t n = a->count * elsize(a);
    if (f.newrank < 0)
        return n;
    return (uint64_t)f.steps * n + (r < 2 * f.rem ? n : 0);
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    fold_t f = fold_make(a->size, r);
    if (a->count == 0)
        return 0;
    if (f.newrank < 0)
        return 1;
    return (uint64_t)f.steps + (r < 2 * f.rem ? 1 : 0);
}

const dpc_algo_t dpc_algo_allreduce_recursive_doubling = {
    .name = "recursive_doubling", .coll = DPC_ALLREDUCE, .flags = DPC_ALGO_RANK_ORDER,
    .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
