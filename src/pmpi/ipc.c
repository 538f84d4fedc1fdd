/*
 * Device to device through CUDA IPC: a blocking collective whose every rank
 * has its buffers on a GPU, all ranks on one node, moves the data from GPU
 * memory to GPU memory, never through the host. Each rank publishes IPC
 * handles of its buffers, maps its peers' (once: the mappings are kept),
 * and pulls what it needs with device copies on its own stream; reductions
 * read the peers' inputs in place with the device kernels. The host only
 * synchronizes: one gather of the handles, one agreement, one barrier at the
 * end (two for allreduce).
 *
 * Why pull: each rank writes only its own buffers, so nobody's memory is
 * written behind its back, and a rank's inputs are final before it
 * publishes them (it waits for its own default-stream work first): the
 * gather that publishes is also the point after which peers may read. The
 * closing barrier keeps every buffer alive and unchanged until everyone is
 * done reading it.
 *
 * Copies may cross GPUs (the copy engine reaches any GPU of the node that
 * the handle mapped on). Reductions, whose kernels read the peers' memory,
 * need each rank's GPU to reach every peer's: the same GPU, or one it has
 * peer access to (NVLink, PCIe peer to peer: the mapping enables it); each
 * rank asks for itself, and that is agreed with the mappings. Else they go
 * the usual way.
 *
 * This file is the blocking form; ipc_nb.c runs the same plan (the copies
 * and reductions of dpc_ipc_emit_plan) for nonblocking and persistent
 * calls, as steps of a request.
 *
 * Every rank takes the same decision: whether to try at all from the call's
 * arguments that all ranks share (dpc_ipc_wanted), then from the gathered
 * cards (every rank sees all of them): if any rank cannot (a host buffer, a
 * type with holes, no plugin, no handle), all go the usual way (staging).
 * Mapping a peer's handle can fail on one rank alone, so that is agreed too.
 *
 * Allgather(v), bcast, alltoall(v): each rank copies the blocks it
 * receives straight from the peers' inputs (an alltoallv first tells each
 * peer, in one more exchange, where its block starts in the sender's
 * input).
 *
 * The host handshakes are libdpcoll's own collectives on host memory (its
 * mailboxes: a few microseconds each), not MPICH's: so each wait is bounded
 * by DPCOLL_TIMEOUT and names the rank it waited for. A handshake that
 * fails fails the call with its error.
 *
 * Allreduce: rank r owns slice r of the vector; it reduces slice r of every
 * rank's input into its output (its own input on the left, then the
 * others in rank order), and after a barrier every rank copies the other
 * slices from their owners' outputs. Each element is computed once, so
 * every rank gets the same bits.
 */
#include "config.h"
#include "shim.h"
#include "dpc_cuda.h"
#include "dpc_log.h"
#include "ipc.h"
#include "stage.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

typedef dpc_ipc_card_t card_t;

/* Peers' allocations mapped here, kept for later calls (opening a handle
 * costs far more than a call); an entry in use is never closed. In use:
 * during a call, and for as long as a persistent request that went device
 * to device lives (ipc_nb.c keeps its mappings), so there is room for many:
 * a trainer's buckets times its peers times two. */
#define IPC_CACHE 256
static struct {
    unsigned char h[DPC_IPC_HANDLE_BYTES];
    uint64_t key;   /* a hash of h: most entries are passed over on it */
    char *base;
    unsigned long used;
    int busy;
} cache[IPC_CACHE];
static unsigned long cache_clock;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static uint64_t handle_key(const unsigned char *h)
{
    uint64_t k = 1469598103934665603ull;   /* FNV-1a */
    for (int i = 0; i < DPC_IPC_HANDLE_BYTES; i++)
        k = (k ^ h[i]) * 1099511628211ull;
    return k;
}

