/*
 * Schedule engine. Steps live in one array; dependencies are collected as
 * edges while building and turned into a successor table (CSR) at start, so
 * completing a step costs O(successors). Steps become ready when their last
 * dependency completes and run in the order they became ready.
 *
 * Completions of SEND/RECV come from transport callbacks, which may run while
 * this file is inside progress() or cancel(): a callback only marks its step
 * done and queues the successors that became ready; it never issues work
 * itself, so there is no re-entrancy to reason about.
 */
#include "config.h"
#include "dpc_sched.h"
#include "dpc_reduce.h"
#include "dpc_copy.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef HAVE_VALGRIND_MEMCHECK_H
#include <valgrind/memcheck.h>
#else
#define VALGRIND_MAKE_MEM_DEFINED_IF_ADDRESSABLE(p, n) ((void)(p), (void)(n))
#endif

typedef enum { STEP_SEND, STEP_RECV, STEP_REDUCE, STEP_COPY, STEP_NOP, STEP_EXPOSE,
               STEP_GET, STEP_PUT, STEP_DCOPY, STEP_DREDUCE } step_kind_t;
/* With params.defer_local, receives of more than this many bytes are not
 * tried with recv_now: finishing one in the call means copying it there (a
 * large message read from its sender's memory), and a nonblocking call's
 * start should return to the program at once (2 ranks, 64 MiB
 * MPI_Iallreduce behind a sleep: 60% hidden with the start reading the
 * first 32 MiB, 80% with the progress thread reading it). Nor does such a
 * start read or write more than this of a peer's memory (issues_now). */
#define SCHED_DEFER_NOW_MAX 8192
/* A test()'s share of local work, in slices (local_slice_bytes): two, as
 * many as a test made before there was a share, one before the transport's
 * progress and one after, where each step's slices were all that bounded
 * it (work_spent). One in all made the progress thread take twice the
 * turns for the same work: a 16 MiB MPI_Ialltoall behind a sleep took
 * 1.19x as long (median of 12 paired runs, 2 ranks; docs/bench/s49). */
#define SCHED_TEST_SLICES 2
/* ST_POLLED: a receive kept by the schedule, not yet posted (poll_recvs) */
typedef enum { ST_WAITING, ST_ISSUED, ST_POLLED, ST_DONE } step_state_t;

/* Polled receives (params.poll_recvs): at most this many at once (more are
 * posted), and posted after this many tests without their messages. A
 * message can sit behind another in its sender's ring that only a posted
 * receive moves aside (one of this schedule's own, not ready yet); and a
 * long wait gains nothing from polling (it sleeps). */
#define SCHED_POLL_MAX 8
#define SCHED_POLL_TESTS 64
/* S_REARMED: a finished schedule reset for another run of the same steps
 * (dpc_sched_replay): start() skips the successor table it already has. */
typedef enum { S_BUILDING, S_RUNNING, S_DONE, S_FAILED, S_REARMED } sched_state_t;

typedef struct step {
    dpc_sched_t *sched;
    uint8_t kind, state;
    int32_t peer;
    uint32_t tag;
    int32_t npending;       /* dependencies not yet done */
    int32_t ndeps;          /* dependencies in all (for a replay) */
    int32_t succ_begin;     /* successors: succ[succ_begin .. succ_begin+nsucc) */
    int32_t nsucc;
    void *dst;
    const void *a, *b;
    size_t count;           /* bytes (send/recv/copy) or elements (reduce) */
    size_t done;            /* local steps, reads and writes done in slices:
                               how much is done (reads and writes: issued) */
    size_t off;             /* get: offset into the peer's region (plus the 64-bit
                               value at b when it runs, where b is set) */
    dpc_dtype_t dt;
    dpc_op_t op;
    dpc_xfer_t *xfer;
} step_t;

typedef struct { int32_t from, to; } edge_t;

/* A peer's region descriptor turned into a transport handle, once per
 * schedule however many gets read from it. */
typedef struct { const void *desc; int peer; void *remote; } import_t;

typedef struct { void *p; size_t bytes; } scratch_t;

struct dpc_sched {
    dpc_sched_params_t prm;
    sched_state_t state;
    dpc_status_t status;     /* first error, or DPC_OK */
    int failed_step;
    step_t *steps;
    int nsteps, cap_steps;
    edge_t *edges;
    int nedges, cap_edges;
    int32_t *succ;
    int cap_succ;
    int32_t *ready;          /* FIFO; each step enters once, so nsteps slots */
    int cap_ready;
    int ready_head, ready_tail;
    int ready_scan;          /* entries before it are local steps (issue_transfers) */
    bool starting;           /* in launch(): issues_now holds back large one-sided copies */
    int ndone, inflight;
    int slicing;             /* reads and writes in flight with slices left after
                                this one: local work (dpc_sched_has_local_work) */
    size_t worked;           /* bytes of copies, reductions, and reads and writes
                                of peers' memory this test() has made (about
                                SCHED_TEST_SLICES slices at most: work_spent) */
    scratch_t *scratch;      /* the pieces it allocated itself */
    int nscratch, cap_scratch;
    dpc_scratch_pool_t *pool;   /* held by this schedule, or NULL */
    size_t pool_off[DPC_SCRATCH_CHUNKS];   /* bytes taken from each chunk */
    size_t pool_used, scratch_total;
    bool rerunnable;         /* every step one dpc_sched_rerun runs (set at the build's start) */
    uint32_t rerun_kind[3];  /* ... and its sends, receives and local steps (a bit each) */
    bool scratch_given;      /* its own pieces went to the pool: its steps
                              * point into memory that is no longer its */
    uint64_t start_ns;
    bool clock_read;         /* start_ns holds the time of the first timeout check */
    unsigned ntests;         /* test() calls since start: the clock is read every 16th */
    void **exposed;          /* transport handles of this schedule's regions */
    int nexposed, cap_exposed;
    import_t *imports;
    int nimports, cap_imports;
    int dev_inflight;        /* device copies and reductions started and not done */
    struct {                 /* the sub-build being added, if any */
        bool on;
        dpc_step_id_t gate;
        uint32_t tag_off, tag_span;
        int first;
    } sub;
    struct { int peer; bool sending; } *waiting;   /* steps in flight at failure: their
                                                     * peers, and whether a send (or put) */
    int nwaiting;
    int32_t polled[SCHED_POLL_MAX];   /* steps in ST_POLLED */
    int npolled;
    unsigned poll_tests;     /* tests since start that polled */
    dpc_sched_stats_t stats;
};

static void set_error(dpc_sched_t *s, dpc_status_t st, int step)
{
    if (s->status == DPC_OK) {
        s->status = st;
        s->failed_step = step;
    }
}

static int grow(void **arr, int *cap, int need, size_t elsize)
{
    if (need <= *cap)
        return 0;
    int ncap = *cap ? *cap * 2 : 64;
    while (ncap < need)
        ncap *= 2;
    void *n = realloc(*arr, (size_t)ncap * elsize);
    if (!n)
        return -1;
    *arr = n;
    *cap = ncap;
    return 0;
}

/* A tag base leaves the step's bits free. */
static bool tag_base_ok(uint64_t tag_base)
{
    return !(tag_base & ((UINT64_C(1) << DPC_STEP_TAG_BITS) - 1));
}

dpc_status_t dpc_sched_create(const dpc_sched_params_t *params, dpc_sched_t **sched_p)
{
    if (!params || !params->tp || !sched_p ||
        !tag_base_ok(params->tag_base))
        return DPC_ERR_ARG;
    dpc_sched_t *s = calloc(1, sizeof(*s));
    if (!s)
        return DPC_ERR_NOMEM;
    s->prm = *params;
    s->state = S_BUILDING;
    s->failed_step = -1;
    if (params->pool && !params->pool->busy && params->mem == DPC_MEM_HOST) {
        s->pool = params->pool;
        s->pool->busy = 1;
    }
    *sched_p = s;
    return DPC_OK;
}

static void pool_free_chunks(dpc_scratch_pool_t *p)
{
    for (int k = 0; k < p->nchunks; k++)
        free(p->chunk[k]);
    p->nchunks = 0;
    p->held = 0;
}

void dpc_scratch_pool_fini(dpc_scratch_pool_t *pool)
{
    pool_free_chunks(pool);
    memset(pool, 0, sizeof(*pool));
}

/* Give the pool back, grown by what this schedule had to allocate itself
 * (see dpc_scratch_pool_t): its pieces become chunks of the pool when they
 * fit the limits, else the pool becomes one fresh block of the largest
 * total. The schedule must be done with its scratch (idle, and never run
 * again without a reset: replay refuses it, scratch_given). */
