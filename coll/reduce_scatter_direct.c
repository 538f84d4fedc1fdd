/*
 * Reduce-scatter (equal blocks and per-rank counts), direct (one-sided):
 * every rank exposes its input; rank r reads block r of each peer's input
 * into cache-sized slots and reduces it there (direct.h), then the ranks
 * agree they are all done reading.
 *
 * In place the result belongs at the start of rbuf, which is block 0 of the
 * input that rank 0 may still be reading: the result waits in scratch until
 * every peer has said it is done.
 *
 * Restrictions: host memory on a transport with one-sided reads; any
 * counts; the operands combined in the order own, r+1, r+2, ..., or for an
 * op that does not commute in rank order (direct.c: DPC_ALGO_RANK_ORDER).
 *
 * Cost (b the largest block, S its chunks): (p-1) (2 alpha + S alpha_get)
 *   + (p-1) b (beta + gamma): two messages and a read per chunk and peer,
 * by the rank whose block is largest (shares.h; equal blocks: (p-1)/p n of
 * n input bytes); nothing is sent but descriptors and notices, but the
 * reads move what a ring would send, on the reader's core (a system call
 * that returns when the bytes are in: they do not hide behind the
 * reduction). Priced without them, the model chose this algorithm at 2
 * ranks from 32 KiB to 8 MiB, where the ring (whose receiver reads the
 * same bytes the same way) took 0.6-0.8 of its time (dpcoll_bench, with
 * and without -t, session 31).
 * Messages per rank: (p-1) descriptors and (p-1) "done".
 */
#include "config.h"
#include "direct.h"
#include "shares.h"

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    const char *in = input_of(a);
    char *out = a->rbuf;
    size_t n = dpc_coll_bytes(a), es = elsize(a);
    size_t *off, *len;
    if (n == 0)
        return DPC_OK;
    if (rank_blocks(a, 1, &off, &len))
        return DPC_ERR_NOMEM;
    if (p == 1) {
        if (!a->in_place && len[0])
            dpc_sched_copy(s, out, in, len[0], DPC_NO_DEPS);
        goto out;
    }
    direct_t d;
    void *bufs[1] = {(void *)in};
    if (direct_exchange(&d, s, p, r, bufs, &n, 1) != DPC_OK) {
        free(off);
        free(len);
        return DPC_ERR_NOMEM;
    }
    char *res = a->in_place ? dpc_sched_scratch(s, len[r]) : out;
    dpc_step_id_t mine = DPC_STEP_NONE;
    if (res)
        mine = direct_reduce_block(&d, 0, off[r], in + off[r], res, len[r] / es, a->dtype,
                                   a->op, dpc_seg_bytes(a), -1, 0);
    dpc_step_id_t all = direct_finish(&d, mine);
    if (a->in_place && res && len[r])
        dpc_sched_copy(s, out, res, len[r], DPC_AFTER(all));
    direct_free(&d);
out:
    free(off);
    free(len);
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double p = a->size;
    size_t b = shares_of(a, 0).max;
    double S = seg_count(b, dpc_seg_bytes(a));
    return (p - 1) * (2 * c->alpha + S * c->alpha_get) + (p - 1) * (double)b * (c->beta + c->gamma);
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    (void)r;
    return direct_bytes_sent(a, 1);
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    (void)r;
    return direct_msgs_sent(a);
}

const dpc_algo_t dpc_algo_reduce_scatter_block_direct = {
    .name = "direct", .coll = DPC_REDUCE_SCATTER_BLOCK, .flags = DPC_ALGO_ONE_SIDED | DPC_ALGO_RANK_ORDER,
    .build = build, .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_reduce_scatter_direct = {
    .name = "direct", .coll = DPC_REDUCE_SCATTER, .flags = DPC_ALGO_ONE_SIDED | DPC_ALGO_RANK_ORDER,
    .build = build, .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
