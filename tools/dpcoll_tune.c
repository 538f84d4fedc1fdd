/*
 * dpcoll_tune: measure this machine and fit the cost model's constants.
 * Under mpiexec it times every algorithm of allreduce, reduce-scatter,
 * allgather, bcast and alltoall over a range of sizes (forced one by one,
 * medians of repeats, slowest rank), then fits alpha_call (per call), alpha (per
 * message), alpha_rndv (per message beyond the mailboxes: a rendezvous),
 * alpha_get (per one-sided read or write), beta (per byte sent), gamma (per
 * byte reduced), beta_concurrent (per byte of a second copy at once) and
 * beta_reread (per byte a reduction reads back of a whole message
 * received) so that the algorithms' own cost formulas match the
 * measurements: the model is linear in the constants, so each measurement
 * is one row of a least-squares problem, weighted by 1/time so that 8 B and 16 MiB count alike; the constants are
 * kept non-negative; up to four sets of them, for calls of different sizes
 * (dpc_cost_model_t). Rank 0 writes the tune file (read at MPI_Init through
 * DPCOLL_TUNE_FILE) and prints measured against predicted times; then it
 * adds measured choices (add_choices) where an algorithm ran clearly faster
 * than the constants' pick.
 *
 * On a job spread over several nodes (as libdpcoll sees them:
 * dpcoll_comm_nodes, hosts or DPCOLL_TEST_NODES) it fits the constants
 * between nodes instead (alpha_net, alpha_rndv_net, beta_net): every
 * algorithm that runs on the job's world is timed there and priced with
 * its node map and eager limit as the engine prices it, the constants
 * within a node are held at those the job runs with (DPCOLL_TUNE_FILE's,
 * fitted on one node, or the built-in ones) and the three fitted to what
 * is left, set by set; the file written holds both, and measured choices
 * for the world's ranks and nodes.
 */
#include "config.h"
#include "bench_shares.h"
#include "sizes.h"
#include "warmup.h"
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dpc_coll.h"
#include "dpc_autotune.h"
#include "dpc_config.h"
#include "dpc_cost.h"
#include "dpcoll.h"

/* a measurement: time t, the bytes its buffers span (cb: what picks the
 * set of constants, dpc_coll_footprint), and the model's coefficient of
 * each constant, in dpc_cost_fields' order */
#define NCONST DPC_COST_NFIELDS
typedef struct point {
    const dpc_algo_t *al;
    size_t bytes, cb;
    double t, k[NCONST];
    int p, run;          /* ranks; which run (-r file) it comes from */
    unsigned calls;      /* DPC_CALLS_BLOCKING, or _NONBLOCKING (a dpcoll_bench -i or -P
                            CSV's rows: its calls column) */
    int buffers;         /* how its buffers were left between calls: BUF_TOUCHED,
                            BUF_AS_LEFT, or BUF_UNSAID (a file without the column) */
} point_t;
/* A point's buffers: written before each call and read after it (this
 * tool without -u, dpcoll_bench -t), as the collectives left them (-u, and
 * dpcoll_bench without -t, as IMB and OSU loops do), or not said. The
 * measured choices must hold both ways (measured_winner). */
enum { BUF_UNSAID = -1, BUF_AS_LEFT = 0, BUF_TOUCHED = 1 };
static const char *buffers_name(int b)
{
    return b == BUF_TOUCHED ? "touched" : b == BUF_AS_LEFT ? "as_left" : "unsaid";
}
/* what counts as the model predicting a measurement */
#define TOLERANCE 0.30

static int cmpd(const void *x, const void *y)
{
    double a = *(const double *)x, b = *(const double *)y;
    return a < b ? -1 : a > b;
}

static int cmp_size(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return a < b ? -1 : a > b;
}

/* DPCOLL_PUSH_MAX and DPCOLL_SEG_BYTES as the shim takes them: rank 0's (main) */
static size_t push_max, seg_bytes;

/* The job's world spread over several nodes (across_nodes >= 2): its node
 * map, ranks on each (0: unequal) and eager limit, which args_for gives
 * the world's calls as the shim does; 1: one node. */
static int across_nodes = 1, world_size, *world_node, world_node_ranks;
static size_t world_eager;

/* The v-variants a tune file can hold measured choices for, from
 * dpcoll_bench's rows: their counts are the same on every rank, so every
 * rank prices and chooses alike (an all-to-all's are each rank's own, and
 * the model does not price them). Their rows are not fitted: the
 * constants are the block collectives'. */
static const dpc_coll_t vcolls[] = {DPC_REDUCE_SCATTER, DPC_ALLGATHERV};
static bool is_vcoll(int coll)
{
    return coll == DPC_REDUCE_SCATTER || coll == DPC_ALLGATHERV;
}
enum { TUNE_MAX_V_RANKS = 1024 };
/* the caller's room for a v-variant's counts, which the arguments point to */
typedef size_t v_counts_t[TUNE_MAX_V_RANKS];

/* arguments as the shim builds them for these calls; a v-variant's as
 * dpcoll_bench made them, bytes the whole vector of floats in its shares
 * (tools/bench_shares.h), its counts in v_counts */
static dpc_coll_args_t args_for(dpc_coll_t coll, int p, size_t bytes, v_counts_t v_counts)
{
    dpc_coll_args_t a = {.coll = coll, .size = p, .dtype = DPC_FLOAT, .op = DPC_OP_SUM,
                         .seg_bytes = seg_bytes, .push_min = DPC_PUSH_MIN,
                         .push_max = push_max};
    if (across_nodes >= 2 && p == world_size) {
        a.node = world_node;
        a.nnodes = across_nodes;
        a.node_ranks = world_node_ranks;
        a.eager_max = world_eager;
    }
    if (is_vcoll(coll) && p <= TUNE_MAX_V_RANKS) {
        size_t unit = coll == DPC_ALLGATHERV ? sizeof(float) : 1;   /* (moves: bytes) */
        for (int q = 0; q < p; q++)
            v_counts[q] = bench_share(bytes / sizeof(float), p, q) * unit;
        a.counts = v_counts;
        a.count = v_counts[0];
        if (coll == DPC_ALLGATHERV)
            a.dtype = DPC_BYTE;
        return a;
    }
    a.count = timed_count(coll, bytes / sizeof(float), p);
    if (coll != DPC_ALLREDUCE && coll != DPC_REDUCE_SCATTER_BLOCK) {
        a.dtype = DPC_BYTE;   /* moved, not reduced: priced as bytes, as the shim does */
        a.count *= sizeof(float);
    }
    return a;
}

/* Producer/consumer caches (on unless -u): before each call every rank
 * writes its input, after it every rank reads its output, both untimed, as
 * a program does (a training step writes the gradients it all-reduces and
 * reads the result) and as dpcoll_bench -t measures. Without it the buffers
 * stay as the collectives leave them, which favours some algorithms over
 * others where programs see the opposite: with 2 ranks the binomial bcast
 * of 128-512 KiB measured 6.0-18.6 us against the direct one's 7.7-21.4 on
 * the session-9 machine (so the model fitted to it chose binomial), while
 * with the consumers reading their output it took 16-65 us against
 * direct's 12-35 on the session-16 one, 0.65-0.85x MPICH. */
static int touch_buffers = 1;

/* a call's input and output bytes on each rank (args_for's calls) */
static size_t in_bytes(dpc_coll_t coll, const dpc_coll_args_t *a)
{
    return timed_in_elems(coll, a->count, a->size) * dpc_dtype_size(a->dtype);
}

static size_t out_bytes(dpc_coll_t coll, const dpc_coll_args_t *a)
{
    return timed_out_elems(coll, a->count, a->size) * dpc_dtype_size(a->dtype);
}

