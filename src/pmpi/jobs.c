/*
 * Staging around the schedule for each kind of collective (see jobs.h). A
 * job's prepare may run many times (a persistent collective's every
 * MPI_Start): it drops what the previous run staged before staging anew.
 */
#include "config.h"
#include "jobs.h"
#include "stage.h"
#include <stdlib.h>
#include "dpc_reduce.h"

int dpc_keep_type(MPI_Datatype dt, const dpc_dtinfo_t *ti, dpc_mode_t mode, MPI_Datatype *kept,
                  bool *ours)
{
    *kept = dt;
    *ours = false;
    if (mode == DPC_BLOCKING || ti->contig)
        return MPI_SUCCESS;      /* never used after the call, or only as bytes */
    int rc = PMPI_Type_dup(dt, kept);
    *ours = rc == MPI_SUCCESS;
    return rc;
}

void dpc_job_discard(dpc_job_t *j, bool heap)
{
    if (!j)
        return;
    if (j->release)
        j->release(j);
    if (heap)
        free(j);
}

void dpc_drop_type(MPI_Datatype *dt, bool *ours)
{
    if (*ours)
        PMPI_Type_free(dt);
    *ours = false;
}

/* ---- allreduce, reduce-scatter ---- */

static int reduce_prepare(dpc_job_t *b, MPI_Comm comm)
{
    dpc_reduce_job_t *j = (dpc_reduce_job_t *)b;
    char *in;
    free(j->tin);
    j->tin = NULL;
    int err = dpc_pack(j->in_place ? j->recvbuf : j->sendbuf, (int)j->total, j->dt, &j->ti, comm,
                       &in, &j->tin);
    if (err)
        return dpc_raise(comm, err, "%s: cannot stage the input (%s)", b->call,
                         err == MPI_ERR_NO_MEM ? "out of memory" : "pack failed");
    if (j->ti.contig || j->mine == 0)
        j->out = (char *)j->recvbuf + j->ti.true_lb;
    else if (j->in_place)
        j->out = j->tin;                  /* work in place on the packed copy */
    else if (j->tout || (j->tout = malloc((size_t)j->ti.size * (size_t)j->mine)))
        j->out = j->tout;
    else
        return dpc_raise(comm, MPI_ERR_NO_MEM, "%s: out of memory", b->call);
    b->a.sbuf = in;
    b->a.rbuf = j->out;
    return MPI_SUCCESS;
}

static int reduce_finish(dpc_job_t *b, MPI_Comm comm)
{
    dpc_reduce_job_t *j = (dpc_reduce_job_t *)b;
    if (j->avg && dpc_div_host(j->out, (size_t)j->mine * (size_t)j->ti.nbasic, j->ti.basic,
                               j->size) != DPC_OK)
        return dpc_raise(comm, MPI_ERR_OP, "%s: dpcoll_op_avg on a non floating-point type",
                         b->call);
    if (!j->ti.contig && j->mine > 0)
        return dpc_unpack(j->out, j->recvbuf, (int)j->mine, j->dt, comm);
    return MPI_SUCCESS;
}

static void reduce_release(dpc_job_t *b)
{
    dpc_reduce_job_t *j = (dpc_reduce_job_t *)b;
    dpc_pipe_release(&b->pipe);
    dpc_job_stage_free(b);
    free(j->tin);
    free(j->tout);
    free(j->counts);
    j->tin = j->tout = NULL;
    j->counts = NULL;
    dpc_drop_type(&j->dt, &j->dt_ours);
}

void dpc_reduce_job_setup(dpc_reduce_job_t *j)
{
    j->base.prepare = reduce_prepare;
    j->base.finish = reduce_finish;
    j->base.release = reduce_release;
}

int dpc_reduce_repeat(MPI_Comm comm, dpc_comm_t *c, const char *call, dpc_coll_t coll,
                      const void *sendbuf, void *recvbuf, size_t count, const int *recvcounts,
                      int size, const dpc_dtinfo_t *ti, dpc_op_t op, unsigned long long bytes)
{
    bool in_place = sendbuf == MPI_IN_PLACE;
    /* (what reduce_prepare makes of contiguous data; the counts as the
     * job's, in basic elements, here on the stack) */
    size_t counts[DPC_REPLAY_MAX_V_RANKS];
    if (recvcounts && (size < 1 || size > DPC_REPLAY_MAX_V_RANKS))
        return DPC_RUN_MISS;
    for (int i = 0; recvcounts && i < size; i++)
        counts[i] = (size_t)recvcounts[i] * (size_t)ti->nbasic;
    dpc_coll_args_t a = {.coll = coll, .in_place = in_place,
                         .count = recvcounts ? counts[0] : count,
                         .counts = recvcounts ? counts : NULL, .dtype = ti->basic, .op = op,
                         .sbuf = (const char *)(in_place ? recvbuf : sendbuf) + ti->true_lb,
                         .rbuf = (char *)recvbuf + ti->true_lb};
    return dpc_run_repeat(comm, c, call, &a, bytes);
}

