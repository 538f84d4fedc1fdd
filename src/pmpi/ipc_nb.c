/*
 * Device to device through CUDA IPC for nonblocking and persistent calls:
 * the same plan as the blocking form (ipc.c: each rank pulls what it needs
 * from its peers' buffers, reductions read them in place), run as the steps
 * of a request, so the call returns at once and the progress thread (or the
 * program's MPI_Test/MPI_Wait) moves it on.
 *
 * Every rank must make the same decision, and the call may not wait for its
 * peers, so the decision is itself part of the request. The call builds its
 * usual job as it would without IPC (its schedule built, not started), and
 * the request runs in parts, each a schedule on the engine:
 *  1. cards: each rank sends its card (its buffers' IPC handles, whether it
 *     can go at all; for an alltoallv, where its block for that peer
 *     starts) to every peer, and fences its queues (its inputs are then
 *     final: the program's default-stream work on them is done);
 *  2. if every card says yes: each rank maps its peers' buffers (which can
 *     fail on one rank alone) and tells every peer whether it could;
 *  3. if all could: the plan's copies and kernels as device steps, then a
 *     closing round (every rank tells every peer it is done reading), so no
 *     buffer changes or goes while a peer still reads it. An allreduce's
 *     copies of owner k's slice wait for k's word that it is final.
 * If a card or a mapping says no, the usual schedule starts instead (on the
 * sequence number the call reserved for it, the same on every rank), and a
 * device buffer staged whole is copied to the host only then.
 *
 * The parts run under the engine lock, in whichever thread tests the
 * request (the progress thread too), so nothing here calls MPI; the
 * attempt is prepared (cards filled, queues ordered after the program's
 * work) by the call itself, in the program's thread.
 *
 * A device copy or kernel that fails does not stop this rank's part 3
 * (its peers wait for its words): the closing word says it failed, and
 * then the request fails on every rank, naming the highest rank where it
 * did (a rank's output may hold another's part), as the blocking form's
 * closing agreement does.
 */
#include "config.h"
#include "ipc.h"
#include "stage.h"
#include "dpc_log.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Step tags of the parts (all on the tag base of the request's first
 * sequence number; the usual schedule has a sequence number of its own). */
enum { TAG_CARD = 1, TAG_MAPPED, TAG_READY, TAG_DONE };

typedef enum { PART_CARDS, PART_MAPPED, PART_IPC, PART_USUAL } part_t;

/* What a rank sends each peer first. */
typedef struct {
    dpc_ipc_card_t card;
    uint64_t at;   /* alltoallv: where its block for that peer starts in its input */
} card_msg_t;

struct dpc_ipc_nb {
    dpc_ipc_call_t x;
    const void *in;
    int p, me;
    dpc_ipc_card_t mine;
    card_msg_t *sent, *got;          /* [p] each */
    dpc_ipc_card_t *cards;           /* [p] */
    uint64_t *at;                    /* [p] */
    int32_t mapped, *peer_mapped;    /* [p] */
    int32_t word, *ready_in, *done_in;   /* [p] each: the closing round's words */
    int32_t failed;                  /* a device step of part 3 failed here */
    char why[128];                   /* a failed part 3: where */
    const char **ins;
    char **outs, **bases;            /* [p], [p], [2p] */
    dpc_step_id_t *ready_recv;       /* [p] */
    dpc_step_id_t *steps;            /* the device steps, for the closing round */
    int nsteps, cap_steps;
    dpc_step_id_t last_reduce;
    dpc_sched_t *hs;                 /* the handshake's and the IPC part's schedule */
    dpc_sched_t *usual;              /* the call's own, built, started only to fall back */
    uint64_t tag_base;
    part_t part;
    bool went;
    bool trying;                     /* this start tries (not skipped) */
    /* A persistent request's earlier starts, which every rank knows alike
     * by its next start (MPI_Start needs the last one complete): went
     * device to device: its buffers (bound to the request by MPI) stay
     * mapped, and a start only fences and exchanges cards; fell back:
     * the next starts skip the attempt (1, 2, 4 ... DPC_IPC_BACKOFF_MAX),
     * as blocking calls do. */
    bool bound;
    unsigned backoff, skip;
};

