/* minor faults per rank: K calls in flight (nonblocking or persistent), 256 KiB each */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
static long faults(void) { struct rusage ru; getrusage(RUSAGE_SELF, &ru); return ru.ru_minflt; }
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, K = atoi(argv[1]), pers = atoi(argv[2]), n = 65536, iters = 40;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    float *in = malloc(sizeof(float) * n * K), *out = malloc(sizeof(float) * n * K);
    for (int i = 0; i < n * K; i++) in[i] = 1;
    MPI_Request r[64];
    if (pers)
        for (int k = 0; k < K; k++)
            MPI_Allreduce_init(in + k * n, out + k * n, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &r[k]);
    long f0 = 0;
    double t0 = 0;
    for (int it = 0; it < iters; it++) {
        if (it == 10) { f0 = faults(); t0 = MPI_Wtime(); }
        if (pers) MPI_Startall(K, r);
        else for (int k = 0; k < K; k++) MPI_Iallreduce(in + k * n, out + k * n, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r[k]);
        MPI_Waitall(K, r, MPI_STATUSES_IGNORE);
    }
    printf("rank %d: K=%d %s: %ld faults in 30 rounds, %.0f us per call\n", rank, K, pers ? "persistent" : "nonblocking", faults() - f0, (MPI_Wtime() - t0) / 30 / K * 1e6);
    if (pers) for (int k = 0; k < K; k++) MPI_Request_free(&r[k]);
    MPI_Finalize();
    return 0;
}
