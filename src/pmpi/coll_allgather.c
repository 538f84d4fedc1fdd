/* MPI_Allgather and MPI_Allgatherv on libdpcoll, blocking, nonblocking and
 * persistent: data move as bytes, so any datatype works (non-contiguous
 * ones through a staging buffer), and the send and receive datatypes may
 * differ as long as the signatures match. */
#include "config.h"
#include "check.h"
#include "jobs.h"
#include "stage.h"
#include "ipc.h"
#include "lcount.h"
#include <stdlib.h>
#include <string.h>

static int pmpi_allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                          int recvcount, const int *recvcounts, const int *displs,
                          MPI_Datatype recvtype, MPI_Comm comm, dpc_mode_t mode, MPI_Request *req)
{
    if (recvcounts) {
        return DPC_PMPI_BY_MODE(mode, Allgatherv, Iallgatherv, , MPI_INFO_NULL, req, sendbuf,
                                sendcount, sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    }
    return DPC_PMPI_BY_MODE(mode, Allgather, Iallgather, , MPI_INFO_NULL, req, sendbuf, sendcount,
                            sendtype, recvbuf, recvcount, recvtype, comm);
}

static int allgather(const char *call, const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                     void *recvbuf, int recvcount, const int *recvcounts, const int *displs,
                     MPI_Datatype recvtype, MPI_Comm comm, dpc_mode_t mode, MPI_Request *req,
                     bool v)
{
    dpc_coll_t coll = v ? DPC_ALLGATHERV : DPC_ALLGATHER;
    int err = MPI_SUCCESS, size, rank;
    dpc_dtinfo_t sti, rti;
    switch (dpc_enter(comm, coll, call, mode, &err)) {
    case 0:
        return pmpi_allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount,
                              v ? recvcounts : NULL, displs, recvtype, comm, mode, req);
    case -1: return err;
    }
    if (mode != DPC_BLOCKING && !req)
        return dpc_raise(comm, MPI_ERR_REQUEST, "%s: request is NULL", call);
    dpc_comm_shape(comm, &size, &rank);
    bool in_place = sendbuf == MPI_IN_PLACE;
    if (v) {
        if ((err = dpc_check_counts(comm, call, "recvcounts", recvcounts, size)))
            return err;
        if (!displs)
            return dpc_raise(comm, MPI_ERR_ARG, "%s: displs is NULL", call);
    } else if ((err = dpc_check_count(comm, call, "recvcount", recvcount))) {
        return err;
    }
    int mine = v ? recvcounts[rank] : recvcount;
    long long total = 0;
    for (int i = 0; i < size; i++)
        total += v ? recvcounts[i] : recvcount;
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
    } else {
        sti = rti;
    }
    if (dpc_ipc_wanted(comm, call, coll, size, (size_t)total * (size_t)rti.size, mode)) {
        /* every rank's buffers on a GPU of this node: each pulls the
         * others' blocks device to device (ipc.c), decided by all ranks
         * (the recvcounts, and so the total, are the same on every rank) */
        dpc_ipc_call_t x = {
            .comm = comm, .call = call, .coll = coll,
            .sbuf = in_place ? NULL : (const char *)sendbuf + sti.true_lb,
            .rbuf = (char *)recvbuf + rti.true_lb, .blk_bytes = (size_t)mine * (size_t)rti.size,
            .counts = v ? recvcounts : NULL, .displs = v ? displs : NULL,
            .elem = (size_t)rti.size, .local_ok = rti.contig && (in_place || sti.contig)};
        if (dpc_ipc_try(&x, mode, &err))
            return err;
    }
    if (DPC_ON_DEVICE(in_place ? NULL : sendbuf, recvbuf)) {
        dpc_stage_t ss, rs;
        void *hs, *hr;
        if ((err = dpc_stage_pair(comm, call, mode, true, &ss, in_place ? NULL : sendbuf,
                                  DPC_SPAN(sendtype, sendcount), &hs, &rs, recvbuf,
                                  v ? DPC_SPANV(recvtype, size, recvcounts, displs)
                                    : DPC_SPAN(recvtype, recvcount * size), &hr)))
            return err;
        err = allgather(call, in_place ? MPI_IN_PLACE : hs, sendcount, sendtype, hr, recvcount,
                        recvcounts, displs, recvtype, comm, mode, req, v);
        return dpc_stage_done(comm, call, &ss, &rs, err, mode, true, req);
    }
    dpc_comm_t *c;
    if ((err = dpc_comm_get(comm, call, &c)))
        return err;
    unsigned long long bytes = (unsigned long long)total * (unsigned long long)rti.size;
    if (mode == DPC_BLOCKING && (!v || size <= DPC_REPLAY_MAX_V_RANKS) && rti.contig &&
        (in_place || sti.contig) && bytes <= DPC_REPLAY_MAX_BYTES) {
        dpc_move_vectors_t vec = {.size = size, .recvcounts = recvcounts, .rdispls = displs};
        if ((err = v ? dpc_movev_repeat(comm, c, call, coll, sendbuf, &sti, recvbuf, &rti, &vec,
                                        bytes)
                     : dpc_move_repeat(comm, c, call, coll, sendbuf, &sti, recvbuf, recvcount,
                                       &rti, bytes)) != DPC_RUN_MISS)
            return err;
    }
    dpc_move_job_t local, *j = DPC_MOVE_JOB_ALLOC(mode, local);
    if (!j)
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
    dpc_allgather_job_setup(j);
    j->base.call = call;
    j->base.a = (dpc_coll_args_t){.coll = coll, .in_place = in_place, .dtype = DPC_BYTE};
    j->sendbuf = sendbuf;
    j->sendcount = sendcount;
    j->recvbuf = recvbuf;
    j->recvcount = recvcount;
    j->recvcounts = v ? recvcounts : NULL;
    j->rdispls = v ? displs : NULL;
    j->sti = sti;
    j->rti = rti;
    j->in_place = in_place;
    j->size = size;
    j->rank = rank;
    j->base.bytes = bytes;
    if ((err = dpc_keep_type(recvtype, &rti, mode, &j->recvtype, &j->rt_ours)) ||
        (!in_place && (err = dpc_keep_type(sendtype, &sti, mode, &j->sendtype, &j->st_ours)))) {
        dpc_job_discard(&j->base, j != &local);
        return dpc_raise(comm, err, "%s: cannot keep the datatypes", call);
    }
    return dpc_run(comm, c, &j->base, mode, req);
}

