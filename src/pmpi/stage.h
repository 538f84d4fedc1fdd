/* Device buffers staged through host copies (cuda.c). */
#ifndef DPC_STAGE_H
#define DPC_STAGE_H

#include "shim.h"
#include "jobs.h"

extern const struct dpc_cuda_plugin *dpc_cuda;   /* NULL: host buffers only */
void dpc_cuda_load(void);
bool dpc_cuda_is_device(const void *p);
void *dpc_cuda_staging_stream(void);   /* the whole-staging copies' stream */
/* True inside a staged call (between dpc_stage_pair and dpc_stage_done):
 * the call on host copies that only this rank makes. */
bool dpc_stage_inner(void);
/* Orders libdpcoll's CUDA streams after the work the calling thread queued
 * on CUDA's default streams (dpc_cuda.h, order_after_user): every call with
 * a device buffer, before its first copy or kernel. Which streams: the
 * whole-staging one, or the pipelines' three queues. */
typedef enum { DPC_ORDER_STAGING, DPC_ORDER_QUEUES } dpc_order_t;
int dpc_cuda_order_after_user(MPI_Comm comm, const char *call, dpc_order_t which);


/* A host copy of the part of dev that n blocks (counts/displs, or count
 * elements) of dt cover; *host is to be used in place of dev (same
 * offsets). copy_in: fill it from the device. */
int dpc_stage_in(dpc_stage_t *st, const void *dev, MPI_Datatype dt, int n, const int *counts,
                 int count, const int *displs, bool copy_in, void **host);
/* Copy the host copy back to the device. */
int dpc_stage_out(dpc_stage_t *st);
void dpc_stage_free(dpc_stage_t *st);

/* What a buffer argument covers: n blocks of counts[i] at displs[i], or
 * count elements, of dt. */
typedef struct dpc_span {
    MPI_Datatype dt;
    int n;
    const int *counts;
    int count;
    const int *displs;
} dpc_span_t;
#define DPC_SPAN(dt, count) ((dpc_span_t){(dt), 1, NULL, (count), NULL})
#define DPC_SPANV(dt, n, counts, displs) ((dpc_span_t){(dt), (n), (counts), 0, (displs)})

/* A call with a device buffer among its two: host copies of those on the
 * device (*hs, *hr; the others unchanged), filled from the device. Then
 * the call runs on them in its own mode: with `ours` (it will reach
 * libdpcoll's engine: dpc_run) the job takes the copies over (dpc_stage_hand
 * was called: at every start the send side is copied in again, after every
 * end the receive side goes back, and the job frees them); otherwise (the
 * MPI library's own call) dpc_stage_done copies a blocking one's result
 * back and frees the copies, and hands a nonblocking one's request to a
 * request of ours that does so when it ends (stage_nb.c); a persistent
 * call is refused (MPI_ERR_BUFFER). (Not the blocking form instead: MPICH
 * does not match a blocking collective with the nonblocking one of ranks
 * whose buffers are on the host, and hangs. Nor a wait inside the
 * nonblocking call: that hangs where a host rank enters a blocking
 * collective that includes this rank before this one.) */
int dpc_stage_pair(MPI_Comm comm, const char *call, dpc_mode_t mode, bool ours, dpc_stage_t *ss,
                   const void *sbuf, dpc_span_t sd, void **hs, dpc_stage_t *rs, void *rbuf,
                   dpc_span_t rd, void **hr);
int dpc_stage_done(MPI_Comm comm, const char *call, dpc_stage_t *ss, dpc_stage_t *rs, int err,
                   dpc_mode_t mode, bool ours, MPI_Request *req);
/* For dpc_stage_done: *req, the MPI library's nonblocking call on the host
 * copies ss and rs, becomes a request of ours that completes after it, with
 * the result copied back (stage_nb.c); ss and rs are then the request's. */
int dpc_stage_nb_request(dpc_stage_t *ss, dpc_stage_t *rs, const char *call, MPI_Request *req);
/* For dpc_run: the copies dpc_stage_pair handed over, if any, become the
 * job's. */
void dpc_stage_claim(dpc_job_t *j, dpc_mode_t mode);
/* For the engine: before a start, after a successful end, at release. */
int dpc_job_stage_in(dpc_job_t *j, MPI_Comm comm);
/* The same without an MPI call (the engine's threads): nonzero on failure
 * (logged). */
int dpc_job_stage_in_now(dpc_job_t *j);
int dpc_job_stage_out(dpc_job_t *j, MPI_Comm comm);
void dpc_job_stage_free(dpc_job_t *j);

/* Pipelines of chunks (pipeline.c). */
#define DPC_PIPE_CHUNK_BYTES (1u << 20)
/* A call of these bytes and this op (a dpc_op_t, or -1: the MPI library's)
 * runs as a pipeline: the same on every rank, from the size, the op and a
 * job-wide flag. */
bool dpc_pipeline_wanted(size_t bytes, int op);
dpc_status_t dpc_pipeline_run_build(dpc_comm_t *c, const char *call, const dpc_coll_args_t *a,
                                    const dpc_pipe_t *pp, dpc_sched_t *s,
                                    const dpc_algo_t **first);
/* Pinned staging for a job's device buffers (an input of in_bytes, an
 * output of out_bytes; 0: none), and with pp->dev_reduce the slots for the
 * peers' contributions (nonzero: out of memory). */
int dpc_pipe_alloc(dpc_pipe_t *pp, size_t in_bytes, size_t out_bytes, size_t slot_bytes);
/* The plugin has a device kernel for this pair. */
bool dpc_cuda_can_reduce(dpc_dtype_t dt, dpc_op_t op);
/* Chunks run the owner algorithm on every rank, device ranks reducing on
 * the device (the same on every rank: job-wide settings and the size). */
bool dpc_pipeline_owner(int comm_size);
/* Frees a job's pinned staging. */
void dpc_pipe_release(dpc_pipe_t *pp);

/* Asynchronous device copies for schedules (with the plugin on). */
extern const dpc_device_ops_t dpc_cuda_device_ops;
void dpc_cuda_fini(void);

/* Whether a call's own buffer is on the device. Never in a staged call's
 * inner call, which runs on host copies whatever their addresses look
 * like: each is its pinned block less its span's lower bound, which may
 * point before the block, into memory the driver calls device (the inner
 * call then staged its host copy again, and its result never reached the
 * device). */
static inline bool dpc_buf_on_device(const void *p)
{
    return !dpc_stage_inner() && dpc_cuda_is_device(p);
}
/* Nonzero when one of the call's buffers is on the device (the plugin is on). */
#define DPC_ON_DEVICE(a, b) (dpc_cuda && (dpc_buf_on_device(a) || dpc_buf_on_device(b)))

#endif