/* The mapping of handle h here (busy until unmap_release), or NULL. */
static char *map_acquire(const unsigned char *h)
{
    uint64_t key = handle_key(h);
    pthread_mutex_lock(&cache_lock);
    int slot = -1, victim = -1;
    for (int i = 0; i < IPC_CACHE && slot < 0; i++)
        if (cache[i].base && cache[i].key == key && !memcmp(cache[i].h, h, DPC_IPC_HANDLE_BYTES))
            slot = i;
    if (slot < 0) {
        for (int i = 0; i < IPC_CACHE; i++)
            if (!cache[i].busy && (victim < 0 || !cache[i].base ||
                                   (cache[victim].base && cache[i].used < cache[victim].used)))
                victim = i;
        void *base = NULL;
        int rc = victim < 0 ? -1 : 0;
        if (!rc && cache[victim].base) {
            dpc_cuda->ipc_close(cache[victim].base);
            cache[victim].base = NULL;
        }
        if (!rc && (rc = dpc_cuda->ipc_open(h, &base)) != 0)
            dpc_log(DPC_LOG_INFO, "CUDA IPC: cannot map a peer's buffer: %s",
                    dpc_cuda->error_string(rc));
        if (!rc) {
            memcpy(cache[victim].h, h, DPC_IPC_HANDLE_BYTES);
            cache[victim].key = key;
            cache[victim].base = base;
            slot = victim;
        }
    }
    char *base = NULL;
    if (slot >= 0) {
        cache[slot].busy++;
        cache[slot].used = ++cache_clock;
        base = cache[slot].base;
    }
    pthread_mutex_unlock(&cache_lock);
    return base;
}

static void map_release(const char *base)
{
    pthread_mutex_lock(&cache_lock);
    for (int i = 0; i < IPC_CACHE; i++)
        if (cache[i].base == base && cache[i].busy > 0) {
            cache[i].busy--;
            break;
        }
    pthread_mutex_unlock(&cache_lock);
}

void dpc_ipc_fini(void)
{
    for (int i = 0; i < IPC_CACHE; i++)
        if (cache[i].base) {
            dpc_cuda->ipc_close(cache[i].base);
            cache[i].base = NULL;
        }
}

bool dpc_ipc_wanted(MPI_Comm comm, const char *call, dpc_coll_t coll, int comm_size,
                    size_t bytes, dpc_mode_t mode)
{
    /* (a staged call's inner call runs on this rank's host copies: the
     * others are not in it) */
    if (!dpc_g.ipc || comm_size < 2 || bytes < dpc_g.cfg.ipc_min || bytes == 0 ||
        dpc_stage_inner() || dpc_tl_quiet)
        return false;
    if (mode != DPC_BLOCKING)
        return bytes >= DPC_IPC_NB_MIN;
    /* A program whose buffers are on the host would pay the gather of
     * every attempt for nothing: after a call that could not go device to
     * device, the next ones of that collective on this communicator skip
     * the attempt, more of them each time it fails again (1, 2, 4 ... 64
     * calls); one that goes resets that. */
    dpc_comm_t *c;
    if (dpc_comm_get(comm, call, &c))
        return false;
    if (c->ipc_skip[coll] > 0) {
        c->ipc_skip[coll]--;
        return false;
    }
    return true;
}

/* The outcome of an attempt, the same on every rank. */
static void note_outcome(MPI_Comm comm, const char *call, dpc_coll_t coll, bool went)
{
    dpc_comm_t *c;
    if (dpc_comm_get(comm, call, &c))
        return;
    if (went) {
        c->ipc_backoff[coll] = 0;
        return;
    }
    unsigned b = c->ipc_backoff[coll] ? 2 * c->ipc_backoff[coll] : 1;
    c->ipc_backoff[coll] = b > DPC_IPC_BACKOFF_MAX ? DPC_IPC_BACKOFF_MAX : b;
    c->ipc_skip[coll] = c->ipc_backoff[coll];
}

