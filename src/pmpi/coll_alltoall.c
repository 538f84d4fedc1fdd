/* MPI_Alltoall and MPI_Alltoallv on libdpcoll (bytes, any datatypes),
 * blocking, nonblocking and persistent. */
#include "config.h"
#include "check.h"
#include "jobs.h"
#include "stage.h"
#include "ipc.h"
#include "lcount.h"
#include <stdlib.h>
#include <string.h>

static int pmpi_alltoall(const void *sendbuf, int sendcount, const int *sendcounts,
                         const int *sdispls, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                         const int *recvcounts, const int *rdispls, MPI_Datatype recvtype,
                         MPI_Comm comm, dpc_mode_t mode, MPI_Request *req, bool v)
{
    if (v) {
        return DPC_PMPI_BY_MODE(mode, Alltoallv, Ialltoallv, , MPI_INFO_NULL, req, sendbuf,
                                sendcounts, sdispls, sendtype, recvbuf, recvcounts, rdispls,
                                recvtype, comm);
    }
    return DPC_PMPI_BY_MODE(mode, Alltoall, Ialltoall, , MPI_INFO_NULL, req, sendbuf, sendcount,
                            sendtype, recvbuf, recvcount, recvtype, comm);
}

static int alltoall(const char *call, const void *sendbuf, int sendcount, const int *sendcounts,
                    const int *sdispls, MPI_Datatype sendtype, void *recvbuf, int recvcount,
                    const int *recvcounts, const int *rdispls, MPI_Datatype recvtype,
                    MPI_Comm comm, dpc_mode_t mode, MPI_Request *req, bool v)
{
    dpc_coll_t coll = v ? DPC_ALLTOALLV : DPC_ALLTOALL;
    int err = MPI_SUCCESS, size, rank;
    dpc_dtinfo_t sti, rti;
    switch (dpc_enter(comm, coll, call, mode, &err)) {
    case 0:
        return pmpi_alltoall(sendbuf, sendcount, sendcounts, sdispls, sendtype, recvbuf, recvcount,
                             recvcounts, rdispls, recvtype, comm, mode, req, v);
    case -1: return err;
    }
    if (mode != DPC_BLOCKING && !req)
        return dpc_raise(comm, MPI_ERR_REQUEST, "%s: request is NULL", call);
    dpc_comm_shape(comm, &size, &rank);
    bool in_place = sendbuf == MPI_IN_PLACE;
    if (v) {
        if ((err = dpc_check_counts(comm, call, "recvcounts", recvcounts, size)))
            return err;
        if (!rdispls)
            return dpc_raise(comm, MPI_ERR_ARG, "%s: rdispls is NULL", call);
    } else if ((err = dpc_check_count(comm, call, "recvcount", recvcount))) {
        return err;
    }
    long long rtotal = 0, stotal = 0;
    for (int i = 0; i < size; i++)
        rtotal += v ? recvcounts[i] : recvcount;
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
        for (int i = 0; i < size; i++)
            stotal += v ? sendcounts[i] : sendcount;
        if ((err = dpc_check_type(comm, call, "sendtype", sendtype, &sti)) ||
            (err = dpc_check_buf(comm, call, "sendbuf", sendbuf, stotal)))
            return err;
        long long sb = (long long)(v ? sendcounts[rank] : sendcount) * sti.size;
        long long rb = (long long)(v ? recvcounts[rank] : recvcount) * rti.size;
        if (sb != rb)
            return dpc_raise(comm, MPI_ERR_TRUNCATE, "%s: the block this rank sends itself is "
                             "%lld bytes but its receive block holds %lld", call, sb, rb);
    } else {
        sti = rti;
    }
    /* (an alltoallv's sizes differ from rank to rank: no shared size to
     * weigh, so it always may try; the attempts back off where they fail) */
    if (dpc_ipc_wanted(comm, call, v ? DPC_ALLTOALLV : DPC_ALLTOALL, size,
                       v ? SIZE_MAX : (size_t)rtotal * (size_t)rti.size, mode)) {
        /* every rank's buffers on a GPU of this node: each pulls its block
         * of every peer's input device to device (ipc.c), decided by all */
        dpc_ipc_call_t x = {
            .comm = comm, .call = call, .coll = v ? DPC_ALLTOALLV : DPC_ALLTOALL,
            .sbuf = in_place ? NULL : (const char *)sendbuf + sti.true_lb,
            .rbuf = (char *)recvbuf + rti.true_lb,
            .blk_bytes = (size_t)recvcount * (size_t)rti.size,
            .counts = v ? recvcounts : NULL, .displs = v ? rdispls : NULL,
            .sdispls = v ? sdispls : NULL, .elem = (size_t)rti.size, .selem = (size_t)sti.size,
            .local_ok = !in_place && rti.contig && sti.contig};
        if (dpc_ipc_try(&x, mode, &err))
            return err;
    }
    if (DPC_ON_DEVICE(in_place ? NULL : sendbuf, recvbuf)) {
        dpc_stage_t ss, rs;
        void *hs, *hr;
        if ((err = dpc_stage_pair(comm, call, mode, true, &ss, in_place ? NULL : sendbuf,
                                  v ? DPC_SPANV(sendtype, size, sendcounts, sdispls)
                                    : DPC_SPAN(sendtype, sendcount * size), &hs, &rs, recvbuf,
                                  v ? DPC_SPANV(recvtype, size, recvcounts, rdispls)
                                    : DPC_SPAN(recvtype, recvcount * size), &hr)))
            return err;
        err = alltoall(call, in_place ? MPI_IN_PLACE : hs, sendcount, sendcounts, sdispls, sendtype,
                       hr, recvcount, recvcounts, rdispls, recvtype, comm, mode, req, v);
        return dpc_stage_done(comm, call, &ss, &rs, err, mode, true, req);
    }
    dpc_comm_t *c;
    if ((err = dpc_comm_get(comm, call, &c)))
        return err;
    unsigned long long bytes = (unsigned long long)rtotal * (unsigned long long)rti.size;
    if (mode == DPC_BLOCKING && (!v || size <= DPC_REPLAY_MAX_V_RANKS) && rti.contig &&
        (in_place || sti.contig) && bytes <= DPC_REPLAY_MAX_BYTES) {
        dpc_move_vectors_t vec = {.size = size, .recvcounts = recvcounts, .rdispls = rdispls,
                                  .sendcounts = sendcounts, .sdispls = sdispls};
        if ((err = v ? dpc_movev_repeat(comm, c, call, coll, sendbuf, &sti, recvbuf, &rti, &vec,
                                        bytes)
                     : dpc_move_repeat(comm, c, call, coll, sendbuf, &sti, recvbuf, recvcount,
                                       &rti, bytes)) != DPC_RUN_MISS)
            return err;
    }
    dpc_move_job_t local, *j = DPC_MOVE_JOB_ALLOC(mode, local);
    if (!j)
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
    dpc_alltoall_job_setup(j);
    j->base.call = call;
    j->base.a = (dpc_coll_args_t){.coll = coll, .in_place = in_place, .dtype = DPC_BYTE};
    j->base.bytes = bytes;
    j->sendbuf = sendbuf;
    j->sendcount = sendcount;
    j->sendcounts = v ? sendcounts : NULL;
    j->sdispls = v ? sdispls : NULL;
    j->recvbuf = recvbuf;
    j->recvcount = recvcount;
    j->recvcounts = v ? recvcounts : NULL;
    j->rdispls = v ? rdispls : NULL;
    j->sti = sti;
    j->rti = rti;
    j->in_place = in_place;
    j->size = size;
    j->rank = rank;
    if ((err = dpc_keep_type(recvtype, &rti, mode, &j->recvtype, &j->rt_ours)) ||
        (!in_place && (err = dpc_keep_type(sendtype, &sti, mode, &j->sendtype, &j->st_ours)))) {
        dpc_job_discard(&j->base, j != &local);
        return dpc_raise(comm, err, "%s: cannot keep the datatypes", call);
    }
    return dpc_run(comm, c, &j->base, mode, req);
}

