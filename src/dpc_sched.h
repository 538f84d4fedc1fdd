/*
 * The schedule engine: a collective is a DAG of steps (SEND, RECV, REDUCE,
 * COPY) with dependencies, built by an algorithm and then progressed here.
 * The schedule owns its scratch memory. A failed step fails the schedule:
 * everything still pending is cancelled, and the first error is reported
 * together with the peers the schedule was still waiting for.
 *
 * Build:   dpc_sched_create, dpc_sched_send/recv/reduce/copy, dpc_sched_scratch
 * Run:     dpc_sched_start, then dpc_sched_test until it is not INPROGRESS
 *          (or dpc_sched_wait); dpc_sched_destroy in any state.
 */
#ifndef DPC_SCHED_H
#define DPC_SCHED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "dpc_status.h"
#include "dpc_types.h"
#include "dpc_reduce.h"
#include "dpc_transport.h"

typedef struct dpc_sched dpc_sched_t;
typedef int dpc_step_id_t;           /* index of a step; negative = none */
#define DPC_STEP_NONE (-1)

/* Step-tag bits an algorithm may use; the rest of the 64-bit tag belongs to
 * the caller's tag_base (communicator id, collective sequence number) and to
 * the transport (the UCX one puts the source rank in the top bits). */
#define DPC_STEP_TAG_BITS 20
#define DPC_STEP_TAG_MAX ((1u << DPC_STEP_TAG_BITS) - 2)
/* (the last step tag: the engine's own acknowledgements, dpc_transport_t's
 * ack_min) */
#define DPC_STEP_TAG_ACK ((1u << DPC_STEP_TAG_BITS) - 1)

/* Dependency lists: DPC_AFTER(a, b) expands to "array, count". Entries that
 * are DPC_STEP_NONE are ignored, so an algorithm can pass "the previous step"
 * without special-casing the first one. */
#define DPC_AFTER(...) ((const dpc_step_id_t[]){__VA_ARGS__}), \
    ((int)(sizeof((dpc_step_id_t[]){__VA_ARGS__}) / sizeof(dpc_step_id_t)))
#define DPC_NO_DEPS NULL, 0

/* How a reduce step on non-host memory is carried out (the CUDA layer plugs
 * in here). Without one, a reduce on device memory fails as unsupported:
 * host code never dereferences a device pointer. */
typedef dpc_status_t (*dpc_device_reduce_fn_t)(void *dst, const void *a, const void *b,
                                               size_t count, dpc_dtype_t dt, dpc_op_t op,
                                               dpc_memtype_t mem, void *ctx);

/* Asynchronous copies between host and device memory (the CUDA layer, or a
 * test's stand-in): copy() starts one on queue 0 (towards the host) or 1
 * (towards the device), so the two directions overlap; cb comes exactly
 * once, from progress(), never from inside copy(); a copy of no bytes
 * reports after the queue's earlier work (a fence). */
typedef struct dpc_device_ops {
    dpc_status_t (*copy)(void *ctx, void *dst, const void *src, size_t bytes, int queue,
                         dpc_xfer_cb_t cb, void *arg);
    int (*progress)(void *ctx);     /* completions made */
    /* Optional: dst[i] = a[i] op b[i] on the device, started here and
     * reported through cb like a copy. Each of dst, a, b is device memory
     * or pinned host memory the device can address (a kernel reads a
     * staged peer contribution straight from it: no copy first). */
    dpc_status_t (*reduce)(void *ctx, void *dst, const void *a, const void *b, size_t count,
                           dpc_dtype_t dt, dpc_op_t op, dpc_xfer_cb_t cb, void *arg);
} dpc_device_ops_t;
#define DPC_TO_HOST 0
#define DPC_TO_DEVICE 1

/* Scratch memory kept between schedules (one per communicator): fresh large
 * allocations cost a page fault per 4 KiB and zeroing by the kernel on every
 * call; a pool that grows to the high-water mark costs nothing after the
 * first call. One schedule at a time uses it; others fall back to malloc.
 *
 * It grows by keeping the pieces a schedule had to allocate itself (up to
 * DPC_SCRATCH_CHUNKS pieces, at most twice the largest total asked for),
 * not by allocating afresh: those pages have been written already, and the
 * first writes to fresh pages are what make a large call slow (on the
 * reference VM 2-3 ms more at 1-4 MiB, in the second call of a size, the
 * one that found a fresh pool: docs/bench/first_calls.txt). A schedule
 * takes each piece from the first chunk with room, in order, so the same
 * call again finds the pieces it allocated where it needs them. When they do not fit that way, the pool
 * becomes one block of the largest total. */
