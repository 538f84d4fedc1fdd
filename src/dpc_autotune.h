/* DPCOLL_AUTOTUNE: measuring a blocking call's algorithms in the program's
 * own run, then keeping the fastest. The pure parts, which the unit tests
 * check: which algorithms are tried, and how the ranks' times decide. The
 * per-communicator state and the exchange of times are the shim's
 * (src/pmpi/autotune.c). */
#ifndef DPC_AUTOTUNE_H
#define DPC_AUTOTUNE_H

#include "dpc_coll.h"
#include "dpc_cost.h"

/* At most this many algorithms tried per call signature, and only those
 * the model prices within DPC_AUTOTUNE_SPREAD times its cheapest: on the
 * reference VM the fastest algorithm measured was at most 2.0x the
 * model's pick's predicted time away (the model's worst choices, 1.5-1.9x,
 * docs/bench/np2_model_check.txt), and the ones priced further off (Bruck's
 * allgather and all-to-all beyond a few KiB, the direct algorithms' small
 * calls) never won; each one tried costs its measured calls. */
#define DPC_AUTOTUNE_CANDIDATES 5
#define DPC_AUTOTUNE_SPREAD 3.0
/* The most measured calls per algorithm (DPCOLL_AUTOTUNE's largest value). */
#define DPC_AUTOTUNE_MAX_CALLS 32

/* Calls not measured: a signature's first call (the model's pick: the
 * first uses of the program's buffers cost what later calls do not; on the
 * reference VM a 1 MiB allreduce at 2 ranks took 3-7 ms, against 0.14-0.2
 * ms from its third call, and that would go to whichever candidate is
 * measured first: the model's pick), and each candidate's first call (it
 * follows another algorithm, finds the caches as that one left them, and
 * may add its own scratch to the pool). */
#define DPC_AUTOTUNE_WARMUP 1

/* Calls of one signature before the decision: the warm-up, then for each
 * of ncand candidates one call not measured and n measured, in a row. */
#define DPC_AUTOTUNE_TRIAL_CALLS(n, ncand) \
    (DPC_AUTOTUNE_WARMUP + ((unsigned)(n) + 1) * (unsigned)(ncand))

/* Which candidate runs a signature's call number `call` (0-based) while
 * its algorithms are measured, n measured calls each: returns its index
 * (0, the model's pick, for the warm-up), sets *counted to whether the
 * call's time counts and *slot to which of the candidate's n measured
 * calls it is. Returns -1 for a call past the trials. The same on every
 * rank. */
int dpc_autotune_turn(unsigned call, unsigned n, int ncand, int *counted, unsigned *slot);

/* The algorithms to try for these arguments, cheapest predicted first (the
 * model's pick is cand[0]; equal prices keep the registry's order, as the
 * model's ties do): those that apply and are priced within
 * DPC_AUTOTUNE_SPREAD of the cheapest, at most DPC_AUTOTUNE_CANDIDATES.
 * An algorithm taken wherever it applies (DPC_ALGO_FIRST_CHOICE) is the
 * only one. pred, if not NULL, gets each one's predicted seconds. Returns
 * how many (0: none applies). The same on every rank for the same
 * arguments and model. */
int dpc_autotune_candidates(const dpc_coll_args_t *a, const dpc_cost_model_t *m,
                            const dpc_algo_t *cand[DPC_AUTOTUNE_CANDIDATES],
                            double pred[DPC_AUTOTUNE_CANDIDATES]);

/* The median of v[0..n) (sorted in place; the mean of the middle two for
 * an even n); +inf for n = 0. */
double dpc_autotune_median(double *v, int n);

/* A candidate other than the model's pick must beat it by this fraction:
 * the model chooses within 3% of the fastest on average (twelve runs of
 * the reference VM), and a few calls per candidate on a machine whose
 * speed moves measure no better than that; without the margin, runs there
 * kept other algorithms that were then slower about as often as faster. */
#define DPC_AUTOTUNE_MARGIN 0.05

/* The decision from every rank's times: times[r * ncand + k] is rank r's
 * median time of candidate k (candidate 0: the model's pick). A
 * collective lasts as long as its slowest rank, so each candidate counts
 * at its slowest rank's time (slowest[k], if not NULL); the least of those
 * wins if it is under (1 - margin) times candidate 0's, else candidate 0
 * stays; a tie goes to the lower index. Every rank that has all the times
 * decides alike. */
int dpc_autotune_decide(const double *times, int nranks, int ncand, double margin,
                        double *slowest);

/* Measuring again: a machine's state can change within a run, and the
 * algorithm kept with it. This project's VM flips every ten seconds to a
 * minute between a state in which records through the shared-memory
 * mailboxes cross between its two cores at 90-160 us per MiB and one in
 * which they take 240-350, and the algorithm fastest in one was 1.15-1.8x
 * slower than another in the other (the reduce-scatter's ring against
 * recursive halving at 512 KiB-2 MiB, the allreduce's ring against the
 * direct one; docs/bench/s51/modes_1.txt). So a decided signature is
 * measured again after about `period` seconds of the program's run
 * (DPCOLL_AUTOTUNE_PERIOD, default DPC_AUTOTUNE_PERIOD_S): after as many
 * of its calls as come in that time at `call_every` seconds apart (the
 * program's pace with that signature during its measurement, the slowest
 * rank's, which every rank has alike from the decision's exchange, so that
 * all start again at the same call). Never fewer than
 * DPC_AUTOTUNE_AGAIN_TRIALS times the calls a measurement takes
 * (trial_calls), so that the candidates tried, some slower, are at most a
 * ninth of the calls of a program that calls slowly. 0 (never again) where
 * period is 0 or the pace is not a positive number. Why 2 s: a loop of a
 * 1 MiB allreduce and a 2 MiB reduce-scatter at 2 ranks, 20-second runs
 * of each setting in turn, took per round, against the model's choices in
 * the same round (median of 8 rounds): 0.84 decided once, 0.75 measured
 * again every 5 s, 0.78 every second, and 0.69 every 2 s (4 rounds;
 * docs/bench/s51/long_loop_ab*.txt): measuring again is what gains, the
 * period within the noise from 1 to 5 s; the trials cost well under 1% of
 * those calls, and at 2 s stay cheap at a slower program's pace. */
#define DPC_AUTOTUNE_PERIOD_S 2.0
#define DPC_AUTOTUNE_AGAIN_TRIALS 8
unsigned long long dpc_autotune_again_after(double call_every, double period,
                                            unsigned trial_calls);

#endif
