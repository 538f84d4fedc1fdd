/* The algorithm registry: what is listed here is selectable, shown by the
 * tools, and run by the whole test matrix. */
#include "config.h"
#include "dpc_coll.h"
#include <string.h>

extern const dpc_algo_t dpc_algo_allreduce_ring, dpc_algo_allreduce_recursive_doubling,
    dpc_algo_allreduce_rabenseifner, dpc_algo_reduce_scatter_block_ring,
    dpc_algo_reduce_scatter_ring, dpc_algo_reduce_scatter_block_recursive_halving,
    dpc_algo_reduce_scatter_recursive_halving, dpc_algo_allgather_ring,
    dpc_algo_allgatherv_ring, dpc_algo_allgather_recursive_doubling,
    dpc_algo_allgatherv_recursive_doubling, dpc_algo_allgather_bruck,
    dpc_algo_allgatherv_bruck, dpc_algo_bcast_binomial, dpc_algo_bcast_scatter_allgather,
    dpc_algo_alltoall_pairwise, dpc_algo_alltoallv_pairwise, dpc_algo_alltoall_bruck,
    dpc_algo_allreduce_direct, dpc_algo_allreduce_hierarchical,
    dpc_algo_reduce_scatter_block_direct,
    dpc_algo_reduce_scatter_direct, dpc_algo_allgather_direct, dpc_algo_allgatherv_direct,
    dpc_algo_alltoall_direct, dpc_algo_alltoallv_direct, dpc_algo_bcast_direct,
    dpc_algo_reduce_scatter_block_recursive_doubling, dpc_algo_reduce_scatter_recursive_doubling,
    dpc_algo_reduce_scatter_block_hierarchical, dpc_algo_reduce_scatter_hierarchical,
    dpc_algo_allgather_hierarchical, dpc_algo_allgatherv_hierarchical;

static const dpc_algo_t *const registry[] = {
    &dpc_algo_allreduce_ring,
    &dpc_algo_allreduce_recursive_doubling,
    &dpc_algo_allreduce_rabenseifner,
    &dpc_algo_allreduce_direct,
    &dpc_algo_allreduce_hierarchical,
    &dpc_algo_reduce_scatter_block_ring,
    &dpc_algo_reduce_scatter_block_recursive_halving,
    &dpc_algo_reduce_scatter_block_direct,
    &dpc_algo_reduce_scatter_block_recursive_doubling,
    &dpc_algo_reduce_scatter_block_hierarchical,
    &dpc_algo_reduce_scatter_ring,
    &dpc_algo_reduce_scatter_recursive_halving,
    &dpc_algo_reduce_scatter_direct,
    &dpc_algo_reduce_scatter_recursive_doubling,
    &dpc_algo_reduce_scatter_hierarchical,
    &dpc_algo_allgather_ring,
    &dpc_algo_allgather_recursive_doubling,
    &dpc_algo_allgather_bruck,
    &dpc_algo_allgather_direct,
    &dpc_algo_allgather_hierarchical,
    &dpc_algo_allgatherv_ring,
    &dpc_algo_allgatherv_recursive_doubling,
    &dpc_algo_allgatherv_bruck,
    &dpc_algo_allgatherv_direct,
    &dpc_algo_allgatherv_hierarchical,
    &dpc_algo_bcast_binomial,
    &dpc_algo_bcast_scatter_allgather,
    &dpc_algo_bcast_direct,
    &dpc_algo_alltoall_pairwise,
    &dpc_algo_alltoall_bruck,
    &dpc_algo_alltoall_direct,
    &dpc_algo_alltoallv_pairwise,
    &dpc_algo_alltoallv_direct,
    NULL,
};

static const char *const coll_names[DPC_COLL_COUNT] = {
    "allreduce", "reduce_scatter_block", "reduce_scatter", "allgather",
    "allgatherv", "bcast", "alltoall", "alltoallv",
};

const char *dpc_coll_name(dpc_coll_t c)
{
    return (unsigned)c < DPC_COLL_COUNT ? coll_names[c] : "?";
}

int dpc_coll_from_name(const char *name)
{
    for (int i = 0; i < DPC_COLL_COUNT; i++)
        if (strcmp(name, coll_names[i]) == 0)
            return i;
    return -1;
}

bool dpc_coll_reduces(dpc_coll_t c)
{
    return c == DPC_ALLREDUCE || c == DPC_REDUCE_SCATTER_BLOCK || c == DPC_REDUCE_SCATTER;
}

const dpc_algo_t *const *dpc_algos(void)
{
    return registry;
}

const dpc_algo_t *dpc_algo_find(dpc_coll_t c, const char *name)
{
    for (const dpc_algo_t *const *a = registry; *a; a++)
        if ((*a)->coll == c && strcmp((*a)->name, name) == 0)
            return *a;
    return NULL;
}

bool dpc_algo_applies(const dpc_algo_t *al, const dpc_coll_args_t *a)
{
    if (al->coll != a->coll)
        return false;
    if ((al->flags & DPC_ALGO_ONE_SIDED) && !a->one_sided)
        return false;
    if (a->op == DPC_OP_USER_ORDERED && dpc_coll_reduces(a->coll) &&
        !(al->flags & DPC_ALGO_RANK_ORDER) &&
        !((al->flags & DPC_ALGO_RANK_ORDER_UP_TO_3) && a->size <= 3))
        return false;
    if ((al->flags & DPC_ALGO_NODES) &&
        !(a->node && a->nnodes >= 2 && a->node_ranks >= 2 && a->nnodes * a->node_ranks == a->size))
        return false;
    if (al->flags & DPC_ALGO_EQUAL_COUNTS_ONLY)
        return !a->counts && !a->scounts;
    return true;
}
