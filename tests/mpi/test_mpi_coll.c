/*
 * MPI integration: every intercepted collective, run through the shim, is
 * compared bit for bit with the MPI library's own result (PMPI_*) on the
 * same inputs in the same process, over types and ops, counts (0, 1, odd,
 * >= 4 MiB), in place and not, communicators (world, split, reversed order,
 * dup, self) and every algorithm forced in turn. Data are integer-valued so
 * any summation order gives the same bits.
 *
 * DPC_TEST_QUICK=1 (valgrind) keeps the small counts and world/split only.
 * DPC_TEST_MODE=nonblocking runs every case through the MPI_I... form
 * (completed in turn by MPI_Wait, an MPI_Test loop, MPI_Waitall, MPI_Waitany,
 * MPI_Testall and MPI_Waitsome); DPC_TEST_MODE=persistent through the
 * ..._init form, MPI_Start, the same completions and MPI_Request_free.
 * DPC_TEST_API=large makes every call through MPI-4's large-count form
 * (MPI_Allreduce_c, MPI_Iallgatherv_c, ...: MPI_Count counts, MPI_Aint
 * displacements), as mpi4py 4 does; run.sh checks with DPCOLL_STATS that
 * they ran on libdpcoll.
 */
#include "config.h"
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "dpcoll.h"
#include "mpi_util.h"

#define NCOMMS 5
static MPI_Comm comms[NCOMMS];
static const char *comm_names[NCOMMS] = {"world", "split", "reversed", "dup", "self"};
static int quick;
#define LARGE (1 << 20)   /* elements: >= 4 MiB of int */

static void make_comms(void)
{
    comms[0] = MPI_COMM_WORLD;
    MPI_Comm_split(MPI_COMM_WORLD, t_rank % 2, t_rank, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 0, t_size - t_rank, &comms[2]);
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[3]);
    comms[4] = MPI_COMM_SELF;
}

static void free_comms(void)
{
    for (int i = 1; i < 4; i++)
        MPI_Comm_free(&comms[i]);
}

static int ncomms(int count)
{
    return count >= LARGE ? 1 : quick ? 2 : NCOMMS;
}

/* ---- the call forms: blocking, nonblocking, persistent ------------------ */

enum { BLOCKING, NONBLOCKING, PERSISTENT };
static int mode;
static const char *mode_names[] = {"blocking", "nonblocking", "persistent"};
static unsigned ncompletions;
static int large_api;   /* DPC_TEST_API=large: the _c forms */

