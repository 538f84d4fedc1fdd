/*
 * Randomized cases, compared bit for bit with the MPI library's own result
 * (PMPI_*) on copies of the same inputs: which collective, the call form
 * (blocking; nonblocking, several in flight at once on one or more
 * communicators, each rank interleaving communicators in an order of its
 * own, some batches with a blocking call among them, completed together;
 * persistent, started twice with new
 * data), the communicator, in place or not, the datatype (holes and
 * contiguous blocks included) and op, the counts (0, tiny, near powers of
 * two, a pipeline's chunk edges, megabytes; unequal per rank for the
 * v-forms, blocks in any order with gaps between them), the root, and an
 * algorithm forced or the cost model's. The gaps of a receive buffer must
 * come back as they were. Data are integer-valued, so any order of
 * summation gives the same bits.
 *
 * Built with -DFAKE_DEVICE (test_fakedev_fuzz, run with the fake device
 * plugin) libdpcoll's buffers are in the fake device's memory, which the
 * host cannot touch: on every rank (the CUDA IPC paths), on some (mixed:
 * staging), or on none, drawn per case, at a random offset into the
 * device allocation; the reference runs on host copies.
 *
 * Every rank draws the same cases: case i's choices come from a generator
 * seeded by (DPC_FUZZ_SEED, i); each rank's data from (seed, i, rank).
 * DPC_FUZZ_CASES (default 400) cases run; a failure names the seed and the
 * case, and DPC_FUZZ_SEED=s DPC_FUZZ_ONLY=i runs that case alone (a list
 * i,j,...: each alone, in that order)
 * (DPC_FUZZ_FIRST=i: cases i to DPC_FUZZ_CASES, batched as in the full run).
 * DPC_FUZZ_TRACE names each case before it runs, DPC_FUZZ_DUMP adds its
 * buffers and counts, DPC_FUZZ_VERBOSE prints every failure.
 */
#include "config.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dpcoll.h"
#include "mpi_util.h"

#ifdef FAKE_DEVICE
void *fake_dev_alloc(size_t n);
void fake_dev_copy(void *dst, const void *src, size_t n);
/* device allocations for each side of each call in flight at once,
 * reused by every case */
#define DEV_BYTES ((size_t)10 << 20)
#define BATCH 4   /* nonblocking calls in flight at once, at most */
static char *dev_s[BATCH], *dev_r[BATCH];
#endif

enum { ALLREDUCE, RS_BLOCK, RS, ALLGATHER, ALLGATHERV, BCAST, ALLTOALL, ALLTOALLV, NCOLL };
static const char *const coll_name[NCOLL] = {"allreduce", "reduce_scatter_block", "reduce_scatter",
                                             "allgather", "allgatherv", "bcast", "alltoall",
                                             "alltoallv"};
static int reduces(int coll) { return coll <= RS; }

enum { BLOCKING, NONBLOCKING, PERSISTENT };
#ifndef BATCH
#define BATCH 4
#endif
static const char *const form_name[] = {"blocking", "nonblocking", "persistent"};

#define NCOMMS 4
static MPI_Comm comms[NCOMMS];
static const char *const comm_name[NCOMMS] = {"world", "dup", "split", "reversed"};

/* How a type's bytes are filled: small integers of its base kind (so sums
 * stay exact), or any bytes (moved, never reduced). */
typedef struct {
    const char *name;
    MPI_Datatype dt;
    MPI_Op op;    /* MPI_OP_NULL: not for reductions */
    char kind;    /* i int32, f float, d double, l int64, s int16, u uint8, b any bytes */
} dtype_t;
static dtype_t types[20];
static int ntypes;
static MPI_Datatype t_float3, t_strided, t_vector, t_2bytes, t_affine;
static MPI_Op op_isum, op_ssum, op_affine;

/* The program's own ops (MPI_Op_create): on libdpcoll in every form;
 * PMPI with the same op is the reference. */
