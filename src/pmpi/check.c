#include "config.h"
#include "check.h"

int dpc_check_count(MPI_Comm comm, const char *call, const char *arg, int count)
{
    if (count < 0)
        return dpc_raise(comm, MPI_ERR_COUNT, "%s: %s is negative (%d)", call, arg, count);
    return MPI_SUCCESS;
}

int dpc_check_counts(MPI_Comm comm, const char *call, const char *arg, const int *counts, int n)
{
    if (!counts && n > 0)
        return dpc_raise(comm, MPI_ERR_COUNT, "%s: %s is NULL", call, arg);
    for (int i = 0; i < n; i++)
        if (counts[i] < 0)
            return dpc_raise(comm, MPI_ERR_COUNT, "%s: %s[%d] is negative (%d)", call, arg, i, counts[i]);
    return MPI_SUCCESS;
}

int dpc_check_type(MPI_Comm comm, const char *call, const char *arg, MPI_Datatype dt,
                   dpc_dtinfo_t *ti)
{
    if (dt == MPI_DATATYPE_NULL)
        return dpc_raise(comm, MPI_ERR_TYPE, "%s: %s is MPI_DATATYPE_NULL", call, arg);
    if (dpc_dtinfo(dt, ti) != MPI_SUCCESS)
        return dpc_raise(comm, MPI_ERR_TYPE, "%s: %s is not a valid datatype", call, arg);
    return MPI_SUCCESS;
}

int dpc_check_buf(MPI_Comm comm, const char *call, const char *arg, const void *buf, long long count)
{
    if (count > 0 && buf == NULL)
        return dpc_raise(comm, MPI_ERR_BUFFER, "%s: %s is NULL but holds %lld elements", call, arg,
                         count);
    return MPI_SUCCESS;
}

int dpc_check_op(MPI_Comm comm, const char *call, MPI_Op op, MPI_Datatype dt, dpc_dtinfo_t *ti,
                 int *op_p, dpc_user_op_t *u, dpc_why_t *why)
{
    if (op == MPI_OP_NULL)
        return dpc_raise(comm, MPI_ERR_OP, "%s: op is MPI_OP_NULL", call);
    int o = dpc_op_map(op);
    if (o < 0) {
        int commute = 1;
        if (PMPI_Op_commutative(op, &commute) != MPI_SUCCESS)
            return dpc_raise(comm, MPI_ERR_OP, "%s: op is not a valid operation", call);
        if (dpc_user_op_take(op, dt, ti, u)) {
            *op_p = commute ? DPC_OP_USER : DPC_OP_USER_ORDERED;
            return MPI_SUCCESS;
        }
        *why = DPC_WHY_USER_OP;
        return -1;
    }
    if (ti->basic < 0) {
        *why = DPC_WHY_TYPE;
        return -1;
    }
    if (op == dpc_g.avg_op && ti->basic != DPC_FLOAT && ti->basic != DPC_DOUBLE &&
        ti->basic != DPC_LONG_DOUBLE && ti->basic != DPC_FLOAT16 && ti->basic != DPC_BFLOAT16)
        return dpc_raise(comm, MPI_ERR_OP, "%s: dpcoll_op_avg is not defined for datatype %s", call,
                         dpc_dtype_name(ti->basic));
    if (!dpc_op_valid(o, ti->basic))
        return dpc_raise(comm, MPI_ERR_OP, "%s: op %s is not defined for datatype %s", call,
                         dpc_op_name(o), dpc_dtype_name(ti->basic));
    *op_p = o;
    return MPI_SUCCESS;
}