int dpc_own_alltoall(const uint64_t *mine, uint64_t *theirs, MPI_Comm comm, const char *call)
{
    return alltoall(call, mine, 1, NULL, NULL, MPI_UINT64_T, theirs, 1, NULL, NULL, MPI_UINT64_T,
                    comm, DPC_BLOCKING, NULL, false);
}

DPCOLL_API int MPI_Alltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                            void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    return alltoall("MPI_Alltoall", sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount,
                    NULL, NULL, recvtype, comm, DPC_BLOCKING, NULL, false);
}

DPCOLL_API int MPI_Ialltoall(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                             void *recvbuf, int recvcount, MPI_Datatype recvtype, MPI_Comm comm,
                             MPI_Request *request)
{
    return alltoall("MPI_Ialltoall", sendbuf, sendcount, NULL, NULL, sendtype, recvbuf, recvcount,
                    NULL, NULL, recvtype, comm, DPC_NONBLOCKING, request, false);
}

DPCOLL_API int MPI_Alltoall_init(const void *sendbuf, int sendcount, MPI_Datatype sendtype,
                                 void *recvbuf, int recvcount, MPI_Datatype recvtype,
                                 MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return alltoall("MPI_Alltoall_init", sendbuf, sendcount, NULL, NULL, sendtype, recvbuf,
                    recvcount, NULL, NULL, recvtype, comm, DPC_PERSISTENT, request, false);
}

