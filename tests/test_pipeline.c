/*
 * The device pipeline (coll/pipeline.c) on the simulated transport, with
 * pseudo-device memory: an arena kept PROT_NONE except inside this file's
 * own copies, so a host reduction (or any host code) that touched device
 * memory would crash the test. Copies complete asynchronously (two
 * progress calls after they start), as a GPU's would. Ranks mix device and
 * host buffers; every allreduce algorithm serves as the chunks' algorithm
 * in turn; results are exact (integer data, closed-form sums) and equal on
 * every rank.
 */
#include "config.h"
#include <check.h>
#include "check_run.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "dpc_coll.h"
#include "dpc_reduce.h"
#include "dpc_sim.h"
#include "nodes.h"

#define ARENA (64u << 20)
static char *arena;
static size_t arena_used;
static void open_arena(int on);
static unsigned long dev_copies;

/* only the part in use: protecting all 64 MiB at every copy is slow under
 * valgrind, which tracks every page */
static void open_arena(int on)
{
    if (arena_used)
        mprotect(arena, arena_used, on ? PROT_READ | PROT_WRITE : PROT_NONE);
}

static void *dev_alloc(size_t n)
{
    char *p = arena + arena_used;
    arena_used += (n + 4095) & ~(size_t)4095;
    ck_assert(arena_used <= ARENA);
    return p;
}

static bool on_dev(const void *p)
{
    return (const char *)p >= arena && (const char *)p < arena + ARENA;
}

/* the test's own transfers into and out of the arena */
static void dev_put(void *dst, const void *src, size_t n)
{
    open_arena(1);
    memcpy(dst, src, n);
    open_arena(0);
}

/* a rank's device queue: a copy or reduction is done at the second
 * progress after it started */
typedef struct pcopy {
    void *dst; const void *src, *b; size_t n; int dt, op; dpc_xfer_cb_t cb; void *arg; int age;
} pcopy_t;
#define COPY (-1)
typedef struct devq { dpc_sim_t *sim; pcopy_t q[4096]; int n; } devq_t;
static unsigned long dev_reduces, dev_elems_reduced;

/* pinned host memory: what the device may read and write besides its own
 * (the staging buffers of run_case) */
static struct { const char *p; size_t n; } pinned[32];
static int npinned;
static bool is_pinned(const void *p, size_t n)
{
    for (int i = 0; i < npinned; i++)
        if ((const char *)p >= pinned[i].p && (const char *)p + n <= pinned[i].p + pinned[i].n)
            return true;
    return false;
}

/* A new case: the arena empty and closed, nothing pinned. */
static void fresh_device(void)
{
    open_arena(0);
    arena_used = 0;
    npinned = 0;
}

static dpc_status_t q_copy(void *ctx, void *dst, const void *src, size_t n, int queue,
                           dpc_xfer_cb_t cb, void *arg)
{
    devq_t *d = ctx;
    /* the direction the step says is the one the pointers go */
    ck_assert(queue == DPC_TO_HOST ? on_dev(src) && !on_dev(dst) : on_dev(dst) && !on_dev(src));
    ck_assert_int_lt(d->n, 4096);
    d->q[d->n++] = (pcopy_t){dst, src, NULL, n, COPY, 0, cb, arg, 0};
    dpc_sim_poke(d->sim);
    return DPC_OK;
}

static dpc_status_t q_reduce(void *ctx, void *dst, const void *a, const void *b, size_t n,
                             dpc_dtype_t dt, dpc_op_t op, dpc_xfer_cb_t cb, void *arg)
{
    devq_t *d = ctx;
    size_t bytes = n * dpc_dtype_size(dt);
    /* a kernel reaches device memory and pinned host memory, nothing else */
    const void *p[3] = {dst, a, b};
    for (int i = 0; i < 3; i++)
        ck_assert_msg(on_dev(p[i]) || is_pinned(p[i], bytes), "device reduction on pageable memory");
    ck_assert(on_dev(dst));
    ck_assert_int_lt(d->n, 4096);
    d->q[d->n++] = (pcopy_t){dst, a, b, n, (int)dt, (int)op, cb, arg, 0};
    dpc_sim_poke(d->sim);
    return DPC_OK;
}