/* A handshake (see the top): quiet, as the program did not make it. */
typedef enum { HS_GATHER, HS_MIN, HS_MAX, HS_ALLTOALL } hs_t;
static int handshake(const dpc_ipc_call_t *x, hs_t kind, const void *mine, int bytes, void *all)
{
    bool was = dpc_tl_quiet;
    dpc_tl_quiet = true;
    int rc = kind == HS_GATHER ? dpc_own_allgather(mine, bytes, all, x->comm, x->call)
             : kind == HS_ALLTOALL
                 ? dpc_own_alltoall(mine, all, x->comm, x->call)
                 : dpc_own_allreduce(all, kind == HS_MIN ? MPI_MIN : MPI_MAX, x->comm, x->call);
    dpc_tl_quiet = was;
    return rc;
}

/* One int agreed in place (min or max over the ranks). */
static int agree(const dpc_ipc_call_t *x, hs_t kind, int *v)
{
    return handshake(x, kind, NULL, 0, v);
}

/* Elements [lo, hi) of n that rank k owns in the allreduce. */
static void slice(size_t n, int p, int k, size_t *lo, size_t *hi)
{
    size_t q = n / (size_t)p, r = n % (size_t)p;
    *lo = (size_t)k * q + ((size_t)k < r ? (size_t)k : r);
    *hi = *lo + q + ((size_t)k < r);
}

/* dst = op over every rank's src_k(n elements at byte offset at), this
 * rank's own first, then the others in rank order. */
static void reduce_all(const dpc_ipc_plan_t *pl, dpc_ipc_emit_t *e, char *dst, size_t at,
                       size_t n)
{
    int first = 1;
    for (int k = 0; k < pl->p; k++) {
        if (k == pl->me)
            continue;
        if (n)
            e->reduce(e, dst, first ? pl->in[pl->me] + at : dst, pl->in[k] + at, n);
        first = 0;
    }
}

static void copy(dpc_ipc_emit_t *e, int from, void *dst, const void *src, size_t n)
{
    if (n)
        e->copy(e, from, dst, src, n);
}

int dpc_ipc_emit_plan(const dpc_ipc_plan_t *pl, const dpc_ipc_call_t *x, dpc_ipc_emit_t *e)
{
    int p = pl->p, me = pl->me;
    size_t blk = x->blk_bytes, es = dpc_dtype_size(x->dt);
    switch (x->coll) {
    case DPC_ALLGATHER:
        for (int k = 0; k < p; k++)
            if (k != me || x->sbuf)   /* in place: the own block is there already */
                copy(e, -1, pl->out[me] + (size_t)k * blk,
                     x->sbuf ? pl->in[k] : pl->out[k] + (size_t)k * blk, blk);
        return 0;
    case DPC_BCAST:
        if (me != x->root)
            copy(e, -1, pl->out[me], pl->out[x->root], blk);
        return 0;
    case DPC_ALLTOALL:
        for (int k = 0; k < p; k++)
            copy(e, -1, pl->out[me] + (size_t)k * blk, pl->in[k] + (size_t)me * blk, blk);
        return 0;
    case DPC_ALLGATHERV:
        /* (in place, each rank published its own block as its input) */
        for (int k = 0; k < p; k++)
            if (k != me || x->sbuf)
                copy(e, -1, pl->out[me] + (size_t)x->displs[k] * x->elem, pl->in[k],
                     (size_t)x->counts[k] * x->elem);
        return 0;
    case DPC_ALLTOALLV:
        /* peer k's block for this rank starts at at[k] in its input */
        for (int k = 0; k < p; k++)
            copy(e, -1, pl->out[me] + (size_t)x->displs[k] * x->elem, pl->in[k] + pl->at[k],
                 (size_t)x->counts[k] * x->elem);
        return 0;
    case DPC_REDUCE_SCATTER_BLOCK:
        reduce_all(pl, e, pl->out[me], (size_t)me * blk, blk / es);
        return 0;
    case DPC_ALLREDUCE: {
        size_t lo, hi;
        slice(x->count, p, me, &lo, &hi);
        reduce_all(pl, e, pl->out[me] + lo * es, lo * es, hi - lo);
        /* every owner's slice final before anyone copies it */
        int rc = e->ready(e);
        if (rc)
            return rc;
        for (int k = 0; k < p; k++) {
            if (k == me)
                continue;
            slice(x->count, p, k, &lo, &hi);
            copy(e, k, pl->out[me] + lo * es, pl->out[k] + lo * es, (hi - lo) * es);
        }
        return 0;
    }
    default:
        return -1;
    }
}

