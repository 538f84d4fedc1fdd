/*
 * Allgather (equal blocks and per-rank counts with displacements), ring: each
 * of p-1 steps forwards to the right the block received from the left in the
 * step before, straight into rbuf; segments are pipelined (ring.h).
 *
 * Restrictions: none (any p, any counts and displacements).
 * Cost (n = total bytes gathered, S segments per block, b the smallest
 *   block): (p-1) S alpha + (n - b) beta + b beta (the own block's copy, not
 *   in place): the rank with the smallest block receives the most
 *   (shares.h); equal blocks: (p-1)/p n beta + n/p beta.
 * Bytes sent by rank r, exactly: n - b((r+1) mod p): every block but the
 * right neighbour's.
 */
#include "config.h"
#include "coll_util.h"
#include "ring.h"
#include "shares.h"

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank, pos, *order = NULL;
    char *out = a->rbuf;
    size_t *off, *len;
    if (rank_blocks(a, 0, &off, &len))
        return DPC_ERR_NOMEM;
    dpc_status_t st = DPC_OK;
    dpc_step_id_t own = DPC_STEP_NONE;
    if (!a->in_place && len[r])
        own = dpc_sched_copy(s, out + off[r], a->sbuf, len[r], DPC_NO_DEPS);
    /* (ranks on several nodes: each node's together, each position owning
     * its rank's block; ring.h) */
    if (p > 1 && (ring_node_order(a, r, &order, &pos) ||
                  ring_blocks_by_position(order, p, off, len)))
        st = DPC_ERR_NOMEM;
    else if (p > 1) {
        /* the own block leaves from the input while it is also copied into
         * place: neither waits for the other */
        ring_phase_t rp = {.s = s, .p = p, .me = pos, .shift = 0, .members = order, .boff = off,
                           .blen = len,
                           .seg = ring_seg_bytes(dpc_seg_bytes(a), elsize(a), p, len),
                           .tag0 = 0, .after = a->in_place ? own : DPC_STEP_NONE,
                           .own_src = a->in_place ? NULL : a->sbuf};
        ring_allgather_phase(&rp, out);
    }
    free(off);
    free(len);
    free(order);
    return st;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    size_t seg = dpc_seg_bytes(a);
    shares_t sh = shares_of(a, seg);
    double n = (double)sh.total, bmin = (double)sh.min;
    return sh.busiest_segs * msg_alpha(a, c, (double)sh.max / seg_count(sh.max, seg)) +
           (n - bmin) * c->beta + own_copy_cost(a, bmin, c);
}

/* Every block but the one of r's right neighbour on the ring. */
static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    if (a->size == 1)
        return 0;
    int right = ring_member(a, mod(ring_position(a, r) + 1, a->size));
    return total_bytes(a) - blk_count(a, right) * elsize(a);
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    int pos, *order = NULL;
    size_t *off, *len;
    if (a->size == 1 || rank_blocks(a, 0, &off, &len))
        return 0;
    uint64_t m = 0;
    if (!ring_node_order(a, r, &order, &pos) && !ring_blocks_by_position(order, a->size, off, len))
        m = ring_ag_phase_msgs(a->size, pos, len,
                               ring_seg_bytes(dpc_seg_bytes(a), elsize(a), a->size, len), NULL);
    free(off);
    free(len);
    free(order);
    return m;
}

const dpc_algo_t dpc_algo_allgather_ring = {
    .name = "ring", .coll = DPC_ALLGATHER, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_allgatherv_ring = {
    .name = "ring", .coll = DPC_ALLGATHERV, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
