/*
 * Reduce-scatter (equal blocks and per-rank counts) across nodes, in two
 * stages of rings. Rank (m, i) is the rank at node m, local index i (L
 * ranks a node, N nodes). First, within each node, N rings side by side
 * over the node's L ranks, ring m over the blocks of node m's ranks: the
 * rank of local index l ends with its node's sum of the block of rank
 * (m, l), for every m (its "column"). Then a ring among the N ranks of
 * local index l, one a node, over that column: each ends with its own
 * block summed over the nodes.
 *
 * Why: the flat ring (in node order) takes p-1 steps and each node's link
 * carries (p-1)/p of the vector; here the steps are (L-1) within the node
 * (N messages each, one per ring) and N-1 between nodes, and each node's
 * link carries (N-1)/N of it, every rank of the node sending its column's
 * share side by side. The bytes each rank sends and reduces are the flat
 * ring's: every block but its own, n - b.
 *
 * Restrictions: ranks on 2 or more nodes, as many (2 or more) on each
 * (DPC_ALGO_NODES); the op commutative (blocks reduced in ring order: within
 * the node, then across the nodes, the same order on every run).
 *
 * Cost (n = input bytes, b = the largest block, S segments of a block):
 * (L-1) N S alpha + (L-1) N b (beta + gamma)
 *   + (N-1) S alpha_net + (N-1) b (beta_net + gamma);
 * equal blocks: (L-1)/L n within and (N-1)/N n/L between nodes.
 */
#include "config.h"
#include "coll_util.h"
#include "node_layout.h"
#include "ring.h"
#include "shares.h"

/* as the flat ring's (reduce_scatter_ring.c) */
#define MAILBOX_SEGS_UP_TO (4u << 20)

extern const dpc_algo_t dpc_algo_reduce_scatter_block_hierarchical,
    dpc_algo_reduce_scatter_hierarchical;

static size_t seg_bytes(const dpc_coll_args_t *a)
{
    return reduce_seg_bytes(a, MAILBOX_SEGS_UP_TO);
}

static const dpc_algo_t *self(const dpc_coll_args_t *a)
{
    return a->coll == DPC_REDUCE_SCATTER ? &dpc_algo_reduce_scatter_hierarchical
                                         : &dpc_algo_reduce_scatter_block_hierarchical;
}

/* The rings' blocks: by node (boff, blen: node m's L blocks at m*L, input
 * bytes) and the column (coff, clen: the N blocks of local index `local`,
 * packed in the column's scratch), with their segments. */
typedef struct rs_blocks {
    size_t *boff, *blen, *coff, *clen;
    size_t col_bytes, segL, segN;
} rs_blocks_t;

static void rs_blocks_free(rs_blocks_t *b)
{
    free(b->boff);
    free(b->blen);
    free(b->coff);
    free(b->clen);
}