#define DPC_SCRATCH_CHUNKS 8
typedef struct dpc_scratch_pool {
    char *chunk[DPC_SCRATCH_CHUNKS];
    size_t cap[DPC_SCRATCH_CHUNKS];   /* bytes at chunk[k] */
    int nchunks;
    size_t held;     /* bytes in all chunks */
    size_t want;     /* largest total a schedule asked for */
    int busy;
} dpc_scratch_pool_t;
void dpc_scratch_pool_fini(dpc_scratch_pool_t *pool);

typedef struct dpc_sched_params {
    dpc_transport_t *tp;
    uint64_t tag_base;            /* low DPC_STEP_TAG_BITS must be zero */
    uint64_t timeout_ns;          /* 0 = wait forever */
    dpc_memtype_t mem;            /* memory type of the user buffers and scratch */
    dpc_device_reduce_fn_t device_reduce;
    void *device_ctx;
    /* reduction steps of DPC_OP_USER: the program's op (dpc_reduce.h),
     * called in the thread that runs the step; may change at a replay */
    dpc_user_reduce_fn_t user_reduce;
    void *user_ctx;
    const dpc_device_ops_t *dev_ops;  /* for DEVICE_COPY steps */
    void *dev_ctx;
    dpc_scratch_pool_t *pool;     /* optional (host memory only) */
    bool defer_local;             /* start() only issues transfers; copies and
                                     reductions wait for test() (a nonblocking
                                     call returns at once; a progress thread
                                     does that work) */
    bool poll_recvs;              /* a small receive whose message is not here
                                     yet stays with the schedule, tried again
                                     (recv_now) at each test(), instead of being
                                     posted to the transport and reported back
                                     through its completion queue: for a call
                                     whose own thread tests it in a loop (a
                                     blocking call) */
    size_t local_slice_bytes;     /* 0, or: each test() does at most this much
                                     of a copy or reduction (then returns, so a
                                     caller holding a lock lets go soon) */
    size_t remote_slice_bytes;    /* 0, or: a read or write of a peer's host
                                     memory goes in slices of at most this
                                     size, one after the other (a slice's end
                                     is the transport's to report: a test each) */
    int32_t *device_failed;       /* NULL, or: a device step that fails (at its
                                     start or its end) does not fail the
                                     schedule; it counts as done, and *this is
                                     set to 1 (the caller tells its peers, who
                                     would otherwise wait for it) */
} dpc_sched_params_t;

dpc_status_t dpc_sched_create(const dpc_sched_params_t *params, dpc_sched_t **sched_p);
void dpc_sched_destroy(dpc_sched_t *s);
/* Reuse a finished schedule (done or failed, nothing in flight) for a new
 * collective, keeping its allocations: the small-message path then calls
 * malloc not at all. DPC_ERR_STATE if it cannot be reused (destroy it). */
dpc_status_t dpc_sched_reinit(dpc_sched_t *s, const dpc_sched_params_t *params);
/* Run a finished schedule (done, nothing in flight) again with the same
 * steps and scratch, skipping the build: for a call that repeats with the
 * same arguments and buffers (a build is a function of them alone). params
 * may change the tag base and timeout, not the transport, memory type or
 * pool; a schedule whose scratch came from a pool cannot be replayed (the
 * pool may be another's by now). Then dpc_sched_start as usual.
 * DPC_ERR_STATE if it cannot be replayed. */
dpc_status_t dpc_sched_replay(dpc_sched_t *s, const dpc_sched_params_t *params);
/* dpc_sched_replay with the parameters s last ran with, but for the tag
 * base and the program's reduction context (a blocking call repeated
 * exactly: the rest are the same, and copying them costs as much as the
 * replay itself). */
dpc_status_t dpc_sched_replay_tags(dpc_sched_t *s, uint64_t tag_base, void *user_ctx);
/* dpc_sched_replay_tags and dpc_sched_start in one, for a small blocking
 * call in the thread that waits for it, without the engine's queues and
 * completion callbacks: a finished schedule (as for dpc_sched_replay) of
 * at most DPC_RERUN_MAX_STEPS steps, each a send or receive that goes a
 * way send_now or recv_now can finish (the transport's now_way), a host
 * copy, a reduction or a join, runs its steps within the call, each once
 * its dependencies are done, its messages only by send_now and recv_now.
 * When max_idle passes over the steps left have done none of them (a
 * message not here yet), or at once when the transport cannot take a send
 * now, what is left goes to the engine: the
 * schedule is then running as after dpc_sched_start. *ran false (and
 * DPC_ERR_STATE): not such a schedule, nothing done. Otherwise DPC_OK when
 * it is done (and replayable again), DPC_INPROGRESS when it runs on (test
 * or wait for it as usual), or the error it failed with. */
