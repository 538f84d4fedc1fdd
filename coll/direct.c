/* One-sided building blocks (see direct.h). */
#include "config.h"
#include "direct.h"
#include <string.h>

void direct_free(direct_t *d)
{
    free(d->have);
    free(d->with);
    d->have = NULL;
    d->with = NULL;
}

dpc_status_t direct_exchange_some(direct_t *d, dpc_sched_t *s, int p, int r, void *const *bufs,
                                  const size_t *lens, int nreg, const direct_more_t *more)
{
    static const direct_more_t plain = {.ready = DPC_STEP_NONE};
    if (!more)
        more = &plain;
    const bool *with = more->with;
    size_t extra_bytes = more->extra_bytes;
    memset(d, 0, sizeof(*d));
    d->s = s;
    d->p = p;
    d->r = r;
    d->nreg = nreg;
    d->stride = (size_t)nreg * DPC_REGION_DESC_MAX + extra_bytes;
    d->mine = dpc_sched_scratch(s, d->stride);
    d->theirs = dpc_sched_scratch(s, (size_t)p * d->stride);
    d->have = malloc(sizeof(dpc_step_id_t) * (size_t)p);
    if (with && (d->with = malloc(sizeof(bool) * (size_t)p)))
        memcpy(d->with, with, sizeof(bool) * (size_t)p);
    if (!d->mine || !d->theirs || !d->have || (with && !d->with)) {
        direct_free(d);
        return DPC_ERR_NOMEM;
    }
    if (extra_bytes)
        memcpy(d->mine + (size_t)nreg * DPC_REGION_DESC_MAX, more->extra, extra_bytes);
    dpc_step_id_t ex[DIRECT_MAX_REGIONS + 1];
    for (int k = 0; k < nreg; k++)
        ex[k] = dpc_sched_expose(s, bufs[k], lens[k], d->mine + (size_t)k * DPC_REGION_DESC_MAX,
                                 DPC_NO_DEPS);
    ex[nreg] = more->ready;
    dpc_step_id_t exposed = dpc_sched_nop(s, ex, nreg + 1);
    for (int i = 1; i < p; i++) {
        int q = (r + i) % p;
        d->have[q] = DPC_STEP_NONE;
        if (!direct_with(d, q))
            continue;
        dpc_sched_send(s, q, DIRECT_TAG_DESC, d->mine, d->stride, DPC_AFTER(exposed));
        d->have[q] = dpc_sched_recv(s, q, DIRECT_TAG_DESC, d->theirs + (size_t)q * d->stride,
                                    d->stride, DPC_NO_DEPS);
    }
    d->have[r] = DPC_STEP_NONE;
    return DPC_OK;
}

dpc_status_t direct_exchange(direct_t *d, dpc_sched_t *s, int p, int r, void *const *bufs,
                             const size_t *lens, int nreg)
{
    return direct_exchange_some(d, s, p, r, bufs, lens, nreg, NULL);
}

/* One chunk of an op that does not commute (DPC_OP_USER_ORDERED): the
 * operands combined in rank order, x0 op x1 op ... op x(p-1), as MPI
 * defines the result. Peer q's chunk is read into its slot of the set
 * (stride bytes apart); each step writes the running result over the
 * slot of its right operand, the place the program's function reduces
 * into (inout = in op inout, no copy), and the step with this rank's own
 * chunk writes dst, which in place holds that chunk: so dst is written no
 * earlier than own is read, and the chunk's last step writes dst. Returns
 * that last step. */
static dpc_step_id_t chain_in_rank_order(direct_t *d, int reg, size_t off, const char *own,
                                         char *dst, char *set, size_t stride, size_t n,
                                         dpc_dtype_t dt, dpc_step_id_t freed)
{
    dpc_sched_t *s = d->s;
    int p = d->p, r = d->r;
    const char *acc = NULL;
    dpc_step_id_t red = DPC_STEP_NONE;
    for (int q = 0; q < p; q++) {
        const char *x = own;
        char *into = dst;
        dpc_step_id_t g = DPC_STEP_NONE;
        if (q != r) {
            char *slot = set + (size_t)((q - r + p) % p - 1) * stride;
            g = dpc_sched_get(s, q, direct_desc(d, q, reg), off, slot, n * dpc_dtype_size(dt),
                              DPC_AFTER(d->have[q], freed));
            x = slot;
            into = q == p - 1 ? dst : slot;
        }
        if (!acc) {         /* x0: nothing to combine yet */
            acc = x;
            red = g;
            continue;
        }
        red = dpc_sched_reduce(s, into, acc, x, n, dt, DPC_OP_USER_ORDERED, DPC_AFTER(g, red));
        acc = into;
    }
    return red;
}

