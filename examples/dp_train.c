/*
 * dp_train: data-parallel training of a small MLP in plain C + MPI, the way
 * DDP does it, with every claim checked in the same run.
 *
 *  - The model: L fully connected layers (tanh between them), a scalar
 *    output, mean squared error against sin(sum of inputs); hand-written
 *    backprop in double precision. Every rank starts from the same weights.
 *  - Each step's global batch (the same on every rank, drawn from a shared
 *    seed) is split across ranks in UNEQUAL shards; each rank splits its
 *    shard into micro-batches and accumulates gradient SUMS over them.
 *  - On the last micro-batch, each layer's gradient goes out as soon as the
 *    backward pass has produced it: the flat gradient is cut into buckets
 *    (--bucket bytes, last layer first, like DDP), and each bucket is posted
 *    with MPI_Iallreduce (sum, in place) the moment it is complete, while the
 *    backward pass goes on to the earlier layers. One all-reduce per
 *    optimizer step; then the sum is divided by the GLOBAL example count
 *    (weighting every shard by its size) and plain SGD updates the weights.
 *  - The loss rides along as one more element of the last bucket.
 *
 * Checks (exit status 1 if any fails):
 *  1. replicas bitwise identical after training (every rank compares its
 *     weights with rank 0's);
 *  2. the final weights equal those of single-process full-batch training
 *     (rank 0 trains that reference in the same run) to a tolerance;
 *  3. with unequal shards, averaging shard MEANS (unweighted) is wrong by
 *     ~1e-1 while the size-weighted sum/N is right to ~1e-16;
 *  4. the same training with the MPI library's own PMPI_Iallreduce, for the
 *     step time with and without libdpcoll (same run, same data).
 */
#include <getopt.h>
#include <stdbool.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct {
    int steps, batch, micro, layers, hidden, din;
    size_t bucket_bytes;
    double lr;
    int print_every;
} opts_t;

static int rank, nranks;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- deterministic data: the same on every rank ---- */

static uint64_t mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

static double gauss(uint64_t key)   /* standard normal from a key */
{
    double u1 = ((double)(mix(key) >> 11) + 0.5) / 9007199254740992.0;
    double u2 = ((double)(mix(key ^ 0xABCDEFull) >> 11) + 0.5) / 9007199254740992.0;
    return sqrt(-2.0 * log(u1)) * cos(6.283185307179586 * u2);
}

/* example e of the pool: inputs x[din], target y */
static void example(long e, int din, double *x, double *y)
{
    double s = 0;
    for (int i = 0; i < din; i++) {
        x[i] = gauss((uint64_t)e * 1000003u + (uint64_t)i);
        s += x[i];
    }
    *y = sin(s / sqrt((double)din));
}

/* the global batch of a step: example ids (a shared pseudo-random window) */
static long batch_example(int step, int i, int batch)
{
    return (long)(mix((uint64_t)step * 7919u) % 100000u) + (long)i * 3 + (long)step * batch;
}

/* this rank's shard of a batch: sizes proportional to rank+1 (unequal on
 * purpose), every example in exactly one shard */
static void shard(int batch, int r, int p, int *first, int *count)
{
    long wsum = (long)p * (p + 1) / 2, before = (long)r * (r + 1) / 2;
    *first = (int)(batch * before / wsum);
    *count = (int)(batch * (before + r + 1) / wsum) - *first;
}

/* ---- the model ---- */

typedef struct {
    int L, *dim;            /* dim[0] inputs ... dim[L] = 1 output */
    double **W, **b;        /* W[l]: dim[l] x dim[l+1], row-major */
    size_t nparams;
} model_t;

static void model_init(model_t *m, const opts_t *o)
{
    m->L = o->layers;
    m->dim = malloc(sizeof(int) * (size_t)(m->L + 1));
    m->dim[0] = o->din;
    for (int l = 1; l < m->L; l++)
        m->dim[l] = o->hidden;
    m->dim[m->L] = 1;
    m->W = malloc(sizeof(double *) * (size_t)m->L);
    m->b = malloc(sizeof(double *) * (size_t)m->L);
    m->nparams = 0;
    for (int l = 0; l < m->L; l++) {
        size_t n = (size_t)m->dim[l] * (size_t)m->dim[l + 1];
        m->W[l] = malloc(sizeof(double) * n);
        m->b[l] = calloc((size_t)m->dim[l + 1], sizeof(double));
        double scale = 1.0 / sqrt((double)m->dim[l]);
        for (size_t i = 0; i < n; i++)   /* the same seed everywhere: same start */
            m->W[l][i] = scale * gauss(0x5EEDull * 1000000007u + (uint64_t)l * 100000000u + i);
        m->nparams += n + (size_t)m->dim[l + 1];
    }
}