/* n ints as MPI_Count or MPI_Aint (NULL stays NULL; free after the call) */
static MPI_Count *lcounts(const int *v, int n)
{
    if (!v)
        return NULL;
    MPI_Count *c = malloc(sizeof(MPI_Count) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        c[i] = v[i];
    return c;
}
static MPI_Aint *ldispls(const int *v, int n)
{
    if (!v)
        return NULL;
    MPI_Aint *c = malloc(sizeof(MPI_Aint) * (size_t)(n ? n : 1));
    for (int i = 0; i < n; i++)
        c[i] = v[i];
    return c;
}
static int csize(MPI_Comm comm)
{
    int p;
    MPI_Comm_size(comm, &p);
    return p;
}

/* Complete one request, rotating through the completion calls. */
static void complete(MPI_Request *r)
{
    int flag = 0, idx, out, ids[1], rc = MPI_SUCCESS;
    MPI_Status st[1];
    switch (ncompletions++ % 6) {
    case 0: rc = MPI_Wait(r, st); break;
    case 1: while (!flag && !rc) rc = MPI_Test(r, &flag, st); break;
    case 2: rc = MPI_Waitall(1, r, st); break;
    case 3: rc = MPI_Waitany(1, r, &idx, st); break;
    case 4: while (!flag && !rc) rc = MPI_Testall(1, r, &flag, st); break;
    default: rc = MPI_Waitsome(1, r, &out, ids, st); break;
    }
    if (rc != MPI_SUCCESS)
        t_fail("a %s collective completed with error %d", mode_names[mode], rc);
    if (mode == PERSISTENT) {
        if (*r == MPI_REQUEST_NULL)
            t_fail("a persistent request became MPI_REQUEST_NULL on completion");
        else
            MPI_Request_free(r);
    } else if (*r != MPI_REQUEST_NULL) {
        t_fail("a completed nonblocking request is not MPI_REQUEST_NULL");
    }
}

/* Start (persistent) and complete a request made by one of the forms. */
static void run_req(MPI_Request *r)
{
    if (mode == PERSISTENT)
        MPI_Start(r);
    complete(r);
}

static void t_allreduce(const void *in, void *out, int n, MPI_Datatype dt, MPI_Op op, MPI_Comm comm)
{
    MPI_Request r;
    if (large_api) {
        if (mode == BLOCKING)
            MPI_Allreduce_c(in, out, n, dt, op, comm);
        else if (mode == NONBLOCKING ? MPI_Iallreduce_c(in, out, n, dt, op, comm, &r)
                                     : MPI_Allreduce_init_c(in, out, n, dt, op, comm, MPI_INFO_NULL, &r))
            t_fail("%s allreduce_c refused", mode_names[mode]);
        else
            run_req(&r);
        return;
    }
    if (mode == BLOCKING)
        MPI_Allreduce(in, out, n, dt, op, comm);
    else if (mode == NONBLOCKING ? MPI_Iallreduce(in, out, n, dt, op, comm, &r)
                                 : MPI_Allreduce_init(in, out, n, dt, op, comm, MPI_INFO_NULL, &r))
        t_fail("%s allreduce refused", mode_names[mode]);
    else
        run_req(&r);
}

static void t_reduce_scatter_block(const void *in, void *out, int n, MPI_Datatype dt, MPI_Op op,
                                   MPI_Comm comm)
{
    MPI_Request r;
    if (large_api) {
        if (mode == BLOCKING)
            MPI_Reduce_scatter_block_c(in, out, n, dt, op, comm);
        else if (mode == NONBLOCKING
                     ? MPI_Ireduce_scatter_block_c(in, out, n, dt, op, comm, &r)
                     : MPI_Reduce_scatter_block_init_c(in, out, n, dt, op, comm, MPI_INFO_NULL, &r))
            t_fail("%s reduce_scatter_block_c refused", mode_names[mode]);
        else
            run_req(&r);
        return;
    }
    if (mode == BLOCKING)
        MPI_Reduce_scatter_block(in, out, n, dt, op, comm);
    else if (mode == NONBLOCKING
                 ? MPI_Ireduce_scatter_block(in, out, n, dt, op, comm, &r)
                 : MPI_Reduce_scatter_block_init(in, out, n, dt, op, comm, MPI_INFO_NULL, &r))
        t_fail("%s reduce_scatter_block refused", mode_names[mode]);
    else
        run_req(&r);
}

static void t_reduce_scatter(const void *in, void *out, const int *rc, MPI_Datatype dt, MPI_Op op,
                             MPI_Comm comm)
{
    MPI_Request r;
    if (large_api) {
        MPI_Count *c = lcounts(rc, csize(comm));
        if (mode == BLOCKING)
            MPI_Reduce_scatter_c(in, out, c, dt, op, comm);
        else if (mode == NONBLOCKING ? MPI_Ireduce_scatter_c(in, out, c, dt, op, comm, &r)
                                     : MPI_Reduce_scatter_init_c(in, out, c, dt, op, comm,
                                                                 MPI_INFO_NULL, &r))
            t_fail("%s reduce_scatter_c refused", mode_names[mode]);
        else
            run_req(&r);
        free(c);
        return;
    }
    if (mode == BLOCKING)
        MPI_Reduce_scatter(in, out, rc, dt, op, comm);
    else if (mode == NONBLOCKING ? MPI_Ireduce_scatter(in, out, rc, dt, op, comm, &r)
                                 : MPI_Reduce_scatter_init(in, out, rc, dt, op, comm, MPI_INFO_NULL, &r))
        t_fail("%s reduce_scatter refused", mode_names[mode]);
    else
        run_req(&r);
}

static void t_allgather(const void *s, int sc, MPI_Datatype st, void *rb, int rcount,
                        MPI_Datatype rt, MPI_Comm comm)
{
    MPI_Request r;
    if (large_api) {
        if (mode == BLOCKING)
            MPI_Allgather_c(s, sc, st, rb, rcount, rt, comm);
        else if (mode == NONBLOCKING ? MPI_Iallgather_c(s, sc, st, rb, rcount, rt, comm, &r)
                                     : MPI_Allgather_init_c(s, sc, st, rb, rcount, rt, comm,
                                                            MPI_INFO_NULL, &r))
            t_fail("%s allgather_c refused", mode_names[mode]);
        else
            run_req(&r);
        return;
    }
    if (mode == BLOCKING)
        MPI_Allgather(s, sc, st, rb, rcount, rt, comm);
    else if (mode == NONBLOCKING ? MPI_Iallgather(s, sc, st, rb, rcount, rt, comm, &r)
                                 : MPI_Allgather_init(s, sc, st, rb, rcount, rt, comm, MPI_INFO_NULL, &r))
        t_fail("%s allgather refused", mode_names[mode]);
    else
        run_req(&r);
}

static void t_allgatherv(const void *s, int sc, MPI_Datatype st, void *rb, const int *rc,
                         const int *dis, MPI_Datatype rt, MPI_Comm comm)
{
    MPI_Request r;
    if (large_api) {
        MPI_Count *c = lcounts(rc, csize(comm));
        MPI_Aint *d = ldispls(dis, csize(comm));
        if (mode == BLOCKING)
            MPI_Allgatherv_c(s, sc, st, rb, c, d, rt, comm);
        else if (mode == NONBLOCKING ? MPI_Iallgatherv_c(s, sc, st, rb, c, d, rt, comm, &r)
                                     : MPI_Allgatherv_init_c(s, sc, st, rb, c, d, rt, comm,
                                                             MPI_INFO_NULL, &r))
            t_fail("%s allgatherv_c refused", mode_names[mode]);
        else
            run_req(&r);
        free(c);
        free(d);
        return;
    }
    if (mode == BLOCKING)
        MPI_Allgatherv(s, sc, st, rb, rc, dis, rt, comm);
    else if (mode == NONBLOCKING ? MPI_Iallgatherv(s, sc, st, rb, rc, dis, rt, comm, &r)
                                 : MPI_Allgatherv_init(s, sc, st, rb, rc, dis, rt, comm, MPI_INFO_NULL, &r))
        t_fail("%s allgatherv refused", mode_names[mode]);
    else
        run_req(&r);
}

static void t_bcast(void *buf, int n, MPI_Datatype dt, int root, MPI_Comm comm)
{
    MPI_Request r;
    if (large_api) {
        if (mode == BLOCKING)
            MPI_Bcast_c(buf, n, dt, root, comm);
        else if (mode == NONBLOCKING ? MPI_Ibcast_c(buf, n, dt, root, comm, &r)
                                     : MPI_Bcast_init_c(buf, n, dt, root, comm, MPI_INFO_NULL, &r))
            t_fail("%s bcast_c refused", mode_names[mode]);
        else
            run_req(&r);
        return;
    }
    if (mode == BLOCKING)
        MPI_Bcast(buf, n, dt, root, comm);
    else if (mode == NONBLOCKING ? MPI_Ibcast(buf, n, dt, root, comm, &r)
                                 : MPI_Bcast_init(buf, n, dt, root, comm, MPI_INFO_NULL, &r))
        t_fail("%s bcast refused", mode_names[mode]);
    else
        run_req(&r);
}

static void t_alltoall(const void *s, int sc, MPI_Datatype st, void *rb, int rcount,
                       MPI_Datatype rt, MPI_Comm comm)
{
    MPI_Request r;
    if (large_api) {
        if (mode == BLOCKING)
            MPI_Alltoall_c(s, sc, st, rb, rcount, rt, comm);
        else if (mode == NONBLOCKING ? MPI_Ialltoall_c(s, sc, st, rb, rcount, rt, comm, &r)
                                     : MPI_Alltoall_init_c(s, sc, st, rb, rcount, rt, comm,
                                                           MPI_INFO_NULL, &r))
            t_fail("%s alltoall_c refused", mode_names[mode]);
        else
            run_req(&r);
        return;
    }
    if (mode == BLOCKING)
        MPI_Alltoall(s, sc, st, rb, rcount, rt, comm);
    else if (mode == NONBLOCKING ? MPI_Ialltoall(s, sc, st, rb, rcount, rt, comm, &r)
                                 : MPI_Alltoall_init(s, sc, st, rb, rcount, rt, comm, MPI_INFO_NULL, &r))
        t_fail("%s alltoall refused", mode_names[mode]);
    else
        run_req(&r);
}

static void t_alltoallv(const void *s, const int *sc, const int *sd, MPI_Datatype st, void *rb,
                        const int *rc, const int *rd, MPI_Datatype rt, MPI_Comm comm)
{
    MPI_Request r;
    if (large_api) {
        int p = csize(comm);
        MPI_Count *c = lcounts(sc, p), *c2 = lcounts(rc, p);
        MPI_Aint *d = ldispls(sd, p), *d2 = ldispls(rd, p);
        if (mode == BLOCKING)
            MPI_Alltoallv_c(s, c, d, st, rb, c2, d2, rt, comm);
        else if (mode == NONBLOCKING ? MPI_Ialltoallv_c(s, c, d, st, rb, c2, d2, rt, comm, &r)
                                     : MPI_Alltoallv_init_c(s, c, d, st, rb, c2, d2, rt, comm,
                                                            MPI_INFO_NULL, &r))
            t_fail("%s alltoallv_c refused", mode_names[mode]);
        else
            run_req(&r);
        free(c);
        free(c2);
        free(d);
        free(d2);
        return;
    }
    if (mode == BLOCKING)
        MPI_Alltoallv(s, sc, sd, st, rb, rc, rd, rt, comm);
    else if (mode == NONBLOCKING ? MPI_Ialltoallv(s, sc, sd, st, rb, rc, rd, rt, comm, &r)
                                 : MPI_Alltoallv_init(s, sc, sd, st, rb, rc, rd, rt, comm,
                                                      MPI_INFO_NULL, &r))
        t_fail("%s alltoallv refused", mode_names[mode]);
    else
        run_req(&r);
}

static uint64_t hash(uint64_t a, uint64_t b)
{
    uint64_t h = a * 0x9E3779B97F4A7C15ull ^ (b + 1) * 0xC2B2AE3D27D4EB4Full;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
}

/* ---- reductions -------------------------------------------------------- */

typedef struct rtype {
    const char *name;
    MPI_Datatype dt;     /* as passed to MPI */
    MPI_Op op;
    int stride;          /* elements of storage per element (vector types) */
    int per;             /* basic elements per datatype element */
    char kind;           /* i int, d double, f float, u uint8, l int64, p 2int,
                            c float complex, z double complex, h float16,
                            a affine map (two uint32: odd m, c) */
    int user;            /* a program's op (MPI_Op_create): the reference is
                            PMPI with the same op and datatype */
} rtype_t;

static MPI_Datatype t_float3, t_strided_int, t_half, t_2double, t_affine;
static MPI_Op op_isum, op_hsum, op_2double, op_affine;
static rtype_t rtypes[24];
static int nrtypes;

/* ---- the program's ops: as a program writes them, checked to run only in
 * the program's thread (in a blocking call, or in the MPI_Wait/MPI_Test of
 * a nonblocking or persistent one), never in libdpcoll's progress thread */
static pthread_t main_thread;
static int foreign_thread_calls;

static void note_thread(void)
{
    if (!pthread_equal(pthread_self(), main_thread))
        __atomic_add_fetch(&foreign_thread_calls, 1, __ATOMIC_RELAXED);
}

static void user_isum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    note_thread();
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

/* float16 as two MPI_BYTEs, summed through float (as Horovod's MPI path
 * does); exact for the small integers used here. The conversions are for
 * normal numbers and zero only. */
static float half_to_float(uint16_t h)
{
    int e = (h >> 10) & 31;
    float m = (float)(h & 1023);
    float v = e == 0 ? 0.0f : ldexpf(1.0f + m / 1024.0f, e - 15);
    return h & 0x8000 ? -v : v;
}

static uint16_t float_to_half(float f)
{
    uint16_t sign = f < 0 ? 0x8000 : 0;
    float a = fabsf(f);
    if (a == 0)
        return sign;
    int e;
    float m = frexpf(a, &e);                        /* a = m 2^e, m in [0.5, 1) */
    uint16_t mant = (uint16_t)((m * 2.0f - 1.0f) * 1024.0f + 0.5f);
    return (uint16_t)(sign | (uint16_t)((e - 1 + 15) << 10) | mant);
}

static void user_hsum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    note_thread();
    const uint16_t *x = in;
    uint16_t *y = inout;
    for (int i = 0; i < *len; i++)
        y[i] = float_to_half(half_to_float(x[i]) + half_to_float(y[i]));
}

