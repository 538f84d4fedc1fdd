/* The alpha-beta-gamma cost model: predictions per algorithm (each algorithm
 * file states its formula), and the crossover size between two algorithms. */
#ifndef DPC_COST_H
#define DPC_COST_H

#include <stdio.h>
#include "dpc_coll.h"
#include "dpc_status.h"

/* Defaults until dpcoll_tune measures the machine: 10 us per message,
 * 10 GB/s, 5 GB/s of reduction; between nodes the same (a network of
 * 10 us and 10 GB/s: 100 Gb/s). */
dpc_cost_params_t dpc_cost_defaults(void);
/* The constants of messages between nodes put in place of those within
 * (alpha, alpha_rndv, beta): what a flat algorithm's formula is priced
 * with on a group spread over nodes. */
static inline dpc_cost_params_t dpc_cost_across(const dpc_cost_params_t *c)
{
    dpc_cost_params_t x = *c;
    x.alpha = c->alpha_net;
    x.alpha_rndv = c->alpha_rndv_net;
    x.beta = c->beta_net;
    return x;
}
/* An algorithm's own formula under c, on a group spread over nodes with
 * the constants between nodes unless it knows the nodes (dpc_cost_across):
 * what every prediction and choice prices. */
double dpc_cost_formula(const dpc_algo_t *al, const dpc_coll_args_t *a, const dpc_cost_params_t *c);
/* A message beyond the mailboxes, when nothing says otherwise (a tune file
 * without alpha_rndv): this many alphas (a request to send, an answer and
 * the kernel copy between). */
#define DPC_COST_RNDV_ALPHAS 5.0
/* A one-sided read or write, when nothing says otherwise: two alphas. */
#define DPC_COST_GET_ALPHAS 2.0

/* The constants of a set by name (tune files, agreeing them across ranks):
 * alpha, beta, gamma, then those that, when a file names none of them,
 * are `alphas` times the set's alpha (alpha_rndv, alpha_get; alpha_call,
 * beta_concurrent and beta_reread 0). */
typedef struct dpc_cost_field {
    const char *key;
    size_t off;          /* in dpc_cost_params_t */
    double alphas;       /* < 0: a constant of its own */
    bool per_byte;       /* seconds per byte (also shown as a rate) */
    const char *what;    /* for the file's comments */
} dpc_cost_field_t;
#define DPC_COST_NFIELDS 11
extern const dpc_cost_field_t dpc_cost_fields[DPC_COST_NFIELDS];
static inline double *dpc_cost_field(dpc_cost_params_t *c, int i)
{
    return (double *)((char *)c + dpc_cost_fields[i].off);
}

/* A machine model: up to four sets of constants, by the bytes a call's
 * buffers span on a rank (dpc_coll_footprint): set 0 ("small") below
 * from[1], set 1 ("large") from from[1] up, set 2 ("huge") from from[2]
 * up, set 3 ("memory") from from[3] up. Small
 * messages and large ones take different protocols (eager copies through
 * the mailboxes against rendezvous), data that fit in a core's cache move
 * faster than data in the shared cache, and those faster than data that
 * come from memory: no single alpha, beta and gamma fit all four. A
 * threshold of 0 turns its set off; the thresholds grow with the index. */
#define DPC_COST_SETS 4

/* A measured choice (a tune file's "choose" line, which dpcoll_tune writes
 * where an algorithm measured faster than the model's pick): calls of
 * collective coll on communicators of nranks ranks moving lo to hi bytes
 * (dpc_coll_bytes, inclusive) run algorithm al wherever it applies. Why
 * beside the constants: no set of alpha-beta-gamma constants prices every
 * host right; on one VM the direct allreduce ran 1.2-1.8x faster than
 * Rabenseifner at 512 KiB-2 MiB and on another the reverse, and a refit
 * still priced Rabenseifner cheaper (docs/bench/s34/model_check.txt). A
 * choice in the model reaches every call the model decides: nonblocking
 * and persistent ones too, which DPCOLL_AUTOTUNE cannot measure, and the
 * same in every run. */
typedef struct dpc_cost_rule {
    int coll, nranks;
    int nodes;          /* the nodes they span: 1 (one node), or the number of nodes
                           of a group spread over several (measured on such a job) */
    size_t lo, hi;
    const dpc_algo_t *al;
    unsigned calls;     /* DPC_CALLS_*: the kinds of call it is for */
} dpc_cost_rule_t;
/* Which calls a measured choice is for: what was measured. An algorithm
 * faster in blocking calls need not be in nonblocking ones, with several
 * in flight: at 2 ranks a 64 KiB bcast, 4 at once, took 12-19 us binomial
 * against 7 direct, where blocking calls measured binomial 1.16x faster. */
#define DPC_CALLS_BLOCKING 0x1u
#define DPC_CALLS_NONBLOCKING 0x2u   /* nonblocking and persistent */
#define DPC_CALLS_ANY (DPC_CALLS_BLOCKING | DPC_CALLS_NONBLOCKING)
#define DPC_COST_RULES 32

