/*
 * Allreduce, Rabenseifner: a reduce-scatter by recursive halving (each step
 * swaps half of the current range with the partner and reduces the half it
 * keeps) leaves each new rank with one of p' blocks; an allgather by
 * recursive doubling, the halving's steps backwards, then rebuilds the
 * vector in place. Non-power-of-two p is folded first (fold.h).
 *
 * The halving pairs the nearest ranks first (step k: the partner whose new
 * rank differs in bit k), so what a rank holds after step k is the
 * reduction of an aligned run of 2^(k+1) consecutive ranks, and partners
 * combine (lower run) op (higher run): every element is reduced in rank
 * order, which an op that does not commute needs (DPC_ALGO_RANK_ORDER), and
 * both partners compute the same bits. The lower partner keeps the lower
 * half of the range, so new rank j ends with block rev(j) (its bits
 * reversed); the allgather does not care which.
 *
 * Restrictions: any p, any count.
 *
 * Cost (n bytes, L = log2 p'): 2 L alpha + 2 (p'-1)/p' n beta
 *   + (p'-1)/p' n (gamma + beta_reread), plus 2 (alpha + n beta)
 *   + n (gamma + beta_reread) when folded. (beta_reread: each halving
 *   step reduces a whole message received, read back from memory when it
 *   does not fit the caches; the direct allreduce reduces chunks from cache,
 *   which is why it overtakes this one from about 8 MiB at 2 ranks.)
 * The ring's bandwidth in 2 L steps instead of 2 (p-1).
 * Bytes sent by a participating new rank: the half given at each halving
 * step (n less its final block in all), and its range after each step
 * again in the allgather; plus n for odd ranks r < 2 rem that return the
 * result; a rank that sits out sends n.
 */
#include "config.h"
#include "coll_util.h"
#include "fold.h"

/* The block ranges of new rank j (of pp blocks): lo[k], hi[k] before
 * halving step k, lo[L], hi[L] its final block (L = log2 pp). */
static void halving_ranges(int pp, int steps, int j, int *lo, int *hi)
{
    lo[0] = 0;
    hi[0] = pp;
    for (int k = 0; k < steps; k++) {
        int mid = lo[k] + (hi[k] - lo[k]) / 2;
        bool lower = !(j & (1 << k));
        lo[k + 1] = lower ? lo[k] : mid;
        hi[k + 1] = lower ? mid : hi[k];
    }
}

/* bytes of new-rank blocks [lo, hi) */
static uint64_t range_bytes(const dpc_coll_args_t *a, int pp, int lo, int hi)
{
    return (part_off(a->count, pp, hi) - part_off(a->count, pp, lo)) * elsize(a);
}