/* pairs of doubles (16 bytes): the first summed, the second the larger */
static void user_2double(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    note_thread();
    const double *x = in;
    double *y = inout;
    for (int i = 0; i < *len; i++) {
        y[2 * i] += x[2 * i];
        y[2 * i + 1] = x[2 * i + 1] > y[2 * i + 1] ? x[2 * i + 1] : y[2 * i + 1];
    }
}

/* maps x -> m x + c on uint32 (8 bytes), composed: inout = in, then
 * inout. Associative, not commutative: MPI defines the result as the
 * ranks' maps composed in rank order, which the reference (MPICH, same op)
 * computes and libdpcoll must too (only its rank-order algorithms take it) */
static void user_affine(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    note_thread();
    t_affine_compose(in, inout, *len);
}

static void setup_types(void)
{
    MPI_Type_contiguous(3, MPI_FLOAT, &t_float3);
    MPI_Type_commit(&t_float3);
    MPI_Type_contiguous(2, MPI_BYTE, &t_half);
    MPI_Type_commit(&t_half);
    MPI_Type_contiguous(2, MPI_DOUBLE, &t_2double);
    MPI_Type_commit(&t_2double);
    MPI_Op_create(user_isum, 1, &op_isum);
    MPI_Op_create(user_hsum, 1, &op_hsum);
    MPI_Op_create(user_2double, 1, &op_2double);
    MPI_Type_contiguous(2, MPI_UINT32_T, &t_affine);
    MPI_Type_commit(&t_affine);
    MPI_Op_create(user_affine, 0, &op_affine);
    /* one int, then a one-int gap: non-contiguous */
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &t_strided_int);
    MPI_Type_commit(&t_strided_int);
    rtype_t t[] = {
        {"int/sum", MPI_INT, MPI_SUM, 1, 1, 'i', 0},
        {"double/sum", MPI_DOUBLE, MPI_SUM, 1, 1, 'd', 0},
        {"float/max", MPI_FLOAT, MPI_MAX, 1, 1, 'f', 0},
        {"uint8/bxor", MPI_UINT8_T, MPI_BXOR, 1, 1, 'u', 0},
        {"int64/prod", MPI_INT64_T, MPI_PROD, 1, 1, 'l', 0},
        {"2int/minloc", MPI_2INT, MPI_MINLOC, 1, 1, 'p', 0},
        /* Fortran's types, which a Fortran program's calls arrive with
         * (run.sh's stats check says these ran on libdpcoll) */
        {"REAL/sum", MPI_REAL, MPI_SUM, 1, 1, 'f', 0},
        {"INTEGER/max", MPI_INTEGER, MPI_MAX, 1, 1, 'i', 0},
        {"DOUBLE PRECISION/prod", MPI_DOUBLE_PRECISION, MPI_PROD, 1, 1, 'd', 0},
        {"INTEGER8/sum", MPI_INTEGER8, MPI_SUM, 1, 1, 'l', 0},
        {"2INTEGER/maxloc", MPI_2INTEGER, MPI_MAXLOC, 1, 1, 'p', 0},
        /* complex: C's and Fortran's (small integer parts: products exact) */
        {"double complex/prod", MPI_C_DOUBLE_COMPLEX, MPI_PROD, 1, 1, 'z', 0},
        {"COMPLEX/sum", MPI_COMPLEX, MPI_SUM, 1, 1, 'c', 0},
        {"contiguous(3 float)/sum", t_float3, MPI_SUM, 1, 3, 'f', 0},
        {"strided int/sum", t_strided_int, MPI_SUM, 2, 1, 'i', 0},
        /* the program's own ops, on libdpcoll in every mode; run.sh's
         * stats check says they ran here */
        {"int/user sum", MPI_INT, op_isum, 1, 1, 'i', 1},
        {"float16 of 2 bytes/user sum", t_half, op_hsum, 1, 1, 'h', 1},
        {"2 doubles/user sum,max", t_2double, op_2double, 1, 2, 'd', 1},
        {"2 uint32/user affine maps composed (not commutative)", t_affine, op_affine, 1, 2, 'a', 1},
    };
    nrtypes = sizeof(t) / sizeof(t[0]);
    memcpy(rtypes, t, sizeof(t));
}