typedef struct dpc_cost_model {
    dpc_cost_params_t set[DPC_COST_SETS];
    size_t from[DPC_COST_SETS];   /* from[0] is 0 */
    int nrules;                   /* measured choices, the first that matches wins */
    dpc_cost_rule_t rule[DPC_COST_RULES];
    size_t push_max;              /* measured: the largest output that one-sided
                                     allgathers and all-to-alls write into their peers
                                     (DPCOLL_PUSH_MAX's default when a tune file gives
                                     it; dpcoll_tune measures it); 0: not given */
} dpc_cost_model_t;
/* The sets' names: tune-file key suffixes ("", "_large", "_huge",
 * "_memory") and thresholds ("large_bytes" ...), and for people. */
extern const char *const dpc_cost_set_suffix[DPC_COST_SETS];
extern const char *const dpc_cost_set_name[DPC_COST_SETS];
/* How many sets are on: 1 + the thresholds that are set. */
int dpc_cost_nsets(const dpc_cost_model_t *m);
/* One line per set that is on: its name, from which size, its constants. */
void dpc_cost_model_print(FILE *f, const dpc_cost_model_t *m, const char *indent);

/* DPCOLL_PUSH_MAX from measurements (dpcoll_tune): ratio[i] is the time
 * writing into peers over the time reading from them for calls of
 * sizes[i] bytes of output (ascending, from push_min). Where writing was
 * more than `loss` times slower at every size from some size up, the
 * largest size below those (push_min - 1 where that is every size: never
 * write); otherwise (size_t)-1, no limit. One slow size with faster ones
 * above it is the machine's noise, not a limit. */
size_t dpc_push_limit(const size_t *sizes, const double *ratio, int n, double loss,
                      size_t push_min);

dpc_cost_model_t dpc_cost_model_defaults(void);
/* Defaults for a job on one node (shared memory): dpcoll_tune's fit on a
 * 2-core x86 VM and the measured choices of its runs (docs/bench/np2.tune);
 * used when every process is on one node and no tune file is given. */
dpc_cost_model_t dpc_cost_model_one_node(void);
/* The bytes a call moves per rank's buffer (the whole vector). */
size_t dpc_coll_bytes(const dpc_coll_args_t *a);
/* The bytes a call's buffers span on a rank, input and output, which picks
 * the set of constants (what the caches hold): an allreduce's, all-to-all's
 * or bcast's 2n, a reduce-scatter's or allgather's n + n/p (n =
 * dpc_coll_bytes; the own block at its mean size, and as if not in place,
 * so that it is the same on every rank: a bcast's buffer is the root's
 * input and the others' output). Why not the call's bytes: a 1 MiB
 * allreduce (4 MiB across two ranks' buffers) already ran at the speed of
 * the larger sets; fitted by the bytes of the call, 290-291 of 336
 * measurements came within 30%, by these 296-302 (dpcoll_tune on the
 * reference machine, two runs, each fit checked on the other run too).
 * The bcast counted n until beta_concurrent priced its direct algorithm's
 * second copy; since, 2n fits as well (310 of 336 against 309, dpcoll_tune
 * -r on the same measurements) and puts a 1 MiB bcast, which no longer
 * fits in the root's L2, with the larger calls (its one-core copies ran at
 * 17 GB/s there, 28 GB/s at 512 KiB), so that the direct bcast is the
 * model's choice from there up, as measured. */
size_t dpc_coll_footprint(const dpc_coll_args_t *a);
const dpc_cost_params_t *dpc_cost_regime(const dpc_cost_model_t *m, const dpc_coll_args_t *a);
/* Predicted time of one algorithm under one set of constants: its formula
 * plus the per-call constant. */
double dpc_cost_of(const dpc_algo_t *al, const dpc_coll_args_t *a, const dpc_cost_params_t *c);
/* Predicted time of one algorithm under the model. */
double dpc_cost_predict(const dpc_algo_t *al, const dpc_coll_args_t *a, const dpc_cost_model_t *m);
/* The model's pick: a measured choice that matches and applies
 * (dpc_cost_rule_for), else the cheapest by the constants; an algorithm
 * taken wherever it applies (DPC_ALGO_FIRST_CHOICE) before either. */
const dpc_algo_t *dpc_cost_select_model(const dpc_coll_args_t *a, const dpc_cost_model_t *m);
/* The measured choice for these arguments: the first rule of m whose
 * collective, ranks, nodes, byte range and kind of call (a->nonblocking) match and
 * whose algorithm applies, or NULL. */
const dpc_algo_t *dpc_cost_rule_for(const dpc_coll_args_t *a, const dpc_cost_model_t *m);
/* Adds a measured choice to m (after those it has); DPC_ERR_ARG with a
 * message if the algorithm is not the collective's, the range is empty, the
 * ranks are below 1, the nodes below 1 or above the ranks, or m has DPC_COST_RULES already. */
dpc_status_t dpc_cost_rule_add(dpc_cost_model_t *m, int coll, int nranks, int nodes, size_t lo, size_t hi,
                               const dpc_algo_t *al, unsigned calls, char *err, size_t errlen);
/* A kind of call's name in tune files ("blocking", "nonblocking", "any")
 * and back (0: unknown) */
const char *dpc_calls_name(unsigned calls);
unsigned dpc_calls_from_name(const char *name);

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