#define DPC_RERUN_MAX_STEPS 32
dpc_status_t dpc_sched_rerun(dpc_sched_t *s, uint64_t tag_base, void *user_ctx,
                             unsigned max_idle, bool *ran);
/* A replayed schedule (after dpc_sched_replay, before start) moved onto
 * other buffers of the same sizes: every step address within
 * [old_base, old_base + bytes) of a range is moved by new_base - old_base
 * (a build addresses the caller's buffers only as base plus offset, so
 * this is the schedule a build on the new buffers would make). Ranges
 * must not overlap each other unless they move alike. */
typedef struct dpc_sched_move {
    const void *old_base, *new_base;
    size_t bytes;
} dpc_sched_move_t;
dpc_status_t dpc_sched_rebase(dpc_sched_t *s, const dpc_sched_move_t *moves, int nmoves);
/* Steps ready to run now (slices of a copy or reduction left): the next
 * test() has work without waiting for the network. */
bool dpc_sched_has_local_work(const dpc_sched_t *s);
/* The same for dpc_sched_test_held: local work other than a program's
 * reduction waiting at the head of the queue. */
bool dpc_sched_has_unheld_work(const dpc_sched_t *s);
/* Running, and no peer needs this process to progress it any more: what
 * is left is receives the peers' messages complete by themselves (the
 * transport's settled()) and local steps after them. Its caller can leave
 * it until it waits for it. Schedules of more than DPC_SETTLED_MAX_STEPS
 * steps are not looked at (false). */
#define DPC_SETTLED_MAX_STEPS 64
bool dpc_sched_settled(const dpc_sched_t *s);
/* Nothing in flight and not running: reinit will succeed. */
bool dpc_sched_idle(const dpc_sched_t *s);
/* A finished schedule kept for later gives its pool back (for a collective
 * that runs meanwhile); its results in scratch are then gone. */
void dpc_sched_release_pool(dpc_sched_t *s);

/* Scratch owned by the schedule, 64-byte aligned, freed with it. NULL on
 * failure; the schedule then also remembers DPC_ERR_NOMEM for start(). */
void *dpc_sched_scratch(dpc_sched_t *s, size_t bytes);

/* Each returns the new step's id, or DPC_STEP_NONE after an error, which
 * start() then reports (so builders need not check every call). A zero-byte
 * SEND/RECV is a legal step; algorithms skip them on both sides alike. */
dpc_step_id_t dpc_sched_send(dpc_sched_t *s, int peer, uint32_t tag, const void *buf,
                             size_t bytes, const dpc_step_id_t *deps, int ndeps);
dpc_step_id_t dpc_sched_recv(dpc_sched_t *s, int peer, uint32_t tag, void *buf,
                             size_t bytes, const dpc_step_id_t *deps, int ndeps);
/* dst[i] = a[i] op b[i]; dst may equal a or b. */
dpc_step_id_t dpc_sched_reduce(dpc_sched_t *s, void *dst, const void *a, const void *b,
                               size_t count, dpc_dtype_t dt, dpc_op_t op,
                               const dpc_step_id_t *deps, int ndeps);
dpc_step_id_t dpc_sched_copy(dpc_sched_t *s, void *dst, const void *src, size_t bytes,
                             const dpc_step_id_t *deps, int ndeps);
/*
 * One-sided steps, for transports that can read a peer's memory (see
 * dpc_transport.h; dpc_sched_one_sided says whether this one can, for host
 * memory). EXPOSE makes [buf, buf+bytes) readable by peers and writes its
 * descriptor (DPC_REGION_DESC_MAX bytes) to desc, for a SEND to carry; the
 * region stays exposed until the schedule is reset or destroyed, so an
 * algorithm must not finish before its peers have said they are done
 * reading. GET reads bytes at `offset` of the region whose descriptor is at
 * desc (received from `peer` by an earlier step) into dst; PUT writes bytes
 * from src there instead (done = in the peer's memory).
 */
bool dpc_sched_one_sided(const dpc_sched_t *s);
dpc_step_id_t dpc_sched_put(dpc_sched_t *s, int peer, const void *desc, size_t offset,
                            const void *src, size_t bytes, const dpc_step_id_t *deps, int ndeps);
dpc_step_id_t dpc_sched_expose(dpc_sched_t *s, void *buf, size_t bytes, void *desc,
                               const dpc_step_id_t *deps, int ndeps);
