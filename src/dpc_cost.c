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
    {"alpha_net", offsetof(dpc_cost_params_t, alpha_net), -1, false,
     "seconds per message between nodes"},
    {"alpha_rndv_net", offsetof(dpc_cost_params_t, alpha_rndv_net), -1, false,
     "seconds per message between nodes beyond the eager limit (rendezvous)"},
    {"beta_net", offsetof(dpc_cost_params_t, beta_net), -1, true,
     "seconds per byte between nodes"},
};

dpc_cost_params_t dpc_cost_defaults(void)
{
    return (dpc_cost_params_t){.alpha = 10e-6, .beta = 1.0 / 10e9, .gamma = 1.0 / 5e9,
                               .alpha_rndv = DPC_COST_RNDV_ALPHAS * 10e-6,
                               .alpha_get = DPC_COST_GET_ALPHAS * 10e-6,
                               .alpha_net = 10e-6, .alpha_rndv_net = DPC_COST_RNDV_ALPHAS * 10e-6,
                               .beta_net = 1.0 / 10e9};
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
    for (int i = 0; i < m->nrules; i++) {
        char on[32] = "";
        if (m->rule[i].nodes > 1)
            snprintf(on, sizeof(on), " on %d nodes", m->rule[i].nodes);
        fprintf(f, "%smeasured choice: %s, %d ranks%s, %zu-%zu bytes, %s calls: %s\n", indent,
                dpc_coll_name((dpc_coll_t)m->rule[i].coll), m->rule[i].nranks, on, m->rule[i].lo,
                m->rule[i].hi, dpc_calls_name(m->rule[i].calls), m->rule[i].al->name);
    }
}