static void user_isum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* int16 sums on a type of two MPI_BYTEs */
static void user_ssum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int16_t *)inout)[i] = (int16_t)(((int16_t *)inout)[i] + ((int16_t *)in)[i]);
}

/* affine maps composed (mpi_util.h): not commutative, so MPI's result is
 * the ranks' maps in rank order, which libdpcoll's rank-order algorithms
 * must give too */
static void user_affine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    t_affine_compose(in, inout, *len);
}

static void setup(void)
{
    MPI_Type_contiguous(3, MPI_FLOAT, &t_float3);
    MPI_Type_commit(&t_float3);
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &t_strided);   /* an int, a hole */
    MPI_Type_commit(&t_strided);
    MPI_Type_vector(2, 2, 3, MPI_SHORT, &t_vector);   /* 2 shorts, a hole, 2 shorts */
    MPI_Type_commit(&t_vector);
    MPI_Type_contiguous(2, MPI_BYTE, &t_2bytes);
    MPI_Type_commit(&t_2bytes);
    MPI_Op_create(user_isum, 1, &op_isum);
    MPI_Op_create(user_ssum, 1, &op_ssum);
    MPI_Type_contiguous(2, MPI_UINT32_T, &t_affine);
    MPI_Type_commit(&t_affine);
    MPI_Op_create(user_affine, 0, &op_affine);
    dtype_t t[] = {
        {"int/sum", MPI_INT, MPI_SUM, 'i'},          {"int/max", MPI_INT, MPI_MAX, 'i'},
        {"int/bxor", MPI_INT, MPI_BXOR, 'i'},        {"float/sum", MPI_FLOAT, MPI_SUM, 'f'},
        {"float/min", MPI_FLOAT, MPI_MIN, 'f'},      {"double/sum", MPI_DOUBLE, MPI_SUM, 'd'},
        {"int64/sum", MPI_INT64_T, MPI_SUM, 'l'},    {"short/sum", MPI_SHORT, MPI_SUM, 's'},
        {"uint8/bor", MPI_UINT8_T, MPI_BOR, 'u'},    {"2int/minloc", MPI_2INT, MPI_MINLOC, 'i'},
        /* (the MPI library reduces predefined types only: these are moved) */
        {"float3", t_float3, MPI_OP_NULL, 'b'},      {"strided int", t_strided, MPI_OP_NULL, 'b'},
        {"byte", MPI_BYTE, MPI_OP_NULL, 'b'},        {"vector of shorts", t_vector, MPI_OP_NULL, 'b'},
        {"int/user sum", MPI_INT, op_isum, 'i'},     {"2 bytes/user int16 sum", t_2bytes, op_ssum, 's'},
        {"2 uint32/user affine maps (not commutative)", t_affine, op_affine, 'l'},
    };
    /* (the last three are drawn by draw()'s substitution, not by index: the
     * cases of every seed stay the ones they were before them) */
    ntypes = (int)(sizeof(t) / sizeof(t[0])) - 3;
    memcpy(types, t, sizeof(t));
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, t_rank, &comms[2]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, t_size - t_rank, &comms[3]);
}

static void teardown(void)
{
    for (int i = 1; i < NCOMMS; i++)
        MPI_Comm_free(&comms[i]);
    MPI_Type_free(&t_float3);
    MPI_Type_free(&t_strided);
    MPI_Type_free(&t_vector);
    MPI_Type_free(&t_2bytes);
    MPI_Op_free(&op_isum);
    MPI_Op_free(&op_ssum);
    MPI_Op_free(&op_affine);
    MPI_Type_free(&t_affine);
}

/* ---- random numbers (splitmix64) ---------------------------------------- */

static uint64_t mix(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}
static uint64_t rng_state;
static uint64_t rnd(void) { return mix(rng_state++); }
static long below(long n) { return n > 0 ? (long)(rnd() % (uint64_t)n) : 0; }

