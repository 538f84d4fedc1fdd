/*
 * Allgather (equal blocks and per-rank counts with displacements), direct
 * (one-sided), one transfer per peer and block (direct.h), either way:
 *  - pull: every rank exposes its own block and reads every peer's block
 *    straight into its output;
 *  - push (calls whose whole output is from a->push_min up to
 *    a->push_max bytes: direct_pushes): every rank exposes its output and
 *    writes its own block into every peer's. With displacements (each
 *    rank's are its own) a rank exposes the span of its output that the
 *    blocks cover, and the message with its descriptor carries where in it
 *    each rank's block goes (as alltoallv_direct.c's carries where its
 *    send blocks start); the writer takes the offset from there.
 * Every rank takes the same way (the output's size and push_max are the
 * same on all).
 *
 * Why: the same one copy per block as a rendezvous send, without the
 * handshake of every message (a ring sends p-1 messages per segment). Why
 * two ways: which is faster depends on the machine. While the blocks fit in
 * a core's cache the writer's source is in its own cache and pushing is
 * faster everywhere measured; beyond it one VM read faster and another
 * (this project's now) writes faster at every size to 64 MiB (figures at
 * DPC_PUSH_MAX_ALL, src/dpc_config.h; DPCOLL_PUSH_MAX chooses). Below
 * push_min (DPC_PUSH_MIN) reading is faster again when each rank reads its
 * output between calls, as a program does (dpcoll_bench -t, 2 ranks:
 * 32-128 KiB 3.6-9.9 us reading, 3.9-11.4 writing; 256 KiB-2 MiB 13.7-140
 * writing, 14.8-158 reading); with the output left alone the two tie there.
 *
 * Restrictions: host memory on a transport with one-sided access; any
 * counts and displacements.
 * Cost (n = total bytes gathered, b the smallest block): (p-1) (2 alpha +
 * alpha_get) + (n - b) beta + b beta (the own block's copy, not in place):
 * two messages and a read (or write) per peer, either way, and the rank
 * with the smallest block reads (or is written) the most (shares.h; equal
 * blocks: (p-1)/p n + n/p); pushing, the bytes written to peers at
 * DPC_PUSH_BETA_SCALE of beta (below).
 * Messages per rank: (p-1) descriptors and (p-1) "done".
 */
#include "config.h"
#include "direct.h"
#include "shares.h"

/* Pushing where displacements place the blocks: each rank's message then
 * carries where each block goes in its output (what build sends and
 * bytes_sent counts) */
static bool pushes_to_offsets(const dpc_coll_args_t *a)
{
    return direct_pushes(a) && (a->counts || a->displs);
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    char *out = a->rbuf;
    size_t *off, *len;
    if (dpc_coll_bytes(a) == 0)
        return DPC_OK;
    if (rank_blocks(a, 0, &off, &len))
        return DPC_ERR_NOMEM;
    const char *mine = a->in_place ? out + off[r] : (const char *)a->sbuf;
    dpc_step_id_t own = DPC_STEP_NONE;   /* (our transfers after it: direct.h) */
    if (!a->in_place && len[r])
        own = dpc_sched_copy(s, out + off[r], mine, len[r], DPC_NO_DEPS);
    bool push = direct_pushes(a), v = pushes_to_offsets(a);
    /* pushing, peers write into our output, each at its own block: the
     * whole of it (equal blocks), or the span the blocks cover, with where
     * each block goes in the message (v: displacements are each rank's own) */
    size_t lo = 0, hi = (size_t)p * len[r];
    uint64_t *where = NULL;
    if (v) {
        lo = SIZE_MAX, hi = 0;
        for (int q = 0; q < p; q++)
            if (len[q]) {
                lo = off[q] < lo ? off[q] : lo;
                hi = off[q] + len[q] > hi ? off[q] + len[q] : hi;
            }
        if (!(where = malloc(sizeof(uint64_t) * (size_t)p)))
            dpc_sched_set_error(s, DPC_ERR_NOMEM);
        for (int q = 0; where && q < p; q++)
            where[q] = len[q] ? (uint64_t)(off[q] - lo) : 0;
    }
    direct_t d;
    void *bufs[1] = {push ? (void *)(out + lo) : (void *)mine};
    size_t exposed = push ? hi - lo : len[r];
    direct_more_t more = {.extra = where, .extra_bytes = where ? sizeof(uint64_t) * (size_t)p : 0,
                          .ready = DPC_STEP_NONE};
    dpc_step_id_t *moves = NULL;
    int nm = 0;
    bool ready = p > 1 && (!v || where);   /* (v: the offsets to send) */
    if (ready &&
        direct_exchange_some(&d, s, p, r, bufs, &exposed, 1, where ? &more : NULL) == DPC_OK &&
        (moves = malloc(sizeof(dpc_step_id_t) * (size_t)p))) {
        for (int i = 1; i < p; i++) {
            int q = (r + i) % p;
            /* (v: where q keeps our block, in q's message, known once it is here) */
            const char *at = where ? (const char *)direct_extra(&d, q) + sizeof(uint64_t) * (size_t)r
                                   : NULL;
            if (push && len[r] && at)
                moves[nm++] = dpc_sched_put_at(s, q, direct_desc(&d, q, 0), at, 0, mine, len[r],
                                               DPC_AFTER(d.have[q], own));
            else if (push && len[r])
                moves[nm++] = dpc_sched_put(s, q, direct_desc(&d, q, 0), off[r], mine, len[r],
                                            DPC_AFTER(d.have[q], own));
            else if (!push && len[q])
                moves[nm++] = dpc_sched_get(s, q, direct_desc(&d, q, 0), 0, out + off[q], len[q],
                                            DPC_AFTER(d.have[q], own));
        }
        /* "done" after our moves: pulling, we no longer read their blocks;
         * pushing, ours are in their outputs */
        direct_finish(&d, dpc_sched_nop(s, moves, nm));
    } else if (p > 1) {
        dpc_sched_set_error(s, DPC_ERR_NOMEM);
    }
    if (ready)
        direct_free(&d);
    free(where);
    free(moves);
    free(off);
    free(len);
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    /* the rank with the smallest block reads the most (shares.h) */
    shares_t sh = shares_of(a, 0);
    double p = a->size, n = (double)sh.total, bmin = (double)sh.min;
    double moved = (n - bmin) * c->beta * (direct_pushes(a) ? DPC_PUSH_BETA_SCALE : 1);
    return (p - 1) * (2 * c->alpha + c->alpha_get) + moved + own_copy_cost(a, bmin, c);
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    (void)r;
    /* pushing with displacements, every descriptor's message also says
     * where each rank's block goes (a 64-bit offset per rank) */
    bool where = pushes_to_offsets(a) && direct_sends(a);
    return direct_bytes_sent(a, 1) +
           (where ? (uint64_t)(a->size - 1) * sizeof(uint64_t) * (uint64_t)a->size : 0);
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    (void)r;
    return direct_msgs_sent(a);
}

const dpc_algo_t dpc_algo_allgather_direct = {
    .name = "direct", .coll = DPC_ALLGATHER, .flags = DPC_ALGO_ONE_SIDED, .build = build,
    .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_allgatherv_direct = {
    .name = "direct", .coll = DPC_ALLGATHERV, .flags = DPC_ALGO_ONE_SIDED, .build = build,
    .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
