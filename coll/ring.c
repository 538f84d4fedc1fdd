/* Ring phases (see ring.h). One message per segment; tags are
 * tag0 + step * maxseg + segment, unique within the phase. */
#include "config.h"
#include "ring.h"
#include "part.h"
#include <stdbool.h>
#include <stdlib.h>

/* Step-id arrays: on the stack when small (the common small-message case
 * makes no malloc), else on the heap. */
#define SMALL_IDS 256
static dpc_step_id_t *ids(dpc_step_id_t *small, size_t n)
{
    return n <= SMALL_IDS ? small : malloc(sizeof(dpc_step_id_t) * n);
}
static void ids_free(dpc_step_id_t *p, dpc_step_id_t *small)
{
    if (p != small)
        free(p);
}

static size_t max_segs(int p, const size_t *blen, size_t seg)
{
    size_t m = 0;
    for (int b = 0; b < p; b++) {
        size_t n = nsegs(blen[b], seg);
        if (n > m)
            m = n;
    }
    return m;
}

size_t ring_seg_bytes(size_t want, size_t elsize, int p, const size_t *blen)
{
    size_t seg = want / elsize * elsize;
    if (seg < elsize)
        seg = elsize;
    /* two phases of (p-1) steps, plus a few tags around them, must fit in
     * the step-tag space */
    size_t limit = ((size_t)1 << (DPC_STEP_TAG_BITS - 2)) / (size_t)(p > 1 ? p : 2);
    while (max_segs(p, blen, seg) > limit)
        seg *= 2;
    return seg;
}

uint32_t ring_phase_tags(const ring_phase_t *rp)
{
    return (uint32_t)((size_t)(rp->p - 1) * max_segs(rp->p, rp->blen, rp->seg));
}

static int rank_at(const ring_phase_t *rp, int pos)
{
    int i = mod(pos + rp->shift, rp->p);
    return rp->members ? rp->members[i] : i;
}

dpc_step_id_t ring_reduce_scatter_phase(const ring_phase_t *rp, const char *in, char *accum,
                                        char *out, dpc_dtype_t dt, dpc_op_t op)
{
    dpc_sched_t *s = rp->s;
    int p = rp->p, me = rp->me;
    size_t es = dpc_dtype_size(dt);
    size_t ms = max_segs(p, rp->blen, rp->seg);
    int right = rank_at(rp, me + 1), left = rank_at(rp, me - 1);
    size_t maxblk = 0;
    for (int b = 0; b < p; b++)
        if (rp->blen[b] > maxblk)
            maxblk = rp->blen[b];
    /* two receive slots per segment position: step k uses slot k % 2 */
    char *slot[2];
    slot[0] = dpc_sched_scratch(s, 2 * maxblk);
    slot[1] = slot[0] ? slot[0] + maxblk : NULL;
    /* per segment: the last reduce, send and recv of the two previous steps */
    dpc_step_id_t red_s[SMALL_IDS], snd_s[SMALL_IDS], all_s[SMALL_IDS];
    dpc_step_id_t *red = ids(red_s, 2 * (ms ? ms : 1));
    dpc_step_id_t *snd = ids(snd_s, 2 * (ms ? ms : 1));
    dpc_step_id_t *all = ids(all_s, (size_t)p * 2 * (ms ? ms : 1));
    int nall = 0;
    dpc_step_id_t join = DPC_STEP_NONE;
    if (!red || !snd || !all || !slot[0])
        goto out;
    for (size_t i = 0; i < 2 * ms; i++)
        red[i] = snd[i] = DPC_STEP_NONE;
    for (int k = 0; k < p - 1; k++) {
        int sb = mod(me - k - 1, p), rb = mod(me - k - 2, p);
        int cur = k % 2, prev = 1 - cur;
        /* send: step 0 sends our own input; later steps forward the partial
         * reduced in the previous step */
        size_t ns = nsegs(rp->blen[sb], rp->seg);
        for (size_t g = 0; g < ns; g++) {
            size_t o = g * rp->seg;
            size_t n = rp->blen[sb] - o < rp->seg ? rp->blen[sb] - o : rp->seg;
            const char *src = k == 0 ? in + rp->boff[sb] + o
                            : (accum ? accum + rp->boff[sb] + o : slot[prev] + o);
            dpc_step_id_t dep = k == 0 ? rp->after : red[prev * ms + g];
            snd[cur * ms + g] = dpc_sched_send(s, right, rp->tag0 + (uint32_t)(k * ms + g), src, n,
                                               DPC_AFTER(dep));
            all[nall++] = snd[cur * ms + g];
        }
        size_t nr = nsegs(rp->blen[rb], rp->seg);
        for (size_t g = 0; g < nr; g++) {
            size_t o = g * rp->seg;
            size_t n = rp->blen[rb] - o < rp->seg ? rp->blen[rb] - o : rp->seg;
            /* slot[cur] was last read by the reduce two steps ago and, when
             * partials live in the slots, by the send one step ago */
            dpc_step_id_t rv = dpc_sched_recv(s, left, rp->tag0 + (uint32_t)(k * ms + g),
                                              slot[cur] + o, n,
                                              DPC_AFTER(rp->after, red[cur * ms + g],
                                                        accum ? DPC_STEP_NONE : snd[prev * ms + g]));
            char *dst = k == p - 2 ? out + o
                      : (accum ? accum + rp->boff[rb] + o : slot[cur] + o);
            red[cur * ms + g] = dpc_sched_reduce(s, dst, slot[cur] + o, in + rp->boff[rb] + o,
                                                 n / es, dt, op, DPC_AFTER(rv));
            all[nall++] = red[cur * ms + g];
        }
    }
    join = dpc_sched_nop(s, all, nall);
out:
    if (!red || !snd || !all)
        dpc_sched_set_error(s, DPC_ERR_NOMEM);
    ids_free(red, red_s);
    ids_free(snd, snd_s);
    ids_free(all, all_s);
    return join;
}