/* the attempt a call left for its dpc_run (ipc.h) */
DPC_TLS dpc_ipc_nb_t *dpc_tl_ipc_pending;

static void *carve(char **at, size_t bytes)
{
    void *p = *at;
    *at += (bytes + 15) & ~(size_t)15;
    return p;
}

/* The state, its tables in one allocation. */
static dpc_ipc_nb_t *nb_alloc(int p)
{
    size_t P = (size_t)p, sizes[] = {
        sizeof(dpc_ipc_nb_t), 2 * P * sizeof(card_msg_t), P * sizeof(dpc_ipc_card_t),
        P * sizeof(uint64_t), 3 * P * sizeof(int32_t), P * sizeof(char *), 3 * P * sizeof(char *),
        P * sizeof(dpc_step_id_t)};
    size_t total = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
        total += (sizes[i] + 15) & ~(size_t)15;
    char *m = calloc(1, total);
    if (!m)
        return NULL;
    char *at = m;
    dpc_ipc_nb_t *n = carve(&at, sizes[0]);
    n->sent = carve(&at, sizes[1]);
    n->got = n->sent + p;
    n->cards = carve(&at, sizes[2]);
    n->at = carve(&at, sizes[3]);
    n->peer_mapped = carve(&at, sizes[4]);
    n->ready_in = n->peer_mapped + p;
    n->done_in = n->ready_in + p;
    n->ins = carve(&at, sizes[5]);
    n->outs = carve(&at, sizes[6]);
    n->bases = n->outs + p;
    n->ready_recv = carve(&at, sizes[7]);
    n->p = p;
    return n;
}

int dpc_ipc_try(const dpc_ipc_call_t *x, dpc_mode_t mode, int *err)
{
    if (mode == DPC_BLOCKING)
        return dpc_ipc_run(x, err);
    int p, me;
    dpc_comm_shape(x->comm, &p, &me);
    dpc_ipc_drop_stale();
    dpc_ipc_nb_t *n = nb_alloc(p);
    if (!n) {
        *err = dpc_raise(x->comm, MPI_ERR_NO_MEM, "%s: out of memory", x->call);
        return 1;
    }
    n->x = *x;
    n->me = me;
    n->in = dpc_ipc_input(x, me);
    dpc_tl_ipc_pending = n;
    return 0;
}

bool dpc_ipc_pending_may_go(void)
{
    const dpc_ipc_nb_t *n = dpc_tl_ipc_pending;
    return n && dpc_ipc_may_go(&n->x, n->in);
}

bool dpc_ipc_nb_defers_copy(const dpc_req_t *op)
{
    return op->ipc && op->ipc->trying && op->ipc->mine.ok;
}

void dpc_ipc_drop_stale_slow(void)
{
    if (dpc_tl_ipc_pending && !dpc_stage_inner()) {
        free(dpc_tl_ipc_pending);
        dpc_tl_ipc_pending = NULL;
    }
}

dpc_ipc_nb_t *dpc_ipc_take(MPI_Comm comm)
{
    dpc_ipc_nb_t *n = dpc_tl_ipc_pending;
    if (!n || n->x.comm != comm)
        return NULL;
    dpc_tl_ipc_pending = NULL;
    return n;
}

/* Cards filled at each start, in the program's thread (see the top). */
void dpc_ipc_nb_prepare(dpc_req_t *op)
{
    dpc_ipc_nb_t *n = op->ipc;
    n->went = false;
    n->why[0] = 0;
    n->trying = n->skip == 0;
    if (!n->trying) {
        n->skip--;
        n->part = PART_USUAL;
        return;
    }
    if (n->bound)   /* (the handles and mappings are those of the last start) */
        n->mine.ok = !dpc_cuda_order_after_user(n->x.comm, n->x.call, DPC_ORDER_QUEUES);
    else
        dpc_ipc_card_fill(&n->x, n->in, &n->mine, false);
    for (int k = 0; k < n->p; k++) {
        n->sent[k].card = n->mine;
        n->sent[k].at = n->x.sdispls ? (uint64_t)n->x.sdispls[k] * n->x.selem : 0;
    }
}

bool dpc_ipc_nb_trying(const dpc_req_t *op)
{
    return op->ipc && op->ipc->trying;
}

