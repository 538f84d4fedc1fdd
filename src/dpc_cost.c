#include "config.h"
#include "dpc_cost.h"
#include <stddef.h>
#include <string.h>

const dpc_cost_field_t dpc_cost_fields[DPC_COST_NFIELDS] = {
    {"alpha", offsetof(dpc_cost_params_t, alpha), -1, false, "seconds per message"},
    {"beta", offsetof(dpc_cost_params_t, beta), -1, true, "seconds per byte sent"},
    {"gamma", offsetof(dpc_cost_params_t, gamma), -1, true, "seconds per byte reduced"},
    {"alpha_rndv", offsetof(dpc_cost_params_t, alpha_rndv), DPC_COST_RNDV_ALPHAS, false,
     "seconds per message beyond the mailboxes (rendezvous)"},
    {"alpha_get", offsetof(dpc_cost_params_t, alpha_get), DPC_COST_GET_ALPHAS, false,
     "seconds per one-sided read or write of a peer's memory"},
    {"alpha_call", offsetof(dpc_cost_params_t, alpha_call), 0, false,
     "seconds per call, whatever the algorithm"},
    /* (last: the columns of older measurement files keep their places) */
    {"beta_concurrent", offsetof(dpc_cost_params_t, beta_concurrent), 0, true,
     "seconds per byte of the smaller of two copies out of the same lines at once"},
    {"beta_reread", offsetof(dpc_cost_params_t, beta_reread), 0, true,
     "seconds per byte a reduction reads back of a whole message received"},
};

dpc_cost_params_t dpc_cost_defaults(void)
{
    return (dpc_cost_params_t){.alpha = 10e-6, .beta = 1.0 / 10e9, .gamma = 1.0 / 5e9,
                               .alpha_rndv = DPC_COST_RNDV_ALPHAS * 10e-6,
                               .alpha_get = DPC_COST_GET_ALPHAS * 10e-6};
}

const char *const dpc_cost_set_suffix[DPC_COST_SETS] = {"", "_large", "_huge", "_memory"};
const char *const dpc_cost_set_name[DPC_COST_SETS] = {"small", "large", "huge", "memory"};

size_t dpc_push_limit(const size_t *sizes, const double *ratio, int n, double loss,
                      size_t push_min)
{
    int from = n;   /* writing slower at every size from sizes[from] up */
    while (from > 0 && ratio[from - 1] > loss)
        from--;
    if (from == n)
        return (size_t)-1;
    return from == 0 ? push_min - 1 : sizes[from - 1];
}

dpc_cost_model_t dpc_cost_model_defaults(void)
{
    dpc_cost_model_t m = {.from = {0}};
    for (int i = 0; i < DPC_COST_SETS; i++)
        m.set[i] = dpc_cost_defaults();
    return m;
}

int dpc_cost_nsets(const dpc_cost_model_t *m)
{
    int n = 1;
    for (int i = 1; i < DPC_COST_SETS; i++)
        n += m->from[i] != 0;
    return n;
}

void dpc_cost_model_print(FILE *f, const dpc_cost_model_t *m, const char *indent)
{
    int n = dpc_cost_nsets(m);
    for (int i = 0; i < n; i++) {
        dpc_cost_params_t c = m->set[i];
        fprintf(f, "%s%s calls, buffers from %zu bytes:", indent, n == 1 ? "all" : dpc_cost_set_name[i],
                m->from[i]);
        for (int k = 0; k < DPC_COST_NFIELDS; k++) {
            double v = *dpc_cost_field(&c, k);
            fprintf(f, "%s %s = %.3g s", k ? "," : "", dpc_cost_fields[k].key, v);
            if (dpc_cost_fields[k].per_byte)
                fprintf(f, "/B");
            if (dpc_cost_fields[k].per_byte && v > 0)   /* (0: free, no rate) */
                fprintf(f, " (%.3g GB/s)", 1e-9 / v);
        }
        fprintf(f, "\n");
    }
    for (int i = 0; i < m->nrules; i++)
        fprintf(f, "%smeasured choice: %s, %d ranks, %zu-%zu bytes, %s calls: %s\n", indent,
                dpc_coll_name((dpc_coll_t)m->rule[i].coll), m->rule[i].nranks, m->rule[i].lo,
                m->rule[i].hi, dpc_calls_name(m->rule[i].calls), m->rule[i].al->name);
}