/* Elements of a block: 0 and tiny, near powers of two (chunk edges),
 * medium, now and then megabytes. */
static long draw_count(void)
{
    long r = below(100);
    if (r < 20)
        return below(9);
    if (r < 50)
        return 9 + below(3000);
    if (r < 80) {
        long c = (1L << (8 + below(11))) + below(7) - 3;
        return c < 0 ? 0 : c;
    }
    if (r < 95)
        return 3000 + below(100000);
    return 100000 + below(500000);
}

/* ---- one case ------------------------------------------------------------ */

typedef struct {
    int coll, form, comm, ip, type, root;
    const char *algo;
    MPI_Comm c;
    int p, me;
    long count;                    /* the block (allreduce, bcast: the vector) */
    int *rc, *rd, *sc, *sd;        /* v-forms: [p] each */
    MPI_Aint ext;
    size_t sbytes, rbytes;
    char *s, *r, *s_ref, *r_ref;   /* ours and the reference's buffers */
    char *ds, *dr;                 /* fake device: where ours are there (NULL: host) */
    MPI_Request req;
    char what[200];
} case_t;

static void fill(char *b, size_t bytes, char kind, uint64_t salt)
{
    size_t unit = kind == 'd' || kind == 'l' ? 8 : kind == 's' ? 2 : kind == 'b' || kind == 'u' ? 1 : 4;
    for (size_t i = 0; i < bytes;) {
        uint64_t v = mix(salt + i);
        long small = (long)(v % 101) - 50;
        if (i + unit > bytes)   /* (a partial element at the end: bytes are bytes) */
            kind = 'b';
        switch (kind) {
        case 'i': { int32_t x = (int32_t)(small * 7); memcpy(b + i, &x, 4); i += 4; break; }
        case 'f': { float x = (float)small; memcpy(b + i, &x, 4); i += 4; break; }
        case 'd': { double x = (double)(small * 3); memcpy(b + i, &x, 8); i += 8; break; }
        case 'l': { int64_t x = small * 1000003; memcpy(b + i, &x, 8); i += 8; break; }
        case 's': { int16_t x = (int16_t)small; memcpy(b + i, &x, 2); i += 2; break; }
        default: b[i++] = (char)v; break;
        }
    }
}

/* The counts and displacements of the v-forms: unequal blocks, gaps
 * between them, placed in a shuffled order. Returns the elements spanned. */
static long layout(int p, const int *cnt, int *dis, int shuffle)
{
    int order[64];
    for (int k = 0; k < p; k++)
        order[k] = k;
    for (int k = p - 1; shuffle && k > 0; k--) {
        int j = (int)below(k + 1), t = order[k];
        order[k] = order[j];
        order[j] = t;
    }
    long at = 0;
    for (int i = 0; i < p; i++) {
        at += below(3);
        dis[order[i]] = (int)at;
        at += cnt[order[i]];
    }
    return at;
}

/* Draws case i (the same on every rank) and sets up its buffers (slot:
 * its place among the calls in flight). */
