#include "config.h"
#include "dpc_cost.h"

dpc_cost_params_t dpc_cost_defaults(void)
{
    return (dpc_cost_params_t){.alpha = 10e-6, .beta = 1.0 / 10e9, .gamma = 1.0 / 5e9};
}

const dpc_algo_t *dpc_cost_select(const dpc_coll_args_t *a, const dpc_cost_params_t *c)
{
    const dpc_algo_t *best = NULL;
    double best_t = 0;
    for (const dpc_algo_t *const *al = dpc_algos(); *al; al++) {
        if (!dpc_algo_applies(*al, a))
            continue;
        double t = (*al)->cost(a, c);
        if (!best || t < best_t) {
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