/* ---- allgather(v) ---- */

static void move_unstage(dpc_move_job_t *j)
{
    if (!j->staged)
        return;
    dpc_blocks_free(&j->sb);
    dpc_blocks_free(&j->rb);
    free(j->tin);
    j->tin = NULL;
    j->staged = false;
}

static int stage_error(dpc_job_t *b, MPI_Comm comm, int err)
{
    return dpc_raise(comm, err, "%s: cannot stage the buffers (%s)", b->call,
                     err == MPI_ERR_NO_MEM ? "out of memory" : "pack failed");
}

static int allgather_prepare(dpc_job_t *b, MPI_Comm comm)
{
    dpc_move_job_t *j = (dpc_move_job_t *)b;
    move_unstage(j);
    j->staged = true;
    j->in = NULL;
    /* in place, our own block is already in recvbuf: stage just that one */
    int err = dpc_blocks_make(&j->rb, j->recvbuf, j->size, j->recvcounts, j->recvcount, j->rdispls,
                              j->recvtype, &j->rti, j->in_place, j->rank, comm);
    if (!err && !j->in_place)
        err = dpc_pack(j->sendbuf, j->sendcount, j->sendtype, &j->sti, comm, &j->in, &j->tin);
    if (err)
        return stage_error(b, comm, err);
    b->a.sbuf = j->in;
    b->a.rbuf = j->rb.base;
    b->a.count = j->rb.bytes[0];
    b->a.counts = j->recvcounts ? j->rb.bytes : NULL;
    b->a.displs = j->recvcounts ? j->rb.displs : NULL;
    return MPI_SUCCESS;
}

static int allgather_finish(dpc_job_t *b, MPI_Comm comm)
{
    dpc_move_job_t *j = (dpc_move_job_t *)b;
    return dpc_blocks_unpack(&j->rb, j->recvbuf, j->size, j->recvcounts, j->recvcount, j->rdispls,
                             j->recvtype, &j->rti, j->in_place ? j->rank : -1, comm);
}

static void move_release(dpc_job_t *b)
{
    dpc_move_job_t *j = (dpc_move_job_t *)b;
    move_unstage(j);
    dpc_job_stage_free(b);
    dpc_drop_type(&j->sendtype, &j->st_ours);
    dpc_drop_type(&j->recvtype, &j->rt_ours);
}

int dpc_move_repeat(MPI_Comm comm, dpc_comm_t *c, const char *call, dpc_coll_t coll,
                    const void *sendbuf, const dpc_dtinfo_t *sti, void *recvbuf, int recvcount,
                    const dpc_dtinfo_t *rti, unsigned long long bytes)
{
    bool in_place = sendbuf == MPI_IN_PLACE;
    /* (what allgather_prepare and alltoall_prepare make of contiguous data) */
    dpc_coll_args_t a = {.coll = coll, .in_place = in_place, .dtype = DPC_BYTE,
                         .count = (size_t)recvcount * (size_t)rti->size,
                         .sbuf = in_place ? NULL : (const char *)sendbuf + sti->true_lb,
                         .rbuf = (char *)recvbuf + rti->true_lb};
    return dpc_run_repeat(comm, c, call, &a, bytes);
}