static void draw(case_t *k, uint64_t seed, long i, int form, int slot)
{
    (void)slot;   /* (host buffers: each case has its own) */
    memset(k, 0, sizeof(*k));
    rng_state = mix(seed * 1000003u + (uint64_t)i);
    k->coll = (int)below(NCOLL);
    k->form = form;
    k->comm = (int)below(t_size > 1 ? NCOMMS : 2);
    k->c = comms[k->comm];
    MPI_Comm_size(k->c, &k->p);
    MPI_Comm_rank(k->c, &k->me);
    int rt;
    do
        k->type = (int)below(ntypes);
    while (reduces(k->coll) && types[k->type].op == MPI_OP_NULL);
    /* one reduction in four of int/sum, short/sum or int64/sum as the
     * program's op of the same data (int; int16 on two MPI_BYTEs; affine
     * maps on two uint32, which do not commute), from a hash of its own,
     * so that no later draw of the case moves. (In every form: they run
     * on libdpcoll in all three, on device buffers too.) */
    if (reduces(k->coll) && mix(seed ^ 0x05e40bull ^ (uint64_t)i * 104729u) % 4 == 0 &&
        (types[k->type].dt == MPI_INT || types[k->type].dt == MPI_SHORT ||
         types[k->type].dt == MPI_INT64_T) &&
        types[k->type].op == MPI_SUM)
        k->type = types[k->type].dt == MPI_INT     ? ntypes
                  : types[k->type].dt == MPI_SHORT ? ntypes + 1
                                                   : ntypes + 2;
    const dtype_t *t = &types[k->type];
    MPI_Aint lb;
    MPI_Type_get_extent(t->dt, &lb, &k->ext);
    k->ip = k->coll != BCAST && below(3) == 0;
    k->root = (int)below(k->p);
    /* an algorithm forced one time in two */
    int na = 0;
    while (dpcoll_algorithm_name(coll_name[k->coll], na))
        na++;
    rt = (int)below(2 * na);
    k->algo = rt < na ? dpcoll_algorithm_name(coll_name[k->coll], rt) : "auto";
    /* keep a rank's buffers within a few MiB */
    long count = draw_count();
    long cap = (long)((8u << 20) / ((size_t)k->ext * (size_t)k->p + 1));
    k->count = count > cap ? cap : count;
    int p = k->p;
    long n = k->count, sn = 0, rn = 0;
    if (k->coll == ALLGATHERV || k->coll == RS || k->coll == ALLTOALLV) {
        k->rc = calloc((size_t)p, sizeof(int));
        k->rd = calloc((size_t)p, sizeof(int));
        k->sc = calloc((size_t)p, sizeof(int));
        k->sd = calloc((size_t)p, sizeof(int));
    }
    switch (k->coll) {
    case ALLREDUCE: sn = rn = n; break;
    case RS_BLOCK: sn = n * p; rn = k->ip ? sn : n; break;
    case RS:
        for (int j = 0; j < p; j++) {
            k->rc[j] = (int)below(n + 1);
            sn += k->rc[j];
        }
        rn = k->ip ? sn : k->rc[k->me];
        break;
    case ALLGATHER: sn = n; rn = n * p; break;
    case ALLGATHERV:
        for (int j = 0; j < p; j++)
            k->rc[j] = (int)below(n + 1);
        rn = layout(p, k->rc, k->rd, (int)below(2));
        sn = k->rc[k->me];
        break;
    case BCAST: sn = 0; rn = n; break;
    case ALLTOALL: sn = rn = n * p; break;
    case ALLTOALLV: {
        /* counts[a][b] from a to b; symmetric in place (MPI needs it so) */
        uint64_t sym = rnd();
        for (int a = 0; a < p; a++)
            for (int b = 0; b < p; b++) {
                long v = (long)below(n + 1);
                int lo = a < b ? a : b, hi = a < b ? b : a;
                if (k->ip)   /* the same draw for (a, b) and (b, a) */
                    v = (long)(mix(sym + (uint64_t)(lo * 64 + hi)) % (uint64_t)(n + 1));
                if (a == k->me)
                    k->sc[b] = (int)v;
                if (b == k->me)
                    k->rc[a] = (int)v;
            }
        sn = layout(p, k->sc, k->sd, (int)below(2));
        rn = layout(p, k->rc, k->rd, (int)below(2));
        if (k->ip) {   /* (in place the receive side is the send side) */
            memcpy(k->rd, k->sd, sizeof(int) * (size_t)p);
            rn = sn;
        }
        break;
    }
    }
    k->sbytes = (size_t)sn * (size_t)k->ext;
    k->rbytes = (size_t)rn * (size_t)k->ext;
    snprintf(k->what, sizeof(k->what), "seed %llu case %ld: %s %s on %s (%d ranks), %s, count %ld%s, "
             "root %d, algorithm %s", (unsigned long long)seed, i, form_name[form],
             coll_name[k->coll], comm_name[k->comm], p, t->name, n, k->ip ? ", in place" : "",
             k->root, k->algo);
    k->s = malloc(k->sbytes + 1);
    k->s_ref = malloc(k->sbytes + 1);
    k->r = malloc(k->rbytes + 1);
    k->r_ref = malloc(k->rbytes + 1);
#ifdef FAKE_DEVICE
    /* on the device: everywhere, nowhere, or on this rank by a coin of its
     * own; at an offset that keeps the type's alignment */
    int where = (int)below(4);
    int here = where == 0 || (where == 1 && (mix(seed + (uint64_t)i * 31 + (uint64_t)t_rank) & 1));
    size_t align = (size_t)k->ext % 8 == 0 ? 8 : (size_t)k->ext % 4 == 0 ? 4 : (size_t)k->ext % 2 == 0 ? 2 : 1;
    size_t so = (size_t)below(64) * align, ro = (size_t)below(64) * align;
    if (here && so + k->sbytes <= DEV_BYTES && ro + k->rbytes <= DEV_BYTES) {
        k->ds = dev_s[slot] + so;
        k->dr = dev_r[slot] + ro;
    }
    snprintf(k->what + strlen(k->what), sizeof(k->what) - strlen(k->what), ", %s",
             where == 0 ? "device buffers" : where == 1 ? "device buffers on some ranks" : "host buffers");
#endif
}

