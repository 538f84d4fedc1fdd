/*
 * The PMPI shim's shared state and helpers. Everything here runs inside an
 * MPI program between PMPI_Init and PMPI_Finalize.
 */
#ifndef DPC_SHIM_H
#define DPC_SHIM_H

#include <mpi.h>
#include <pthread.h>
#include <stdbool.h>
#include <time.h>
#include "dpc_coll.h"
#include "dpc_config.h"
#include "dpc_cost.h"
#include "dpc_ucx.h"
#include "dpcoll.h"
#include "streak.h"

/* Why a call went to PMPI_* (stats and logs). */
typedef enum {
    DPC_WHY_DISABLED, DPC_WHY_INTERCOMM, DPC_WHY_USER_OP, DPC_WHY_TYPE, DPC_WHY_LARGE_COUNT,
    DPC_WHY_F08,    /* persistent, mpi_f08's request calls past us (fortran.c) */
    DPC_WHY_COUNT
} dpc_why_t;

typedef struct dpc_coll_stats {
    unsigned long long ours, pmpi, bytes, errors;
    unsigned long long why[DPC_WHY_COUNT];
    unsigned long long *by_algo;   /* indexed like dpc_algos() */
    unsigned long long ipc;        /* device to device through CUDA IPC (ipc.c) */
    unsigned long long short_way;  /* of ours, repeats run past the job (dpc_run_repeat) */
} dpc_coll_stats_t;

typedef struct dpc_shim {
    bool active;            /* our path is on (same on every rank) */
    bool finalizing;
    bool f08;               /* MPICH's Fortran bindings are loaded on some rank: a
                               program's ops go to PMPI (user_op.c) */
    bool f08_past_us;       /* on some rank mpi_f08's MPI_Start, MPI_Wait ... are the MPI
                               library's, not ours: persistent calls go to PMPI on all
                               (fortran.c) */
    dpc_config_t cfg;
    uint64_t *explained;    /* DPCOLL_EXPLAIN: signatures already shown */
    size_t nexplained;
    int world_rank, world_size, thread_level;
    bool mt;                /* MPI_THREAD_MULTIPLE: user threads call us concurrently */
    bool oversubscribed;    /* more ranks on this node than cores for them */
    int *node_of;           /* per world rank: its node, numbered in the order of
                               each node's lowest rank; NULL on one node */
    int nnodes;             /* the job's nodes (1 on one node) */
    bool pipeline;          /* some rank has the CUDA plugin: large allreduces run
                               as pipelines of chunks on every rank (pipeline.c) */
    bool ipc;               /* ... and all ranks are on one node, DPCOLL_IPC on:
                               blocking calls try CUDA IPC (ipc.c) */
    pthread_mutex_t lock;
    dpc_ucx_t *ux;
    MPI_Comm probe_comm;    /* a copy of MPI_COMM_WORLD no message is ever sent on, */
    MPI_Request probe_req;  /* ... and a receive posted there: testing it runs the MPI
                               library's progress (run.c) */
    char probe_byte;
    int keyval;
    unsigned comm_gen;      /* bumped (atomic) whenever MPI drops our state from a
                               communicator: invalidates every thread's memory of
                               the last one (dpc_tl_known) */
    uint64_t ctx_used[(1 << DPC_UCX_CTX_BITS) / 64];
    dpc_coll_stats_t stats[DPC_COLL_COUNT];
    int nalgos;
    MPI_Op avg_op;          /* dpcoll_op_avg */
    MPI_Datatype bf16;      /* dpcoll_type_bfloat16 */
    /* nonblocking collectives (nbc.c) */
    int nb_active;          /* ops whose schedule still runs (atomic reads) */
    size_t nb_active_bytes; /* ... their jobs' bytes, together (atomic reads) */
    unsigned long long tuned, tuned_other;   /* DPCOLL_STATS: call signatures
                               DPCOLL_AUTOTUNE decided, and how many of them kept an
                               algorithm other than the model's */
    unsigned long long retuned;   /* ... of those decisions, the ones after measuring a
                                     decided signature again (DPCOLL_AUTOTUNE_PERIOD) */
    unsigned long long nb_started, prog_wakes;   /* DPCOLL_STATS: nonblocking and
                               persistent starts, and how often the progress thread
                               was woken for them (under the lock) */
    int drivers;            /* user threads now progressing the engine (changed
                               under the lock, atomically: the sleeping progress
                               thread reads it without the lock) */
    int nb_orphans;         /* ops whose request was freed while they ran */
    int lock_wanted;        /* user threads waiting for the lock */
    struct dpc_req *ops;     /* every nonblocking op not yet freed (list) */
    int prog_evfd;          /* the progress thread sleeps on it (eventfd) */
    bool prog_asleep;       /* ... and does now (under the lock) */
    bool prog_watching;     /* ... and looks again within PROG_WATCH_MS by itself,
                               unsignalled (under the lock) */
    uint64_t nb_last_start_ns;  /* when the last nonblocking or persistent op started
                               (under the lock) */
    dpc_streak_t streak;    /* whether the program waits for its ops at once
                               (dpc_nbc_asked) */
    uint64_t nb_inside_ns;  /* time the program spent in our starts and waits while
                               ops ran (atomic: dpc_nbc_inside) */
    int nb_unjudged;        /* running ops the program has not asked for yet, whose
                               ask dpc_nbc_asked judges (atomic) */
    unsigned long long prog_wakes_spared;   /* DPCOLL_STATS: starts that did not wake
                               the thread because the program waits at once */
    pthread_t prog_thread;
    bool prog_running, prog_stop;
    MPIX_Grequest_class greq_class;
} dpc_shim_t;

