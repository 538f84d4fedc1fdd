/* MPI_Allgather and MPI_Allgatherv on libdpcoll: data move as bytes, so any
 * datatype works (non-contiguous ones through a staging buffer), and the
 * send and receive datatypes may differ as long as the signatures match. */
#include "config.h"
#include "blocks.h"
#include "check.h"
#include <stdlib.h>

static int allgather(const char *call, dpc_coll_t coll, const void *sendbuf, int sendcount,
                     MPI_Datatype sendtype, void *recvbuf, int recvcount, const int *recvcounts,
                     const int *displs, MPI_Datatype recvtype, MPI_Comm comm)
{
    int err, size, rank;
    dpc_dtinfo_t sti, rti;
    dpc_comm_shape(comm, &size, &rank);
    bool in_place = sendbuf == MPI_IN_PLACE;
    if (recvcounts) {
        if ((err = dpc_check_counts(comm, call, "recvcounts", recvcounts, size)))
            return err;
        if (!displs)
            return dpc_raise(comm, MPI_ERR_ARG, "%s: displs is NULL", call);
    } else if ((err = dpc_check_count(comm, call, "recvcount", recvcount))) {
        return err;
    }
    int mine = recvcounts ? recvcounts[rank] : recvcount;
    long long total = 0;
    for (int i = 0; i < size; i++)
        total += recvcounts ? recvcounts[i] : recvcount;
    if ((err = dpc_check_type(comm, call, "recvtype", recvtype, &rti)) ||
        (err = dpc_check_buf(comm, call, "recvbuf", recvbuf, total)))
        return err;
    if (!in_place) {
        if ((err = dpc_check_count(comm, call, "sendcount", sendcount)) ||
            (err = dpc_check_type(comm, call, "sendtype", sendtype, &sti)) ||
            (err = dpc_check_buf(comm, call, "sendbuf", sendbuf, sendcount)))
            return err;
        if ((long long)sendcount * sti.size != (long long)mine * rti.size)
            return dpc_raise(comm, MPI_ERR_TRUNCATE, "%s: this rank sends %lld bytes "
                             "(sendcount x sendtype) but its block in recvbuf holds %lld", call,
                             (long long)sendcount * sti.size, (long long)mine * rti.size);
    }
    dpc_comm_t *c;
    if ((err = dpc_comm_get(comm, call, &c)))
        return err;
    dpc_blocks_t rb;
    char *in = NULL, *tin = NULL;
    /* in place, our own block is already in recvbuf: stage just that one */
    err = dpc_blocks_make(&rb, recvbuf, size, recvcounts, recvcount, displs, recvtype, &rti,
                          in_place, rank, comm);
    if (!err && !in_place)
        err = dpc_pack(sendbuf, sendcount, sendtype, &sti, comm, &in, &tin);
    if (err) {
        err = err == MPI_ERR_NO_MEM ? dpc_raise(comm, err, "%s: out of memory", call)
                                    : dpc_raise(comm, err, "%s: cannot pack the datatype", call);
        goto out;
    }
    dpc_coll_args_t a = {.coll = coll, .sbuf = in, .rbuf = rb.base, .in_place = in_place,
                         .count = rb.bytes[0], .counts = recvcounts ? rb.bytes : NULL,
                         .displs = recvcounts ? rb.displs : NULL, .dtype = DPC_BYTE};
    err = dpc_run(comm, c, &a, call, rb.total);
    if (!err)
        err = dpc_blocks_unpack(&rb, recvbuf, size, recvcounts, recvcount, displs, recvtype, &rti,
                                in_place ? rank : -1, comm);
out:
    free(tin);
    dpc_blocks_free(&rb);
    return err;
}

DPCOLL_API int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                  int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char call[] = "MPI_Allgather";
    int err = MPI_SUCCESS;
    switch (dpc_enter(comm, DPC_ALLGATHER, call, &err)) {
    case 0: return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    case -1: return err;
    }
    return allgather(call, DPC_ALLGATHER, sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL,
                     NULL, recvtype, comm);
}

DPCOLL_API int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                   const int recvcounts[], const int displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char call[] = "MPI_Allgatherv";
    int err = MPI_SUCCESS;
    switch (dpc_enter(comm, DPC_ALLGATHERV, call, &err)) {
    case 0:
        return PMPI_Allgatherv(sendbuf, sendcount, sendtype, recvbuf, recvcounts, displs, recvtype,
                               comm);
    case -1: return err;
    }
    return allgather(call, DPC_ALLGATHERV, sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts,
                     displs, recvtype, comm);
}
