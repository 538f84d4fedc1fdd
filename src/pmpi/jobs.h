/*
 * The wrappers' jobs (see dpc_job_t in shim.h): what each kind of collective
 * stages before its schedule and hands back after it. Shared by the
 * blocking, nonblocking and persistent forms of each call.
 */
#ifndef DPC_JOBS_H
#define DPC_JOBS_H

#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include "blocks.h"

/* Allreduce and reduce-scatter: reduce `total` elements of dt; this rank's
 * result is `mine` elements. */
typedef struct dpc_reduce_job {
    dpc_job_t base;
    const void *sendbuf;
    void *recvbuf;
    long long total, mine;
    MPI_Datatype dt;            /* the user's, or our duplicate of it */
    bool dt_ours;
    dpc_dtinfo_t ti;
    bool in_place, avg;
    int size;
    size_t *counts;             /* reduce-scatter: per-rank counts in basic elements */
    char *out, *tin, *tout;     /* staging for non-contiguous datatypes */
} dpc_reduce_job_t;
void dpc_reduce_job_setup(dpc_reduce_job_t *j);

/* Allgather(v), alltoall(v), bcast: bytes in blocks. */
typedef struct dpc_move_job {
    dpc_job_t base;
    const void *sendbuf;
    void *recvbuf;
    int sendcount, recvcount;
    const int *sendcounts, *sdispls, *recvcounts, *rdispls;
    MPI_Datatype sendtype, recvtype;
    bool st_ours, rt_ours;
    dpc_dtinfo_t sti, rti;
    bool in_place;
    int size, rank, root;
    bool staged;
    char *in, *tin;
    dpc_blocks_t sb, rb;        /* last: large, and not cleared (see below) */
} dpc_move_job_t;
/* A cleared move job without touching the ~2 KiB of the blocks' inline
 * arrays (a small collective's whole budget is a few hundred ns). */
static inline dpc_move_job_t *dpc_move_job_clear(dpc_move_job_t *j)
{
    if (j) {
        memset(j, 0, offsetof(dpc_move_job_t, sb));
        j->sb.bytes = j->sb.displs = NULL;
        j->sb.staging = NULL;
        j->rb.bytes = j->rb.displs = NULL;
        j->rb.staging = NULL;
    }
    return j;
}
#define DPC_MOVE_JOB_ALLOC(mode, local) \
    dpc_move_job_clear((mode) == DPC_BLOCKING ? &(local) : malloc(sizeof(dpc_move_job_t)))
void dpc_allgather_job_setup(dpc_move_job_t *j);
void dpc_alltoall_job_setup(dpc_move_job_t *j);
void dpc_bcast_job_setup(dpc_move_job_t *j);

/* A small blocking call on contiguous host data that may repeat a kept
 * one: run past the job by dpc_run_repeat with the arguments the job's
 * prepare would make of such data, or DPC_RUN_MISS (nothing done: the
 * caller sets up its job). The other conditions (blocking, contiguous,
 * small, no averaging or program's op) are the caller's. Allgather and
 * alltoall (equal blocks of recvcount elements of rti; no send side in
 * place): */
int dpc_move_repeat(MPI_Comm comm, dpc_comm_t *c, const char *call, dpc_coll_t coll,
                    const void *sendbuf, const dpc_dtinfo_t *sti, void *recvbuf, int recvcount,
                    const dpc_dtinfo_t *rti, unsigned long long bytes);
/* ... allgatherv and alltoallv, on communicators of up to
 * DPC_REPLAY_MAX_V_RANKS (the receive side's counts and displacements in
 * elements of rti; alltoallv's send side's in sti's, NULL in place or for
 * allgatherv): */
typedef struct dpc_move_vectors {
    int size;
    const int *recvcounts, *rdispls, *sendcounts, *sdispls;
} dpc_move_vectors_t;
int dpc_movev_repeat(MPI_Comm comm, dpc_comm_t *c, const char *call, dpc_coll_t coll,
                     const void *sendbuf, const dpc_dtinfo_t *sti, void *recvbuf,
                     const dpc_dtinfo_t *rti, const dpc_move_vectors_t *v,
                     unsigned long long bytes);
/* ... allreduce, reduce_scatter_block and reduce_scatter (count elements
 * of the result here, of the basic type dt, or reduce_scatter's
 * recvcounts of the program's type, nbasic basic elements each, on a
 * communicator of up to DPC_REPLAY_MAX_V_RANKS; in place: the input is
 * in recvbuf): */
int dpc_reduce_repeat(MPI_Comm comm, dpc_comm_t *c, const char *call, dpc_coll_t coll,
                      const void *sendbuf, void *recvbuf, size_t count, const int *recvcounts,
                      int size, const dpc_dtinfo_t *ti, dpc_op_t op, unsigned long long bytes);

/* For calls that outlive the wrapper: a non-contiguous datatype is
 * duplicated (the program may free its own before the request completes).
 * Returns the type to use; *ours says whether to free it in release. */
int dpc_keep_type(MPI_Datatype dt, const dpc_dtinfo_t *ti, dpc_mode_t mode, MPI_Datatype *kept,
                  bool *ours);
void dpc_drop_type(MPI_Datatype *dt, bool *ours);

/* A job that will not run after all: its staging goes, and the job itself
 * when it was allocated (not the caller's stack copy). NULL is fine. */
void dpc_job_discard(dpc_job_t *j, bool heap);

/* A request already complete, for calls that ran to the end at once. */
int dpc_done_request(MPI_Request *req);
/* A collective's status as the query function of a generalized request
 * fills it (no source, tag or elements; err as its error); returns err. */
int dpc_collective_status(MPI_Status *status, int err);

#endif