int dpc_own_allgather(const void *mine, int bytes, void *all, MPI_Comm comm, const char *call)
{
    return allgather(call, mine, bytes, MPI_BYTE, all, bytes, NULL, NULL, MPI_BYTE, comm,
                     DPC_BLOCKING, NULL, false);
}

DPCOLL_API int MPI_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return allgather("MPI_Allgather", sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                     recvtype, comm, DPC_BLOCKING, NULL, false);
}

DPCOLL_API int MPI_Iallgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Request *request)
{
    return allgather("MPI_Iallgather", sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL, NULL,
                     recvtype, comm, DPC_NONBLOCKING, request, false);
}

DPCOLL_API int MPI_Allgather_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                  void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                  MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return allgather("MPI_Allgather_init", sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL,
                     NULL, recvtype, comm, DPC_PERSISTENT, request, false);
}

DPCOLL_API int MPI_Allgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                              void *recvbuf, const int recvcounts[], const int displs[],
                              MPI_Datatype recvtype, MPI_Comm comm)
{
    return allgather("MPI_Allgatherv", sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts, displs,
                     recvtype, comm, DPC_BLOCKING, NULL, true);
}

DPCOLL_API int MPI_Iallgatherv(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                               void *recvbuf, const int recvcounts[], const int displs[],
                               MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return allgather("MPI_Iallgatherv", sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts,
                     displs, recvtype, comm, DPC_NONBLOCKING, request, true);
}

DPCOLL_API int MPI_Allgatherv_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, const int recvcounts[], const int displs[],
                                   MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                   MPI_Request *request)
{
    (void)info;
    return allgather("MPI_Allgatherv_init", sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts,
                     displs, recvtype, comm, DPC_PERSISTENT, request, true);
}

/* ---- MPI-4 large-count forms (lcount.h) --------------------------------- */

static int pmpi_allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                            void *recvbuf, MPI_Count recvcount, const MPI_Count *recvcounts,
                            const MPI_Aint *displs, MPI_Datatype recvtype, MPI_Comm comm,
                            dpc_mode_t mode, MPI_Info info, MPI_Request *req, bool v)
{
    if (v) {
        return DPC_PMPI_BY_MODE(mode, Allgatherv, Iallgatherv, _c, info, req, sendbuf, sendcount,
                                sendtype, recvbuf, recvcounts, displs, recvtype, comm);
    }
    return DPC_PMPI_BY_MODE(mode, Allgather, Iallgather, _c, info, req, sendbuf, sendcount,
                            sendtype, recvbuf, recvcount, recvtype, comm);
}

