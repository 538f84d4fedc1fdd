/*
 * Allgather (equal blocks and per-rank counts), recursive doubling: in step k
 * a rank swaps everything it holds with the partner whose new rank differs in
 * bit k; holdings double each step. Non-power-of-two p is folded (fold.h):
 * even ranks r < 2 rem give their block to r+1 first and receive the whole
 * result at the end. New ranks' holdings are contiguous runs of blocks in
 * rank order, so every step is one message. When the displacements are not
 * the packed rank order, the exchange runs in a packed scratch copy that is
 * unpacked at the end.
 *
 * Restrictions: none. Cost (n = total bytes, L = log2 p'; G_g the largest
 *   holdings of g new ranks, B the largest block, F the largest of a rank
 *   that sits out, shares.h): the sum over g = 1, 2, .., p'/2 of alpha +
 *   G_g beta, plus B beta (the own block's copy, not in place), plus
 *   2 alpha + F beta + n beta if folded. Equal blocks of new ranks:
 *   L alpha + (p'-1)/p' n beta + n/p beta (+ 2 alpha + n/p beta + n beta).
 * Bytes sent: a rank that sits out sends its own block; new rank j sends, for
 * m = 1, 2, .., p'/2, the blocks of the m new ranks of its aligned group,
 * plus n for the odd ranks r < 2 rem.
 */
#include "config.h"
#include "coll_util.h"
#include "fold.h"
#include "shares.h"

static bool packed_layout(const dpc_coll_args_t *a)
{
    size_t acc = 0;
    for (int i = 0; i < a->size; i++) {
        if (blk_displ(a, i) != acc)
            return false;
        acc += blk_count(a, i);
    }
    return true;
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    size_t *off, *len, *doff, *len2;   /* off: packed offsets; doff: rbuf offsets */
    fold_t f = fold_make(p, r);
    uint32_t tag_unfold = (uint32_t)f.steps + 1;
    char *out = a->rbuf;
    if (rank_blocks(a, 1, &off, &len))
        return DPC_ERR_NOMEM;
    if (rank_blocks(a, 0, &doff, &len2)) {
        free(off);
        free(len);
        return DPC_ERR_NOMEM;
    }
    free(len2);   /* the same lengths */
    size_t n = off[p];
    bool packed = packed_layout(a);
    char *w = packed ? out : dpc_sched_scratch(s, n + 1);
    if (!w)
        goto done;
    const char *own_src = a->in_place ? out + doff[r] : (const char *)a->sbuf;
    dpc_step_id_t prev = DPC_STEP_NONE;
    if (f.newrank < 0) {
        /* its own block leaves from where it is, and comes back with the
         * whole result: no copy (the receive waits for the send, which may
         * read from w in place) */
        dpc_step_id_t sd = len[r] ? dpc_sched_send(s, r + 1, 0, own_src, len[r], DPC_NO_DEPS)
                                  : DPC_STEP_NONE;
        prev = n ? dpc_sched_recv(s, r + 1, tag_unfold, w, n, DPC_AFTER(sd)) : DPC_STEP_NONE;
    } else {
        if (len[r] && own_src != w + off[r])
            prev = dpc_sched_copy(s, w + off[r], own_src, len[r], DPC_NO_DEPS);
        /* a rank that holds only its own block sends it in the first step
         * from where it is, while it is also copied into place: neither
         * waits for the other (from w, the peer's read of a large block
         * waited for the copy: 2 ranks, 1-4 MiB, 2.2x the ring's time) */
        bool own_only = !(r < 2 * f.rem);
        if (!own_only && len[r - 1]) {
            dpc_step_id_t rv = dpc_sched_recv(s, r - 1, 0, w + off[r - 1], len[r - 1], DPC_NO_DEPS);
            prev = dpc_sched_nop(s, DPC_AFTER(prev, rv));
        }
        int j = f.newrank;
        for (int k = 0; k < f.steps; k++) {
            int m = 1 << k, partner = j ^ m;
            int base = j & ~(m - 1), pbase = partner & ~(m - 1);
            size_t so = off[fold_lo(&f, base)], sl = off[fold_lo(&f, base + m)] - so;
            size_t ro = off[fold_lo(&f, pbase)], rl = off[fold_lo(&f, pbase + m)] - ro;
            int peer = fold_rank(&f, partner);
            dpc_step_id_t sd = DPC_STEP_NONE;
            if (sl && k == 0 && own_only)    /* (so, sl: the own block) */
                sd = dpc_sched_send(s, peer, 1, own_src, sl, DPC_NO_DEPS);
            else if (sl)
                sd = dpc_sched_send(s, peer, (uint32_t)k + 1, w + so, sl, DPC_AFTER(prev));
            dpc_step_id_t rv = rl ? dpc_sched_recv(s, peer, (uint32_t)k + 1, w + ro, rl, DPC_NO_DEPS)
                                  : DPC_STEP_NONE;
            prev = dpc_sched_nop(s, DPC_AFTER(prev, sd, rv));
        }
        if (r < 2 * f.rem && n)
            prev = dpc_sched_send(s, r - 1, tag_unfold, w, n, DPC_AFTER(prev));
    }
    if (!packed)
        for (int i = 0; i < p; i++)
            if (len[i] && !(a->in_place && i == r))
                dpc_sched_copy(s, out + doff[i], w + off[i], len[i], DPC_AFTER(prev));
done:
    free(off);
    free(doff);
    free(len);
    return w ? DPC_OK : DPC_ERR_NOMEM;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    fold_t f = fold_make(a->size, 0);
    shares_t sh = shares_of(a, 0);
    double n = (double)sh.total;
    double t = own_copy_cost(a, (double)sh.max, c);
    size_t G[32];
    fold_group_bytes_max(a, &f, G);
    for (int k = 0; k < f.steps; k++)       /* doubling: holdings of 1, 2, 4.. new ranks */
        t += msg_alpha(a, c, (double)G[k]) + (double)G[k] * c->beta;
    if (f.rem) {
        double F = (double)fold_out_bytes_max(a, &f);
        t += msg_alpha(a, c, F) + msg_alpha(a, c, n) + F * c->beta + n * c->beta;
    }
    return t;
}

static uint64_t group_bytes(const dpc_coll_args_t *a, const fold_t *f, int lo, int hi)
{
    uint64_t t = 0;
    for (int b = fold_lo(f, lo); b < fold_lo(f, hi); b++)
        t += blk_count(a, b) * elsize(a);
    return t;
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    fold_t f = fold_make(a->size, r);
    if (f.newrank < 0)
        return blk_count(a, r) * elsize(a);
    uint64_t t = 0;
    for (int m = 1; m < f.pp; m *= 2) {
        int base = f.newrank & ~(m - 1);
        t += group_bytes(a, &f, base, base + m);
    }
    if (r < 2 * f.rem)
        t += group_bytes(a, &f, 0, f.pp);
    return t;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    fold_t f = fold_make(a->size, r);
    if (f.newrank < 0)
        return blk_count(a, r) > 0;
    uint64_t t = 0;
    for (int m = 1; m < f.pp; m *= 2) {
        int base = f.newrank & ~(m - 1);
        t += group_bytes(a, &f, base, base + m) > 0;
    }
    if (r < 2 * f.rem)
        t += group_bytes(a, &f, 0, f.pp) > 0;
    return t;
}

const dpc_algo_t dpc_algo_allgather_recursive_doubling = {
    .name = "recursive_doubling", .coll = DPC_ALLGATHER, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_allgatherv_recursive_doubling = {
    .name = "recursive_doubling", .coll = DPC_ALLGATHERV, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