/* user-op rows may run at the largest count too (one of them) */
static int large_ok(const rtype_t *t, int ti, int max_ti)
{
    return ti <= max_ti || t->op == op_isum;
}

static size_t rt_bytes(const rtype_t *t)   /* storage bytes per datatype element */
{
    int s;
    MPI_Type_size(t->dt, &s);
    return (size_t)s * (size_t)t->stride;
}

/* storage for n elements: the fill value goes in every basic slot (gaps too,
 * which both sides must then leave alone) */
static void rfill(const rtype_t *t, void *buf, size_t n, int rank, int salt)
{
    size_t slots = n * (size_t)t->per * (size_t)t->stride;
    for (size_t i = 0; i < slots; i++) {
        uint64_t h = hash((uint64_t)rank * 977 + (uint64_t)salt, i);
        int v = (int)(h % 7) - 3;
        switch (t->kind) {
        case 'i': ((int *)buf)[i] = v; break;
        case 'd': ((double *)buf)[i] = v; break;
        case 'f': ((float *)buf)[i] = (float)(h % 201) - 100; break;
        case 'u': ((uint8_t *)buf)[i] = (uint8_t)h; break;
        case 'l': ((int64_t *)buf)[i] = h % 5 == 0 ? -1 : (h % 7 == 0 ? 2 : 1); break;
        case 'p': ((int *)buf)[2 * i] = (int)(h % 11) - 5; ((int *)buf)[2 * i + 1] = rank; break;
        case 'c': ((float *)buf)[2 * i] = (float)v; ((float *)buf)[2 * i + 1] = (float)(h / 7 % 7) - 3; break;
        case 'z': ((double *)buf)[2 * i] = v; ((double *)buf)[2 * i + 1] = (double)(h / 7 % 7) - 3; break;
        case 'h': ((uint16_t *)buf)[i] = float_to_half((float)v); break;
        case 'a': ((uint32_t *)buf)[i] = i % 2 ? (uint32_t)(h % 1000) : 2 * (uint32_t)(h % 5) + 1; break;
        }
    }
}

