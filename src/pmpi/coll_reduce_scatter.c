/* MPI_Reduce_scatter_block and MPI_Reduce_scatter on libdpcoll, in their
 * blocking, nonblocking (MPI_I...) and persistent (..._init) forms. */
#include "config.h"
#include "check.h"
#include "jobs.h"
#include "stage.h"
#include "ipc.h"
#include "lcount.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The MPI library's own large-count call of the same form (counts NULL:
 * block variant). */
static int pmpi_reduce_scatter_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                 const MPI_Count *recvcounts, MPI_Datatype datatype, MPI_Op op,
                                 MPI_Comm comm, dpc_mode_t mode, MPI_Info info, MPI_Request *req)
{
    if (recvcounts) {
        return DPC_PMPI_BY_MODE(mode, Reduce_scatter, Ireduce_scatter, _c, info, req, sendbuf,
                                recvbuf, recvcounts, datatype, op, comm);
    }
    return DPC_PMPI_BY_MODE(mode, Reduce_scatter_block, Ireduce_scatter_block, _c, info, req,
                            sendbuf, recvbuf, recvcount, datatype, op, comm);
}

/* The MPI library's own call of the same form (counts NULL: block variant). */
static int pmpi_reduce_scatter(const char *call, const void *sendbuf, void *recvbuf, int recvcount,
                               const int *recvcounts, MPI_Datatype datatype, MPI_Op op,
                               MPI_Comm comm, dpc_mode_t mode, MPI_Request *req)
{
    if (op == dpc_g.avg_op && op != MPI_OP_NULL) {
        /* the division must follow the sum: run it to the end now */
        int size, rank;
        dpc_comm_shape(comm, &size, &rank);
        int err = recvcounts ? PMPI_Reduce_scatter(sendbuf, recvbuf, recvcounts, datatype, op, comm)
                             : PMPI_Reduce_scatter_block(sendbuf, recvbuf, recvcount, datatype, op,
                                                         comm);
        if (err == MPI_SUCCESS)
            err = dpc_avg_finish(comm, call, recvbuf, recvcounts ? recvcounts[rank] : recvcount,
                                 datatype);
        if (err != MPI_SUCCESS || mode == DPC_BLOCKING)
            return err;
        if (mode == DPC_PERSISTENT)
            return dpc_raise(comm, MPI_ERR_OP, "%s: dpcoll_op_avg on a call that goes to the MPI "
                             "library cannot be persistent", call);
        return dpc_done_request(req);
    }
    /* a large-count call: the caller's counts, which live as long as the
     * request (the ints given here do not) */
    if (recvcounts && dpc_tl_lc && mode != DPC_BLOCKING)
        return pmpi_reduce_scatter_c(sendbuf, recvbuf, 0, dpc_tl_lc, datatype, op, comm, mode,
                                     MPI_INFO_NULL, req);
    if (recvcounts) {
        return DPC_PMPI_BY_MODE(mode, Reduce_scatter, Ireduce_scatter, , MPI_INFO_NULL, req,
                                sendbuf, recvbuf, recvcounts, datatype, op, comm);
    }
    return DPC_PMPI_BY_MODE(mode, Reduce_scatter_block, Ireduce_scatter_block, , MPI_INFO_NULL, req,
                            sendbuf, recvbuf, recvcount, datatype, op, comm);
}

