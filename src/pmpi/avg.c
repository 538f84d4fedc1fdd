/*
 * dpcoll_op_avg and dpcoll_type_bfloat16. The average is a sum followed by
 * one division by the communicator size on every rank: all ranks hold the
 * same sum bit for bit, so they get the same average. On our path the sum
 * is our SUM; when the call goes to the MPI library instead (DPCOLL_DISABLE,
 * intercommunicators) the op is an MPI user op that sums, and the division
 * follows in the wrapper all the same.
 */
#include "config.h"
#include "shim.h"
#include "dpc_reduce.h"
#include <stdlib.h>

/* As an MPI user op: inout[i] = in[i] + inout[i] (the sum part). */
static void avg_sum_fn(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    dpc_dtinfo_t ti;
    if (dpc_dtinfo(*dt, &ti) != MPI_SUCCESS || ti.basic < 0 ||
        dpc_reduce_host(inout, in, inout, (size_t)*len * (size_t)ti.nbasic, ti.basic,
                        DPC_OP_SUM) != DPC_OK) {
        dpc_raise(MPI_COMM_WORLD, MPI_ERR_OP, "dpcoll_op_avg: datatype is not a floating-point type");
    }
}

void dpc_avg_init(void)
{
    dpc_g.avg_op = MPI_OP_NULL;
    dpc_g.bf16 = MPI_DATATYPE_NULL;
    PMPI_Op_create(avg_sum_fn, 1, &dpc_g.avg_op);
    if (PMPI_Type_contiguous(2, MPI_BYTE, &dpc_g.bf16) == MPI_SUCCESS) {
        PMPI_Type_set_name(dpc_g.bf16, "DPCOLL_BFLOAT16");
        PMPI_Type_commit(&dpc_g.bf16);
    }
}

void dpc_avg_fini(void)
{
    if (dpc_g.avg_op != MPI_OP_NULL)
        PMPI_Op_free(&dpc_g.avg_op);
    if (dpc_g.bf16 != MPI_DATATYPE_NULL)
        PMPI_Type_free(&dpc_g.bf16);
}

int dpc_avg_finish(MPI_Comm comm, const char *call, void *buf, int count, MPI_Datatype dt)
{
    int size, rank;
    dpc_dtinfo_t ti;
    dpc_comm_shape(comm, &size, &rank);
    if (count == 0)
        return MPI_SUCCESS;
    if (dpc_dtinfo(dt, &ti) != MPI_SUCCESS || ti.basic < 0)
        return dpc_raise(comm, MPI_ERR_OP, "%s: dpcoll_op_avg needs a floating-point datatype", call);
    char *bytes, *tmp;
    int rc = dpc_pack(buf, count, dt, &ti, comm, &bytes, &tmp);
    if (rc != MPI_SUCCESS)
        return dpc_raise(comm, rc, "%s: out of memory", call);
    if (dpc_div_host(bytes, (size_t)count * (size_t)ti.nbasic, ti.basic, size) != DPC_OK)
        rc = dpc_raise(comm, MPI_ERR_OP, "%s: dpcoll_op_avg is not defined for datatype %s", call,
                       dpc_dtype_name(ti.basic));
    else if (tmp)
        rc = dpc_unpack(bytes, buf, count, dt, comm);
    free(tmp);
    return rc;
}

DPCOLL_API MPI_Op dpcoll_op_avg(void)
{
    return dpc_g.avg_op;
}

DPCOLL_API MPI_Datatype dpcoll_type_bfloat16(void)
{
    return dpc_g.bf16;
}
