/*
 * dpcoll_bench: collective benchmark in the nccl-tests tradition, run under
 * mpiexec. For each collective and size it times every libdpcoll algorithm
 * (and the cost model's own choice, "auto") against the MPI library's own
 * collective (PMPI_*) on the same buffers in the same run, and checks both
 * sides' results against the closed form (#wrong: ours, nat#wrong: the MPI
 * library's; the inputs are small integers, so any order of summation gives
 * the same bits, and they change at every check, so a result left over
 * from an earlier call does not pass: MPICH 4.0.2's persistent allgather
 * at 2 ranks up to 256 KiB is wrong from its second start on, and its timed
 * starts there are not those of an allgather). A row whose native result
 * is wrong is left out of the geometric mean.
 *
 * Timing: per size, batches of each of our algorithms timed (-a) and of
 * PMPI take turns (measure), each batch synchronized with its own
 * collectives, and the reported time is the median over all repeats of
 * the slowest rank; every row of a size shares one native time.
 * (Whole batches rather than single calls alternate because a rank that
 * finishes a call early and enters MPICH's next one spins on its core; with
 * more ranks than cores that starves the ranks still finishing ours.)
 *
 * algbw = bytes / time; busbw = algbw x 2(p-1)/p for allreduce, (p-1)/p for
 * reduce-scatter, allgather and all-to-all, 1 for bcast (nccl-tests).
 *
 * model(us) is the cost model's prediction for the row (dpcoll_predict,
 * the v-variants' dpcoll_predictv with their shares, alltoallv none: the
 * constants in effect, DPCOLL_TUNE_FILE's or the built-in ones), and each
 * collective ends with how many of its algorithms' rows the model put
 * within 30% of the measured time: a check of the model on measurements it
 * was not fitted to (dpcoll_tune fits its own).
 */
#include "config.h"
#include "dpc_autotune.h"
#include "dpc_config.h"
#include "bench_shares.h"
#include "warmup.h"
#include "sizes.h"
#include <getopt.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dpcoll.h"

enum { C_ALLREDUCE, C_RS, C_ALLGATHER, C_BCAST, C_ALLTOALL, C_RSV, C_ALLGATHERV, C_ALLTOALLV, NC };
static const dpc_coll_t coll_of[NC] = {DPC_ALLREDUCE, DPC_REDUCE_SCATTER_BLOCK, DPC_ALLGATHER,
                                       DPC_BCAST, DPC_ALLTOALL, DPC_REDUCE_SCATTER,
                                       DPC_ALLGATHERV, DPC_ALLTOALLV};
static const char *cname[NC] = {"allreduce", "reduce_scatter_block", "allgather", "bcast",
                                "alltoall", "reduce_scatter", "allgatherv", "alltoallv"};
static int rank, size;

/* The v-variants (MPI_Reduce_scatter, MPI_Allgatherv, MPI_Alltoallv) with
 * unequal shares, as a data-parallel job whose shards differ in size calls
 * them (equal ones are what the block collectives time): of a row's vector
 * of T elements, rank q's share is T (q+1) / (p(p+1)/2), rounded down, the
 * last rank taking what is left (at 2 ranks a third and two thirds; at the
 * smallest sizes some shares are 0, as they can be in a program). "count"
 * for them is T. An all-to-all's block from rank r to rank q is share
 * (r+q) mod p, so every rank sends T and receives T, in blocks of
 * different sizes. */
static int is_v(int c)
{
    return c == C_RSV || c == C_ALLGATHERV || c == C_ALLTOALLV;
}
static size_t share(size_t total, int q)
{
    return bench_share(total, size, q);   /* (tools/bench_shares.h) */
}
/* the row's counts and displacements (this rank's, for its calls):
 * vcount/vdispl the shares (reduce_scatter's recvcounts, allgatherv's
 * counts), scount/sdispl and rcount/rdispl the all-to-all's; a2a_from[q]:
 * where rank q keeps its block for this rank in its all-to-all input (the
 * checks read these per element: once per row, not per element) */
static int *vcount, *vdispl, *scount, *sdispl, *rcount, *rdispl;
static size_t *a2a_from;
/* where rank q keeps its block for rank r in its all-to-all input */
static size_t a2a_send_displ(size_t total, int q, int r)
{
    size_t d = 0;
    for (int m = 0; m < r; m++)
        d += share(total, (q + m) % size);
    return d;
}
static void v_shape(size_t total)
{
    for (int q = 0; q < size; q++) {
        vcount[q] = (int)share(total, q);
        vdispl[q] = q ? vdispl[q - 1] + vcount[q - 1] : 0;
        scount[q] = rcount[q] = (int)share(total, (rank + q) % size);
        sdispl[q] = q ? sdispl[q - 1] + scount[q - 1] : 0;
        rdispl[q] = q ? rdispl[q - 1] + rcount[q - 1] : 0;
        a2a_from[q] = a2a_send_displ(total, q, rank);
    }
}
/* the reductions' op: MPI_SUM, or with -u a program's own float sum made
 * with MPI_Op_create; with -U the same sum declared not commutative (both
 * libraries then combine in rank order: libdpcoll on its rank-order
 * algorithms alone, so -U takes -a auto) */
static MPI_Op red_op = MPI_SUM;
static int user_op;   /* 1: -u, 2: -U */
static void user_fsum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    const float *x = in;
    float *y = inout;
    for (int i = 0; i < *len; i++)
        y[i] += x[i];
}
/* what counts as the model predicting a row */
#define MODEL_TOLERANCE 0.30

typedef struct bufs {
    float *in, *out, *ref;
    size_t cap;
} bufs_t;


static float input_value(int r, size_t i, unsigned gen);