/* The reference. MPICH refuses predefined ops on derived datatypes (we take
 * them, reducing their basic elements), so for those the reference is
 * PMPI on the same elements laid out as the basic type. */
static void pmpi_allreduce(const void *in, void *out, int n, const rtype_t *t, MPI_Comm comm)
{
    if ((t->per == 1 && t->stride == 1) || t->user) {
        PMPI_Allreduce(in, out, n, t->dt, t->op, comm);
    } else if (t->stride == 1) {
        PMPI_Allreduce(in, out, n * t->per, MPI_FLOAT, t->op, comm);
    } else {   /* strided int: gather the used slots, reduce, scatter back */
        int *a = malloc(sizeof(int) * (size_t)(n + 1)), *b = malloc(sizeof(int) * (size_t)(n + 1));
        const int *src = in == MPI_IN_PLACE ? out : in;
        for (int i = 0; i < n; i++)
            a[i] = src[2 * i];
        PMPI_Allreduce(a, b, n, MPI_INT, t->op, comm);
        for (int i = 0; i < n; i++)
            ((int *)out)[2 * i] = b[i];
        free(a);
        free(b);
    }
}

static void set_algo(const char *coll, const char *algo)
{
    if (dpcoll_set_algorithm(coll, algo) != MPI_SUCCESS)
        t_fail("dpcoll_set_algorithm(%s, %s) refused", coll, algo);
}

/* for every algorithm of coll (and "auto") */
#define FOR_ALGOS(coll, a)                                                         \
    for (int ai_ = -1; ai_ == -1 || dpcoll_algorithm_name(coll, ai_); ai_++)       \
        for (const char *a = ai_ < 0 ? "auto" : dpcoll_algorithm_name(coll, ai_);  \
             a; set_algo(coll, a), a = NULL)

/* A complex product's zero part is +0 or -0 by the order its factors were
 * multiplied in ((1-2i)(-1+3i)(-3+i)(2-i) is -50+0i one way, -50-0i
 * another), which MPI leaves open and MPICH's algorithms do otherwise than
 * ours: complex results are compared with every zero made +0 (every rank's
 * bits agree among themselves: test_matrix). */
static void plus_zeros(const rtype_t *t, void *buf, size_t n)
{
    for (size_t i = 0; t->kind == 'c' && i < 2 * n; i++)
        if (((float *)buf)[i] == 0)
            ((float *)buf)[i] = 0;
    for (size_t i = 0; t->kind == 'z' && i < 2 * n; i++)
        if (((double *)buf)[i] == 0)
            ((double *)buf)[i] = 0;
}

static void check_same(const void *ours, const void *ref, size_t bytes, const char *coll,
                       const char *algo, const char *comm, const char *what, long count, int ip)
{
    t_cases++;
    if (memcmp(ours, ref, bytes))
        t_fail("%s/%s on %s, %s, count %ld%s: differs from PMPI", coll, algo, comm, what, count,
               ip ? ", in place" : "");
}

START_TEST(test_allreduce)
{
    const long counts[] = {0, 1, 7, LARGE + 3};
    FOR_ALGOS("allreduce", algo) {
        set_algo("allreduce", algo);
        for (int ci = 0; ci < 4; ci++)
            for (int k = 0; k < ncomms(counts[ci]); k++)
                for (int ti = 0; ti < nrtypes; ti++) {
                    if (counts[ci] >= LARGE && !large_ok(&rtypes[ti], ti, 1))
                        continue;
                    const rtype_t *t = &rtypes[ti];
                    long n = t->per == 3 ? counts[ci] / 3 + 1 : counts[ci];
                    size_t bytes = rt_bytes(t) * (size_t)n + 16;
                    char *in = calloc(1, bytes), *ours = calloc(1, bytes), *ref = calloc(1, bytes);
                    for (int ip = 0; ip < 2; ip++) {
                        rfill(t, in, (size_t)n, t_rank, 1);
                        rfill(t, ours, (size_t)n, t_rank + 100, 2);
                        memcpy(ref, ours, bytes);
                        if (ip) {
                            memcpy(ours, in, bytes);
                            memcpy(ref, in, bytes);
                        }
                        t_allreduce(ip ? MPI_IN_PLACE : in, ours, (int)n, t->dt, t->op, comms[k]);
                        pmpi_allreduce(ip ? MPI_IN_PLACE : in, ref, (int)n, t, comms[k]);
                        plus_zeros(t, ours, (size_t)n);
                        plus_zeros(t, ref, (size_t)n);
                        check_same(ours, ref, bytes, "allreduce", algo, comm_names[k], t->name, n, ip);
                    }
                    free(in); free(ours); free(ref);
                }
    }
    set_algo("allreduce", "auto");
    t_agree("allreduce");
}
END_TEST