extern dpc_shim_t dpc_g;

/* Per-communicator state, attached with an attribute keyval. */
/* (16 small nonblocking calls of one shape in flight, as a training step
 * posts its buckets, each need a slot of their own: with 8, half of them
 * built a schedule at every step and evicted another) */
#define DPC_REPLAY_SLOTS 32
#define DPC_CHOICE_SLOTS 8

/* Scratch pools per communicator: one for each of this many large calls in
 * flight at once (a training step's buckets); more take their scratch from
 * malloc. Why more than one:
 * glibc gives large freed blocks back to the kernel (munmap, or a trimmed
 * heap), so a call's malloc'd scratch was fresh pages, and on the
 * project's VMs a page's first writes cost about 4 us, by this process or
 * by a peer writing into it through cross-memory attach. With 4
 * MPI_Iallreduce of 256 KiB in flight at 2 ranks, a call took 40-620 us,
 * median about 200, against 30-50 us while malloc kept its memory
 * (MALLOC_TRIM_THRESHOLD_ and MALLOC_MMAP_THRESHOLD_ raised), and MPICH's
 * 510-600; 8 and 16 in flight, with 4 pools, faulted 35-2010 and
 * 492-7752 pages per rank in 30 rounds again, 0-47 with 16. A pool keeps at
 * most twice the largest scratch a call asked of it (dpc_scratch_pool_t),
 * only pools that concurrent calls used hold anything, and beyond
 * DPC_POOLS_HELD_MAX in all the pools but the first give theirs back
 * (free_pool, run.c). */
