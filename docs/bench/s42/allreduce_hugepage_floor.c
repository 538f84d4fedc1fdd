#define _GNU_SOURCE
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>
#include <sys/mman.h>
#include <immintrin.h>
static int cmpd(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
static void cma(int w, pid_t pid, void *l, long long rem, size_t n) {
    struct iovec li = {l, n}, ri = {(void *)(uintptr_t)rem, n};
    ssize_t k = w ? process_vm_writev(pid, &li, 1, &ri, 1, 0) : process_vm_readv(pid, &li, 1, &ri, 1, 0);
    if (k != (ssize_t)n) { perror("cma"); abort(); }
}
static void addf(float *d, const float *a, const float *b, size_t n) { for (size_t i = 0; i < n; i++) d[i] = a[i] + b[i]; }
static void addnt(float *d, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i += 8) _mm256_stream_ps(d + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
    _mm_sfence();
}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int r; MPI_Comm_rank(MPI_COMM_WORLD, &r);
    size_t n = (size_t)atol(argv[1]) << 20, h = n / 2, chunk = (size_t)atol(argv[2]) << 10;
    char *in = aligned_alloc(2097152, n), *out = aligned_alloc(2097152, n), *s1 = aligned_alloc(64, 2 * chunk), *s2 = aligned_alloc(64, chunk);
    if (getenv("HUGE")) { madvise(in, n, MADV_HUGEPAGE); madvise(out, n, MADV_HUGEPAGE); }
    for (size_t i = 0; i < n / 4; i++) ((float *)in)[i] = (float)(i % 7 + r);
    memset(out, 0, n);
    if (getenv("COLLAPSE")) {
        double c0 = MPI_Wtime();
        int e1 = madvise(in, n, 25 /* MADV_COLLAPSE */), e2 = madvise(out, n, 25);
        double c1 = MPI_Wtime();
        if (!r) printf("collapse %d %d: %.0f us for 2 x %zu MiB\n", e1, e2, (c1 - c0) * 1e6, n >> 20);
    }
    long long me[3] = {getpid(), (long long)(uintptr_t)in, (long long)(uintptr_t)out}, peer[3];
    MPI_Sendrecv(me, 3, MPI_LONG_LONG, 1 - r, 0, peer, 3, MPI_LONG_LONG, 1 - r, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    enum { REPS = 15, V = 5 };
    double t[V][REPS];
    const char *names[V] = {"lib-like: read,add->out,write", "add->scratch,copy out,write", "add NT->out, write from scratch", "whole read, add, whole write", "PMPI_Allreduce"};
    size_t off = r * h;   /* this rank reduces half r */
    for (int k = -3; k < REPS; k++) {
        for (int v = 0; v < V; v++) {
            MPI_Barrier(MPI_COMM_WORLD);
            double t0 = MPI_Wtime();
            if (v <= 2) {
                for (size_t o = 0; o < h; o += chunk) {
                    char *sc = s1 + ((o / chunk) % 2) * chunk;
                    cma(0, peer[0], sc, peer[1] + off + o, chunk);
                    if (v == 0) { addf((float *)(out + off + o), (float *)(in + off + o), (float *)sc, chunk / 4); cma(1, peer[0], out + off + o, peer[2] + off + o, chunk); }
                    if (v == 1) { addf((float *)s2, (float *)(in + off + o), (float *)sc, chunk / 4); memcpy(out + off + o, s2, chunk); cma(1, peer[0], s2, peer[2] + off + o, chunk); }
                    if (v == 2) { addf((float *)s2, (float *)(in + off + o), (float *)sc, chunk / 4); cma(1, peer[0], s2, peer[2] + off + o, chunk); 
                                  for (size_t i = 0; i < chunk; i += 32) _mm256_stream_ps((float *)(out + off + o + i), _mm256_load_ps((float *)(s2 + i))); _mm_sfence(); }
                }
            } else if (v == 3) {
                char *big = malloc(h);
                cma(0, peer[0], big, peer[1] + off, h);
                addf((float *)(out + off), (float *)(in + off), (float *)big, h / 4);
                cma(1, peer[0], out + off, peer[2] + off, h);
                free(big);
            } else PMPI_Allreduce(in, out, (int)(n / 4), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
            MPI_Barrier(MPI_COMM_WORLD);
            double t1 = MPI_Wtime();
            if (k >= 0) t[v][k] = t1 - t0;
        }
    }
    if (!r) for (int v = 0; v < V; v++) { qsort(t[v], REPS, sizeof(double), cmpd); printf("%zu MiB chunk %zu KiB %-34s %8.0f us\n", n >> 20, chunk >> 10, names[v], t[v][REPS / 2] * 1e6); }
    MPI_Finalize();
    return 0;
}
