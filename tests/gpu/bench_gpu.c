/*
 * Allreduce on device buffers through libdpcoll, timed (median, slowest
 * rank) next to the same allreduce on host buffers and to a device-to-device
 * cudaMemcpy of the same size; busbw = algbw * 2(p-1)/p. Each result is
 * checked against closed-form sums. Exits 77 without a GPU.
 *
 * The staging pipeline's overlap: the device call against the sum of its
 * parts done one after the other (copy to pinned host memory, the host
 * allreduce, copy back): hidden = (d2h + host + h2d - device) / (d2h + h2d),
 * the share of the copy time that ran behind the transfers (100% = all).
 */
#include "config.h"
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_slowest(double *t, int n)
{
    for (int i = 0; i < n; i++) {
        double m;
        PMPI_Allreduce(&t[i], &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        t[i] = m;
    }
    qsort(t, (size_t)n, sizeof(double), cmp);
    return t[n / 2];
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
    size_t maxb = (size_t)(argc > 1 ? atof(argv[1]) : 256) * (1 << 20);
    int reps = argc > 2 ? atoi(argv[2]) : 11, bad = 0;
    float *h = malloc(maxb), *hr = malloc(maxb), *d, *d2, *pin;
    cudaMallocHost((void **)&pin, maxb);
    cudaMalloc((void **)&d, maxb);
    cudaMalloc((void **)&d2, maxb);
    if (rank == 0)
        printf("# allreduce (float, sum), %d ranks on %d GPU(s); medians of %d, slowest rank\n"
               "%12s %12s %10s %12s %10s %12s %10s %10s %10s %8s\n", size, ndev, reps, "bytes",
               "device(us)", "busbw", "host(us)", "busbw", "d2d copy(us)", "GB/s", "d2h(us)",
               "h2d(us)", "hidden");
    double *t = malloc(sizeof(double) * (size_t)reps);
    for (size_t b = 64 << 10; b <= maxb; b *= 4) {
        int n = (int)(b / sizeof(float));
        for (int i = 0; i < n; i++)
            h[i] = (float)(rank + i % 17);
        cudaMemcpy(d, h, b, cudaMemcpyHostToDevice);
        double td, th, tc;
        for (int r = 0; r < reps; r++) {
            PMPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(d, d2, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            t[r] = MPI_Wtime() - t0;
        }
        td = median_slowest(t, reps);
        cudaMemcpy(hr, d2, b, cudaMemcpyDeviceToHost);
        for (int i = 0; i < n; i++)
            if (hr[i] != (float)(size * (size - 1) / 2 + size * (i % 17))) {
                bad++;
                break;
            }
        for (int r = 0; r < reps; r++) {
            PMPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            MPI_Allreduce(h, hr, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            t[r] = MPI_Wtime() - t0;
        }
        th = median_slowest(t, reps);
        for (int r = 0; r < reps; r++) {
            double t0 = MPI_Wtime();
            cudaMemcpy(d2, d, b, cudaMemcpyDeviceToDevice);
            cudaDeviceSynchronize();
            t[r] = MPI_Wtime() - t0;
        }
        tc = median_slowest(t, reps);
        double tdh, thd;
        for (int r = 0; r < reps; r++) {
            double t0 = MPI_Wtime();
            cudaMemcpy(pin, d, b, cudaMemcpyDeviceToHost);
            t[r] = MPI_Wtime() - t0;
        }
        tdh = median_slowest(t, reps);
        for (int r = 0; r < reps; r++) {
            double t0 = MPI_Wtime();
            cudaMemcpy(d2, pin, b, cudaMemcpyHostToDevice);
            t[r] = MPI_Wtime() - t0;
        }
        thd = median_slowest(t, reps);
        double hidden = (tdh + th + thd - td) / (tdh + thd);
        double f = 2.0 * (size - 1) / size;
        if (rank == 0)
            printf("%12zu %12.1f %10.2f %12.1f %10.2f %12.1f %10.2f %10.1f %10.1f %7.0f%%\n", b,
                   td * 1e6, b / td * f * 1e-9, th * 1e6, b / th * f * 1e-9, tc * 1e6,
                   b / tc * 1e-9, tdh * 1e6, thd * 1e6, hidden * 100);
    }
    int anybad = 0;
    PMPI_Allreduce(&bad, &anybad, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s\n", anybad ? "WRONG results on the device" : "every device result right");
    cudaFree(d);
    cudaFree(d2);
    cudaFreeHost(pin);
    free(h);
    free(hr);
    free(t);
    MPI_Finalize();
    return anybad;
}