#define DPC_COMM_POOLS 16
#define DPC_POOLS_HELD_MAX ((size_t)256 << 20)
typedef struct dpc_comm {
    int refs;                  /* the attribute + ops in flight (under the lock) */
    int ctx;
    unsigned seq;
    int rank, size;
    dpc_transport_t *tp;
    /* scratch reused from call to call, a pool per call in flight at once
     * (free_pool, run.c) */
    dpc_scratch_pool_t pool[DPC_COMM_POOLS];
    dpc_sched_t *spare;        /* a finished schedule, reused by the next call */
    struct {                   /* finished small schedules, run again when their
                                  call (algorithm, arguments) repeats, moved
                                  onto its buffers if those are others */
        dpc_sched_t *s;
        const dpc_algo_t *al, *forced;   /* the choice, and what was forced then */
        bool nb;               /* a nonblocking call's (see replayable) */
        dpc_coll_args_t a;
        size_t *vec;           /* a's counts and displacements (v-variants), owned */
        unsigned long used;    /* for least-recently-used eviction */
    } replay[DPC_REPLAY_SLOTS];
    /* each slot's call in brief (replay_key; 0: empty), side by side so
     * that a start looks through them all in a few cache lines */
    uint64_t replay_key[DPC_REPLAY_SLOTS];
    unsigned long replay_clock;
    int replay_last;           /* the slot the last replayed schedule came from,
                                  looked at first (the op gives it back there) */
    /* CUDA IPC attempts on this communicator, per collective (ipc.c): after
     * a call that could not go that way, the next ipc_skip eligible calls
     * of that collective do not try; ipc_backoff doubles with each such
     * call in a row (at most DPC_IPC_BACKOFF_MAX). Every rank sees the
     * same outcomes in the same order, so all skip alike. Per collective,
     * because the outcome can depend on it (ranks on different GPUs: the
     * copies go, the reductions do not). */
    unsigned ipc_skip[DPC_COLL_COUNT], ipc_backoff[DPC_COLL_COUNT];
    /* the model's recent choices, by the arguments it priced: a program
     * alternating a few signatures (gradient buckets and a small loss or
     * flag allreduce) finds each one here instead of pricing every
     * algorithm again, about 0.1 us a call */
    struct {
        const dpc_algo_t *al, *forced;
        size_t count;
        int coll, dtype, op, in_place, root;
        bool nonblocking;      /* (a measured choice may be for one kind of call) */
    } choice[DPC_CHOICE_SLOTS];
    unsigned choice_last, choice_next;   /* the slot last found; the next to fill */
    struct dpc_autotune_state *tune;     /* DPCOLL_AUTOTUNE's measurements (autotune.c);
                                            NULL until a call is measured */
    int *node;                 /* per rank: its node among this communicator's (numbered
                                  by each one's lowest rank); NULL on one node */
    int nnodes, node_ranks;    /* (dpc_coll_args_t's) */
} dpc_comm_t;

/* The algorithm the model (or a forced choice) picks for these arguments
 * on this communicator. */
const dpc_algo_t *dpc_choose(dpc_comm_t *c, const dpc_coll_args_t *a, const char *call);

/* Blocking calls of more bytes than this keep no schedule to replay:
 * their algorithm is chosen at every call (run.c), and DPCOLL_AUTOTUNE
 * may measure them. */
#define DPC_REPLAY_MAX_BYTES 65536
/* ... and the v-variants' only on communicators small enough that
 * comparing their counts and displacements stays cheap (run.c) */
#define DPC_REPLAY_MAX_V_RANKS 64

/* Gets (on first use: creates, collectively) the state of an intra-
 * communicator. Returns an MPI error code. */
int dpc_comm_get(MPI_Comm comm, const char *call, dpc_comm_t **c_p);
int dpc_comm_keyval_create(void);
void dpc_comm_release_builtin(void);
/* Context ids (ctx.c). init: at dpc_comm_keyval_create (an MPI error
 * code); fini: at MPI_Finalize. agree: a new communicator's, collectively
 * (an MPI error code). release: a freed communicator's. idup_post: after
 * the MPI library's MPI_Comm_idup, posts the duplicate's agreement on the
 * parent. */
int dpc_ctx_init(void);
void dpc_ctx_fini(void);
int dpc_ctx_agree(MPI_Comm comm, const char *call, int *ctx_p);
void dpc_ctx_release(int ctx);
void dpc_ctx_idup_post(MPI_Comm parent, MPI_Comm child);

