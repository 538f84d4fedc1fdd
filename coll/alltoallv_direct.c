/*
 * All-to-all with per-rank counts (alltoallv), direct (one-sided) for the
 * pairs with a large block: a pair whose larger block, one way or the
 * other, is beyond the mailboxes (the job's eager limit, eager_max) reads it: each
 * of the two exposes its send data, and the message with its descriptor
 * carries where in it every rank's block starts (send displacements are
 * each rank's own: the reader cannot know them otherwise); then each reads
 * its block straight into its output, one read per peer, and the two say
 * "done". Pairs with small blocks send them, as pairwise does, all at
 * once. Both ranks of a pair know both of its blocks' sizes (what one
 * sends, the other receives), so they decide alike.
 *
 * Why: a block beyond the mailboxes goes by a rendezvous, a handshake and
 * the receiver's kernel copy; a read is that copy alone, with the
 * descriptor's message sent before the data are asked for (the equal-count
 * all-to-all's direct algorithm was 1.2-1.9x pairwise at 16-64 KiB blocks on
 * 2 ranks while the mailboxes took 8 KiB: docs/bench). Blocks that fit a
 * mailbox (64 KiB now) are sent: a record copied in and out beat the
 * rendezvous by 2-7 us up to 128 KiB (docs/bench/s40).
 *
 * In place the send data are the output: a copy of the blocks' span is
 * taken first, and that copy is what the peers read or get sent.
 *
 * Restrictions: host memory on a transport with one-sided access.
 * Choice: each rank knows only its own counts, so no cost the ranks would
 * agree on ranks it against pairwise; it is taken wherever it applies
 * (DPC_ALGO_FIRST_CHOICE), and is pairwise's equal for calls with small
 * blocks only.
 * Cost (this rank's blocks): per small pair alpha + b beta; per large pair
 * 2 alpha + alpha_get + b beta; plus the own block's copy.
 * Messages per rank: one per small block sent; per large pair a descriptor
 * (with p offsets) and a "done".
 */
#include "config.h"
#include "direct.h"

#define A2AV_TAG_DATA 3u

/* The pair (this rank, q) reads: the larger of its two blocks is beyond
 * the mailboxes. */
static bool reads_pair(const dpc_coll_args_t *a, int q)
{
    size_t s = a2a_send_len(a, q), rv = blk_count(a, q) * elsize(a);
    return q != a->rank && (s > rv ? s : rv) > eager_max(a);
}

static int pairs_reading(const dpc_coll_args_t *a)
{
    int n = 0;
    for (int q = 0; q < a->size; q++)
        n += reads_pair(a, q);
    return n;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    size_t es = elsize(a), lo, hi;
    char *out = a->rbuf;
    const char *src;   /* send block i at src + a2a_send_off(a, i) */
    dpc_step_id_t ready;
    if (a2a_send_data(a, s, &src, &lo, &hi, &ready) != DPC_OK)
        return DPC_ERR_NOMEM;
    dpc_step_id_t own = DPC_STEP_NONE;   /* (our reads after it: direct.h) */
    if (!a->in_place && a2a_send_len(a, r) > 0) {
        own = dpc_sched_copy(s, out + blk_displ(a, r) * es, src + a2a_send_off(a, r),
                       a2a_send_len(a, r), DPC_NO_DEPS);
    }
    /* small blocks: sent, all at once */
    for (int i = 1; i < p; i++) {
        int to = (r + i) % p, from = (r - i + p) % p;
        size_t sl = a2a_send_len(a, to), rl = blk_count(a, from) * es;
        if (sl && !reads_pair(a, to))
            dpc_sched_send(s, to, A2AV_TAG_DATA, src + a2a_send_off(a, to), sl,
                           DPC_AFTER(ready));
        if (rl && !reads_pair(a, from))
            dpc_sched_recv(s, from, A2AV_TAG_DATA, out + blk_displ(a, from) * es, rl,
                           DPC_AFTER(ready));
    }
    if (pairs_reading(a) == 0)
        return DPC_OK;
    /* large ones: read, after the descriptors, which carry where each
     * rank's block starts in the region (the span from lo); in place not
     * before the copy of the send data is taken out of the output */
    bool *with = malloc(sizeof(bool) * (size_t)p);
    uint64_t *where = malloc(sizeof(uint64_t) * (size_t)p);
    dpc_step_id_t *reads = malloc(sizeof(dpc_step_id_t) * (size_t)p);
    direct_t d;
    void *bufs[1] = {(void *)(src + lo)};
    size_t span = hi - lo;
    dpc_status_t st = DPC_ERR_NOMEM;
    if (with && where && reads) {
        for (int q = 0; q < p; q++) {
            with[q] = reads_pair(a, q);
            where[q] = a2a_send_len(a, q) ? (uint64_t)(a2a_send_off(a, q) - lo) : 0;
        }
        direct_more_t more = {.with = with, .extra = where,
                              .extra_bytes = sizeof(uint64_t) * (size_t)p, .ready = ready};
        st = direct_exchange_some(&d, s, p, r, bufs, &span, 1, &more);
    }
    if (st == DPC_OK) {
        int nr = 0;
        for (int i = 1; i < p; i++) {
            int q = (r + i) % p;
            size_t rl = blk_count(a, q) * es;
            if (!with[q] || rl == 0)
                continue;
            /* (where q keeps our block: in q's message, known once it is here) */
            const char *at = (const char *)direct_extra(&d, q) + sizeof(uint64_t) * (size_t)r;
            reads[nr++] = dpc_sched_get_at(s, q, direct_desc(&d, q, 0), at, 0,
                                           out + blk_displ(a, q) * es, rl,
                                           DPC_AFTER(d.have[q], ready, own));
        }
        direct_finish(&d, dpc_sched_nop(s, reads, nr));
        direct_free(&d);
    }
    free(with);
    free(where);
    free(reads);
    return st;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    double t = 0;
    for (int q = 0; q < a->size; q++) {
        double b = (double)a2a_send_len(a, q);
        if (q == a->rank)
            continue;
        t += reads_pair(a, q) ? 2 * c->alpha + c->alpha_get + b * c->beta
                              : (b > 0 ? c->alpha + b * c->beta : 0);
    }
    return t + own_copy_cost(a, (double)a2a_send_len(a, a->rank), c);
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t t = 0;
    for (int q = 0; q < a->size; q++)
        if (q != r)
            t += reads_pair(a, q) ? DPC_REGION_DESC_MAX + sizeof(uint64_t) * (uint64_t)a->size
                                  : a2a_send_len(a, q);
    return t;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    uint64_t t = 0;
    for (int q = 0; q < a->size; q++)
        if (q != r)
            t += reads_pair(a, q) ? 2 : a2a_send_len(a, q) > 0;
    return t;
}

const dpc_algo_t dpc_algo_alltoallv_direct = {
    .name = "direct", .coll = DPC_ALLTOALLV,
    .flags = DPC_ALGO_ONE_SIDED | DPC_ALGO_FIRST_CHOICE,
    .build = build, .cost = cost, .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
