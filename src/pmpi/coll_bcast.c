/* MPI_Bcast on libdpcoll. The root and the others may use different
 * datatypes of the same signature: all that travels is bytes. */
#include "config.h"
#include "check.h"
#include <stdlib.h>

DPCOLL_API int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    static const char call[] = "MPI_Bcast";
    int err = MPI_SUCCESS, size, rank;
    dpc_dtinfo_t ti;
    switch (dpc_enter(comm, DPC_BCAST, call, &err)) {
    case 0: return PMPI_Bcast(buffer, count, datatype, root, comm);
    case -1: return err;
    }
    dpc_comm_shape(comm, &size, &rank);
    if ((err = dpc_check_count(comm, call, "count", count)) ||
        (err = dpc_check_type(comm, call, "datatype", datatype, &ti)) ||
        (err = dpc_check_buf(comm, call, "buffer", buffer, count)))
        return err;
    if (root < 0 || root >= size)
        return dpc_raise(comm, MPI_ERR_ROOT, "%s: root %d is not a rank of the communicator "
                         "(size %d)", call, root, size);
    dpc_comm_t *c;
    if ((err = dpc_comm_get(comm, call, &c)))
        return err;
    char *bytes, *tmp = NULL;
    if (rank == root) {
        if ((err = dpc_pack(buffer, count, datatype, &ti, comm, &bytes, &tmp)))
            return dpc_raise(comm, err, "%s: cannot stage the buffer", call);
    } else if (ti.contig || count == 0) {
        bytes = (char *)buffer + ti.true_lb;
    } else if (!(bytes = tmp = malloc((size_t)ti.size * (size_t)count))) {
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
    }
    size_t n = (size_t)ti.size * (size_t)count;
    dpc_coll_args_t a = {.coll = DPC_BCAST, .rbuf = bytes, .count = n, .dtype = DPC_BYTE,
                         .root = root};
    err = dpc_run(comm, c, &a, call, n);
    if (!err && rank != root && tmp)
        err = dpc_unpack(bytes, buffer, count, datatype, comm);
    free(tmp);
    return err;
}