/* Datatype analysis: how a datatype lays out, and the predefined basic type
 * all its elements are made of (signature-based, so ranks with different
 * datatypes of the same signature agree). */
typedef struct dpc_dtinfo {
    MPI_Aint size;          /* bytes of data per element */
    MPI_Aint extent, true_lb;
    bool contig;            /* count elements are size*count dense bytes at true_lb */
    int basic;              /* dpc_dtype_t, or -1 if mixed or not one we reduce */
    MPI_Aint nbasic;        /* basic elements per element */
} dpc_dtinfo_t;
int dpc_dtinfo(MPI_Datatype dt, dpc_dtinfo_t *info);   /* MPI_SUCCESS or MPI_ERR_TYPE */
int dpc_op_map(MPI_Op op);                             /* dpc_op_t, or -1 for user ops */
/* The averaging step of dpcoll_op_avg on a result: count elements of dt
 * (contiguous or not) divided by the communicator size. */
int dpc_avg_finish(MPI_Comm comm, const char *call, void *buf, int count, MPI_Datatype dt);
void dpc_avg_init(void);
void dpc_avg_fini(void);

/* Contiguous bytes for count elements of dt at buf: the buffer itself when
 * the type is contiguous, else a packed copy (*tmp_p set, to be freed). */
int dpc_pack(const void *buf, int count, MPI_Datatype dt, const dpc_dtinfo_t *ti,
             MPI_Comm comm, char **bytes_p, char **tmp_p);
int dpc_unpack(const char *bytes, void *buf, int count, MPI_Datatype dt, MPI_Comm comm);

/* Errors: a message naming the call and the argument, an MPI error class,
 * raised through the communicator's error handler. Returns the code. */
