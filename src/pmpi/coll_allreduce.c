/* MPI_Allreduce, MPI_Iallreduce and MPI_Allreduce_init on libdpcoll. */
#include "config.h"
#include "check.h"
#include "jobs.h"
#include "stage.h"
#include "ipc.h"
#include "lcount.h"
#include <stdlib.h>
#include <string.h>

/* The MPI library's own call of the same form. */
static int pmpi_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                          MPI_Op op, MPI_Comm comm, dpc_mode_t mode, MPI_Request *req)
{
    static const char *const calls[] = {"MPI_Allreduce", "MPI_Iallreduce", "MPI_Allreduce_init"};
    if (op == dpc_g.avg_op && op != MPI_OP_NULL) {
        /* the division must follow the sum: run it to the end now */
        int err = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, comm);
        if (err == MPI_SUCCESS)
            err = dpc_avg_finish(comm, calls[mode], recvbuf, count, datatype);
        if (err != MPI_SUCCESS || mode == DPC_BLOCKING)
            return err;
        if (mode == DPC_PERSISTENT)
            return dpc_raise(comm, MPI_ERR_OP, "%s: dpcoll_op_avg on a call that goes to the MPI "
                             "library cannot be persistent", calls[mode]);
        return dpc_done_request(req);
    }
    return DPC_PMPI_BY_MODE(mode, Allreduce, Iallreduce, , MPI_INFO_NULL, req, sendbuf, recvbuf,
                            count, datatype, op, comm);
}

static int allreduce(const char *call, const void *sendbuf, void *recvbuf, int count,
                     MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, dpc_mode_t mode,
                     MPI_Request *req)
{
    int err = MPI_SUCCESS, dop = -1;
    dpc_why_t why;
    dpc_dtinfo_t ti;
    switch (dpc_enter(comm, DPC_ALLREDUCE, call, mode, &err)) {
    case 0: return pmpi_allreduce(sendbuf, recvbuf, count, datatype, op, comm, mode, req);
    case -1: return err;
    }
    bool in_place = sendbuf == MPI_IN_PLACE;
    if (mode != DPC_BLOCKING && !req)
        return dpc_raise(comm, MPI_ERR_REQUEST, "%s: request is NULL", call);
    if ((err = dpc_check_count(comm, call, "count", count)) ||
        (err = dpc_check_type(comm, call, "datatype", datatype, &ti)) ||
        (err = dpc_check_buf(comm, call, "recvbuf", recvbuf, count)) ||
        (!in_place && (err = dpc_check_buf(comm, call, "sendbuf", sendbuf, count))))
        return err;
    if (!in_place && count > 0 && sendbuf == recvbuf)
        return dpc_raise(comm, MPI_ERR_BUFFER, "%s: sendbuf and recvbuf are the same buffer "
                         "(use MPI_IN_PLACE)", call);
    size_t bytes = (size_t)count * (size_t)ti.size;
    bool avg = op == dpc_g.avg_op && op != MPI_OP_NULL;
    bool dev_in = !in_place && dpc_buf_on_device(sendbuf), dev_out = dpc_buf_on_device(recvbuf);
    /* Device buffers: a large call of a predefined op on a contiguous type
     * runs as a pipeline of chunks with asynchronous copies (pipeline.c),
     * persistent ones too (the copies are steps of the schedule each start
     * builds); anything else is staged whole through host copies first. */
    /* the op once: ours runs on our engine (any mode), else the MPI library's */
    dpc_user_op_t user = {0};
    err = dpc_check_op(comm, call, op, datatype, &ti, &dop, &user, &why);
    if (err > 0)
        return err;
    bool ours = err == 0;
    /* every rank's buffers on a GPU of this node: device to
     * device (ipc.c), decided by all ranks together */
    int csize;
    PMPI_Comm_size(comm, &csize);
    if (dpc_ipc_wanted(comm, call, DPC_ALLREDUCE, csize, bytes, mode)) {
        dpc_ipc_call_t x = {
            .comm = comm, .call = call, .coll = DPC_ALLREDUCE,
            .sbuf = in_place ? NULL : (const char *)sendbuf + ti.true_lb,
            .rbuf = (char *)recvbuf + ti.true_lb, .count = (size_t)count * (size_t)ti.nbasic,
            .dt = ti.basic, .op = (dpc_op_t)dop,
            .local_ok = ours && ti.contig && !avg && dpc_g.cfg.device_reduce &&
                        dpc_cuda_can_reduce(ti.basic, (dpc_op_t)dop)};
        if (dpc_ipc_try(&x, mode, &err))
            return err;
    }
    bool pipelined = dpc_pipeline_wanted(bytes, dop);
    bool piped = (dev_in || dev_out) && ti.contig && !avg && ours && pipelined;
    if ((dev_in || dev_out) && !piped) {
        dpc_stage_t ss, rs;
        void *hs, *hr;
        if ((err = dpc_stage_pair(comm, call, mode, ours, &ss, in_place ? NULL : sendbuf,
                                  DPC_SPAN(datatype, count), &hs, &rs, recvbuf,
                                  DPC_SPAN(datatype, count), &hr)))
            return err;
        err = allreduce(call, in_place ? MPI_IN_PLACE : hs, hr, count, datatype, op, comm,
                        mode, req);
        return dpc_stage_done(comm, call, &ss, &rs, err, mode, ours, req);
    }
    if (!ours) {
        dpc_note_pmpi(DPC_ALLREDUCE, why);
        return pmpi_allreduce(sendbuf, recvbuf, count, datatype, op, comm, mode, req);
    }
    dpc_comm_t *c;
    if ((err = dpc_comm_get(comm, call, &c)))
        return err;
    if (mode == DPC_BLOCKING && ti.contig && !avg && !pipelined && !dpc_op_is_user(dop) &&
        bytes <= DPC_REPLAY_MAX_BYTES) {
        if ((err = dpc_reduce_repeat(comm, c, call, DPC_ALLREDUCE, sendbuf, recvbuf,
                                     (size_t)count * (size_t)ti.nbasic, NULL, 0, &ti, dop,
                                     bytes)) !=
            DPC_RUN_MISS)
            return err;
    }
    dpc_reduce_job_t local, *j = DPC_JOB_ALLOC(dpc_reduce_job_t, mode, local);
    if (!j)
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
    dpc_reduce_job_setup(j);
    dpc_pipe_t *pp = &j->base.pipe;
    pp->on = pipelined;
    pp->owner = pp->on && dpc_pipeline_owner(c->size);
    j->base.a = (dpc_coll_args_t){.coll = DPC_ALLREDUCE, .in_place = in_place,
                                  .count = (size_t)count * (size_t)ti.nbasic, .dtype = ti.basic,
                                  .op = dop, .size = c->size};
    if (piped) {
        pp->dev_in = dev_in ? (const char *)sendbuf + ti.true_lb : NULL;
        pp->dev_out = dev_out ? (char *)recvbuf + ti.true_lb : NULL;
        pp->dev_reduce = pp->owner && dev_out && (in_place || dev_in) &&
                         dpc_cuda_can_reduce(ti.basic, dop);
        if (dpc_pipe_alloc(pp, bytes, bytes, pp->dev_reduce ? dpc_pipeline_slot_bytes(
                                          &j->base.a, DPC_PIPE_CHUNK_BYTES) : 0)) {
            dpc_job_discard(&j->base, j != &local);
            return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: cannot allocate pinned host memory "
                             "(%zu bytes) to stage the device buffers", call, bytes);
        }
    }
    j->base.call = call;
    j->base.user = user;
    j->base.bytes = (unsigned long long)count * (unsigned long long)ti.size;
    j->sendbuf = sendbuf;
    j->recvbuf = recvbuf;
    j->total = j->mine = count;
    j->ti = ti;
    j->in_place = in_place;
    j->avg = avg;
    j->size = c->size;
    if ((err = dpc_keep_type(datatype, &ti, mode, &j->dt, &j->dt_ours))) {
        dpc_job_discard(&j->base, j != &local);
        return dpc_raise(comm, err, "%s: cannot keep the datatype", call);
    }
    return dpc_run(comm, c, &j->base, mode, req);
}

