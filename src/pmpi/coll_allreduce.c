/* MPI_Allreduce on libdpcoll. */
#include "config.h"
#include "check.h"
#include <stdlib.h>
#include "dpc_reduce.h"

DPCOLL_API int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                  MPI_Op op, MPI_Comm comm)
{
    static const char call[] = "MPI_Allreduce";
    int err = MPI_SUCCESS, dop;
    dpc_why_t why;
    dpc_dtinfo_t ti;
    bool avg = op == dpc_g.avg_op && op != MPI_OP_NULL;
    switch (dpc_enter(comm, DPC_ALLREDUCE, call, &err)) {
    case 0:
        err = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
        return err == MPI_SUCCESS && avg ? dpc_avg_finish(comm, call, recvbuf, count, datatype) : err;
    case -1: return err;
    }
    bool in_place = sendbuf == MPI_IN_PLACE;
    if ((err = dpc_check_count(comm, call, "count", count)) ||
        (err = dpc_check_type(comm, call, "datatype", datatype, &ti)) ||
        (err = dpc_check_buf(comm, call, "recvbuf", recvbuf, count)) ||
        (!in_place && (err = dpc_check_buf(comm, call, "sendbuf", sendbuf, count))))
        return err;
    if (!in_place && count > 0 && sendbuf == recvbuf)
        return dpc_raise(comm, MPI_ERR_BUFFER, "%s: sendbuf and recvbuf are the same buffer "
                         "(use MPI_IN_PLACE)", call);
    err = dpc_check_op(comm, call, op, &ti, &dop, &why);
    if (err < 0) {
        dpc_note_pmpi(DPC_ALLREDUCE, why);
        err = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
        return err == MPI_SUCCESS && avg ? dpc_avg_finish(comm, call, recvbuf, count, datatype) : err;
    }
    if (err)
        return err;
    dpc_comm_t *c;
    if ((err = dpc_comm_get(comm, call, &c)))
        return err;
    char *in = NULL, *out = NULL, *tin = NULL, *tout = NULL;
    /* non-contiguous datatypes: run on packed copies */
    if ((err = dpc_pack(in_place ? recvbuf : sendbuf, count, datatype, &ti, comm, &in, &tin)))
        goto out;
    if (ti.contig || count == 0)
        out = (char *)recvbuf + ti.true_lb;
    else if (in_place)
        out = tin;            /* work in place on the packed copy */
    else if (!(out = tout = malloc((size_t)ti.size * (size_t)count))) {
        err = dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
        goto out;
    }
    dpc_coll_args_t a = {.coll = DPC_ALLREDUCE, .sbuf = in, .rbuf = out,
                         .in_place = in_place, .count = (size_t)count * (size_t)ti.nbasic,
                         .dtype = ti.basic, .op = dop};
    err = dpc_run(comm, c, &a, call, (unsigned long long)count * (unsigned long long)ti.size);
    if (!err && avg && dpc_div_host(out, a.count, ti.basic, c->size) != DPC_OK)
        err = dpc_raise(comm, MPI_ERR_OP, "%s: dpcoll_op_avg on a non floating-point type", call);
    if (!err && !ti.contig && count > 0)
        err = dpc_unpack(out, recvbuf, count, datatype, comm);
out:
    free(tin);
    free(tout);
    return err;
}