static int q_progress(void *ctx)
{
    devq_t *d = ctx;
    int done = 0, keep = 0;
    pcopy_t fire[4096];
    for (int i = 0; i < d->n; i++) {
        pcopy_t *w = &d->q[i];
        if (++w->age >= 2) {
            open_arena(1);
            if (w->dt == COPY) {
                memmove(w->dst, w->src, w->n);
                dev_copies++;
            } else {
                ck_assert_int_eq(dpc_reduce_host(w->dst, w->src, w->b, w->n, (dpc_dtype_t)w->dt,
                                                 (dpc_op_t)w->op), DPC_OK);
                dev_reduces++;
                dev_elems_reduced += w->n;
            }
            open_arena(0);
            fire[done++] = *w;
        } else {
            d->q[keep++] = *w;
        }
    }
    d->n = keep;
    if (keep)     /* a device with work queued is not idle: time need not jump */
        dpc_sim_poke(d->sim);
    for (int i = 0; i < done; i++) {
        dpc_sim_poke(d->sim);
        fire[i].cb(fire[i].arg, DPC_OK);
    }
    return done;
}

static const dpc_device_ops_t qops = {.copy = q_copy, .progress = q_progress,
                                      .reduce = q_reduce};

/* the pipeline as an "algorithm" for dpc_sim_run: per-rank buffers here */
static dpc_pipe_t pipes[8];
static const dpc_algo_t *chunk_algo;
static size_t chunk_bytes;

static const dpc_algo_t *pick(const dpc_coll_args_t *a, void *ctx)
{
    (void)a;
    (void)ctx;
    return chunk_algo;
}

static dpc_status_t build_pipe(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    const dpc_algo_t *first = NULL;
    return dpc_pipeline_build(a, &pipes[a->rank], chunk_bytes, pick, NULL, s, &first);
}

static const dpc_algo_t pipe_algo = {.name = "pipeline", .coll = DPC_ALLREDUCE,
                                     .build = build_pipe};

/* run_case's chunks: the chosen chunk_algo, or with use_owner the owner
 * algorithm, its device ranks reducing on the device */
static bool use_owner;