/* A row's buffers, fresh and of its own size (bytes a call's vector, for
 * every call in flight), freed after it: a program's calls of different
 * sizes use buffers of their own, and what one row's calls did to the
 * pages must not carry into the rows after it (libdpcoll makes reused
 * buffers holding whole 2 MiB pages huge, DPCOLL_HUGEPAGES; one buffer for
 * every row made the small rows' prefixes of it huge once the large rows
 * had run, which no program of separate small buffers sees). */
static void bufs_alloc(bufs_t *b, size_t bytes, size_t ncalls)
{
    b->cap = (bytes / sizeof(float) + (size_t)size + 16) * ncalls;
    b->in = malloc(sizeof(float) * b->cap * (size_t)size);
    b->out = malloc(sizeof(float) * b->cap * (size_t)size);
    b->ref = malloc(sizeof(float) * b->cap * (size_t)size);
    if (!b->in || !b->out || !b->ref) {
        fprintf(stderr, "dpcoll_bench: out of memory for %zu bytes x %zu calls\n", bytes, ncalls);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < b->cap * (size_t)size; i++)
        b->in[i] = input_value(rank, i, 0);
}

static void bufs_free(bufs_t *b)
{
    free(b->in);
    free(b->out);
    free(b->ref);
    b->in = b->out = b->ref = NULL;
}

/* A rank's input elements for a call of that count (rank q's: in_elems_of) */
static size_t in_elems_of(int c, size_t count, int q)
{
    if (is_v(c))
        return c == C_ALLGATHERV ? share(count, q) : count;
    return timed_in_elems(coll_of[c], count, size);
}
static size_t in_elems(int c, size_t count)
{
    return in_elems_of(c, count, rank);
}

/* elements per rank-block and bytes counted for algbw, for `bytes` asked */
static void shape(int c, size_t bytes, size_t *count, size_t *nbytes)
{
    if (is_v(c)) {   /* (the whole vector, T: every rank's input or output spans it) */
        *count = bytes / sizeof(float) ? bytes / sizeof(float) : 1;
        *nbytes = *count * sizeof(float);
        return;
    }
    *count = timed_count(coll_of[c], bytes / sizeof(float), size);
    /* (the whole buffer: the larger of a rank's input and output) */
    size_t in = timed_in_elems(coll_of[c], *count, size), out = timed_out_elems(coll_of[c], *count, size);
    *nbytes = (in > out ? in : out) * sizeof(float);
}

static double bus_factor(int c)
{
    double p = size;
    return c == C_ALLREDUCE ? 2 * (p - 1) / p : c == C_BCAST ? 1 : (p - 1) / p;   /* (v: as theirs) */
}

/* -i N: N calls in flight at once, each on buffers of its own (MPI_I...
 * then one MPI_Waitall), and the time per call: many small nonblocking
 * calls posted together, as a training step posts its gradients' buckets */
static int inflight;
static size_t out_elems(int c, size_t count);

static int run_nb(int c, int native, bufs_t *b, size_t count, float *out)
{
    int n = (int)count, rc = MPI_SUCCESS;
    size_t sin = in_elems(c, count), sout = out_elems(c, count);
    MPI_Request req[inflight];
    MPI_Status st[inflight];
    for (int i = 0; i < inflight && rc == MPI_SUCCESS; i++) {
        float *in = b->in + (size_t)i * sin, *o = out + (size_t)i * sout;
        switch (c) {
        case C_ALLREDUCE:
            rc = (native ? PMPI_Iallreduce : MPI_Iallreduce)(in, o, n, MPI_FLOAT, red_op,
                                                             MPI_COMM_WORLD, &req[i]);
            break;
        case C_RS:
            rc = (native ? PMPI_Ireduce_scatter_block : MPI_Ireduce_scatter_block)(
                in, o, n, MPI_FLOAT, red_op, MPI_COMM_WORLD, &req[i]);
            break;
        case C_ALLGATHER:
            rc = (native ? PMPI_Iallgather : MPI_Iallgather)(in, n, MPI_FLOAT, o, n, MPI_FLOAT,
                                                             MPI_COMM_WORLD, &req[i]);
            break;
        case C_BCAST:
            rc = (native ? PMPI_Ibcast : MPI_Ibcast)(o, n, MPI_FLOAT, 0, MPI_COMM_WORLD, &req[i]);
            break;
        case C_ALLTOALL:
            rc = (native ? PMPI_Ialltoall : MPI_Ialltoall)(in, n, MPI_FLOAT, o, n, MPI_FLOAT,
                                                           MPI_COMM_WORLD, &req[i]);
            break;
        case C_RSV:
            rc = (native ? PMPI_Ireduce_scatter : MPI_Ireduce_scatter)(
                in, o, vcount, MPI_FLOAT, red_op, MPI_COMM_WORLD, &req[i]);
            break;
        case C_ALLGATHERV:
            rc = (native ? PMPI_Iallgatherv : MPI_Iallgatherv)(in, vcount[rank], MPI_FLOAT, o,
                                                               vcount, vdispl, MPI_FLOAT,
                                                               MPI_COMM_WORLD, &req[i]);
            break;
        default:
            rc = (native ? PMPI_Ialltoallv : MPI_Ialltoallv)(in, scount, sdispl, MPI_FLOAT, o,
                                                             rcount, rdispl, MPI_FLOAT,
                                                             MPI_COMM_WORLD, &req[i]);
        }
    }
    /* (the MPI library's own wait for its own calls; the program's for ours) */
    return rc != MPI_SUCCESS ? rc
                             : (native ? PMPI_Waitall : MPI_Waitall)(inflight, req, st);
}