/* The handshake's schedule for a part: the finished one again, or a new
 * one (NULL: out of memory). Part 3's device failures are noted in
 * n->failed, not fatal (see the top). */
static dpc_sched_t *hs_sched(dpc_req_t *op, uint64_t tag_base)
{
    dpc_ipc_nb_t *n = op->ipc;
    dpc_sched_params_t prm = {
        .tp = op->c->tp,
        .tag_base = tag_base,
        .timeout_ns = (uint64_t)(dpc_g.cfg.timeout_s * 1e9),
        .mem = DPC_MEM_HOST,
        .dev_ops = dpc_cuda ? &dpc_cuda_device_ops : NULL,
        .defer_local = true,
        .device_failed = n->part == PART_IPC ? &n->failed : NULL,
    };
    if (n->hs && dpc_sched_reinit(n->hs, &prm) != DPC_OK) {
        if (op->s == n->hs)
            op->s = NULL;   /* (the caller sets it again) */
        dpc_sched_destroy(n->hs);
        n->hs = NULL;
    }
    if (!n->hs && dpc_sched_create(&prm, &n->hs) != DPC_OK)
        n->hs = NULL;
    return n->hs;
}

/* Peer k gets `bytes` from sent + k * stride (after dep), and sends its
 * own to got + k * bytes; recvs[k] (if wanted) the receive's step. */
static void exchange(dpc_sched_t *s, const dpc_ipc_nb_t *n, uint32_t tag, const void *sent,
                     size_t stride, void *got, size_t bytes, dpc_step_id_t dep,
                     dpc_step_id_t *recvs)
{
    for (int k = 0; k < n->p; k++) {
        if (k == n->me)
            continue;
        dpc_sched_send(s, k, tag, (const char *)sent + (size_t)k * stride, bytes, DPC_AFTER(dep));
        dpc_step_id_t r = dpc_sched_recv(s, k, tag, (char *)got + (size_t)k * bytes, bytes,
                                         DPC_NO_DEPS);
        if (recvs)
            recvs[k] = r;
    }
}

dpc_status_t dpc_ipc_nb_start(dpc_req_t *op, uint64_t tag_base)
{
    dpc_ipc_nb_t *n = op->ipc;
    n->usual = op->s;
    n->part = PART_CARDS;
    n->tag_base = tag_base;
    dpc_sched_t *s = hs_sched(op, tag_base);
    if (!s)
        return DPC_ERR_NOMEM;
    op->s = s;
    /* this rank's inputs final before the peers may read them: before
     * part 2 tells them so; bound (no part 2), before the card goes */
    dpc_step_id_t fence = n->mine.ok ? dpc_sched_device_fence(s, DPC_TO_DEVICE, DPC_NO_DEPS)
                                     : DPC_STEP_NONE;
    exchange(s, n, TAG_CARD, n->sent, sizeof(card_msg_t), n->got, sizeof(card_msg_t),
             n->bound ? fence : DPC_STEP_NONE, NULL);
    return dpc_sched_start(s);
}

/* The usual schedule after all (the same decision on every rank). */
static dpc_status_t fall_back(dpc_req_t *op)
{
    dpc_ipc_nb_t *n = op->ipc;
    dpc_ipc_unmap(n->bases, 2 * n->p);
    n->bound = false;
    if (op->mode == DPC_PERSISTENT) {
        n->backoff = n->backoff ? 2 * n->backoff : 1;
        if (n->backoff > DPC_IPC_BACKOFF_MAX)
            n->backoff = DPC_IPC_BACKOFF_MAX;
        n->skip = n->backoff;
    }
    n->part = PART_USUAL;
    op->s = n->usual;
    /* a job staged whole whose card said yes copies its device data in
     * only now (dpc_stage_pair and dpc_op_start left them where they were) */
    if (op->job->dev_staged && n->mine.ok && dpc_job_stage_in_now(op->job)) {
        dpc_log(DPC_LOG_ERROR, "%s: cannot copy a device buffer to the host", op->job->call);
        return DPC_ERR_TRANSPORT;
    }
    dpc_status_t st = dpc_sched_start(op->s);
    return st == DPC_OK ? DPC_INPROGRESS : st;
}

