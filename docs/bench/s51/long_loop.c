/*
 * A training loop's repeated calls over a stretch of wall-clock time, long
 * enough for this VM to change its state (every ten seconds to a minute,
 * modes.sh) several times: for SECONDS seconds, in turn, an allreduce of
 * 1 MiB and a reduce_scatter_block of 2 MiB (float sums), exact integer
 * data checked each call. Prints each collective's mean time per call and
 * its calls. Compare DPCOLL_AUTOTUNE off, on with DPCOLL_AUTOTUNE_PERIOD=0
 * (decided once), and on with a period, in alternating runs:
 *
 *   mpicc -O2 -o /tmp/long_loop docs/bench/s51/long_loop.c
 *   mpiexec -n 2 env LD_PRELOAD=_build/.libs/libdpcoll.so [DPCOLL_AUTOTUNE=3 ...] /tmp/long_loop 20
 *
 * (not built by make: a measurement behind a note)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    double seconds = argc > 1 ? atof(argv[1]) : 20;
    int n_ar = 1 << 18, n_rs = 1 << 19;   /* floats: 1 MiB, 2 MiB */
    float *a = malloc(sizeof(float) * n_ar), *b = malloc(sizeof(float) * n_ar);
    float *c = malloc(sizeof(float) * n_rs), *d = malloc(sizeof(float) * (n_rs / p));
    double t[2] = {0, 0};
    long calls[2] = {0, 0}, wrong = 0;
    int go = 1;
    double start = MPI_Wtime();
    for (long it = 0; go; it++) {
        for (int i = 0; i < n_ar; i++)
            a[i] = (float)((i + r + it) % 64);
        for (int i = 0; i < n_rs; i++)
            c[i] = (float)((i + r + it) % 64);
        double t0 = MPI_Wtime();
        MPI_Allreduce(a, b, n_ar, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t1 = MPI_Wtime();
        MPI_Reduce_scatter_block(c, d, n_rs / p, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        double t2 = MPI_Wtime();
        t[0] += t1 - t0;
        t[1] += t2 - t1;
        calls[0]++, calls[1]++;
        for (int i = 0; i < n_ar; i += 97) {
            long want = 0;
            for (int q = 0; q < p; q++)
                want += (i + q + it) % 64;
            wrong += b[i] != (float)want;
        }
        for (int i = 0; i < n_rs / p; i += 97) {
            long want = 0, g = (long)r * (n_rs / p) + i;
            for (int q = 0; q < p; q++)
                want += (g + q + it) % 64;
            wrong += d[i] != (float)want;
        }
        /* (rank 0's clock decides for all: every rank makes the same calls) */
        if ((it & 63) == 63) {
            go = MPI_Wtime() - start < seconds;
            MPI_Bcast(&go, 1, MPI_INT, 0, MPI_COMM_WORLD);
        }
    }
    double mean[2] = {t[0] / calls[0], t[1] / calls[1]}, slowest[2];
    MPI_Reduce(mean, slowest, 2, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
    long all_wrong = 0;
    MPI_Reduce(&wrong, &all_wrong, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
    if (r == 0)
        printf("allreduce 1MiB %.1f us x %ld, reduce_scatter_block 2MiB %.1f us x %ld, wrong %ld\n",
               slowest[0] * 1e6, calls[0], slowest[1] * 1e6, calls[1], all_wrong);
    free(a), free(b), free(c), free(d);
    MPI_Finalize();
    return 0;
}
