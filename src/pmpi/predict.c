/*
 * dpcoll_predict: the cost model's time for one call, as the engine would
 * price it on this communicator (its size, its transport, the constants in
 * effect). For tools that set predictions beside measurements
 * (dpcoll_bench's model column): the figure the model chose by, not a
 * second copy of the formulas.
 */
#include "config.h"
#include "shim.h"
#include "dpc_cost.h"
#include <stdlib.h>
#include <string.h>

/* Both entries: counts NULL (every rank's count is `count`) or one count
 * per rank of comm (the v-variants'). */
static double predict(const char *collective, const char *algorithm, int count,
                      const int *counts, MPI_Datatype datatype, MPI_Comm comm)
{
    int coll = collective ? dpc_coll_from_name(collective) : -1;
    if (coll < 0 || !dpc_g.active || count < 0 || comm == MPI_COMM_NULL)
        return -1;
    if (counts && coll != DPC_REDUCE_SCATTER && coll != DPC_ALLGATHERV)
        return -1;   /* (alltoallv's counts are each rank's own: none to share) */
    int inter = 0;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return -1;
    dpc_comm_t *c;
    dpc_dtinfo_t ti;
    if (dpc_comm_get(comm, "dpcoll_predict", &c) || dpc_dtinfo(datatype, &ti) != MPI_SUCCESS)
        return -1;
    /* the arguments as the wrappers give them to the engine: reductions in
     * basic elements of the type (summed), moves in bytes */
    bool reduces = dpc_coll_reduces((dpc_coll_t)coll);   /* (MPI_Reduce_scatter's too) */
    if (reduces && ti.basic < 0)
        return -1;
    size_t unit = reduces ? (size_t)ti.nbasic : (size_t)ti.size;
    dpc_coll_args_t a = {.coll = (dpc_coll_t)coll, .size = c->size, .rank = c->rank,
                         .dtype = reduces ? ti.basic : DPC_BYTE,
                         .op = DPC_OP_SUM,   /* (read by reductions only) */
                         .count = (size_t)count * unit,
                         .seg_bytes = dpc_g.cfg.seg_bytes, .push_min = DPC_PUSH_MIN,
                         .push_max = dpc_g.cfg.push_max,
                         .one_sided = dpc_g.cfg.one_sided && dpc_transport_one_sided(c->tp),
                         .eager_max = c->tp->eager_max, .node = c->node, .nnodes = c->nnodes,
                         .node_ranks = c->node_ranks};
    /* a v-variant with counts and packed displacements, in the engine's
     * units, as the wrappers give them (the formulas read the counts; the
     * direct allgather pushes, and is priced so, only without them): with
     * counts NULL, `count` for every rank. An alltoallv sends and receives
     * the same. */
    bool v = coll == DPC_REDUCE_SCATTER || coll == DPC_ALLGATHERV || coll == DPC_ALLTOALLV;
    size_t *own = NULL;
    if (v) {
        own = malloc(2 * sizeof(size_t) * (size_t)c->size);
        if (!own)
            return -1;
        size_t at = 0;
        for (int i = 0; i < c->size; i++) {
            int ci = counts ? counts[i] : count;
            if (ci < 0) {
                free(own);
                return -1;
            }
            own[i] = (size_t)ci * unit;
            own[c->size + i] = at * unit;
            at += (size_t)ci;
        }
        a.counts = own;
        a.displs = coll == DPC_REDUCE_SCATTER ? NULL : own + c->size;
        if (coll == DPC_ALLTOALLV) {
            a.scounts = a.counts;
            a.sdispls = a.displs;
        }
        a.count = own[0];   /* (as the wrappers set it) */
    }
    const dpc_algo_t *al = !algorithm || !strcmp(algorithm, "auto")
                               ? dpc_cost_select_model(&a, &dpc_g.cfg.cost)
                               : dpc_algo_find((dpc_coll_t)coll, algorithm);
    double t = al && dpc_algo_applies(al, &a) ? dpc_cost_predict(al, &a, &dpc_g.cfg.cost) : -1;
    free(own);
    return t;
}

DPCOLL_API double dpcoll_predict(const char *collective, const char *algorithm, int count,
                                 MPI_Datatype datatype, MPI_Comm comm)
{
    return predict(collective, algorithm, count, NULL, datatype, comm);
}

DPCOLL_API double dpcoll_predictv(const char *collective, const char *algorithm,
                                  const int counts[], MPI_Datatype datatype, MPI_Comm comm)
{
    return counts ? predict(collective, algorithm, 0, counts, datatype, comm) : -1;
}

/* The nodes as the model sees them (dpcoll_tune fits the constants
 * between nodes on a job on several: it prices each measurement with the
 * communicator's node map and eager limit, as the engine does). */
DPCOLL_API int dpcoll_comm_nodes(MPI_Comm comm, int node_of[], size_t *eager_bytes)
{
    int inter = 0;
    dpc_comm_t *c;
    if (!dpc_g.active || comm == MPI_COMM_NULL ||
        PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter ||
        dpc_comm_get(comm, "dpcoll_comm_nodes", &c))
        return -1;
    for (int i = 0; node_of && i < c->size; i++)
        node_of[i] = c->node ? c->node[i] : 0;
    if (eager_bytes)
        *eager_bytes = c->tp->eager_max;
    return c->node ? c->nnodes : 1;
}
