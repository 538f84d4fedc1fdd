/*
 * DPCOLL_AUTOTUNE=N: the algorithm of a large blocking call measured in
 * the program's own run. The cost model prices a call alike in every run,
 * and on a machine whose speed moves between runs (the reference VM's
 * by up to 2x) or that it was not fitted to (more ranks than cores, a
 * program's own op, another machine), the algorithm it picks can be a
 * slower one. A program that makes the same call again and again (a
 * training loop's gradient buckets) can afford to try: each candidate
 * (dpc_autotune_candidates: the algorithms the model prices within 3x of
 * its pick, at most 5, the pick first) runs N + 1 calls in a row, each rank
 * timing its own but the first (and the signature's first call, which
 * finds the program's buffers cold, is not timed: dpc_autotune_turn); at
 * the next call of that signature the ranks exchange the median of each
 * candidate's N times (an allgather of a few doubles) and every
 * rank keeps the one whose slowest rank's median is least, if it beats the
 * model's pick by DPC_AUTOTUNE_MARGIN, the same on all. After about
 * DPCOLL_AUTOTUNE_PERIOD seconds more of the program's calls of that
 * signature (counted in calls at the pace measured, the slowest rank's:
 * dpc_autotune_again_after) it is all measured again: the machine's state
 * may have changed, and which algorithm is fastest with it.
 *
 * Every rank must count the same calls, in the same order, or they would
 * run different algorithms in one call: a call is measured when its
 * arguments, which every rank passes alike, say so (run.c: blocking, more
 * than DPC_REPLAY_MAX_BYTES, no per-rank counts, no forced algorithm, not
 * the device pipeline's), never by anything one rank alone knows (its
 * timings, whether its buffers are on a device); slots are taken and
 * reused in the order of those calls. A failed call still counts (its
 * time does not).
 *
 * Results: every call's result is the same on every rank, as each
 * algorithm's is; calls measured with different algorithms may round
 * differently from one another, and which one is kept depends on the run's
 * timings, so a program that needs the same bits from run to run leaves
 * this off (the default).
 */
#include "config.h"
#include "shim.h"
#include "dpc_autotune.h"
#include "dpc_log.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* signatures measured at once per communicator: a training step's buckets
 * and its few other large calls; a signature whose slot was taken by
 * others meanwhile starts again */
#define DPC_AUTOTUNE_SLOTS 16

typedef struct autotune_rec {
    bool used;
    int coll, dtype, op, in_place, root;
    size_t count;
    int ncand;
    const dpc_algo_t *cand[DPC_AUTOTUNE_CANDIDATES];
    unsigned issued;            /* measured calls started (alike on every rank) */
    /* seconds of candidate k's measured call r (NaN: failed, or not back) */
    double t[DPC_AUTOTUNE_CANDIDATES][DPC_AUTOTUNE_MAX_CALLS];
    const dpc_algo_t *kept;     /* decided; NULL while measuring */
    bool measured_before;       /* decided before, now measured again */
    double first_at;            /* when the measurement's first call started (seconds) */
    unsigned long long kept_calls, again_after;   /* calls since the decision, and how
                                                     many before measuring again (0:
                                                     never; dpc_autotune_again_after) */
} autotune_rec_t;

struct dpc_autotune_state {
    autotune_rec_t rec[DPC_AUTOTUNE_SLOTS];
    unsigned next;              /* the slot a new signature takes */
};

void dpc_autotune_free(dpc_comm_t *c)
{
    free(c->tune);
    c->tune = NULL;
}