static void run_case(int p, size_t count, bool in_place, int mixed, uint64_t seed)
{
    dpc_sim_opts_t o = {.reorder_seed = seed};
    dpc_sim_t *sim = dpc_sim_create(p, &o);
    devq_t *dq = calloc((size_t)p, sizeof(devq_t));
    void *ctx[8];
    dpc_coll_args_t args[8];
    int node[8];
    /* an algorithm for ranks on several nodes gets a layout (sweep skips
     * the p that have none) */
    bool spread = !use_owner && (chunk_algo->flags & DPC_ALGO_NODES);
    int nodes = spread ? test_default_nodes(p) : 0,
        node_ranks = nodes ? test_node_map(p, nodes, false, node) : 0;
    int64_t *hin[8], *hout[8], *dout[8], *stage_in[8], *stage_out[8];
    char *slots[8];
    size_t b = count * sizeof(int64_t);
    unsigned long elems_before = dev_elems_reduced, want_elems = 0;
    fresh_device();
    for (int r = 0; r < p; r++) {
        dq[r].sim = sim;
        ctx[r] = &dq[r];
        bool dev = mixed ? r % 2 == 0 : true;
        hin[r] = malloc(b + 8);
        hout[r] = calloc(1, b + 8);
        for (size_t i = 0; i < count; i++)
            hin[r][i] = (int64_t)(i % 1009) * (r + 1) - r;
        stage_in[r] = malloc(b + 8);
        stage_out[r] = malloc(b + 8);
        memset(&pipes[r], 0, sizeof(pipes[r]));
        pipes[r].on = true;
        args[r] = (dpc_coll_args_t){.coll = DPC_ALLREDUCE, .rank = r, .size = p, .count = count,
                                    .dtype = DPC_INT64, .op = DPC_OP_SUM, .in_place = in_place,
                                    .one_sided = true, .node = nodes ? node : NULL,
                                    .nnodes = nodes, .node_ranks = node_ranks};
        pipes[r].owner = use_owner;
        pipes[r].dev_reduce = use_owner && dev;
        size_t sb = dpc_pipeline_slot_bytes(&args[r], chunk_bytes);
        slots[r] = pipes[r].dev_reduce ? malloc(sb + 1) : NULL;
        pipes[r].slots = slots[r];
        if (pipes[r].dev_reduce) {
            /* staging is pinned memory, which the device may address */
            pinned[npinned].p = (char *)stage_in[r], pinned[npinned++].n = b + 8;
            pinned[npinned].p = (char *)stage_out[r], pinned[npinned++].n = b + 8;
            pinned[npinned].p = slots[r], pinned[npinned++].n = sb;
            /* each chunk: p-1 contributions to this rank's block, on the device */
            size_t ce = chunk_bytes / sizeof(int64_t);
            if ((count + ce - 1) / ce > DPC_PIPE_MAX_CHUNKS)
                ce = (count + DPC_PIPE_MAX_CHUNKS - 1) / DPC_PIPE_MAX_CHUNKS;
            for (size_t e0 = 0; e0 < count && p > 1; e0 += ce) {
                size_t cnt = count - e0 < ce ? count - e0 : ce;
                want_elems += (unsigned long)(p - 1) * (cnt / (size_t)p + ((size_t)r < cnt % (size_t)p));
            }
        }
        if (dev) {
            dout[r] = dev_alloc(b + 8);
            pipes[r].dev_out = (char *)dout[r];
            pipes[r].host_out = (char *)stage_out[r];
            if (in_place) {
                dev_put(dout[r], hin[r], b);
            } else {
                int64_t *din = dev_alloc(b + 8);
                dev_put(din, hin[r], b);
                pipes[r].dev_in = (const char *)din;
                pipes[r].host_in = (char *)stage_in[r];
            }
            /* the pipeline uses the pipe's buffers, never these on a device rank */
            args[r].sbuf = in_place ? NULL : pipes[r].dev_in;
            args[r].rbuf = dout[r];
        } else {
            dout[r] = NULL;
            if (in_place)
                memcpy(hout[r], hin[r], b);
            args[r].sbuf = in_place ? NULL : hin[r];
            args[r].rbuf = hout[r];
        }
    }
    dpc_sim_set_device(sim, &qops, ctx);
    dpc_status_t st[8];
    char *em[8];
    ck_assert_int_eq(dpc_sim_run(sim, &pipe_algo, args, 60ull * 1000000000ull, st, em, NULL, NULL),
                     DPC_OK);
    for (int r = 0; r < p; r++)
        ck_assert_msg(st[r] == DPC_OK, "%s chunks, p=%d count=%zu rank %d: %s", use_owner ? "owner" : chunk_algo->name,
                      p, count, r, em[r] ? em[r] : "?");
    dpc_sim_free_msgs(em, p);
    for (int r = 0; r < p; r++) {
        int64_t *got = hout[r];
        if (dout[r]) {
            open_arena(1);
            memcpy(got, dout[r], b);
            open_arena(0);
        }
        for (size_t i = 0; i < count; i++) {
            /* sum over q of (i % 1009)(q+1) - q */
            int64_t want = (int64_t)(i % 1009) * p * (p + 1) / 2 - (int64_t)p * (p - 1) / 2;
            ck_assert_msg(got[i] == want, "%s chunks, p=%d count=%zu%s rank %d [%zu]: %lld, want %lld",
                          use_owner ? "owner" : chunk_algo->name, p, count, in_place ? " in place" : "", r, i,
                          (long long)got[i], (long long)want);
        }
    }
    ck_assert_int_eq(dpc_sim_pending(sim), 0);
    /* every reduction of a device rank's block ran on the device */
    ck_assert_uint_eq(dev_elems_reduced - elems_before, want_elems);
    for (int r = 0; r < p; r++) {
        ck_assert_int_eq(dq[r].n, 0);      /* no copy left behind */
        free(slots[r]);
        free(hin[r]);
        free(hout[r]);
        free(stage_in[r]);
        free(stage_out[r]);
    }
    free(dq);
    dpc_sim_destroy(sim);
}