/* libdpcoll's buffers: the host ones, or their device copies */
static void to_device(case_t *k)
{
#ifdef FAKE_DEVICE
    if (k->ds) {
        fake_dev_copy(k->ds, k->s, k->sbytes);
        fake_dev_copy(k->dr, k->r, k->rbytes);
    }
#else
    (void)k;
#endif
}
static void from_device(case_t *k)
{
#ifdef FAKE_DEVICE
    if (k->dr)
        fake_dev_copy(k->r, k->dr, k->rbytes);
#else
    (void)k;
#endif
}

/* Fresh inputs (salt: a persistent case's second start gets new ones). In
 * place, or a bcast, the receive buffer is the input. */
static void inputs(case_t *k, uint64_t seed, long i, int salt)
{
    char kind = types[k->type].kind;
    uint64_t base = mix(seed ^ mix((uint64_t)i * 977 + (uint64_t)salt)) + (uint64_t)t_rank * 1000003u;
    fill(k->s, k->sbytes, kind, base);
    memset(k->r, 0x5a, k->rbytes);   /* gaps the call must leave as they are */
    if (k->ip && k->coll != ALLGATHER && k->coll != ALLGATHERV)
        fill(k->r, k->rbytes, kind, base);
    if (k->ip && k->coll == ALLGATHER)
        fill(k->r + (size_t)k->me * (size_t)k->count * (size_t)k->ext,
             (size_t)k->count * (size_t)k->ext, kind, base);
    if (k->ip && k->coll == ALLGATHERV)
        fill(k->r + (size_t)k->rd[k->me] * (size_t)k->ext, (size_t)k->rc[k->me] * (size_t)k->ext,
             kind, base);
    if (k->coll == BCAST && k->me == k->root)
        fill(k->r, k->rbytes, kind, base);
    memcpy(k->s_ref, k->s, k->sbytes);
    memcpy(k->r_ref, k->r, k->rbytes);
}

/* The call: libdpcoll's in the case's form, or the library's own (native,
 * blocking). One switch for every form. */
#define CALL(blk, nb, init, ...)                                                         \
    (native                          ? P##blk(__VA_ARGS__)                               \
     : k->form == BLOCKING           ? blk(__VA_ARGS__)                                  \
     : k->form == NONBLOCKING        ? nb(__VA_ARGS__, &k->req)                          \
                                     : init(__VA_ARGS__, MPI_INFO_NULL, &k->req))
