#include "config.h"
#include "dpc_cost.h"
#include <stddef.h>

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
}

dpc_cost_model_t dpc_cost_model_one_node(void)
{
    dpc_cost_model_t m = {
        /* (docs/bench/np2.tune to 4 digits, np2_tune_fit.txt: dpcoll_tune
         * with buffers written and read between calls, on a 2-core VM (AMD
         * EPYC family 26), refitted in session 20 after sessions 17-18 cut
         * the cost of a small call by a third: the session-16 constants
         * priced an 8 B allreduce at 0.68 us where it took 0.50. Against
         * two tune runs' measurements, 370-372 of 408 within 30% (the
         * session-16 constants: 314-326). The machine's speed changes
         * between runs minutes apart: in some, UCX's messages between the
         * two cores go about twice as fast, and the tree and ring
         * algorithms overtake the one-sided ones (2 ranks: reduce-scatter
         * 1 MiB, recursive halving 71 us against direct 97; in a slower
         * run 137 against 64); no one set of constants fits both
         * (docs/bench/np2_fast.tune is a fit in the fast spell). The
         * session-9 machine's constants, fitted with the buffers left
         * alone, chose the binomial bcast at 128-512 KiB, which programs
         * saw at 0.65-0.85x MPICH here; these choose the direct one.)
         *
         * alpha_rndv below 16 MiB is no longer fitted: it was UCX's "put"
         * rendezvous (three trips between the processes, 6.4-6.9 us), and
         * since session 30 such a message on one node goes by libdpcoll's
         * own, a record, one process_vm_readv and a record back: a
         * one-sided read (alpha_get) and a message (alpha). Session 31,
         * 2 ranks, six dpcoll_bench -a all runs (8 B-16 MiB, three with
         * -t): the choices' time over the fastest algorithm's, geometric
         * mean, 1.058 -> 1.032 untouched and 1.072 -> 1.045 with -t (with
         * the direct reduce-scatter's reads priced); dpcoll_tune fits of
         * the same day put it at 3.0-4.0 us, against 2.4-4.6 for
         * alpha_get, but disagree run to run on the rest.
         *
         * The memory set (buffers spanning 16 MiB and more) is session
         * 32's: at 2 ranks the direct allreduce beat Rabenseifner's from
         * 8 MiB in 17 of 20 dpcoll_bench runs, which the old set could not
         * see: every algorithm paid the same per byte. Rabenseifner's and
         * recursive halving's reductions read back whole received halves
         * from memory (beta_reread, fitted at 7 GB/s, a memory read); the
         * direct and ring ones reduce cache-sized chunks. Fitted by
         * dpcoll_tune -r on four dpcoll_bench -a all runs of 512 KiB-64 MiB
         * (two with -t), their rows from 16 MiB of buffers
         * (docs/bench/np2_memory_fit.txt). Fitted on two of the runs, the
         * choices' time over the fastest algorithm's in the other two went
         * from 1.077 to 1.057 and 1.091 to 1.085 (geometric means); on
         * nine other runs of 8 B-64 MiB, allreduce 1.079 -> 1.065. The
         * smaller sets reduce messages that fit the caches: 0 there. */
        .set = {{.alpha = 3.472e-7, .beta = 1.307e-10, .gamma = 2.593e-10,
                 .alpha_rndv = 3.418e-6 + 3.472e-7, .alpha_get = 3.418e-6,
                 .alpha_call = 2.415e-7, .beta_concurrent = 1.744e-10},
                {.alpha = 7.509e-7, .beta = 2.565e-11, .gamma = 4.672e-11,
                 .alpha_rndv = 3.18e-6 + 7.509e-7, .alpha_get = 3.18e-6,
                 .alpha_call = 3.081e-7, .beta_concurrent = 4.763e-12},
                {.alpha = 1.726e-7, .beta = 4.928e-11, .gamma = 1.482e-10,
                 .alpha_rndv = 3.693e-6 + 1.726e-7, .alpha_get = 3.693e-6, .alpha_call = 0,
                 .beta_concurrent = 4.208e-11},
                /* (memory: session 32, see below) */
                {.alpha = 0, .beta = 1.799e-10, .gamma = 2.229e-10, .alpha_rndv = 2.2e-5,
                 .alpha_get = 2.786e-5, .alpha_call = 2.664e-5, .beta_concurrent = 5.665e-11,
                 .beta_reread = 1.416e-10}},
        .from = {0, 4096, 64u << 10, 16u << 20}};
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

const dpc_algo_t *dpc_cost_select_model(const dpc_coll_args_t *a, const dpc_cost_model_t *m)
{
    return dpc_cost_select(a, dpc_cost_regime(m, a));
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
