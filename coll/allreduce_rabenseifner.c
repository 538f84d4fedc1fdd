/*
 * Allreduce, Rabenseifner: a reduce-scatter by recursive halving (each step
 * swaps half of the current range with the partner and reduces the half it
 * keeps) leaves new rank j with block j of p' blocks; an allgather by
 * recursive doubling then rebuilds the vector in place. Non-power-of-two p is
 * folded first (fold.h).
 *
 * Restrictions: any p, any count; op commutative. Partners reduce
 * (lower-ranked data) op (higher-ranked data): identical bits everywhere.
 *
 * Cost (n bytes, L = log2 p'): 2 L alpha + 2 (p'-1)/p' n beta
 *   + (p'-1)/p' n gamma, plus 2 (alpha + n beta) + n gamma when folded.
 * The ring's bandwidth in 2 L steps instead of 2 (p-1).
 * Bytes sent by a participating new rank j (blocks b(i) of n split in p'):
 *   (n - b(j)) + sum over m = 1, 2, .., p'/2 of the bytes of the m blocks of
 *   j's aligned group [j & ~(m-1), +m); plus n for odd ranks r < 2 rem that
 *   return the result; a rank that sits out sends n.
 */
#include "config.h"
#include "coll_util.h"
#include "fold.h"

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
    if (r < 2 * f.rem) {
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
    int lo = 0, hi = pp;             /* block range this rank is responsible for */
    char *region = tmp + n;
    dpc_step_id_t *halving = malloc(sizeof(dpc_step_id_t) * (size_t)(3 * f.steps + 1));
    int nh = 0;
    if (!halving)
        return DPC_ERR_NOMEM;
    halving[nh++] = last;
    for (int k = 0; k < f.steps; k++) {
        int mask = pp >> (k + 1);
        int partner = j ^ mask;
        int mid = lo + (hi - lo) / 2;
        bool lower = j < partner;
        int klo = lower ? lo : mid, khi = lower ? mid : hi;     /* kept half */
        int slo = lower ? mid : lo, shi = lower ? hi : mid;     /* given half */
        size_t koff = part_off(a->count, pp, klo) * es;
        size_t kcnt = part_off(a->count, pp, khi) - part_off(a->count, pp, klo);
        size_t soff = part_off(a->count, pp, slo) * es;
        size_t sbytes = (part_off(a->count, pp, shi) - part_off(a->count, pp, slo)) * es;
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
        lo = klo;
        hi = khi;
        cur = out;
    }
    /* everything the halving sent from `out` must be gone before the
     * allgather receives into it */
    dpc_step_id_t join = dpc_sched_nop(s, halving, nh);
    free(halving);
    dpc_step_id_t prev = join;
    for (int k = 0; k < f.steps; k++) {
        int m = 1 << k;
        int partner = j ^ m;
        int base = j & ~(m - 1), pbase = partner & ~(m - 1);
        size_t off = part_off(a->count, pp, base) * es;
        size_t len = part_off(a->count, pp, base + m) * es - off;
        size_t poff = part_off(a->count, pp, pbase) * es;
        size_t plen = part_off(a->count, pp, pbase + m) * es - poff;
        int peer = fold_rank(&f, partner);
        uint32_t tag = (uint32_t)(f.steps + k) + 1;
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
    double t = 2 * (pp - 1) / pp * n * c->beta + (pp - 1) / pp * n * c->gamma;
    for (int k = 1; k <= f.steps; k++)      /* halves n/2, n/4...; the same back */
        t += 2 * msg_alpha(c, n / (double)(1u << k));
    if (f.rem)
        t += 2 * (msg_alpha(c, n) + n * c->beta) + n * c->gamma;
    return t;
}

/* bytes of new-rank blocks [lo, hi) */
static uint64_t range_bytes(const dpc_coll_args_t *a, int pp, int lo, int hi)
{
    return (part_off(a->count, pp, hi) - part_off(a->count, pp, lo)) * elsize(a);
}

static uint64_t bytes_sent(const dpc_coll_args_t *a, int r)
{
    fold_t f = fold_make(a->size, r);
    uint64_t n = a->count * elsize(a), t = 0;
    if (f.newrank < 0)
        return n;
    int j = f.newrank;
    t += n - range_bytes(a, f.pp, j, j + 1);
    for (int m = 1; m < f.pp; m *= 2)
        t += range_bytes(a, f.pp, j & ~(m - 1), (j & ~(m - 1)) + m);
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
    int j = f.newrank, lo = 0, hi = f.pp;
    for (int k = 0; k < f.steps; k++) {      /* halving: the given half, if not empty */
        int mid = lo + (hi - lo) / 2;
        bool lower = j < (j ^ (f.pp >> (k + 1)));
        t += range_bytes(a, f.pp, lower ? mid : lo, lower ? hi : mid) > 0;
        if (lower)
            hi = mid;
        else
            lo = mid;
    }
    for (int m = 1; m < f.pp; m *= 2)
        t += range_bytes(a, f.pp, j & ~(m - 1), (j & ~(m - 1)) + m) > 0;
    return t + (r < 2 * f.rem);
}

const dpc_algo_t dpc_algo_allreduce_rabenseifner = {
    .name = "rabenseifner", .coll = DPC_ALLREDUCE, .build = build, .cost = cost,
    .bytes_sent = bytes_sent, .msgs_sent = msgs_sent,
};