static void model_copy(model_t *dst, const model_t *src)
{
    for (int l = 0; l < src->L; l++) {
        memcpy(dst->W[l], src->W[l], sizeof(double) * (size_t)src->dim[l] * (size_t)src->dim[l + 1]);
        memcpy(dst->b[l], src->b[l], sizeof(double) * (size_t)src->dim[l + 1]);
    }
}

static void model_free(model_t *m)
{
    for (int l = 0; l < m->L; l++) {
        free(m->W[l]);
        free(m->b[l]);
    }
    free(m->W);
    free(m->b);
    free(m->dim);
}

/* The flat gradient, in the order backward produces it: layer L-1 first
 * (W then b), then L-2, ...; one extra slot at the end for the loss. */
typedef struct {
    double *flat;
    size_t n;                /* gradient elements + 1 */
    size_t *offW, *offb;     /* per layer */
} grads_t;

static void grads_init(grads_t *g, const model_t *m)
{
    g->n = m->nparams + 1;
    g->flat = calloc(g->n, sizeof(double));
    g->offW = malloc(sizeof(size_t) * (size_t)m->L);
    g->offb = malloc(sizeof(size_t) * (size_t)m->L);
    size_t at = 0;
    for (int l = m->L - 1; l >= 0; l--) {
        g->offW[l] = at;
        at += (size_t)m->dim[l] * (size_t)m->dim[l + 1];
        g->offb[l] = at;
        at += (size_t)m->dim[l + 1];
    }
}

static void grads_free(grads_t *g)
{
    free(g->flat);
    free(g->offW);
    free(g->offb);
}

/* Buckets of the flat gradient, DDP style: consecutive, about bucket_bytes
 * each, cut only where a layer's gradient ends... or inside a big layer. */
typedef struct {
    int n, posted;
    size_t *begin, *end;
    MPI_Request *req;
} buckets_t;

static void buckets_init(buckets_t *bk, const grads_t *g, size_t bucket_bytes)
{
    size_t per = bucket_bytes / sizeof(double);
    if (per < 1)
        per = 1;
    int cap = (int)(g->n / per) + 2;
    bk->begin = malloc(sizeof(size_t) * (size_t)cap);
    bk->end = malloc(sizeof(size_t) * (size_t)cap);
    bk->req = malloc(sizeof(MPI_Request) * (size_t)cap);
    bk->n = 0;
    for (size_t at = 0; at < g->n; at += per) {
        bk->begin[bk->n] = at;
        bk->end[bk->n] = at + per < g->n ? at + per : g->n;
        bk->n++;
    }
}

static void buckets_free(buckets_t *bk)
{
    free(bk->begin);
    free(bk->end);
    free(bk->req);
}

typedef int (*iallreduce_fn)(const void *, void *, int, MPI_Datatype, MPI_Op, MPI_Comm,
                             MPI_Request *);
typedef int (*waitall_fn)(int, MPI_Request *, MPI_Status *);

/* Post every bucket that lies entirely below `ready` (the gradient produced
 * so far, as a prefix of the flat order). */
static void post_ready(buckets_t *bk, grads_t *g, size_t ready, iallreduce_fn iar)
{
    while (bk->posted < bk->n && bk->end[bk->posted] <= ready) {
        int k = bk->posted++;
        iar(MPI_IN_PLACE, g->flat + bk->begin[k], (int)(bk->end[k] - bk->begin[k]), MPI_DOUBLE,
            MPI_SUM, MPI_COMM_WORLD, &bk->req[k]);
    }
}

/* Forward and backward over examples [first, first+count) of the step's
 * batch, ADDING gradient sums into g (and the squared-error sum into the
 * loss slot). With bk, buckets are posted as layers finish. */