static void reduce_scatter_case(int block, const char *algo)
{
    const long counts[] = {0, 1, 7, LARGE / 2 + 1};
    for (int ci = 0; ci < 4; ci++)
        for (int k = 0; k < ncomms(counts[ci]); k++) {
            int p, r;
            MPI_Comm_size(comms[k], &p);
            MPI_Comm_rank(comms[k], &r);
            for (int ti = 0; ti < nrtypes; ti++) {
                if ((counts[ci] >= LARGE / 2 && !large_ok(&rtypes[ti], ti, 0)) ||
                    (rtypes[ti].per * rtypes[ti].stride > 1 && !rtypes[ti].user))
                    continue;    /* derived types: covered by allreduce */
                const rtype_t *t = &rtypes[ti];
                int *rc = malloc(sizeof(int) * (size_t)p);
                long total = 0;
                for (int i = 0; i < p; i++) {
                    rc[i] = block ? (int)counts[ci] : (int)counts[ci] + i % 2;
                    total += rc[i];
                }
                size_t bytes = rt_bytes(t) * (size_t)total + 16;
                char *in = calloc(1, bytes), *ours = calloc(1, bytes), *ref = calloc(1, bytes);
                for (int ip = 0; ip < 2; ip++) {
                    rfill(t, in, (size_t)total, t_rank, 3);
                    rfill(t, ours, (size_t)total, t_rank + 50, 4);
                    memcpy(ref, ours, bytes);
                    if (ip)
                        memcpy(ours, in, bytes);
                    /* the reference runs out of place: MPICH 4.0.2 aborts on a
                     * large in-place MPI_Reduce_scatter (which we must not) */
                    if (block) {
                        t_reduce_scatter_block(ip ? MPI_IN_PLACE : in, ours, rc[0], t->dt, t->op, comms[k]);
                        PMPI_Reduce_scatter_block(in, ref, rc[0], t->dt, t->op, comms[k]);
                    } else {
                        t_reduce_scatter(ip ? MPI_IN_PLACE : in, ours, rc, t->dt, t->op, comms[k]);
                        PMPI_Reduce_scatter(in, ref, rc, t->dt, t->op, comms[k]);
                    }
                    /* compare the result block; in place the rest of rbuf is
                     * unspecified by MPI */
                    plus_zeros(t, ours, (size_t)rc[r]);
                    plus_zeros(t, ref, (size_t)rc[r]);
                    check_same(ours, ref, rt_bytes(t) * (size_t)rc[r], block ? "reduce_scatter_block"
                               : "reduce_scatter", algo, comm_names[k], t->name, counts[ci], ip);
                    if (!ip)
                        check_same(ours + rt_bytes(t) * (size_t)rc[r], ref + rt_bytes(t) * (size_t)rc[r],
                                   bytes - rt_bytes(t) * (size_t)rc[r], "reduce_scatter (past output)",
                                   algo, comm_names[k], t->name, counts[ci], ip);
                }
                free(in); free(ours); free(ref); free(rc);
            }
        }
}

START_TEST(test_reduce_scatter_block)
{
    FOR_ALGOS("reduce_scatter_block", algo) {
        set_algo("reduce_scatter_block", algo);
        reduce_scatter_case(1, algo);
    }
    set_algo("reduce_scatter_block", "auto");
    t_agree("reduce_scatter_block");
}
END_TEST

START_TEST(test_reduce_scatter)
{
    FOR_ALGOS("reduce_scatter", algo) {
        set_algo("reduce_scatter", algo);
        reduce_scatter_case(0, algo);
    }
    set_algo("reduce_scatter", "auto");
    t_agree("reduce_scatter");
}
END_TEST

/* ---- data movement ----------------------------------------------------- */

static void bfill(void *buf, size_t n, int rank, int salt)
{
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)buf)[i] = (unsigned char)hash((uint64_t)rank * 31 + (uint64_t)salt, i);
}

