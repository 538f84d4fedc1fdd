#include "config.h"
#include "dpc_cost.h"

dpc_cost_params_t dpc_cost_defaults(void)
{
    return (dpc_cost_params_t){.alpha = 10e-6, .beta = 1.0 / 10e9, .gamma = 1.0 / 5e9,
                               .alpha_rndv = DPC_COST_RNDV_ALPHAS * 10e-6};
}

dpc_cost_model_t dpc_cost_model_defaults(void)
{
    dpc_cost_model_t m = {.small = dpc_cost_defaults(), .large = dpc_cost_defaults(),
                          .huge = dpc_cost_defaults()};
    return m;
}

dpc_cost_model_t dpc_cost_model_one_node(void)
{
    dpc_cost_model_t m = {
        /* (docs/bench/np2.tune: refitted with a rendezvous' own alpha and
         * the own block's copy in the allgather and alltoall formulas, 104
         * of 112 measurements within 30%, np2_tune_fit.txt) */
        .small = {.alpha = 3.76e-7, .beta = 1.50e-10, .gamma = 1.22e-10, .alpha_rndv = 2.85e-6},
        .large = {.alpha = 3.79e-7, .beta = 2.77e-11, .gamma = 7.69e-11, .alpha_rndv = 2.85e-6},
        .huge = {.alpha = 0, .beta = 6.64e-11, .gamma = 1.31e-10, .alpha_rndv = 2.24e-6},
        .large_bytes = 16384, .huge_bytes = 1u << 20};
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

const dpc_cost_params_t *dpc_cost_regime(const dpc_cost_model_t *m, const dpc_coll_args_t *a)
{
    size_t n = dpc_coll_bytes(a);
    if (m->huge_bytes && n >= m->huge_bytes)
        return &m->huge;
    return m->large_bytes && n >= m->large_bytes ? &m->large : &m->small;
}

double dpc_cost_predict(const dpc_algo_t *al, const dpc_coll_args_t *a, const dpc_cost_model_t *m)
{
    return al->cost(a, dpc_cost_regime(m, a));
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