static int call(case_t *k, int native)
{
    const dtype_t *t = &types[k->type];
    void *s = native ? k->s_ref : k->ds ? k->ds : k->s, *r = native ? k->r_ref : k->dr ? k->dr : k->r;
    const void *in = k->ip ? MPI_IN_PLACE : s;
    int n = (int)k->count;
    if (!native)
        dpcoll_set_algorithm(coll_name[k->coll], k->algo);
    switch (k->coll) {
    case ALLREDUCE:
        return CALL(MPI_Allreduce, MPI_Iallreduce, MPI_Allreduce_init, in, r, n, t->dt, t->op, k->c);
    case RS_BLOCK:
        return CALL(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block,
                    MPI_Reduce_scatter_block_init, in, r, n, t->dt, t->op, k->c);
    case RS:
        return CALL(MPI_Reduce_scatter, MPI_Ireduce_scatter, MPI_Reduce_scatter_init, in, r, k->rc,
                    t->dt, t->op, k->c);
    case ALLGATHER:
        return CALL(MPI_Allgather, MPI_Iallgather, MPI_Allgather_init, in, n, t->dt, r, n, t->dt,
                    k->c);
    case ALLGATHERV:
        return CALL(MPI_Allgatherv, MPI_Iallgatherv, MPI_Allgatherv_init, in, k->rc[k->me], t->dt,
                    r, k->rc, k->rd, t->dt, k->c);
    case BCAST:
        return CALL(MPI_Bcast, MPI_Ibcast, MPI_Bcast_init, r, n, t->dt, k->root, k->c);
    case ALLTOALL:
        return CALL(MPI_Alltoall, MPI_Ialltoall, MPI_Alltoall_init, in, n, t->dt, r, n, t->dt, k->c);
    default:
        return CALL(MPI_Alltoallv, MPI_Ialltoallv, MPI_Alltoallv_init, in, k->sc, k->sd, t->dt, r,
                    k->rc, k->rd, t->dt, k->c);
    }
}

/* Bytes of the result to compare: a reduce-scatter in place leaves its
 * result in the first block, and the rest of the buffer is the library's
 * to use (MPI says nothing of it). */
static size_t result_bytes(const case_t *k)
{
    if (k->ip && (k->coll == RS_BLOCK || k->coll == RS))
        return (size_t)(k->coll == RS ? k->rc[k->me] : k->count) * (size_t)k->ext;
    return k->rbytes;
}

/* The reference: the MPI library's own call on the copies. Except where
 * MPICH 4.0.2 is wrong (plain MPICH programs show both):
 *  - MPI_Allgatherv on a one-rank communicator puts the block at the start
 *    of the receive buffer, not at displs[0]: there the reference is the
 *    block sent to itself (PMPI_Sendrecv follows the type's holes, as the
 *    call must);
 *  - MPI_Reduce_scatter in place with unequal counts (100000 and 400000
 *    floats on 2 ranks) aborts in its own memcpy ("memory ranges
 *    overlap"): a reduce-scatter in place is checked against the same call
 *    out of place on a copy of its input. */
static int reference(case_t *k)
{
    if (k->ip && (k->coll == RS || k->coll == RS_BLOCK)) {
        const dtype_t *t = &types[k->type];
        size_t bytes = result_bytes(k);
        char *out = malloc(bytes + 1);
        int rc = k->coll == RS
                     ? PMPI_Reduce_scatter(k->r_ref, out, k->rc, t->dt, t->op, k->c)
                     : PMPI_Reduce_scatter_block(k->r_ref, out, (int)k->count, t->dt, t->op, k->c);
        memcpy(k->r_ref, out, bytes);
        free(out);
        return rc;
    }
    if (k->coll != ALLGATHERV || k->p != 1)
        return call(k, 1);
    if (k->ip)
        return MPI_SUCCESS;   /* (the block is in place already) */
    MPI_Datatype dt = types[k->type].dt;
    return PMPI_Sendrecv(k->s_ref, k->rc[0], dt, 0, 7, k->r_ref + (size_t)k->rd[0] * (size_t)k->ext,
                         k->rc[0], dt, 0, 7, k->c, MPI_STATUS_IGNORE);
}

