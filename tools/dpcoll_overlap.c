/*
 * dpcoll_overlap: how much of a nonblocking allreduce (or, -c, another
 * collective) hides behind computation. Per repeat, for libdpcoll
 * (MPI_Iallreduce) and, interleaved in the same run, the MPI library's own
 * (PMPI_Iallreduce):
 *   t_comm     post, then wait at once (after an untimed call of the same side)
 *   t_compute  the computation alone (calibrated to about t_comm, or -x
 *              times it: with a longer one, how much of the collective hides
 *              when the program leaves it all the time it needs)
 *   t_total    post, compute without any MPI call, then wait
 *   overlap  = (t_comm + t_compute - t_total) / min(t_comm, t_compute)
 * Medians over repeats, slowest rank. -k sleep stands for a computation
 * that runs elsewhere (a GPU's backward pass): the thread sleeps instead. It also reports the CPU time the
 * process spent beyond the computing thread's own (the progress thread's
 * work), since on a machine with fewer free cores than busy threads that
 * work cannot overlap with anything.
 */
#include "config.h"
#include <getopt.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "sizes.h"
#include <time.h>
#include "dpcoll.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double cpu_s(int who)
{
    struct rusage ru;
    getrusage(who, &ru);
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec * 1e-6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

/* The stand-in for a backward pass: dense arithmetic on a cache-resident
 * block (a small matrix product), so it competes for cores, not memory. */
#define MM 64
static float A[MM * MM], B[MM * MM], C[MM * MM];
static int sleeping;   /* -k sleep: the computation runs elsewhere (a GPU) */
static void compute(long reps)
{
    if (sleeping) {
        struct timespec ts = {.tv_sec = reps / 1000000, .tv_nsec = (reps % 1000000) * 1000};
        nanosleep(&ts, NULL);
        return;
    }
    for (long r = 0; r < reps; r++)
        for (int i = 0; i < MM; i++)
            for (int k = 0; k < MM; k++) {
                float a = A[i * MM + k];
                for (int j = 0; j < MM; j++)
                    C[i * MM + j] += a * B[k * MM + j];
            }
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(double), cmp);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* slowest rank's time */
static double slowest(double t)
{
    double m;
    PMPI_Allreduce(&t, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return m;
}

typedef struct {
    double comm, compute, total, extra_cpu;
} sample_t;

static float *sbuf, *rbuf;
static int count, nranks;   /* count: the whole vector's elements (-s) */

/* -c: the collective, its size the whole vector's, as dpcoll_bench counts
 * it (a reduce-scatter's input, an allgather's output, an all-to-all's
 * buffers: n/p per rank and block) */
static const char *const colls[] = {"allreduce", "bcast", "reduce_scatter_block", "allgather",
                                    "alltoall"};
static int coll;

#define POST(F, r)                                                                          \
    (coll == 0   ? F##Iallreduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, r)   \
     : coll == 1 ? F##Ibcast(sbuf, count, MPI_FLOAT, 0, MPI_COMM_WORLD, r)                   \
     : coll == 2 ? F##Ireduce_scatter_block(sbuf, rbuf, count / nranks, MPI_FLOAT, MPI_SUM,  \
                                            MPI_COMM_WORLD, r)                               \
     : coll == 3 ? F##Iallgather(sbuf, count / nranks, MPI_FLOAT, rbuf, count / nranks,      \
                                 MPI_FLOAT, MPI_COMM_WORLD, r)                               \
                 : F##Ialltoall(sbuf, count / nranks, MPI_FLOAT, rbuf, count / nranks,       \
                                MPI_FLOAT, MPI_COMM_WORLD, r))

static void post(int native, MPI_Request *r)
{
    if (native)
        POST(PMPI_, r);
    else
        POST(MPI_, r);
}

static void finish(int native, MPI_Request *r)
{
    if (native)
        PMPI_Wait(r, MPI_STATUS_IGNORE);
    else
        MPI_Wait(r, MPI_STATUS_IGNORE);
}