typedef struct {
    double **act;            /* act[l]: count x dim[l] (act[0] = inputs) */
    double *y, *delta, *delta2;
    int cap;
} work_t;

static void work_init(work_t *w, const model_t *m, int cap)
{
    w->cap = cap;
    w->act = malloc(sizeof(double *) * (size_t)(m->L + 1));
    int maxd = 1;
    for (int l = 0; l <= m->L; l++) {
        w->act[l] = malloc(sizeof(double) * (size_t)cap * (size_t)m->dim[l]);
        if (m->dim[l] > maxd)
            maxd = m->dim[l];
    }
    w->y = malloc(sizeof(double) * (size_t)cap);
    w->delta = malloc(sizeof(double) * (size_t)cap * (size_t)maxd);
    w->delta2 = malloc(sizeof(double) * (size_t)cap * (size_t)maxd);
}

static void work_free(work_t *w, const model_t *m)
{
    for (int l = 0; l <= m->L; l++)
        free(w->act[l]);
    free(w->act);
    free(w->y);
    free(w->delta);
    free(w->delta2);
}

static void fwd_bwd(const model_t *m, grads_t *g, work_t *w, int step, int batch, int first,
                    int count, buckets_t *bk, iallreduce_fn iar)
{
    int L = m->L;
    for (int i = 0; i < count; i++)
        example(batch_example(step, first + i, batch), m->dim[0], w->act[0] + (size_t)i * m->dim[0],
                &w->y[i]);
    for (int l = 0; l < L; l++) {          /* forward */
        int din = m->dim[l], dout = m->dim[l + 1];
        for (int i = 0; i < count; i++) {
            const double *x = w->act[l] + (size_t)i * din;
            double *z = w->act[l + 1] + (size_t)i * dout;
            for (int j = 0; j < dout; j++)
                z[j] = m->b[l][j];
            for (int k = 0; k < din; k++) {
                double xk = x[k];
                const double *Wk = m->W[l] + (size_t)k * dout;
                for (int j = 0; j < dout; j++)
                    z[j] += xk * Wk[j];
            }
            if (l < L - 1)
                for (int j = 0; j < dout; j++)
                    z[j] = tanh(z[j]);
        }
    }
    double *delta = w->delta, *prev = w->delta2;
    double sq = 0;
    for (int i = 0; i < count; i++) {      /* d(sum of squared errors)/d(output) */
        double err = w->act[L][i] - w->y[i];
        sq += err * err;
        delta[i] = 2 * err;
    }
    g->flat[g->n - 1] += sq;
    size_t ready = 0;
    for (int l = L - 1; l >= 0; l--) {     /* backward, last layer first */
        int din = m->dim[l], dout = m->dim[l + 1];
        double *gW = g->flat + g->offW[l], *gb = g->flat + g->offb[l];
        for (int i = 0; i < count; i++) {
            const double *x = w->act[l] + (size_t)i * din, *d = delta + (size_t)i * dout;
            for (int k = 0; k < din; k++) {
                double xk = x[k];
                double *gWk = gW + (size_t)k * dout;
                for (int j = 0; j < dout; j++)
                    gWk[j] += xk * d[j];
            }
            for (int j = 0; j < dout; j++)
                gb[j] += d[j];
        }
        ready = g->offb[l] + (size_t)dout;
        if (l == 0)
            ready = g->n;                  /* the loss slot too */
        if (bk)
            post_ready(bk, g, ready, iar); /* this layer's gradient is final */
        if (l > 0) {                       /* delta for the layer below */
            for (int i = 0; i < count; i++) {
                const double *d = delta + (size_t)i * dout, *a = w->act[l] + (size_t)i * din;
                double *pd = prev + (size_t)i * din;
                for (int k = 0; k < din; k++) {
                    const double *Wk = m->W[l] + (size_t)k * dout;
                    double s = 0;
                    for (int j = 0; j < dout; j++)
                        s += Wk[j] * d[j];
                    pd[k] = s * (1 - a[k] * a[k]);
                }
            }
            double *t = delta;
            delta = prev;
            prev = t;
        }
    }
}