int dpc_own_allreduce(int *v, MPI_Op op, MPI_Comm comm, const char *call)
{
    return allreduce(call, MPI_IN_PLACE, v, 1, MPI_INT, op, comm, DPC_BLOCKING, NULL);
}

DPCOLL_API int MPI_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                             MPI_Op op, MPI_Comm comm)
{
    return allreduce("MPI_Allreduce", sendbuf, recvbuf, count, datatype, op, comm, DPC_BLOCKING,
                     NULL);
}

DPCOLL_API int MPI_Iallreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                              MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return allreduce("MPI_Iallreduce", sendbuf, recvbuf, count, datatype, op, comm,
                     DPC_NONBLOCKING, request);
}

DPCOLL_API int MPI_Allreduce_init(const void *sendbuf, void *recvbuf, int count,
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, MPI_Info info,
                                  MPI_Request *request)
{
    (void)info;
    return allreduce("MPI_Allreduce_init", sendbuf, recvbuf, count, datatype, op, comm,
                     DPC_PERSISTENT, request);
}

/* ---- MPI-4 large-count forms (lcount.h) --------------------------------- */

static int allreduce_c(const char *call, const void *sendbuf, void *recvbuf, MPI_Count count,
                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, dpc_mode_t mode,
                       MPI_Info info, MPI_Request *req)
{
    if (dpc_lc_fits(count))
        return allreduce(call, sendbuf, recvbuf, (int)count, datatype, op, comm, mode, req);
    /* (the MPI library would sum without the division) */
    if (op == dpc_g.avg_op && op != MPI_OP_NULL)
        return dpc_raise(comm, MPI_ERR_COUNT, "%s: dpcoll_op_avg on more than 2^31-1 elements "
                         "(count %lld)", call, (long long)count);
    dpc_lc_note_pmpi(DPC_ALLREDUCE);
    return DPC_PMPI_BY_MODE(mode, Allreduce, Iallreduce, _c, info, req, sendbuf, recvbuf, count,
                            datatype, op, comm);
}

DPCOLL_API int MPI_Allreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                               MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return allreduce_c("MPI_Allreduce_c", sendbuf, recvbuf, count, datatype, op, comm,
                       DPC_BLOCKING, MPI_INFO_NULL, NULL);
}

DPCOLL_API int MPI_Iallreduce_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                MPI_Request *request)
{
    return allreduce_c("MPI_Iallreduce_c", sendbuf, recvbuf, count, datatype, op, comm,
                       DPC_NONBLOCKING, MPI_INFO_NULL, request);
}

DPCOLL_API int MPI_Allreduce_init_c(const void *sendbuf, void *recvbuf, MPI_Count count,
                                    MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                    MPI_Info info, MPI_Request *request)
{
    return allreduce_c("MPI_Allreduce_init_c", sendbuf, recvbuf, count, datatype, op, comm,
                       DPC_PERSISTENT, info, request);
}
