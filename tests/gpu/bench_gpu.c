/*
 * Collectives on device buffers through libdpcoll, timed (median of repeats,
 * slowest rank) next to what a program must do with an MPI library that
 * does not know device memory: copy the input to pinned host memory, call the
 * library's own collective (PMPI_*) there, copy the result back ("staged
 * MPICH"). Also a device-to-device cudaMemcpy of the same size, for scale.
 *
 *   bench_gpu [MAX_MiB [REPS [COLLS]]]   COLLS: comma list, default all of
 *            allreduce,reduce_scatter_block,allgather,bcast,alltoall
 *
 * Sizes run from 64 KiB to MAX_MiB by 4x; "bytes" is the larger of the
 * call's input and output (nccl-tests' convention), busbw = algbw times
 * 2(p-1)/p for allreduce, (p-1)/p for reduce-scatter, allgather and
 * all-to-all, 1 for bcast. Every libdpcoll result is compared bit for bit
 * with the staged MPICH one (integer-valued floats: exact in any order); the
 * closing line says whether all matched.
 *
 * "dpcoll" is whatever path libdpcoll takes: device to device through CUDA
 * IPC when every rank's buffers are on a GPU of one node (blocking calls
 * from DPCOLL_IPC_MIN bytes, nonblocking ones from 2 MiB), else the staging
 * pipeline or whole staging (DPCOLL_IPC=0 forces those). "i+wait" is the
 * nonblocking form (MPI_Iallreduce... then MPI_Wait) on the same buffers,
 * "persist" one persistent request (MPI_Allreduce_init...) started at each
 * repeat; their results are compared too.
 *
 * For allreduce it also shows the staging pipeline's overlap: the device
 * call against the sum of its parts done one after the other (copy to
 * pinned host memory, libdpcoll's host allreduce, copy back):
 * hidden = (d2h + host + h2d - device) / (d2h + h2d), the share of the copy
 * time that ran behind the transfers (100% = all of it).
 *
 * Exits 77 without a GPU.
 */
#include "config.h"
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, REDUCE_SCATTER, ALLGATHER, BCAST, ALLTOALL, NCOLL };
static const char *const coll_name[NCOLL] = {"allreduce", "reduce_scatter_block", "allgather",
                                              "bcast", "alltoall"};

