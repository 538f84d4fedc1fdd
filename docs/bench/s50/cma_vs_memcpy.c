/*
 * What one copy costs on this machine, by the ways libdpcoll and MPICH
 * move data on one node: memcpy within a process, process_vm_readv out of
 * a peer (cross-memory attach: the direct algorithms' reads, and UCX's
 * cma rendezvous), process_vm_writev into a peer (their writes). Rank 1
 * copies while rank 0 waits in a barrier; medians of 200, microseconds.
 * Run it beside dpcoll_bench to see which state the VM is in (its copy
 * rates have moved by 2-3x between sessions).
 *
 *   mpicc -O2 -o cma_vs_memcpy cma_vs_memcpy.c && mpiexec -n 2 ./cma_vs_memcpy
 *
 * (not built by make: a measurement behind a note)
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { REPS = 200 };

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r;
    MPI_Comm_rank(MPI_COMM_WORLD, &r);
    size_t maxn = 4u << 20;
    /* HUGE=1: both buffers on 2 MiB pages (the kernel pins one page, not
     * 512, per 2 MiB a cross-memory copy crosses) */
    int huge = getenv("HUGE") && atoi(getenv("HUGE"));
    char *a, *b;
    if (posix_memalign((void **)&a, 2u << 20, maxn) || posix_memalign((void **)&b, 2u << 20, maxn))
        abort();
    if (huge && (madvise(a, maxn, MADV_HUGEPAGE) || madvise(b, maxn, MADV_HUGEPAGE)))
        perror("madvise");
    memset(a, r + 1, maxn);
    memset(b, 0, maxn);
    long long me[2] = {getpid(), (long long)(uintptr_t)a}, peer[2];
    MPI_Sendrecv(me, 2, MPI_LONG_LONG, 1 - r, 0, peer, 2, MPI_LONG_LONG, 1 - r, 0, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
    if (r == 1)
        printf("%10s %10s %10s %10s %8s %8s\n", "bytes", "memcpy_us", "readv_us", "writev_us",
               "GB/s_mc", "GB/s_rd");
    for (size_t n = 65536; n <= maxn; n *= 2) {
        double t[3][REPS];
        for (int k = -5; k < REPS; k++)
            for (int way = 0; way < 3; way++) {
                MPI_Barrier(MPI_COMM_WORLD);
                if (r != 1)
                    continue;
                struct iovec l = {b, n}, rm = {(void *)(uintptr_t)peer[1], n};
                double t0 = MPI_Wtime();
                if (way == 0)
                    memcpy(b, a, n);
                else if (way == 1 && process_vm_readv((pid_t)peer[0], &l, 1, &rm, 1, 0) != (ssize_t)n)
                    perror("process_vm_readv"), abort();
                else if (way == 2 && process_vm_writev((pid_t)peer[0], &l, 1, &rm, 1, 0) != (ssize_t)n)
                    perror("process_vm_writev"), abort();
                if (k >= 0)
                    t[way][k] = (MPI_Wtime() - t0) * 1e6;
            }
        if (r == 1) {
            for (int way = 0; way < 3; way++)
                qsort(t[way], REPS, sizeof(double), cmpd);
            double m0 = t[0][REPS / 2], m1 = t[1][REPS / 2], m2 = t[2][REPS / 2];
            printf("%10zu %10.2f %10.2f %10.2f %8.2f %8.2f\n", n, m0, m1, m2, n / m0 / 1e3,
                   n / m1 / 1e3);
        }
    }
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