static sample_t one(int native, long reps)
{
    sample_t s;
    MPI_Request r;
    /* one untimed call of this side first: the first call after the other
     * side's can be far slower than the next (session-16 VM, 64 MiB, 2
     * ranks: libdpcoll's allreduce 20-106 ms right after MPICH's, 12-16 ms
     * after its own), which made t_comm that of whoever ran before and the
     * overlap of a 64 MiB call read 310-670% */
    post(native, &r);
    finish(native, &r);
    PMPI_Barrier(MPI_COMM_WORLD);
    double t0 = now();
    post(native, &r);
    finish(native, &r);
    s.comm = slowest(now() - t0);
    PMPI_Barrier(MPI_COMM_WORLD);
    t0 = now();
    compute(reps);
    s.compute = slowest(now() - t0);
    PMPI_Barrier(MPI_COMM_WORLD);
    double cpu_all = cpu_s(RUSAGE_SELF), cpu_me = cpu_s(RUSAGE_THREAD);
    t0 = now();
    post(native, &r);
    compute(reps);
    finish(native, &r);
    double t = now() - t0;
    s.extra_cpu = (cpu_s(RUSAGE_SELF) - cpu_all) - (cpu_s(RUSAGE_THREAD) - cpu_me);
    s.total = slowest(t);
    return s;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, nrep = 9, opt;
    size_t bytes = 64u << 20;
    double factor = 1;   /* -x: the computation's length, in collectives' times */
    while ((opt = getopt(argc, argv, "c:s:n:k:x:h")) != -1) {
        if (opt == 'c') {
            for (coll = 0; coll < (int)(sizeof(colls) / sizeof(colls[0])); coll++)
                if (!strcmp(optarg, colls[coll]))
                    break;
            if (coll < (int)(sizeof(colls) / sizeof(colls[0])))
                continue;
            opt = '?';
        }
        if (opt == 's' && (bytes = tool_parse_size(optarg)) >= sizeof(float)) {
            continue;
        } else if (opt == 'n') {
            nrep = atoi(optarg);
        } else if (opt == 'k' && (!strcmp(optarg, "cpu") || !strcmp(optarg, "sleep"))) {
            sleeping = !strcmp(optarg, "sleep");
        } else if (opt == 'x' && (factor = strtod(optarg, NULL)) > 0 && factor <= 100) {
            continue;
        } else {
            fprintf(stderr, "usage: mpiexec -n P dpcoll_overlap [-c allreduce|bcast|"
                            "reduce_scatter_block|allgather|alltoall] [-s BYTES (K, M)] "
                            "[-n REPEATS] [-k cpu|sleep] [-x FACTOR]\n");
            MPI_Finalize();
            return opt == 'h' ? 0 : 2;
        }
    }
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    nranks = size;
    count = (int)(bytes / sizeof(float));
    sbuf = malloc(bytes);
    rbuf = malloc(bytes);
    for (int i = 0; i < count; i++)
        sbuf[i] = (float)(rank + i % 7);
    for (int i = 0; i < MM * MM; i++)
        A[i] = B[i] = 1e-3f * (float)(i % 13);
    /* calibrate the computation to the collective's own time (ours) */
    MPI_Request r;
    for (int w = 0; w < 2; w++) {
        post(0, &r);
        finish(0, &r);
        post(1, &r);
        finish(1, &r);
    }
    double tc[5];
    for (int i = 0; i < 5; i++) {
        PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = now();
        post(0, &r);
        finish(0, &r);
        tc[i] = slowest(now() - t0);
    }
    double t_target = median(tc, 5);
    double t0 = now();
    compute(20);
    double per = sleeping ? 1e-6 : (now() - t0) / 20;   /* sleep: reps are microseconds */
    long reps = (long)(factor * t_target / per + 0.5);
    PMPI_Bcast(&reps, 1, MPI_LONG, 0, MPI_COMM_WORLD);
    if (reps < 1)
        reps = 1;
    double v[2][4][64];
    if (nrep > 64)
        nrep = 64;
    for (int i = 0; i < nrep; i++)
        for (int native = 0; native < 2; native++) {   /* interleaved */
            sample_t s = one(native, reps);
            v[native][0][i] = s.comm;
            v[native][1][i] = s.compute;
            v[native][2][i] = s.total;
            v[native][3][i] = s.extra_cpu;
        }
    if (rank == 0) {
        printf("# dpcoll_overlap: %d ranks, MPI_I%s of %zu bytes (float%s), %s "
               "without MPI calls in between; medians of %d repeats, slowest rank\n", size,
               colls[coll], bytes, coll == 0 || coll == 2 ? ", sum" : "",
               sleeping ? "the thread sleeping (computation elsewhere, e.g. a GPU)"
                        : "computation on the CPU (64x64 matrix products)", nrep);
        if (factor != 1)
            printf("# the computation calibrated to %g times the collective's time\n", factor);
        printf("%-10s %10s %12s %10s %9s %16s\n", "library", "t_comm(ms)", "t_compute(ms)",
               "t_total(ms)", "overlap", "extra_cpu(ms)");
    }
    for (int native = 0; native < 2; native++) {
        double m[4];
        for (int k = 0; k < 4; k++)
            m[k] = median(v[native][k], nrep);   /* (sorts: quartiles below) */
        double lo = m[0] < m[1] ? m[0] : m[1];
        double ov = lo > 0 ? (m[0] + m[1] - m[2]) / lo : 0;
        /* a t_comm that moves between repeats by more than the shorter of
         * the two times makes the difference above noise, not overlap
         * (MPICH's 64 MiB allreduce on the session-16 VM: 170-300 ms
         * against 11-16 ms of computation, "overlap" 62-825%) */
        double iqr = v[native][0][(3 * nrep) / 4] - v[native][0][nrep / 4];
        if (rank == 0 && iqr > lo)
            printf("%-10s %10.2f %12.2f %10.2f %9s %16.2f   (t_comm's spread, %.2f ms between "
                   "quartiles, exceeds t_compute: no overlap figure)\n",
                   native ? "native" : "libdpcoll", m[0] * 1e3, m[1] * 1e3, m[2] * 1e3, "noise",
                   m[3] * 1e3, iqr * 1e3);
        else if (rank == 0)
            printf("%-10s %10.2f %12.2f %10.2f %8.0f%% %16.2f\n",
                   native ? "native" : "libdpcoll", m[0] * 1e3, m[1] * 1e3, m[2] * 1e3, ov * 100,
                   m[3] * 1e3);
    }
    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return 0;
}
