/*
 * Reduce-scatter (equal blocks and per-rank counts), recursive halving: each
 * step swaps half of the current range of blocks with the partner whose new
 * rank differs in the top remaining bit, and reduces the half kept. After
 * log2 p' steps new rank j holds its blocks (fold.h: the blocks of the one or
 * two original ranks it stands for, contiguous); an odd rank r < 2 rem then
 * hands block r-1 to its even neighbour.
 *
 * Restrictions: any p, any counts. Partners reduce (lower-ranked data) op
 * (higher-ranked data): identical bits everywhere. The first step pairs
 * ranks p'/2 apart, so only a group folded to two members (p <= 3) has each
 * element reduced in rank order, as an op that does not commute needs
 * (DPC_ALGO_RANK_ORDER_UP_TO_3; reduce_scatter_recursive_doubling.c is for
 * such ops at any p).
 *
 * Cost (n = total input bytes, L = log2 p'; G_g the largest blocks of g
 *   new ranks, F the largest block of a rank that sits out, shares.h): the
 *   sum over g = p'/2, .., 2, 1 of alpha + G_g (beta + gamma +
 *   beta_reread), plus alpha + n (beta + gamma + beta_reread) + alpha +
 *   F beta when folded; every reduction reads a whole message received
 *   (beta_reread, dpc_cost_params_t). Equal blocks of new ranks:
 *   L alpha + (p'-1)/p' n (beta + gamma + beta_reread).
 * Bytes sent: a rank that sits out sends n; new rank j sends n minus the
 * bytes of its own blocks, plus b(r-1) for the odd ranks r < 2 rem.
 */
#include "config.h"
#include "coll_util.h"
#include "fold.h"
#include "shares.h"

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    size_t es = elsize(a);
    const char *in = input_of(a);
    char *out = a->rbuf;
    size_t *off, *len;
    fold_t f = fold_make(p, r);
    uint32_t tag_unfold = (uint32_t)f.steps + 1;
    dpc_status_t rc = DPC_OK;
    if (rank_blocks(a, 1, &off, &len))
        return DPC_ERR_NOMEM;
    size_t n = off[p];
    if (p == 1) {
        if (!a->in_place && len[0])
            dpc_sched_copy(s, out, in, len[0], DPC_NO_DEPS);
        goto done;
    }
    if (f.newrank < 0) {
        dpc_step_id_t sd = n ? dpc_sched_send(s, r + 1, 0, in, n, DPC_NO_DEPS) : DPC_STEP_NONE;
        if (len[r])
            dpc_sched_recv(s, r + 1, tag_unfold, out, len[r], DPC_AFTER(sd));
        goto done;
    }
    /* acc: partial results in input layout; then one receive region per step */
    char *acc = dpc_sched_scratch(s, 3 * n + 1);
    if (!acc) {
        rc = DPC_ERR_NOMEM;
        goto done;
    }
    char *fold_buf = acc + n, *region = acc + 2 * n;
    const char *cur = in;
    dpc_step_id_t last = DPC_STEP_NONE, all[4 * 32 + 2];
    int nall = 0;
    if (r < 2 * f.rem) {
        dpc_step_id_t rv = n ? dpc_sched_recv(s, r - 1, 0, fold_buf, n, DPC_NO_DEPS) : DPC_STEP_NONE;
        if (n)
            last = dpc_sched_reduce(s, acc, fold_buf, in, n / es, a->dtype, a->op, DPC_AFTER(rv));
        cur = acc;
    }
    int j = f.newrank, lo = 0, hi = f.pp;     /* range of new ranks' blocks */
    for (int k = 0; k < f.steps; k++) {
        int mask = f.pp >> (k + 1), partner = j ^ mask, mid = lo + (hi - lo) / 2;
        bool lower = j < partner, final = k == f.steps - 1;
        int klo = lower ? lo : mid, khi = lower ? mid : hi;
        int slo = lower ? mid : lo, shi = lower ? hi : mid;
        size_t koff = off[fold_lo(&f, klo)], kbytes = off[fold_lo(&f, khi)] - koff;
        size_t soff = off[fold_lo(&f, slo)], sbytes = off[fold_lo(&f, shi)] - soff;
        int peer = fold_rank(&f, partner);
        dpc_step_id_t sd = DPC_STEP_NONE, rv = DPC_STEP_NONE;
        if (sbytes)
            sd = dpc_sched_send(s, peer, (uint32_t)k + 1, cur + soff, sbytes, DPC_AFTER(last));
        if (kbytes) {
            /* one region for all steps (kept ranges are nested): free once
             * the previous reduce has read it */
            rv = dpc_sched_recv(s, peer, (uint32_t)k + 1, region, kbytes, DPC_AFTER(last));
            const char *mine = cur + koff;
            if (final && !a->in_place) {
                /* the last reduce writes this rank's block straight to rbuf,
                 * and the block it passes on (folded pair) to acc */
                int first = nall;
                for (int b = fold_lo(&f, klo); b < fold_lo(&f, khi); b++) {
                    if (!len[b])
                        continue;
                    size_t o = off[b] - koff;
                    char *dst = b == r ? out : acc + off[b];
                    all[nall++] = dpc_sched_reduce(s, dst, lower ? mine + o : region + o,
                                                   lower ? region + o : mine + o, len[b] / es,
                                                   a->dtype, a->op, DPC_AFTER(rv, last));
                }
                last = dpc_sched_nop(s, all + first, nall - first);
            } else {
                last = dpc_sched_reduce(s, acc + koff, lower ? mine : region,
                                        lower ? region : mine, kbytes / es, a->dtype, a->op,
                                        DPC_AFTER(rv, last));
            }
        }
        all[nall++] = sd;
        all[nall++] = rv;
        lo = klo;
        hi = khi;
        cur = acc;
    }
    dpc_step_id_t join = dpc_sched_nop(s, all, nall);
    join = dpc_sched_nop(s, DPC_AFTER(join, last));
    if (a->in_place && len[r])
        dpc_sched_copy(s, out, acc + off[r], len[r], DPC_AFTER(join));
    if (r < 2 * f.rem && len[r - 1])
        dpc_sched_send(s, r - 1, tag_unfold, acc + off[r - 1], len[r - 1], DPC_AFTER(join));