static void pool_release(dpc_sched_t *s)
{
    dpc_scratch_pool_t *p = s->pool;
    if (!p)
        return;
    if (s->scratch_total > p->want)
        p->want = s->scratch_total;
    size_t own = 0;
    for (int i = 0; i < s->nscratch; i++)
        own += s->scratch[i].bytes;
    if (s->nscratch > 0 && p->nchunks + s->nscratch <= DPC_SCRATCH_CHUNKS &&
        p->held + own <= 2 * p->want) {
        for (int i = 0; i < s->nscratch; i++) {
            p->chunk[p->nchunks] = s->scratch[i].p;
            p->cap[p->nchunks++] = s->scratch[i].bytes;
        }
        p->held += own;
        s->nscratch = 0;
        s->scratch_given = true;
    } else if (s->nscratch > 0) {
        void *n = NULL;
        pool_free_chunks(p);
        if (!posix_memalign(&n, 64, p->want)) {
            p->chunk[0] = n;
            p->cap[0] = p->held = p->want;
            p->nchunks = 1;
        }
    }
    p->busy = 0;
    s->pool = NULL;
}

void *dpc_sched_scratch(dpc_sched_t *s, size_t bytes)
{
    void *p = NULL;
    if (s->state != S_BUILDING) {
        set_error(s, DPC_ERR_STATE, -1);
        return NULL;
    }
    size_t rounded = bytes ? (bytes + 63) & ~(size_t)63 : 64;
    s->scratch_total += rounded;
    for (int k = 0; s->pool && k < s->pool->nchunks; k++)   /* (first fit, in order) */
        if (s->pool_off[k] + rounded <= s->pool->cap[k]) {
            p = s->pool->chunk[k] + s->pool_off[k];
            s->pool_off[k] += rounded;
            s->pool_used += rounded;
            return p;
        }
    /* (the whole rounded size: the pool may keep the piece for this request) */
    if (grow((void **)&s->scratch, &s->cap_scratch, s->nscratch + 1, sizeof(scratch_t)) ||
        posix_memalign(&p, 64, rounded)) {
        set_error(s, DPC_ERR_NOMEM, -1);
        return NULL;
    }
    s->scratch[s->nscratch++] = (scratch_t){p, rounded};
    return p;
}

static dpc_step_id_t add_step(dpc_sched_t *s, const step_t *proto,
                              const dpc_step_id_t *deps, int ndeps)
{
    if (s->state != S_BUILDING) {
        set_error(s, DPC_ERR_STATE, -1);
        return DPC_STEP_NONE;
    }
    if (s->status != DPC_OK)
        return DPC_STEP_NONE;
    if (grow((void **)&s->steps, &s->cap_steps, s->nsteps + 1, sizeof(step_t)) ||
        grow((void **)&s->edges, &s->cap_edges, s->nedges + ndeps, sizeof(edge_t))) {
        set_error(s, DPC_ERR_NOMEM, -1);
        return DPC_STEP_NONE;
    }
    int id = s->nsteps;
    bool has_dep = false;
    for (int i = 0; i < ndeps; i++) {
        if (deps[i] == DPC_STEP_NONE)
            continue;
        if (deps[i] < 0 || deps[i] >= id) {   /* only earlier steps: no cycles */
            set_error(s, DPC_ERR_ARG, id);
            return DPC_STEP_NONE;
        }
        s->edges[s->nedges++] = (edge_t){deps[i], id};
        has_dep = true;
    }
    uint32_t tag = proto->tag;
    if (s->sub.on) {
        if ((proto->kind == STEP_SEND || proto->kind == STEP_RECV) && tag >= s->sub.tag_span) {
            set_error(s, DPC_ERR_ARG, id);
            return DPC_STEP_NONE;
        }
        if (proto->kind == STEP_SEND || proto->kind == STEP_RECV)
            tag += s->sub.tag_off;
        if (!has_dep && s->sub.gate != DPC_STEP_NONE) {
            if (grow((void **)&s->edges, &s->cap_edges, s->nedges + 1, sizeof(edge_t))) {
                set_error(s, DPC_ERR_NOMEM, -1);
                return DPC_STEP_NONE;
            }
            s->edges[s->nedges++] = (edge_t){s->sub.gate, id};
        }
    }
    step_t *st = &s->steps[s->nsteps++];
    *st = *proto;
    st->tag = tag;
    st->sched = s;
    st->state = ST_WAITING;
    st->npending = 0;
    return id;
}

dpc_step_id_t dpc_sched_send(dpc_sched_t *s, int peer, uint32_t tag, const void *buf,
                             size_t bytes, const dpc_step_id_t *deps, int ndeps)
{
    if (peer < 0 || peer >= s->prm.tp->size || tag > DPC_STEP_TAG_MAX) {
        set_error(s, DPC_ERR_ARG, s->nsteps);
        return DPC_STEP_NONE;
    }
    step_t p = {.kind = STEP_SEND, .peer = peer, .tag = tag, .a = buf, .count = bytes};
    return add_step(s, &p, deps, ndeps);
}

dpc_step_id_t dpc_sched_recv(dpc_sched_t *s, int peer, uint32_t tag, void *buf,
                             size_t bytes, const dpc_step_id_t *deps, int ndeps)
{
    if (peer < 0 || peer >= s->prm.tp->size || tag > DPC_STEP_TAG_MAX) {
        set_error(s, DPC_ERR_ARG, s->nsteps);
        return DPC_STEP_NONE;
    }
    step_t p = {.kind = STEP_RECV, .peer = peer, .tag = tag, .dst = buf, .count = bytes};
    return add_step(s, &p, deps, ndeps);
}

dpc_step_id_t dpc_sched_reduce(dpc_sched_t *s, void *dst, const void *a, const void *b,
                               size_t count, dpc_dtype_t dt, dpc_op_t op,
                               const dpc_step_id_t *deps, int ndeps)
{
    if (dpc_op_is_user(op) ? dpc_dtype_size(dt) == 0 : !dpc_op_valid(op, dt)) {
        set_error(s, DPC_ERR_UNSUPPORTED, s->nsteps);
        return DPC_STEP_NONE;
    }
    step_t p = {.kind = STEP_REDUCE, .peer = -1, .dst = dst, .a = a, .b = b,
                .count = count, .dt = dt, .op = op};
    return add_step(s, &p, deps, ndeps);
}

dpc_step_id_t dpc_sched_copy(dpc_sched_t *s, void *dst, const void *src, size_t bytes,
                             const dpc_step_id_t *deps, int ndeps)
{
    step_t p = {.kind = STEP_COPY, .peer = -1, .dst = dst, .a = src, .count = bytes};
    return add_step(s, &p, deps, ndeps);
}

bool dpc_sched_one_sided(const dpc_sched_t *s)
{
    return dpc_transport_one_sided(s->prm.tp) && s->prm.mem == DPC_MEM_HOST;
}

dpc_step_id_t dpc_sched_expose(dpc_sched_t *s, void *buf, size_t bytes, void *desc,
                               const dpc_step_id_t *deps, int ndeps)
{
    if (!dpc_transport_one_sided(s->prm.tp)) {
        set_error(s, DPC_ERR_UNSUPPORTED, s->nsteps);
        return DPC_STEP_NONE;
    }
    step_t p = {.kind = STEP_EXPOSE, .peer = -1, .dst = desc, .a = buf, .count = bytes};
    return add_step(s, &p, deps, ndeps);
}

dpc_step_id_t dpc_sched_get(dpc_sched_t *s, int peer, const void *desc, size_t offset,
                            void *dst, size_t bytes, const dpc_step_id_t *deps, int ndeps)
{
    if (!dpc_transport_one_sided(s->prm.tp)) {
        set_error(s, DPC_ERR_UNSUPPORTED, s->nsteps);
        return DPC_STEP_NONE;
    }
    if (peer < 0 || peer >= s->prm.tp->size) {
        set_error(s, DPC_ERR_ARG, s->nsteps);
        return DPC_STEP_NONE;
    }
    step_t p = {.kind = STEP_GET, .peer = peer, .a = desc, .off = offset, .dst = dst,
                .count = bytes};
    return add_step(s, &p, deps, ndeps);
}

dpc_step_id_t dpc_sched_get_at(dpc_sched_t *s, int peer, const void *desc, const void *offset_at,
                               size_t offset, void *dst, size_t bytes,
                               const dpc_step_id_t *deps, int ndeps)
{
    dpc_step_id_t id = dpc_sched_get(s, peer, desc, offset, dst, bytes, deps, ndeps);
    if (id != DPC_STEP_NONE)
        s->steps[id].b = offset_at;
    return id;
}

dpc_step_id_t dpc_sched_put(dpc_sched_t *s, int peer, const void *desc, size_t offset,
                            const void *src, size_t bytes, const dpc_step_id_t *deps, int ndeps)
{
    dpc_step_id_t id = dpc_sched_get(s, peer, desc, offset, (void *)src, bytes, deps, ndeps);
    if (id != DPC_STEP_NONE)
        s->steps[id].kind = STEP_PUT;
    return id;
}

