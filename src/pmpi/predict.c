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
#include <string.h>

DPCOLL_API double dpcoll_predict(const char *collective, const char *algorithm, int count,
                                 MPI_Datatype datatype, MPI_Comm comm)
{
    int coll = collective ? dpc_coll_from_name(collective) : -1;
    if (coll < 0 || !dpc_g.active || count < 0 || comm == MPI_COMM_NULL)
        return -1;
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
    dpc_coll_args_t a = {.coll = (dpc_coll_t)coll, .size = c->size, .rank = c->rank,
                         .seg_bytes = dpc_g.cfg.seg_bytes, .push_min = DPC_PUSH_MIN,
                         .push_max = dpc_g.cfg.push_max,
                         .one_sided = dpc_g.cfg.one_sided && dpc_transport_one_sided(c->tp),
                         .eager_max = c->tp->eager_max};
    if (reduces) {
        a.dtype = ti.basic;
        a.count = (size_t)count * (size_t)ti.nbasic;
        a.op = DPC_OP_SUM;
    } else {
        a.dtype = DPC_BYTE;
        a.count = (size_t)count * (size_t)ti.size;
    }
    const dpc_algo_t *al = !algorithm || !strcmp(algorithm, "auto")
                               ? dpc_cost_select_model(&a, &dpc_g.cfg.cost)
                               : dpc_algo_find((dpc_coll_t)coll, algorithm);
    if (!al || !dpc_algo_applies(al, &a))
        return -1;
    return dpc_cost_predict(al, &a, &dpc_g.cfg.cost);
}
