/* MPI_Alltoall and MPI_Alltoallv on libdpcoll (bytes, any datatypes). */
#include "config.h"
#include "blocks.h"
#include "check.h"
#include <stdlib.h>

static int alltoall(const char *call, dpc_coll_t coll, const void *sendbuf, int sendcount,
                    const int *sendcounts, const int *sdispls, MPI_Datatype sendtype,
                    void *recvbuf, int recvcount, const int *recvcounts, const int *rdispls,
                    MPI_Datatype recvtype, MPI_Comm comm)
{
    int err, size, rank;
    dpc_dtinfo_t sti, rti;
    dpc_comm_shape(comm, &size, &rank);
    bool in_place = sendbuf == MPI_IN_PLACE, v = coll == DPC_ALLTOALLV;
    if (v) {
        if ((err = dpc_check_counts(comm, call, "recvcounts", recvcounts, size)))
            return err;
        if (!rdispls)
            return dpc_raise(comm, MPI_ERR_ARG, "%s: rdispls is NULL", call);
    } else if ((err = dpc_check_count(comm, call, "recvcount", recvcount))) {
        return err;
    }
    long long rtotal = 0, stotal = 0;
    for (int j = 0; j < size; j++)
        rtotal += v ? recvcounts[j] : recvcount;
    if ((err = dpc_check_type(comm, call, "recvtype", recvtype, &rti)) ||
        (err = dpc_check_buf(comm, call, "recvbuf", recvbuf, rtotal)))
        return err;
    if (!in_place) {
        if (v) {
            if ((err = dpc_check_counts(comm, call, "sendcounts", sendcounts, size)))
                return err;
            if (!sdispls)
                return dpc_raise(comm, MPI_ERR_ARG, "%s: sdispls is NULL", call);
        } else if ((err = dpc_check_count(comm, call, "sendcount", sendcount))) {
            return err;
        }
        for (int j = 0; j < size; j++)
            stotal += v ? sendcounts[j] : sendcount;
        if ((err = dpc_check_type(comm, call, "sendtype", sendtype, &sti)) ||
            (err = dpc_check_buf(comm, call, "sendbuf", sendbuf, stotal)))
            return err;
        long long sb = (long long)(v ? sendcounts[rank] : sendcount) * sti.size;
        long long rb = (long long)(v ? recvcounts[rank] : recvcount) * rti.size;
        if (sb != rb)
            return dpc_raise(comm, MPI_ERR_TRUNCATE, "%s: the block this rank sends itself is "
                             "%lld bytes but its receive block holds %lld", call, sb, rb);
    }
    dpc_comm_t *c;
    if ((err = dpc_comm_get(comm, call, &c)))
        return err;
    dpc_blocks_t sb, rb;
    sb.bytes = sb.displs = NULL;
    sb.staging = NULL;
    /* in place, the send data are the receive blocks: stage them all */
    err = dpc_blocks_make(&rb, recvbuf, size, recvcounts, recvcount, rdispls, recvtype, &rti,
                          in_place, -1, comm);
    if (!err && !in_place)
        err = dpc_blocks_make(&sb, (void *)sendbuf, size, sendcounts, sendcount, sdispls, sendtype,
                              &sti, 1, -1, comm);
    if (err) {
        err = dpc_raise(comm, err, "%s: cannot stage the buffers", call);
        goto out;
    }
    dpc_coll_args_t a = {.coll = coll, .sbuf = in_place ? NULL : sb.base, .rbuf = rb.base,
                         .in_place = in_place, .count = rb.bytes[0], .dtype = DPC_BYTE};
    if (v) {
        a.counts = rb.bytes;
        a.displs = rb.displs;
        if (!in_place) {
            a.scounts = sb.bytes;
            a.sdispls = sb.displs;
        }
    }
    err = dpc_run(comm, c, &a, call, rb.total);
    if (!err)
        err = dpc_blocks_unpack(&rb, recvbuf, size, recvcounts, recvcount, rdispls, recvtype, &rti,
                                -1, comm);
out:
    dpc_blocks_free(&sb);
    dpc_blocks_free(&rb);
    return err;
}

DPCOLL_API int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                 int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char call[] = "MPI_Alltoall";
    int err = MPI_SUCCESS;
    switch (dpc_enter(comm, DPC_ALLTOALL, call, &err)) {
    case 0: return PMPI_Alltoall(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    case -1: return err;
    }
    return alltoall(call, DPC_ALLTOALL, sendbuf, sendcount, NULL, NULL, sendtype, recvbuf,
                    recvcount, NULL, NULL, recvtype, comm);
}

DPCOLL_API int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    static const char call[] = "MPI_Alltoallv";
    int err = MPI_SUCCESS;
    switch (dpc_enter(comm, DPC_ALLTOALLV, call, &err)) {
    case 0:
        return PMPI_Alltoallv(sendbuf, sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                              recvtype, comm);
    case -1: return err;
    }
    return alltoall(call, DPC_ALLTOALLV, sendbuf, 0, sendcounts, sdispls, sendtype, recvbuf, 0,
                    recvcounts, rdispls, recvtype, comm);
}