/* The blocking emitter: everything on one stream, in order. */
typedef struct {
    dpc_ipc_emit_t e;
    const dpc_ipc_call_t *x;
    void *stream;
    int rc;        /* the first CUDA error */
    int hs;        /* a failed handshake's MPI error */
} stream_emit_t;

static void stream_copy(dpc_ipc_emit_t *e, int from, void *dst, const void *src, size_t n)
{
    stream_emit_t *se = (stream_emit_t *)e;
    (void)from;   /* (ready waited for every owner) */
    if (!se->rc)
        se->rc = dpc_cuda->copy_async(dst, src, n, se->stream);
}

static void stream_reduce(dpc_ipc_emit_t *e, void *dst, const void *a, const void *b, size_t n)
{
    stream_emit_t *se = (stream_emit_t *)e;
    if (!se->rc)
        se->rc = dpc_cuda->reduce_async(dst, a, b, n, (int)se->x->dt, (int)se->x->op, se->stream);
}

static int sync_stream(stream_emit_t *se)
{
    int rc = dpc_cuda->stream_sync(se->stream);
    return se->rc ? se->rc : rc;
}

/* run's result when another rank's part failed */
#define DPC_IPC_PEER_FAILED (-2)

static int stream_ready(dpc_ipc_emit_t *e)
{
    stream_emit_t *se = (stream_emit_t *)e;
    /* the own slice final; and if one failed, nobody copies (every rank
     * then reports the failure) */
    se->rc = sync_stream(se);
    int any = se->rc != 0;
    if ((se->hs = agree(se->x, HS_MAX, &any)) != 0 || any)
        return 1;
    return 0;
}

/* Whether this rank's kernels can read every peer's buffers: on its own
 * GPU, or on one it has peer access to. */
static int reaches_all(const card_t *cards, int p, int me)
{
    for (int k = 0; k < p; k++) {
        int yes = 0;
        if (k != me && strcmp(cards[k].gpu, cards[me].gpu) &&
            (dpc_cuda->peer_access(cards[me].gpu, cards[k].gpu, &yes) || !yes))
            return 0;
    }
    return 1;
}

/* The collective's copies and kernels, and its host synchronization: 0, a
 * CUDA error, or DPC_IPC_PEER_FAILED; *hs a failed handshake's error. */
static int run(const dpc_ipc_plan_t *pl, const dpc_ipc_call_t *x, int *hs)
{
    stream_emit_t se = {.e = {stream_copy, stream_reduce, stream_ready}, .x = x,
                        .stream = dpc_cuda_staging_stream()};
    int r = dpc_ipc_emit_plan(pl, x, &se.e);
    *hs = se.hs;
    if (se.hs)
        return 0;
    if (r > 0)   /* ready said stop: this rank's error, or a peer's */
        return se.rc ? se.rc : DPC_IPC_PEER_FAILED;
    if (r < 0)
        return -1;
    return sync_stream(&se);
}

const void *dpc_ipc_input(const dpc_ipc_call_t *x, int me)
{
    return x->sbuf                      ? x->sbuf
           : x->coll == DPC_ALLGATHERV ? (const char *)x->rbuf + (size_t)x->displs[me] * x->elem
                                       : x->rbuf;
}

bool dpc_ipc_may_go(const dpc_ipc_call_t *x, const void *in)
{
    return x->local_ok && dpc_cuda && dpc_cuda_is_device(in) && dpc_cuda_is_device(x->rbuf);
}