dpc_cost_model_t dpc_cost_model_one_node(void)
{
    dpc_cost_model_t m = {
        /* (docs/bench/np2.tune to 4 digits, np2_tune_fit.txt: dpcoll_tune
         * -r on four dpcoll_bench -a all -t runs, 2 ranks, on a 2-core VM
         * (AMD EPYC family 26), session 32: two of 8 B-64 MiB and two of
         * 512 KiB-64 MiB, every algorithm of the five collectives at every
         * power of two, with each rank writing its input before a call and
         * reading its output after, as programs do. Several runs because
         * this machine's speed moves by up to 2x between runs minutes
         * apart, and a fit of one run did not carry over an hour (session
         * 31: 392-402 of 432 of its own measurements within 30%, 160-256
         * of a later run's rows).
         *
         * Checked on eight runs of session 31 that it was not fitted to
         * (docs/bench/fit/check, four with -t, from 8 B to 16 or 64 MiB):
         * within 30% of 1112 and 1256 of 1620 algorithm rows (with -t,
         * without), where session 31's constants (session 20's fit of one
         * dpcoll_tune run, and its rendezvous price) managed 559 and 594;
         * the choices' time over the fastest algorithm's, geometric mean,
         * 1.042 -> 1.027 and 1.034 -> 1.026; with -t, allreduce 1.099 ->
         * 1.041 and reduce-scatter 1.047 -> 1.021.
         *
         * Where the sets fall: the first spans calls up to 1 MiB of
         * buffers; beyond it the "alphas" of the chunked algorithms
         * (alpha_rndv per ring segment, alpha_get per direct chunk) come
         * out at 15-30 us, not the 3.5-4.5 us one such step costs alone,
         * because the number of chunks grows with the bytes: they are
         * per-byte costs of those algorithms beyond the caches. beta_reread
         * (Rabenseifner's and recursive halving's reductions reading whole
         * received halves back from memory) is 0 in the first set, where
         * they fit the caches, and 15 then 9 GB/s beyond; it is what makes the direct allreduce the
         * faster from 8 MiB at 2 ranks, as 17 of 20 runs measured it.)
         * The first set's alpha_rndv, 4.5 us, agrees with libdpcoll's own
         * rendezvous on one node: a one-sided read (alpha_get) and a
         * message (alpha). */
        .set = {{.alpha = 8.537e-7, .beta = 9.751e-11, .gamma = 1.256e-10,
                 .alpha_rndv = 4.488e-6, .alpha_get = 3.577e-6, .alpha_call = 0,
                 .beta_concurrent = 2.52e-11, .beta_reread = 0},
                {.alpha = 0, .beta = 8.013e-11, .gamma = 7.839e-11, .alpha_rndv = 2.825e-5,
                 .alpha_get = 3.101e-5, .alpha_call = 0, .beta_concurrent = 3.187e-11,
                 .beta_reread = 6.544e-11},
                {.alpha = 0, .beta = 1.592e-10, .gamma = 2.546e-10, .alpha_rndv = 1.488e-5,
                 .alpha_get = 0, .alpha_call = 0, .beta_concurrent = 4.912e-11,
                 .beta_reread = 6.48e-11},
                {.alpha = 0, .beta = 1.675e-10, .gamma = 2.656e-10, .alpha_rndv = 1.809e-5,
                 .alpha_get = 0, .alpha_call = 6.86e-4, .beta_concurrent = 3.56e-11,
                 .beta_reread = 1.12e-10}},
        .from = {0, 1u << 20, 8u << 20, 32u << 20}};
    /* A measured choice: at 2 ranks a blocking bcast of 16-128 KiB ran
     * fastest as scatter-allgather in each of ten dpcoll_bench -a all -t
     * runs of session 41 (two halves through the mailboxes, the root
     * copying the second in while the other rank copies the first out),
     * 1.0-1.36x faster than the binomial tree at 16-64 KiB and 1.3-1.7x than
     * the direct read at 128 KiB, which these constants choose there: they
     * price a mailbox byte as one copy, and the pipelining of the two
     * copies is what wins (docs/bench/s41/bcast_choice.txt). Only blocking
     * calls were measured. */
    m.rule[m.nrules++] = (dpc_cost_rule_t){.coll = DPC_BCAST, .nranks = 2, .lo = 16384,
                                           .hi = 131072,
                                           .al = dpc_algo_find(DPC_BCAST, "scatter_allgather"),
                                           .calls = DPC_CALLS_BLOCKING};
    return m;
}

size_t dpc_coll_bytes(const dpc_coll_args_t *a)
{
    size_t es = dpc_dtype_size(a->dtype), n = 0;
    switch (a->coll) {
    case DPC_ALLREDUCE: case DPC_BCAST:
        return a->count * es;
    default:
        for (int i = 0; i < a->size; i++)
            n += a->counts ? a->counts[i] : a->count;
        return n * es;
    }
}

size_t dpc_coll_footprint(const dpc_coll_args_t *a)
{
    size_t n = dpc_coll_bytes(a), p = a->size > 0 ? (size_t)a->size : 1;
    switch (a->coll) {
    case DPC_REDUCE_SCATTER_BLOCK: case DPC_REDUCE_SCATTER:
    case DPC_ALLGATHER: case DPC_ALLGATHERV:
        return n + n / p;
    default: return 2 * n;   /* allreduce, all-to-all, bcast */
    }
}

const dpc_cost_params_t *dpc_cost_regime(const dpc_cost_model_t *m, const dpc_coll_args_t *a)
{
    size_t n = dpc_coll_footprint(a);
    int i = DPC_COST_SETS - 1;
    while (i > 0 && !(m->from[i] && n >= m->from[i]))
        i--;
    return &m->set[i];
}