static void allgather_case(int v, const char *algo)
{
    const long counts[] = {0, 1, 7, LARGE / 4 + 1};
    const char *cn = v ? "allgatherv" : "allgather";
    for (int ci = 0; ci < 4; ci++)
        for (int k = 0; k < ncomms(counts[ci]); k++) {
            int p, r;
            MPI_Comm_size(comms[k], &p);
            MPI_Comm_rank(comms[k], &r);
            int *rc = malloc(sizeof(int) * (size_t)p), *dis = malloc(sizeof(int) * (size_t)p);
            long at = 0;
            for (int i = p - 1; i >= 0; i--) {   /* reverse order, with gaps */
                rc[i] = v ? (int)counts[ci] + i % 3 : (int)counts[ci];
                dis[i] = v ? (int)at : i * (int)counts[ci];
                at += rc[i] + (v ? 1 : 0);
            }
            long total = v ? at : counts[ci] * p;
            /* types: ints both sides; and the receive side as one contiguous
             * type per block (equal counts only; same signature) */
            for (int tv = 0; tv < (v ? 1 : 2); tv++) {
                MPI_Datatype blk = MPI_INT;
                int rcount = (int)counts[ci];
                if (tv) {
                    MPI_Type_contiguous((int)counts[ci], MPI_INT, &blk);
                    MPI_Type_commit(&blk);
                    rcount = counts[ci] ? 1 : 0;
                }
                size_t bytes = sizeof(int) * (size_t)total + 16;
                int *in = malloc(sizeof(int) * (size_t)(rc[r] + 1));
                char *ours = calloc(1, bytes), *ref = calloc(1, bytes);
                /* (MPICH's own in-place allgather with a derived receive type
                 * asserts on an overlapping memcpy: no reference there) */
                for (int ip = 0; ip < (tv ? 1 : 2); ip++) {
                    bfill(in, sizeof(int) * (size_t)rc[r], t_rank, 5);
                    bfill(ours, bytes, t_rank, 6);
                    if (ip)
                        memcpy(ours + sizeof(int) * (size_t)dis[r], in, sizeof(int) * (size_t)rc[r]);
                    memcpy(ref, ours, bytes);
                    const void *s = ip ? MPI_IN_PLACE : in;
                    if (v) {
                        t_allgatherv(s, rc[r], MPI_INT, ours, rc, dis, MPI_INT, comms[k]);
                        PMPI_Allgatherv(s, rc[r], MPI_INT, ref, rc, dis, MPI_INT, comms[k]);
                    } else {
                        t_allgather(s, rc[r], MPI_INT, ours, rcount, blk, comms[k]);
                        PMPI_Allgather(s, rc[r], MPI_INT, ref, rcount, blk, comms[k]);
                    }
                    check_same(ours, ref, bytes, cn, algo, comm_names[k],
                               tv ? "int -> contiguous(count) type" : "int", counts[ci], ip);
                }
                free(in); free(ours); free(ref);
                if (tv)
                    MPI_Type_free(&blk);
            }
            free(rc); free(dis);
        }
}

START_TEST(test_allgather)
{
    FOR_ALGOS("allgather", algo) {
        set_algo("allgather", algo);
        allgather_case(0, algo);
    }
    set_algo("allgather", "auto");
    t_agree("allgather");
}
END_TEST

START_TEST(test_allgatherv)
{
    FOR_ALGOS("allgatherv", algo) {
        set_algo("allgatherv", algo);
        allgather_case(1, algo);
    }
    set_algo("allgatherv", "auto");
    t_agree("allgatherv");
}
END_TEST

START_TEST(test_bcast)
{
    const long counts[] = {0, 1, 7, LARGE + 1};
    MPI_Datatype strided;
    MPI_Type_vector(1, 1, 1, MPI_INT, &strided);
    FOR_ALGOS("bcast", algo) {
        set_algo("bcast", algo);
        for (int ci = 0; ci < 4; ci++)
            for (int k = 0; k < ncomms(counts[ci]); k++) {
                int p;
                MPI_Comm_size(comms[k], &p);
                for (int root = 0; root < p; root += p > 1 ? p - 1 : 1)
                    for (int tv = 0; tv < 2; tv++) {
                        /* tv: the root sends through a strided (gapped)
                         * type, the others receive plain ints */
                        int n = (int)counts[ci], r;
                        MPI_Comm_rank(comms[k], &r);
                        size_t bytes = sizeof(int) * 2 * (size_t)n + 16;
                        char *ours = calloc(1, bytes), *ref = calloc(1, bytes);
                        bfill(ours, bytes, t_rank, 7 + root);
                        memcpy(ref, ours, bytes);
                        MPI_Datatype dt = tv && r == root ? t_strided_int : MPI_INT;
                        t_bcast(ours, n, dt, root, comms[k]);
                        PMPI_Bcast(ref, n, dt, root, comms[k]);
                        check_same(ours, ref, bytes, "bcast", algo, comm_names[k],
                                   tv ? "strided root, plain receivers" : "int", n, root);
                        free(ours); free(ref);
                    }
            }
    }
    MPI_Type_free(&strided);
    set_algo("bcast", "auto");
    t_agree("bcast");
}
END_TEST

static void alltoall_case(int v, const char *algo)
{
    const long counts[] = {0, 1, 7, LARGE / 4 + 1};
    const char *cn = v ? "alltoallv" : "alltoall";
    for (int ci = 0; ci < 4; ci++)
        for (int k = 0; k < ncomms(counts[ci]); k++) {
            int p, r;
            MPI_Comm_size(comms[k], &p);
            MPI_Comm_rank(comms[k], &r);
            int *sc = malloc(sizeof(int) * (size_t)p), *sd = malloc(sizeof(int) * (size_t)p);
            int *rc = malloc(sizeof(int) * (size_t)p), *rd = malloc(sizeof(int) * (size_t)p);
            long sat = 0, rat = 0;
            for (int j = p - 1; j >= 0; j--) {   /* send side: reverse order with gaps */
                sc[j] = v ? (int)counts[ci] + (r + j) % 3 : (int)counts[ci];
                sd[j] = v ? (int)sat : j * (int)counts[ci];
                sat += sc[j] + (v ? 2 : 0);
            }
            for (int j = 0; j < p; j++) {       /* receive side: what j sends us */
                rc[j] = v ? (int)counts[ci] + (r + j) % 3 : (int)counts[ci];
                rd[j] = v ? (int)rat : j * (int)counts[ci];
                rat += rc[j] + (v ? 1 : 0);
            }
            if (!v)
                sat = rat = counts[ci] * p;
            size_t sbytes = sizeof(int) * (size_t)sat + 16, rbytes = sizeof(int) * (size_t)rat + 16;
            char *in = calloc(1, sbytes), *ours = calloc(1, rbytes), *ref = calloc(1, rbytes);
            for (int ip = 0; ip < 2; ip++) {
                bfill(in, sbytes, t_rank, 8);
                bfill(ours, rbytes, t_rank, 9);
                memcpy(ref, ours, rbytes);
                if (v) {
                    /* in place, the send layout is the receive one */
                    t_alltoallv(ip ? MPI_IN_PLACE : in, sc, sd, MPI_INT, ours, rc, rd, MPI_INT, comms[k]);
                    PMPI_Alltoallv(ip ? MPI_IN_PLACE : in, sc, sd, MPI_INT, ref, rc, rd, MPI_INT, comms[k]);
                } else {
                    t_alltoall(ip ? MPI_IN_PLACE : in, sc[0], MPI_INT, ours, rc[0], MPI_INT, comms[k]);
                    PMPI_Alltoall(ip ? MPI_IN_PLACE : in, sc[0], MPI_INT, ref, rc[0], MPI_INT, comms[k]);
                }
                check_same(ours, ref, rbytes, cn, algo, comm_names[k], "int", counts[ci], ip);
            }
            free(in); free(ours); free(ref); free(sc); free(sd); free(rc); free(rd);
        }
}

