/*
 * Allgather (equal blocks and per-rank counts) across nodes, in two stages
 * of rings: the reduce-scatter's (reduce_scatter_hierarchical.c) run
 * backwards. Rank (m, i) is the rank at node m, local index i (L ranks a
 * node, N nodes). First a ring among the N ranks of local index l, one a
 * node: each gets the blocks of its "column", ranks (m, l) for every m.
 * Then, within each node, N rings side by side over the node's L ranks,
 * ring m over the blocks of node m's ranks, which the node's ranks hold
 * one each from the first stage: every rank gets every block.
 *
 * Why: the flat ring (in node order) takes p-1 steps and each node's link
 * carries (p-1)/p of the output; here N-1 steps between nodes, each node's
 * link carrying (N-1)/N of it (its ranks' columns side by side), and
 * (L-1) within the node (N messages each). Every block lands straight in
 * the output, at its rank's displacement: nothing is copied twice.
 *
 * Restrictions: ranks on 2 or more nodes, as many (2 or more) on each
 * (DPC_ALGO_NODES).
 *
 * Cost (b = the largest block, S segments of a block):
 * (N-1) S alpha_net + (N-1) b beta_net + (L-1) N (S alpha + b beta)
 *   + the own block's copy into place;
 * equal blocks: (N-1)/N n/L between nodes and (L-1)/L n within.
 */
#include "config.h"
#include "coll_util.h"
#include "node_layout.h"
#include "ring.h"
#include "shares.h"

extern const dpc_algo_t dpc_algo_allgather_hierarchical, dpc_algo_allgatherv_hierarchical;

/* The rings' blocks in the output: by node (boff, blen: node m's L blocks
 * at m * L) and the column (coff, clen: the N blocks of local index
 * `local`), with their segments. */
typedef struct ag_blocks {
    size_t *boff, *blen, *coff, *clen;
    size_t segL, segN;
} ag_blocks_t;

static void ag_blocks_free(ag_blocks_t *b)
{
    free(b->boff);
    free(b->blen);
    free(b->coff);
    free(b->clen);
}

static int ag_blocks_make(const dpc_coll_args_t *a, const node_layout_t *ly, ag_blocks_t *b)
{
    b->boff = b->blen = NULL;
    b->coff = malloc(sizeof(size_t) * (size_t)ly->N);
    b->clen = malloc(sizeof(size_t) * (size_t)ly->N);
    if (!b->coff || !b->clen || node_layout_blocks(a, ly, 0, &b->boff, &b->blen)) {
        ag_blocks_free(b);
        return -1;
    }
    for (int m = 0; m < ly->N; m++) {
        b->coff[m] = b->boff[m * ly->L + ly->local];
        b->clen[m] = b->blen[m * ly->L + ly->local];
    }
    /* (one segment for all rings, from every block: the column's ring must
     * leave the node rings the same first tag on every rank, whatever its
     * column's blocks, and all fit the step tags: ring_seg_bytes) */
    b->segL = b->segN = ring_seg_bytes(dpc_seg_bytes(a), elsize(a), a->size, b->blen);
    return 0;
}

