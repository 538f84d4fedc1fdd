/*
 * A fresh job's first calls: each size in a process of its own, MPI_Bcast
 * from rank 0 after an MPI_Allreduce barrier, the medians of every 50 calls
 * in order (rank 0's time: the root only writes its record into the peer's
 * mailbox ring). Messages of up to 8 KiB go through libdpcoll's mailboxes,
 * 512 KiB rings: a 2 KiB message laps its ring in about 250 calls. Where
 * the first write to a page costs more than the next ones (first_lap.txt:
 * about 4 us a page on a VM), the first lap shows it (docs/bench/README.md,
 * session 15).
 *
 *   mpicc -O2 -o first_lap first_lap.c
 *   for b in 128 1024 2048 4096 8192; do
 *       mpiexec -n 2 env LD_PRELOAD=_build/.libs/libdpcoll.so ./first_lap $b; done
 *
 * (not built by make: a measurement behind a note, not part of the library)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CALLS = 400, GROUP = 50 };

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    int bytes = argc > 1 ? atoi(argv[1]) : 2048;
    char *buf = malloc((size_t)bytes);
    memset(buf, r + 1, (size_t)bytes);
    static double t[CALLS], g[GROUP];
    int one = 1, sum;
    for (int k = 0; k < CALLS; k++) {
        MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        double t0 = MPI_Wtime();
        MPI_Bcast(buf, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        t[k] = MPI_Wtime() - t0;
    }
    if (r == 0) {
        printf("%6d B, medians of calls 1-%d, %d-%d ... (us):", bytes, GROUP, GROUP + 1, 2 * GROUP);
        for (int k = 0; k + GROUP <= CALLS; k += GROUP) {
            memcpy(g, t + k, sizeof(g));
            qsort(g, GROUP, sizeof(double), cmpd);
            printf(" %.1f", g[GROUP / 2] * 1e6);
        }
        printf("\n");
    }
    free(buf);
    MPI_Finalize();
    return 0;
}
