/* per-batch time of 4 MPI_Iallreduce in flight (each its own buffers), from a fresh job */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, K = 4, iters = argc > 2 ? atoi(argv[2]) : 60;
    size_t n = argc > 1 ? strtoul(argv[1], 0, 10) / 4 : 65536;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    float *in[4], *out[4];
    for (int k = 0; k < K; k++) {
        in[k] = malloc(n * 4); out[k] = malloc(n * 4);
        for (size_t i = 0; i < n; i++) { in[k][i] = 1; out[k][i] = 0; }
    }
    double *t = calloc(iters, sizeof(double));
    for (int it = 0; it < iters; it++) {
        MPI_Request r[4];
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int k = 0; k < K; k++)
            MPI_Iallreduce(in[k], out[k], (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r[k]);
        MPI_Waitall(K, r, MPI_STATUSES_IGNORE);
        double dt = MPI_Wtime() - t0, mx;
        MPI_Reduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        t[it] = mx;
    }
    if (rank == 0) {
        for (int it = 0; it < iters; it++)
            printf("%.0f%s", t[it] * 1e6 / K, (it + 1) % 20 ? " " : "\n");
        printf("\n");
    }
    MPI_Finalize();
    return 0;
}
