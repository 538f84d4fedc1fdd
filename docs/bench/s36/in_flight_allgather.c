/* per-round time of K MPI_Iallgather in flight (each its own buffers); argv: bytes-per-call-output K iters */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, K = argc > 2 ? atoi(argv[2]) : 4, iters = argc > 3 ? atoi(argv[3]) : 60;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    size_t n = (argc > 1 ? strtoul(argv[1], 0, 10) : 16384) / 4 / size;
    float *in[64], *out[64];
    for (int k = 0; k < K; k++) {
        in[k] = malloc(n * 4); out[k] = malloc(n * 4 * size);
        for (size_t i = 0; i < n; i++) in[k][i] = 1;
        memset(out[k], 0, n * 4 * size);
    }
    double *t = calloc(iters, sizeof(double));
    for (int it = 0; it < iters; it++) {
        MPI_Request r[64];
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        for (int k = 0; k < K; k++)
            MPI_Iallgather(in[k], (int)n, MPI_FLOAT, out[k], (int)n, MPI_FLOAT, MPI_COMM_WORLD, &r[k]);
        MPI_Waitall(K, r, MPI_STATUSES_IGNORE);
        double dt = MPI_Wtime() - t0, mx;
        MPI_Reduce(&dt, &mx, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        t[it] = mx;
    }
    if (rank == 0) {
        for (int it = 0; it < iters; it++)
            printf("%.1f%s", t[it] * 1e6 / K, (it + 1) % 20 ? " " : "\n");
        printf("\n");
    }
    MPI_Finalize();
    return 0;
}
