/*
 * The least a 2-rank alltoall can cost on one node with cross-memory attach:
 * each rank copies its own block (memcpy) and reads the peer's block out of
 * the peer's memory (one process_vm_readv), with no synchronization at all
 * inside the timed region; next to it, MPICH's own alltoall (PMPI) on the
 * same buffers, and MPI_Alltoall (libdpcoll's when run with
 * LD_PRELOAD=libdpcoll.so, else MPICH's again). What MPICH spends beyond the copies is what any exchange of
 * this kind needs: a message that the peer's buffer is ready, one that the
 * reading is done, and the system call (docs/bench/README.md, alltoall).
 *
 *   mpicc -O2 -o alltoall_floor alltoall_floor.c
 *   mpiexec -n 2 env LD_PRELOAD=_build/.libs/libdpcoll.so ./alltoall_floor
 *
 * (not built by make: a measurement behind a note, not part of the library)
 */
#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &p);
    size_t maxn = 16u << 20;
    char *in = malloc(maxn), *out = malloc(maxn);
    memset(in, r + 1, maxn); memset(out, 0, maxn);
    long long me[2] = {getpid(), (long long)(uintptr_t)in}, peer[2];
    MPI_Sendrecv(me, 2, MPI_LONG_LONG, 1 - r, 0, peer, 2, MPI_LONG_LONG, 1 - r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    enum { REPS = 200 };
    double t[REPS], u[REPS], w[REPS];
    if (!r) printf("%10s %12s %12s %12s %12s\n", "bytes", "floor_us", "mpich_us", "MPI_us", "mpich/floor");
    for (size_t n = 65536; n <= maxn; n *= 2) {
        size_t b = n / 2;
        for (int k = -10; k < REPS; k++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            memcpy(out + (size_t)r * b, in + (size_t)r * b, b);
            struct iovec l = {out + (size_t)(1 - r) * b, b}, rm = {(void *)(uintptr_t)(peer[1] + (long long)(r * b)), b};
            if (process_vm_readv((pid_t)peer[0], &l, 1, &rm, 1, 0) != (ssize_t)b) { perror("cma"); abort(); }
            double t1 = MPI_Wtime();
            MPI_Barrier(MPI_COMM_WORLD);
            double t2 = MPI_Wtime();
            PMPI_Alltoall(in, (int)b, MPI_BYTE, out, (int)b, MPI_BYTE, MPI_COMM_WORLD);
            double t3 = MPI_Wtime();
            MPI_Barrier(MPI_COMM_WORLD);
            double t4 = MPI_Wtime();
            MPI_Alltoall(in, (int)b, MPI_BYTE, out, (int)b, MPI_BYTE, MPI_COMM_WORLD);
            double t5 = MPI_Wtime();
            if (k >= 0) { t[k] = t1 - t0; u[k] = t3 - t2; w[k] = t5 - t4; }
        }
        qsort(t, REPS, sizeof(double), cmpd); qsort(u, REPS, sizeof(double), cmpd);
        qsort(w, REPS, sizeof(double), cmpd);
        double m[3] = {t[REPS / 2], u[REPS / 2], w[REPS / 2]}, mx[3];
        MPI_Allreduce(m, mx, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (!r) printf("%10zu %12.2f %12.2f %12.2f %12.2f\n", n, mx[0] * 1e6, mx[1] * 1e6,
                       mx[2] * 1e6, mx[1] / mx[0]);
    }
    MPI_Finalize();
    return 0;
}