/* Every case run_case knows: p = 1-5; with 1 KiB chunks, counts giving no
 * chunk, 1, several, a short last one, and more than DPC_PIPE_MAX_CHUNKS
 * (then fewer, larger ones); in place and not; all-device and mixed.
 * DPC_TEST_QUICK (under valgrind): p up to 3 (4 for an algorithm that needs
 * ranks on several nodes), up to 1000 elements. */
static void sweep(uint64_t seed0)
{
    static const int ps[] = {1, 2, 3, 4, 5};
    static const size_t counts[] = {0, 1, 128, 1000, 10007};
    bool quick = getenv("DPC_TEST_QUICK") && atoi(getenv("DPC_TEST_QUICK"));
    /* (an algorithm for ranks on several nodes has its first layout at 4) */
    bool spread = !use_owner && (chunk_algo->flags & DPC_ALGO_NODES);
    unsigned np = quick ? (spread ? 4 : 3) : 5, nc = quick ? 4 : 5;
    chunk_bytes = 1024;
    for (unsigned pi = 0; pi < np; pi++)
        for (unsigned ci = 0; ci < nc; ci++)
            if (!use_owner && (chunk_algo->flags & DPC_ALGO_NODES) && !test_default_nodes(ps[pi]))
                break;     /* (no layout: run_case) */
            else
            for (int ip = 0; ip < 2; ip++)
                for (int mixed = 0; mixed < 2; mixed++)
                    run_case(ps[pi], counts[ci], ip, mixed, pi * 100 + ci * 10 + ip + seed0);
}

/* loop index: allreduce algorithm */
START_TEST(test_pipeline_algos)
{
    int k = 0;
    for (const dpc_algo_t *const *al = dpc_algos(); *al; al++)
        if ((*al)->coll == DPC_ALLREDUCE && k++ == _i)
            chunk_algo = *al;
    ck_assert_ptr_nonnull(chunk_algo);
    unsigned long before = dev_copies;
    sweep(1);
    ck_assert_uint_gt(dev_copies, before);
}
END_TEST

/* The owner chunks: device ranks reduce on the device (kernels reading
 * pinned memory, checked), host ranks on the host; p = 1 falls back to the
 * chosen algorithm. */
START_TEST(test_pipeline_owner)
{
    chunk_algo = dpc_algo_find(DPC_ALLREDUCE, "ring");
    use_owner = true;
    unsigned long before = dev_reduces;
    sweep(7);
    use_owner = false;
    ck_assert_uint_gt(dev_reduces, before);
}
END_TEST

/* Reduce-scatter as a pipeline of owner chunks, equal blocks or per-rank
 * counts (one of them empty, the others unequal): device ranks (input and
 * output in the arena, staging and slots "pinned") reduce their slices on
 * the device, host ranks on the host, in place or not; exact sums, and
 * every element of a device rank's block reduced p-1 times on the device. */
static dpc_status_t build_rs_pipe(const dpc_coll_args_t *a, dpc_sched_t *s)
{
    return dpc_pipeline_rs_build(a, &pipes[a->rank], chunk_bytes, s);
}