/* Segments pay in the allgather phase only where blocks are forwarded: with
 * two members nothing is, and every extra message costs a rendezvous
 * handshake, so each block goes whole. */
static size_t ag_seg(int p, size_t seg)
{
    return p == 2 ? ((size_t)1 << 62) : seg;
}

/* Does position pos have block b before the allgather phase? */
static int has_block(int (*held)(int, int), int p, int pos, int b)
{
    int n = held ? held(pos, p) : 1;
    return b >= pos && b < pos + n;
}

dpc_step_id_t ring_allgather_phase(const ring_phase_t *rp_in, char *buf)
{
    ring_phase_t phase = *rp_in, *rp = &phase;
    rp->seg = ag_seg(rp->p, rp->seg);
    dpc_sched_t *s = rp->s;
    int p = rp->p, me = rp->me;
    size_t ms = max_segs(p, rp->blen, rp->seg);
    int right = rank_at(rp, me + 1), left = rank_at(rp, me - 1);
    dpc_step_id_t rcv_s[SMALL_IDS], all_s[SMALL_IDS];
    dpc_step_id_t *rcv = ids(rcv_s, ms ? ms : 1);
    dpc_step_id_t *all = ids(all_s, (size_t)p * 2 * (ms ? ms : 1));
    int nall = 0;
    dpc_step_id_t join;
    if (!rcv || !all) {
        dpc_sched_set_error(s, DPC_ERR_NOMEM);
        join = DPC_STEP_NONE;
        goto out;
    }
    for (int k = 0; k < p - 1; k++) {
        int sb = mod(me - k, p), rb = mod(me - k - 1, p);
        /* the right neighbour may have this block already: then it is not
         * sent (and the neighbour does not wait for it) */
        size_t ns = has_block(rp->held, p, mod(me + 1, p), sb) ? 0 : nsegs(rp->blen[sb], rp->seg);
        for (size_t g = 0; g < ns; g++) {
            size_t o = g * rp->seg;
            size_t n = rp->blen[sb] - o < rp->seg ? rp->blen[sb] - o : rp->seg;
            /* the block sent at step k is the one received at step k-1 (if
             * it was received: a block this position had needs no wait);
             * the own block may go straight from the input */
            const char *src = k == 0 && rp->own_src ? rp->own_src + o : buf + rp->boff[sb] + o;
            all[nall++] = dpc_sched_send(s, right, rp->tag0 + (uint32_t)(k * ms + g), src, n,
                                         DPC_AFTER(k == 0 ? rp->after : rcv[g], rp->after));
        }
        bool have = has_block(rp->held, p, me, rb);
        size_t nr = nsegs(rp->blen[rb], rp->seg);
        for (size_t g = 0; g < nr; g++) {
            size_t o = g * rp->seg;
            size_t n = rp->blen[rb] - o < rp->seg ? rp->blen[rb] - o : rp->seg;
            rcv[g] = have ? DPC_STEP_NONE
                          : dpc_sched_recv(s, left, rp->tag0 + (uint32_t)(k * ms + g),
                                           buf + rp->boff[rb] + o, n, DPC_AFTER(rp->after));
            if (!have)
                all[nall++] = rcv[g];
        }
    }
    join = dpc_sched_nop(s, all, nall);
out:
    ids_free(rcv, rcv_s);
    ids_free(all, all_s);
    return join;
}