dpc_step_id_t dpc_sched_put_at(dpc_sched_t *s, int peer, const void *desc, const void *offset_at,
                               size_t offset, const void *src, size_t bytes,
                               const dpc_step_id_t *deps, int ndeps)
{
    dpc_step_id_t id = dpc_sched_put(s, peer, desc, offset, src, bytes, deps, ndeps);
    if (id != DPC_STEP_NONE)
        s->steps[id].b = offset_at;
    return id;
}

dpc_step_id_t dpc_sched_device_copy(dpc_sched_t *s, void *dst, const void *src, size_t bytes,
                                    int queue, const dpc_step_id_t *deps, int ndeps)
{
    if (!s->prm.dev_ops || (queue != DPC_TO_HOST && queue != DPC_TO_DEVICE)) {
        set_error(s, DPC_ERR_ARG, s->nsteps);
        return DPC_STEP_NONE;
    }
    step_t p = {.kind = STEP_DCOPY, .peer = -1, .dst = dst, .a = src, .count = bytes,
                .off = (size_t)queue};
    return add_step(s, &p, deps, ndeps);
}

dpc_step_id_t dpc_sched_device_fence(dpc_sched_t *s, int queue, const dpc_step_id_t *deps,
                                     int ndeps)
{
    /* (a valid address, never read or written: no bytes) */
    return dpc_sched_device_copy(s, s, s, 0, queue, deps, ndeps);
}

dpc_step_id_t dpc_sched_device_reduce(dpc_sched_t *s, void *dst, const void *a, const void *b,
                                      size_t count, dpc_dtype_t dt, dpc_op_t op,
                                      const dpc_step_id_t *deps, int ndeps)
{
    if (!s->prm.dev_ops || !s->prm.dev_ops->reduce || dpc_op_is_user(op)) {
        set_error(s, DPC_ERR_ARG, s->nsteps);
        return DPC_STEP_NONE;
    }
    /* a reduce step that the device carries out */
    dpc_step_id_t id = dpc_sched_reduce(s, dst, a, b, count, dt, op, deps, ndeps);
    if (id != DPC_STEP_NONE)
        s->steps[id].kind = STEP_DREDUCE;
    return id;
}

void dpc_sched_sub_begin(dpc_sched_t *s, dpc_step_id_t gate, uint32_t tag_off, uint32_t tag_span)
{
    if (tag_off > DPC_STEP_TAG_MAX || tag_span > DPC_STEP_TAG_MAX + 1 - tag_off) {
        set_error(s, DPC_ERR_ARG, -1);
        return;
    }
    s->sub.on = true;
    s->sub.gate = gate;
    s->sub.tag_off = tag_off;
    s->sub.tag_span = tag_span;
    s->sub.first = s->nsteps;
}

dpc_step_id_t dpc_sched_sub_end(dpc_sched_t *s)
{
    int first = s->sub.first, n = s->nsteps - first;
    dpc_step_id_t gate = s->sub.gate;
    s->sub.on = false;
    if (s->status != DPC_OK)
        return DPC_STEP_NONE;
    if (n == 0)      /* nothing to do (count 0): done with the gate */
        return gate == DPC_STEP_NONE ? DPC_STEP_NONE : dpc_sched_nop(s, DPC_AFTER(gate));
    dpc_step_id_t *all = malloc(sizeof(dpc_step_id_t) * (size_t)n);
    if (!all) {
        set_error(s, DPC_ERR_NOMEM, -1);
        return DPC_STEP_NONE;
    }
    for (int i = 0; i < n; i++)
        all[i] = first + i;
    dpc_step_id_t join = dpc_sched_nop(s, all, n);
    free(all);
    return join;
}

dpc_step_id_t dpc_sched_nop(dpc_sched_t *s, const dpc_step_id_t *deps, int ndeps)
{
    step_t p = {.kind = STEP_NOP, .peer = -1};
    return add_step(s, &p, deps, ndeps);
}

void dpc_sched_set_error(dpc_sched_t *s, dpc_status_t st)
{
    set_error(s, st, -1);
}

int dpc_sched_nsteps(const dpc_sched_t *s)
{
    return s->nsteps;
}

static void push_ready(dpc_sched_t *s, int id)
{
    s->ready[s->ready_tail++] = id;
}

static void complete_step(dpc_sched_t *s, step_t *st)
{
    st->state = ST_DONE;
    s->ndone++;
    if (s->status != DPC_OK)
        return;     /* failed: successors never run */
    const int32_t *succ = s->succ + st->succ_begin;
    for (int i = 0; i < st->nsucc; i++)
        if (--s->steps[succ[i]].npending == 0)
            push_ready(s, succ[i]);
}

/* A device step's failure, where the caller takes it in hand
 * (params.device_failed): noted, the step done all the same. */
static bool device_failure_noted(dpc_sched_t *s, const step_t *st, dpc_status_t status)
{
    if (status == DPC_OK || !s->prm.device_failed ||
        (st->kind != STEP_DCOPY && st->kind != STEP_DREDUCE))
        return false;
    *s->prm.device_failed = 1;
    return true;
}

static void xfer_done(void *arg, dpc_status_t status)
{
    step_t *st = arg;
    dpc_sched_t *s = st->sched;
    st->xfer = NULL;
    s->inflight--;
    if (st->kind == STEP_DCOPY || st->kind == STEP_DREDUCE)
        s->dev_inflight--;
    if (status != DPC_OK && !device_failure_noted(s, st, status))
        set_error(s, status, (int)(st - s->steps));
    bool sliced = (st->kind == STEP_GET || st->kind == STEP_PUT) && st->done < st->count;
    s->slicing -= sliced;
    if (sliced && s->status == DPC_OK) {
        /* a sliced read or write with slices left: back into the ready
         * queue for the next one (it holds no place there while in flight,
         * so the queue's nsteps places still suffice) */
        st->state = ST_WAITING;
        push_ready(s, (int)(st - s->steps));
        return;
    }
    complete_step(s, st);
}

/* A slice of a local step: [from, from+n) of its bytes or elements; a copy
 * whose ends overlap (run_local's finding) goes by memmove. */
static dpc_status_t run_local_part(dpc_sched_t *s, step_t *st, size_t from, size_t n,
                                   bool overlap)
{
    if (st->kind == STEP_COPY) {
        char *d = (char *)st->dst + from;
        const char *a = (const char *)st->a + from;
        if (n && st->dst != st->a) {
            if (overlap)
                memmove(d, a, n);
            else   /* (the whole step's size picks the kind of stores) */
                dpc_copy(d, a, n, st->count >= DPC_STREAM_COPY_MIN);
        }
        return DPC_OK;
    }
    if (st->kind == STEP_REDUCE) {
        if (s->prm.mem != DPC_MEM_HOST) {
            if (!s->prm.device_reduce)
                return DPC_ERR_UNSUPPORTED;
            return s->prm.device_reduce(st->dst, st->a, st->b, st->count, st->dt, st->op,
                                        s->prm.mem, s->prm.device_ctx);
        }
        size_t es = dpc_dtype_size(st->dt);
        if (dpc_op_is_user(st->op))
            return dpc_reduce_user((char *)st->dst + from * es, (const char *)st->a + from * es,
                                   (const char *)st->b + from * es, n, es, s->prm.user_reduce,
                                   s->prm.user_ctx);
        return dpc_reduce_host((char *)st->dst + from * es, (const char *)st->a + from * es,
                               (const char *)st->b + from * es, n, st->dt, st->op);
    }
    return DPC_OK;  /* NOP */
}

/* Runs a local step, or with local_slice_bytes the next slice of it:
 * DPC_INPROGRESS while slices remain. Slicing keeps each test() short, so a
 * progress thread holding the engine's lock never holds it for long. Copies
 * whose ends overlap go in one piece (memmove's order matters). */
static dpc_status_t run_local(dpc_sched_t *s, step_t *st)
{
    size_t es = st->kind == STEP_REDUCE ? dpc_dtype_size(st->dt) : 1, n = st->count - st->done;
    size_t slice = s->prm.local_slice_bytes / (es ? es : 1);
    const char *d = st->dst, *a = st->a;
    bool overlap = st->kind == STEP_COPY && d != a && d < a + st->count && a < d + st->count;
    bool sliceable = slice && s->prm.mem == DPC_MEM_HOST && !overlap &&
                     (st->kind == STEP_COPY || st->kind == STEP_REDUCE);
    if (sliceable && n > slice)
        n = slice;
    dpc_status_t rc = run_local_part(s, st, st->done, n, overlap);
    if (rc != DPC_OK)
        return rc;
    st->done += n;
    s->worked += n * es;
    if (st->done < st->count)
        return DPC_INPROGRESS;
    if (st->kind == STEP_COPY) {
        s->stats.copies++;
        s->stats.bytes_copied += st->count;
    } else if (st->kind == STEP_REDUCE) {
        s->stats.reduces++;
        s->stats.elems_reduced += st->count;
    }
    return DPC_OK;
}