done:
    free(off);
    free(len);
    return rc;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    fold_t f = fold_make(a->size, 0);
    double n = (double)total_bytes(a), per_byte = c->beta + c->gamma + c->beta_reread;
    double t = 0;
    size_t G[32];
    fold_group_bytes_max(a, &f, G);
    for (int k = f.steps - 1; k >= 0; k--)   /* halves: of p'/2 new ranks, p'/4.. */
        t += msg_alpha(a, c, (double)G[k]) + (double)G[k] * per_byte;
    if (f.rem) {
        double F = (double)fold_out_bytes_max(a, &f);
        t += msg_alpha(a, c, n) + msg_alpha(a, c, F) + n * per_byte + F * c->beta;
    }
    return t;
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    fold_t f = fold_make(a->size, r);
    uint64_t n = total_bytes(a), es = elsize(a);
    if (a->size == 1)
        return 0;
    if (f.newrank < 0)
        return n;
    uint64_t own = 0;
    for (int b = fold_lo(&f, f.newrank); b < fold_lo(&f, f.newrank + 1); b++)
        own += blk_count(a, b) * es;
    return n - own + (r < 2 * f.rem ? blk_count(a, r - 1) * es : 0);
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    fold_t f = fold_make(a->size, r);
    size_t *off, *len;
    uint64_t t = 0;
    if (a->size == 1 || rank_blocks(a, 1, &off, &len))
        return 0;
    if (f.newrank < 0) {
        t = off[a->size] > 0;
    } else {
        int j = f.newrank, lo = 0, hi = f.pp;
        for (int k = 0; k < f.steps; k++) {
            int mid = lo + (hi - lo) / 2;
            bool lower = j < (j ^ (f.pp >> (k + 1)));
            int slo = lower ? mid : lo, shi = lower ? hi : mid;
            t += off[fold_lo(&f, shi)] > off[fold_lo(&f, slo)];
            if (lower)
                hi = mid;
            else
                lo = mid;
        }
        t += r < 2 * f.rem && len[r - 1] > 0;
    }
    free(off);
    free(len);
    return t;
}

const dpc_algo_t dpc_algo_reduce_scatter_block_recursive_halving = {
    .name = "recursive_halving", .coll = DPC_REDUCE_SCATTER_BLOCK,
    .flags = DPC_ALGO_RANK_ORDER_UP_TO_3, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
const dpc_algo_t dpc_algo_reduce_scatter_recursive_halving = {
    .name = "recursive_halving", .coll = DPC_REDUCE_SCATTER,
    .flags = DPC_ALGO_RANK_ORDER_UP_TO_3, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