double dpc_cost_of(const dpc_algo_t *al, const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    return c->alpha_call + al->cost(a, c);
}

double dpc_cost_predict(const dpc_algo_t *al, const dpc_coll_args_t *a, const dpc_cost_model_t *m)
{
    return dpc_cost_of(al, a, dpc_cost_regime(m, a));
}

const dpc_algo_t *dpc_cost_rule_for(const dpc_coll_args_t *a, const dpc_cost_model_t *m)
{
    if (m->nrules == 0)
        return NULL;
    size_t n = dpc_coll_bytes(a);
    for (int i = 0; i < m->nrules; i++) {
        const dpc_cost_rule_t *r = &m->rule[i];
        unsigned kind = a->nonblocking ? DPC_CALLS_NONBLOCKING : DPC_CALLS_BLOCKING;
        if (r->coll == (int)a->coll && r->nranks == a->size && n >= r->lo && n <= r->hi &&
            (r->calls & kind) && dpc_algo_applies(r->al, a))
            return r->al;
    }
    return NULL;
}

const char *dpc_calls_name(unsigned calls)
{
    return calls == DPC_CALLS_BLOCKING ? "blocking"
           : calls == DPC_CALLS_NONBLOCKING ? "nonblocking" : "any";
}

unsigned dpc_calls_from_name(const char *name)
{
    for (unsigned c = DPC_CALLS_BLOCKING; c <= DPC_CALLS_ANY; c++)
        if (!strcmp(name, dpc_calls_name(c)))
            return c;
    return 0;
}

dpc_status_t dpc_cost_rule_add(dpc_cost_model_t *m, int coll, int nranks, size_t lo, size_t hi,
                               const dpc_algo_t *al, unsigned calls, char *err, size_t errlen)
{
    if (m->nrules >= DPC_COST_RULES)
        snprintf(err, errlen, "more than %d choices", DPC_COST_RULES);
    else if (!al || (int)al->coll != coll)
        snprintf(err, errlen, "the algorithm is not one of the collective's");
    else if (nranks < 1 || lo > hi)
        snprintf(err, errlen, "ranks must be 1 or more and the bytes a range, lowest first");
    else if (calls == 0 || calls > DPC_CALLS_ANY)
        snprintf(err, errlen, "the calls must be blocking, nonblocking or any");
    else {
        m->rule[m->nrules++] = (dpc_cost_rule_t){.coll = coll, .nranks = nranks, .lo = lo,
                                                 .hi = hi, .al = al, .calls = calls};
        return DPC_OK;
    }
    return DPC_ERR_ARG;
}

/* (the constants' price first: an algorithm taken wherever it applies
 * must stay so, whatever a tune file says) */
const dpc_algo_t *dpc_cost_select_model(const dpc_coll_args_t *a, const dpc_cost_model_t *m)
{
    const dpc_algo_t *by_price = dpc_cost_select(a, dpc_cost_regime(m, a));
    if (by_price && (by_price->flags & DPC_ALGO_FIRST_CHOICE))
        return by_price;
    const dpc_algo_t *measured = dpc_cost_rule_for(a, m);
    return measured ? measured : by_price;
}

const dpc_algo_t *dpc_cost_select(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    const dpc_algo_t *best = NULL;
    double best_t = 0;
    for (const dpc_algo_t *const *al = dpc_algos(); *al; al++) {
        if (!dpc_algo_applies(*al, a))
            continue;
        if ((*al)->flags & DPC_ALGO_FIRST_CHOICE)
            return *al;
        double t = (*al)->cost(a, c);
        /* a tie goes to the one registered first, also when rounding makes
         * two equal formulas differ in the last bits (ring and recursive
         * doubling at 2 ranks: the same messages, summed in another order) */
        if (!best || t < best_t * (1 - 1e-9)) {
            best = *al;
            best_t = t;
        }
    }
    return best;
}

static double diff(const dpc_algo_t *x, const dpc_algo_t *y, dpc_coll_args_t *a,
                   const dpc_cost_params_t *c, double bytes)
{
    a->count = (size_t)(bytes / (double)dpc_dtype_size(a->dtype));
    return y->cost(a, c) - x->cost(a, c);   /* < 0: y cheaper */
}

double dpc_cost_crossover(const dpc_algo_t *x, const dpc_algo_t *y, const dpc_coll_args_t *a0,
                          const dpc_cost_params_t *c, double lo, double hi)
{
    dpc_coll_args_t a = *a0;
    double dlo = diff(x, y, &a, c, lo), dhi = diff(x, y, &a, c, hi);
    if (dlo < 0)
        return lo;              /* y already cheaper at lo */
    if (dhi >= 0)
        return 0;
    for (int i = 0; i < 200 && hi - lo > 1; i++) {
        double mid = (lo + hi) / 2;
        if (diff(x, y, &a, c, mid) < 0)
            hi = mid;
        else
            lo = mid;
    }
    return hi;
}
