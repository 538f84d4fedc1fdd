#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
static void cma(int w, pid_t pid, void *l, long long rem, size_t n) {
    struct iovec li = {l, n}, ri = {(void *)(uintptr_t)rem, n};
    ssize_t k = w ? process_vm_writev(pid, &li, 1, &ri, 1, 0) : process_vm_readv(pid, &li, 1, &ri, 1, 0);
    if (k != (ssize_t)n) { perror("cma"); abort(); }
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r, p; MPI_Comm_rank(MPI_COMM_WORLD, &r); MPI_Comm_size(MPI_COMM_WORLD, &p);
    size_t total = (size_t)atol(argv[1]) << 20, b = total / 2;
    size_t chunk = argc > 2 ? (size_t)atol(argv[2]) << 10 : b;
    char *in = malloc(b), *out = malloc(total);
    memset(in, r + 1, b); memset(out, 0, total);
    long long me[3] = {getpid(), (long long)(uintptr_t)in, (long long)(uintptr_t)out}, peer[3];
    MPI_Sendrecv(me, 3, MPI_LONG_LONG, 1 - r, 0, peer, 3, MPI_LONG_LONG, 1 - r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    enum { REPS = 15, V = 7 };
    const char *only = getenv("ONLY");
    double t[V][REPS];
    const char *names[V] = {"memcpy+pull", "pull+memcpy", "memcpy+push", "push+memcpy", "chunk push,copy", "PMPI_Allgather", "MPI_Allgather"};
    for (int k = -3; k < REPS; k++) {
        for (int v = 0; v < V; v++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            char *own = out + r * b, *oth = out + (1 - r) * b;
            long long pin = peer[1], pown = peer[2] + (long long)(r * b);
            if (v == 0) { memcpy(own, in, b); cma(0, peer[0], oth, pin, b); }
            else if (v == 3) { cma(1, peer[0], in, pown, b); memcpy(own, in, b); }
            else if (v == 1) { cma(0, peer[0], oth, pin, b); memcpy(own, in, b); }
            else if (v == 2) { memcpy(own, in, b); cma(1, peer[0], in, pown, b); }
            else if (v < 5) {
                for (size_t o = 0; o < b; o += chunk) {
                    size_t n = b - o < chunk ? b - o : chunk;
                    if (v == 1) { memcpy(own + o, in + o, n); cma(0, peer[0], oth + o, pin + o, n); }
                    if (v == 2) { memcpy(own + o, in + o, n); cma(1, peer[0], own + o, pown + o, n); }
                    if (v == 4) { cma(1, peer[0], in + o, pown + o, n); memcpy(own + o, in + o, n); }
                }
            } else if (v == 5) PMPI_Allgather(in, (int)b, MPI_BYTE, out, (int)b, MPI_BYTE, MPI_COMM_WORLD);
            else MPI_Allgather(in, (int)b, MPI_BYTE, out, (int)b, MPI_BYTE, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            double t1 = MPI_Wtime();
            if (k >= 0) t[v][k] = t1 - t0;
        }
    }
    if (!r) for (int v = 0; v < V; v++) { qsort(t[v], REPS, sizeof(double), cmpd); printf("%zu MiB chunk %zu KiB %-16s %8.0f us\n", total >> 20, chunk >> 10, names[v], t[v][REPS / 2] * 1e6); }
    MPI_Finalize();
    return 0;
}