/* bytes (seg == 0) or messages of all blocks outside [lo, lo + n) */
static uint64_t sum_outside(int p, const size_t *blen, int lo, int n, size_t seg)
{
    uint64_t t = 0;
    for (int b = 0; b < p; b++)
        if (b < lo || b >= lo + n)
            t += seg ? nsegs(blen[b], seg) : blen[b];
    return t;
}

static uint64_t sum_except(int p, const size_t *blen, int skip, size_t seg)
{
    return sum_outside(p, blen, skip, 1, seg);
}

uint64_t ring_rs_phase_msgs(int p, int me, const size_t *blen, size_t seg)
{
    return p > 1 ? sum_except(p, blen, me, seg) : 0;
}

uint64_t ring_ag_phase_msgs(int p, int me, const size_t *blen, size_t seg, int (*held)(int, int))
{
    int u = mod(me + 1, p);
    return p > 1 ? sum_outside(p, blen, u, held ? held(u, p) : 1, ag_seg(p, seg)) : 0;
}

int ring_node_order(const dpc_coll_args_t *a, int r, int **order, int *pos)
{
    int p = a->size;
    *order = NULL;
    *pos = r;
    if (!a->node || a->nnodes < 2)
        return 0;
    bool ranked = true;      /* already node by node in rank order? */
    for (int i = 1; i < p && ranked; i++)
        ranked = a->node[i] >= a->node[i - 1];
    if (ranked)
        return 0;
    int *start = calloc((size_t)a->nnodes + 1, sizeof(int));
    int *o = malloc(sizeof(int) * (size_t)p);
    if (!start || !o) {
        free(start);
        free(o);
        return -1;
    }
    for (int i = 0; i < p; i++)
        start[a->node[i] + 1]++;
    for (int k = 0; k < a->nnodes; k++)
        start[k + 1] += start[k];
    for (int i = 0; i < p; i++) {
        int at = start[a->node[i]]++;
        o[at] = i;
        if (i == r)
            *pos = at;
    }
    free(start);
    *order = o;
    return 0;
}

int ring_position(const dpc_coll_args_t *a, int r)
{
    if (!a->node || a->nnodes < 2)
        return r;
    /* (ranks of the nodes before r's, then r's node-mates below it: nodes
     * are numbered by their lowest rank, so in rank order this is r) */
    int pos = 0;
    for (int i = 0; i < a->size; i++)
        pos += a->node[i] < a->node[r] || (a->node[i] == a->node[r] && i < r);
    return pos;
}

int ring_member(const dpc_coll_args_t *a, int pos)
{
    if (!a->node || a->nnodes < 2)
        return pos;
    for (int k = 0; k < a->nnodes; k++)
        for (int i = 0; i < a->size; i++)
            if (a->node[i] == k && pos-- == 0)
                return i;
    return -1;
}

int ring_blocks_by_position(const int *order, int p, size_t *off, size_t *len)
{
    if (!order)
        return 0;
    size_t *t = malloc(sizeof(size_t) * 2 * (size_t)p);
    if (!t)
        return -1;
    for (int i = 0; i < p; i++) {
        t[i] = off[order[i]];
        t[p + i] = len[order[i]];
    }
    for (int i = 0; i < p; i++) {
        off[i] = t[i];
        len[i] = t[p + i];
    }
    free(t);
    return 0;
}
