/*
 * Reduce-scatter (equal blocks and per-rank counts), recursive doubling:
 * every rank reduces the whole vector by recursive doubling (rd.h) into
 * scratch and keeps its own block.
 *
 * Why: the other reduce-scatters combine a block's operands in an order of
 * their own (the ring's starts at the block's successor; recursive halving
 * pairs ranks p'/2 apart first), which is fine for a commutative op; an op
 * that does not commute must be combined in rank order, and the doubling
 * does that for any p (DPC_ALGO_RANK_ORDER). It moves the whole vector at
 * each step, so the model picks it only where nothing else may run.
 *
 * Restrictions: any p, any counts.
 * Cost (n = total input bytes, L = log2 p'): that of the allreduce by
 *   recursive doubling of n bytes, plus the copy of the own block.
 * Bytes sent and messages: the allreduce's.
 */
#include "config.h"
#include "coll_util.h"
#include "rd.h"
#include "shares.h"

extern const dpc_algo_t dpc_algo_allreduce_recursive_doubling;

/* The same call as an allreduce of the whole vector. */
static dpc_coll_args_t as_allreduce(const dpc_coll_args_t *a, size_t total)
{
    dpc_coll_args_t w = *a;
    w.coll = DPC_ALLREDUCE;
    w.count = total;
    w.counts = w.displs = NULL;
    w.in_place = false;
    return w;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    /* the blocks lie in rank order in the input: own block at the sum of
     * the counts before it */
    size_t es = elsize(a), n = total_bytes(a), own = blk_count(a, a->rank) * es, at = 0;
    for (int i = 0; i < a->rank; i++)
        at += blk_count(a, i) * es;
    if (n == 0)
        return DPC_OK;
    char *whole = dpc_sched_scratch(s, n);
    if (!whole)
        return DPC_ERR_NOMEM;
    dpc_coll_args_t w = as_allreduce(a, n / es);
    dpc_step_id_t done = dpc_rd_allreduce_steps(&w, s, input_of(a), whole, w.count);
    if (own)
        dpc_sched_copy(s, a->rbuf, whole + at, own, DPC_AFTER(done));
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    shares_t sh = shares_of(a, 0);
    dpc_coll_args_t w = as_allreduce(a, sh.total / elsize(a));
    return dpc_algo_allreduce_recursive_doubling.cost(&w, c) +
           (double)sh.max * c->beta;   /* the largest own block's copy */
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    dpc_coll_args_t w = as_allreduce(a, total_bytes(a) / elsize(a));
    return dpc_algo_allreduce_recursive_doubling.bytes_sent(&w, r);
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    dpc_coll_args_t w = as_allreduce(a, total_bytes(a) / elsize(a));
    return dpc_algo_allreduce_recursive_doubling.msgs_sent(&w, r);
}

const dpc_algo_t dpc_algo_reduce_scatter_block_recursive_doubling = {
    .name = "recursive_doubling", .coll = DPC_REDUCE_SCATTER_BLOCK,
    .flags = DPC_ALGO_RANK_ORDER, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_reduce_scatter_recursive_doubling = {
    .name = "recursive_doubling", .coll = DPC_REDUCE_SCATTER,
    .flags = DPC_ALGO_RANK_ORDER, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