/* Shared body: recvcounts is NULL for the block variant (recvcount each). */
static int reduce_scatter(const char *call, const void *sendbuf, void *recvbuf, int recvcount,
                          const int *recvcounts, MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                          dpc_mode_t mode, MPI_Request *req)
{
    dpc_coll_t coll = recvcounts ? DPC_REDUCE_SCATTER : DPC_REDUCE_SCATTER_BLOCK;
    int err = MPI_SUCCESS, dop = -1, size, rank;
    dpc_why_t why;
    dpc_dtinfo_t ti;
    switch (dpc_enter(comm, coll, call, mode, &err)) {
    case 0:
        return pmpi_reduce_scatter(call, sendbuf, recvbuf, recvcount, recvcounts, datatype, op,
                                   comm, mode, req);
    case -1: return err;
    }
    if (mode != DPC_BLOCKING && !req)
        return dpc_raise(comm, MPI_ERR_REQUEST, "%s: request is NULL", call);
    dpc_comm_shape(comm, &size, &rank);
    bool in_place = sendbuf == MPI_IN_PLACE;
    long long total = 0, mine = recvcounts ? 0 : recvcount;
    if (recvcounts) {
        if ((err = dpc_check_counts(comm, call, "recvcounts", recvcounts, size)))
            return err;
        for (int i = 0; i < size; i++)
            total += recvcounts[i];
        mine = recvcounts[rank];
    } else {
        if ((err = dpc_check_count(comm, call, "recvcount", recvcount)))
            return err;
        total = (long long)recvcount * size;
    }
    if ((err = dpc_check_type(comm, call, "datatype", datatype, &ti)) ||
        (err = dpc_check_buf(comm, call, "recvbuf", recvbuf, in_place ? total : mine)) ||
        (!in_place && (err = dpc_check_buf(comm, call, "sendbuf", sendbuf, total))))
        return err;
    if (total > INT32_MAX && !ti.contig)
        return dpc_raise(comm, MPI_ERR_COUNT, "%s: more than 2^31 elements of a non-contiguous "
                         "datatype", call);
    /* Large calls (either form) run as a pipeline of owner chunks on every
     * rank alike when some rank has the CUDA plugin (pipeline.c); a rank
     * whose input and output are contiguous device buffers reduces its
     * block on its GPU there, with nothing copied back; other device
     * buffers are staged whole first. */
    bool avg = op == dpc_g.avg_op && op != MPI_OP_NULL;
    bool dev_in = !in_place && dpc_buf_on_device(sendbuf), dev_out = dpc_buf_on_device(recvbuf);
    /* the op once: ours runs on our engine (any mode), else the MPI library's */
    dpc_user_op_t user = {0};
    err = dpc_check_op(comm, call, op, datatype, &ti, &dop, &user, &why);
    if (err > 0)
        return err;
    bool ours = err == 0;
    bool rs_pipe = dpc_pipeline_owner(size) &&
                   dpc_pipeline_wanted((size_t)total * (size_t)ti.size, dop);
    /* the block form, every rank's buffers on a GPU of this
     * node: each rank reduces its block from the peers' inputs in place
     * (ipc.c), decided by all ranks together */
    if (!recvcounts && dpc_ipc_wanted(comm, call, DPC_REDUCE_SCATTER_BLOCK, size,
                                      (size_t)total * (size_t)ti.size, mode)) {
        dpc_ipc_call_t x = {
            .comm = comm, .call = call, .coll = DPC_REDUCE_SCATTER_BLOCK,
            .sbuf = in_place ? NULL : (const char *)sendbuf + ti.true_lb,
            .rbuf = (char *)recvbuf + ti.true_lb, .blk_bytes = (size_t)mine * (size_t)ti.size,
            .dt = ti.basic, .op = (dpc_op_t)dop,
            .local_ok = !in_place && ours && ti.contig && !avg && dpc_g.cfg.device_reduce &&
                        dpc_cuda_can_reduce(ti.basic, (dpc_op_t)dop)};
        if (dpc_ipc_try(&x, mode, &err))
            return err;
    }
    bool rs_dev = rs_pipe && dev_in && dev_out && ti.contig && !avg && ours &&
                  dpc_cuda_can_reduce(ti.basic, dop);
    if ((dev_in || dev_out) && !rs_dev) {
        dpc_stage_t ss, rs;
        void *hs, *hr;
        if ((err = dpc_stage_pair(comm, call, mode, ours, &ss, in_place ? NULL : sendbuf,
                                  DPC_SPAN(datatype, (int)total), &hs, &rs, recvbuf,
                                  DPC_SPAN(datatype, (int)(in_place ? total : mine)), &hr)))
            return err;
        err = reduce_scatter(call, in_place ? MPI_IN_PLACE : hs, hr, recvcount, recvcounts,
                             datatype, op, comm, mode, req);
        return dpc_stage_done(comm, call, &ss, &rs, err, mode, ours, req);
    }
    if (!ours) {
        dpc_note_pmpi(coll, why);
        return pmpi_reduce_scatter(call, sendbuf, recvbuf, recvcount, recvcounts, datatype, op,
                                   comm, mode, req);
    }
    dpc_comm_t *c;
    if ((err = dpc_comm_get(comm, call, &c)))
        return err;
    unsigned long long bytes = (unsigned long long)total * (unsigned long long)ti.size;
    if (mode == DPC_BLOCKING && (!recvcounts || size <= DPC_REPLAY_MAX_V_RANKS) && ti.contig &&
        !avg && !rs_pipe && !dpc_op_is_user(dop) && bytes <= DPC_REPLAY_MAX_BYTES) {
        if ((err = dpc_reduce_repeat(comm, c, call, coll, sendbuf, recvbuf,
                                     (size_t)recvcount * (size_t)ti.nbasic, recvcounts, size, &ti,
                                     dop, bytes)) != DPC_RUN_MISS)
            return err;
    }
    dpc_reduce_job_t local, *j = DPC_JOB_ALLOC(dpc_reduce_job_t, mode, local);
    if (j)
        dpc_reduce_job_setup(j);
    if (!j || !(j->counts = malloc(sizeof(size_t) * (size_t)size))) {
        dpc_job_discard(j ? &j->base : NULL, j != &local);
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
    }
    for (int i = 0; i < size; i++)
        j->counts[i] = (size_t)(recvcounts ? recvcounts[i] : recvcount) * (size_t)ti.nbasic;
    j->base.call = call;
    j->base.user = user;
    j->base.bytes = bytes;
    j->base.a = (dpc_coll_args_t){.coll = coll, .in_place = in_place, .count = j->counts[0],
                                  .counts = recvcounts ? j->counts : NULL, .dtype = ti.basic,
                                  .op = dop, .size = size, .rank = rank};
    dpc_pipe_t *pp = &j->base.pipe;
    pp->on = pp->owner = rs_pipe;
    if (rs_dev) {
        size_t tb = (size_t)total * (size_t)ti.size;
        pp->dev_in = (const char *)sendbuf + ti.true_lb;
        pp->dev_out = (char *)recvbuf + ti.true_lb;
        pp->dev_reduce = true;
        if (dpc_pipe_alloc(pp, tb, 0, dpc_pipeline_slot_bytes(&j->base.a, DPC_PIPE_CHUNK_BYTES))) {
            dpc_job_discard(&j->base, j != &local);
            return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: cannot allocate pinned host memory "
                             "(%zu bytes) to stage the device buffers", call, tb);
        }
    }
    j->sendbuf = sendbuf;
    j->recvbuf = recvbuf;
    j->total = total;
    j->mine = mine;
    j->ti = ti;
    j->in_place = in_place;
    j->avg = avg;
    j->size = size;
    if ((err = dpc_keep_type(datatype, &ti, mode, &j->dt, &j->dt_ours))) {
        dpc_job_discard(&j->base, j != &local);
        return dpc_raise(comm, err, "%s: cannot keep the datatype", call);
    }
    return dpc_run(comm, c, &j->base, mode, req);
}

