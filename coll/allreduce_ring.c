/*
 * Allreduce, ring (Patarasuk & Yuan 2009): a reduce-scatter around the ring
 * leaves rank r with the reduction of block r, then an allgather around the
 * ring hands every block to everyone. Blocks are cut into segments that are
 * pipelined (see ring.h), so large buffers keep the links and the reduction
 * busy at once.
 *
 * Restrictions: any p, any count; the op must be commutative (a block is
 * reduced in ring order, starting at its owner's right neighbour, not in rank
 * order) - all MPI predefined ops are. Every rank receives each final block
 * bit for bit from its owner, so results are identical on all ranks.
 *
 * Cost (n bytes, S segments per block): 2(p-1)S alpha + 2(p-1)/p n beta
 *   + (p-1)/p n gamma. Bandwidth-optimal: no allreduce sends less.
 * Bytes sent by rank r, exactly: 2n - b(r) - b((r+1) mod p), where b(i) is
 * block i's size: count/p elements, one more for i < count mod p.
 */
#include "config.h"
#include "coll_util.h"
#include "ring.h"

/* Segments through the mailboxes for vectors up to this (reduce_seg_bytes:
 * measured faster up to there, docs/bench/s41) */
#define MAILBOX_SEGS_UP_TO (1u << 20)

static size_t seg_bytes(const dpc_coll_args_t *a)
{
    return reduce_seg_bytes(a, MAILBOX_SEGS_UP_TO);
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, pos, *order;
    size_t es = elsize(a);
    const char *in = input_of(a);
    char *out = a->rbuf;
    size_t *off, *len;
    if (a->count == 0)
        return DPC_OK;
    if (p == 1) {
        if (!a->in_place)
            dpc_sched_copy(s, out, in, a->count * es, DPC_NO_DEPS);
        return DPC_OK;
    }
    /* (ranks on several nodes: each node's together, ring.h) */
    if (ring_node_order(a, a->rank, &order, &pos))
        return DPC_ERR_NOMEM;
    if (even_blocks(a->count, es, p, &off, &len)) {
        free(order);
        return DPC_ERR_NOMEM;
    }
    ring_phase_t rp = {.s = s, .p = p, .me = pos, .shift = 0, .members = order, .boff = off,
                       .blen = len, .seg = ring_seg_bytes(seg_bytes(a), es, p, len),
                       .tag0 = 0, .after = DPC_STEP_NONE};
    /* partials accumulate straight in the receive buffer */
    dpc_step_id_t rs = ring_reduce_scatter_phase(&rp, in, out, out + off[pos], a->dtype, a->op);
    rp.tag0 = ring_phase_tags(&rp);
    rp.after = rs;
    ring_allgather_phase(&rp, out);
    free(off);
    free(len);
    free(order);
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double p = a->size, n = (double)(a->count * elsize(a));
    double S = seg_count((size_t)(n / p), seg_bytes(a));
    return 2 * (p - 1) * S * msg_alpha(a, c, n / p / S) + 2 * (p - 1) / p * n * c->beta +
           (p - 1) / p * n * c->gamma;
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    int p = a->size, pos = ring_position(a, r);
    size_t es = elsize(a), n = a->count * es;
    if (p == 1 || n == 0)
        return 0;
    return 2 * n - part_len(a->count, p, pos) * es - part_len(a->count, p, mod(pos + 1, p)) * es;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    int p = a->size, pos = ring_position(a, r);
    size_t es = elsize(a), *off, *len;
    if (p == 1 || a->count == 0 || even_blocks(a->count, es, p, &off, &len))
        return 0;
    size_t seg = ring_seg_bytes(seg_bytes(a), es, p, len);
    uint64_t m = ring_rs_phase_msgs(p, pos, len, seg) + ring_ag_phase_msgs(p, pos, len, seg, NULL);
    free(off);
    free(len);
    return m;
}

const dpc_algo_t dpc_algo_allreduce_ring = {
    .name = "ring", .coll = DPC_ALLREDUCE, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
