/*
 * A fresh job's first large calls: MPI_Allreduce (float, sum) of one size
 * on buffers the program has just allocated and written, in a process of
 * its own, each call after an MPI_Barrier, timed on rank 0. Prints one
 * line: the time of calls 1, 2, ... CALLS in order (us). Run it several
 * times and take the median of each column: one process gives one sample
 * per call.
 *
 * What it shows: the first uses of memory cost what later ones do not (the
 * pages' first writes; on a VM also the hypervisor's work behind them), so
 * a job's first calls of a size are slower than its steady state; a
 * library that allocates fresh scratch for the second call pays that twice
 * (docs/bench/first_calls.txt, session 34).
 *
 *   mpicc -O2 -o first_calls first_calls.c
 *   mpiexec -n 2 env LD_PRELOAD=_build/.libs/libdpcoll.so ./first_calls 4194304
 *
 * (not built by make: a measurement behind a note, not part of the library)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

enum { CALLS = 8 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long bytes = argc > 1 ? atol(argv[1]) : 1 << 20;
    int n = (int)(bytes / (long)sizeof(float));
    float *in = malloc(sizeof(float) * (size_t)n), *out = malloc(sizeof(float) * (size_t)n);
    for (int i = 0; i < n; i++) {
        in[i] = (float)(i % 7);
        out[i] = 0;
    }
    double t[CALLS];
    for (int k = 0; k < CALLS; k++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Allreduce(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        t[k] = (MPI_Wtime() - t0) * 1e6;
    }
    int size, wrong = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < n; i++)
        wrong += out[i] != (float)(size * (i % 7));
    if (rank == 0) {
        printf("%ld B:", bytes);
        for (int k = 0; k < CALLS; k++)
            printf(" %.0f", t[k]);
        printf("%s\n", wrong ? " (WRONG RESULT)" : "");
    }
    free(in);
    free(out);
    MPI_Finalize();
    return wrong != 0;
}