/* -P: the same N calls as MPI-4 persistent requests (MPI_..._init once per
 * row and side, outside the timing), each timed call an MPI_Startall of the
 * N then one MPI_Waitall: a training loop that reuses its buckets' requests
 * every step. The requests are bound to their buffers, and each side always
 * runs on its own output (ours b->out, native b->ref: measure, wrong).
 * Each of our algorithms timed at a size has its own requests (slot
 * ours_slot; made while it is the forced one), the MPI library's are in
 * slot NATIVE_SLOT. */
#define MAX_SIDES 24     /* our algorithms timed at one size, at most */
#define NATIVE_SLOT MAX_SIDES
static int persistent, ours_slot;
static MPI_Request *preq[MAX_SIDES + 1];

static MPI_Request *slot_requests(int native)
{
    return preq[native ? NATIVE_SLOT : ours_slot];
}

static int make_persistent(int c, int native, bufs_t *b, size_t count, float *out)
{
    int n = (int)count, rc = MPI_SUCCESS;
    size_t sin = in_elems(c, count), sout = out_elems(c, count);
    MPI_Request *req = slot_requests(native);
    for (int i = 0; i < inflight && rc == MPI_SUCCESS; i++) {
        float *in = b->in + (size_t)i * sin, *o = out + (size_t)i * sout;
        MPI_Info info = MPI_INFO_NULL;
        switch (c) {
        case C_ALLREDUCE:
            rc = (native ? PMPI_Allreduce_init : MPI_Allreduce_init)(
                in, o, n, MPI_FLOAT, red_op, MPI_COMM_WORLD, info, &req[i]);
            break;
        case C_RS:
            rc = (native ? PMPI_Reduce_scatter_block_init : MPI_Reduce_scatter_block_init)(
                in, o, n, MPI_FLOAT, red_op, MPI_COMM_WORLD, info, &req[i]);
            break;
        case C_ALLGATHER:
            rc = (native ? PMPI_Allgather_init : MPI_Allgather_init)(
                in, n, MPI_FLOAT, o, n, MPI_FLOAT, MPI_COMM_WORLD, info, &req[i]);
            break;
        case C_BCAST:
            rc = (native ? PMPI_Bcast_init : MPI_Bcast_init)(o, n, MPI_FLOAT, 0, MPI_COMM_WORLD,
                                                              info, &req[i]);
            break;
        case C_ALLTOALL:
            rc = (native ? PMPI_Alltoall_init : MPI_Alltoall_init)(
                in, n, MPI_FLOAT, o, n, MPI_FLOAT, MPI_COMM_WORLD, info, &req[i]);
            break;
        case C_RSV:
            rc = (native ? PMPI_Reduce_scatter_init : MPI_Reduce_scatter_init)(
                in, o, vcount, MPI_FLOAT, red_op, MPI_COMM_WORLD, info, &req[i]);
            break;
        case C_ALLGATHERV:
            rc = (native ? PMPI_Allgatherv_init : MPI_Allgatherv_init)(
                in, vcount[rank], MPI_FLOAT, o, vcount, vdispl, MPI_FLOAT, MPI_COMM_WORLD, info,
                &req[i]);
            break;
        default:
            rc = (native ? PMPI_Alltoallv_init : MPI_Alltoallv_init)(
                in, scount, sdispl, MPI_FLOAT, o, rcount, rdispl, MPI_FLOAT, MPI_COMM_WORLD, info,
                &req[i]);
        }
    }
    return rc;
}

static void free_persistent(void)
{
    for (int slot = 0; slot <= NATIVE_SLOT; slot++)
        for (int i = 0; i < inflight; i++)
            if (preq[slot][i] != MPI_REQUEST_NULL)
                (slot == NATIVE_SLOT ? PMPI_Request_free : MPI_Request_free)(&preq[slot][i]);
}

static int run_persistent(int native)
{
    MPI_Status st[inflight];
    MPI_Request *req = slot_requests(native);
    int rc = (native ? PMPI_Startall : MPI_Startall)(inflight, req);
    return rc != MPI_SUCCESS ? rc : (native ? PMPI_Waitall : MPI_Waitall)(inflight, req, st);
}