static const dpc_algo_t rs_pipe_algo = {.name = "rs pipeline", .coll = DPC_REDUCE_SCATTER_BLOCK,
                                        .build = build_rs_pipe};

enum { RS_MIXED = 1, RS_VARY = 2, RS_IN_PLACE = 4 };

static void run_rs_case(int p, size_t count, int how, uint64_t seed)
{
    dpc_sim_t *sim = dpc_sim_create(p, &(dpc_sim_opts_t){.reorder_seed = seed});
    devq_t *dq = calloc((size_t)p, sizeof(devq_t));
    void *ctx[8];
    dpc_coll_args_t args[8];
    int64_t *hin[8], *hout[8], *din[8], *dout[8], *stage[8];
    char *slots[8];
    size_t cnt[8], off[8], total = 0;
    bool vary = how & RS_VARY;
    for (int r = 0; r < p; r++) {
        cnt[r] = !vary ? count : r == 1 ? 0 : count + (size_t)r * 37;
        off[r] = total;
        total += cnt[r];
    }
    size_t bin = total * sizeof(int64_t);
    unsigned long before = dev_elems_reduced, want = 0;
    fresh_device();
    for (int r = 0; r < p; r++) {
        dq[r].sim = sim;
        ctx[r] = &dq[r];
        bool dev = ((how & RS_MIXED) ? r % 2 == 0 : true) && p > 1;
        bool in_place = (how & RS_IN_PLACE) && !dev;
        size_t b = cnt[r] * sizeof(int64_t);
        hin[r] = malloc(bin + 8);
        hout[r] = calloc(1, (in_place ? bin : b) + 8);
        for (size_t i = 0; i < total; i++)
            hin[r][i] = (int64_t)(i % 1013) * (r + 2) - r;
        if (in_place)
            memcpy(hout[r], hin[r], bin);
        args[r] = (dpc_coll_args_t){.coll = vary ? DPC_REDUCE_SCATTER : DPC_REDUCE_SCATTER_BLOCK,
                                    .rank = r, .size = p, .count = cnt[0],
                                    .counts = vary ? cnt : NULL, .dtype = DPC_INT64,
                                    .op = DPC_OP_SUM, .in_place = in_place,
                                    .sbuf = in_place ? NULL : hin[r], .rbuf = hout[r]};
        memset(&pipes[r], 0, sizeof(pipes[r]));
        pipes[r].on = pipes[r].owner = true;
        din[r] = dout[r] = stage[r] = NULL;
        slots[r] = NULL;
        if (dev) {
            din[r] = dev_alloc(bin + 8);
            dout[r] = dev_alloc(b + 8);
            dev_put(din[r], hin[r], bin);
            stage[r] = malloc(bin + 8);
            size_t sb = dpc_pipeline_slot_bytes(&args[r], chunk_bytes);
            slots[r] = malloc(sb + 1);
            pipes[r] = (dpc_pipe_t){.on = true, .owner = true, .dev_reduce = true,
                                    .dev_in = (const char *)din[r], .dev_out = (char *)dout[r],
                                    .host_in = (char *)stage[r], .slots = slots[r]};
            pinned[npinned].p = (char *)stage[r], pinned[npinned++].n = bin + 8;
            pinned[npinned].p = slots[r], pinned[npinned++].n = sb;
            args[r].sbuf = din[r];
            args[r].rbuf = dout[r];
            want += (unsigned long)(p - 1) * cnt[r];
        }
    }
    dpc_sim_set_device(sim, &qops, ctx);
    dpc_status_t st[8];
    char *em[8];
    ck_assert_int_eq(dpc_sim_run(sim, &rs_pipe_algo, args, 60ull * 1000000000ull, st, em, NULL,
                                 NULL), DPC_OK);
    for (int r = 0; r < p; r++)
        ck_assert_msg(st[r] == DPC_OK, "rs pipeline p=%d count=%zu how=%d rank %d: %s", p, count,
                      how, r, em[r] ? em[r] : "?");
    dpc_sim_free_msgs(em, p);
    for (int r = 0; r < p; r++) {
        if (dout[r]) {
            open_arena(1);
            memcpy(hout[r], dout[r], cnt[r] * sizeof(int64_t));
            open_arena(0);
        }
        for (size_t i = 0; i < cnt[r]; i++) {
            /* element off[r]+i of every rank's input: sum over q of
             * ((off[r]+i) % 1013)(q+2) - q */
            int64_t e = (int64_t)((off[r] + i) % 1013);
            int64_t want_v = e * ((int64_t)p * (p + 3) / 2) - (int64_t)p * (p - 1) / 2;
            ck_assert_msg(hout[r][i] == want_v, "rs pipeline p=%d count=%zu how=%d rank %d [%zu]: "
                          "%lld, want %lld", p, count, how, r, i, (long long)hout[r][i],
                          (long long)want_v);
        }
    }
    ck_assert_uint_eq(dev_elems_reduced - before, want);
    ck_assert_int_eq(dpc_sim_pending(sim), 0);
    for (int r = 0; r < p; r++) {
        ck_assert_int_eq(dq[r].n, 0);
        free(hin[r]);
        free(hout[r]);
        free(stage[r]);
        free(slots[r]);
    }
    free(dq);
    dpc_sim_destroy(sim);
}