/* The vector forms with recvcounts NULL, which the shared body would take
 * for the block form (a zero-count call: silently nothing): refused, or
 * the MPI library's own call when it runs them. */
static int null_recvcounts(const char *call, const void *sendbuf, void *recvbuf,
                           MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, dpc_mode_t mode,
                           MPI_Request *req)
{
    int err = MPI_SUCCESS;
    switch (dpc_enter(comm, DPC_REDUCE_SCATTER, call, mode, &err)) {
    case 0:
        return DPC_PMPI_BY_MODE(mode, Reduce_scatter, Ireduce_scatter, , MPI_INFO_NULL, req,
                                sendbuf, recvbuf, NULL, datatype, op, comm);
    case -1: return err;
    }
    return dpc_raise(comm, MPI_ERR_COUNT, "%s: recvcounts is NULL", call);
}

DPCOLL_API int MPI_Reduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                        MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return reduce_scatter("MPI_Reduce_scatter_block", sendbuf, recvbuf, recvcount, NULL, datatype,
                          op, comm, DPC_BLOCKING, NULL);
}

DPCOLL_API int MPI_Ireduce_scatter_block(const void *sendbuf, void *recvbuf, int recvcount,
                                         MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                         MPI_Request *request)
{
    return reduce_scatter("MPI_Ireduce_scatter_block", sendbuf, recvbuf, recvcount, NULL, datatype,
                          op, comm, DPC_NONBLOCKING, request);
}

