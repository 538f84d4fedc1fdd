/*
 * Allreduce across nodes, in three rings: a reduce-scatter among the ranks
 * of each node leaves the rank at local index l with its node's sum of
 * block l (of L blocks, L ranks a node); an allreduce ring among the N
 * ranks of local index l, one per node, sums block l over the nodes; an
 * allgather among the ranks of each node hands every block to all.
 *
 * Why: a flat ring over ranks spread on nodes crosses between nodes at
 * every hop where neighbours sit on different nodes (every hop, with ranks
 * dealt round-robin), and takes 2(p-1) steps of start-ups. Here a message
 * crosses between nodes only in the middle ring, whose L copies run side by
 * side on disjoint ranks (every rank of a node sends its share of the node's
 * traffic, 1/L of it), and the steps are 2(L-1) + 2(N-1). The bytes each
 * rank sends and reduces are the flat ring's, 2(p-1)/p n and (p-1)/p n:
 * nothing is sent twice.
 *
 * Restrictions: the ranks on 2 or more nodes, the same number (2 or more)
 * on each (DPC_ALGO_NODES); the op commutative, as the ring's. Each block
 * is reduced in a fixed order (within the node in ring order, then across
 * the nodes in ring order) by one rank and handed out whole, so every rank
 * has the same bits, run after run.
 *
 * Cost: the node rings' steps with the constants within a node, the middle
 * ring's with those between nodes (alpha_net, beta_net: dpc_cost_across):
 * (L-1)(S_L + S_L') alpha + 2(L-1)/L n beta
 *   + 2(N-1) S_N alpha_net + 2(N-1)/N (n/L) beta_net + (p-1)/p n gamma,
 * S_L segments a node block, S_L' in the node's allgather (one where L is 2),
 * S_N a block of the middle ring. (The two parts' bytes add up to the flat
 * ring's 2(p-1)/p n.)
 */
#include "config.h"
#include "coll_util.h"
#include "node_layout.h"
#include "ring.h"

/* as the flat ring's (allreduce_ring.c): mailbox segments up to 1 MiB */
#define MAILBOX_SEGS_UP_TO (1u << 20)

extern const dpc_algo_t dpc_algo_allreduce_hierarchical;

static size_t seg_bytes(const dpc_coll_args_t *a)
{
    return reduce_seg_bytes(a, MAILBOX_SEGS_UP_TO);
}

/* The node blocks (L of the vector) and the middle ring's blocks (N of the
 * node block `local`, offsets from its start), with their segments. */
typedef struct blocks {
    size_t *offL, *lenL, *offN, *lenN;
    size_t segL, segN;
} blocks_t;

static int blocks_make(const dpc_coll_args_t *a, const node_layout_t *ly, blocks_t *b)
{
    size_t es = elsize(a);
    b->offN = b->lenN = NULL;
    if (even_blocks(a->count, es, ly->L, &b->offL, &b->lenL))
        return -1;
    if (even_blocks(b->lenL[ly->local] / es, es, ly->N, &b->offN, &b->lenN)) {
        free(b->offL);
        free(b->lenL);
        return -1;
    }
    b->segL = ring_seg_bytes(seg_bytes(a), es, ly->L, b->lenL);
    b->segN = ring_seg_bytes(seg_bytes(a), es, ly->N, b->lenN);
    return 0;
}