START_TEST(test_pipeline_reduce_scatter)
{
    static const int ps[] = {1, 2, 3, 4, 5};
    static const size_t counts[] = {0, 1, 128, 1000, 5003};
    bool quick = getenv("DPC_TEST_QUICK") && atoi(getenv("DPC_TEST_QUICK"));
    chunk_bytes = 1024;
    for (unsigned pi = 0; pi < (quick ? 3u : 5u); pi++)
        for (unsigned ci = 0; ci < (quick ? 4u : 5u); ci++)
            for (int how = 0; how < 8; how++)
                run_rs_case(ps[pi], counts[ci], how, pi * 100 + ci * 10 + (uint64_t)how + 3);
}
END_TEST

/* The chunks' copies overlap: with several chunks, a later chunk's copy to
 * the host starts before an earlier chunk's result has gone back. */
START_TEST(test_pipeline_overlaps)
{
    /* asserted through the engine's order: all copies to the host are
     * ready at the start (they depend on nothing), so the first progress
     * after start sees every chunk's copy in flight at once */
    chunk_algo = dpc_algo_find(DPC_ALLREDUCE, "ring");
    chunk_bytes = 1024;
    dpc_sim_t *sim = dpc_sim_create(2, NULL);
    devq_t dq[2] = {{.sim = sim}, {.sim = sim}};
    void *ctx[2] = {&dq[0], &dq[1]};
    dpc_sim_set_device(sim, &qops, ctx);
    size_t count = 1024, b = count * sizeof(int64_t);     /* 8 chunks */
    open_arena(0);
    arena_used = 0;
    int64_t *h = calloc(count, sizeof(int64_t)), *st_in = malloc(b), *st_out = malloc(b);
    int64_t *din = dev_alloc(b), *dout = dev_alloc(b);
    dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 0), .tag_base = 1ull << 40,
                              .mem = DPC_MEM_HOST, .dev_ops = &qops, .dev_ctx = &dq[0]};
    dpc_sched_t *s = NULL;
    ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
    dpc_pipe_t pp = {.on = true, .dev_in = (const char *)din, .dev_out = (char *)dout,
                     .host_in = (char *)st_in, .host_out = (char *)st_out};
    dpc_coll_args_t a = {.coll = DPC_ALLREDUCE, .rank = 0, .size = 2, .count = count,
                         .dtype = DPC_INT64, .op = DPC_OP_SUM, .sbuf = din, .rbuf = dout};
    const dpc_algo_t *first = NULL;
    ck_assert_int_eq(dpc_pipeline_build(&a, &pp, chunk_bytes, pick, NULL, s, &first), DPC_OK);
    ck_assert_ptr_eq(first, chunk_algo);
    ck_assert_int_eq(dpc_sched_start(s), DPC_OK);
    ck_assert_int_eq(dq[0].n, 8);       /* every chunk's copy to the host in flight */
    dpc_sched_destroy(s);               /* waits for the copies (they cannot be cancelled) */
    ck_assert_int_eq(dq[0].n, 0);
    free(h);
    free(st_in);
    free(st_out);
    dpc_sim_destroy(sim);
}
END_TEST