START_TEST(test_alltoall)
{
    FOR_ALGOS("alltoall", algo) {
        set_algo("alltoall", algo);
        alltoall_case(0, algo);
    }
    set_algo("alltoall", "auto");
    t_agree("alltoall");
}
END_TEST

START_TEST(test_alltoallv)
{
    FOR_ALGOS("alltoallv", algo) {
        set_algo("alltoallv", algo);
        alltoall_case(1, algo);
    }
    set_algo("alltoallv", "auto");
    t_agree("alltoallv");
}
END_TEST

/* A program's op that libdpcoll does not run goes to the MPI library (the
 * same decision on every rank) and still gives the right answer: one on a
 * 12-byte type (no stand-in element type of that size), in a blocking call
 * in every mode (MPICH 4.0.2's MPI_Testall fails on its own persistent
 * collectives; test_mpi_misc has a nonblocking call with a user op).
 * run.sh's stats check counts exactly this one call to PMPI. And none of
 * the program's ops ran in a thread other than the caller's. */
static void user_first(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    note_thread();
    /* a op b = a: the lowest rank's value, when combined in rank order */
    for (int i = 0; i < 3 * *len; i++)
        ((int *)inout)[i] = ((int *)in)[i];
}

START_TEST(test_user_op_falls_back)
{
    MPI_Op op;
    MPI_Datatype int3;
    MPI_Type_contiguous(3, MPI_INT, &int3);
    MPI_Type_commit(&int3);
    MPI_Op_create(user_first, 0, &op);
    int in[15], out[15], ref[15];
    for (int i = 0; i < 15; i++) {
        in[i] = t_rank * 100 + i;
        ref[i] = i;   /* rank 0's */
    }
    MPI_Allreduce(in, out, 5, int3, op, MPI_COMM_WORLD);
    MPI_Type_free(&int3);
    check_same(out, ref, sizeof(out), "allreduce", "PMPI", "world", "user op on 3 ints", 5, 0);
    MPI_Op_free(&op);
    t_cases++;
    if (foreign_thread_calls)
        t_fail("a program's op ran %d times in a thread other than the caller's",
               foreign_thread_calls);
    t_agree("user-defined op");
}
END_TEST

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &t_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &t_size);
    quick = getenv("DPC_TEST_QUICK") && atoi(getenv("DPC_TEST_QUICK"));
    const char *m = getenv("DPC_TEST_MODE");
    for (int i = 0; m && i < 3; i++)
        if (!strcmp(m, mode_names[i]))
            mode = i;
    large_api = getenv("DPC_TEST_API") && !strcmp(getenv("DPC_TEST_API"), "large");
    int active = dpcoll_active();
    if (!active && t_rank == 0)
        printf("libdpcoll is not active: the shim is not in use\n");
    main_thread = pthread_self();
    make_comms();
    setup_types();
    Suite *s = suite_create("mpi");
    TCase *tc = tcase_create("collectives");
    tcase_set_timeout(tc, 0);
    tcase_add_test(tc, test_allreduce);
    tcase_add_test(tc, test_reduce_scatter_block);
    tcase_add_test(tc, test_reduce_scatter);
    tcase_add_test(tc, test_allgather);
    tcase_add_test(tc, test_allgatherv);
    tcase_add_test(tc, test_bcast);
    tcase_add_test(tc, test_alltoall);
    tcase_add_test(tc, test_alltoallv);
    tcase_add_test(tc, test_user_op_falls_back);
    suite_add_tcase(s, tc);
    int failed = t_run(s) + !active;
    if (t_rank == 0)
        printf("np=%d, %s%s calls: %ld cases compared with PMPI on rank 0\n", t_size,
               mode_names[mode], large_api ? " large-count (_c)" : "", t_cases);
    free_comms();
    MPI_Type_free(&t_float3);
    MPI_Type_free(&t_strided_int);
    MPI_Type_free(&t_half);
    MPI_Type_free(&t_2double);
    MPI_Type_free(&t_affine);
    MPI_Op_free(&op_isum);
    MPI_Op_free(&op_hsum);
    MPI_Op_free(&op_2double);
    MPI_Op_free(&op_affine);
    MPI_Finalize();
    return failed ? 1 : 0;
}