DPCOLL_API int MPI_Reduce_scatter_block_init(const void *sendbuf, void *recvbuf, int recvcount,
                                             MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                             MPI_Info info, MPI_Request *request)
{
    (void)info;
    return reduce_scatter("MPI_Reduce_scatter_block_init", sendbuf, recvbuf, recvcount, NULL,
                          datatype, op, comm, DPC_PERSISTENT, request);
}

DPCOLL_API int MPI_Reduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                  MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    if (!recvcounts)
        return null_recvcounts("MPI_Reduce_scatter", sendbuf, recvbuf, datatype, op, comm, DPC_BLOCKING, NULL);
    return reduce_scatter("MPI_Reduce_scatter", sendbuf, recvbuf, 0, recvcounts, datatype, op,
                          comm, DPC_BLOCKING, NULL);
}

DPCOLL_API int MPI_Ireduce_scatter(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                   MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                   MPI_Request *request)
{
    if (!recvcounts)
        return null_recvcounts("MPI_Ireduce_scatter", sendbuf, recvbuf, datatype, op, comm, DPC_NONBLOCKING, request);
    return reduce_scatter("MPI_Ireduce_scatter", sendbuf, recvbuf, 0, recvcounts, datatype, op,
                          comm, DPC_NONBLOCKING, request);
}

DPCOLL_API int MPI_Reduce_scatter_init(const void *sendbuf, void *recvbuf, const int recvcounts[],
                                       MPI_Datatype datatype, MPI_Op op, MPI_Comm comm,
                                       MPI_Info info, MPI_Request *request)
{
    (void)info;
    if (!recvcounts)
        return null_recvcounts("MPI_Reduce_scatter_init", sendbuf, recvbuf, datatype, op, comm, DPC_PERSISTENT, request);
    return reduce_scatter("MPI_Reduce_scatter_init", sendbuf, recvbuf, 0, recvcounts, datatype, op,
                          comm, DPC_PERSISTENT, request);
}

/* ---- MPI-4 large-count forms (lcount.h) --------------------------------- */

static int reduce_scatter_c(const char *call, const void *sendbuf, void *recvbuf,
                            MPI_Count recvcount, const MPI_Count *recvcounts,
                            MPI_Datatype datatype, MPI_Op op, MPI_Comm comm, dpc_mode_t mode,
                            MPI_Info info, MPI_Request *req, bool v)
{
    dpc_coll_t coll = v ? DPC_REDUCE_SCATTER : DPC_REDUCE_SCATTER_BLOCK;
    int err = MPI_SUCCESS, *ic[4];
    void *mem;
    if (v && !recvcounts)
        return null_recvcounts(call, sendbuf, recvbuf, datatype, op, comm, mode, req);
    static const bool local[4] = {false};   /* (recvcounts: the same on every rank) */
    static const char *const names[4] = {"recvcounts"};
    dpc_lc_array_t in[4] = {{.counts = recvcounts}};
    /* an average is divided after the sum, which the MPI library's _c
     * forms would not do: only the int form runs it (on libdpcoll, or
     * disabled through the MPI library's call and then the division) */
    bool avg = op == dpc_g.avg_op && op != MPI_OP_NULL;
    int go = avg ? 1 : dpc_lc_enter(comm, coll, call, mode, in, local, names, ic, &mem, &err);
    if (avg) {
        int size = 0;
        if (dpc_enter(comm, coll, call, mode, &err) < 0)
            return err;
        PMPI_Comm_size(comm, &size);
        int cv = dpc_lc_convert(size, in, ic, &mem);
        if (cv < 0)
            return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", call);
        if (cv > 0 || (!recvcounts && !dpc_lc_fits(recvcount)))
            return dpc_raise(comm, MPI_ERR_COUNT, "%s: dpcoll_op_avg on more than 2^31-1 "
                             "elements in a block", call);
    }
    switch (go) {
    case -1: return err;
    case 1:
        if (recvcounts || dpc_lc_fits(recvcount)) {
            return DPC_LC_RUN(recvcounts, mem,
                              reduce_scatter(call, sendbuf, recvbuf, recvcounts ? 0 : (int)recvcount,
                                             ic[0], datatype, op, comm, mode, req));
        }
        free(mem);
        dpc_lc_note_pmpi(coll);
    }
    return pmpi_reduce_scatter_c(sendbuf, recvbuf, recvcount, recvcounts, datatype, op, comm, mode,
                                 info, req);
}