/* Part 2: map the peers' buffers, and say whether that went. */
static dpc_status_t start_mapped(dpc_req_t *op)
{
    dpc_ipc_nb_t *n = op->ipc;
    n->mapped = dpc_ipc_map_peers(&n->x, n->cards, n->p, n->me, n->in, n->ins, n->outs, n->bases);
    dpc_sched_t *s = hs_sched(op, n->tag_base);
    if (!s)
        return DPC_ERR_NOMEM;
    op->s = s;
    n->part = PART_MAPPED;
    exchange(s, n, TAG_MAPPED, &n->mapped, 0, n->peer_mapped, sizeof(int32_t), DPC_STEP_NONE,
             NULL);
    dpc_status_t st = dpc_sched_start(s);
    return st == DPC_OK ? DPC_INPROGRESS : st;
}

/* The schedule emitter (ipc.h): device steps, ordered where the plan says. */
typedef struct {
    dpc_ipc_emit_t e;
    dpc_ipc_nb_t *n;
    dpc_sched_t *s;
} sched_emit_t;

static void note_step(dpc_ipc_nb_t *n, dpc_sched_t *s, dpc_step_id_t id)
{
    if (n->nsteps == n->cap_steps) {
        int cap = n->cap_steps ? 2 * n->cap_steps : 16;
        dpc_step_id_t *m = realloc(n->steps, sizeof(*m) * (size_t)cap);
        if (!m) {
            dpc_sched_set_error(s, DPC_ERR_NOMEM);
            return;
        }
        n->steps = m;
        n->cap_steps = cap;
    }
    n->steps[n->nsteps++] = id;
}

static void sched_copy(dpc_ipc_emit_t *e, int from, void *dst, const void *src, size_t bytes)
{
    sched_emit_t *se = (sched_emit_t *)e;
    dpc_step_id_t dep = from >= 0 ? se->n->ready_recv[from] : DPC_STEP_NONE;
    note_step(se->n, se->s, dpc_sched_device_copy(se->s, dst, src, bytes, DPC_TO_DEVICE,
                                                  DPC_AFTER(dep)));
}

static void sched_reduce(dpc_ipc_emit_t *e, void *dst, const void *a, const void *b, size_t cnt)
{
    sched_emit_t *se = (sched_emit_t *)e;
    dpc_ipc_nb_t *n = se->n;
    n->last_reduce = dpc_sched_device_reduce(se->s, dst, a, b, cnt, n->x.dt, n->x.op,
                                             DPC_AFTER(n->last_reduce));
    note_step(n, se->s, n->last_reduce);
}

static int sched_ready(dpc_ipc_emit_t *e)
{
    sched_emit_t *se = (sched_emit_t *)e;
    dpc_ipc_nb_t *n = se->n;
    /* the own slice final: the word to every peer; each peer's slice is
     * copied once its word came */
    exchange(se->s, n, TAG_READY, &n->word, 0, n->ready_in, sizeof(int32_t), n->last_reduce,
             n->ready_recv);
    return 0;
}

/* Part 3: the plan as steps, then the closing round. */
static dpc_status_t start_ipc(dpc_req_t *op)
{
    dpc_ipc_nb_t *n = op->ipc;
    n->part = PART_IPC;
    n->failed = 0;
    dpc_sched_t *s = hs_sched(op, n->tag_base);
    if (!s)
        return DPC_ERR_NOMEM;
    op->s = s;
    n->nsteps = 0;
    n->last_reduce = DPC_STEP_NONE;
    for (int k = 0; k < n->p; k++)
        n->ready_recv[k] = DPC_STEP_NONE;
    sched_emit_t se = {.e = {sched_copy, sched_reduce, sched_ready}, .n = n, .s = s};
    dpc_ipc_plan_t pl = {.p = n->p, .me = n->me, .in = n->ins, .out = n->outs, .at = n->at};
    if (dpc_ipc_emit_plan(&pl, &n->x, &se.e))
        return DPC_ERR_UNSUPPORTED;
    dpc_step_id_t all = n->nsteps ? dpc_sched_nop(s, n->steps, n->nsteps) : DPC_STEP_NONE;
    /* the closing word: whether this rank's part failed */
    exchange(s, n, TAG_DONE, &n->failed, 0, n->done_in, sizeof(int32_t), all, NULL);
    dpc_status_t st = dpc_sched_start(s);
    return st == DPC_OK ? DPC_INPROGRESS : st;
}