static dpc_status_t expose_step(dpc_sched_t *s, step_t *st)
{
    dpc_transport_t *tp = s->prm.tp;
    void *h = NULL;
    if (grow((void **)&s->exposed, &s->cap_exposed, s->nexposed + 1, sizeof(void *)))
        return DPC_ERR_NOMEM;
    memset(st->dst, 0, DPC_REGION_DESC_MAX);
    dpc_status_t rc = tp->ops->expose(tp, (void *)st->a, st->count, s->prm.mem, st->dst, &h);
    if (rc == DPC_OK)
        s->exposed[s->nexposed++] = h;
    return rc;
}

/* The handle for a peer's descriptor: imported at the first get from it. */
static dpc_status_t import_of(dpc_sched_t *s, int peer, const void *desc, void **remote_p)
{
    dpc_transport_t *tp = s->prm.tp;
    for (int i = 0; i < s->nimports; i++)
        if (s->imports[i].desc == desc && s->imports[i].peer == peer) {
            *remote_p = s->imports[i].remote;
            return DPC_OK;
        }
    if (grow((void **)&s->imports, &s->cap_imports, s->nimports + 1, sizeof(import_t)))
        return DPC_ERR_NOMEM;
    dpc_status_t rc = tp->ops->import(tp, peer, desc, remote_p);
    if (rc == DPC_OK)
        s->imports[s->nimports++] = (import_t){desc, peer, *remote_p};
    return rc;
}

/* Regions end with the schedule (its peers have said they are done). */
static void release_regions(dpc_sched_t *s)
{
    dpc_transport_t *tp = s->prm.tp;
    for (int i = 0; i < s->nimports; i++)
        tp->ops->unimport(tp, s->imports[i].remote);
    for (int i = 0; i < s->nexposed; i++)
        tp->ops->unexpose(tp, s->exposed[i]);
    s->nimports = s->nexposed = 0;
}

/* A send or receive after its send_now/recv_now attempt (rc): handed to
 * isend/irecv when that did nothing; counted, and completed at once when
 * it finished within the call. Returns its status. */
static dpc_status_t issue_message(dpc_sched_t *s, step_t *st, uint64_t tag, dpc_status_t rc)
{
    dpc_transport_t *tp = s->prm.tp;
    bool send = st->kind == STEP_SEND;
    if (rc == DPC_INPROGRESS) {
        rc = send ? tp->ops->isend(tp, st->peer, tag, st->a, st->count, s->prm.mem, xfer_done,
                                   st, &st->xfer)
                  : tp->ops->irecv(tp, st->peer, tag, st->dst, st->count, s->prm.mem, xfer_done,
                                   st, &st->xfer);
        if (rc == DPC_OK) {
            st->state = ST_ISSUED;
            s->inflight++;
        }
    }
    if (rc != DPC_OK)
        return rc;
    *(send ? &s->stats.sends : &s->stats.recvs) += 1;
    *(send ? &s->stats.bytes_sent : &s->stats.bytes_recvd) += st->count;
    if (st->state != ST_ISSUED)
        complete_step(s, st);
    return DPC_OK;
}

/* How much of a read or write of a peer's memory one issue moves: all of
 * what is left, or with remote_slice_bytes (host memory) at most that much.
 * On one node a read is a kernel copy made within the call, by whoever
 * tests: whole, the progress thread held the engine's lock through it, and
 * a program's MPI_Test or start waited that long; or the program's
 * MPI_Test made it itself (2 ranks, an MPI_Iallgather of 16 MiB behind
 * compute polled every 20 us: the longest MPI_Test took 2.4 ms, MPICH's own
 * 0.2 ms; docs/bench/s48). A slice's end puts the step back in the ready
 * queue (xfer_done), and the next test issues the next slice. */
static size_t one_sided_slice(const dpc_sched_t *s, const step_t *st)
{
    size_t n = st->count - st->done, slice = s->prm.remote_slice_bytes;
    return slice && s->prm.mem == DPC_MEM_HOST && n > slice ? slice : n;
}

/* Issues a ready step; false when it is a local step with slices left
 * (it stays at the head of the ready queue). */
static bool issue_step(dpc_sched_t *s, int id)
{
    dpc_transport_t *tp = s->prm.tp;
    step_t *st = &s->steps[id];
    uint64_t tag = s->prm.tag_base | st->tag;
    dpc_status_t rc;
    switch (st->kind) {
    case STEP_SEND:
        /* (done within the call where the transport can: see send_now) */
        rc = tp->ops->send_now ? tp->ops->send_now(tp, st->peer, tag, st->a, st->count, s->prm.mem)
                               : DPC_INPROGRESS;
        rc = issue_message(s, st, tag, rc);
        break;
    case STEP_RECV:
        /* (a large message copied in the call is local work: not in a
         * start that defers it, see SCHED_DEFER_NOW_MAX) */
        rc = tp->ops->recv_now && !(s->prm.defer_local && st->count > SCHED_DEFER_NOW_MAX)
                 ? tp->ops->recv_now(tp, st->peer, tag, st->dst, st->count, s->prm.mem)
                 : DPC_INPROGRESS;
        if (rc == DPC_INPROGRESS && s->prm.poll_recvs && tp->ops->recv_now &&
            s->npolled < SCHED_POLL_MAX && s->poll_tests < SCHED_POLL_TESTS) {
            st->state = ST_POLLED;
            s->polled[s->npolled++] = id;
            return true;
        }
        rc = issue_message(s, st, tag, rc);
        break;
    case STEP_EXPOSE:
        rc = expose_step(s, st);
        if (rc == DPC_OK)
            complete_step(s, st);
        break;
    case STEP_GET:
    case STEP_PUT: {
        void *remote = NULL;
        size_t off = st->off;
        if (st->b) {   /* (dpc_sched_get_at, dpc_sched_put_at) */
            uint64_t at;
            memcpy(&at, st->b, sizeof(at));
            off = at > SIZE_MAX - off ? SIZE_MAX : off + (size_t)at;   /* (the transport refuses it) */
        }
        size_t n = one_sided_slice(s, st);
        off = off > SIZE_MAX - st->done ? SIZE_MAX : off + st->done;
        char *mine = st->done ? (char *)st->dst + st->done : st->dst;
        bool first = st->done == 0;
        st->done += n;   /* (before the call: its end may be reported within it) */
        rc = import_of(s, st->peer, st->a, &remote);
        if (rc == DPC_OK && st->kind == STEP_GET)
            rc = tp->ops->iget(tp, st->peer, remote, off, mine, n, s->prm.mem, xfer_done, st,
                               &st->xfer);
        else if (rc == DPC_OK)
            rc = tp->ops->iput(tp, st->peer, remote, off, mine, n, s->prm.mem, xfer_done, st,
                               &st->xfer);
        if (rc == DPC_OK) {
            st->state = ST_ISSUED;
            s->inflight++;
            s->slicing += st->done < st->count;
            s->worked += n;
            if (st->kind == STEP_GET) {
                s->stats.gets += first;
                s->stats.bytes_got += n;
            } else {
                s->stats.puts += first;
                s->stats.bytes_put += n;
            }
        }
        break;
    }
    case STEP_DCOPY:
    case STEP_DREDUCE: {
        /* the device's work: started here, done when dev_ops reports it */
        bool copy = st->kind == STEP_DCOPY;
        rc = copy ? s->prm.dev_ops->copy(s->prm.dev_ctx, st->dst, st->a, st->count, (int)st->off,
                                         xfer_done, st)
                  : s->prm.dev_ops->reduce(s->prm.dev_ctx, st->dst, st->a, st->b, st->count,
                                           st->dt, st->op, xfer_done, st);
        if (rc == DPC_OK) {
            st->state = ST_ISSUED;
            s->inflight++;
            s->dev_inflight++;
            *(copy ? &s->stats.copies : &s->stats.dev_reduces) += 1;
            *(copy ? &s->stats.bytes_copied : &s->stats.dev_elems_reduced) += st->count;
        } else if (device_failure_noted(s, st, rc)) {
            complete_step(s, st);
            rc = DPC_OK;
        }
        break;
    }
    default:
        rc = run_local(s, st);
        if (rc == DPC_INPROGRESS)
            return false;
        if (rc == DPC_OK)
            complete_step(s, st);
        break;
    }
    if (rc != DPC_OK)
        set_error(s, rc, id);
    return true;
}

/* Whether a test() has made its share of local work (SCHED_TEST_SLICES
 * slices, work_spent), and which steps wait for the next test once it has:
 * copies, reductions, and reads and writes of a peer's memory not yet
 * begun (issues_now says why the next slice of one begun goes on). */
