/* MPI_Reduce_scatter_block and MPI_Reduce_scatter on libdpcoll. */
#include "config.h"
#include "check.h"
#include <stdint.h>
#include <stdlib.h>
#include "dpc_reduce.h"

/* Shared body: counts is NULL for the block variant (recvcount each). */
static int reduce_scatter(const char *call, dpc_coll_t coll, const void *sendbuf, void *recvbuf,
                          int recvcount, const int *recvcounts, MPI_Datatype datatype, MPI_Op op,
                          MPI_Comm comm)
{
    int err = MPI_SUCCESS, dop, size, rank;
    dpc_why_t why;
    dpc_dtinfo_t ti;
    dpc_comm_shape(comm, &size, &rank);
    bool in_place = sendbuf == MPI_IN_PLACE;
    long long total = 0, mine = recvcounts ? 0 : recvcount;
    if (recvcounts) {
        if ((err = dpc_check_counts(comm, call, "recvcounts", recvcounts, size)))
            return err;
        for (int i = 0; i < size; i++)
            total += recvcounts[i];
        mine = recvcounts[rank];
    } else {
        if ((err = dpc_check_count(comm, call, "recvcount", recvcount)))
            return err;
        total = (long long)recvcount * size;
    }
    if ((err = dpc_check_type(comm, call, "datatype", datatype, &ti)) ||
        (err = dpc_check_buf(comm, call, "recvbuf", recvbuf, in_place ? total : mine)) ||
        (!in_place && (err = dpc_check_buf(comm, call, "sendbuf", sendbuf, total))))
        return err;
    if (total > INT32_MAX && !ti.contig)
        return dpc_raise(comm, MPI_ERR_COUNT, "%s: more than 2^31 elements of a non-contiguous "
                         "datatype", call);
    err = dpc_check_op(comm, call, op, &ti, &dop, &why);
    if (err < 0) {
        dpc_note_pmpi(coll, why);
        return recvcounts ? PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm)
                          : PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
    }
    bool avg = op == dpc_g.avg_op && op != MPI_OP_NULL;
    if (err)
        return err;
    dpc_comm_t *c;
    if ((err = dpc_comm_get(comm, call, &c)))
        return err;
    size_t *counts = malloc(sizeof(size_t) * (size_t)size);
    char *in = NULL, *out = NULL, *tin = NULL, *tout = NULL;
    if (!counts) {
        err = dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
        goto out;
    }
    for (int i = 0; i < size; i++)
        counts[i] = (size_t)(recvcounts ? recvcounts[i] : recvcount) * (size_t)ti.nbasic;
    if ((err = dpc_pack(in_place ? recvbuf : sendbuf, (int)total, datatype, &ti, comm, &in, &tin)))
        goto out;
    if (ti.contig || mine == 0)
        out = (char *)recvbuf + ti.true_lb;
    else if (in_place)
        out = tin;
    else if (!(out = tout = malloc((size_t)ti.size * (size_t)mine))) {
        err = dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
        goto out;
    }
    dpc_coll_args_t a = {.coll = coll, .sbuf = in, .rbuf = out, .in_place = in_place,
                         .count = counts[0], .counts = recvcounts ? counts : NULL,
                         .dtype = ti.basic, .op = dop};
    err = dpc_run(comm, c, &a, call, (unsigned long long)total * (unsigned long long)ti.size);
    if (!err && avg && dpc_div_host(out, (size_t)mine * (size_t)ti.nbasic, ti.basic, size) != DPC_OK)
        err = dpc_raise(comm, MPI_ERR_OP, "%s: dpcoll_op_avg on a non floating-point type", call);
    if (!err && !ti.contig && mine > 0)
        err = dpc_unpack(out, recvbuf, (int)mine, datatype, comm);
out:
    free(counts);
    free(tin);
    free(tout);
    return err;
}

DPCOLL_API int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char call[] = "MPI_Reduce_scatter_block";
    int err = MPI_SUCCESS;
    switch (dpc_enter(comm, DPC_REDUCE_SCATTER_BLOCK, call, &err)) {
    case 0:
        err = PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op, comm);
        return err == MPI_SUCCESS && op == dpc_g.avg_op && op != MPI_OP_NULL
                   ? dpc_avg_finish(comm, call, recvbuf, recvcount, datatype) : err;
    case -1: return err;
    }
    return reduce_scatter(call, DPC_REDUCE_SCATTER_BLOCK, sendbuf, recvbuf, recvcount, NULL,
                          datatype, op, comm);
}

DPCOLL_API int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    static const char call[] = "MPI_Reduce_scatter";
    int err = MPI_SUCCESS;
    switch (dpc_enter(comm, DPC_REDUCE_SCATTER, call, &err)) {
    case 0: {
        err = PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm);
        int size, rank;
        dpc_comm_shape(comm, &size, &rank);
        return err == MPI_SUCCESS && op == dpc_g.avg_op && op != MPI_OP_NULL
                   ? dpc_avg_finish(comm, call, recvbuf, recvcounts[rank], datatype) : err;
    }
    case -1: return err;
    }
    return reduce_scatter(call, DPC_REDUCE_SCATTER, sendbuf, recvbuf, 0, recvcounts, datatype,
                          op, comm);
}
