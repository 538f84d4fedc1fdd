/* Where a rank sits among ranks spread over nodes with as many on each
 * (DPC_ALGO_NODES): the ranks of its node and the ranks of its local index
 * on every node, which the hierarchical algorithms run their rings over. */
#ifndef DPC_NODE_LAYOUT_H
#define DPC_NODE_LAYOUT_H

#include "dpc_coll.h"
#include "dpc_cost.h"
#include <stdbool.h>

/* Rank r's node (of N, numbered as a->node) and local index (of L: its
 * place among its node's ranks in rank order); at[m * L + i]: the rank at
 * node m, local index i (the i-th of node m's ranks); intra: its node's
 * ranks in rank order (within at), inter: the ranks of local index `local`
 * on each node, in node order. */
typedef struct node_layout {
    int L, N, local, node;
    int *at, *intra, *inter;
} node_layout_t;

/* -1: out of memory (nothing to free) */
int node_layout_make(const dpc_coll_args_t *a, int r, node_layout_t *ly);
void node_layout_free(node_layout_t *ly);
/* The ranks' blocks in the layout's order (*off, *len: p byte ranges, at
 * m * L + i the block of rank at[m * L + i]): the input's, concatenated
 * (reduce-scatters), or the output's at their displacements (allgathers).
 * -1: out of memory. */
int node_layout_blocks(const dpc_coll_args_t *a, const node_layout_t *ly, int concatenated,
                       size_t **off, size_t **len);

/* For the formulas: L ranks a node and N nodes as the build takes them,
 * or without a map (pricing outside a job) one node of p, the flat ring. */
static inline void node_shape(const dpc_coll_args_t *a, double *L, double *N)
{
    bool spread = a->node && a->nnodes >= 2 && a->node_ranks >= 1;
    *L = spread ? a->node_ranks : a->size;
    *N = spread ? a->nnodes : 1;
}

/* The arguments and constants the hierarchies price their two kinds of
 * ring by: within a node messages go through its mailboxes, whose limit
 * is not the group's (UCX's eager limit, where it spans nodes), so at
 * their default (*within); between nodes, the constants between nodes
 * (*net; on one node c's). */
static inline void node_prices(const dpc_coll_args_t *a, const dpc_cost_params_t *c, double N,
                               dpc_coll_args_t *within, dpc_cost_params_t *net)
{
    *within = *a;
    within->eager_max = 0;
    *net = N >= 2 ? dpc_cost_across(c) : *c;
}

#endif
