/* Node maps for tests: p ranks spread on some nodes, as dpc_coll_args_t's
 * node, nnodes and node_ranks describe them. */
#ifndef DPC_TEST_NODES_H
#define DPC_TEST_NODES_H

#include <stdbool.h>
#include "part.h"

/* Every rank's node (placed_node, consecutive or round_robin), numbered
 * as the shim numbers them. Returns the ranks on each node when every node has as
 * many, else 0. */
static inline int test_node_map(int p, int nodes, bool round_robin, int *node)
{
    for (int r = 0; r < p; r++)
        node[r] = placed_node(r, p, nodes, round_robin);
    return p % nodes == 0 ? p / nodes : 0;
}

/* The fewest nodes (2 or more) that hold p ranks evenly, 2 or more on
 * each; 0 where there are none (p prime or under 4). */
static inline int test_default_nodes(int p)
{
    for (int d = 2; d * 2 <= p; d++)
        if (p % d == 0)
            return d;
    return 0;
}

#endif