static void sgd(model_t *m, const grads_t *g, double lr, double scale)
{
    for (int l = 0; l < m->L; l++) {
        size_t n = (size_t)m->dim[l] * (size_t)m->dim[l + 1];
        const double *gW = g->flat + g->offW[l], *gb = g->flat + g->offb[l];
        for (size_t i = 0; i < n; i++)
            m->W[l][i] -= lr * (gW[i] * scale);
        for (int j = 0; j < m->dim[l + 1]; j++)
            m->b[l][j] -= lr * (gb[j] * scale);
    }
}

/* Data-parallel training; returns the median step time, fills the loss
 * curve (mean squared error per step). */
static double train_dp(model_t *m, const opts_t *o, iallreduce_fn iar, waitall_fn wall,
                       double *losses)
{
    grads_t g;
    buckets_t bk;
    work_t w;
    grads_init(&g, m);
    buckets_init(&bk, &g, o->bucket_bytes);
    int first, count;
    shard(o->batch, rank, nranks, &first, &count);
    int mb = (count + o->micro - 1) / o->micro;
    work_init(&w, m, mb > 0 ? mb : 1);
    double *times = malloc(sizeof(double) * (size_t)o->steps);
    for (int s = 0; s < o->steps; s++) {
        PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        memset(g.flat, 0, sizeof(double) * g.n);
        bk.posted = 0;
        for (int u = 0; u < o->micro; u++) {   /* gradient accumulation */
            int a = first + u * mb, e = first + (u + 1) * mb;
            if (e > first + count)
                e = first + count;
            bool last = u == o->micro - 1;
            fwd_bwd(m, &g, &w, s, o->batch, a, e > a ? e - a : 0, last ? &bk : NULL, iar);
        }
        if (bk.posted != bk.n)
            fprintf(stderr, "rank %d: only %d of %d buckets posted\n", rank, bk.posted, bk.n);
        wall(bk.n, bk.req, MPI_STATUSES_IGNORE);
        /* sum over every example of the global batch / its size: each shard
         * weighs by its size */
        sgd(m, &g, o->lr, 1.0 / o->batch);
        losses[s] = g.flat[g.n - 1] / o->batch;
        times[s] = now() - t0;
    }
    double tmax;
    for (int s = 0; s < o->steps; s++) {    /* slowest rank per step */
        PMPI_Allreduce(&times[s], &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        times[s] = tmax;
    }
    for (int i = 1; i < o->steps; i++)       /* median */
        for (int j = i; j > 0 && times[j] < times[j - 1]; j--) {
            double t = times[j];
            times[j] = times[j - 1];
            times[j - 1] = t;
        }
    double med = times[o->steps / 2];
    free(times);
    work_free(&w, m);
    buckets_free(&bk);
    grads_free(&g);
    return med;
}

/* Single-process full-batch training (the reference), no MPI at all. */
static void train_single(model_t *m, const opts_t *o)
{
    grads_t g;
    work_t w;
    grads_init(&g, m);
    work_init(&w, m, o->batch);
    for (int s = 0; s < o->steps; s++) {
        memset(g.flat, 0, sizeof(double) * g.n);
        fwd_bwd(m, &g, &w, s, o->batch, 0, o->batch, NULL, NULL);
        sgd(m, &g, o->lr, 1.0 / o->batch);
    }
    work_free(&w, m);
    grads_free(&g);
}

static double max_diff(const model_t *a, const model_t *b, double *maxabs)
{
    double d = 0, mx = 0;
    for (int l = 0; l < a->L; l++) {
        size_t n = (size_t)a->dim[l] * (size_t)a->dim[l + 1];
        for (size_t i = 0; i < n; i++) {
            d = fmax(d, fabs(a->W[l][i] - b->W[l][i]));
            mx = fmax(mx, fabs(a->W[l][i]));
        }
        for (int j = 0; j < a->dim[l + 1]; j++) {
            d = fmax(d, fabs(a->b[l][j] - b->b[l][j]));
            mx = fmax(mx, fabs(a->b[l][j]));
        }
    }
    if (maxabs)
        *maxabs = mx;
    return d;
}

/* 1. Every rank's weights, bit for bit, against rank 0's. */
static int replicas_identical(const model_t *m)
{
    int differ = 0;
    for (int l = 0; l < m->L; l++) {
        size_t nw = (size_t)m->dim[l] * (size_t)m->dim[l + 1], nb = (size_t)m->dim[l + 1];
        double *w0 = malloc(sizeof(double) * nw), *b0 = malloc(sizeof(double) * nb);
        memcpy(w0, m->W[l], sizeof(double) * nw);
        memcpy(b0, m->b[l], sizeof(double) * nb);
        PMPI_Bcast(w0, (int)nw, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        PMPI_Bcast(b0, (int)nb, MPI_DOUBLE, 0, MPI_COMM_WORLD);
        differ |= memcmp(w0, m->W[l], sizeof(double) * nw) || memcmp(b0, m->b[l], sizeof(double) * nb);
        free(w0);
        free(b0);
    }
    int any = 0;
    PMPI_Allreduce(&differ, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    return !any;
}

/* 3. One gradient on unequal shards: unweighted mean of shard means vs
 * the size-weighted sum / N, both against the full-batch gradient. */
static void weighting_demo(const model_t *m, const opts_t *o, double *err_plain, double *err_weighted)
{
    grads_t mine, full;
    work_t w;
    grads_init(&mine, m);
    grads_init(&full, m);
    work_init(&w, m, o->batch);
    int first, count;
    shard(o->batch, rank, nranks, &first, &count);
    fwd_bwd(m, &mine, &w, 0, o->batch, first, count, NULL, NULL);      /* this shard's sum */
    fwd_bwd(m, &full, &w, 0, o->batch, 0, o->batch, NULL, NULL);       /* the full batch's */
    size_t n = mine.n - 1;
    double *mean = malloc(sizeof(double) * n), *plain = malloc(sizeof(double) * n);
    double *sum = malloc(sizeof(double) * n);
    for (size_t i = 0; i < n; i++)
        mean[i] = count ? mine.flat[i] / count : 0;
    MPI_Allreduce(mean, plain, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    MPI_Allreduce(mine.flat, sum, (int)n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    *err_plain = *err_weighted = 0;
    for (size_t i = 0; i < n; i++) {
        double ref = full.flat[i] / o->batch;
        *err_plain = fmax(*err_plain, fabs(plain[i] / nranks - ref));
        *err_weighted = fmax(*err_weighted, fabs(sum[i] / o->batch - ref));
    }
    free(mean);
    free(plain);
    free(sum);
    work_free(&w, m);
    grads_free(&mine);
    grads_free(&full);
}

static size_t parse_size(const char *s)
{
    char *end;
    double v = strtod(s, &end);
    return (size_t)(v * (*end == 'M' ? 1 << 20 : *end == 'K' ? 1 << 10 : 1));
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nranks);
    opts_t o = {.steps = 30, .batch = 96, .micro = 2, .layers = 4, .hidden = 384, .din = 32,
                .bucket_bytes = 256u << 10, .lr = 0.05, .print_every = 5};
    int opt;
    while ((opt = getopt(argc, argv, "s:b:m:l:H:B:r:p:h")) != -1) {
        switch (opt) {
        case 's': o.steps = atoi(optarg); break;
        case 'b': o.batch = atoi(optarg); break;
        case 'm': o.micro = atoi(optarg); break;
        case 'l': o.layers = atoi(optarg); break;
        case 'H': o.hidden = atoi(optarg); break;
        case 'B': o.bucket_bytes = parse_size(optarg); break;
        case 'r': o.lr = atof(optarg); break;
        case 'p': o.print_every = atoi(optarg); break;
        default:
            if (rank == 0)
                fprintf(stderr, "usage: mpiexec -n P dp_train [-s steps] [-b global batch] "
                                "[-m micro-batches] [-l layers] [-H hidden] [-B bucket bytes (K, M)] "
                                "[-r lr] [-p print every]\n");
            MPI_Finalize();
            return opt == 'h' ? 0 : 2;
        }
    }
    if (o.steps < 1 || o.batch < nranks || o.micro < 1 || o.layers < 1 || o.hidden < 1 ||
        o.print_every < 1) {
        if (rank == 0)
            fprintf(stderr, "dp_train: steps, micro-batches, layers, hidden must be >= 1 and the "
                            "batch at least one example per rank\n");
        MPI_Finalize();
        return 2;
    }
    model_t init, dp, nat, ref;
    model_init(&init, &o);
    model_init(&dp, &o);
    model_init(&nat, &o);
    grads_t tmp;
    grads_init(&tmp, &init);
    buckets_t bk;
    buckets_init(&bk, &tmp, o.bucket_bytes);
    int first, count;
    shard(o.batch, rank, nranks, &first, &count);
    int *counts = malloc(sizeof(int) * (size_t)nranks);
    PMPI_Allgather(&count, 1, MPI_INT, counts, 1, MPI_INT, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("dp_train: %d ranks; MLP %d", nranks, o.din);
        for (int l = 1; l <= o.layers; l++)
            printf("-%d", l < o.layers ? o.hidden : 1);
        printf(" (%zu parameters, %.1f MiB of gradient); global batch %d in unequal shards [",
               init.nparams, init.nparams * 8.0 / 1048576, o.batch);
        for (int r = 0; r < nranks; r++)
            printf("%s%d", r ? " " : "", counts[r]);
        printf("], %d micro-batches per step, %d steps, lr %g\n", o.micro, o.steps, o.lr);
        printf("  gradient all-reduce: MPI_Iallreduce per bucket (%d buckets of <= %zu KiB), "
               "posted during backward as each layer finishes; one all-reduce per step\n",
               bk.n, o.bucket_bytes >> 10);
    }
    free(counts);
    buckets_free(&bk);
    grads_free(&tmp);

    /* 3. weighting */
    double e_plain, e_weighted;
    weighting_demo(&init, &o, &e_plain, &e_weighted);

    /* training: through MPI_Iallreduce (libdpcoll when preloaded), then the
     * MPI library's own, from the same start */
    double *loss = malloc(sizeof(double) * (size_t)o.steps);
    double *loss_nat = malloc(sizeof(double) * (size_t)o.steps);
    model_copy(&dp, &init);
    double t_ours = train_dp(&dp, &o, MPI_Iallreduce, MPI_Waitall, loss);
    model_copy(&nat, &init);
    double t_nat = train_dp(&nat, &o, PMPI_Iallreduce, PMPI_Waitall, loss_nat);

    int ok_rep = replicas_identical(&dp), ok_rep_nat = replicas_identical(&nat);
    double diff = 0, scale = 1;
    int ok_ref = 1;
    if (rank == 0) {
        model_init(&ref, &o);
        model_copy(&ref, &init);
        double t0 = now();
        train_single(&ref, &o);
        double t_single = now() - t0;
        diff = max_diff(&dp, &ref, &scale);
        ok_ref = diff <= 1e-9 * fmax(1.0, scale);
        printf("\nloss (mean squared error over the global batch):\n");
        for (int s = 0; s < o.steps; s++)
            if (s % o.print_every == 0 || s == o.steps - 1)
                printf("  step %4d  %.6f\n", s, loss[s]);
        printf("\nchecks:\n");
        printf("  replicas bitwise identical after %d steps: %s (also with MPI's own all-reduce: %s)\n",
               o.steps, ok_rep ? "yes" : "NO", ok_rep_nat ? "yes" : "NO");
        printf("  vs single-process full-batch training (%.2f s): max |difference| %.2e "
               "(weights up to %.2f): %s\n", t_single, diff, scale, ok_ref ? "equal to tolerance" : "DIFFERENT");
        printf("  unequal shards, one gradient: plain mean of shard means off by %.2e, "
               "size-weighted sum/N off by %.2e: %s\n", e_plain, e_weighted,
               e_weighted <= 1e-12 && (nranks == 1 || e_plain > 1e3 * e_weighted) ? "as expected"
                                                                                  : "UNEXPECTED");
        printf("\nstep time (median, slowest rank): %.2f ms through MPI_Iallreduce, %.2f ms with "
               "the MPI library's own PMPI_Iallreduce: %.2fx\n", t_ours * 1e3, t_nat * 1e3,
               t_nat / t_ours);
        model_free(&ref);
    }
    int bad = rank == 0 ? !(ok_rep && ok_rep_nat && ok_ref && e_weighted <= 1e-12 &&
                            (nranks == 1 || e_plain > 1e3 * e_weighted)) : 0;
    PMPI_Bcast(&bad, 1, MPI_INT, 0, MPI_COMM_WORLD);
    free(loss);
    free(loss_nat);
    model_free(&init);
    model_free(&dp);
    model_free(&nat);
    MPI_Finalize();
    return bad;
}