static int rank, size, reps, wrong, compared;
static float *dsend, *drecv, *pin_s, *pin_r, *h, *h_ours, *h_nat;
static double *t;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_slowest(void)
{
    for (int i = 0; i < reps; i++) {
        double m;
        PMPI_Allreduce(&t[i], &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        t[i] = m;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp);
    return t[reps / 2];
}

/* Input and output bytes of one call whose larger side is b. */
static void sides(int c, size_t b, size_t *in, size_t *out)
{
    *in = *out = b;
    if (c == REDUCE_SCATTER)
        *out = b / (size_t)size;
    if (c == ALLGATHER)
        *in = b / (size_t)size;
}

/* libdpcoll's nonblocking form (MPI_I...) or a persistent request for the
 * same call (MPI_..._init), not yet started. */
static void request(int c, int persistent, const float *s, float *r, size_t b, MPI_Request *q)
{
    int n = (int)(b / sizeof(float)), blk = n / size;
    MPI_Comm w = MPI_COMM_WORLD;
    MPI_Info i = MPI_INFO_NULL;
    switch (c) {
    case ALLREDUCE:
        persistent ? MPI_Allreduce_init(s, r, n, MPI_FLOAT, MPI_SUM, w, i, q)
                   : MPI_Iallreduce(s, r, n, MPI_FLOAT, MPI_SUM, w, q);
        break;
    case REDUCE_SCATTER:
        persistent ? MPI_Reduce_scatter_block_init(s, r, blk, MPI_FLOAT, MPI_SUM, w, i, q)
                   : MPI_Ireduce_scatter_block(s, r, blk, MPI_FLOAT, MPI_SUM, w, q);
        break;
    case ALLGATHER:
        persistent ? MPI_Allgather_init(s, blk, MPI_FLOAT, r, blk, MPI_FLOAT, w, i, q)
                   : MPI_Iallgather(s, blk, MPI_FLOAT, r, blk, MPI_FLOAT, w, q);
        break;
    case BCAST:
        persistent ? MPI_Bcast_init(r, n, MPI_FLOAT, 0, w, i, q)
                   : MPI_Ibcast(r, n, MPI_FLOAT, 0, w, q);
        break;
    default:
        persistent ? MPI_Alltoall_init(s, blk, MPI_FLOAT, r, blk, MPI_FLOAT, w, i, q)
                   : MPI_Ialltoall(s, blk, MPI_FLOAT, r, blk, MPI_FLOAT, w, q);
    }
}

/* The nonblocking form, to its end. */
static void call_nb(int c, const float *s, float *r, size_t b)
{
    MPI_Request q;
    request(c, 0, s, r, b, &q);
    MPI_Wait(&q, MPI_STATUS_IGNORE);
}

/* The collective on (s, r): libdpcoll's (MPI_*) or the library's own. */
static void call(int c, int native, const float *s, float *r, size_t b)
{
    int n = (int)(b / sizeof(float)), blk = n / size;
    switch (c) {
    case ALLREDUCE:
        (native ? PMPI_Allreduce : MPI_Allreduce)(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case REDUCE_SCATTER:
        (native ? PMPI_Reduce_scatter_block : MPI_Reduce_scatter_block)(
            s, r, blk, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        (native ? PMPI_Allgather : MPI_Allgather)(s, blk, MPI_FLOAT, r, blk, MPI_FLOAT,
                                                  MPI_COMM_WORLD);
        break;
    case BCAST:   /* in r, from rank 0 */
        (native ? PMPI_Bcast : MPI_Bcast)(r, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
    default:
        (native ? PMPI_Alltoall : MPI_Alltoall)(s, blk, MPI_FLOAT, r, blk, MPI_FLOAT,
                                                MPI_COMM_WORLD);
    }
}

/* Staged MPICH: device input to pinned memory, PMPI there, result back.
 * A bcast copies in at the root only. */
static void staged(int c, size_t b)
{
    size_t in, out;
    sides(c, b, &in, &out);
    if (c != BCAST || rank == 0)
        cudaMemcpy(c == BCAST ? pin_r : pin_s, c == BCAST ? drecv : dsend, in,
                   cudaMemcpyDeviceToHost);
    call(c, 1, pin_s, pin_r, b);
    cudaMemcpy(drecv, pin_r, out, cudaMemcpyHostToDevice);
}

/* Fresh inputs on the device: small integers, so every sum is exact. */
static void fill(int c, size_t b)
{
    size_t in, out;
    sides(c, b, &in, &out);
    size_t n = (c == BCAST ? out : in) / sizeof(float);
    for (size_t i = 0; i < n; i++)   /* a bcast's receivers start with garbage */
        h[i] = c != BCAST ? (float)(rank + (int)(i % 17)) : rank ? -1.0f : (float)(7 + i % 17);
    cudaMemcpy(c == BCAST ? drecv : dsend, h, n * sizeof(float), cudaMemcpyHostToDevice);
}

/* form: 0 blocking, 1 nonblocking, 2 one persistent request started at
 * each repeat (a start then reads the device data anew) */
static double time_ours(int c, size_t b, int form)
{
    MPI_Request q = MPI_REQUEST_NULL;
    if (form == 2)
        request(c, 1, dsend, drecv, b, &q);
    for (int r = 0; r < reps; r++) {
        if (c == BCAST)
            fill(c, b);   /* bcast overwrites its input at the other ranks */
        PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (form == 2) {
            MPI_Start(&q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else if (form == 1)
            call_nb(c, dsend, drecv, b);
        else
            call(c, 0, dsend, drecv, b);
        t[r] = MPI_Wtime() - t0;
    }
    if (form == 2)
        MPI_Request_free(&q);
    return median_slowest();
}

static double time_staged(int c, size_t b)
{
    for (int r = 0; r < reps; r++) {
        if (c == BCAST)
            fill(c, b);
        PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        staged(c, b);
        t[r] = MPI_Wtime() - t0;
    }
    return median_slowest();
}

/* Median time of one cudaMemcpy of b bytes (slowest rank). A device-to-
 * device copy, the GPU's own speed for scale, runs on rank 0 alone: ranks
 * sharing one GPU would otherwise time its switching between processes. */
static double time_copy(void *dst, const void *src, size_t b, enum cudaMemcpyKind k)
{
    for (int r = 0; r < reps; r++) {
        PMPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        if (k != cudaMemcpyDeviceToDevice || rank == 0) {
            cudaMemcpy(dst, src, b, k);
            cudaDeviceSynchronize();
        }
        t[r] = MPI_Wtime() - t0;
    }
    return median_slowest();
}

static void bench(int c, size_t maxb)
{
    double f = c == ALLREDUCE ? 2.0 * (size - 1) / size : c == BCAST ? 1.0 : (double)(size - 1) / size;
    if (rank == 0) {
        printf("\n# %s (float, sum where it reduces), %d ranks; medians of %d, slowest rank\n",
               coll_name[c], size, reps);
        printf("%11s %11s %8s %11s %8s %7s %11s %8s %11s %8s %11s %8s", "bytes", "dpcoll(us)",
               "busbw", "staged(us)", "busbw", "speedup", "d2d(us)", "GB/s", "i+wait(us)", "busbw",
               "persist(us)", "busbw");
        if (c == ALLREDUCE)
            printf(" %11s %9s %9s %7s", "host(us)", "d2h(us)", "h2d(us)", "hidden");
        printf("\n");
    }
    for (size_t b0 = 64 << 10; b0 <= maxb; b0 *= 4) {
        size_t b = b0 / (sizeof(float) * size) * sizeof(float) * size, in, out;
        sides(c, b, &in, &out);
        fill(c, b);
        call(c, 0, dsend, drecv, b);   /* warm-up: pinned blocks, schedules */
        double td = time_ours(c, b, 0);
        cudaMemcpy(h_ours, drecv, out, cudaMemcpyDeviceToHost);
        fill(c, b);
        staged(c, b);
        double tn = time_staged(c, b);
        cudaMemcpy(h_nat, drecv, out, cudaMemcpyDeviceToHost);
        int bad = memcmp(h_ours, h_nat, out) != 0, any = 0;
        fill(c, b);
        call_nb(c, dsend, drecv, b);
        double ti = time_ours(c, b, 1);
        cudaMemcpy(h_ours, drecv, out, cudaMemcpyDeviceToHost);
        bad |= memcmp(h_ours, h_nat, out) != 0;
        memset(h_ours, 0xff, out);   /* (so a start that wrote nothing shows) */
        cudaMemcpy(drecv, h_ours, out, cudaMemcpyHostToDevice);
        fill(c, b);
        double tp = time_ours(c, b, 2);
        cudaMemcpy(h_ours, drecv, out, cudaMemcpyDeviceToHost);
        bad |= memcmp(h_ours, h_nat, out) != 0;
        PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
        wrong += any;
        compared++;
        double tc = time_copy(drecv, dsend, b, cudaMemcpyDeviceToDevice);
        if (rank == 0)
            printf("%11zu %11.1f %8.2f %11.1f %8.2f %6.2fx %11.1f %8.1f %11.1f %8.2f %11.1f %8.2f",
                   b, td * 1e6, b / td * f * 1e-9, tn * 1e6, b / tn * f * 1e-9, tn / td, tc * 1e6,
                   b / tc * 1e-9, ti * 1e6, b / ti * f * 1e-9, tp * 1e6, b / tp * f * 1e-9);
        if (c == ALLREDUCE) {
            /* the parts of the pipeline one after the other */
            int n = (int)(b / sizeof(float));
            for (int r = 0; r < reps; r++) {
                PMPI_Barrier(MPI_COMM_WORLD);
                double t0 = MPI_Wtime();
                MPI_Allreduce(pin_s, pin_r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
                t[r] = MPI_Wtime() - t0;
            }
            double th = median_slowest();
            double tdh = time_copy(pin_s, dsend, b, cudaMemcpyDeviceToHost);
            double thd = time_copy(drecv, pin_r, b, cudaMemcpyHostToDevice);
            double hidden = (tdh + th + thd - td) / (tdh + thd);
            if (rank == 0)
                printf(" %11.1f %9.1f %9.1f %6.0f%%", th * 1e6, tdh * 1e6, thd * 1e6, hidden * 100);
        }
        if (rank == 0)
            printf("%s\n", any ? "  WRONG" : "");
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int ndev = 0, ok = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (rank == 0)
            printf("SKIP: no usable CUDA device here\n");
        MPI_Finalize();
        return 77;
    }
    cudaSetDevice(rank % ndev);
    size_t maxb = (size_t)((argc > 1 ? atof(argv[1]) : 256) * (1 << 20));
    reps = argc > 2 ? atoi(argv[2]) : 9;
    const char *which = argc > 3 ? argv[3] : NULL;
    if (reps < 1)
        reps = 1;
    h = malloc(maxb);
    h_ours = malloc(maxb);
    h_nat = malloc(maxb);
    t = malloc(sizeof(double) * (size_t)reps);
    cudaMallocHost((void **)&pin_s, maxb);
    cudaMallocHost((void **)&pin_r, maxb);
    cudaMalloc((void **)&dsend, maxb);
    cudaMalloc((void **)&drecv, maxb);
    if (!h || !h_ours || !h_nat || !t || !pin_s || !pin_r || !dsend || !drecv) {
        fprintf(stderr, "rank %d: cannot allocate %zu bytes\n", rank, maxb);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* (the host allreduce's timing runs on whatever they hold) */
    memset(pin_s, 0, maxb);
    memset(pin_r, 0, maxb);
    if (rank == 0)
        printf("# device buffers (cudaMalloc), %d ranks on %d GPU(s); staged = cudaMemcpy to "
               "pinned memory, MPICH's own collective, cudaMemcpy back\n", size, ndev);
    for (int c = 0; c < NCOLL; c++)
        if (!which || strstr(which, coll_name[c]))
            bench(c, maxb);
    if (rank == 0)
        printf("%s (%d sizes compared)\n",
               wrong ? "WRONG results on the device" : compared ? "every device result equal to staged MPICH's"
                                                     : "NOTHING compared (MAX_MiB below 64 KiB?)",
               compared);
    cudaFree(dsend);
    cudaFree(drecv);
    cudaFreeHost(pin_s);
    cudaFreeHost(pin_r);
    free(h);
    free(h_ours);
    free(h_nat);
    free(t);
    MPI_Finalize();
    return wrong || !compared ? 1 : 0;
}