void dpc_ipc_card_fill(const dpc_ipc_call_t *x, const void *in, card_t *mine, bool sync)
{
    memset(mine, 0, sizeof(*mine));
    mine->ok = dpc_ipc_may_go(x, in);
    /* our buffers final (the program's default-stream work on them done)
     * before the peers may read them: a blocking call waits here, before
     * the gather; a request's queues wait for it on the device, and its
     * handshake fences them before it tells the peers to go */
    if (mine->ok && dpc_cuda_order_after_user(x->comm, x->call,
                                              sync ? DPC_ORDER_STAGING : DPC_ORDER_QUEUES))
        mine->ok = 0;
    /* (the stream exists once ordered: the first device call makes it) */
    if (sync && mine->ok && dpc_cuda->stream_sync(dpc_cuda_staging_stream()))
        mine->ok = 0;
    char gpu_out[sizeof(mine->gpu)];
    bool one = in == x->rbuf;   /* in place: one buffer, asked for once */
    if (mine->ok && (dpc_cuda->ipc_get(in, mine->h[0], &mine->off[0]) ||
                     (!one && dpc_cuda->ipc_get(x->rbuf, mine->h[1], &mine->off[1])) ||
                     dpc_cuda->device_of(in, mine->gpu, sizeof(mine->gpu)) ||
                     (!one && dpc_cuda->device_of(x->rbuf, gpu_out, sizeof(gpu_out))) ||
                     (!one && strncmp(mine->gpu, gpu_out, sizeof(gpu_out)))))
        mine->ok = 0;
    if (one) {
        memcpy(mine->h[1], mine->h[0], sizeof(mine->h[0]));
        mine->off[1] = mine->off[0];
    }
    mine->gpu[sizeof(mine->gpu) - 1] = 0;
}

/* An alltoallv's offsets: where this rank's block for each peer starts in
 * its input, to that peer; *at (allocated) where each peer's block for us
 * starts. A failed allocation is agreed: *ok 0 on every rank. */
static int alltoallv_offsets(const dpc_ipc_call_t *x, int p, uint64_t **at, int *ok)
{
    uint64_t *mine_at = malloc(sizeof(uint64_t) * (size_t)p);
    *at = malloc(sizeof(uint64_t) * (size_t)p);
    *ok = mine_at && *at;
    int rc = agree(x, HS_MIN, ok);
    if (!rc && *ok) {
        for (int k = 0; k < p; k++)
            mine_at[k] = (uint64_t)x->sdispls[k] * x->selem;
        rc = handshake(x, HS_ALLTOALL, mine_at, 0, *at);
    }
    free(mine_at);
    return rc;
}

int dpc_ipc_map_peers(const dpc_ipc_call_t *x, const card_t *cards, int p, int me,
                      const void *in, const char **ins, char **outs, char **bases)
{
    bool reduces = x->coll == DPC_ALLREDUCE || x->coll == DPC_REDUCE_SCATTER_BLOCK;
    if (reduces && !reaches_all(cards, p, me))
        return 0;
    for (int k = 0; k < p; k++) {
        if (k == me) {
            ins[k] = in;
            outs[k] = x->rbuf;
            continue;
        }
        for (int s = 0; s < 2; s++)
            if (!(bases[2 * k + s] = map_acquire(cards[k].h[s])))
                return 0;
        ins[k] = bases[2 * k] + cards[k].off[0];
        outs[k] = bases[2 * k + 1] + cards[k].off[1];
    }
    return 1;
}

void dpc_ipc_unmap(char **bases, int n)
{
    for (int k = 0; bases && k < n; k++)
        if (bases[k]) {
            map_release(bases[k]);
            bases[k] = NULL;
        }
}

/* The call's bytes, for DPCOLL_STATS. */
static size_t call_bytes(const dpc_ipc_call_t *x, int p)
{
    size_t bytes = x->coll == DPC_ALLREDUCE ? x->count * dpc_dtype_size(x->dt)
                   : x->coll == DPC_BCAST   ? x->blk_bytes
                                            : x->blk_bytes * (size_t)p;
    if (x->counts) {
        bytes = 0;
        for (int k = 0; k < p; k++)
            bytes += (size_t)x->counts[k] * x->elem;
    }
    return bytes;
}

