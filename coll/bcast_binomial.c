/*
 * Broadcast (any root), binomial tree, pipelined in segments. With relative
 * rank v = (r - root) mod p, a rank receives from v minus its lowest set bit
 * and sends to v + 2^i for every 2^i below that bit (largest subtree first).
 * Each segment is forwarded as soon as it has arrived.
 *
 * Restrictions: none. Cost (n bytes, S segments): ceil(log2 p) (S alpha
 *   + n beta): the root sends the whole buffer once per child.
 * Bytes sent by rank r: n times its number of children, where relative rank
 *   v has one child v + 2^i < p for each 2^i < lowbit(v) (for v = 0: 2^i < p).
 */
#include "config.h"
#include "coll_util.h"

/* Segment size: one tag per segment, so at most DPC_STEP_TAG_MAX of them.
 * With two ranks nothing is forwarded, so there is nothing to pipeline and
 * the buffer goes as one message (one rendezvous instead of many). */
static size_t seg_bytes(const dpc_coll_args_t *a)
{
    size_t n = a->count * elsize(a), seg = a->size == 2 && n ? n : dpc_seg_bytes(a);
    while (nsegs(n, seg) > DPC_STEP_TAG_MAX)
        seg *= 2;
    return seg;
}

static int children(int v, int p)
{
    int c = 0;
    for (int m = 1; m < tree_lowbit(v, p); m *= 2)
        c += v + m < p;
    return c;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, v = mod(a->rank - a->root, p);
    size_t n = a->count * elsize(a);
    size_t seg = seg_bytes(a), ns = nsegs(n, seg);
    char *buf = a->rbuf;
    int lb = tree_lowbit(v, p);
    if (p == 1 || n == 0)
        return DPC_OK;
    int parent = v ? mod(v - lb + a->root, p) : -1;
    for (size_t g = 0; g < ns; g++) {
        size_t o = g * seg, len = n - o < seg ? n - o : seg;
        uint32_t tag = (uint32_t)g;
        dpc_step_id_t rv = parent >= 0 ? dpc_sched_recv(s, parent, tag, buf + o, len, DPC_NO_DEPS)
                                       : DPC_STEP_NONE;
        for (int m = lb / 2; m >= 1; m /= 2)
            if (v + m < p)
                dpc_sched_send(s, mod(v + m + a->root, p), tag, buf + o, len, DPC_AFTER(rv));
    }
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double n = (double)(a->count * elsize(a));
    double S = seg_count((size_t)n, seg_bytes(a));
    return log2_ceil(a->size) * (S * msg_alpha(a, c, n / S) + n * c->beta);
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    return (uint64_t)children(mod(r - a->root, a->size), a->size) * a->count * elsize(a);
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    return (uint64_t)children(mod(r - a->root, a->size), a->size) *
           nsegs(a->count * elsize(a), seg_bytes(a));
}

const dpc_algo_t dpc_algo_bcast_binomial = {
    .name = "binomial", .coll = DPC_BCAST, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