int dpc_raise(MPI_Comm comm, int errclass, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* One collective call as the engine sees it: the arguments of the
 * algorithm, and the wrapper's own steps around the schedule. prepare runs
 * before each start (stage non-contiguous inputs, set a.sbuf/a.rbuf), finish
 * after a successful end (results into the user's buffers, the average's
 * division), release when the call is over for good (free staging; not the
 * job itself). Each may be NULL. All run in a thread that called MPI. */
typedef struct dpc_job dpc_job_t;
/* A device buffer's host copy (cuda.c): pinned, [dev+lo, dev+hi). */
typedef struct dpc_stage {
    void *dev;
    char *host;
    MPI_Aint lo, hi;
    bool out_only;   /* the call writes all of it: never copied in */
} dpc_stage_t;
/* A program's op that a call runs on libdpcoll (user_op.c): its function
 * (one of the two), the call's datatype, and the bytes of one element. */
typedef struct dpc_user_op {
    MPI_User_function *fn;
    MPI_User_function_c *fn_c;
    MPI_Datatype dt;
    size_t size;
} dpc_user_op_t;
struct dpc_job {
    dpc_coll_args_t a;
    dpc_user_op_t user;     /* a.op DPC_OP_USER: the op to call */
    dpc_pipe_t pipe;
    /* device buffers staged whole (cuda.c): the send side copied to the
     * host at every start (but the first of a call that just copied it),
     * the receive side back to the device after every successful end */
    dpc_stage_t dev_send, dev_recv;
    bool dev_staged, dev_fresh;
    const char *call;
    unsigned long long bytes;           /* for DPCOLL_STATS */
    int (*prepare)(dpc_job_t *j, MPI_Comm comm);
    int (*finish)(dpc_job_t *j, MPI_Comm comm);
    void (*release)(dpc_job_t *j);
    void *owned;         /* freed with a heap job (a large-count call's int
                            arrays, which the job points into: lcount.h) */
};

/* How a call was made. */
typedef enum { DPC_BLOCKING, DPC_NONBLOCKING, DPC_PERSISTENT } dpc_mode_t;

/* user_op.c: whether a call of the program's op on dt runs on libdpcoll
 * (then *u is filled, and ti describes the call's elements as one stand-in
 * type of their size: basic, nbasic 1; whether the op commutes is the
 * caller's to say, DPC_OP_USER or DPC_OP_USER_ORDERED); the reduction
 * callback of its schedule (ctx: the job's dpc_user_op_t). */
bool dpc_user_op_take(MPI_Op op, MPI_Datatype dt, dpc_dtinfo_t *ti, dpc_user_op_t *u);
void dpc_user_op_apply(void *ctx, const void *in, void *inout, size_t count);
/* The MPI library's own form of a call for a mode: PMPI_<B><SFX>(args...),
 * PMPI_<NB><SFX>(args..., req) or PMPI_<B>_init<SFX>(args..., info, req),
 * e.g. DPC_PMPI_BY_MODE(mode, Allreduce, Iallreduce, _c, info, req, ...)
 * (SFX empty for the int forms). One dispatch for every wrapper's way to
 * the MPI library. */
#define DPC_PMPI_BY_MODE(mode, B, NB, SFX, info, req, ...)                          \
    ((mode) == DPC_BLOCKING      ? PMPI_##B##SFX(__VA_ARGS__)                        \
     : (mode) == DPC_NONBLOCKING ? PMPI_##NB##SFX(__VA_ARGS__, req)                  \
                                 : PMPI_##B##_init##SFX(__VA_ARGS__, info, req))

/* One collective in flight (nbc.c has the lifecycle). */
typedef struct dpc_req {
    struct dpc_req *next, *prev;     /* dpc_g.ops */
    dpc_job_t *job;
    dpc_comm_t *c;
    MPI_Comm comm;
    dpc_mode_t mode;
    const dpc_algo_t *al;
    dpc_sched_t *s;
    dpc_status_t st;                /* the schedule's end */
    bool listed;                    /* in dpc_g.ops */
    /* running and done change under dpc_g.lock, by whichever thread tests
     * the schedule (the progress thread too): read them under the lock, or
     * done through dpc_op_ended */
    bool running;                   /* schedule started, not yet seen to end */
    bool done;                      /* schedule ended (st valid) */
    bool completed;                 /* finish ran, the MPI request completed */
    bool freed;                     /* MPI freed the request first */
    bool held;                      /* holds a reference on c */
    bool replayed;                  /* its schedule is a finished one run again */
    bool repeat;                    /* ... a blocking call the same as the last one in
                                     * every argument (dpc_op_start's repeat_start) */
    bool unreported;                /* persistent: started, and no completion call has
                                     * reported its end yet (persist.c) */
    int replay_slot;                /* ... taken from this slot of c->replay */
    uint64_t replay_key;            /* ... whose key it had (a repeat gives it back) */
    const dpc_algo_t *forced;       /* the algorithm forced when it started */
    dpc_coll_args_t built;          /* persistent: the arguments its kept schedule was built
                                     * for (dpc_op_start replays it while they hold) */
    int err;                        /* MPI error code of the call */
    MPI_Request req;                /* generalized (or persistent) request */
    struct dpc_ipc_nb *ipc;         /* a device to device attempt first (ipc_nb.c) */
    size_t active_bytes;            /* counted in dpc_g.nb_active_bytes while it runs */
    int tune_slot;                  /* DPCOLL_AUTOTUNE: 1 + the slot of c->tune whose
                                     * measured call this is (0: none) */
    unsigned tune_call;             /* ... which of its measured calls */
    uint64_t started_ns;            /* nonblocking, persistent: when it started running */
    uint64_t inside_at_start;       /* ... and dpc_g.nb_inside_ns then */
    bool judged;                    /* ... and the program has asked for its end since
                                     * (dpc_nbc_asked) */
    dpc_streak_probe_t probe;       /* ... taken at its start if large enough
                                     * (DPC_SLEPT_PROBE_MIN, nbc.c) */
} dpc_req_t;
typedef struct dpc_ipc_nb dpc_ipc_nb_t;

/* Whether op's schedule has ended, without the lock: set after st, so a
 * true answer makes st readable too (the progress thread may have set it
 * a moment ago, and a plain read might see done before st on a weakly
 * ordered CPU). */
static inline bool dpc_op_ended(const dpc_req_t *op)
{
    return __atomic_load_n(&op->done, __ATOMIC_ACQUIRE);
}

/* Runs one collective on our algorithms. DPC_BLOCKING: waits (bounded by
 * the timeout) and releases the job; the others hand back *req and own the
 * job from then on (heap-allocated; freed with the request), also on
 * failure. Returns an MPI error code, already raised through the handler. */
int dpc_run(MPI_Comm comm, dpc_comm_t *c, dpc_job_t *j, dpc_mode_t mode, MPI_Request *req);
/* A small blocking call that repeats a kept one in every argument, its
 * buffers too, run again on the schedule kept from then (run.c's
 * repeat_slot) without a job's staging: for contiguous host buffers,
 * where the job's prepare would only point the arguments into them. a
 * holds the arguments that prepare would have made (the rest zero).
 * Where nothing else needs the engine the schedule runs within the call
 * (dpc_sched_rerun), without a job or an op unless it has to wait.
 * Returns the call's MPI error code, or DPC_RUN_MISS having done nothing
 * (not such a repeat: the caller goes on with dpc_run). A loop of one
 * 8-byte MPI_Bcast at 2 ranks took ~1780 instructions a call through the
 * job, MPICH's own ~1200, and ~890 this way. */
#define DPC_RUN_MISS (-1)
int dpc_run_repeat(MPI_Comm comm, dpc_comm_t *c, const char *call, dpc_coll_args_t *a,
                   unsigned long long bytes);
/* A job of the given size (zeroed): on the stack's stand-in for blocking
 * calls, on the heap otherwise. */
#define DPC_JOB_ALLOC(type, mode, local) \
    ((mode) == DPC_BLOCKING ? memset(&(local), 0, sizeof(local)) : calloc(1, sizeof(type)))

/* The op engine (run.c): start a schedule for op->job, drive it to its end
 * (in this thread, with every other op in flight), then take its result. */
int dpc_op_start(dpc_req_t *op);
void dpc_op_wait(dpc_req_t *op);
/* The same for a wait among several in a row (MPI_Waitall): leaves what is
 * still running to the caller's dpc_nbc_hand_over after the last, instead
 * of waking the progress thread for the ops it is about to wait for. */
void dpc_op_wait_in_series(dpc_req_t *op);
int dpc_op_complete(dpc_req_t *op);
/* Tests every listed op once; the caller holds the lock (if locking).
 * True when some op has local work ready (no need to wait for the network). */
bool dpc_ops_progress_locked(void);
void dpc_comm_unref_locked(dpc_comm_t *c);

/* Nonblocking and persistent requests (nbc.c). */
int dpc_nbc_init(void);
void dpc_nbc_fini(void);
int dpc_nbc_post(dpc_req_t *op, MPI_Request *req);
/* Finish ops whose request MPI freed before they ended (all: every op,
 * waiting for those still running). */
void dpc_nbc_reap(bool all);
void dpc_nbc_destroy(dpc_req_t *op);
int dpc_persist_init(void);   /* at MPI_Init (dpc_nbc_init) */
/* At the end of a nonblocking or persistent start (dpc_op_start), under
 * the lock: the progress thread takes a running op on, unless the
 * program's wait can be left to finish it, or the program has been waiting
 * for its ops at once (dpc_nbc_asked). */
void dpc_nbc_started_locked(dpc_req_t *op, uint64_t entered_ns);
/* The monotonic clock, for the progress thread's choices. */
static inline uint64_t dpc_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
/* A wait of the program's that began at entered_ns (0: none to count, as
 * no op ran then) ends now: its time was not the program's own
 * (dpc_nbc_asked). */
void dpc_nbc_inside(uint64_t entered_ns);
/* When a start or wait begins: the clock if ops that will be asked for
 * run, else 0. */
static inline uint64_t dpc_nbc_entering(void)
{
    return __atomic_load_n(&dpc_g.nb_unjudged, __ATOMIC_RELAXED) > 0 ? dpc_mono_ns() : 0;
}
/* At the end of a program thread's wait, under the lock: the progress
 * thread takes on what still runs, on the same terms. */
void dpc_nbc_hand_on_locked(void);
/* After a series of dpc_op_wait_in_series: the progress thread takes on
 * whatever still runs that the program's next wait cannot be left to. */
void dpc_nbc_hand_over(void);
/* The program asks for op's end (a blocking wait for it begins, or a call
 * completes it): the first time since its start, notes whether that came at
 * once after the start (not counting the program's time in our starts and
 * waits meanwhile), which decides whether starts wake the progress thread
 * (nbc.c). Ops in a wait for several are asked for together, with one
 * clock: now (0: read it). In the program's thread, in an MPI call. */
void dpc_nbc_asked(dpc_req_t *op, uint64_t now);
/* The program waits for op until it ends (dpc_op_wait, or with series
 * dpc_op_wait_in_series): asked for, and the wait's time counted as not
 * the program's own. */
void dpc_nbc_wait_for(dpc_req_t *op, bool series);
/* dpc_nbc_asked for every nonblocking op of ours among reqs that runs. */
void dpc_nbc_asked_in(int n, const MPI_Request *reqs);
/* Whether every nonblocking op still running can be left to the program's
 * MPI_Wait/MPI_Test without the progress thread (nbc.c); under the lock. */
bool dpc_nbc_leavable_locked(void);
/* Wakes the progress thread now, if it sleeps (under the lock). */
void dpc_nbc_signal_locked(void);
/* How many of reqs are nonblocking collectives of ours whose schedule still
 * runs; *first (if not NULL, and any is): one of their ops. Only
 * for a completion call's requests, which MPI lets no other thread complete
 * or free meanwhile (so the op found stays). Costs an atomic read while
 * none of ours runs. */
int dpc_nbc_running_in(int n, const MPI_Request *reqs, dpc_req_t **first);
/* MPI_Wait on req: if it is a nonblocking collective of ours still running,
 * drive it to its end here (dpc_op_wait), before the MPI library's wait. */
void dpc_nbc_drive(MPI_Request req);
int dpc_persist_create(dpc_req_t *op, MPI_Request *req);
void dpc_persist_destroy_all(void);
/* Are the requests (some may be ours) in need of our help before the MPI
 * library can complete them? Used by the wait/test wrappers. */
extern int dpc_persistent_live;

/* Whether this call must lock the engine: always with concurrent user
 * threads; otherwise only while nonblocking ops are in flight, since the
 * progress thread touches nothing when none are (it sleeps on prog_evfd). Only
 * user threads raise nb_active, so a false answer stays true for the rest of
 * a blocking call. */
static inline bool dpc_need_lock(void)
{
    return dpc_g.mt || __atomic_load_n(&dpc_g.nb_active, __ATOMIC_ACQUIRE) > 0;
}
/* User threads announce that they want the lock, and the progress thread
 * lets them have it before it takes it again (a mutex is not fair: a thread
 * that unlocks and relocks at once can starve a waiter for long). */
static inline void dpc_lock(bool lk)
{
    if (lk) {
        __atomic_add_fetch(&dpc_g.lock_wanted, 1, __ATOMIC_RELAXED);
        pthread_mutex_lock(&dpc_g.lock);
        __atomic_sub_fetch(&dpc_g.lock_wanted, 1, __ATOMIC_RELAXED);
    }
}
static inline void dpc_unlock(bool lk)
{
    if (lk)
        pthread_mutex_unlock(&dpc_g.lock);
}

/* Shared front matter of every wrapper: is our path on, is comm usable and
 * an intracommunicator, may a call of this mode run on it (persistent ones
 * not where mpi_f08's request calls would pass us by: fortran.c). Returns 1 to
 * go on with our path, 0 to use PMPI (why set), or -1 with *err set to an
 * already-raised error. */
int dpc_enter(MPI_Comm comm, dpc_coll_t coll, const char *call, dpc_mode_t mode, int *err);
/* libdpcoll's start (after the MPI library's init, with its thread level)
 * and end (before the MPI library's finalize): init.c */
void dpc_init(int provided);
void dpc_fini(void);
/* MPICH's Fortran bindings are loaded in this process; and its mpi_f08
 * request calls (MPI_Start, MPI_Wait ...) are what a program that calls
 * them gets, not ours (fortran.c, fortran_requests.c) */
int dpc_f08_loaded(void);
int dpc_f08_past_us(void);
/* What dpc_enter found for the call in progress on this thread. */
/* (initial-exec: the library is loaded with the program, and these are on
 * every call's path; the general model costs a __tls_get_addr call each) */
#define DPC_TLS __thread __attribute__((tls_model("initial-exec")))
extern DPC_TLS MPI_Comm dpc_tl_comm;
extern DPC_TLS dpc_comm_t *dpc_tl_state;
extern DPC_TLS unsigned dpc_tl_gen;     /* dpc_g.comm_gen when it was looked up */
/* comm's state as this thread last looked it up, or NULL: the same handle,
 * and no communicator's state freed since (a freed handle may come back as
 * another communicator). Kept from call to call: a loop on one
 * communicator does not ask MPI for its attribute each time. */
static inline dpc_comm_t *dpc_tl_known(MPI_Comm comm)
{
    return comm == dpc_tl_comm && dpc_tl_state &&
                   dpc_tl_gen == __atomic_load_n(&dpc_g.comm_gen, __ATOMIC_ACQUIRE)
               ? dpc_tl_state
               : NULL;
}
/* Set around libdpcoll's own calls that the program did not make (the
 * CUDA IPC path's handshakes): they run as any call does, timeout
 * included, but DPCOLL_STATS, DPCOLL_EXPLAIN and dpcoll_last_algorithm
 * leave them out, and they never try CUDA IPC themselves. */
extern DPC_TLS bool dpc_tl_quiet;
/* True in the progress thread (nbc.c), which never runs a program's
 * reduction function: it tests such schedules with dpc_sched_test_held. */
extern DPC_TLS bool dpc_tl_progress_thread;
/* Those calls: blocking, host buffers, on libdpcoll's engine. call names
 * the program's call they serve (in an error's message). */
int dpc_own_allgather(const void *mine, int bytes, void *all, MPI_Comm comm, const char *call);
int dpc_own_allreduce(int *v, MPI_Op op, MPI_Comm comm, const char *call);   /* one int, in place */
int dpc_own_alltoall(const uint64_t *mine, uint64_t *theirs, MPI_Comm comm, const char *call);
/* DPCOLL_AUTOTUNE (autotune.c). pick: *al, the algorithm for a large
 * blocking call whose signature is being measured or was (each candidate
 * for N calls in a row, then the one kept; the decision exchanges the
 * ranks' times, so all ranks must ask alike: run.c asks for every call
 * that DPCOLL_AUTOTUNE may measure), or NULL: the model's; returns an MPI
 * error code. done: the seconds the call took, on success. free: the
 * communicator's measurements. */
int dpc_autotune_pick(dpc_req_t *op, const dpc_algo_t **al);
void dpc_autotune_done(dpc_req_t *op, double seconds);
void dpc_autotune_free(dpc_comm_t *c);
/* Size and rank of comm, without MPI calls when dpc_enter already knows it. */
void dpc_comm_shape(MPI_Comm comm, int *size, int *rank);
void dpc_note_pmpi(dpc_coll_t coll, dpc_why_t why);

void dpc_stats_print(void);

#endif