static int rs_blocks_make(const dpc_coll_args_t *a, const node_layout_t *ly, rs_blocks_t *b)
{
    int p = a->size;
    b->boff = b->blen = NULL;
    b->coff = malloc(sizeof(size_t) * (size_t)ly->N);
    b->clen = malloc(sizeof(size_t) * (size_t)ly->N);
    if (!b->coff || !b->clen || node_layout_blocks(a, ly, 1, &b->boff, &b->blen)) {
        rs_blocks_free(b);
        return -1;
    }
    b->col_bytes = 0;
    for (int m = 0; m < ly->N; m++) {
        b->coff[m] = b->col_bytes;
        b->clen[m] = b->blen[m * ly->L + ly->local];
        b->col_bytes += b->clen[m];
    }
    /* (the N node rings' segments together, and the column's, each fit a
     * quarter of the step tags: ring_seg_bytes) */
    b->segL = ring_seg_bytes(seg_bytes(a), elsize(a), p, b->blen);
    b->segN = ring_seg_bytes(seg_bytes(a), elsize(a), ly->N, b->clen);
    return 0;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    if (!dpc_algo_applies(self(a), a))
        return DPC_ERR_ARG;
    node_layout_t ly;
    rs_blocks_t b;
    if (node_layout_make(a, a->rank, &ly))
        return DPC_ERR_NOMEM;
    if (rs_blocks_make(a, &ly, &b)) {
        node_layout_free(&ly);
        return DPC_ERR_NOMEM;
    }
    dpc_status_t st = DPC_OK;
    dpc_step_id_t *done = malloc(sizeof(dpc_step_id_t) * (size_t)ly.N);
    char *col = dpc_sched_scratch(s, b.col_bytes);
    if (!done) {
        st = DPC_ERR_NOMEM;
        goto out;
    }
    /* 1: N rings within the node, side by side: the column, summed over
     * the node (partials in schedule scratch) */
    uint32_t tag = 0;
    for (int m = 0; m < ly.N; m++) {
        ring_phase_t rp = {.s = s, .p = ly.L, .me = ly.local, .members = ly.intra,
                           .boff = b.boff + (size_t)m * ly.L, .blen = b.blen + (size_t)m * ly.L,
                           .seg = b.segL, .tag0 = tag, .after = DPC_STEP_NONE};
        done[m] = ring_reduce_scatter_phase(&rp, input_of(a), NULL, col ? col + b.coff[m] : NULL,
                                            a->dtype, a->op);
        tag += ring_phase_tags(&rp);
    }
    /* 2: the column summed over the nodes, partials in the column; the own
     * block straight into the output (in place too: every read of the
     * input is done by then) */
    ring_phase_t cross = {.s = s, .p = ly.N, .me = ly.node, .members = ly.inter,
                          .boff = b.coff, .blen = b.clen, .seg = b.segN, .tag0 = tag,
                          .after = dpc_sched_nop(s, done, ly.N)};
    ring_reduce_scatter_phase(&cross, col, col, a->rbuf, a->dtype, a->op);
out:
    free(done);
    rs_blocks_free(&b);
    node_layout_free(&ly);
    return st;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double L, N;
    node_shape(a, &L, &N);
    size_t seg = seg_bytes(a);
    shares_t sh = shares_of(a, 0);
    double bmax = (double)sh.max, S = seg_count(sh.max, seg);
    dpc_coll_args_t within;
    dpc_cost_params_t net;
    node_prices(a, c, N, &within, &net);
    return (L - 1) * N * (S * msg_alpha(&within, c, bmax / S) + bmax * (c->beta + c->gamma)) +
           (N - 1) * (S * msg_alpha(a, &net, bmax / S) + bmax * (net.beta + c->gamma));
}

/* Every block but its own, as the flat ring: the node rings send every
 * block of theirs but the rank's column's, the column's ring every block
 * of the column but the rank's. */
static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    return a->size == 1 ? 0 : total_bytes(a) - blk_count(a, r) * elsize(a);
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    node_layout_t ly;
    rs_blocks_t b;
    if (!dpc_algo_applies(self(a), a) || node_layout_make(a, r, &ly))
        return 0;
    uint64_t m = 0;
    if (!rs_blocks_make(a, &ly, &b)) {
        for (int k = 0; k < ly.N; k++)
            m += ring_rs_phase_msgs(ly.L, ly.local, b.blen + (size_t)k * ly.L, b.segL);
        m += ring_rs_phase_msgs(ly.N, ly.node, b.clen, b.segN);
        rs_blocks_free(&b);
    }
    node_layout_free(&ly);
    return m;
}

const dpc_algo_t dpc_algo_reduce_scatter_block_hierarchical = {
    .name = "hierarchical", .coll = DPC_REDUCE_SCATTER_BLOCK, .flags = DPC_ALGO_NODES,
    .build = build, .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_reduce_scatter_hierarchical = {
    .name = "hierarchical", .coll = DPC_REDUCE_SCATTER, .flags = DPC_ALGO_NODES,
    .build = build, .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