dpc_cost_model_t dpc_cost_model_one_node(void)
{
    dpc_cost_model_t m = {
        /* (docs/bench/np2.tune to 4 digits, np2_tune_fit.txt: dpcoll_tune
         * -r on four dpcoll_bench -a all -t runs, 2 ranks, on a 2-core VM
         * (AMD EPYC family 26), session 43: two of 8 B-64 MiB and two of
         * 512 KiB-64 MiB, every algorithm of the five collectives at every
         * power of two, with each rank writing its input before a call and
         * reading its output after, as programs do; fresh buffers per size,
         * huge pages for reused ones (src/dpc_hugepage.c), the small calls'
         * paths of sessions 37-41. Several runs because this machine's
         * speed moves between runs minutes apart.
         *
         * Checked on eight runs made after the fit (docs/bench/fit/check,
         * four with -t, four without, 8 B-64 MiB): within 30% of 1228 and
         * 1224 of 1728 algorithm rows, where the runs agree with each
         * other within 30% on 1289 and 1411 (the most a model of this
         * machine can expect) and session 32's constants managed 548 and
         * 468 (this VM's memory had become faster, and huge pages halve a
         * large call's time: they predicted 1.5-2.8x too long from 64 KiB
         * up); the choices' time over the fastest algorithm's, geometric
         * mean, the constants alone as good as session 32's (1.031 against
         * 1.032 with -t, 1.053 against 1.051 without on the first eight),
         * 1.018-1.020 with the measured choices below (which these runs
         * helped choose; session 32's: 1.032-1.051;
         * docs/bench/np2_model_check.txt, s43/model_ab.txt).
         *
         * Where the sets fall (the fit's best split): calls of under 2 KiB
         * of buffers, whose time is the call's and its messages' (alpha,
         * alpha_call); up to 2 MiB, data in a core's cache; up to 16 MiB;
         * beyond, from memory. The sets from 2 MiB price the chunked
         * algorithms' steps (alpha_get per direct chunk: 12 us) as per-byte
         * costs of those algorithms, as the number of chunks grows with
         * the bytes. beta_reread (Rabenseifner's and recursive halving's
         * reductions reading whole received halves back) is 0 while they
         * fit the caches and 23 then 45 GB/s beyond. The first set's
         * alpha_rndv is the next set's: calls of under 2 KiB say nothing of
         * a rendezvous.) */
        .set = {{.alpha = 2.946e-7, .beta = 1.681e-10, .gamma = 1.047e-10,
                 .alpha_rndv = 1.161e-5, .alpha_get = 4.1e-6, .alpha_call = 2.682e-7,
                 .beta_concurrent = 1.146e-9, .beta_reread = 0},
                {.alpha = 5.741e-7, .beta = 3.447e-11, .gamma = 8.042e-11,
                 .alpha_rndv = 1.161e-5, .alpha_get = 4.619e-6, .alpha_call = 2.514e-7,
                 .beta_concurrent = 4.199e-11, .beta_reread = 0},
                {.alpha = 2.72e-6, .beta = 5.146e-11, .gamma = 5.864e-11,
                 .alpha_rndv = 1.053e-5, .alpha_get = 1.244e-5, .alpha_call = 0,
                 .beta_concurrent = 2.791e-11, .beta_reread = 4.377e-11},
                {.alpha = 0, .beta = 7.943e-11, .gamma = 9e-11, .alpha_rndv = 5.789e-6,
                 .alpha_get = 0, .alpha_call = 0, .beta_concurrent = 3.375e-11,
                 .beta_reread = 2.206e-11}},
        .from = {0, 2048, 2u << 20, 16u << 20}};
    /* (no network measured: between nodes the defaults' constants) */
    dpc_cost_params_t d = dpc_cost_defaults();
    for (int i = 0; i < DPC_COST_SETS; i++) {
        m.set[i].alpha_net = d.alpha_net;
        m.set[i].alpha_rndv_net = d.alpha_rndv_net;
        m.set[i].beta_net = d.beta_net;
    }
    /* A measured choice: at 2 ranks a blocking bcast of 16-128 KiB ran
     * fastest as scatter-allgather in each of ten dpcoll_bench -a all -t
     * runs of session 41 (two halves through the mailboxes, the root
     * copying the second in while the other rank copies the first out),
     * 1.0-1.36x faster than the binomial tree at 16-64 KiB and 1.3-1.7x than
     * the direct read at 128 KiB, which these constants choose there: they
     * price a mailbox byte as one copy, and the pipelining of the two
     * copies is what wins (docs/bench/s41/bcast_choice.txt). Only blocking
     * calls were measured. */
    /* Measured choices of session 43, blocking calls at 2 ranks, from
     * twelve dpcoll_bench -a all -t runs (each rank writing its input
     * before a call and reading its output after, as programs do) and
     * four without -t (buffers left alone between calls, as benchmark
     * loops such as IMB's and OSU's leave them): the fit's four and the
     * later ones of docs/bench/fit/check. Each algorithm here is no slower
     * than the constants' pick by the median of either kind of run, and
     * 1.1x or more faster by one (times in us, the pick's first):
     *  - allreduce 16 KiB: recursive doubling (dpcoll_tune's own line from
     *    the fit's runs; -t 2.9 against 2.5, the ring 1.2x slower in all
     *    ten runs);
     *  - allreduce 256 KiB-4 MiB: direct. Against the ring the constants
     *    take up to 1 MiB: -t 44/88/166 against 43/81/163, without -t
     *    46/85/166 against 23/44/105 (the ring's mailbox segments copy
     *    every byte twice; reading the peer's input out of the shared
     *    cache, once). Against Rabenseifner at 2 MiB: -t 383 against 325
     *    (11 of 12 runs), without 315 against 209. dpcoll_tune's line
     *    said 2-4 MiB (1.21-1.31x);
     *  - reduce-scatter 4-8 MiB: recursive halving, -t 291/590 against
     *    260/575, without 292/436 against 193/404 (the ring); in five
     *    alternating runs after, 286/533 against 280/514 and 300/448
     *    against 204/402 (docs/bench/s43/mid_sizes.txt);
     *  - all-to-all 2-4 MiB: pairwise, 1.26x and 1.16x faster than direct
     *    (which writes into its peers up to 4 MiB) with -t, in 11 of 12
     *    runs each (dpcoll_tune's line said 4 MiB).
     * (The ranges run from midway between powers of two, geometrically,
     * as dpcoll_tune writes them.) */
    static const struct { dpc_coll_t coll; size_t lo, hi; const char *name; } measured[] = {
        {DPC_BCAST, 16384, 131072, "scatter_allgather"},   /* (session 41's, above) */
        {DPC_ALLREDUCE, 11586, 23170, "recursive_doubling"},
        {DPC_ALLREDUCE, 185364, 5931641, "direct"},
        {DPC_REDUCE_SCATTER_BLOCK, 2965821, 11863283, "recursive_halving"},
        {DPC_ALLTOALL, 1482911, 5931641, "pairwise"},
    };
    /* (through the tune file's own check: a misnamed algorithm is left out,
     * never a rule without one) */
    char err[64];
    for (size_t i = 0; i < sizeof(measured) / sizeof(measured[0]); i++)
        dpc_cost_rule_add(&m, (int)measured[i].coll, 2, 1, measured[i].lo, measured[i].hi,
                          dpc_algo_find(measured[i].coll, measured[i].name),
                          DPC_CALLS_BLOCKING, err, sizeof(err));
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

double dpc_cost_formula(const dpc_algo_t *al, const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    if (a->nnodes >= 2 && !(al->flags & DPC_ALGO_NODES)) {
        dpc_cost_params_t x = dpc_cost_across(c);
        return al->cost(a, &x);
    }
    return al->cost(a, c);
}

double dpc_cost_of(const dpc_algo_t *al, const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    return c->alpha_call + dpc_cost_formula(al, a, c);
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
        if (r->coll == (int)a->coll && r->nranks == a->size &&
            r->nodes == (a->nnodes >= 2 ? a->nnodes : 1) && n >= r->lo && n <= r->hi &&
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

dpc_status_t dpc_cost_rule_add(dpc_cost_model_t *m, int coll, int nranks, int nodes, size_t lo,
                               size_t hi, const dpc_algo_t *al, unsigned calls, char *err,
                               size_t errlen)
{
    if (m->nrules >= DPC_COST_RULES)
        snprintf(err, errlen, "more than %d choices", DPC_COST_RULES);
    else if (!al || (int)al->coll != coll)
        snprintf(err, errlen, "the algorithm is not one of the collective's");
    else if (nranks < 1 || lo > hi)
        snprintf(err, errlen, "ranks must be 1 or more and the bytes a range, lowest first");
    else if (nodes < 1 || nodes > nranks)
        snprintf(err, errlen, "the nodes must be 1 or more, at most the ranks");
    else if (calls == 0 || calls > DPC_CALLS_ANY)
        snprintf(err, errlen, "the calls must be blocking, nonblocking or any");
    else {
        m->rule[m->nrules++] = (dpc_cost_rule_t){.coll = coll, .nranks = nranks, .nodes = nodes, .lo = lo,
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
        double t = dpc_cost_formula(*al, a, c);
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
    return dpc_cost_formula(y, a, c) - dpc_cost_formula(x, a, c);   /* < 0: y cheaper */
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