static bool share_spent(const dpc_sched_t *s)
{
    return s->prm.local_slice_bytes && s->worked >= SCHED_TEST_SLICES * s->prm.local_slice_bytes;
}

static bool in_share(const step_t *st)
{
    return st->kind == STEP_COPY || st->kind == STEP_REDUCE ||
           ((st->kind == STEP_GET || st->kind == STEP_PUT) && st->done == 0);
}

static bool is_transfer(int kind)
{
    return kind == STEP_SEND || kind == STEP_RECV || kind == STEP_GET || kind == STEP_PUT ||
           kind == STEP_EXPOSE || kind == STEP_DCOPY || kind == STEP_DREDUCE;
}

/* Whether issue_transfers issues this ready step now: every transfer, but
 * in the start of a schedule that defers its local work, a read or write
 * of a peer's memory of more than SCHED_DEFER_NOW_MAX bytes. On one node
 * that is a kernel copy made within the call, local work in all but name:
 * held back, it stays in the ready queue and goes first at the next test
 * (the progress thread's, or the program's wait). A start that made them
 * took the whole call's time in a nonblocking bcast of 4-16 MiB (the
 * non-root's read of the root's buffer: 128 of 137 us at 4 MiB, 1012 of
 * 1065 us at 16 MiB, 2 ranks), and it held back the start's own
 * descriptor (sent behind its joins, after these reads) from a peer that
 * waited for it: the nonblocking direct reduce-scatter of 128 KiB-1 MiB
 * took 1.1-1.5x as long (docs/bench/s47). So is a read or write not yet
 * begun in a test that has made its share of local work (spent:
 * work_spent): it waits in the queue, and goes in its order among the
 * copies and reductions. The next slice of one begun goes on: its slices
 * bound it, and held behind the queue's copies it took twice the turns (a
 * nonblocking 4 MiB bcast at 4 ranks, 1.19x as long; docs/bench/s49). */
static bool issues_now(const dpc_sched_t *s, const step_t *st, bool spent)
{
    bool one_sided = st->kind == STEP_GET || st->kind == STEP_PUT;
    bool held = (s->starting && st->count > SCHED_DEFER_NOW_MAX) || (spent && in_share(st));
    return is_transfer(st->kind) && !(one_sided && held);
}

/* Issues every ready transfer, sends first, and again those the first ones
 * made ready (an expose's descriptor send), leaving the copies and
 * reductions in the ready queue in their order. Transfers before local
 * work: a receive whose message is already in a mailbox copies it out when
 * posted, a read is a kernel copy, and every peer waiting for our data or
 * our word would wait for our copies too. (Exposing is cheap and lets the
 * peers start reading.) Only the entries queued since the last call are
 * looked at: those before are local steps, or what a start held back
 * (launch looks at those again), or reads and writes a test held back
 * (run_ready issues them in their turn). */
static void issue_transfers(dpc_sched_t *s)
{
    /* (decided once: issuing changes it, and the same steps are kept) */
    bool spent = share_spent(s);
    int start = s->ready_scan > s->ready_head ? s->ready_scan : s->ready_head;
    for (int from = start; from < s->ready_tail && s->status == DPC_OK;) {
        int tail = s->ready_tail;
        for (int k = from; k < tail && s->status == DPC_OK; k++)
            if (s->steps[s->ready[k]].kind == STEP_SEND)
                issue_step(s, s->ready[k]);
        for (int k = from; k < tail && s->status == DPC_OK; k++) {
            const step_t *st = &s->steps[s->ready[k]];
            if (st->kind != STEP_SEND && issues_now(s, st, spent))
                issue_step(s, s->ready[k]);
        }
        from = tail;
    }
    int keep = start;
    for (int k = start; k < s->ready_tail; k++)
        if (!issues_now(s, &s->steps[s->ready[k]], spent))
            s->ready[keep++] = s->ready[k];
    s->ready_tail = s->ready_scan = keep;
}

/* Completes the ready joins (NOP steps: no work) and issues the transfers
 * that they and their successors make ready, leaving the copies and
 * reductions queued in their order. For a start that defers its local
 * work: a send often waits behind a join (the direct algorithms' descriptor
 * waits for the regions' exposures), and a peer waits for that send; left
 * to the first test, it went out 6 us late on a 512 KiB MPI_Iallreduce at
 * 2 ranks (the time to return to the program and enter MPI_Wait), and the
 * call took 10-20 us longer than the blocking one. */
static void complete_ready_joins(dpc_sched_t *s)
{
    bool joined = true;
    while (joined && s->status == DPC_OK) {
        joined = false;
        int keep = s->ready_head;
        /* (complete_step appends successors past k: they are looked at in
         * this pass; keep <= k, so nothing unread is overwritten) */
        for (int k = s->ready_head; k < s->ready_tail; k++) {
            int id = s->ready[k];
            if (s->steps[id].kind == STEP_NOP) {
                complete_step(s, &s->steps[id]);
                joined = true;
            } else {
                s->ready[keep++] = id;
            }
        }
        s->ready_tail = keep;
        s->ready_scan = s->ready_head;   /* (transfers may be among them) */
        issue_transfers(s);
    }
}

/* The next local step is a reduction by a program's function. */
static bool user_step_next(const dpc_sched_t *s)
{
    if (s->ready_head >= s->ready_tail)
        return false;
    const step_t *st = &s->steps[s->ready[s->ready_head]];
    return st->kind == STEP_REDUCE && dpc_op_is_user(st->op);
}

/* Whether this test() has made its share of local work: with
 * local_slice_bytes, a test starts no more copies, reductions, or reads
 * and writes of a peer's memory once it has made SCHED_TEST_SLICES slices'
 * worth of them. A slice bounds one step's share, not a test's: the next
 * step ran in the same test, and the next, for as long as each one's
 * transfers ended within the call. On one node they do (a read is a
 * kernel copy), and the direct allreduce's chain of read, reduce and
 * write of cache-sized pieces ran on through many of them: in a 16 MiB
 * MPI_Iallreduce behind compute polled every 20 us, a program's MPI_Test
 * made 170-340 us of work, and the longest took 0.5-0.7 ms (2 ranks,
 * docs/bench/s49). */
static bool work_spent(const dpc_sched_t *s)
{
    return s->ready_head < s->ready_tail && share_spent(s) &&
           in_share(&s->steps[s->ready[s->ready_head]]);
}

/* Local steps in order, each followed by the transfers it made ready; with
 * slicing, local work of about SCHED_TEST_SLICES slices per test() at most
 * (a step that starts goes one slice further: work_spent); with hold_user,
 * up to the first reduction by a program's function. */
static void run_ready(dpc_sched_t *s, bool hold_user)
{
    issue_transfers(s);
    while (s->ready_head < s->ready_tail && s->status == DPC_OK) {
        if ((hold_user && user_step_next(s)) || work_spent(s))
            return;
        if (!issue_step(s, s->ready[s->ready_head]))
            return;
        s->ready_head++;
        issue_transfers(s);
    }
}

static dpc_status_t fail(dpc_sched_t *s);

/* A big message's step: (peer, kind, id), sorted by kind then peer. */
typedef struct { int32_t peer, kind, id; } big_t;

static int big_cmp(const void *x, const void *y)
{
    const big_t *a = x, *b = y;
    return a->kind != b->kind ? a->kind - b->kind : a->peer != b->peer ? a->peer - b->peer
                                                                      : a->id - b->id;
}

/* The acknowledgements of a schedule's messages of ack_min bytes or more
 * (dpc_transport_t): to each peer it received one from, a 0-byte send once
 * all of those receives are done; from each peer it sent one to, a 0-byte
 * receive. The schedule ends when they have: no rank returns while a peer
 * may still need its transport's progress for what it sent. */
static void add_acks(dpc_sched_t *s)
{
    size_t min = s->prm.mem == DPC_MEM_HOST ? s->prm.tp->ack_min : s->prm.tp->ack_min_device;
    int n = s->nsteps, nbig = 0;
    if (!min)
        return;
    for (int i = 0; i < n; i++)
        nbig += (s->steps[i].kind == STEP_SEND || s->steps[i].kind == STEP_RECV) &&
                s->steps[i].count >= min;
    if (!nbig)
        return;
    big_t *big = malloc(sizeof(big_t) * (size_t)nbig);
    dpc_step_id_t *deps = malloc(sizeof(dpc_step_id_t) * (size_t)nbig);
    if (!big || !deps) {
        free(big);
        free(deps);
        set_error(s, DPC_ERR_NOMEM, -1);
        return;
    }
    nbig = 0;
    for (int i = 0; i < n; i++)
        if ((s->steps[i].kind == STEP_SEND || s->steps[i].kind == STEP_RECV) &&
            s->steps[i].count >= min)
            big[nbig++] = (big_t){s->steps[i].peer, s->steps[i].kind, i};
    qsort(big, (size_t)nbig, sizeof(big_t), big_cmp);
    for (int i = 0; i < nbig;) {
        int j = i, nd = 0;
        while (j < nbig && big[j].kind == big[i].kind && big[j].peer == big[i].peer)
            deps[nd++] = big[j++].id;
        step_t p = {.peer = big[i].peer, .tag = DPC_STEP_TAG_ACK};
        if (big[i].kind == STEP_RECV) {
            p.kind = STEP_SEND;
            add_step(s, &p, deps, nd);       /* "I have all you sent me" */
        } else {
            p.kind = STEP_RECV;
            add_step(s, &p, DPC_NO_DEPS);    /* the peer's word that it has */
        }
        i = j;
    }
    free(big);
    free(deps);
}