static int allgather_c(const char *call, const void *sendbuf, MPI_Count sendcount,
                       MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                       const MPI_Count *recvcounts, const MPI_Aint *displs, MPI_Datatype recvtype,
                       MPI_Comm comm, dpc_mode_t mode, MPI_Info info, MPI_Request *req, bool v)
{
    dpc_coll_t coll = v ? DPC_ALLGATHERV : DPC_ALLGATHER;
    int err = MPI_SUCCESS, *ic[4];
    void *mem;
    bool in_place = sendbuf == MPI_IN_PLACE;   /* (then sendcount means nothing) */
    /* (recvcounts are the same on every rank; displs each rank's own) */
    static const bool local[4] = {false, true};
    static const char *const names[4] = {"recvcounts", "displs"};
    dpc_lc_array_t in[4] = {{.counts = v ? recvcounts : NULL}, {.displs = v ? displs : NULL}};
    switch (dpc_lc_enter(comm, coll, call, mode, in, local, names, ic, &mem, &err)) {
    case -1: return err;
    case 1:
        if ((in_place || dpc_lc_fits(sendcount)) && (v || dpc_lc_fits(recvcount)))
            return DPC_LC_RUN(NULL, mem,
                              allgather(call, sendbuf, in_place ? 0 : (int)sendcount, sendtype,
                                        recvbuf, v ? 0 : (int)recvcount, ic[0], ic[1], recvtype,
                                        comm, mode, req, v));
        free(mem);
        dpc_lc_note_pmpi(coll);
    }
    return pmpi_allgather_c(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvcounts, displs,
                            recvtype, comm, mode, info, req, v);
}

DPCOLL_API int MPI_Allgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                               MPI_Comm comm)
{
    return allgather_c("MPI_Allgather_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL,
                       NULL, recvtype, comm, DPC_BLOCKING, MPI_INFO_NULL, NULL, false);
}

DPCOLL_API int MPI_Iallgather_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                MPI_Comm comm, MPI_Request *request)
{
    return allgather_c("MPI_Iallgather_c", sendbuf, sendcount, sendtype, recvbuf, recvcount, NULL,
                       NULL, recvtype, comm, DPC_NONBLOCKING, MPI_INFO_NULL, request, false);
}

DPCOLL_API int MPI_Allgather_init_c(const void *sendbuf, MPI_Count sendcount,
                                    MPI_Datatype sendtype, void *recvbuf, MPI_Count recvcount,
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                    MPI_Request *request)
{
    return allgather_c("MPI_Allgather_init_c", sendbuf, sendcount, sendtype, recvbuf, recvcount,
                       NULL, NULL, recvtype, comm, DPC_PERSISTENT, info, request, false);
}

DPCOLL_API int MPI_Allgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                void *recvbuf, const MPI_Count recvcounts[],
                                const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return allgather_c("MPI_Allgatherv_c", sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts,
                       displs, recvtype, comm, DPC_BLOCKING, MPI_INFO_NULL, NULL, true);
}

DPCOLL_API int MPI_Iallgatherv_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, const MPI_Count recvcounts[],
                                 const MPI_Aint displs[], MPI_Datatype recvtype, MPI_Comm comm,
                                 MPI_Request *request)
{
    return allgather_c("MPI_Iallgatherv_c", sendbuf, sendcount, sendtype, recvbuf, 0, recvcounts,
                       displs, recvtype, comm, DPC_NONBLOCKING, MPI_INFO_NULL, request, true);
}

DPCOLL_API int MPI_Allgatherv_init_c(const void *sendbuf, MPI_Count sendcount,
                                     MPI_Datatype sendtype, void *recvbuf,
                                     const MPI_Count recvcounts[], const MPI_Aint displs[],
                                     MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                     MPI_Request *request)
{
    return allgather_c("MPI_Allgatherv_init_c", sendbuf, sendcount, sendtype, recvbuf, 0,
                       recvcounts, displs, recvtype, comm, DPC_PERSISTENT, info, request, true);
}