static double time_call(dpc_coll_t coll, const dpc_coll_args_t *a, float *in, float *out, int reps)
{
    double *t = malloc(sizeof(double) * (size_t)reps);
    int n = (int)a->count;
    int warm = warmup_calls(dpc_coll_bytes(a), 2), rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    for (int k = -warm; k < reps; k++) {
        int one = 1, s;
        /* the root's data just written before each bcast, untimed, as
         * dpcoll_bench does (a peer reading lines still in the root's cache
         * is slower than reading ones it has long left: a 2-rank direct
         * bcast of 1 MiB, 45 us against 18) */
        if (coll == DPC_BCAST && rank == 0)
            memcpy(out, in, (size_t)n);
        else if (coll != DPC_BCAST && touch_buffers)
            touch_write_lines(in, in_bytes(coll, a));
        MPI_Allreduce(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        switch (coll) {
        case DPC_ALLREDUCE: MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); break;
        case DPC_REDUCE_SCATTER_BLOCK:
            MPI_Reduce_scatter_block(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            break;
        case DPC_ALLGATHER: MPI_Allgather(in, n, MPI_BYTE, out, n, MPI_BYTE, MPI_COMM_WORLD); break;
        case DPC_ALLTOALL: MPI_Alltoall(in, n, MPI_BYTE, out, n, MPI_BYTE, MPI_COMM_WORLD); break;
        default: MPI_Bcast(out, n, MPI_BYTE, 0, MPI_COMM_WORLD); break;
        }
        if (k >= 0)
            t[k] = MPI_Wtime() - t0;
        if (touch_buffers)
            touch_read_lines(out, out_bytes(coll, a));
    }
    qsort(t, (size_t)reps, sizeof(double), cmpd);
    double med = t[reps / 2], mx;
    PMPI_Allreduce(&med, &mx, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    free(t);
    return mx;
}

/* the model's relative error at a point with constants x */
static double rel_error(const point_t *p, const double x[NCONST])
{
    double e = -1;
    for (int j = 0; j < NCONST; j++)
        e += p->k[j] * x[j] / p->t;
    return e;
}

/* least squares over the columns in mask, on the points whose buffers
 * span [lo, hi) bytes, each row scaled by 1/t (relative errors); the other
 * columns at fixed's values (NULL: 0), fitted to what they leave of each
 * time; returns the residual */
static double fit(const point_t *pt, int n, size_t lo, size_t hi, int mask, const double *fixed,
                  double x[NCONST])
{
    double A[NCONST][NCONST] = {{0}}, y[NCONST] = {0};
    int idx[NCONST], k = 0;
    for (int j = 0; j < NCONST; j++)
        if (mask & (1 << j))
            idx[k++] = j;
    for (int i = 0; i < n; i++) {
        if (pt[i].cb < lo || pt[i].cb >= hi)
            continue;
        double r[NCONST], target = 1;
        for (int j = 0; j < NCONST; j++) {
            r[j] = pt[i].k[j] / pt[i].t;
            if (fixed && !(mask & (1 << j)))
                target -= r[j] * fixed[j];
        }
        for (int u = 0; u < k; u++) {
            y[u] += r[idx[u]] * target;
            for (int v = 0; v < k; v++)
                A[u][v] += r[idx[u]] * r[idx[v]];
        }
    }
    /* Gauss-Jordan on the k x k system */
    for (int c = 0; c < k; c++) {
        int piv = c;
        for (int r = c + 1; r < k; r++)
            if (fabs(A[r][c]) > fabs(A[piv][c]))
                piv = r;
        if (fabs(A[piv][c]) < 1e-300)
            return INFINITY;
        for (int v = 0; v < k; v++) {
            double tmp = A[c][v]; A[c][v] = A[piv][v]; A[piv][v] = tmp;
        }
        double tmp = y[c]; y[c] = y[piv]; y[piv] = tmp;
        for (int r = 0; r < k; r++) {
            if (r == c)
                continue;
            double f = A[r][c] / A[c][c];
            for (int v = 0; v < k; v++)
                A[r][v] -= f * A[c][v];
            y[r] -= f * y[c];
        }
    }
    for (int j = 0; j < NCONST; j++)
        x[j] = fixed ? fixed[j] : 0;
    for (int u = 0; u < k; u++) {
        x[idx[u]] = y[u] / A[u][u];
        if (x[idx[u]] < 0)
            return INFINITY;
    }
    double res = 0;
    for (int i = 0; i < n; i++) {
        if (pt[i].cb < lo || pt[i].cb >= hi)
            continue;
        res += rel_error(&pt[i], x) * rel_error(&pt[i], x);
    }
    return res;
}

/* Does any measurement in [lo, hi) depend on constant j? (Calls below the
 * mailbox size send no rendezvous message: nothing there says what one
 * costs.) */
static bool identified(const point_t *pt, int n, size_t lo, size_t hi, int j)
{
    for (int i = 0; i < n; i++)
        if (pt[i].cb >= lo && pt[i].cb < hi && pt[i].k[j] > 0)
            return true;
    return false;
}

/* the constants as the model's parameters */
static dpc_cost_params_t params_of(const double x[NCONST])
{
    dpc_cost_params_t c = {0};
    for (int j = 0; j < NCONST; j++)
        *dpc_cost_field(&c, j) = x[j];
    return c;
}

/* which of them is alpha_rndv (a set may not say what one costs) */
static int rndv_index(void)
{
    for (int j = 0; j < NCONST; j++)
        if (dpc_cost_fields[j].off == offsetof(dpc_cost_params_t, alpha_rndv))
            return j;
    return -1;
}

/* the best non-negative fit over every subset of the constants in
 * `free` that the measurements say something of (a plain squared error:
 * Cauchy-weighted refits, tried, left as many points beyond 30%, with other
 * splits); the others at fixed's values (NULL: 0) */
static double best_fit(const point_t *pt, int n, size_t lo, size_t hi, int free_cols,
                       const double *fixed, dpc_cost_params_t *c)
{
    double best = INFINITY, x[NCONST];
    for (int j = 0; j < NCONST; j++)
        if (!identified(pt, n, lo, hi, j))
            free_cols &= ~(1 << j);
    for (int mask = 1; mask < (1 << NCONST); mask++) {
        if (mask & ~free_cols)
            continue;
        double r = fit(pt, n, lo, hi, mask, fixed, x);
        if (r < best) {
            best = r;
            *c = params_of(x);
        }
    }
    return best;
}

/* the columns of the constants between nodes, and of the others */
static bool net_col(int j)
{
    size_t o = dpc_cost_fields[j].off;
    return o == offsetof(dpc_cost_params_t, alpha_net) ||
           o == offsetof(dpc_cost_params_t, alpha_rndv_net) ||
           o == offsetof(dpc_cost_params_t, beta_net);
}
static int within_cols(void)
{
    int m = 0;
    for (int j = 0; j < NCONST; j++)
        m |= !net_col(j) << j;
    return m;
}

/* A job on several nodes: the model it runs with (within), its constants
 * between nodes fitted set by set to the measurements (those within held:
 * the node's, fitted on one node), where a set's measurements say
 * something of them; returns how many sets */
static int fit_across(const point_t *pt, int n, const dpc_cost_model_t *within,
                      dpc_cost_model_t *model)
{
    dpc_cost_model_t m = *within;
    int sets = dpc_cost_nsets(within);
    for (int i = 0; i < sets; i++) {
        size_t lo = i ? m.from[i] : 0, hi = i + 1 < sets ? m.from[i + 1] : SIZE_MAX;
        double fixed[NCONST];
        for (int j = 0; j < NCONST; j++)
            fixed[j] = *dpc_cost_field(&m.set[i], j);
        dpc_cost_params_t c;
        if (best_fit(pt, n, lo, hi, ~within_cols(), fixed, &c) < INFINITY)
            for (int j = 0; j < NCONST; j++)
                if (net_col(j) && identified(pt, n, lo, hi, j))
                    *dpc_cost_field(&m.set[i], j) = *dpc_cost_field(&c, j);
    }
    for (int i = sets; i < DPC_COST_SETS; i++)
        m.set[i] = m.set[sets - 1];
    *model = m;
    return sets;
}

/* the model fitted to the measurements: up to four sets, split where
 * they fit best; returns how many sets */
static int fit_model(const point_t *pt, int n, dpc_cost_model_t *model)
{
    /* one set of constants, or two, three or four, split at the thresholds
     * that fit best (small messages; data in a core's cache; in the shared
     * cache; from memory), among the powers of two from 2 KiB to 64 MiB of
     * the bytes a call's buffers span. Each range between two candidate
     * thresholds is fitted once; a set must span at least MIN_SIZES sizes
     * of call, so that no set is fitted to a single size's measurements. */
    enum { NB = 18, MIN_SIZES = 3 };
    size_t bound[NB + 1];
    int nb = 0;
    bound[nb++] = 0;
    for (size_t t = 2048; t <= (64u << 20); t *= 2)
        bound[nb++] = t;
    bound[nb++] = SIZE_MAX;
    static double res[NB + 1][NB + 1];
    static dpc_cost_params_t par[NB + 1][NB + 1];
    for (int i = 0; i < nb; i++)
        for (int j = i + 1; j < nb; j++) {
            int sizes = 0;   /* distinct sizes of call whose buffers span [bound i, bound j) */
            for (int k = 0; k < n; k++) {
                bool in = pt[k].cb >= bound[i] && pt[k].cb < bound[j], again = false;
                for (int e = 0; e < k && in && !again; e++)
                    again = pt[e].bytes == pt[k].bytes && pt[e].cb >= bound[i] && pt[e].cb < bound[j];
                sizes += in && !again;
            }
            res[i][j] = sizes >= MIN_SIZES ? best_fit(pt, n, bound[i], bound[j], within_cols(),
                                                      NULL, &par[i][j])
                                           : INFINITY;
        }
    dpc_cost_model_t m = {.from = {0}};
    int cut[DPC_COST_SETS + 1] = {0, nb - 1}, ncut = 1;   /* the best split: bound indices */
    double best = res[0][nb - 1];
    for (int x = 1; x < nb - 1; x++) {
        if (res[0][x] + res[x][nb - 1] < best) {
            best = res[0][x] + res[x][nb - 1];
            ncut = 2, cut[1] = x, cut[2] = nb - 1;
        }
        for (int y = x + 1; y < nb - 1; y++) {
            if (res[0][x] + res[x][y] + res[y][nb - 1] < best) {
                best = res[0][x] + res[x][y] + res[y][nb - 1];
                ncut = 3, cut[1] = x, cut[2] = y, cut[3] = nb - 1;
            }
            for (int z = y + 1; z < nb - 1; z++)
                if (res[0][x] + res[x][y] + res[y][z] + res[z][nb - 1] < best) {
                    best = res[0][x] + res[x][y] + res[y][z] + res[z][nb - 1];
                    ncut = 4, cut[1] = x, cut[2] = y, cut[3] = z, cut[4] = nb - 1;
                }
        }
    }
    for (int i = 0; i < ncut; i++) {
        m.set[i] = par[cut[i]][cut[i + 1]];
        m.from[i] = i ? bound[cut[i]] : 0;
    }
    for (int i = ncut; i < DPC_COST_SETS; i++)
        m.set[i] = m.set[ncut - 1];
    /* (one node says nothing of a network: the defaults between nodes) */
    dpc_cost_params_t d = dpc_cost_defaults();
    for (int i = 0; i < DPC_COST_SETS; i++)
        for (int j = 0; j < NCONST; j++)
            if (net_col(j))
                *dpc_cost_field(&m.set[i], j) = *dpc_cost_field(&d, j);
    /* a set whose calls say nothing of a rendezvous takes the nearest
     * set's price for one (a call of that size may still send one message
     * beyond the mailboxes: a bcast of 12 KiB) */
    for (int pass = 0; pass < 2; pass++)
        for (int i = 0; i < ncut; i++)
            if (ncut > 1 && !identified(pt, n, bound[cut[i]], bound[cut[i + 1]], rndv_index()))
                m.set[i].alpha_rndv = m.set[i + 1 < ncut ? i + 1 : i - 1].alpha_rndv;
    *model = m;
    return ncut;
}

/* the model's coefficient of each constant, and the bytes that pick its
 * set, for one call: its algorithm's own formula at unit constants */
static void coefficients(point_t *pt, dpc_coll_t coll, int p)
{
    v_counts_t vc;
    dpc_coll_args_t a = args_for(coll, p, pt->bytes, vc);
    pt->cb = dpc_coll_footprint(&a);
    pt->p = p;
    for (int j = 0; j < NCONST; j++) {
        double unit[NCONST] = {0};
        unit[j] = 1;
        dpc_cost_params_t u = params_of(unit);
        pt->k[j] = dpc_cost_of(pt->al, &a, &u);
    }
}

static const dpc_coll_t colls[] = {DPC_ALLREDUCE, DPC_REDUCE_SCATTER_BLOCK, DPC_ALLGATHER, DPC_BCAST,
                                    DPC_ALLTOALL};
/* one run measures about 410 (dpcoll_bench -a all -f 2, 432); -r takes
 * several runs' measurements (one -r per file, or files concatenated under
 * one header), which a fit averages over the machine's speed changes: this
 * many in all (docs/bench/fit holds twelve runs, 4392) */
enum { MAXPT = 8192 };

/* The measured choice of m for a point's call, or NULL (as the shim asks:
 * one-sided transfers on one node) */
static const dpc_algo_t *rule_for_point(const point_t *x, const dpc_cost_model_t *m)
{
    if (!m || m->nrules == 0)
        return NULL;
    v_counts_t vc;
    dpc_coll_args_t a = args_for(x->al->coll, x->p, x->bytes, vc);
    a.one_sided = true;
    a.nonblocking = x->calls == DPC_CALLS_NONBLOCKING;
    return dpc_cost_rule_for(&a, m);
}

/* How well a model chooses, on measurements of several algorithms of one
 * call (collective, ranks, size, kind of call, in one run): the measured
 * time of the algorithm it picks (its measured choice there, if m has one;
 * else the one it predicts fastest) over the fastest one's. This, not the
 * error of its predictions, is what a program feels; a model can be off
 * by half on every algorithm and still pick the best. */
static void report_choices(const point_t *pt, int n, const double *pred, const dpc_cost_model_t *m,
                           const char *who)
{
    bool *seen = calloc((size_t)n + 1, sizeof(bool));
    int calls = 0, over = 0, wi = -1, wb = -1;
    double logsum = 0, worst = 0;
    for (int i = 0; i < n && seen; i++) {
        if (seen[i])
            continue;
        int best = i, chosen = i, algos = 0;
        for (int j = i; j < n; j++) {
            if (seen[j] || pt[j].run != pt[i].run || pt[j].p != pt[i].p ||
                pt[j].al->coll != pt[i].al->coll || pt[j].bytes != pt[i].bytes ||
                pt[j].calls != pt[i].calls)
                continue;
            seen[j] = true;
            algos++;
            if (pt[j].t < pt[best].t)
                best = j;
            if (pred[j] < pred[chosen])
                chosen = j;
        }
        /* (a measured choice of m's, where it was measured) */
        const dpc_algo_t *ruled = rule_for_point(&pt[i], m);
        for (int j = i; j < n && ruled; j++)
            if (pt[j].al == ruled && pt[j].run == pt[i].run && pt[j].p == pt[i].p &&
                pt[j].bytes == pt[i].bytes && pt[j].calls == pt[i].calls)
                chosen = j;
        if (algos < 2)
            continue;
        double ratio = pt[chosen].t / pt[best].t;
        calls++;
        logsum += log(ratio);
        over += ratio > 1.1;
        if (ratio > worst) {
            worst = ratio;
            wi = chosen;
            wb = best;
        }
    }
    free(seen);
    if (calls == 0)
        return;
    printf("%s, on %d calls measured with two algorithms or more: %.3fx the fastest's "
           "time (geometric mean); %d beyond 1.1x", who, calls, exp(logsum / calls), over);
    if (wi >= 0 && worst > 1)
        printf("; the worst %.2fx (%s, %d ranks, %zu bytes: %s, the fastest %s)", worst,
               dpc_coll_name(pt[wi].al->coll), pt[wi].p, pt[wi].bytes, pt[wi].al->name,
               pt[wb].al->name);
    printf("\n");
}

static bool same_call(const point_t *x, const point_t *y)
{
    return x->al == y->al && x->p == y->p && x->bytes == y->bytes && x->calls == y->calls;
}

/* Several runs (-r files): how far one run predicts another on this
 * machine. Each measurement against the median of the same call's times
 * (collective, algorithm, ranks, bytes) in the other runs: a model prices
 * a call alike in every run, and the other runs' median is the best such
 * price that knows the call alone, so a model of the machine can expect
 * about this and hardly more. On the 2-core VM the built-in constants were
 * fitted on (session 43), docs/bench/fit/check's first four -t runs came
 * within 30% of each other on 1289 of 1728 rows (the model: 1228), the
 * next four on 1663 (1473), its four without -t on 1411 (1224). The same
 * for choices: the algorithm fastest in the other runs, as this run
 * measured it, over this run's fastest (docs/bench/np2_model_check.txt). */
static void report_repeatability(const point_t *pt, int n, int runs)
{
    if (runs < 2)
        return;
    point_t *sub = malloc(((size_t)n + 1) * sizeof(point_t));
    double *loo = malloc(((size_t)n + 1) * sizeof(double));
    double *others = malloc(((size_t)n + 1) * sizeof(double));
    if (!sub || !loo || !others)
        fprintf(stderr, "dpcoll_tune: out of memory comparing the runs\n");
    int m = 0, within = 0;
    for (int i = 0; i < n && sub && loo && others; i++) {
        int k = 0;
        for (int j = 0; j < n; j++)
            if (pt[j].run != pt[i].run && same_call(&pt[j], &pt[i]))
                others[k++] = pt[j].t;   /* (a run that measured a call twice: both count) */
        if (k == 0)
            continue;
        qsort(others, (size_t)k, sizeof(double), cmpd);
        sub[m] = pt[i];
        loo[m] = k % 2 ? others[k / 2] : (others[k / 2 - 1] + others[k / 2]) / 2;
        within += fabs(loo[m] - pt[i].t) <= TOLERANCE * pt[i].t;
        m++;
    }
    if (m > 0) {
        printf("the %d runs against each other: %d of %d measurements within 30%% of the median "
               "of the other runs' times of the same call (what no model of this machine can "
               "expect to beat by much)\n", runs, within, m);
        report_choices(sub, m, loo, NULL, "the other runs' fastest algorithm as the choice");
    }
    free(others);
    free(loo);
    free(sub);
}

/* Measured choices: where an algorithm ran faster than the constants'
 * pick, the tune file says to take it ("choose" lines, dpc_cost_rule_t).
 * No set of constants ranks the algorithms right on every host (the model
 * has no term for what made the direct allreduce 1.2-1.8x faster than
 * Rabenseifner at 512 KiB-2 MiB on one VM and slower on another), and what
 * was measured on this one is the better guide here. "Faster" is three
 * conditions, on the runs that measured both algorithms (medians over
 * runs; a run is one -r file):
 *  - by CHOICE_MARGIN or more, the median of one kind of buffers (touched
 *    or as left, point_t.buffers): the same algorithm's time moved by 10%
 *    and more between runs minutes apart on the reference VM, so a smaller
 *    lead is no lead;
 *  - and no slower by the median of each kind of buffers measured: a
 *    program's buffers are one kind or the other, and which algorithm
 *    wins can differ between them (session 43: the all-to-all at 1 MiB,
 *    pairwise 1.2x faster touched, not as left);
 *  - and faster in at least three runs of every four (CHOICE_WINS): on a
 *    VM whose speed moves by 30% in spells, "in every run" threw out, with
 *    a dozen runs, choices that held in an A/B run afterwards (session 43
 *    made them by hand: allreduce direct at 256 KiB-4 MiB, reduce-scatter
 *    recursive halving at 4-8 MiB), while one or two runs still have to
 *    agree throughout.
 * Each choice spans the sizes around the ones that measured it, to the
 * geometric midpoints with the neighbouring sizes measured (not beyond the
 * largest and smallest); neighbours with the same winner make one range. */
#define CHOICE_MARGIN 0.10
#define CHOICE_WINS 0.75

/* a call's bytes as the shim counts them (dpc_coll_bytes) */
static size_t call_bytes(dpc_coll_t coll, int p, size_t bytes)
{
    v_counts_t vc;
    dpc_coll_args_t a = args_for(coll, p, bytes, vc);
    return dpc_coll_bytes(&a);
}

/* The median of t over the runs of buffers kind b that timed both
 * algorithms (tb and tp > 0), in *med, using scratch; false where none did. */
static bool kind_median(const double *t, const double *tb, const double *tp, const int *kind,
                        int runs, int b, double *scratch, double *med)
{
    int k = 0;
    for (int r = 0; r < runs; r++)
        if (tb[r] > 0 && tp[r] > 0 && kind[r] == b)
            scratch[k++] = t[r];
    if (k)
        *med = dpc_autotune_median(scratch, k);
    return k > 0;
}

/* The winner of one call (coll, p, bytes) over the runs, or NULL where the
 * constants' pick (least pred) stands; *gain: the pick's median time over
 * the winner's. */
static const dpc_algo_t *measured_winner(const point_t *pt, int n, const double *pred,
                                         const dpc_cost_model_t *m, dpc_coll_t coll, int p,
                                         size_t bytes, unsigned calls, int runs, double *gain)
{
    const dpc_algo_t *ruled = NULL;   /* (m's own measured choice, if it has one here) */
    const dpc_algo_t *algos[64];
    double med[64], pr[64];
    int na = 0;
    double *t = malloc(((size_t)n + 1) * sizeof(double));
    for (int i = 0; i < n && t; i++) {
        if (pt[i].al->coll != coll || pt[i].p != p || pt[i].bytes != bytes ||
            pt[i].calls != calls)
            continue;
        int a = 0;
        while (a < na && algos[a] != pt[i].al)
            a++;
        if (a < na || na == 64)
            continue;
        int k = 0;
        for (int j = i; j < n; j++)
            if (pt[j].al == pt[i].al && pt[j].p == p && pt[j].bytes == bytes &&
                pt[j].calls == calls)
                t[k++] = pt[j].t;
        if (!ruled)
            ruled = rule_for_point(&pt[i], m);
        algos[na] = pt[i].al;
        pr[na] = pred[i];
        med[na++] = dpc_autotune_median(t, k);   /* (k >= 1: pt[i] itself) */
    }
    free(t);
    if (na < 2)
        return NULL;
    int pick = 0, best = 0;
    for (int a = 1; a < na; a++) {
        if (pr[a] < pr[pick])
            pick = a;
        if (med[a] < med[best])
            best = a;
    }
    for (int a = 0; a < na; a++)
        if (algos[a] == ruled)
            pick = a;
    if (best == pick)
        return NULL;
    /* each run's time of both (a run that measured a call twice: its last) */
    double *tb = malloc(3 * ((size_t)runs + 1) * sizeof(double));
    int *kind = malloc(((size_t)runs + 1) * sizeof(int));
    if (!tb || !kind) {
        free(tb);
        free(kind);
        return NULL;
    }
    double *tp = tb + runs + 1, *tk = tp + runs + 1;
    for (int r = 0; r < runs; r++) {
        tb[r] = tp[r] = -1;
        kind[r] = BUF_UNSAID;
        for (int i = 0; i < n; i++)
            if (pt[i].run == r && pt[i].p == p && pt[i].bytes == bytes && pt[i].calls == calls) {
                if (pt[i].al == algos[best])
                    tb[r] = pt[i].t, kind[r] = pt[i].buffers;
                if (pt[i].al == algos[pick])
                    tp[r] = pt[i].t;
            }
    }
    int both = 0, wins = 0;
    bool clear_lead = false, slower_somehow = false;
    for (int r = 0; r < runs; r++) {
        if (!(tb[r] > 0 && tp[r] > 0))
            continue;
        both++;
        wins += tb[r] < tp[r];
    }
    for (int b = BUF_UNSAID; b <= BUF_TOUCHED; b++) {
        double mb, mp;   /* (this kind's runs: the best's median, the pick's) */
        if (!kind_median(tb, tb, tp, kind, runs, b, tk, &mb))
            continue;
        kind_median(tp, tb, tp, kind, runs, b, tk, &mp);
        clear_lead |= mb < (1 - CHOICE_MARGIN) * mp;
        slower_somehow |= mb > mp;
    }
    free(kind);
    free(tb);
    if (!clear_lead || slower_somehow || both == 0 || wins < CHOICE_WINS * both)
        return NULL;
    *gain = med[pick] / med[best];
    return algos[best];
}

/* Adds the measured choices to m and says what they are; returns how many. */
static int add_choices(const point_t *pt, int n, const double *pred, int runs, dpc_cost_model_t *m,
                       const dpc_coll_t *which, int nwhich)
{
    int added = 0, left_out = 0;
    for (int ci = 0; ci < nwhich; ci++) {
        /* every rank count and kind of call, and the sizes measured of
         * each, in order */
        for (int i = 0; i < n; i++) {
            if (pt[i].al->coll != which[ci])
                continue;
            bool first_p = true;   /* (each rank count and kind of call once) */
            for (int j = 0; j < i && first_p; j++)
                first_p = !(pt[j].al->coll == which[ci] && pt[j].p == pt[i].p &&
                            pt[j].calls == pt[i].calls);
            if (!first_p)
                continue;
            int p = pt[i].p;
            unsigned calls = pt[i].calls;
            size_t sizes[256];
            int ns = 0;
            for (int j = 0; j < n; j++) {
                if (pt[j].al->coll != which[ci] || pt[j].p != p || pt[j].calls != calls)
                    continue;
                int k = 0;
                while (k < ns && sizes[k] != pt[j].bytes)
                    k++;
                if (k == ns && ns < 256)
                    sizes[ns++] = pt[j].bytes;
            }
            qsort(sizes, (size_t)ns, sizeof(size_t), cmp_size);
            const dpc_algo_t *win[256];
            double gain[256];
            for (int k = 0; k < ns; k++)
                win[k] = measured_winner(pt, n, pred, m, which[ci], p, sizes[k], calls, runs,
                                         &gain[k]);
            for (int k = 0; k < ns;) {
                if (!win[k]) {
                    k++;
                    continue;
                }
                int e = k;
                while (e + 1 < ns && win[e + 1] == win[k])
                    e++;
                size_t b0 = call_bytes(which[ci], p, sizes[k]);
                size_t b1 = call_bytes(which[ci], p, sizes[e]);
                size_t lo = k > 0 ? (size_t)sqrt((double)call_bytes(which[ci], p, sizes[k - 1]) *
                                                 (double)b0) + 1 : b0;
                size_t hi = e + 1 < ns ? (size_t)sqrt((double)b1 *
                                                      (double)call_bytes(which[ci], p, sizes[e + 1]))
                                       : b1;
                char why[120];
                int nodes = across_nodes >= 2 && p == world_size ? across_nodes : 1;
                if (dpc_cost_rule_add(m, (int)which[ci], p, nodes, lo, hi, win[k], calls, why,
                                      sizeof(why)) == DPC_OK) {
                    added++;
                    printf("measured choice: %s, %d ranks on %d node%s, %zu-%zu bytes, %s calls: "
                           "%s (the constants' pick took", dpc_coll_name(which[ci]), p, nodes,
                           nodes > 1 ? "s" : "", lo, hi, dpc_calls_name(calls), win[k]->name);
                    for (int q = k; q <= e; q++)
                        printf("%s %.2fx as long at %zu", q > k ? "," : "", gain[q], sizes[q]);
                    printf(")\n");
                } else {
                    left_out++;
                }
                k = e + 1;
            }
        }
    }
    if (left_out)
        printf("%d more measured choices left out: a tune file holds %d\n", left_out,
               DPC_COST_RULES);
    return added;
}

/* Buffers for one measurement, fresh and of its own size, as a program's
 * calls of different sizes have: what one measurement's calls did to the
 * pages (libdpcoll makes reused buffers of whole 2 MiB pages huge) must
 * not carry into the next, nor a large call's into a small one's prefix
 * of the same buffer. */
static void fresh_buffers(float **in, float **out, size_t bytes, int p)
{
    *in = malloc(bytes + 64);
    *out = malloc(bytes * (size_t)p + 64);
    if (!*in || !*out) {
        fprintf(stderr, "dpcoll_tune: out of memory for %zu bytes\n", bytes);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < bytes / sizeof(float); i++)
        (*in)[i] = (float)(i % 7);
    memset(*out, 0, bytes * (size_t)p + 64);
}

/* times every algorithm of colls at every power of two up to maxb */
static int measure_all(point_t *pt, int p, size_t maxb)
{
    int n = 0;
    for (unsigned ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ci++)
        for (const dpc_algo_t *const *al = dpc_algos(); *al; al++) {
            if ((*al)->coll != colls[ci])
                continue;
            /* (across nodes the one-sided algorithms, and some others, do
             * not run: the shim would run the model's pick under their name) */
            v_counts_t vc0;
            dpc_coll_args_t a0 = args_for(colls[ci], p, 8, vc0);
            if (across_nodes >= 2 && !dpc_algo_applies(*al, &a0))
                continue;
            dpcoll_set_algorithm(dpc_coll_name(colls[ci]), (*al)->name);
            /* every power of two (the sizes dpcoll_bench -f 2 checks the model at) */
            for (size_t bytes = 8; bytes <= maxb && n < MAXPT; bytes *= 2) {
                v_counts_t vc;
                dpc_coll_args_t a = args_for(colls[ci], p, bytes, vc);
                int reps = bytes >= (1u << 20) ? 9 : bytes >= (32u << 10) ? 51 : 201;
                pt[n].al = *al;
                pt[n].calls = DPC_CALLS_BLOCKING;
                pt[n].buffers = touch_buffers ? BUF_TOUCHED : BUF_AS_LEFT;
                pt[n].bytes = bytes;
                float *in, *out;
                fresh_buffers(&in, &out, bytes, p);
                pt[n].t = time_call(colls[ci], &a, in, out, reps);
                free(in);
                free(out);
                coefficients(&pt[n], colls[ci], p);
                n++;
            }
            dpcoll_set_algorithm(dpc_coll_name(colls[ci]), "auto");
        }
    return n;
}

/* How much slower pushing must measure, at every size from some size up,
 * for the limit to be put below that size: less is the machine's noise
 * (two runs of one setting, minutes apart, differ by more) */
#define PUSH_LOSS 1.05

/* DPCOLL_PUSH_MAX measured: the direct allgather and all-to-all timed
 * writing into their peers and reading from them (dpcoll_set_push_max) at
 * every power of two of output from DPC_PUSH_MIN to maxb, the two ways in
 * turns, three times each (so that a change of the machine's speed hits
 * both), the median of each kept. Which is faster is the machine's: on
 * one 2-core VM reading was faster beyond the L2 cache, on another writing
 * at every size (src/dpc_config.h). Returns dpc_push_limit's for the
 * geometric mean of the two collectives' push/pull ratios. Rank 0 prints
 * the ratios. */
static size_t measure_push_max(int p, size_t maxb, int rank)
{
    static const dpc_coll_t way_colls[] = {DPC_ALLGATHER, DPC_ALLTOALL};
    enum { ROUNDS = 3, MAXSIZES = 48 };
    size_t sizes[MAXSIZES];
    double ratio[MAXSIZES];
    int ns = 0;
    for (size_t bytes = DPC_PUSH_MIN; bytes <= maxb && ns < MAXSIZES; bytes *= 2, ns++) {
        float *in, *out;
        fresh_buffers(&in, &out, bytes, p);
        double logr = 0;
        int nc = 0;
        for (int ci = 0; ci < 2; ci++) {
            dpc_coll_t c = way_colls[ci];
            if (c == DPC_ALLTOALL && bytes > DPC_ALLTOALL_PUSH_UP_TO)
                continue;   /* (it reads beyond, whatever the limit) */
            v_counts_t vc;
            dpc_coll_args_t a = args_for(c, p, bytes, vc);
            /* (args_for's arguments are the pricing's; the call's push
             * limit is the one set here) */
            double t[2][ROUNDS];
            dpcoll_set_algorithm(dpc_coll_name(c), "direct");
            for (int r = 0; r < ROUNDS; r++)
                for (int w = 0; w < 2; w++) {
                    int way = (r + w) % 2;   /* 0: push, 1: pull; who goes first alternates */
                    dpcoll_set_push_max(way == 0 ? DPC_PUSH_MAX_ALL : 0);
                    t[way][r] = time_call(c, &a, in, out, 5);
                }
            dpcoll_set_algorithm(dpc_coll_name(c), "auto");
            qsort(t[0], ROUNDS, sizeof(double), cmpd);
            qsort(t[1], ROUNDS, sizeof(double), cmpd);
            logr += log(t[0][ROUNDS / 2] / t[1][ROUNDS / 2]);
            nc++;
        }
        sizes[ns] = bytes;
        ratio[ns] = exp(logr / nc);
        free(in);
        free(out);
    }
    size_t limit = dpc_push_limit(sizes, ratio, ns, PUSH_LOSS, DPC_PUSH_MIN);
    if (rank == 0) {
        printf("writing into peers against reading (direct allgather and all-to-all, the "
               "all-to-all up to %zu bytes; time pushing / pulling, geometric mean):\n",
               (size_t)DPC_ALLTOALL_PUSH_UP_TO);
        for (int i = 0; i < ns; i++)
            printf("  %10zu bytes  %.3f%s\n", sizes[i], ratio[i],
                   ratio[i] > PUSH_LOSS ? "  (reading faster)" : "");
        if (limit == DPC_PUSH_MAX_ALL)
            printf("push_max: no limit (writing not %.0f%% slower at the largest sizes)\n\n",
                   (PUSH_LOSS - 1) * 100);
        else
            printf("push_max = %zu\n\n", limit);
    }
    return limit;
}

/* -r: the measurements of an earlier run (a points file this tool wrote, or
 * a dpcoll_bench CSV: time_us, its auto: rows left out),
 * their coefficients computed again from the model as it is now, so that a
 * change of formula is fitted to the same measurements; p is the file's
 * ranks column, or `ranks` where it has none. Rows of the v-variants that
 * can have measured choices (vcolls) go to vpt, *nv more of them (not
 * fitted); alltoallv's are left out. Returns the points, or -1 with a
 * message. */
static int read_points(const char *path, int run, int ranks, point_t *pt, int room, int *p_out,
                       point_t *vpt, int vroom, int *nv)
{
    FILE *f = fopen(path, "r");
    char line[1024];
    if (!f || !fgets(line, sizeof(line), f)) {
        fprintf(stderr, "dpcoll_tune: cannot read %s\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    /* the header names the columns: the ones needed, and the file's own
     * coefficients, to say whether the model has changed since */
    enum { COLL, RANKS, ALGO, BYTES, SECONDS, MICROS, CALLS, BUFFERS, NCOL };
    static const char *want[NCOL] = {"collective", "ranks", "algorithm", "bytes", "seconds",
                                     "time_us", "calls", "buffers"};
    int col[NCOL] = {-1, -1, -1, -1, -1, -1, -1, -1}, kcol[NCONST], ncols = 0;
    for (int j = 0; j < NCONST; j++)
        kcol[j] = -1;
    for (char *tok = strtok(line, ",\n"); tok; tok = strtok(NULL, ",\n"), ncols++) {
        for (int c = 0; c < NCOL; c++)
            if (!strcmp(tok, want[c]))
                col[c] = ncols;
        for (int j = 0; j < NCONST; j++)
            if (!strncmp(tok, "k_", 2) && !strcmp(tok + 2, dpc_cost_fields[j].key))
                kcol[j] = ncols;
    }
    /* a dpcoll_bench CSV (-o) times its rows in microseconds */
    int tcol = col[SECONDS] >= 0 ? col[SECONDS] : col[MICROS];
    double tunit = col[SECONDS] >= 0 ? 1 : 1e-6;
    if (col[COLL] < 0 || col[ALGO] < 0 || col[BYTES] < 0 || tcol < 0 ||
        (col[RANKS] < 0 && ranks < 1)) {
        fprintf(stderr, "dpcoll_tune: %s: needs columns collective, algorithm, bytes and seconds "
                "(or time_us)%s\n", path, col[RANKS] < 0 ? ", and ranks (or -p P)" : "");
        fclose(f);
        return -1;
    }
    int n = 0, lineno = 1, changed = 0, p = ranks, skipped = 0, skipped_v = 0, kept_v = 0;
    while (fgets(line, sizeof(line), f)) {
        char *field[64] = {0};
        int nf = 0;
        lineno++;
        for (char *tok = strtok(line, ",\n"); tok && nf < 64; tok = strtok(NULL, ",\n"))
            field[nf++] = tok;
        if (nf == 0)
            continue;   /* (blank) */
        if (nf >= ncols && !strncmp(field[col[ALGO]], "auto:", 5)) {
            skipped++;   /* (dpcoll_bench's row of the model's choice: measured again by name) */
            continue;
        }
        if (nf < ncols || n == room || *nv == vroom) {
            if (n == room || *nv == vroom)
                fprintf(stderr, "dpcoll_tune: %s line %d: more measurements than the tool takes "
                                "(%d in all)\n", path, lineno, (int)MAXPT);
            else
                fprintf(stderr, "dpcoll_tune: %s line %d: too few columns\n", path, lineno);
            fclose(f);
            return -1;
        }
        int coll = dpc_coll_from_name(field[col[COLL]]);
        const dpc_algo_t *al = coll < 0 ? NULL : dpc_algo_find((dpc_coll_t)coll, field[col[ALGO]]);
        if (col[RANKS] >= 0)
            p = atoi(field[col[RANKS]]);
        if (!al || p < 1) {
            fprintf(stderr, "dpcoll_tune: %s line %d: unknown collective or algorithm '%s %s', or "
                    "bad ranks\n", path, lineno, field[col[COLL]], field[col[ALGO]]);
            fclose(f);
            return -1;
        }
        bool fitted = false;   /* (the v-variants' rows: dpcoll_bench's unequal shares;
                                  the fit is of the block collectives) */
        for (unsigned ci = 0; ci < sizeof(colls) / sizeof(colls[0]); ci++)
            fitted |= (int)colls[ci] == coll;
        if (!fitted && !(is_vcoll(coll) && p <= TUNE_MAX_V_RANKS)) {
            skipped_v++;
            continue;
        }
        point_t *x = fitted ? &pt[n] : &vpt[*nv];
        x->al = al;
        x->run = run;
        /* (blocking where the file does not say: this tool's own and older
         * dpcoll_bench files measured blocking calls) */
        x->calls = DPC_CALLS_BLOCKING;
        if (col[CALLS] >= 0) {
            const char *k = field[col[CALLS]];
            x->calls = !strcmp(k, "blocking") ? DPC_CALLS_BLOCKING
                          : !strcmp(k, "nonblocking") || !strcmp(k, "persistent")
                              ? DPC_CALLS_NONBLOCKING
                              : 0;
            if (!x->calls) {
                fprintf(stderr, "dpcoll_tune: %s line %d: calls must be blocking, nonblocking or "
                        "persistent, not '%s'\n", path, lineno, k);
                fclose(f);
                return -1;
            }
        }
        x->buffers = BUF_UNSAID;   /* (files before session 44) */
        if (col[BUFFERS] >= 0) {
            const char *k = field[col[BUFFERS]];
            x->buffers = !strcmp(k, "touched") ? BUF_TOUCHED
                            : !strcmp(k, "as_left") ? BUF_AS_LEFT : BUF_UNSAID;
            if (strcmp(k, "touched") && strcmp(k, "as_left") && strcmp(k, "unsaid")) {
                fprintf(stderr, "dpcoll_tune: %s line %d: buffers must be touched, as_left or "
                        "unsaid, not '%s'\n", path, lineno, k);
                fclose(f);
                return -1;
            }
        }
        x->bytes = strtoull(field[col[BYTES]], NULL, 10);
        x->t = strtod(field[tcol], NULL) * tunit;
        if (x->bytes == 0 || !(x->t > 0) || !isfinite(x->t)) {
            fprintf(stderr, "dpcoll_tune: %s line %d: bytes and seconds must be positive\n", path,
                    lineno);
            fclose(f);
            return -1;
        }
        coefficients(x, (dpc_coll_t)coll, p);
        bool differs = false;
        for (int j = 0; j < NCONST; j++) {   /* (a constant the file lacks: newer) */
            double was = kcol[j] >= 0 ? strtod(field[kcol[j]], NULL) : 0;
            differs |= fabs(was - x->k[j]) > 1e-6 * (fabs(was) + 1);
        }
        changed += differs && fitted;
        if (fitted)
            n++;
        else
            (*nv)++, kept_v++;
    }
    fclose(f);
    bool any_k = false;
    for (int j = 0; j < NCONST; j++)
        any_k |= kcol[j] >= 0;
    printf("read %d measurements on %d ranks from %s", n, p, path);
    if (skipped)
        printf(" (%d row%s of the model's choice left out)", skipped, skipped == 1 ? "" : "s");
    if (kept_v)
        printf(" (%d row%s of reduce_scatter and allgatherv kept out of the fit, which takes the "
               "five collectives of equal blocks: for their measured choices)", kept_v,
               kept_v == 1 ? "" : "s");
    if (skipped_v)
        printf(" (%d row%s of alltoallv left out: its counts are each rank's own, which the "
               "model does not price)", skipped_v, skipped_v == 1 ? "" : "s");
    if (any_k)   /* (a file this tool wrote: its coefficients say how the model priced them) */
        printf("; the model prices %d of them otherwise than when they were written", changed);
    printf("\n");
    *p_out = p;
    return n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    world_size = p;
    enum { MAXFILES = 64 };
    const char *refit[MAXFILES], *model_path = NULL;
    int nrefit = 0;
    int ranks = 0, argi = 1;
    bool choices = true;   /* -C: the constants only, no measured choices */
    size_t largest = 64u << 20;   /* -e */
    for (; argi < argc && argv[argi][0] == '-'; argi++) {
        if (!strcmp(argv[argi], "-r") && argi + 1 < argc && nrefit < MAXFILES)
            refit[nrefit++] = argv[++argi];
        else if (!strcmp(argv[argi], "-p") && argi + 1 < argc)
            ranks = atoi(argv[++argi]);
        else if (!strcmp(argv[argi], "-m") && argi + 1 < argc)
            model_path = argv[++argi];
        else if (!strcmp(argv[argi], "-u"))
            touch_buffers = 0;
        else if (!strcmp(argv[argi], "-C"))
            choices = false;
        else if (!strcmp(argv[argi], "-e") && argi + 1 < argc)
            largest = tool_parse_size(argv[++argi]);
        else {
            if (rank == 0)
                fprintf(stderr, "usage: mpiexec -n P dpcoll_tune [-u] [-C] [-e BYTES] [file [points.csv]]\n"
                                "       (-u: buffers left as the collectives leave them, not\n"
                                "        written before and read after each call;\n"
                                "        -C: constants only, no measured choices;\n"
                                "        -e: the largest size measured, 8 to 64M, default 64M)\n"
                                "       dpcoll_tune -r measured.csv [-r measured.csv ...] [-p P] [-C] [file [points.csv]]\n"
                                "       (measured.csv: a points file, or dpcoll_bench -o's CSV)\n"
                                "       dpcoll_tune -r measured.csv [-r measured.csv ...] [-p P] [-C] -m model.tune [file]\n"
                                "       (-m: that model checked; with a file, it is written there with\n"
                                "        the choices these measurements add, unless -C)\n");
            MPI_Finalize();
            return 2;
        }
    }
    if (largest < 8 || largest > (64u << 20)) {
        if (rank == 0)
            fprintf(stderr, "dpcoll_tune: -e takes a size from 8 to 64M bytes (K, M: 1024s)\n");
        MPI_Finalize();
        return 2;
    }
    if (model_path && !nrefit) {
        if (rank == 0)
            fprintf(stderr, "dpcoll_tune: -m checks a model against measurements read with -r\n");
        MPI_Finalize();
        return 2;
    }
    /* (-m with a file named: the model's constants and choices, with the
     * choices these measurements add) */
    bool out_named = argi < argc;
    const char *out_path = out_named ? argv[argi] : "dpcoll.tune";
    const char *points_path = argi + 1 < argc ? argv[argi + 1] : NULL;   /* the measurements, as CSV */
    dpc_config_t cfg;
    char err[256];
    dpc_config_defaults(&cfg);
    if (dpc_config_read(&cfg, err, sizeof(err)) != DPC_OK)
        dpc_config_defaults(&cfg);   /* (MPI_Init has said what is wrong) */
    /* the fit prices messages as a job with the default mailboxes does
     * (args_for: eager_max 0); the shim prices by the job's own limit */
    if (rank == 0 && (!cfg.shm || cfg.shm_max != DPC_DEFAULT_SHM_MAX))
        fprintf(stderr, "dpcoll_tune: warning: DPCOLL_SHM=0 or DPCOLL_SHM_MAX=%zu: the fit prices "
                        "messages beyond %u bytes as rendezvous, as jobs with the default "
                        "mailboxes do\n", cfg.shm_max, DPC_DEFAULT_SHM_MAX);
    long long pm = (long long)cfg.push_max;
    PMPI_Bcast(&pm, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    push_max = (size_t)pm;
    long long sb = (long long)cfg.seg_bytes;
    PMPI_Bcast(&sb, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    seg_bytes = (size_t)sb;
    size_t maxb = largest;
    /* a job on several nodes: the constants between them (fit_across), the
     * others those the job runs with, as the shim takes them */
    dpc_cost_model_t node_model = cfg.tune_file[0] ? cfg.cost : dpc_cost_model_one_node();
    world_node = calloc((size_t)p, sizeof(int));
    if (!nrefit && !model_path && world_node &&
        dpcoll_comm_nodes(MPI_COMM_WORLD, world_node, &world_eager) >= 2) {
        across_nodes = dpcoll_comm_nodes(MPI_COMM_WORLD, NULL, NULL);
        int *count = calloc((size_t)across_nodes, sizeof(int));
        for (int r = 0; count && r < p; r++)
            count[world_node[r]]++;
        world_node_ranks = count ? count[0] : 0;
        for (int k = 1; count && k < across_nodes; k++)
            world_node_ranks = count[k] == world_node_ranks ? world_node_ranks : 0;
        free(count);
        if (rank == 0)
            printf("%d ranks on %d nodes: fitting the constants between nodes; within a node "
                   "those of %s\n", p, across_nodes,
                   cfg.tune_file[0] ? cfg.tune_file : "the built-in model (DPCOLL_TUNE_FILE: "
                                                      "a file fitted on one node)");
    }
    point_t *pt = calloc(MAXPT, sizeof(point_t)), *vpt = calloc(MAXPT, sizeof(point_t));
    int n, nv = 0;   /* (vpt: the v-variants' rows, rank 0's, for measured choices) */
    if (nrefit) {   /* (several files: their measurements together, one fit) */
        n = 0;
        for (int i = 0; i < nrefit && rank == 0 && n >= 0; i++) {
            int got = read_points(refit[i], i, ranks, pt + n, MAXPT - n, &p, vpt, MAXPT, &nv);
            n = got < 0 ? -1 : n + got;
        }
        MPI_Bcast(&n, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (n < 0) {
            free(pt);
            free(vpt);
            MPI_Finalize();
            return 1;
        }
    } else {
        /* DPCOLL_PUSH_MAX unset: measured first, so that the direct
         * algorithms are timed (and priced) the way the file will have them
         * go; set: that limit, as the shim takes it */
        int measure = !getenv("DPCOLL_PUSH_MAX") &&   /* (rank 0's say, as pm's) */
                      across_nodes < 2;   /* (no one-sided algorithm across nodes) */
        PMPI_Bcast(&measure, 1, MPI_INT, 0, MPI_COMM_WORLD);
        if (measure) {
            push_max = measure_push_max(p, maxb, rank);
            dpcoll_set_push_max(push_max);
        }
        n = measure_all(pt, p, maxb);
    }
    dpc_cost_model_t m = {.from = {0}};
    int ncut;
    if (model_path) {   /* -m: a model to check, not one to fit */
        if (dpc_tune_read(model_path, &m, err, sizeof(err)) != DPC_OK) {
            if (rank == 0)
                fprintf(stderr, "dpcoll_tune: %s: %s\n", model_path, err);
            free(pt);
            free(vpt);
            MPI_Finalize();
            return 1;
        }
        ncut = dpc_cost_nsets(&m);
    } else if (across_nodes >= 2) {
        ncut = fit_across(pt, n, &node_model, &m);   /* (the node's push limit kept) */
    } else {
        ncut = fit_model(pt, n, &m);
        /* the push limit the measurements were taken (and priced) with;
         * none is "not given" (the shim's default, no limit) */
        m.push_max = push_max == DPC_PUSH_MAX_ALL ? 0 : push_max ? push_max : 1;
    }
    double *pred = calloc((size_t)n + 1, sizeof(double));   /* the model's time of each */
    double *vpred = calloc((size_t)nv + 1, sizeof(double));
    if (rank == 0 && (!pred || !vpred))
        fprintf(stderr, "dpcoll_tune: out of memory\n");
    if (rank == 0 && pred && vpred) {
        int within = 0;
        printf("%-22s %-20s %10s %12s %12s %8s\n", "collective", "algorithm", "bytes", "measured us",
               "model us", "error");
        for (int i = 0; i < n; i++) {
            int k = ncut - 1;
            while (k > 0 && pt[i].cb < m.from[k])
                k--;
            for (int j = 0; j < NCONST; j++)
                pred[i] += pt[i].k[j] * *dpc_cost_field(&m.set[k], j);
            double e = (pred[i] - pt[i].t) / pt[i].t;
            within += fabs(e) <= TOLERANCE;
            printf("%-22s %-20s %10zu %12.2f %12.2f %+7.0f%%\n", dpc_coll_name(pt[i].al->coll),
                   pt[i].al->name, pt[i].bytes, pt[i].t * 1e6, pred[i] * 1e6, e * 100);
        }
        char comment[600];
        if (model_path)
            snprintf(comment, sizeof(comment), "%s's constants, checked by dpcoll_tune -r %s%s on "
                     "%d ranks (%d of %d measurements within 30%% of the model); measured "
                     "choices added", model_path, refit[0], nrefit > 1 ? " ..." : "", p, within, n);
        else if (across_nodes >= 2)
            snprintf(comment, sizeof(comment), "between nodes fitted by dpcoll_tune%s on %d ranks "
                     "on %d nodes (%d of %d measurements within 30%% of the model); within a "
                     "node those of %s", !touch_buffers ? " -u" : "", p, across_nodes, within,
                     n, cfg.tune_file[0] ? cfg.tune_file : "the built-in model");
        else
            snprintf(comment, sizeof(comment), "fitted by dpcoll_tune%s%s%s%s on %d ranks; %d of "
                     "%d measurements within 30%% of the model", nrefit ? " -r " : "",
                     nrefit ? refit[0] : "", nrefit > 1 ? " ..." : "",
                     !nrefit && !touch_buffers ? " -u" : "", p, within, n);
        printf("\n");
        dpc_cost_model_print(stdout, &m, "");
        printf("%d of %d measurements within 30%% of the model%s%s\n", within, n,
               model_path ? " in " : "", model_path ? model_path : "");
        report_choices(pt, n, pred, model_path ? &m : NULL,
                       model_path && m.nrules ? "its choices (measured ones included)"
                                              : "its choices");
        /* the v-variants' rows: priced with their shares by the constants
         * (fitted or checked) as the shim would, for their choices */
        int vwithin = 0;
        for (int i = 0; i < nv; i++) {
            v_counts_t vc;
            dpc_coll_args_t a = args_for(vpt[i].al->coll, vpt[i].p, vpt[i].bytes, vc);
            vpred[i] = dpc_cost_of(vpt[i].al, &a, dpc_cost_regime(&m, &a));
            vwithin += fabs(vpred[i] - vpt[i].t) <= TOLERANCE * vpt[i].t;
        }
        if (nv) {
            printf("the v-variants (dpcoll_bench's shares, not fitted): %d of %d measurements "
                   "within 30%% of the model\n", vwithin, nv);
            report_choices(vpt, nv, vpred, model_path ? &m : NULL,
                           model_path && m.nrules ? "the v-variants' choices (measured ones "
                                                    "included)"
                                                  : "the v-variants' choices");
        }
        /* (fitted: the choices measured here, unless -C) */
        int runs = nrefit ? nrefit : 1, ncl = sizeof(colls) / sizeof(colls[0]);
        if ((!model_path || out_named) && choices && add_choices(pt, n, pred, runs, &m, colls, ncl))
            report_choices(pt, n, pred, &m, "its choices with the measured ones (on the "
                           "measurements that chose them)");
        int nvcl = sizeof(vcolls) / sizeof(vcolls[0]);
        if ((!model_path || out_named) && choices &&
            add_choices(vpt, nv, vpred, runs, &m, vcolls, nvcl))
            report_choices(vpt, nv, vpred, &m, "the v-variants' choices with the measured ones "
                           "(on the measurements that chose them)");
        report_repeatability(pt, n, nrefit);
        if (model_path && !out_named)
            points_path = out_path = NULL;   /* (checked, not fitted: nothing to write) */
        FILE *pf = points_path ? fopen(points_path, "w") : NULL;
        if (pf) {   /* every measurement and its coefficients, to fit otherwise */
            fprintf(pf, "collective,ranks,algorithm,bytes,buffer_bytes,seconds");
            for (int j = 0; j < NCONST; j++)
                fprintf(pf, ",k_%s", dpc_cost_fields[j].key);
            fprintf(pf, ",calls,buffers\n");
            for (int i = 0; i < n; i++) {
                fprintf(pf, "%s,%d,%s,%zu,%zu,%.9e", dpc_coll_name(pt[i].al->coll), pt[i].p,
                        pt[i].al->name, pt[i].bytes, pt[i].cb, pt[i].t);
                for (int j = 0; j < NCONST; j++)
                    fprintf(pf, ",%.9e", pt[i].k[j]);
                fprintf(pf, ",%s,%s\n", pt[i].calls == DPC_CALLS_NONBLOCKING ? "nonblocking"
                                                                             : "blocking",
                        buffers_name(pt[i].buffers));
            }
            fclose(pf);
            printf("wrote the measurements to %s\n", points_path);
        } else if (points_path) {
            printf("could not write %s\n", points_path);
        }
        if (out_path && dpc_tune_write(out_path, &m, comment) == DPC_OK)
            printf("wrote %s: use it with DPCOLL_TUNE_FILE=%s\n", out_path, out_path);
        else if (out_path)
            printf("could not write %s\n", out_path);
    }
    free(pred);
    free(vpred);
    free(pt);
    free(vpt);
    free(world_node);
    MPI_Finalize();
    return 0;
}