static const dpc_algo_t *self(const dpc_coll_args_t *a)
{
    return a->coll == DPC_ALLGATHERV ? &dpc_algo_allgatherv_hierarchical
                                     : &dpc_algo_allgather_hierarchical;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    if (!dpc_algo_applies(self(a), a))
        return DPC_ERR_ARG;
    node_layout_t ly;
    ag_blocks_t b;
    if (node_layout_make(a, a->rank, &ly))
        return DPC_ERR_NOMEM;
    if (ag_blocks_make(a, &ly, &b)) {
        node_layout_free(&ly);
        return DPC_ERR_NOMEM;
    }
    char *out = a->rbuf;
    size_t mine = b.clen[ly.node];   /* (the own block: column entry of its node) */
    dpc_step_id_t own = DPC_STEP_NONE;
    if (!a->in_place && mine)
        own = dpc_sched_copy(s, out + b.coff[ly.node], a->sbuf, mine, DPC_NO_DEPS);
    /* 1: the column, between nodes (the own block leaves from the input
     * while it is copied into place) */
    ring_phase_t cross = {.s = s, .p = ly.N, .me = ly.node, .members = ly.inter,
                          .boff = b.coff, .blen = b.clen, .seg = b.segN, .tag0 = 0,
                          .after = DPC_STEP_NONE, .own_src = a->in_place ? NULL : a->sbuf};
    dpc_step_id_t col = ring_allgather_phase(&cross, out);
    /* 2: N rings within the node, side by side, each from the column's
     * blocks (and the own block, in place by then) */
    dpc_step_id_t ready = dpc_sched_nop(s, DPC_AFTER(col, own));
    /* (the node rings' tags after those a column's ring of any rank may
     * take: with unequal blocks the columns differ, and a node ring's two
     * ends are in different columns) */
    uint32_t tag = ring_phase_tags(&(ring_phase_t){.p = a->size, .blen = b.blen, .seg = b.segN});
    for (int m = 0; m < ly.N; m++) {
        ring_phase_t rp = {.s = s, .p = ly.L, .me = ly.local, .members = ly.intra,
                           .boff = b.boff + (size_t)m * ly.L, .blen = b.blen + (size_t)m * ly.L,
                           .seg = b.segL, .tag0 = tag, .after = ready};
        ring_allgather_phase(&rp, out);
        tag += ring_phase_tags(&rp);
    }
    ag_blocks_free(&b);
    node_layout_free(&ly);
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double L, N;
    node_shape(a, &L, &N);
    size_t seg = dpc_seg_bytes(a);
    shares_t sh = shares_of(a, 0);
    double bmax = (double)sh.max, S = seg_count(sh.max, seg);
    dpc_coll_args_t within;
    dpc_cost_params_t net;
    node_prices(a, c, N, &within, &net);
    return (N - 1) * (S * msg_alpha(a, &net, bmax / S) + bmax * net.beta) +
           (L - 1) * N * (S * msg_alpha(&within, c, bmax / S) + bmax * c->beta) +
           own_copy_cost(a, (double)sh.min, c);
}

/* Bytes and messages rank r sends: each ring every block of its own but
 * its right neighbour's, the column's ring all of the column but the next
 * node's, node ring m all of node m's but the next local index's (each
 * block in its segments). */
static void traffic(const dpc_coll_args_t *a, int r, uint64_t *bytes, uint64_t *msgs)
{
    node_layout_t ly;
    ag_blocks_t b;
    *bytes = *msgs = 0;
    if (!dpc_algo_applies(self(a), a) || node_layout_make(a, r, &ly))
        return;
    if (!ag_blocks_make(a, &ly, &b)) {
        *msgs = ring_ag_phase_msgs(ly.N, ly.node, b.clen, b.segN, NULL);
        for (int m = 0; m < ly.N; m++) {
            *bytes += m != mod(ly.node + 1, ly.N) ? b.clen[m] : 0;
            for (int i = 0; i < ly.L; i++)
                *bytes += i != mod(ly.local + 1, ly.L) ? b.blen[m * ly.L + i] : 0;
            *msgs += ring_ag_phase_msgs(ly.L, ly.local, b.blen + (size_t)m * ly.L, b.segL, NULL);
        }
        ag_blocks_free(&b);
    }
    node_layout_free(&ly);
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t bytes, msgs;
    traffic(a, r, &bytes, &msgs);
    return bytes;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t bytes, msgs;
    traffic(a, r, &bytes, &msgs);
    return msgs;
}

const dpc_algo_t dpc_algo_allgather_hierarchical = {
    .name = "hierarchical", .coll = DPC_ALLGATHER, .flags = DPC_ALGO_NODES, .build = build,
    .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_allgatherv_hierarchical = {
    .name = "hierarchical", .coll = DPC_ALLGATHERV, .flags = DPC_ALGO_NODES, .build = build,
    .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