DPCOLL_API int MPI_Alltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                             MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                             const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm)
{
    return alltoall("MPI_Alltoallv", sendbuf, 0, sendcounts, sdispls, sendtype, recvbuf, 0,
                    recvcounts, rdispls, recvtype, comm, DPC_BLOCKING, NULL, true);
}

DPCOLL_API int MPI_Ialltoallv(const void *sendbuf, const int sendcounts[], const int sdispls[],
                              MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                              const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                              MPI_Request *request)
{
    return alltoall("MPI_Ialltoallv", sendbuf, 0, sendcounts, sdispls, sendtype, recvbuf, 0,
                    recvcounts, rdispls, recvtype, comm, DPC_NONBLOCKING, request, true);
}

DPCOLL_API int MPI_Alltoallv_init(const void *sendbuf, const int sendcounts[], const int sdispls[],
                                  MPI_Datatype sendtype, void *recvbuf, const int recvcounts[],
                                  const int rdispls[], MPI_Datatype recvtype, MPI_Comm comm,
                                  MPI_Info info, MPI_Request *request)
{
    (void)info;
    return alltoall("MPI_Alltoallv_init", sendbuf, 0, sendcounts, sdispls, sendtype, recvbuf, 0,
                    recvcounts, rdispls, recvtype, comm, DPC_PERSISTENT, request, true);
}

/* ---- MPI-4 large-count forms (lcount.h) --------------------------------- */

static int pmpi_alltoall_c(const void *sendbuf, MPI_Count sendcount, const MPI_Count *sendcounts,
                           const MPI_Aint *sdispls, MPI_Datatype sendtype, void *recvbuf,
                           MPI_Count recvcount, const MPI_Count *recvcounts,
                           const MPI_Aint *rdispls, MPI_Datatype recvtype, MPI_Comm comm,
                           dpc_mode_t mode, MPI_Info info, MPI_Request *req, bool v)
{
    if (v) {
        return DPC_PMPI_BY_MODE(mode, Alltoallv, Ialltoallv, _c, info, req, sendbuf, sendcounts,
                                sdispls, sendtype, recvbuf, recvcounts, rdispls, recvtype, comm);
    }
    return DPC_PMPI_BY_MODE(mode, Alltoall, Ialltoall, _c, info, req, sendbuf, sendcount, sendtype,
                            recvbuf, recvcount, recvtype, comm);
}

