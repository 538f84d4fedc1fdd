/* The alpha-beta-gamma cost model: predictions per algorithm (each algorithm
 * file states its formula), and the crossover size between two algorithms. */
#ifndef DPC_COST_H
#define DPC_COST_H

#include "dpc_coll.h"

/* Defaults until tuning measures this machine (a later issue): 10 us per
 * message, 10 GB/s, 5 GB/s of reduction. */
dpc_cost_params_t dpc_cost_defaults(void);

/* Cheapest applicable algorithm for these arguments by the model (ties go to
 * the one registered first): every rank computes the same answer from the
 * same arguments. */
const dpc_algo_t *dpc_cost_select(const dpc_coll_args_t *a, const dpc_cost_params_t *c);

/* Smallest message size in bytes (within [lo, hi], found by bisection on the
 * element count of dtype) at which algorithm y becomes cheaper than x for a
 * collective template `a` (count is varied). Returns 0 if y is never
 * cheaper in the range, hi if it always is. */
double dpc_cost_crossover(const dpc_algo_t *x, const dpc_algo_t *y, const dpc_coll_args_t *a,
                          const dpc_cost_params_t *c, double lo, double hi);

#endif