static void blocks_free(blocks_t *b)
{
    free(b->offL);
    free(b->lenL);
    free(b->offN);
    free(b->lenN);
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    if (a->count == 0)
        return DPC_OK;
    if (!dpc_algo_applies(&dpc_algo_allreduce_hierarchical, a))
        return DPC_ERR_ARG;
    const char *in = input_of(a);
    char *out = a->rbuf;
    node_layout_t ly;
    blocks_t b;
    if (node_layout_make(a, a->rank, &ly))
        return DPC_ERR_NOMEM;
    if (blocks_make(a, &ly, &b)) {
        node_layout_free(&ly);
        return DPC_ERR_NOMEM;
    }
    char *mine = out + b.offL[ly.local];   /* the node block this rank carries across */
    ring_phase_t node_ring = {.s = s, .p = ly.L, .me = ly.local, .members = ly.intra,
                              .boff = b.offL, .blen = b.lenL, .seg = b.segL, .tag0 = 0,
                              .after = DPC_STEP_NONE};
    ring_phase_t cross = {.s = s, .p = ly.N, .me = ly.node, .members = ly.inter,
                          .boff = b.offN, .blen = b.lenN, .seg = b.segN};
    uint32_t tL = ring_phase_tags(&node_ring), tN = ring_phase_tags(&cross);
    dpc_status_t st = DPC_OK;
    if ((uint64_t)2 * tL + (uint64_t)2 * tN > DPC_STEP_TAG_MAX) {
        st = DPC_ERR_ARG;      /* (ring_seg_bytes keeps each ring within a quarter) */
        goto out;
    }
    /* 1: the node's sum of block `local`, partials kept in the output */
    dpc_step_id_t step = ring_reduce_scatter_phase(&node_ring, in, out, mine, a->dtype, a->op);
    /* 2: that block summed over the nodes, in place */
    cross.tag0 = 2 * tL;
    cross.after = step;
    step = ring_reduce_scatter_phase(&cross, mine, mine, mine + b.offN[ly.node], a->dtype, a->op);
    cross.tag0 = 2 * tL + tN;
    cross.after = step;
    step = ring_allgather_phase(&cross, mine);
    /* 3: every node block to every rank of the node (its partials, which
     * the first ring sent from the output, are all sent by now) */
    node_ring.tag0 = tL;
    node_ring.after = step;
    ring_allgather_phase(&node_ring, out);
out:
    blocks_free(&b);
    node_layout_free(&ly);
    return st;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double L, N, p = a->size, n = (double)(a->count * elsize(a));
    node_shape(a, &L, &N);
    double SL = seg_count((size_t)(n / L), seg_bytes(a));
    double SLag = L == 2 ? 1 : SL;
    double SN = seg_count((size_t)(n / p), seg_bytes(a));
    dpc_coll_args_t within;
    dpc_cost_params_t net;
    node_prices(a, c, N, &within, &net);
    return (L - 1) * (SL * msg_alpha(&within, c, n / L / SL) +
                      SLag * msg_alpha(&within, c, n / L / SLag)) +
           2 * (L - 1) / L * n * c->beta +
           2 * (N - 1) * SN * msg_alpha(a, &net, n / p / SN) +
           2 * (N - 1) / N * (n / L) * net.beta + (p - 1) / p * n * c->gamma;
}

/* Rank r's layout and blocks for the traffic formulas; false where the
 * algorithm sends nothing (an empty vector) or cannot run. */
static bool traffic_setup(const dpc_coll_args_t *a, int r, node_layout_t *ly, blocks_t *b)
{
    if (a->count == 0 || !dpc_algo_applies(&dpc_algo_allreduce_hierarchical, a) ||
        node_layout_make(a, r, ly))
        return false;
    if (blocks_make(a, ly, b)) {
        node_layout_free(ly);
        return false;
    }
    return true;
}

static void traffic_done(node_layout_t *ly, blocks_t *b)
{
    blocks_free(b);
    node_layout_free(ly);
}

/* Each ring sends every block but the ones the receiver has: the node's
 * reduce-scatter all but the rank's own, the middle ring twice its block
 * less its own and its right neighbour's part, the node's allgather all
 * but the right neighbour's. */
static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    node_layout_t ly;
    blocks_t b;
    if (!traffic_setup(a, r, &ly, &b))
        return 0;
    size_t n = a->count * elsize(a), m = b.lenL[ly.local];
    uint64_t t = (n - b.lenL[ly.local]) + (2 * m - b.lenN[ly.node] - b.lenN[mod(ly.node + 1, ly.N)]) +
                 (n - b.lenL[mod(ly.local + 1, ly.L)]);
    traffic_done(&ly, &b);
    return t;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    node_layout_t ly;
    blocks_t b;
    if (!traffic_setup(a, r, &ly, &b))
        return 0;
    uint64_t m = ring_rs_phase_msgs(ly.L, ly.local, b.lenL, b.segL) +
                 ring_rs_phase_msgs(ly.N, ly.node, b.lenN, b.segN) +
                 ring_ag_phase_msgs(ly.N, ly.node, b.lenN, b.segN, NULL) +
                 ring_ag_phase_msgs(ly.L, ly.local, b.lenL, b.segL, NULL);
    traffic_done(&ly, &b);
    return m;
}

const dpc_algo_t dpc_algo_allreduce_hierarchical = {
    .name = "hierarchical", .coll = DPC_ALLREDUCE, .flags = DPC_ALGO_NODES, .build = build,
    .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