static int run(int c, int native, bufs_t *b, size_t count, float *out)
{
    int n = (int)count;
    if (persistent)
        return run_persistent(native);
    if (inflight)
        return run_nb(c, native, b, count, out);
    switch (c) {
    case C_ALLREDUCE:
        return (native ? PMPI_Allreduce : MPI_Allreduce)(b->in, out, n, MPI_FLOAT, red_op, MPI_COMM_WORLD);
    case C_RS:
        return (native ? PMPI_Reduce_scatter_block : MPI_Reduce_scatter_block)(b->in, out, n, MPI_FLOAT,
                                                                              red_op, MPI_COMM_WORLD);
    case C_ALLGATHER:
        return (native ? PMPI_Allgather : MPI_Allgather)(b->in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD);
    case C_BCAST:
        return (native ? PMPI_Bcast : MPI_Bcast)(out, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    case C_ALLTOALL:
        return (native ? PMPI_Alltoall : MPI_Alltoall)(b->in, n, MPI_FLOAT, out, n, MPI_FLOAT, MPI_COMM_WORLD);
    case C_RSV:
        return (native ? PMPI_Reduce_scatter : MPI_Reduce_scatter)(b->in, out, vcount, MPI_FLOAT,
                                                                  red_op, MPI_COMM_WORLD);
    case C_ALLGATHERV:
        return (native ? PMPI_Allgatherv : MPI_Allgatherv)(b->in, vcount[rank], MPI_FLOAT, out,
                                                          vcount, vdispl, MPI_FLOAT, MPI_COMM_WORLD);
    default:
        return (native ? PMPI_Alltoallv : MPI_Alltoallv)(b->in, scount, sdispl, MPI_FLOAT, out,
                                                        rcount, rdispl, MPI_FLOAT, MPI_COMM_WORLD);
    }
}

/* The inputs: rank q's element i (of all its calls' input buffers) in
 * generation gen. The buffers start in generation 0 and every check fills
 * new ones; the timed calls run on what the last check left (their values
 * do not matter to the time). */
static float input_value(int q, size_t i, unsigned gen)
{
    return (float)((i * 13 + (size_t)q * 7 + gen) % 17) - 8;
}

/* What call k's output element j must be, by the collective's definition. */
static float expected(int c, size_t count, size_t k, size_t j, unsigned gen)
{
    size_t n = count, base = k * in_elems(c, count);   /* (the same on every rank but allgatherv's) */
    float sum = 0;
    int q = 0;
    switch (c) {
    case C_ALLREDUCE:
        for (q = 0; q < size; q++)
            sum += input_value(q, base + j, gen);
        return sum;
    case C_RS:
        for (q = 0; q < size; q++)
            sum += input_value(q, base + (size_t)rank * n + j, gen);
        return sum;
    case C_ALLGATHER:
        return input_value((int)(j / n), base + j % n, gen);
    case C_BCAST:
        return input_value(0, base + j, gen);
    case C_ALLTOALL:
        return input_value((int)(j / n), base + (size_t)rank * n + j % n, gen);
    case C_RSV:
        for (q = 0; q < size; q++)
            sum += input_value(q, base + (size_t)vdispl[rank] + j, gen);
        return sum;
    case C_ALLGATHERV:   /* (element j is in rank q's share: call k's input of q) */
        while (q + 1 < size && j >= (size_t)vdispl[q + 1])
            q++;
        return input_value(q, k * (size_t)vcount[q] + j - (size_t)vdispl[q], gen);
    default:             /* (element j came from rank q, out of its block for us) */
        while (q + 1 < size && j >= (size_t)rdispl[q + 1])
            q++;
        return input_value(q, base + a2a_from[q] + j - (size_t)rdispl[q], gen);
    }
}

/* Before each call, untimed: a bcast's root fills its buffer with the input
 * (the others' buffers are overwritten by the call itself). It used to be
 * done inside the timed call, which added a copy of the whole buffer to both
 * sides' times (a third of a 16 MiB bcast's). */
static void refill(int c, bufs_t *b, size_t count, float *out)
{
    if (c == C_BCAST && rank == 0)
        for (int i = 0; i < (inflight ? inflight : 1); i++)
            memcpy(out + (size_t)i * count, b->in + (size_t)i * count, sizeof(float) * count);
}

/* -t: the caches as a program leaves them, the producer of a call's input
 * and the consumer of its output being the rank itself (a training step
 * writes the gradients it all-reduces and reads the result). Without it
 * the buffers are left as the collectives themselves leave them, where a
 * rank that wrote into a peer's output last time may still hold those lines
 * in its own cache: that favours writing into peers over reading from them,
 * which a program that reads its results does not see. */
static int touch;
static size_t calls(void)
{
    return inflight ? (size_t)inflight : 1;
}
static void produce(int c, bufs_t *b, size_t count)
{
    /* every line of the input written (with the value it holds: the
     * results stay checkable); a bcast's root refills (refill) */
    if (c != C_BCAST)
        touch_write_lines(b->in, in_elems(c, count) * sizeof(float) * calls());
}
static void consume(int c, const float *out, size_t count)
{
    touch_read_lines(out, out_elems(c, count) * sizeof(float) * calls());
}

static size_t out_elems(int c, size_t count)
{
    if (is_v(c))
        return c == C_RSV ? share(count, rank) : count;
    return timed_out_elems(coll_of[c], count, size);
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* DPCOLL_AUTOTUNE=N (the library's setting, read here too): a call's first
 * DPC_AUTOTUNE_TRIAL_CALLS(N, up to DPC_AUTOTUNE_CANDIDATES) calls are a
 * warm-up and then N of each candidate algorithm, the next one decides; so
 * many more warm-up calls of ours, so that the timed ones run the one kept */
static int autotune_calls;

static void sync_with(int native)
{
    int one = 1, s;
    (native ? PMPI_Allreduce : MPI_Allreduce)(&one, &s, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
}

/* The sides timed at a size: sides[0..nalgo-1] our algorithms (by name,
 * "auto" for the model's pick), then the MPI library's own collective. */
static const char *cur_coll;

static void set_side(int s, int nalgo, const char *const *algo)
{
    if (s < nalgo) {
        dpcoll_set_algorithm(cur_coll, algo[s]);
        ours_slot = s;
    }
}

/* Medians over reps of the slowest rank, for each of our nalgo algorithms
 * (ours[s]) and for native, all timed together: batches of every side in
 * turn, round after round, the order reversed each round (0 1 .. n, then
 * n .. 1 0), so that every algorithm of a row and the MPI library's call
 * are timed in the same spells of the VM (whose speed drifts by 1.3-2x
 * over minutes) and, round to round, after other neighbours. Each
 * algorithm used to be timed apart against a native side of its own, one
 * after another. (On session 36's VM both ways agreed as well with each
 * algorithm forced over a sweep of its own, 4 runs each of allgather,
 * allreduce and alltoall, 16 KiB-4 MiB, -t and -t -i 4: docs/bench/s36.) */
static void measure(int c, bufs_t *b, size_t count, int reps, int nalgo, const char *const *algo,
                    double *ours, double *nat)
{
    int sides = nalgo + 1, done[MAX_SIDES + 1] = {0};
    double *t[MAX_SIDES + 1];
    for (int s = 0; s < sides; s++)
        t[s] = malloc(sizeof(double) * (size_t)reps);
    /* warm-up: caches, endpoints, pools, and a lap of the mailboxes' rings
     * (as many calls on every rank: a v-variant's output differs from rank
     * to rank, and each call is collective, so its whole vector counts) */
    int warm = warmup_calls((is_v(c) ? count : out_elems(c, count)) * sizeof(float), 3);
    for (int s = 0; s < sides; s++) {
        int native = s == nalgo;
        set_side(s, nalgo, algo);
        /* (with DPCOLL_AUTOTUNE the MPI library's side as many calls as
         * ours: a size's first tens of calls still get faster, 1 MiB
         * allreduce's 10 or so here, so it is no fair race otherwise) */
        for (int k = 0; k < warm + autotune_calls; k++) {
            refill(c, b, count, native ? b->ref : b->out);
            sync_with(native);
            run(c, native, b, count, native ? b->ref : b->out);
        }
    }
    /* batches long enough that the one or two calls after each switch (the
     * other side's ranks still leaving its last call) do not move a median,
     * and at least two rounds where there are 10 repeats or more */
    int batch = reps >= 10 ? (reps + 1) / 2 : reps;
    for (int round = 0; done[0] < reps || done[nalgo] < reps; round++)
        for (int j = 0; j < sides; j++) {
            int s = round % 2 ? sides - 1 - j : j, native = s == nalgo;
            if (done[s] >= reps)
                continue;
            set_side(s, nalgo, algo);
            for (int k = 0; k < batch && done[s] < reps; k++) {
                refill(c, b, count, native ? b->ref : b->out);
                if (touch)
                    produce(c, b, count);
                sync_with(native);
                double t0 = MPI_Wtime();
                run(c, native, b, count, native ? b->ref : b->out);
                t[s][done[s]++] = (MPI_Wtime() - t0) / (double)calls();
                if (touch)
                    consume(c, native ? b->ref : b->out, count);
            }
        }
    double med[MAX_SIDES + 1], mx[MAX_SIDES + 1];
    for (int s = 0; s < sides; s++) {
        qsort(t[s], (size_t)reps, sizeof(double), cmpd);
        med[s] = t[s][reps / 2];
    }
    PMPI_Allreduce(med, mx, sides, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    for (int s = 0; s < nalgo; s++)
        ours[s] = mx[s];
    *nat = mx[nalgo];
    for (int s = 0; s < sides; s++)
        free(t[s]);
}

/* Two calls of each side, each on inputs of a new generation, each result
 * checked against the closed form: the elements wrong, summed over the
 * calls and ranks, ours in *ours_wrong and the MPI library's in
 * *native_wrong. (Two: a persistent request's first start can be right
 * where the next ones are not, as MPICH 4.0.2's allgather at 2 ranks.) */
static void check(int c, bufs_t *b, size_t count, long *ours_wrong, long *native_wrong)
{
    static unsigned gen;
    size_t in = in_elems(c, count) * calls(), n = out_elems(c, count);
    long w[2] = {0, 0}, all[2];
    for (int round = 0; round < 2; round++) {
        gen++;
        for (size_t i = 0; i < in; i++)
            b->in[i] = input_value(rank, i, gen);
        for (int side = 0; side < 2; side++) {
            float *out = side ? b->ref : b->out;
            for (size_t i = 0; i < n * calls(); i++)
                out[i] = -12345.f;
            refill(c, b, count, out);
            run(c, side, b, count, out);
            for (size_t k = 0; k < calls(); k++)
                for (size_t j = 0; j < n; j++) {
                    float want = expected(c, count, k, j, gen);
                    w[side] += memcmp(&out[k * n + j], &want, sizeof(float)) != 0;
                }
        }
    }
    PMPI_Allreduce(w, all, 2, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
    *ours_wrong = all[0];
    *native_wrong = all[1];
}

static void usage(void)
{
    if (rank == 0)
        printf("usage: mpiexec -n P dpcoll_bench [options]\n"
               "  -c LIST    collectives (allreduce,reduce_scatter_block,allgather,bcast,alltoall,\n"
               "             reduce_scatter,allgatherv,alltoallv; default all; the v-variants with\n"
               "             unequal shares, rank q's (q+1)/(p(p+1)/2) of the vector)\n"
               "  -b BYTES   smallest size (default 8)\n"
               "  -e BYTES   largest size (default 64M; K, M, G suffixes)\n"
               "  -f N       size factor between steps (default 4)\n"
               "  -n N       repeats per size (default 40; x5 up to 64 KiB, /4 above 1 MiB)\n"
               "  -a MODE    'all' (every algorithm and auto, default), 'auto', or a comma-separated\n"
               "             list of algorithms (and auto): timed together, in turns\n"
               "  -o FILE    also write CSV\n"
               "  -p FILE    also write a gnuplot script plotting busbw vs size (run: gnuplot FILE)\n"
               "  -q         no table on stdout (CSV/plot only)\n"
               "  -t         producer/consumer caches: before each call every rank writes its input\n"
               "             (a bcast's root its buffer), after it reads its output; both untimed\n"
               "  -i N       nonblocking: N calls in flight at once, each on buffers of its own\n"
               "             (MPI_I... N times, then MPI_Waitall), time per call (default -e 1M)\n"
               "  -P         persistent: the -i N calls (default 1) as MPI-4 persistent requests made\n"
               "             once per row (MPI_..._init), then MPI_Startall + MPI_Waitall each time\n"
               "  -u         reductions with a program's op (a float sum made with MPI_Op_create)\n"
               "             instead of MPI_SUM; the model prices it as MPI_SUM\n"
               "  -U         as -u, the op declared not commutative (MPI_Op_create(f, 0, ...)):\n"
               "             reduced in rank order, by libdpcoll's rank-order algorithms (-a auto)\n");
}

/* -a: is name one of the comma-separated list's? */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL)
        if (!strncmp(p, name, n) && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

/* The algorithms timed for collective c, "auto" first: with -a all every
 * one, with -a auto the model's pick alone, with -a LIST those listed. */
static int sides_of(int c, const char *list, int all_algos, const char **algo)
{
    int n = 0;
    if (!list || listed(list, "auto"))
        algo[n++] = "auto";
    for (int ai = 0; all_algos && n < MAX_SIDES; ai++) {
        const char *name = dpcoll_algorithm_name(cname[c], ai);
        if (!name)
            break;
        /* (one that cannot run on this job's world, the one-sided ones
         * across nodes say, would time the model's pick under its name) */
        if ((!list || listed(list, name)) &&
            dpcoll_predict(cname[c], name, 1, MPI_FLOAT, MPI_COMM_WORLD) >= 0)
            algo[n++] = name;
    }
    return n;
}

/* -a's names: "auto" or an algorithm of a collective timed (use) */
static int algo_known(const char *p, size_t n, const int *use)
{
    int ok = n == 4 && !strncmp(p, "auto", 4);
    for (int c = 0; c < NC && !ok; c++)
        for (int ai = 0; use[c] && !ok; ai++) {
            const char *name = dpcoll_algorithm_name(cname[c], ai);
            if (!name)
                break;
            ok = strlen(name) == n && !strncmp(p, name, n);
        }
    return ok;
}
/* -c's names: a collective this tool times */
static int coll_known(const char *p, size_t n, const int *use)
{
    (void)use;
    int ok = 0;
    for (int c = 0; c < NC; c++)
        ok |= strlen(cname[c]) == n && !strncmp(p, cname[c], n);
    return ok;
}

/* Every name of a comma-separated list known (else 0, and the first name
 * it does not know in *bad) */
static int list_known(const char *list, int (*known)(const char *, size_t, const int *),
                      const int *use, char *bad, size_t badlen)
{
    for (const char *p = list; p; p = strchr(p, ',') ? strchr(p, ',') + 1 : NULL) {
        size_t n = strcspn(p, ",");
        if (!known(p, n, use)) {
            snprintf(bad, badlen, "%.*s", (int)n, p);
            return 0;
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t minb = 8, maxb = 64u << 20;
    int factor = 4, reps = 40, all_algos = 1, quiet = 0, use[NC];
    for (int c = 0; c < NC; c++)
        use[c] = 1;
    const char *coll_list = NULL;
    const char *csv = NULL, *plot = NULL, *algo_list = NULL;
    int opt, max_given = 0, bad_size = 0;
    while ((opt = getopt(argc, argv, "c:b:e:f:n:a:o:p:qti:PuUh")) != -1) {
        switch (opt) {
        case 'c':   /* (names whole: allgather is not allgatherv) */
            coll_list = optarg;
            for (int c = 0; c < NC; c++)
                use[c] = listed(optarg, cname[c]);
            break;
        case 'b': minb = tool_parse_size(optarg); bad_size |= !minb; break;
        case 'e': maxb = tool_parse_size(optarg); max_given = 1; bad_size |= !maxb; break;
        case 'f': factor = atoi(optarg) > 1 ? atoi(optarg) : 2; break;
        case 'n': reps = atoi(optarg) > 0 ? atoi(optarg) : 1; break;
        case 'a':
            all_algos = strcmp(optarg, "auto") != 0;
            algo_list = all_algos && strcmp(optarg, "all") ? optarg : NULL;
            break;
        case 'o': csv = optarg; break;
        case 'p': plot = optarg; break;
        case 'q': quiet = 1; break;
        case 't': touch = 1; break;
        case 'i': inflight = atoi(optarg) > 0 && atoi(optarg) <= 1024 ? atoi(optarg) : 0; break;
        case 'P': persistent = 1; break;
        case 'u': user_op = 1; break;
        case 'U': user_op = 2; break;
        default: usage(); MPI_Finalize(); return opt == 'h' ? 0 : 2;
        }
    }
    {   /* read and checked as the library does; rank 0's value, as the library's */
        dpc_config_t cfg;
        char err[256];
        if (dpc_config_read(&cfg, err, sizeof(err)) != DPC_OK)
            dpc_config_defaults(&cfg);   /* (MPI_Init has said what is wrong) */
        int at = (int)cfg.autotune;
        PMPI_Bcast(&at, 1, MPI_INT, 0, MPI_COMM_WORLD);
        autotune_calls = at > 0 ? (int)DPC_AUTOTUNE_TRIAL_CALLS(at, DPC_AUTOTUNE_CANDIDATES) + 1 : 0;
    }
    if (user_op)
        MPI_Op_create(user_fsum, user_op == 1, &red_op);
    if (user_op == 2)
        all_algos = 0, algo_list = NULL;   /* (a forced algorithm that may not run it is not run) */
    if (persistent && !inflight)
        inflight = 1;
    if (inflight && !max_given)
        maxb = 1u << 20;
    if (bad_size) {
        if (rank == 0)
            fprintf(stderr, "dpcoll_bench: -b and -e take a size in bytes, 1 or more, with K, M "
                            "or G for powers of 1024 (8, 512K, 64M)\n");
        MPI_Finalize();
        return 2;
    }
    char bad[64];
    if (coll_list && !list_known(coll_list, coll_known, use, bad, sizeof(bad))) {
        if (rank == 0)
            fprintf(stderr, "dpcoll_bench: -c: '%s' is not a collective it times (allreduce, "
                    "reduce_scatter_block, allgather, bcast, alltoall, reduce_scatter, "
                    "allgatherv, alltoallv)\n", bad);
        MPI_Finalize();
        return 2;
    }
    if (algo_list && !list_known(algo_list, algo_known, use, bad, sizeof(bad))) {
        if (rank == 0)
            fprintf(stderr, "dpcoll_bench: -a: '%s' is not 'all', 'auto' or an algorithm of the "
                            "collectives timed (dpcoll_info lists them)\n", bad);
        MPI_Finalize();
        return 2;
    }
    MPI_Request *preq_all = malloc(sizeof(MPI_Request) * (size_t)(MAX_SIDES + 1) * calls());
    for (int slot = 0; slot <= NATIVE_SLOT; slot++) {
        preq[slot] = preq_all + (size_t)slot * calls();
        for (size_t i = 0; i < calls(); i++)
            preq[slot][i] = MPI_REQUEST_NULL;
    }
    if (!dpcoll_active() && rank == 0)
        fprintf(stderr, "dpcoll_bench: libdpcoll is not active (DPCOLL_DISABLE?): both sides are MPI's\n");
    bufs_t b = {0};
    int *v_all = malloc(sizeof(int) * 6 * (size_t)size);
    a2a_from = malloc(sizeof(size_t) * (size_t)size);
    if (!v_all || !a2a_from) {
        fprintf(stderr, "dpcoll_bench: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    vcount = v_all, vdispl = v_all + size, scount = v_all + 2 * size;
    sdispl = v_all + 3 * size, rcount = v_all + 4 * size, rdispl = v_all + 5 * size;
    int any_v = 0;
    for (int c = 0; c < NC; c++)
        any_v |= use[c] && is_v(c);
    FILE *fc = csv && rank == 0 ? fopen(csv, "w") : NULL;
    if (fc)
        fprintf(fc, "collective,ranks,bytes,count,type,algorithm,time_us,algbw_GBs,busbw_GBs,wrong,"
                    "native_us,native_busbw_GBs,speedup,model_us,native_wrong,calls,buffers\n");
    if (rank == 0 && !quiet)
        printf("# dpcoll_bench: %d ranks, float, %s; medians of %d repeats (slowest rank); "
               "native = the MPI library's own collective, same buffers, same run%s\n", size,
               user_op == 2 ? "sum as a program's op declared not commutative (MPI_Op_create)"
               : user_op    ? "sum as a program's op (MPI_Op_create)" : "sum", reps,
               touch ? "; each rank writes its input before each call and reads its output after "
                       "(-t)" : "");
    if (rank == 0 && !quiet && any_v)
        printf("# reduce_scatter, allgatherv, alltoallv: unequal shares, rank q's (q+1)/%d of the "
               "vector (size: the whole vector; count: its elements); the model's column priced "
               "by these shares (dpcoll_predictv; alltoallv's counts are each rank's own: -)\n",
               size * (size + 1) / 2);
    if (rank == 0 && !quiet && persistent)
        printf("# persistent (-P -i %d): %d persistent requests on buffers of their own, made "
               "once per row; each time MPI_Startall then MPI_Waitall; times are per call\n",
               inflight, inflight);
    else if (rank == 0 && !quiet && inflight)
        printf("# nonblocking (-i %d): %d calls in flight at once (MPI_I... on buffers of their "
               "own, then MPI_Waitall); times are per call\n", inflight, inflight);
    double logsum[NC] = {0};
    int nlog[NC] = {0}, model_rows = 0, model_within = 0;
    for (int c = 0; c < NC; c++) {
        if (!use[c])
            continue;
        if (rank == 0 && !quiet)
            printf("\n# %s\n%12s %10s %6s %-19s %11s %10s %8s %8s %7s %11s %8s %8s %9s\n", cname[c],
                   "size(B)", "count", "type", "algorithm", "time(us)", "model(us)", "algbw", "busbw",
                   "#wrong", "native(us)", "busbw", "speedup", "nat#wrong");
        int rows = 0, within = 0, native_bad = 0;
        for (size_t bytes = minb; bytes <= maxb; bytes *= (size_t)factor) {
            size_t count, nbytes;
            shape(c, bytes, &count, &nbytes);
            /* small calls are cheap: more repeats, so that the first calls
             * after a switch between ours and native (slower while the other
             * side's state settles) stay far from the median */
            int r = nbytes > (1u << 20) ? (reps + 3) / 4 : nbytes <= 65536 ? reps * 5 : reps;
            if (r < 3)
                r = 3;
            /* the sides: "auto" first, then the collective's algorithms */
            const char *algo[MAX_SIDES];
            int nalgo = sides_of(c, algo_list, all_algos, algo);
            if (nalgo == 0)
                continue;   /* (-a LIST: none of this collective's) */
            cur_coll = cname[c];
            if (is_v(c))
                v_shape(count);
            bufs_alloc(&b, bytes > nbytes ? bytes : nbytes, calls());
            if (persistent)
                for (int s = 0; s <= nalgo; s++) {
                    int native = s == nalgo;
                    set_side(s, nalgo, algo);
                    if (make_persistent(c, native, &b, count, native ? b.ref : b.out) != MPI_SUCCESS) {
                        fprintf(stderr, "dpcoll_bench: cannot make the persistent %s requests\n", cname[c]);
                        MPI_Abort(MPI_COMM_WORLD, 1);
                    }
                }
            /* timed first, then checked: the check runs the algorithm the
             * timed calls ran (DPCOLL_AUTOTUNE: the one kept, not one it
             * was still trying) */
            double ours[MAX_SIDES], nat;
            measure(c, &b, count, r, nalgo, algo, ours, &nat);
            for (int s = 0; s < nalgo; s++) {
                int is_auto = !strcmp(algo[s], "auto");
                long w, nw;
                set_side(s, nalgo, algo);
                check(c, &b, count, &w, &nw);
                const char *shown = algo[s], *priced = algo[s];
                char label[64], picked[48];
                if (is_auto) {      /* what the model (or DPCOLL_AUTOTUNE) picked */
                    snprintf(picked, sizeof(picked), "%s", dpcoll_last_algorithm());
                    snprintf(label, sizeof(label), "auto:%s", picked);
                    shown = label;
                    /* (-U: the pick among the rank-order algorithms, which
                     * dpcoll_predict's "auto" would not restrict itself to) */
                    if (user_op == 2)
                        priced = picked;
                }
                /* (the v-variants by their shares; an all-to-all's
                 * counts are each rank's own, which the model does not
                 * price: no prediction) */
                double model = c == C_ALLTOALLV ? -1
                               : is_v(c) ? dpcoll_predictv(cname[c], priced, vcount, MPI_FLOAT,
                                                           MPI_COMM_WORLD)
                                         : dpcoll_predict(cname[c], priced, (int)count, MPI_FLOAT,
                                                          MPI_COMM_WORLD);
                if (!is_auto && model > 0) {
                    rows++;
                    within += fabs(model - ours[s]) <= MODEL_TOLERANCE * ours[s];
                }
                double alg = (double)nbytes / ours[s] / 1e9, bus = alg * bus_factor(c);
                double nbus = (double)nbytes / nat / 1e9 * bus_factor(c);
                if (is_auto && nw == 0) {
                    logsum[c] += log(nat / ours[s]);
                    nlog[c]++;
                }
                native_bad += is_auto && nw != 0;
                char mcol[32] = "-";   /* (no prediction: the algorithm does not apply, or alltoallv) */
                if (model > 0)
                    snprintf(mcol, sizeof(mcol), "%.2f", model * 1e6);
                if (rank == 0 && !quiet)
                    printf("%12zu %10zu %6s %-19s %11.2f %10s %8.3f %8.3f %7ld %11.2f %8.3f %7.2fx %9ld\n",
                           nbytes, count, "float", shown, ours[s] * 1e6, mcol, alg, bus, w,
                           nat * 1e6, nbus, nat / ours[s], nw);
                if (fc)
                    fprintf(fc, "%s,%d,%zu,%zu,float,%s,%.3f,%.4f,%.4f,%ld,%.3f,%.4f,%.3f,%.3f,%ld,"
                            "%s,%s\n", cname[c], size, nbytes, count, shown, ours[s] * 1e6, alg, bus, w,
                            nat * 1e6, nbus, nat / ours[s], model > 0 ? model * 1e6 : -1, nw,
                            persistent ? "persistent" : inflight ? "nonblocking" : "blocking",
                            touch ? "touched" : "as_left");
            }
            if (persistent)
                free_persistent();
            bufs_free(&b);
            dpcoll_set_algorithm(cname[c], "auto");
        }
        if (rank == 0 && !quiet && nlog[c])
            printf("# %s: geometric mean speedup of auto over native: %.2fx\n", cname[c],
                   exp(logsum[c] / nlog[c]));
        if (rank == 0 && !quiet && native_bad)
            printf("# %s: the MPI library's own result was wrong in %d size%s (nat#wrong), left "
                   "out of the mean: its time there is not that of the collective\n", cname[c],
                   native_bad, native_bad > 1 ? "s" : "");
        if (rank == 0 && !quiet && rows)
            printf("# %s: the model within %.0f%% of the measured time on %d of %d algorithm rows\n",
                   cname[c], MODEL_TOLERANCE * 100, within, rows);
        model_rows += rows;
        model_within += within;
    }
    if (rank == 0 && !quiet && model_rows)
        printf("\n# the cost model within %.0f%% of the measured time on %d of %d algorithm rows\n",
               MODEL_TOLERANCE * 100, model_within, model_rows);
    if (fc)
        fclose(fc);
    if (plot && csv && rank == 0) {
        FILE *fp = fopen(plot, "w");
        if (fp) {
            /* one panel per collective: native and each algorithm, busbw vs size */
            fprintf(fp, "set datafile separator ','\nset terminal pngcairo noenhanced size 1400,%d font ',10'\n"
                        "set output '%.*s.png'\nset logscale x 2\nset key left top\nset grid\n"
                        /* sizes as people write them, not 1.04858e+06 */
                        "set xtics ('8' 8, '64' 64, '512' 512, '4K' 4096, '32K' 32768, "
                        "'256K' 262144, '2M' 2097152, '16M' 16777216, '128M' 134217728, "
                        "'1G' 1073741824)\n"
                        "set multiplot layout %d,1\n", 380 * NC, (int)(strlen(plot) - (strstr(plot, ".gp") ? 3 : 0)),
                    plot, NC);
            for (int c = 0; c < NC; c++) {
                if (!use[c])
                    continue;
                fprintf(fp, "set title '%s, %d ranks: bus bandwidth (GB/s) vs size (bytes)'\n", cname[c], size);
                /* each series its own rows (awk), so its points join up */
                fprintf(fp, "plot \"< awk -F, '$1 == \\\"%s\\\" && $6 ~ /^auto/' %s\" using 3:12 "
                            "with linespoints lw 3 title 'MPICH native', "
                            "\"< awk -F, '$1 == \\\"%s\\\" && $6 ~ /^auto/' %s\" using 3:9 "
                            "with linespoints lw 2 title 'libdpcoll, the model picks'",
                        cname[c], csv, cname[c], csv);
                for (int ai = 0;; ai++) {
                    const char *algo = dpcoll_algorithm_name(cname[c], ai);
                    if (!algo)
                        break;
                    fprintf(fp, ", \"< awk -F, '$1 == \\\"%s\\\" && $6 == \\\"%s\\\"' %s\" using 3:9 "
                                "with linespoints dt 2 title 'libdpcoll %s'", cname[c], algo, csv, algo);
                }
                fprintf(fp, "\n");
            }
            fprintf(fp, "unset multiplot\n");
            fclose(fp);
        }
    }
    free(preq_all);
    free(v_all);
    free(a2a_from);
    if (user_op)
        MPI_Op_free(&red_op);
    MPI_Finalize();
    return 0;
}