static dpc_status_t launch(dpc_sched_t *s);
static bool rerunnable(dpc_sched_t *s);

dpc_status_t dpc_sched_start(dpc_sched_t *s)
{
    if (s->state == S_REARMED) {
        for (int i = 0; i < s->nsteps; i++)
            if (s->steps[i].npending == 0)
                push_ready(s, i);
        return launch(s);
    }
    if (s->state != S_BUILDING)
        return DPC_ERR_STATE;
    s->sub.on = false;
    add_acks(s);
    int n = s->nsteps;
    if (s->status != DPC_OK) {       /* an error while building */
        s->state = S_FAILED;
        return s->status;
    }
    if (grow((void **)&s->succ, &s->cap_succ, s->nedges ? s->nedges : 1, sizeof(int32_t)) ||
        grow((void **)&s->ready, &s->cap_ready, n ? n : 1, sizeof(int32_t))) {
        s->state = S_FAILED;
        s->status = DPC_ERR_NOMEM;
        return s->status;
    }
    /* successor table: count, prefix-sum, fill */
    for (int i = 0; i < n; i++)
        s->steps[i].nsucc = 0;
    for (int e = 0; e < s->nedges; e++) {
        s->steps[s->edges[e].from].nsucc++;
        s->steps[s->edges[e].to].npending++;
    }
    int pos = 0;
    for (int i = 0; i < n; i++) {
        s->steps[i].succ_begin = pos;
        pos += s->steps[i].nsucc;
        s->steps[i].nsucc = 0;
    }
    for (int e = 0; e < s->nedges; e++) {
        step_t *from = &s->steps[s->edges[e].from];
        s->succ[from->succ_begin + from->nsucc++] = s->edges[e].to;
    }
    s->nedges = 0;     /* the edge array stays allocated for reuse */
    for (int i = 0; i < n; i++) {
        s->steps[i].ndeps = s->steps[i].npending;
        if (s->steps[i].npending == 0)
            push_ready(s, i);
    }
    s->rerunnable = rerunnable(s);
    return launch(s);
}

/* The start's own part, from a ready queue holding the steps that can run. */
static dpc_status_t launch(dpc_sched_t *s)
{
    s->state = S_RUNNING;
    s->clock_read = false;   /* read at the first timeout check (most never get there) */
    s->ntests = 0;
    s->npolled = 0;
    s->poll_tests = 0;
    s->starting = s->prm.defer_local;
    s->worked = 0;
    /* transfers first, then local work: a peer's data is on its way (and
     * a send's copy into a mailbox done) while our copies run */
    issue_transfers(s);
    if (s->status == DPC_OK && s->prm.defer_local)
        complete_ready_joins(s);
    if (s->starting) {
        /* what it held back goes first at the next test */
        s->starting = false;
        s->ready_scan = s->ready_head;
    }
    if (s->status != DPC_OK)
        return fail(s);
    if (s->prm.defer_local)
        return DPC_OK;
    return dpc_sched_test(s) == DPC_INPROGRESS ? DPC_OK : s->status;
}

static void forget_waiting(dpc_sched_t *s)
{
    if (!s->waiting)
        return;     /* (every replay comes here: most never waited long) */
    free(s->waiting);
    s->waiting = NULL;
    s->nwaiting = 0;
}

/* A transfer under way with a peer: issued, or a receive being polled. */
static bool waits_on_peer(const step_t *st)
{
    return (st->state == ST_ISSUED || st->state == ST_POLLED) && st->peer >= 0;
}

static void record_waiting(dpc_sched_t *s)
{
    forget_waiting(s);
    s->waiting = malloc(sizeof(*s->waiting) * (size_t)(s->inflight + s->npolled + 1));
    if (!s->waiting)
        return;
    for (int i = 0; i < s->nsteps; i++)
        if (waits_on_peer(&s->steps[i])) {
            s->waiting[s->nwaiting].peer = s->steps[i].peer;
            s->waiting[s->nwaiting++].sending =
                s->steps[i].kind == STEP_SEND || s->steps[i].kind == STEP_PUT;
        }
}

static void cancel_inflight(dpc_sched_t *s)
{
    dpc_transport_t *tp = s->prm.tp;
    for (int i = 0; i < s->nsteps; i++) {
        step_t *st = &s->steps[i];
        if (st->state == ST_ISSUED && st->xfer)
            tp->ops->cancel(tp, st->xfer);
    }
}

static dpc_status_t fail(dpc_sched_t *s)
{
    record_waiting(s);
    s->state = S_FAILED;
    cancel_inflight(s);
    return s->status;
}

/* The polled receives tried again: done when their messages are here;
 * posted to the transport as any other once SCHED_POLL_TESTS tests have
 * polled. (No xfer, no callback, no completion queue: a small blocking
 * collective's receive ends in the test that sees its message.) */
static void poll_recvs(dpc_sched_t *s)
{
    dpc_transport_t *tp = s->prm.tp;
    bool post = ++s->poll_tests >= SCHED_POLL_TESTS;
    int keep = 0;
    for (int k = 0; k < s->npolled; k++) {
        int id = s->polled[k];
        step_t *st = &s->steps[id];
        if (s->status != DPC_OK) {
            s->polled[keep++] = id;   /* failed: left as they are (not in flight) */
            continue;
        }
        uint64_t tag = s->prm.tag_base | st->tag;
        dpc_status_t rc = tp->ops->recv_now(tp, st->peer, tag, st->dst, st->count, s->prm.mem);
        if (rc == DPC_INPROGRESS && !post) {
            s->polled[keep++] = id;
            continue;
        }
        if ((rc = issue_message(s, st, tag, rc)) != DPC_OK)
            set_error(s, rc, id);
    }
    s->npolled = keep;
}

static dpc_status_t test(dpc_sched_t *s, bool transport, bool hold_user)
{
    if (s->state == S_DONE)
        return DPC_OK;
    if (s->state == S_FAILED)
        return s->status;
    if (s->state != S_RUNNING)
        return DPC_ERR_STATE;
    dpc_transport_t *tp = s->prm.tp;
    s->worked = 0;
    if (s->npolled)
        poll_recvs(s);
    run_ready(s, hold_user);
    if (s->status == DPC_OK && s->ndone < s->nsteps) {
        if (transport)
            tp->ops->progress(tp);
        if (s->dev_inflight)
            s->prm.dev_ops->progress(s->prm.dev_ctx);
        run_ready(s, hold_user);
    }
    if (s->status != DPC_OK)
        return fail(s);
    if (s->ndone == s->nsteps) {
        s->state = S_DONE;
        /* peers may have written into our exposed regions (one-sided
         * puts: the kernel's process_vm_writev from their side), which
         * memcheck cannot see; they are done now (the algorithm waited for
         * their word), so what they wrote is defined. No-op outside
         * valgrind. */
        for (int i = 0; s->nexposed && i < s->nsteps; i++)
            if (s->steps[i].kind == STEP_EXPOSE)
                VALGRIND_MAKE_MEM_DEFINED_IF_ADDRESSABLE(s->steps[i].a, s->steps[i].count);
        return DPC_OK;
    }
    /* reading the clock costs more than a test of a small collective:
     * every 16th test is often enough for a timeout in seconds, counted
     * from the first of them (16 tests in: the start, to a timeout). A
     * program's reduction left for the program's next MPI call waits for
     * the program, not for a peer: the count starts again after it. */
    if (hold_user && user_step_next(s)) {
        s->clock_read = false;
    } else if (s->prm.timeout_ns && (++s->ntests & 15) == 0) {
        uint64_t now = tp->ops->now_ns(tp);
        if (!s->clock_read) {
            s->start_ns = now;
            s->clock_read = true;
        } else if (now - s->start_ns > s->prm.timeout_ns) {
            set_error(s, DPC_ERR_TIMEOUT, -1);
            return fail(s);
        }
    }
    return DPC_INPROGRESS;
}

dpc_status_t dpc_sched_test(dpc_sched_t *s)
{
    return test(s, true, false);
}