DPCOLL_API int MPI_Reduce_scatter_block_c(const void *sendbuf, void *recvbuf, MPI_Count recvcount,
                                          MPI_Datatype datatype, MPI_Op op, MPI_Comm comm)
{
    return reduce_scatter_c("MPI_Reduce_scatter_block_c", sendbuf, recvbuf, recvcount, NULL,
                            datatype, op, comm, DPC_BLOCKING, MPI_INFO_NULL, NULL, false);
}

DPCOLL_API int MPI_Ireduce_scatter_block_c(const void *sendbuf, void *recvbuf,
                                           MPI_Count recvcount, MPI_Datatype datatype, MPI_Op op,
                                           MPI_Comm comm, MPI_Request *request)
{
    return reduce_scatter_c("MPI_Ireduce_scatter_block_c", sendbuf, recvbuf, recvcount, NULL,
                            datatype, op, comm, DPC_NONBLOCKING, MPI_INFO_NULL, request, false);
}

DPCOLL_API int MPI_Reduce_scatter_block_init_c(const void *sendbuf, void *recvbuf,
                                               MPI_Count recvcount, MPI_Datatype datatype,
                                               MPI_Op op, MPI_Comm comm, MPI_Info info,
                                               MPI_Request *request)
{
    return reduce_scatter_c("MPI_Reduce_scatter_block_init_c", sendbuf, recvbuf, recvcount, NULL,
                            datatype, op, comm, DPC_PERSISTENT, info, request, false);
}

DPCOLL_API int MPI_Reduce_scatter_c(const void *sendbuf, void *recvbuf,
                                    const MPI_Count recvcounts[], MPI_Datatype datatype, MPI_Op op,
                                    MPI_Comm comm)
{
    return reduce_scatter_c("MPI_Reduce_scatter_c", sendbuf, recvbuf, 0, recvcounts, datatype, op,
                            comm, DPC_BLOCKING, MPI_INFO_NULL, NULL, true);
}

DPCOLL_API int MPI_Ireduce_scatter_c(const void *sendbuf, void *recvbuf,
                                     const MPI_Count recvcounts[], MPI_Datatype datatype,
                                     MPI_Op op, MPI_Comm comm, MPI_Request *request)
{
    return reduce_scatter_c("MPI_Ireduce_scatter_c", sendbuf, recvbuf, 0, recvcounts, datatype,
                            op, comm, DPC_NONBLOCKING, MPI_INFO_NULL, request, true);
}

DPCOLL_API int MPI_Reduce_scatter_init_c(const void *sendbuf, void *recvbuf,
                                         const MPI_Count recvcounts[], MPI_Datatype datatype,
                                         MPI_Op op, MPI_Comm comm, MPI_Info info,
                                         MPI_Request *request)
{
    return reduce_scatter_c("MPI_Reduce_scatter_init_c", sendbuf, recvbuf, 0, recvcounts,
                            datatype, op, comm, DPC_PERSISTENT, info, request, true);
}