static bool same_signature(const autotune_rec_t *r, const dpc_coll_args_t *a)
{
    return r->used && r->coll == (int)a->coll && r->count == a->count &&
           r->dtype == (int)a->dtype && r->op == (int)a->op && r->in_place == a->in_place &&
           r->root == a->root;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void start_signature(autotune_rec_t *r, const dpc_coll_args_t *a)
{
    memset(r, 0, sizeof(*r));
    r->first_at = seconds_now();
    r->used = true;
    r->coll = (int)a->coll;
    r->count = a->count;
    r->dtype = (int)a->dtype;
    r->op = (int)a->op;
    r->in_place = a->in_place;
    r->root = a->root;
    r->ncand = dpc_autotune_candidates(a, &dpc_g.cfg.cost, r->cand, NULL);
    for (int k = 0; k < DPC_AUTOTUNE_CANDIDATES; k++)
        for (int i = 0; i < DPC_AUTOTUNE_MAX_CALLS; i++)
            r->t[k][i] = NAN;
    if (r->ncand <= 1)
        r->kept = r->ncand ? r->cand[0] : NULL;   /* (nothing to compare) */
}

/* (rank 0, DPCOLL_EXPLAIN) what was measured and what is kept */
static void explain(const dpc_req_t *op, const autotune_rec_t *r, const double *slowest,
                    int best, unsigned n)
{
    const dpc_coll_args_t *a = &op->job->a;
    char line[1024];
    size_t off = (size_t)snprintf(line, sizeof(line), "%s: %s, %d ranks, %zu x %s:",
                                  op->job->call, dpc_coll_name(a->coll), a->size, a->count,
                                  dpc_dtype_name(a->dtype));
    for (int k = 0; k < r->ncand && off < sizeof(line); k++)
        off += (size_t)snprintf(line + off, sizeof(line) - off, "%s %s %.4g us", k ? "," : "",
                                r->cand[k]->name, slowest[k] * 1e6);
    if (off < sizeof(line))
        snprintf(line + off, sizeof(line) - off, " (the slowest rank's median of %u calls each) "
                 "-> %s (the model's pick: %s)", n, r->cand[best]->name, r->cand[0]->name);
    fprintf(stderr, "libdpcoll autotune: %s\n", line);
}

/* The measured calls are all made: every rank's medians, then the choice. */
static int decide(dpc_req_t *op, autotune_rec_t *r)
{
    unsigned n = dpc_g.cfg.autotune;
    int p = op->c->size, nc = r->ncand, w = nc + 1;
    /* each candidate's median, then the seconds between this rank's calls
     * of the signature while it was measured (the program's pace) */
    double mine[DPC_AUTOTUNE_CANDIDATES + 1], got[DPC_AUTOTUNE_MAX_CALLS];
    for (int k = 0; k < nc; k++) {
        int m = 0;
        for (unsigned i = 0; i < n; i++)   /* (only counted calls have times) */
            if (!isnan(r->t[k][i]))
                got[m++] = r->t[k][i];
        mine[k] = dpc_autotune_median(got, m);   /* (none back: +inf) */
    }
    mine[nc] = (seconds_now() - r->first_at) / (double)r->issued;
    double *all = malloc(sizeof(double) * (size_t)p * (size_t)w);
    if (!all)
        return dpc_raise(op->comm, MPI_ERR_NO_MEM, "%s: out of memory for DPCOLL_AUTOTUNE's "
                         "exchange of times", op->job->call);
    /* (libdpcoll's own call: not counted, not explained, nothing forced) */
    bool was = dpc_tl_quiet;
    dpc_tl_quiet = true;
    int rc = dpc_own_allgather(mine, (int)(sizeof(double) * (size_t)w), all, op->comm,
                               op->job->call);
    dpc_tl_quiet = was;
    if (rc != MPI_SUCCESS) {
        free(all);
        return rc;
    }
    /* (in place: rank q's medians to q * nc, its pace kept aside; the
     * slowest pace, from every rank's numbers, is the same on all) */
    double pace = 0;
    for (int q = 0; q < p; q++) {
        double its = all[q * w + nc];
        pace = its > pace ? its : pace;
        memmove(&all[q * nc], &all[q * w], sizeof(double) * (size_t)nc);
    }
    double slowest[DPC_AUTOTUNE_CANDIDATES];
    int best = dpc_autotune_decide(all, p, nc, DPC_AUTOTUNE_MARGIN, slowest);
    free(all);
    r->kept = r->cand[best];
    r->again_after = dpc_autotune_again_after(pace, dpc_g.cfg.autotune_period,
                                              DPC_AUTOTUNE_TRIAL_CALLS(n, nc));
    dpc_lock(dpc_g.mt);
    dpc_g.tuned++;
    dpc_g.retuned += r->measured_before;
    dpc_g.tuned_other += best != 0;
    if (dpc_g.cfg.explain && op->c->rank == 0)
        explain(op, r, slowest, best, n);
    dpc_unlock(dpc_g.mt);
    return MPI_SUCCESS;
}

int dpc_autotune_pick(dpc_req_t *op, const dpc_algo_t **al)
{
    dpc_comm_t *c = op->c;
    const dpc_coll_args_t *a = &op->job->a;
    *al = NULL;
    if (!c->tune && !(c->tune = calloc(1, sizeof(*c->tune))))
        return dpc_raise(op->comm, MPI_ERR_NO_MEM, "%s: out of memory for DPCOLL_AUTOTUNE",
                         op->job->call);
    struct dpc_autotune_state *st = c->tune;
    int i = 0;
    while (i < DPC_AUTOTUNE_SLOTS && !same_signature(&st->rec[i], a))
        i++;
    if (i == DPC_AUTOTUNE_SLOTS) {
        i = (int)(st->next++ % DPC_AUTOTUNE_SLOTS);
        start_signature(&st->rec[i], a);
    }
    autotune_rec_t *r = &st->rec[i];
    if (r->ncand == 0)
        return MPI_SUCCESS;   /* (no algorithm applies: the model's answer, an error) */
    if (!r->kept && r->issued == DPC_AUTOTUNE_TRIAL_CALLS(dpc_g.cfg.autotune, r->ncand)) {
        int rc = decide(op, r);
        if (rc != MPI_SUCCESS)
            return rc;
    }
    if (r->kept && r->again_after && ++r->kept_calls > r->again_after) {
        start_signature(r, a);   /* (the same call on every rank: counted alike) */
        r->measured_before = true;
    }
    if (r->kept) {
        *al = r->kept;
        return MPI_SUCCESS;
    }
    /* the warm-up, then each candidate's calls in a row, as the one kept
     * will run (tried in turn call by call instead, each candidate followed
     * another algorithm and found the caches and scratch as it left them) */
    int counted;
    unsigned slot;
    op->tune_call = r->issued++;
    *al = r->cand[dpc_autotune_turn(op->tune_call, dpc_g.cfg.autotune, r->ncand, &counted, &slot)];
    op->tune_slot = counted ? i + 1 : 0;   /* (a call not counted is not timed) */
    return MPI_SUCCESS;
}

void dpc_autotune_done(dpc_req_t *op, double seconds)
{
    if (!op->tune_slot || !op->c->tune)
        return;
    autotune_rec_t *r = &op->c->tune->rec[op->tune_slot - 1];
    int counted;
    unsigned slot;
    int k = dpc_autotune_turn(op->tune_call, dpc_g.cfg.autotune, r->ncand, &counted, &slot);
    if (r->used && !r->kept && k >= 0 && counted)
        r->t[k][slot] = seconds;
}
