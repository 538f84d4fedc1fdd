/* The alpha-beta-gamma cost model: predictions per algorithm (each algorithm
 * file states its formula), and the crossover size between two algorithms. */
#ifndef DPC_COST_H
#define DPC_COST_H

#include "dpc_coll.h"

/* Defaults until dpcoll_tune measures the machine: 10 us per message,
 * 10 GB/s, 5 GB/s of reduction. */
dpc_cost_params_t dpc_cost_defaults(void);
/* A message beyond the mailboxes, when nothing says otherwise (a tune file
 * without alpha_rndv): this many alphas (a request to send, an answer and
 * the kernel copy between). */
#define DPC_COST_RNDV_ALPHAS 5.0

/* A machine model: one set of constants for calls below large_bytes, one
 * from there up, and one from huge_bytes up (small messages and large ones
 * take different protocols in UCX, eager copies against rendezvous; and
 * calls whose data no longer fit in the caches run at memory's speed, not
 * cache's: no single alpha, beta and gamma fit all three). A threshold of 0
 * turns its regime off. */
typedef struct dpc_cost_model {
    dpc_cost_params_t small, large, huge;
    size_t large_bytes, huge_bytes;
} dpc_cost_model_t;

dpc_cost_model_t dpc_cost_model_defaults(void);
/* Defaults for a job on one node (shared memory): dpcoll_tune's fit on a
 * 2-core x86 VM (docs/bench/np2.tune); used when every process is on one
 * node and no tune file is given. */
dpc_cost_model_t dpc_cost_model_one_node(void);
/* The bytes a call moves per rank's buffer (the whole vector), which picks
 * the regime. */
size_t dpc_coll_bytes(const dpc_coll_args_t *a);
const dpc_cost_params_t *dpc_cost_regime(const dpc_cost_model_t *m, const dpc_coll_args_t *a);
/* Predicted time of one algorithm under the model. */
double dpc_cost_predict(const dpc_algo_t *al, const dpc_coll_args_t *a, const dpc_cost_model_t *m);
const dpc_algo_t *dpc_cost_select_model(const dpc_coll_args_t *a, const dpc_cost_model_t *m);

/* Cheapest applicable algorithm for these arguments by the model (ties, to
 * within rounding, go to the one registered first): every rank computes the
 * same answer from the same arguments. */
const dpc_algo_t *dpc_cost_select(const dpc_coll_args_t *a, const dpc_cost_params_t *c);

/* Smallest message size in bytes (within [lo, hi], found by bisection on the
 * element count of dtype) at which algorithm y becomes cheaper than x for a
 * collective template `a` (count is varied). Returns 0 if y is never
 * cheaper in the range, hi if it always is. */
double dpc_cost_crossover(const dpc_algo_t *x, const dpc_algo_t *y, const dpc_coll_args_t *a,
                          const dpc_cost_params_t *c, double lo, double hi);

#endif