int dpc_movev_repeat(MPI_Comm comm, dpc_comm_t *c, const char *call, dpc_coll_t coll,
                     const void *sendbuf, const dpc_dtinfo_t *sti, void *recvbuf,
                     const dpc_dtinfo_t *rti, const dpc_move_vectors_t *v,
                     unsigned long long bytes)
{
    enum { MAXP = DPC_REPLAY_MAX_V_RANKS };
    bool in_place = sendbuf == MPI_IN_PLACE, sends = coll == DPC_ALLTOALLV && !in_place;
    size_t rb[MAXP], rd[MAXP], sb[MAXP], sd[MAXP];
    if (v->size < 1 || v->size > MAXP)
        return DPC_RUN_MISS;
    /* (what dpc_blocks_make makes of contiguous data) */
    dpc_blocks_contig(rb, rd, v->size, v->recvcounts, 0, v->rdispls, rti);
    if (sends)
        dpc_blocks_contig(sb, sd, v->size, v->sendcounts, 0, v->sdispls, sti);
    /* (what allgather_prepare and alltoall_prepare make of it) */
    dpc_coll_args_t a = {.coll = coll, .in_place = in_place, .dtype = DPC_BYTE, .count = rb[0],
                         .counts = rb, .displs = rd, .scounts = sends ? sb : NULL,
                         .sdispls = sends ? sd : NULL,
                         .sbuf = in_place ? NULL : (const char *)sendbuf + sti->true_lb,
                         .rbuf = (char *)recvbuf + rti->true_lb};
    return dpc_run_repeat(comm, c, call, &a, bytes);
}

void dpc_allgather_job_setup(dpc_move_job_t *j)
{
    j->base.prepare = allgather_prepare;
    j->base.finish = allgather_finish;
    j->base.release = move_release;
}

/* ---- alltoall(v) ---- */

static int alltoall_prepare(dpc_job_t *b, MPI_Comm comm)
{
    dpc_move_job_t *j = (dpc_move_job_t *)b;
    move_unstage(j);
    j->staged = true;
    /* in place, the send data are the receive blocks: stage them all */
    int err = dpc_blocks_make(&j->rb, j->recvbuf, j->size, j->recvcounts, j->recvcount, j->rdispls,
                              j->recvtype, &j->rti, j->in_place, -1, comm);
    if (!err && !j->in_place)
        err = dpc_blocks_make(&j->sb, (void *)j->sendbuf, j->size, j->sendcounts, j->sendcount,
                              j->sdispls, j->sendtype, &j->sti, 1, -1, comm);
    if (err)
        return stage_error(b, comm, err);
    dpc_coll_args_t *a = &b->a;
    a->sbuf = j->in_place ? NULL : j->sb.base;
    a->rbuf = j->rb.base;
    a->count = j->rb.bytes[0];
    if (a->coll == DPC_ALLTOALLV) {
        a->counts = j->rb.bytes;
        a->displs = j->rb.displs;
        a->scounts = j->in_place ? NULL : j->sb.bytes;
        a->sdispls = j->in_place ? NULL : j->sb.displs;
    }
    return MPI_SUCCESS;
}

static int alltoall_finish(dpc_job_t *b, MPI_Comm comm)
{
    dpc_move_job_t *j = (dpc_move_job_t *)b;
    return dpc_blocks_unpack(&j->rb, j->recvbuf, j->size, j->recvcounts, j->recvcount, j->rdispls,
                             j->recvtype, &j->rti, -1, comm);
}

void dpc_alltoall_job_setup(dpc_move_job_t *j)
{
    j->base.prepare = alltoall_prepare;
    j->base.finish = alltoall_finish;
    j->base.release = move_release;
}

/* ---- bcast: the root and the others may use different datatypes of the
 * same signature; all that travels is bytes ---- */

static int bcast_prepare(dpc_job_t *b, MPI_Comm comm)
{
    dpc_move_job_t *j = (dpc_move_job_t *)b;
    move_unstage(j);
    j->staged = true;
    if (j->rank == j->root) {
        int err = dpc_pack(j->recvbuf, j->recvcount, j->recvtype, &j->rti, comm, &j->in, &j->tin);
        if (err)
            return stage_error(b, comm, err);
    } else if (j->rti.contig || j->recvcount == 0) {
        j->in = (char *)j->recvbuf + j->rti.true_lb;
    } else if (!(j->in = j->tin = malloc((size_t)j->rti.size * (size_t)j->recvcount))) {
        return stage_error(b, comm, MPI_ERR_NO_MEM);
    }
    b->a.rbuf = j->in;
    return MPI_SUCCESS;
}

static int bcast_finish(dpc_job_t *b, MPI_Comm comm)
{
    dpc_move_job_t *j = (dpc_move_job_t *)b;
    if (j->rank != j->root && j->tin)
        return dpc_unpack(j->tin, j->recvbuf, j->recvcount, j->recvtype, comm);
    return MPI_SUCCESS;
}

void dpc_bcast_job_setup(dpc_move_job_t *j)
{
    j->base.prepare = bcast_prepare;
    j->base.finish = bcast_finish;
    j->base.release = move_release;
}