dpc_step_id_t direct_reduce_block(direct_t *d, int reg, size_t off, const char *own, char *dst,
                                  size_t count, dpc_dtype_t dt, dpc_op_t op, size_t chunk,
                                  int push_reg, size_t push_off)
{
    dpc_sched_t *s = d->s;
    int p = d->p, r = d->r;
    size_t es = dpc_dtype_size(dt);
    size_t ce = chunk / es ? chunk / es : 1;          /* elements per chunk */
    if (ce > count)
        ce = count;
    if (count == 0 || p == 1) {
        if (p == 1 && count && own != dst)
            return dpc_sched_copy(s, dst, own, count * es, DPC_NO_DEPS);
        return DPC_STEP_NONE;
    }
    size_t nchunks = (count + ce - 1) / ce;
    /* two sets of p-1 slots: chunk c reads into set c % 2 while the
     * reduction of chunk c-1 reads the other */
    char *slots = dpc_sched_scratch(s, 2 * (size_t)(p - 1) * ce * es);
    dpc_step_id_t *last = malloc(sizeof(dpc_step_id_t) * nchunks);
    size_t nputs = 0, cap = nchunks * (push_reg >= 0 ? (size_t)p : 1);
    dpc_step_id_t *puts = malloc(sizeof(dpc_step_id_t) * cap);   /* the join's list */
    if (!slots || !last || !puts) {
        free(puts);
        free(last);
        dpc_sched_set_error(s, DPC_ERR_NOMEM);
        return DPC_STEP_NONE;
    }
    for (size_t c = 0; c < nchunks; c++) {
        size_t e0 = c * ce, n = count - e0 < ce ? count - e0 : ce;
        char *set = slots + (c & 1) * (size_t)(p - 1) * ce * es;
        dpc_step_id_t freed = c >= 2 ? last[c - 2] : DPC_STEP_NONE;   /* set's readers */
        dpc_step_id_t red = DPC_STEP_NONE;
        if (op == DPC_OP_USER_ORDERED) {
            red = chain_in_rank_order(d, reg, off + e0 * es, own + e0 * es, dst + e0 * es, set,
                                      ce * es, n, dt, freed);
        } else {
            /* own data first, then peers r+1, r+2, ...: a fixed order, and
             * the in-place case (own == dst) reads its own data before
             * writing */
            for (int i = 1; i < p; i++) {
                int q = (r + i) % p;
                char *slot = set + (size_t)(i - 1) * ce * es;
                dpc_step_id_t g = dpc_sched_get(s, q, direct_desc(d, q, reg), off + e0 * es,
                                                slot, n * es, DPC_AFTER(d->have[q], freed));
                red = dpc_sched_reduce(s, dst + e0 * es, i == 1 ? own + e0 * es : dst + e0 * es,
                                       slot, n, dt, op, DPC_AFTER(g, red));
            }
        }
        last[c] = red;
        for (int i = 1; push_reg >= 0 && i < p; i++) {
            int q = (r + i) % p;
            puts[nputs++] = dpc_sched_put(s, q, direct_desc(d, q, push_reg), push_off + e0 * es,
                                          dst + e0 * es, n * es, DPC_AFTER(red));
        }
    }
    for (size_t c = 0; c < nchunks; c++)
        puts[nputs++] = last[c];
    dpc_step_id_t join = dpc_sched_nop(s, puts, (int)nputs);
    free(last);
    free(puts);
    return join;
}

dpc_step_id_t direct_finish(direct_t *d, dpc_step_id_t reads_done)
{
    dpc_sched_t *s = d->s;
    int p = d->p, r = d->r;
    dpc_step_id_t *all = malloc(sizeof(dpc_step_id_t) * (size_t)(2 * p));
    int n = 0;
    if (!all) {
        dpc_sched_set_error(s, DPC_ERR_NOMEM);
        return DPC_STEP_NONE;
    }
    for (int i = 1; i < p; i++) {
        int q = (r + i) % p;
        if (!direct_with(d, q))
            continue;
        all[n++] = dpc_sched_send(s, q, DIRECT_TAG_DONE, NULL, 0, DPC_AFTER(reads_done));
        all[n++] = dpc_sched_recv(s, q, DIRECT_TAG_DONE, NULL, 0, DPC_NO_DEPS);
    }
    dpc_step_id_t join = dpc_sched_nop(s, all, n);
    free(all);
    return join;
}