/* A device reduction that fails when started. */
static dpc_status_t failing_reduce(void *ctx, void *dst, const void *a, const void *b, size_t n,
                                   dpc_dtype_t dt, dpc_op_t op, dpc_xfer_cb_t cb, void *arg)
{
    (void)ctx; (void)dst; (void)a; (void)b; (void)n; (void)dt; (void)op; (void)cb; (void)arg;
    return DPC_ERR_TRANSPORT;
}
static const dpc_device_ops_t failing_ops = {.copy = q_copy, .progress = q_progress,
                                             .reduce = failing_reduce};

/* A failed device step: it fails the schedule, which names it; or, with
 * params.device_failed, it is noted there and the schedule goes on (its
 * successors run) to a good end. */
START_TEST(test_device_failure)
{
    dpc_sim_t *sim = dpc_sim_create(1, NULL);
    devq_t dq = {.sim = sim};
    int64_t x[4] = {1, 2, 3, 4}, y[4] = {0};
    int32_t failed = 0;
    for (int soft = 0; soft < 2; soft++) {
        dpc_sched_params_t prm = {.tp = dpc_sim_transport(sim, 0), .tag_base = 1ull << 40,
                                  .mem = DPC_MEM_HOST, .dev_ops = &failing_ops, .dev_ctx = &dq,
                                  .device_failed = soft ? &failed : NULL};
        dpc_sched_t *s = NULL;
        ck_assert_int_eq(dpc_sched_create(&prm, &s), DPC_OK);
        dpc_step_id_t r = dpc_sched_device_reduce(s, x, x, x, 4, DPC_INT64, DPC_OP_SUM,
                                                  DPC_NO_DEPS);
        dpc_sched_copy(s, y, x, sizeof(x), DPC_AFTER(r));
        dpc_status_t st = dpc_sched_start(s);
        while (st == DPC_OK && (st = dpc_sched_test(s)) == DPC_INPROGRESS)
            ;
        char why[256];
        dpc_sched_describe(s, why, sizeof(why));
        if (!soft) {
            ck_assert_int_eq(st, DPC_ERR_TRANSPORT);
            ck_assert_msg(strstr(why, "in step 0 (device reduce)"), "described as: %s", why);
            ck_assert_int_eq(y[3], 0);   /* (its successor never ran) */
        } else {
            ck_assert_int_eq(st, DPC_OK);
            ck_assert_int_eq(failed, 1);
            ck_assert_int_eq(y[3], 4);   /* the copy after it ran */
        }
        dpc_sched_destroy(s);
    }
    dpc_sim_destroy(sim);
}
END_TEST

int main(void)
{
    arena = mmap(NULL, ARENA, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (arena == MAP_FAILED)
        return 99;
    int nar = 0;
    for (const dpc_algo_t *const *al = dpc_algos(); *al; al++)
        nar += (*al)->coll == DPC_ALLREDUCE;
    Suite *su = suite_create("pipeline");
    TCase *tc = tcase_create("pipeline");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, test_pipeline_algos, 0, nar);
    tcase_add_test(tc, test_pipeline_owner);
    tcase_add_test(tc, test_pipeline_reduce_scatter);
    tcase_add_test(tc, test_pipeline_overlaps);
    tcase_add_test(tc, test_device_failure);
    suite_add_tcase(su, tc);
    return check_run(su);
}