static dpc_status_t build(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    int p = a->size, r = a->rank;
    size_t es = elsize(a), n = a->count * es;
    const char *in = input_of(a);
    char *out = a->rbuf;
    fold_t f = fold_make(p, r);
    uint32_t tag_unfold = 2 * (uint32_t)f.steps + 1;
    if (n == 0)
        return DPC_OK;
    if (f.newrank < 0) {
        dpc_step_id_t sd = dpc_sched_send(s, r + 1, 0, in, n, DPC_NO_DEPS);
        dpc_sched_recv(s, r + 1, tag_unfold, out, n, DPC_AFTER(sd));
        return DPC_OK;
    }
    /* scratch: the fold's vector, then the halving's receive region (kept
     * halves are nested, so each fits where the first one did) */
    char *tmp = dpc_sched_scratch(s, 2 * n);
    if (!tmp)
        return DPC_ERR_NOMEM;
    const char *cur = in;
    dpc_step_id_t last = DPC_STEP_NONE;
    if (r < 2 * f.rem) {             /* odd: (r-1) op r, rank order */
        dpc_step_id_t rv = dpc_sched_recv(s, r - 1, 0, tmp, n, DPC_NO_DEPS);
        last = dpc_sched_reduce(s, out, tmp, in, a->count, a->dtype, a->op, DPC_AFTER(rv));
        cur = out;
    }
    if (f.steps == 0) {              /* p == 1 */
        if (cur != out)
            dpc_sched_copy(s, out, cur, n, DPC_NO_DEPS);
        return DPC_OK;
    }
    int j = f.newrank, pp = f.pp;
    int lo[32], hi[32];              /* (steps <= 30: p is an int) */
    halving_ranges(pp, f.steps, j, lo, hi);
    char *region = tmp + n;
    dpc_step_id_t *halving = malloc(sizeof(dpc_step_id_t) * (size_t)(3 * f.steps + 1));
    int nh = 0;
    if (!halving)
        return DPC_ERR_NOMEM;
    halving[nh++] = last;
    for (int k = 0; k < f.steps; k++) {
        int partner = j ^ (1 << k);
        bool lower = j < partner;
        int klo = lo[k + 1], khi = hi[k + 1];                   /* kept half */
        int slo = lower ? khi : lo[k], shi = lower ? hi[k] : klo;   /* given half */
        size_t koff = part_off(a->count, pp, klo) * es;
        size_t kcnt = part_off(a->count, pp, khi) - part_off(a->count, pp, klo);
        size_t soff = part_off(a->count, pp, slo) * es;
        size_t sbytes = range_bytes(a, pp, slo, shi);
        int peer = fold_rank(&f, partner);
        dpc_step_id_t sd = DPC_STEP_NONE, rv = DPC_STEP_NONE;
        if (sbytes)
            sd = dpc_sched_send(s, peer, (uint32_t)k + 1, cur + soff, sbytes, DPC_AFTER(last));
        if (kcnt) {
            /* the region is free once the previous reduce has read it */
            rv = dpc_sched_recv(s, peer, (uint32_t)k + 1, region, kcnt * es, DPC_AFTER(last));
            last = dpc_sched_reduce(s, out + koff, lower ? cur + koff : region,
                                    lower ? region : cur + koff, kcnt, a->dtype, a->op,
                                    DPC_AFTER(rv, last));
        }
        halving[nh++] = sd;
        halving[nh++] = rv;
        halving[nh++] = last;
        cur = out;
    }
    /* everything the halving sent from `out` must be gone before the
     * allgather receives into it */
    dpc_step_id_t join = dpc_sched_nop(s, halving, nh);
    free(halving);
    dpc_step_id_t prev = join;
    for (int k = f.steps - 1; k >= 0; k--) {
        /* send the range held after halving step k; receive the partner's,
         * the other half of the range before it */
        int partner = j ^ (1 << k);
        bool lower = j < partner;
        int plo = lower ? hi[k + 1] : lo[k], phi = lower ? hi[k] : lo[k + 1];
        size_t off = part_off(a->count, pp, lo[k + 1]) * es;
        size_t len = range_bytes(a, pp, lo[k + 1], hi[k + 1]);
        size_t poff = part_off(a->count, pp, plo) * es;
        size_t plen = range_bytes(a, pp, plo, phi);
        int peer = fold_rank(&f, partner);
        uint32_t tag = (uint32_t)(2 * f.steps - k);
        dpc_step_id_t sd = DPC_STEP_NONE, rv = DPC_STEP_NONE;
        if (len)
            sd = dpc_sched_send(s, peer, tag, out + off, len, DPC_AFTER(prev));
        if (plen)
            rv = dpc_sched_recv(s, peer, tag, out + poff, plen, DPC_AFTER(join));
        prev = dpc_sched_nop(s, DPC_AFTER(prev, sd, rv));
    }
    if (r < 2 * f.rem)
        dpc_sched_send(s, r - 1, tag_unfold, out, n, DPC_AFTER(prev));
    return DPC_OK;
}

static double cost(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    fold_t f = fold_make(a->size, 0);
    double n = (double)(a->count * elsize(a)), pp = f.pp;
    double t = 2 * (pp - 1) / pp * n * c->beta + (pp - 1) / pp * n * (c->gamma + c->beta_reread);
    for (int k = 1; k <= f.steps; k++)      /* halves n/2, n/4...; the same back */
        t += 2 * msg_alpha(a, c, n / (double)(1u << k));
    if (f.rem)
        t += 2 * (msg_alpha(a, c, n) + n * c->beta) + n * (c->gamma + c->beta_reread);
    return t;
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    fold_t f = fold_make(a->size, r);
    uint64_t n = a->count * elsize(a), t = 0;
    if (f.newrank < 0)
        return n;
    int lo[32], hi[32];
    halving_ranges(f.pp, f.steps, f.newrank, lo, hi);
    t += n - range_bytes(a, f.pp, lo[f.steps], hi[f.steps]);
    for (int k = 0; k < f.steps; k++)
        t += range_bytes(a, f.pp, lo[k + 1], hi[k + 1]);
    if (r < 2 * f.rem)
        t += n;
    return t;
}

static uint64_t msgs_sent(const dpc_coll_args_t *a, int r)
{
    fold_t f = fold_make(a->size, r);
    uint64_t t = 0;
    if (a->count == 0)
        return 0;
    if (f.newrank < 0)
        return 1;
    int lo[32], hi[32], j = f.newrank;
    halving_ranges(f.pp, f.steps, j, lo, hi);
    for (int k = 0; k < f.steps; k++) {
        bool lower = !(j & (1 << k));
        /* halving: the given half; allgather: the range kept; if not empty */
        t += range_bytes(a, f.pp, lower ? hi[k + 1] : lo[k], lower ? hi[k] : lo[k + 1]) > 0;
        t += range_bytes(a, f.pp, lo[k + 1], hi[k + 1]) > 0;
    }
    return t + (r < 2 * f.rem);
}

const dpc_algo_t dpc_algo_allreduce_rabenseifner = {
    .name = "rabenseifner", .coll = DPC_ALLREDUCE, .flags = DPC_ALGO_RANK_ORDER,
    .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
