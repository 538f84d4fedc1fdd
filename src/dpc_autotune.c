/* DPCOLL_AUTOTUNE's candidates and decision (dpc_autotune.h). */
#include "config.h"
#include "dpc_autotune.h"
#include <math.h>
#include <stdlib.h>

int dpc_autotune_candidates(const dpc_coll_args_t *a, const dpc_cost_model_t *m,
                            const dpc_algo_t *cand[DPC_AUTOTUNE_CANDIDATES],
                            double pred[DPC_AUTOTUNE_CANDIDATES])
{
    const dpc_algo_t *all[64];
    double t[64];
    int n = 0;
    for (const dpc_algo_t *const *al = dpc_algos(); *al && n < 64; al++) {
        if (!dpc_algo_applies(*al, a))
            continue;
        if ((*al)->flags & DPC_ALGO_FIRST_CHOICE) {
            cand[0] = *al;
            if (pred)
                pred[0] = dpc_cost_predict(*al, a, m);
            return 1;
        }
        /* insertion by price; an equal price goes after (registry order) */
        double c = dpc_cost_predict(*al, a, m);
        int i = n++;
        for (; i > 0 && c < t[i - 1]; i--) {
            all[i] = all[i - 1];
            t[i] = t[i - 1];
        }
        all[i] = *al;
        t[i] = c;
    }
    /* the model's own pick first, as it breaks near-ties (dpc_cost_select:
     * prices equal to rounding go to the one registered first) */
    const dpc_algo_t *pick = dpc_cost_select_model(a, m);
    for (int i = 1; i < n; i++)
        if (all[i] == pick) {
            double tp = t[i];
            for (; i > 0; i--) {
                all[i] = all[i - 1];
                t[i] = t[i - 1];
            }
            all[0] = pick;
            t[0] = tp;
            break;
        }
    int k = 0;
    for (; k < n && k < DPC_AUTOTUNE_CANDIDATES && t[k] <= DPC_AUTOTUNE_SPREAD * t[0]; k++) {
        cand[k] = all[k];
        if (pred)
            pred[k] = t[k];
    }
    return k;
}

static int cmp_double(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

unsigned long long dpc_autotune_again_after(double call_every, double period,
                                            unsigned trial_calls)
{
    if (!(period > 0) || !(call_every > 0) || !isfinite(call_every))
        return 0;
    double calls = period / call_every, least = (double)DPC_AUTOTUNE_AGAIN_TRIALS * trial_calls;
    if (calls < least)
        calls = least;
    if (calls > 1e18)
        return (unsigned long long)1e18;
    unsigned long long n = (unsigned long long)calls;
    return (double)n < calls ? n + 1 : n;   /* (rounded up) */
}

double dpc_autotune_median(double *v, int n)
{
    if (n <= 0)
        return INFINITY;
    qsort(v, (size_t)n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int dpc_autotune_decide(const double *times, int nranks, int ncand, double margin,
                        double *slowest)
{
    int best = 0;
    double best_t = INFINITY, model_t = INFINITY;
    for (int k = 0; k < ncand; k++) {
        double s = 0;
        for (int r = 0; r < nranks; r++) {
            double x = times[r * ncand + k];
            if (!(x <= s))   /* (NaN, a rank that has no time: as slow as can be) */
                s = isnan(x) ? INFINITY : x;
        }
        if (slowest)
            slowest[k] = s;
        if (k == 0)
            model_t = s;
        if (k == 0 || s < best_t) {
            best = k;
            best_t = s;
        }
    }
    return best != 0 && best_t < (1 - margin) * model_t ? best : 0;
}

int dpc_autotune_turn(unsigned call, unsigned n, int ncand, int *counted, unsigned *slot)
{
    *counted = 0;
    *slot = 0;
    if (n == 0 || ncand <= 0 || call >= DPC_AUTOTUNE_TRIAL_CALLS(n, ncand))
        return -1;
    if (call < DPC_AUTOTUNE_WARMUP)
        return 0;
    unsigned i = call - DPC_AUTOTUNE_WARMUP, in_block = i % (n + 1);
    *counted = in_block != 0;
    *slot = in_block ? in_block - 1 : 0;
    return (int)(i / (n + 1));
}