void dpc_ipc_count(const dpc_ipc_call_t *x, int p, bool went, bool failed)
{
    bool lk = dpc_need_lock();
    dpc_lock(lk);   /* (the engine's calls count under the same lock) */
    dpc_coll_stats_t *cs = &dpc_g.stats[x->coll];
    cs->ours++;
    cs->ipc += went;
    cs->errors += failed;
    cs->bytes += went ? call_bytes(x, p) : 0;
    dpc_unlock(lk);
}

/* After the copies and kernels: nobody's buffers change or go before
 * everyone has read them; and a failure anywhere fails the call everywhere
 * (a rank's output may hold another's part): the highest failed rank is
 * named. */
static int finish(const dpc_ipc_call_t *x, int me, int rc)
{
    int worst = rc && rc != DPC_IPC_PEER_FAILED ? me + 1 : 0;
    int hs = agree(x, HS_MAX, &worst);
    if (hs)
        return hs;
    if (worst == me + 1)
        return dpc_raise(x->comm, MPI_ERR_OTHER, "%s: a device to device copy or reduction "
                         "through CUDA IPC failed here: %s", x->call, dpc_cuda->error_string(rc));
    if (worst)
        return dpc_raise(x->comm, MPI_ERR_OTHER, "%s: a device to device copy or reduction "
                         "through CUDA IPC failed on rank %d", x->call, worst - 1);
    return MPI_SUCCESS;
}

int dpc_ipc_run(const dpc_ipc_call_t *x, int *err)
{
    int p, me;
    dpc_comm_shape(x->comm, &p, &me);
    const void *in = dpc_ipc_input(x, me);
    card_t mine;
    dpc_ipc_card_fill(x, in, &mine, true);
    /* small groups keep their tables on the stack; a large one allocates,
     * and agrees first that everyone could (else all go the usual way) */
    enum { SMALL = 16 };
    card_t cards_s[SMALL];
    const char *ins_s[SMALL];
    char *outs_s[SMALL], *bases_s[2 * SMALL];
    bool heap = p > SMALL;
    card_t *cards = heap ? malloc(sizeof(card_t) * (size_t)p) : cards_s;
    const char **ins = heap ? malloc(sizeof(char *) * (size_t)p) : ins_s;
    char **outs = heap ? malloc(sizeof(char *) * (size_t)p) : outs_s;
    char **bases = heap ? malloc(sizeof(char *) * 2 * (size_t)p) : bases_s;
    int all = cards && ins && outs && bases, hs = 0;
    if (bases)
        memset(bases, 0, sizeof(char *) * 2 * (size_t)p);
    if (heap)
        hs = agree(x, HS_MIN, &all);
    if (!hs && all) {
        hs = handshake(x, HS_GATHER, &mine, (int)sizeof(card_t), cards);
        for (int k = 0; !hs && k < p; k++)
            all &= cards[k].ok != 0;
    }
    uint64_t *at = NULL;
    if (!hs && all && x->coll == DPC_ALLTOALLV)
        hs = alltoallv_offsets(x, p, &at, &all);
    if (!hs && all) {
        /* mapping (and reaching the peers' GPUs) can fail here alone */
        all = dpc_ipc_map_peers(x, cards, p, me, in, ins, outs, bases);
        hs = agree(x, HS_MIN, &all);
    }
    if (!hs && all) {
        dpc_ipc_plan_t pl = {.p = p, .me = me, .in = ins, .out = outs, .at = at};
        int rc = run(&pl, x, &hs);
        *err = hs ? hs : finish(x, me, rc);
        dpc_ipc_count(x, p, !hs, *err != MPI_SUCCESS);
    } else if (hs) {
        /* a handshake failed (it said why): so does the call */
        *err = hs;
        dpc_ipc_count(x, p, false, true);
    }
    dpc_ipc_unmap(bases, 2 * p);
    free(at);
    note_outcome(x->comm, x->call, x->coll, all && !hs);
    if (heap) {
        free(cards);
        free(ins);
        free(outs);
        free(bases);
    }
    return all || hs;
}
