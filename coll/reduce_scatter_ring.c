/*
 * Reduce-scatter (equal blocks and per-rank counts), ring: the first half of
 * the ring allreduce (ring.h). Rank r ends with the reduction of block r; the
 * partial results travel in schedule scratch, one block per step.
 *
 * Restrictions: any p, any counts (zero-sized blocks send nothing); op
 * commutative (blocks are reduced in ring order).
 *
 * Cost (n = total input bytes, S segments per block, b the smallest
 *   block): (p-1) S alpha + (n - b) (beta + gamma): a rank receives and
 *   reduces every block but one, the busiest all but the smallest
 *   (shares.h); equal blocks: (p-1)/p n (beta + gamma).
 * Bytes sent by rank r, exactly: n - b(r), with b(i) = counts[i] elements.
 */
#include "config.h"
#include "coll_util.h"
#include "ring.h"
#include "shares.h"

/* Segments through the mailboxes for vectors up to this (reduce_seg_bytes).
 * Measured faster than the direct reduce-scatter up to 16 MiB on buffers
 * of 4 KiB pages (docs/bench/s41); with reused buffers made of huge pages
 * (dpc_hugepage.h), which speed cross-memory attach and not the mailboxes,
 * up to 4 MiB only (8 and 16 MiB: 631-940 and 1787-2233 us against the
 * direct one's 530-669 and 1177-1429, docs/bench/s42/hugepages.txt). */
#define MAILBOX_SEGS_UP_TO (4u << 20)

static size_t seg_bytes(const dpc_coll_args_t *a)
{
    return reduce_seg_bytes(a, MAILBOX_SEGS_UP_TO);
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, pos, *order = NULL;
    const char *in = input_of(a);
    char *out = a->rbuf;
    size_t *off, *len;
    if (rank_blocks(a, 1, &off, &len))
        return DPC_ERR_NOMEM;
    dpc_status_t st = DPC_OK;
    if (p == 1) {
        if (!a->in_place && len[0])
            dpc_sched_copy(s, out, in, len[0], DPC_NO_DEPS);
        goto out;
    }
    /* (ranks on several nodes: each node's together, each position owning
     * its rank's block; ring.h) */
    if (ring_node_order(a, a->rank, &order, &pos) ||
        ring_blocks_by_position(order, p, off, len)) {
        st = DPC_ERR_NOMEM;
        goto out;
    }
    ring_phase_t rp = {.s = s, .p = p, .me = pos, .shift = 0, .members = order, .boff = off,
                       .blen = len, .seg = ring_seg_bytes(seg_bytes(a), elsize(a), p, len),
                       .tag0 = 0, .after = DPC_STEP_NONE};
    if (!a->in_place) {
        ring_reduce_scatter_phase(&rp, in, NULL, out, a->dtype, a->op);
    } else {
        /* in place the result belongs at the start of rbuf, which is input
         * other blocks are still sent from: finish in scratch, then copy */
        char *res = dpc_sched_scratch(s, len[pos]);
        dpc_step_id_t done = ring_reduce_scatter_phase(&rp, in, NULL, res, a->dtype, a->op);
        if (res && len[pos])
            dpc_sched_copy(s, out, res, len[pos], DPC_AFTER(done));
    }
out:
    free(off);
    free(len);
    free(order);
    return st;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    size_t seg = seg_bytes(a);
    shares_t sh = shares_of(a, seg);
    double n = (double)sh.total, bmin = (double)sh.min;
    return sh.busiest_segs * msg_alpha(a, c, (double)sh.max / seg_count(sh.max, seg)) +
           (n - bmin) * (c->beta + c->gamma);
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    if (a->size == 1)
        return 0;
    return total_bytes(a) - blk_count(a, r) * elsize(a);
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    size_t *off, *len;
    if (a->size == 1 || rank_blocks(a, 1, &off, &len))
        return 0;
    uint64_t m = ring_rs_phase_msgs(a->size, r, len,
                                    ring_seg_bytes(seg_bytes(a), elsize(a), a->size, len));
    free(off);
    free(len);
    return m;
}

const dpc_algo_t dpc_algo_reduce_scatter_block_ring = {
    .name = "ring", .coll = DPC_REDUCE_SCATTER_BLOCK, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_reduce_scatter_ring = {
    .name = "ring", .coll = DPC_REDUCE_SCATTER, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
