/*
 * Broadcast (any root), scatter + ring allgather (van de Geijn): the buffer
 * is cut into p blocks indexed by relative rank v = (r - root) mod p; a
 * binomial scatter gives each rank the blocks of its subtree (contiguous:
 * [v, v + min(lowbit(v), p - v))), then a ring allgather over relative ranks
 * (ring.h, shift = root) completes everyone's copy.
 *
 * Restrictions: none. Cost (n bytes): (ceil(log2 p) - 1) alpha (the root's
 * first ring message leaves with its first scatter message) + (p-1)/p n beta
 *   for the scatter, (p-1) S alpha + (p-1)/p n beta for the allgather: about
 *   2n beta whatever p, against the binomial tree's log2(p) n beta.
 * Blocks a rank already has from the scatter are neither sent to it nor
 * received by it in the ring (the root has them all).
 * Bytes sent by relative rank v: for each child c = v + m (m < lowbit(v),
 *   c < p) the blocks [c, c + min(m, p - c)); plus, in the ring, n minus the
 *   blocks of the subtree of u = v+1 (mod p): [u, u + min(lowbit(u), p - u)).
 */
#include "config.h"
#include "coll_util.h"
#include "ring.h"

/* After the binomial scatter, relative rank v has the blocks of its
 * subtree: [v, v + min(lowbit(v), p - v)); the root has them all. */
static int subtree_blocks(int v, int p)
{
    int lb = tree_lowbit(v, p);
    return lb < p - v ? lb : p - v;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, v = mod(a->rank - a->root, p);
    size_t es = elsize(a);
    char *buf = a->rbuf;
    size_t *off, *len;
    if (p == 1 || a->count == 0)
        return DPC_OK;
    if (even_blocks(a->count, es, p, &off, &len))
        return DPC_ERR_NOMEM;
    int lb = tree_lowbit(v, p);
    int hi = v + (lb < p - v ? lb : p - v);        /* my subtree: blocks [v, hi) */
    dpc_step_id_t got = DPC_STEP_NONE, sent[64];
    int nsent = 0;
    size_t mine = off[hi - 1] + len[hi - 1] - off[v];
    if (v && mine)
        got = dpc_sched_recv(s, mod(v - lb + a->root, p), 0, buf + off[v], mine, DPC_NO_DEPS);
    for (int m = lb / 2; m >= 1; m /= 2) {
        int c = v + m;
        if (c >= p)
            continue;
        int chi = c + (m < p - c ? m : p - c);
        size_t bytes = off[chi - 1] + len[chi - 1] - off[c];
        if (bytes)
            sent[nsent++] = dpc_sched_send(s, mod(c + a->root, p), 0, buf + off[c], bytes,
                                           DPC_AFTER(got));
    }
    sent[nsent++] = got;
    /* the ring forwards blocks of this subtree: only once the scatter has
     * brought them (and sent on what the children need) */
    ring_phase_t rp = {.s = s, .p = p, .me = v, .shift = a->root, .boff = off, .blen = len,
                       .seg = ring_seg_bytes(dpc_seg_bytes(a), es, p, len),
                       .tag0 = 1, .after = dpc_sched_nop(s, sent, nsent),
                       .held = subtree_blocks};
    ring_allgather_phase(&rp, buf);
    free(off);
    free(len);
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double p = a->size, n = (double)(a->count * elsize(a));
    double S = seg_count((size_t)(n / p), dpc_seg_bytes(a));
    /* the scatter's messages halve from n/2; the ring's are segments. The
     * root holds every block from the start, so its first ring message
     * leaves with its first scatter message: that step costs one start-up,
     * not two (with 2 ranks the whole bcast is then one message's wait) */
    double t = (p - 1) * S * msg_alpha(a, c, n / p / S) + 2 * (p - 1) / p * n * c->beta;
    for (int k = 2; k <= log2_ceil(a->size); k++)
        t += msg_alpha(a, c, n / (double)(1u << k));
    return t;
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    int p = a->size, v = mod(r - a->root, p);
    size_t es = elsize(a);
    uint64_t t = 0;
    if (p == 1 || a->count == 0)
        return 0;
    for (int m = tree_lowbit(v, p) / 2; m >= 1; m /= 2) {
        int c = v + m;
        if (c < p)
            t += (part_off(a->count, p, c + (m < p - c ? m : p - c)) - part_off(a->count, p, c)) * es;
    }
    /* the ring sends every block its right neighbour does not have */
    int u = mod(v + 1, p);
    return t + (part_off(a->count, p, u) + a->count - part_off(a->count, p, u + subtree_blocks(u, p))) * es;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    int p = a->size, v = mod(r - a->root, p);
    size_t es = elsize(a), *off, *len;
    uint64_t t = 0;
    if (p == 1 || a->count == 0 || even_blocks(a->count, es, p, &off, &len))
        return 0;
    for (int m = tree_lowbit(v, p) / 2; m >= 1; m /= 2) {
        int c = v + m;
        if (c < p)
            t += part_off(a->count, p, c + (m < p - c ? m : p - c)) > part_off(a->count, p, c);
    }
    t += ring_ag_phase_msgs(p, v, len, ring_seg_bytes(dpc_seg_bytes(a), es, p, len), subtree_blocks);
    free(off);
    free(len);
    return t;
}

const dpc_algo_t dpc_algo_bcast_scatter_allgather = {
    .name = "scatter_allgather", .coll = DPC_BCAST, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