dpc_status_t dpc_sched_test_progressed(dpc_sched_t *s)
{
    return test(s, false, false);
}

dpc_status_t dpc_sched_test_held(dpc_sched_t *s)
{
    return test(s, false, true);
}

dpc_status_t dpc_sched_wait(dpc_sched_t *s)
{
    dpc_status_t st;
    while ((st = dpc_sched_test(s)) == DPC_INPROGRESS)
        s->prm.tp->ops->idle_wait(s->prm.tp, 1000000);
    return st;
}

static uint64_t wall_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Back to an empty schedule being built; allocations of the arrays stay. */
static void reset(dpc_sched_t *s)
{
    release_regions(s);
    pool_release(s);   /* (first: the pool may keep the pieces) */
    for (int i = 0; i < s->nscratch; i++)
        free(s->scratch[i].p);
    forget_waiting(s);
    s->nscratch = 0;
    s->nsteps = s->nedges = 0;
    s->ready_head = s->ready_tail = s->ready_scan = 0;
    s->ndone = s->inflight = s->dev_inflight = s->slicing = 0;
    s->sub.on = false;
    s->pool_used = s->scratch_total = 0;
    memset(s->pool_off, 0, sizeof(s->pool_off));
    s->scratch_given = false;
    s->state = S_BUILDING;
    s->status = DPC_OK;
    s->failed_step = -1;
    memset(&s->stats, 0, sizeof(s->stats));
}

void dpc_sched_destroy(dpc_sched_t *s)
{
    if (!s)
        return;
    if (s->inflight > 0) {
        /* The transport may still write into our buffers until every
         * callback has come: cancel and wait for them (bounded). */
        dpc_transport_t *tp = s->prm.tp;
        set_error(s, DPC_ERR_CANCELED, -1);
        cancel_inflight(s);
        uint64_t t0 = wall_ns();
        while (s->inflight > 0 && wall_ns() - t0 < 10000000000ull) {
            /* device copies cannot be cancelled: they end on their own */
            int n = s->dev_inflight ? s->prm.dev_ops->progress(s->prm.dev_ctx) : 0;
            if (!tp->ops->progress(tp) && !n)
                tp->ops->idle_wait(tp, s->dev_inflight ? 0 : 1000000);
        }
        if (s->inflight > 0) {
            /* never free memory a transport may still write into */
            fprintf(stderr, "libdpcoll: %d transfers did not complete after cancel; "
                    "leaking their schedule\n", s->inflight);
            return;
        }
    }
    reset(s);
    free(s->scratch);
    free(s->exposed);
    free(s->imports);
    free(s->steps);
    free(s->edges);
    free(s->succ);
    free(s->ready);
    free(s);
}

/* Device copies in flight count: their end wakes no file descriptor. So
 * do the slices of a read or write still to come: a progress thread that
 * took the slice in flight for a wait on the transport went round its
 * "events pending" turn instead, which naps after many in a row (a 16 MiB
 * nonblocking bcast behind a sleep hid 43-53% of its time, 95-98% made in
 * one piece). */
bool dpc_sched_has_local_work(const dpc_sched_t *s)
{
    return s->state == S_RUNNING &&
           (s->ready_head < s->ready_tail || s->dev_inflight > 0 || s->slicing > 0);
}

bool dpc_sched_has_unheld_work(const dpc_sched_t *s)
{
    return s->state == S_RUNNING && ((s->ready_head < s->ready_tail && !user_step_next(s)) ||
                                     s->dev_inflight > 0 || s->slicing > 0);
}

bool dpc_sched_settled(const dpc_sched_t *s)
{
    const dpc_transport_t *tp = s->prm.tp;
    if (s->state != S_RUNNING || !tp->ops->settled || s->nsteps > DPC_SETTLED_MAX_STEPS)
        return false;
    for (int i = 0; i < s->nsteps; i++) {
        const step_t *st = &s->steps[i];
        if (st->state == ST_DONE)
            continue;
        switch (st->kind) {
        case STEP_REDUCE: case STEP_COPY: case STEP_NOP:
            continue;   /* this side's own work, done when it waits */
        case STEP_SEND: case STEP_RECV:
            /* issued and settled; a send not yet issued is one a peer
             * waits for */
            if (st->state == ST_ISSUED && st->xfer &&
                tp->ops->settled((dpc_transport_t *)tp, st->xfer))
                continue;
            return false;
        default:
            return false;
        }
    }
    return true;
}

bool dpc_sched_idle(const dpc_sched_t *s)
{
    return s->inflight == 0 && s->state != S_RUNNING;
}

void dpc_sched_release_pool(dpc_sched_t *s)
{
    if (dpc_sched_idle(s))
        pool_release(s);
}

/* Every step back to waiting, the counts and stats to zero: a finished
 * schedule ready to start again. */
static void rearm(dpc_sched_t *s)
{
    release_regions(s);
    forget_waiting(s);
    for (int i = 0; i < s->nsteps; i++) {
        step_t *st = &s->steps[i];
        st->state = ST_WAITING;
        st->npending = st->ndeps;
        st->done = 0;
        st->xfer = NULL;
    }
    s->ready_head = s->ready_tail = s->ready_scan = 0;
    s->ndone = s->inflight = s->slicing = 0;
    s->status = DPC_OK;
    s->failed_step = -1;
    memset(&s->stats, 0, sizeof(s->stats));
    s->state = S_REARMED;
}

/* (the scratch must still be the schedule's own: pool memory may have
 * gone to another schedule since) */
static bool replayable_state(const dpc_sched_t *s)
{
    return s->state == S_DONE && s->inflight == 0 && !s->pool && !s->pool_used &&
           !s->scratch_given;
}

dpc_status_t dpc_sched_replay(dpc_sched_t *s, const dpc_sched_params_t *params)
{
    if (!replayable_state(s) || !params || params->tp != s->prm.tp ||
        params->mem != s->prm.mem || params->pool ||
        !tag_base_ok(params->tag_base))
        return DPC_ERR_STATE;
    rearm(s);
    s->prm = *params;
    return DPC_OK;
}

dpc_status_t dpc_sched_replay_tags(dpc_sched_t *s, uint64_t tag_base, void *user_ctx)
{
    if (!replayable_state(s) || !tag_base_ok(tag_base))
        return DPC_ERR_STATE;
    rearm(s);
    s->prm.tag_base = tag_base;
    s->prm.user_ctx = user_ctx;
    return DPC_OK;
}

/* Whether dpc_sched_rerun can run s's steps: few, each a message that
 * goes a way send_now or recv_now can finish (the transport's now_way), a
 * copy, a reduction or a join (no one-sided or device step: those have
 * state of their own beyond the steps). */
static bool rerunnable(dpc_sched_t *s)
{
    dpc_transport_t *tp = s->prm.tp;
    if (s->nsteps > DPC_RERUN_MAX_STEPS || !tp->ops->now_way || !tp->ops->send_now ||
        !tp->ops->recv_now)
        return false;
    memset(s->rerun_kind, 0, sizeof(s->rerun_kind));
    for (int i = 0; i < s->nsteps; i++) {
        const step_t *st = &s->steps[i];
        int k = st->kind;
        if (k != STEP_SEND && k != STEP_RECV && k != STEP_COPY && k != STEP_REDUCE &&
            k != STEP_NOP)
            return false;
        /* (a message only isend or irecv can carry: the engine's) */
        if ((k == STEP_SEND || k == STEP_RECV) &&
            !tp->ops->now_way(tp, st->peer, st->count, s->prm.mem, k == STEP_SEND))
            return false;
        s->rerun_kind[k == STEP_SEND ? 0 : k == STEP_RECV ? 1 : 2] |= UINT32_C(1) << i;
    }
    return true;
}

/* A pass that found nothing to do waits a moment before the next: the
 * line a receive polls is the one its sender is about to write, and a
 * loop of loads on it takes it from the sender's core over and over. */
static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* dpc_sched_rerun progresses the transport every this many passes that
 * did nothing (a message UCX carries reaches recv_now only through
 * progress; a mailbox record is seen without it). */
#define RERUN_PROGRESS_EVERY 16

/* The engine's state for what a rerun left: the steps in done (a bit
 * each) finished, the others waiting for pend[i] dependencies, those with
 * none ready. Then as dpc_sched_start goes on. */
static dpc_status_t rerun_hand_over(dpc_sched_t *s, uint64_t tag_base, void *user_ctx,
                                    uint32_t done, const int32_t *pend, dpc_status_t err,
                                    int err_step)
{
    rearm(s);
    s->prm.tag_base = tag_base;
    s->prm.user_ctx = user_ctx;
    for (int i = 0; i < s->nsteps; i++) {
        step_t *st = &s->steps[i];
        if (done >> i & 1) {
            st->state = ST_DONE;
            s->ndone++;
        } else {
            st->npending = pend[i];
        }
    }
    if (err != DPC_OK) {
        s->state = S_RUNNING;
        set_error(s, err, err_step);
        return fail(s);
    }
    for (int i = 0; i < s->nsteps; i++)
        if (!(done >> i & 1) && pend[i] == 0)
            push_ready(s, i);
    dpc_status_t st = launch(s);
    return st == DPC_OK && s->state == S_RUNNING ? DPC_INPROGRESS : st;
}