static void check_case(case_t *k, const char *when)
{
    t_cases++;
    from_device(k);
    if (reference(k) != MPI_SUCCESS) {
        t_fail("%s: the MPI library's own call failed", k->what);
        return;
    }
    size_t cmp = result_bytes(k);
    if (memcmp(k->r, k->r_ref, cmp)) {
        size_t at = 0;
        while (at < cmp && k->r[at] == k->r_ref[at])
            at++;
        t_fail("%s%s: rank %d's result differs from PMPI's at byte %zu of %zu", k->what, when,
               t_rank, at, k->rbytes);
        if (getenv("DPC_FUZZ_VERBOSE")) {
            size_t nd = 0, last = at;
            for (size_t b = at; b < cmp; b++)
                if (k->r[b] != k->r_ref[b]) {
                    nd++;
                    last = b;
                }
            printf("FAILED: %s%s: rank %d's result differs from PMPI's at byte %zu of %zu (%zu "
                   "bytes differ, the last at %zu; there %02x, want %02x)\n", k->what, when, t_rank,
                   at, k->rbytes, nd, last, (unsigned char)k->r[at], (unsigned char)k->r_ref[at]);
        }
    }
}

static void release(case_t *k)
{
    free(k->s);
    free(k->s_ref);
    free(k->r);
    free(k->r_ref);
    free(k->rc);
    free(k->rd);
    free(k->sc);
    free(k->sd);
}

/* ---- the run ------------------------------------------------------------- */

static uint64_t env_u(const char *name, uint64_t dflt)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 10) : dflt;
}

/* The order this rank posts a batch in: any order that keeps each
 * communicator's own (MPI asks that of collectives on one communicator, not
 * across them), drawn per rank, so that ranks interleave communicators
 * differently and a peer's messages for one come while this rank is still
 * in another. */
static void posting_order(const case_t *ks, int g, uint64_t seed, long i, int *order)
{
    uint64_t st = mix(seed ^ 0x0a11ull ^ (uint64_t)i * 131u ^ (uint64_t)(t_rank + 1) << 40);
    bool posted[BATCH] = {false};
    for (int n = 0; n < g; n++) {
        int ready[BATCH], nready = 0;
        for (int j = 0; j < g; j++) {
            bool first = !posted[j];
            for (int e = 0; e < j && first; e++)
                first = posted[e] || ks[e].comm != ks[j].comm;
            if (first)
                ready[nready++] = j;
        }
        order[n] = ready[mix(st++) % (uint64_t)nready];
        posted[order[n]] = true;
    }
}