dpc_step_id_t dpc_sched_get(dpc_sched_t *s, int peer, const void *desc, size_t offset,
                            void *dst, size_t bytes, const dpc_step_id_t *deps, int ndeps);
/* A GET whose offset into the region is known only when it runs: the
 * 64-bit value at offset_at then (a peer's message tells it), plus offset. */
dpc_step_id_t dpc_sched_get_at(dpc_sched_t *s, int peer, const void *desc, const void *offset_at,
                               size_t offset, void *dst, size_t bytes,
                               const dpc_step_id_t *deps, int ndeps);
/* A PUT whose offset is known only when it runs, as dpc_sched_get_at's. */
dpc_step_id_t dpc_sched_put_at(dpc_sched_t *s, int peer, const void *desc, const void *offset_at,
                               size_t offset, const void *src, size_t bytes,
                               const dpc_step_id_t *deps, int ndeps);

/* An asynchronous copy through params.dev_ops, towards the host
 * (DPC_TO_HOST) or the device (DPC_TO_DEVICE). */
dpc_step_id_t dpc_sched_device_copy(dpc_sched_t *s, void *dst, const void *src, size_t bytes,
                                    int queue, const dpc_step_id_t *deps, int ndeps);

/* Done once the device has finished all the work queued on `queue` before
 * the step ran (a copy of no bytes: dev_ops->copy must report it after the
 * queue's earlier work, as a CUDA event does). */
dpc_step_id_t dpc_sched_device_fence(dpc_sched_t *s, int queue, const dpc_step_id_t *deps,
                                     int ndeps);

/* A reduction through params.dev_ops->reduce (which must exist). */
dpc_step_id_t dpc_sched_device_reduce(dpc_sched_t *s, void *dst, const void *a, const void *b,
                                      size_t count, dpc_dtype_t dt, dpc_op_t op,
                                      const dpc_step_id_t *deps, int ndeps);

/*
 * Sub-builds: one collective's build nested in a larger schedule (a chunk
 * of a pipeline). Between begin and end, a step with no dependency gets
 * `gate` as one, and step tags are moved up by tag_off; a tag of tag_span
 * or more fails the build (DPC_ERR_ARG: the nested algorithm needs more tags
 * than its share). end returns a step done when all of the sub-build is.
 */
void dpc_sched_sub_begin(dpc_sched_t *s, dpc_step_id_t gate, uint32_t tag_off, uint32_t tag_span);
dpc_step_id_t dpc_sched_sub_end(dpc_sched_t *s);

/* A step that does nothing: a join point for many dependencies. */
dpc_step_id_t dpc_sched_nop(dpc_sched_t *s, const dpc_step_id_t *deps, int ndeps);

/* A builder that cannot go on records why; start() then reports it. */
void dpc_sched_set_error(dpc_sched_t *s, dpc_status_t st);

dpc_status_t dpc_sched_start(dpc_sched_t *s);
/* Progress once: DPC_OK when complete, DPC_INPROGRESS, or the first error. */
dpc_status_t dpc_sched_test(dpc_sched_t *s);
/* The same, the caller having just progressed the transport itself (once
 * for many schedules on one transport). */
dpc_status_t dpc_sched_test_progressed(dpc_sched_t *s);
/* The same, for a thread that must not run a program's reduction function
 * (DPC_OP_USER; a library's progress thread): local steps run in order up
 * to the first such reduction, which waits for a dpc_sched_test(_progressed)
 * from a thread that may; transfers go on meanwhile. The timeout does not
 * count while that reduction waits (the wait is the program's). */
dpc_status_t dpc_sched_test_held(dpc_sched_t *s);
/* Progress until done or failed; yields the CPU while idle. */
dpc_status_t dpc_sched_wait(dpc_sched_t *s);

int dpc_sched_nsteps(const dpc_sched_t *s);
/* Peers of the steps that were still in flight when the schedule failed (or
 * now, while it runs); writes at most max, returns how many there are. */
int dpc_sched_waiting_peers(const dpc_sched_t *s, int *peers, int max);
/* A one-line description of the failure: status, failed step, peers waited for. */
void dpc_sched_describe(const dpc_sched_t *s, char *buf, size_t len);

/* For tests: counters of what this schedule did. */
typedef struct dpc_sched_stats {
    uint64_t sends, recvs, reduces, copies, gets, puts, dev_reduces;
    uint64_t bytes_sent, bytes_recvd, elems_reduced, bytes_copied, bytes_got, bytes_put,
        dev_elems_reduced;
} dpc_sched_stats_t;
void dpc_sched_get_stats(const dpc_sched_t *s, dpc_sched_stats_t *st);

#endif