static int alltoall_c(const char *call, const void *sendbuf, MPI_Count sendcount,
                      const MPI_Count *sendcounts, const MPI_Aint *sdispls, MPI_Datatype sendtype,
                      void *recvbuf, MPI_Count recvcount, const MPI_Count *recvcounts,
                      const MPI_Aint *rdispls, MPI_Datatype recvtype, MPI_Comm comm,
                      dpc_mode_t mode, MPI_Info info, MPI_Request *req, bool v)
{
    dpc_coll_t coll = v ? DPC_ALLTOALLV : DPC_ALLTOALL;
    int err = MPI_SUCCESS, *ic[4];
    void *mem;
    bool in_place = sendbuf == MPI_IN_PLACE;   /* (then the send side means nothing) */
    bool sv = v && !in_place;
    /* (an alltoallv's counts and displacements are each rank's own) */
    static const bool local[4] = {true, true, true, true};
    static const char *const names[4] = {"sendcounts", "sdispls", "recvcounts", "rdispls"};
    dpc_lc_array_t in[4] = {{.counts = sv ? sendcounts : NULL}, {.displs = sv ? sdispls : NULL},
                            {.counts = v ? recvcounts : NULL}, {.displs = v ? rdispls : NULL}};
    switch (dpc_lc_enter(comm, coll, call, mode, in, local, names, ic, &mem, &err)) {
    case -1: return err;
    case 1:
        if (v || ((in_place || dpc_lc_fits(sendcount)) && dpc_lc_fits(recvcount)))
            return DPC_LC_RUN(NULL, mem,
                              alltoall(call, sendbuf, v || in_place ? 0 : (int)sendcount, ic[0],
                                       ic[1], sendtype, recvbuf, v ? 0 : (int)recvcount, ic[2],
                                       ic[3], recvtype, comm, mode, req, v));
        free(mem);
        dpc_lc_note_pmpi(coll);
    }
    return pmpi_alltoall_c(sendbuf, sendcount, sendcounts, sdispls, sendtype, recvbuf, recvcount,
                           recvcounts, rdispls, recvtype, comm, mode, info, req, v);
}

DPCOLL_API int MPI_Alltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                              void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                              MPI_Comm comm)
{
    return alltoall_c("MPI_Alltoall_c", sendbuf, sendcount, NULL, NULL, sendtype, recvbuf,
                      recvcount, NULL, NULL, recvtype, comm, DPC_BLOCKING, MPI_INFO_NULL, NULL,
                      false);
}

DPCOLL_API int MPI_Ialltoall_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                               void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                               MPI_Comm comm, MPI_Request *request)
{
    return alltoall_c("MPI_Ialltoall_c", sendbuf, sendcount, NULL, NULL, sendtype, recvbuf,
                      recvcount, NULL, NULL, recvtype, comm, DPC_NONBLOCKING, MPI_INFO_NULL,
                      request, false);
}

DPCOLL_API int MPI_Alltoall_init_c(const void *sendbuf, MPI_Count sendcount, MPI_Datatype sendtype,
                                   void *recvbuf, MPI_Count recvcount, MPI_Datatype recvtype,
                                   MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return alltoall_c("MPI_Alltoall_init_c", sendbuf, sendcount, NULL, NULL, sendtype, recvbuf,
                      recvcount, NULL, NULL, recvtype, comm, DPC_PERSISTENT, info, request, false);
}

DPCOLL_API int MPI_Alltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                               const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                               const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                               MPI_Datatype recvtype, MPI_Comm comm)
{
    return alltoall_c("MPI_Alltoallv_c", sendbuf, 0, sendcounts, sdispls, sendtype, recvbuf, 0,
                      recvcounts, rdispls, recvtype, comm, DPC_BLOCKING, MPI_INFO_NULL, NULL, true);
}

DPCOLL_API int MPI_Ialltoallv_c(const void *sendbuf, const MPI_Count sendcounts[],
                                const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                MPI_Datatype recvtype, MPI_Comm comm, MPI_Request *request)
{
    return alltoall_c("MPI_Ialltoallv_c", sendbuf, 0, sendcounts, sdispls, sendtype, recvbuf, 0,
                      recvcounts, rdispls, recvtype, comm, DPC_NONBLOCKING, MPI_INFO_NULL, request,
                      true);
}

DPCOLL_API int MPI_Alltoallv_init_c(const void *sendbuf, const MPI_Count sendcounts[],
                                    const MPI_Aint sdispls[], MPI_Datatype sendtype, void *recvbuf,
                                    const MPI_Count recvcounts[], const MPI_Aint rdispls[],
                                    MPI_Datatype recvtype, MPI_Comm comm, MPI_Info info,
                                    MPI_Request *request)
{
    return alltoall_c("MPI_Alltoallv_init_c", sendbuf, 0, sendcounts, sdispls, sendtype, recvbuf,
                      0, recvcounts, rdispls, recvtype, comm, DPC_PERSISTENT, info, request, true);
}
