/* MPI_Bcast, MPI_Ibcast and MPI_Bcast_init on libdpcoll. The root and the
 * others may use different datatypes of the same signature: all that
 * travels is bytes. */
#include "config.h"
#include "check.h"
#include "jobs.h"
#include "stage.h"
#include "ipc.h"
#include "lcount.h"
#include <stdlib.h>
#include <string.h>

static int bcast(const char *call, void *buffer, int count, MPI_Datatype datatype, int root,
                 MPI_Comm comm, dpc_mode_t mode, MPI_Request *req)
{
    int err = MPI_SUCCESS, size, rank;
    dpc_dtinfo_t ti;
    switch (dpc_enter(comm, DPC_BCAST, call, mode, &err)) {
    case 0:
        return DPC_PMPI_BY_MODE(mode, Bcast, Ibcast, , MPI_INFO_NULL, req, buffer, count, datatype,
                                root, comm);
    case -1: return err;
    }
    if (mode != DPC_BLOCKING && !req)
        return dpc_raise(comm, MPI_ERR_REQUEST, "%s: request is NULL", call);
    dpc_comm_shape(comm, &size, &rank);
    if ((err = dpc_check_count(comm, call, "count", count)) ||
        (err = dpc_check_type(comm, call, "datatype", datatype, &ti)) ||
        (err = dpc_check_buf(comm, call, "buffer", buffer, count)))
        return err;
    if (root < 0 || root >= size)
        return dpc_raise(comm, MPI_ERR_ROOT, "%s: root %d is not a rank of the communicator "
                         "(size %d)", call, root, size);
    if (dpc_ipc_wanted(comm, call, DPC_BCAST, size, (size_t)count * (size_t)ti.size, mode)) {
        /* every rank's buffer on a GPU of this node: read from the root's
         * device to device (ipc.c), decided by all ranks together */
        dpc_ipc_call_t x = {.comm = comm, .call = call, .coll = DPC_BCAST,
                            .rbuf = (char *)buffer + ti.true_lb,
                            .blk_bytes = (size_t)count * (size_t)ti.size, .root = root,
                            .local_ok = ti.contig};
        if (dpc_ipc_try(&x, mode, &err))
            return err;
    }
    if (DPC_ON_DEVICE(buffer, NULL)) {
        dpc_stage_t ss, rs;
        void *hs, *hr;
        if ((err = dpc_stage_pair(comm, call, mode, true, &ss, NULL, DPC_SPAN(datatype, 0), &hs,
                                  &rs, buffer, DPC_SPAN(datatype, count), &hr)))
            return err;
        err = bcast(call, hr, count, datatype, root, comm, mode, req);
        return dpc_stage_done(comm, call, &ss, &rs, err, mode, true, req);
    }
    dpc_comm_t *c;
    if ((err = dpc_comm_get(comm, call, &c)))
        return err;
    size_t n = (size_t)ti.size * (size_t)count;
    if (mode == DPC_BLOCKING && ti.contig && n <= DPC_REPLAY_MAX_BYTES) {
        /* (the arguments bcast_prepare makes of contiguous data: jobs.h's
         * dpc_move_repeat for the others) */
        dpc_coll_args_t a = {.coll = DPC_BCAST, .count = n, .dtype = DPC_BYTE, .root = root,
                             .rbuf = (char *)buffer + ti.true_lb};
        if ((err = dpc_run_repeat(comm, c, call, &a, n)) != DPC_RUN_MISS)
            return err;
    }
    dpc_move_job_t local, *j = DPC_MOVE_JOB_ALLOC(mode, local);
    if (!j)
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
    dpc_bcast_job_setup(j);
    j->base.call = call;
    j->base.bytes = n;
    j->base.a = (dpc_coll_args_t){.coll = DPC_BCAST, .count = n, .dtype = DPC_BYTE, .root = root};
    j->recvbuf = buffer;
    j->recvcount = count;
    j->rti = ti;
    j->root = root;
    j->rank = rank;
    j->size = size;
    if ((err = dpc_keep_type(datatype, &ti, mode, &j->recvtype, &j->rt_ours))) {
        dpc_job_discard(&j->base, j != &local);
        return dpc_raise(comm, err, "%s: cannot keep the datatype", call);
    }
    return dpc_run(comm, c, &j->base, mode, req);
}

DPCOLL_API int MPI_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    return bcast("MPI_Bcast", buffer, count, datatype, root, comm, DPC_BLOCKING, NULL);
}

DPCOLL_API int MPI_Ibcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm,
                          MPI_Request *request)
{
    return bcast("MPI_Ibcast", buffer, count, datatype, root, comm, DPC_NONBLOCKING, request);
}

DPCOLL_API int MPI_Bcast_init(void *buffer, int count, MPI_Datatype datatype, int root,
                              MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    (void)info;
    return bcast("MPI_Bcast_init", buffer, count, datatype, root, comm, DPC_PERSISTENT, request);
}

/* ---- MPI-4 large-count forms (lcount.h) --------------------------------- */

static int bcast_c(const char *call, void *buffer, MPI_Count count, MPI_Datatype datatype,
                   int root, MPI_Comm comm, dpc_mode_t mode, MPI_Info info, MPI_Request *req)
{
    if (dpc_lc_fits(count))
        return bcast(call, buffer, (int)count, datatype, root, comm, mode, req);
    dpc_lc_note_pmpi(DPC_BCAST);
    return DPC_PMPI_BY_MODE(mode, Bcast, Ibcast, _c, info, req, buffer, count, datatype, root,
                            comm);
}

DPCOLL_API int MPI_Bcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                           MPI_Comm comm)
{
    return bcast_c("MPI_Bcast_c", buffer, count, datatype, root, comm, DPC_BLOCKING,
                   MPI_INFO_NULL, NULL);
}

DPCOLL_API int MPI_Ibcast_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                            MPI_Comm comm, MPI_Request *request)
{
    return bcast_c("MPI_Ibcast_c", buffer, count, datatype, root, comm, DPC_NONBLOCKING,
                   MPI_INFO_NULL, request);
}

DPCOLL_API int MPI_Bcast_init_c(void *buffer, MPI_Count count, MPI_Datatype datatype, int root,
                                MPI_Comm comm, MPI_Info info, MPI_Request *request)
{
    return bcast_c("MPI_Bcast_init_c", buffer, count, datatype, root, comm, DPC_PERSISTENT, info,
                   request);
}