dpc_status_t dpc_sched_rerun(dpc_sched_t *s, uint64_t tag_base, void *user_ctx,
                             unsigned max_idle, bool *ran)
{
    dpc_transport_t *tp = s->prm.tp;
    *ran = false;
    /* (the parameters as the last run had them: a replay may change them;
     * the transport's ops were looked at when the steps were, rerunnable) */
    if (!s->rerunnable || !replayable_state(s) || !tag_base_ok(tag_base) ||
        s->prm.mem != DPC_MEM_HOST || s->prm.defer_local || s->prm.local_slice_bytes ||
        s->prm.remote_slice_bytes)
        return DPC_ERR_STATE;
    *ran = true;
    int n = s->nsteps;
    int32_t pend[DPC_RERUN_MAX_STEPS];
    uint32_t all = n == 32 ? UINT32_MAX : (UINT32_C(1) << n) - 1, left = all;
    for (int i = 0; i < n; i++)
        pend[i] = s->steps[i].ndeps;
    s->prm.user_ctx = user_ctx;   /* (a program's reduction reads it) */
    for (unsigned idle = 0; left && idle < max_idle;) {
        uint32_t before = left;
        /* the ready sends first, then receives, then local work, as the
         * engine issues them (a peer waits for our sends, not for our
         * copies); after a local step, its successors' sends first again.
         * A receive whose message is not here yet is passed over for now,
         * and what waits on it with it. */
    pass:
        for (int phase = 0; phase < 3; phase++)
            for (uint32_t m = left & s->rerun_kind[phase]; m; m &= m - 1) {
                int i = __builtin_ctz(m);
                if (pend[i])
                    continue;
                step_t *st = &s->steps[i];
                uint64_t tag = tag_base | st->tag;
                dpc_status_t rc;
                switch (st->kind) {
                case STEP_SEND:
                    rc = tp->ops->send_now(tp, st->peer, tag, st->a, st->count, DPC_MEM_HOST);
                    break;
                case STEP_RECV:
                    rc = tp->ops->recv_now(tp, st->peer, tag, st->dst, st->count, DPC_MEM_HOST);
                    break;
                case STEP_NOP:
                    rc = DPC_OK;
                    break;
                default:
                    st->done = 0;
                    rc = run_local(s, st);   /* (whole: no slicing in a rerunnable one) */
                    break;
                }
                /* (a send the transport cannot take now, its ring to the
                 * peer full: isend's, at once) */
                if (rc == DPC_INPROGRESS && st->kind == STEP_SEND)
                    return rerun_hand_over(s, tag_base, user_ctx, all & ~left, pend, DPC_OK, -1);
                if (rc == DPC_INPROGRESS)
                    continue;
                if (rc != DPC_OK)
                    return rerun_hand_over(s, tag_base, user_ctx, all & ~left, pend, rc, i);
                left &= ~(UINT32_C(1) << i);
                const int32_t *succ = s->succ + st->succ_begin;
                for (int k = 0; k < st->nsucc; k++)
                    pend[succ[k]]--;
                if (phase == 2 && st->nsucc)
                    goto pass;
            }
        if (left == before) {
            if (++idle % RERUN_PROGRESS_EVERY == 0)
                tp->ops->progress(tp);
            cpu_relax();
        }
    }
    if (left)
        return rerun_hand_over(s, tag_base, user_ctx, all & ~left, pend, DPC_OK, -1);
    /* done, and replayable as before (S_DONE, nothing in flight) */
    s->prm.tag_base = tag_base;
    return DPC_OK;
}

/* addr moved by the first range that holds it (unchanged outside them all) */
static const void *moved(const void *addr, const dpc_sched_move_t *mv, int n)
{
    for (int k = 0; k < n; k++) {
        uintptr_t lo = (uintptr_t)mv[k].old_base, x = (uintptr_t)addr;
        if (x >= lo && x - lo < mv[k].bytes)
            return (const char *)mv[k].new_base + (x - lo);
    }
    return addr;
}

dpc_status_t dpc_sched_rebase(dpc_sched_t *s, const dpc_sched_move_t *moves, int nmoves)
{
    if (s->state != S_REARMED)
        return DPC_ERR_STATE;
    for (int i = 0; i < s->nsteps; i++) {
        step_t *st = &s->steps[i];
        st->dst = (void *)moved(st->dst, moves, nmoves);
        st->a = moved(st->a, moves, nmoves);
        st->b = moved(st->b, moves, nmoves);
    }
    return DPC_OK;
}

dpc_status_t dpc_sched_reinit(dpc_sched_t *s, const dpc_sched_params_t *params)
{
    if (s->inflight > 0 || s->state == S_RUNNING || !params || !params->tp ||
        !tag_base_ok(params->tag_base))
        return DPC_ERR_STATE;
    reset(s);
    s->prm = *params;
    if (params->pool && !params->pool->busy && params->mem == DPC_MEM_HOST) {
        s->pool = params->pool;
        s->pool->busy = 1;
    }
    return DPC_OK;
}

int dpc_sched_waiting_peers(const dpc_sched_t *s, int *peers, int max)
{
    if (s->state == S_FAILED) {
        for (int i = 0; i < s->nwaiting && i < max; i++)
            peers[i] = s->waiting[i].peer;
        return s->nwaiting;
    }
    int n = 0;
    for (int i = 0; i < s->nsteps; i++)
        if (waits_on_peer(&s->steps[i])) {
            if (n < max)
                peers[n] = s->steps[i].peer;
            n++;
        }
    return n;
}

void dpc_sched_describe(const dpc_sched_t *s, char *buf, size_t len)
{
    static const char *const kinds[] = {"send", "recv", "reduce", "copy", "nop", "expose", "get",
                                        "put", "device copy", "device reduce"};
    _Static_assert(sizeof(kinds) / sizeof(kinds[0]) == STEP_DREDUCE + 1, "a name per step kind");
    size_t off = 0;
    int n = snprintf(buf, len, "%s", dpc_status_str(s->status));
    off = n > 0 ? (size_t)n : 0;
    if (s->failed_step >= 0 && off < len) {
        const step_t *st = &s->steps[s->failed_step];
        n = snprintf(buf + off, len - off, " in step %d (%s", s->failed_step, kinds[st->kind]);
        off += n > 0 ? (size_t)n : 0;
        if (st->peer >= 0 && off < len) {
            n = snprintf(buf + off, len - off, " %s rank %d", st->kind == STEP_SEND || st->kind == STEP_PUT ? "to" : "from",
                         st->peer);
            off += n > 0 ? (size_t)n : 0;
        }
        if (off < len) {
            n = snprintf(buf + off, len - off, ")");
            off += n > 0 ? (size_t)n : 0;
        }
    }
    if (s->state == S_FAILED && s->nwaiting > 0 && off < len) {
        n = snprintf(buf + off, len - off, "; still waiting for rank%s", s->nwaiting > 1 ? "s" : "");
        off += n > 0 ? (size_t)n : 0;
        for (int i = 0; i < s->nwaiting && off < len; i++) {
            /* list each peer once */
            int seen = 0;
            for (int j = 0; j < i; j++)
                seen |= s->waiting[j].peer == s->waiting[i].peer;
            if (seen)
                continue;
            /* and what for: a send not taken, or a message not come */
            int sends = 0, recvs = 0;
            for (int j = i; j < s->nwaiting; j++)
                if (s->waiting[j].peer == s->waiting[i].peer)
                    s->waiting[j].sending ? sends++ : recvs++;
            n = snprintf(buf + off, len - off, "%s %d (", i ? "," : "", s->waiting[i].peer);
            off += n > 0 ? (size_t)n : 0;
            if (sends && off < len) {
                n = snprintf(buf + off, len - off, "%d send%s%s", sends, sends > 1 ? "s" : "",
                             recvs ? ", " : "");
                off += n > 0 ? (size_t)n : 0;
            }
            if (recvs && off < len) {
                n = snprintf(buf + off, len - off, "%d receive%s", recvs, recvs > 1 ? "s" : "");
                off += n > 0 ? (size_t)n : 0;
            }
            if (off < len) {
                n = snprintf(buf + off, len - off, ")");
                off += n > 0 ? (size_t)n : 0;
            }
        }
    }
}

void dpc_sched_get_stats(const dpc_sched_t *s, dpc_sched_stats_t *st)
{
    *st = s->stats;
}