START_TEST(test_fuzz)
{
    uint64_t seed = env_u("DPC_FUZZ_SEED", 1);
    /* DPC_FUZZ_ONLY: a list of cases, each run alone, in its order */
    long list[64], nlist = 0;
    for (const char *o = getenv("DPC_FUZZ_ONLY"); o && *o && nlist < 64;) {
        char *end;
        list[nlist++] = strtol(o, &end, 10);
        o = *end == ',' ? end + 1 : "";
    }
    long ncases = (long)env_u("DPC_FUZZ_CASES", 400), only = nlist ? list[0] : -1;
    long first = only >= 0 ? only : (long)env_u("DPC_FUZZ_FIRST", 0),
         last = only >= 0 ? only + 1 : ncases;
    int trace = getenv("DPC_FUZZ_TRACE") != NULL;   /* each case named before it runs */
    setup();
#ifdef FAKE_DEVICE
    for (int j = 0; j < BATCH; j++) {
        dev_s[j] = fake_dev_alloc(DEV_BYTES);
        dev_r[j] = fake_dev_alloc(DEV_BYTES);
    }
#endif
    case_t ks[BATCH];
    for (long i = first, at = 0; i < last;) {
        /* the form, and for nonblocking calls how many go at once (the
         * next cases: each keeps its own number, so ONLY reruns it alone) */
        rng_state = mix(seed ^ 0x5eedull ^ (uint64_t)i * 7919u);
        int form = (int)below(3), g = form == NONBLOCKING && only < 0 ? 1 + (int)below(BATCH) : 1;
        if (i + g > last)
            g = (int)(last - i);
        /* half the nonblocking batches end with a blocking call, which each
         * rank makes at its own place among the others (posting_order):
         * the calls in flight must progress while a rank is in it */
        bool mixed = g > 1 && below(2);
        for (int j = 0; j < g; j++) {
            draw(&ks[j], seed, i + j, mixed && j == g - 1 ? BLOCKING : form, j);
            ks[j].req = MPI_REQUEST_NULL;
            inputs(&ks[j], seed, i + j, 0);
            to_device(&ks[j]);
            if (trace && t_rank == 0)
                printf("%s%s\n", ks[j].what, j ? " (with the one before)" : "");
            if (getenv("DPC_FUZZ_DUMP")) {
                case_t *k = &ks[j];
                printf("rank %d: sbytes %zu rbytes %zu ds %p dr %p s %p r %p", t_rank, k->sbytes, k->rbytes,
                       (void *)k->ds, (void *)k->dr, (void *)k->s, (void *)k->r);
                for (int q = 0; k->rc && q < k->p; q++)
                    printf(" [%d: rc %d rd %d sc %d sd %d]", q, k->rc[q], k->rd[q], k->sc[q], k->sd[q]);
                printf("\n");
            }
        }
        if (trace)
            fflush(stdout);
        int bad = 0;
        MPI_Request reqs[BATCH];
        int order[BATCH];
        posting_order(ks, g, seed, i, order);
        for (int n = 0; n < g; n++) {
            int j = order[n];
            if (call(&ks[j], 0) != MPI_SUCCESS) {
                t_fail("%s: the call failed: %s", ks[j].what, dpcoll_error_message());
                bad = 1;
            }
            reqs[j] = ks[j].req;
            if (form == PERSISTENT && !bad)
                MPI_Start(&ks[j].req);
        }
        MPI_Status sts[BATCH];
        if (form != BLOCKING && !bad)
            MPI_Waitall(g, reqs, sts);
        for (int j = 0; j < g && !bad; j++)
            check_case(&ks[j], "");
        if (form == PERSISTENT && !bad) {
            /* again, with new inputs in the same buffers */
            inputs(&ks[0], seed, i, 1);
            to_device(&ks[0]);
            MPI_Start(&ks[0].req);
            MPI_Wait(&ks[0].req, MPI_STATUS_IGNORE);
            check_case(&ks[0], " (second start)");
            MPI_Request_free(&ks[0].req);
        }
        for (int j = 0; j < g; j++)
            release(&ks[j]);
        i += g;
        if (nlist && ++at < nlist) {   /* the next case of the list */
            i = list[at];
            last = i + 1;
        }
    }
    for (int c = 0; c < NCOLL; c++)
        dpcoll_set_algorithm(coll_name[c], "auto");
    teardown();
    t_agree("randomized collectives against PMPI");
}
END_TEST

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    Suite *s = suite_create("mpi_fuzz");
    TCase *tc = tcase_create("fuzz");
    tcase_set_timeout(tc, 600);
    tcase_add_test(tc, test_fuzz);
    suite_add_tcase(s, tc);
    int failed = t_run(s);
    if (t_rank == 0)
        printf("np=%d: %ld randomized cases a rank compared with PMPI\n", t_size, t_cases);
    MPI_Finalize();
    return failed ? 1 : 0;
}