dpc_status_t dpc_ipc_nb_next(dpc_req_t *op)
{
    dpc_ipc_nb_t *n = op->ipc;
    switch (n->part) {
    case PART_CARDS: {
        bool all = true;
        for (int k = 0; k < n->p; k++) {
            n->cards[k] = k == n->me ? n->mine : n->got[k].card;
            n->at[k] = k == n->me ? n->sent[k].at : n->got[k].at;
            all &= n->cards[k].ok != 0;
        }
        /* (bound: every peer's buffers are mapped already) */
        return !all ? fall_back(op) : n->bound ? start_ipc(op) : start_mapped(op);
    }
    case PART_MAPPED: {
        bool all = n->mapped != 0;
        for (int k = 0; k < n->p; k++)
            all &= k == n->me || n->peer_mapped[k] != 0;
        return all ? start_ipc(op) : fall_back(op);
    }
    case PART_IPC: {
        int worst = -1;
        for (int k = 0; k < n->p; k++)
            if (k == n->me ? n->failed != 0 : n->done_in[k] != 0)
                worst = k;
        n->bound = worst < 0 && op->mode == DPC_PERSISTENT;
        if (n->bound)
            n->backoff = 0;
        else
            dpc_ipc_unmap(n->bases, 2 * n->p);
        if (worst < 0) {
            n->went = true;
            return DPC_OK;
        }
        if (worst == n->me)
            snprintf(n->why, sizeof(n->why), "a device to device copy or reduction through "
                     "CUDA IPC failed here (its CUDA error is in the log)");
        else
            snprintf(n->why, sizeof(n->why), "a device to device copy or reduction through "
                     "CUDA IPC failed on rank %d", worst);
        return DPC_ERR_TRANSPORT;
    }
    default:
        return DPC_OK;
    }
}

void dpc_ipc_nb_rewind(dpc_req_t *op)
{
    /* (op->s owns it until dpc_ipc_nb_start takes it aside again; after
     * a start that did not try, op->s is the usual schedule already) */
    if (op->ipc->usual) {
        op->s = op->ipc->usual;
        op->ipc->usual = NULL;
    }
}

bool dpc_ipc_nb_went(const dpc_req_t *op)
{
    return op->ipc && op->ipc->went;
}

const char *dpc_ipc_nb_why(const dpc_req_t *op)
{
    return op->ipc && op->ipc->why[0] ? op->ipc->why : NULL;
}

const char *dpc_ipc_nb_doing(const dpc_req_t *op)
{
    if (!op->ipc)
        return NULL;
    switch (op->ipc->part) {
    case PART_CARDS:
    case PART_MAPPED: return "cuda_ipc handshake";
    case PART_IPC: return "cuda_ipc";
    default: return NULL;
    }
}

/* The mappings given back, and the schedules but op->s (the caller's) gone. */
static void drop_spares(dpc_req_t *op)
{
    dpc_ipc_nb_t *n = op->ipc;
    dpc_ipc_unmap(n->bases, 2 * n->p);
    if (n->hs && n->hs != op->s)
        dpc_sched_destroy(n->hs);
    if (n->usual && n->usual != op->s)
        dpc_sched_destroy(n->usual);
    n->hs = n->usual = NULL;
}

void dpc_ipc_nb_end(dpc_req_t *op)
{
    /* (a persistent request's schedules serve its next start; its mappings
     * too, bound) */
    if (op->mode != DPC_PERSISTENT)
        drop_spares(op);
    else if (!op->ipc->bound || op->st != DPC_OK) {
        op->ipc->bound = false;
        dpc_ipc_unmap(op->ipc->bases, 2 * op->ipc->p);
    }
}

void dpc_ipc_nb_free(dpc_req_t *op)
{
    dpc_ipc_nb_t *n = op->ipc;
    if (!n)
        return;
    drop_spares(op);
    free(n->steps);
    free(n);
    op->ipc = NULL;
}
