/*
 * A plain MPI program, linked only with the MPI library: run under
 * LD_PRELOAD=libdpcoll.so its collectives must run on libdpcoll (found with
 * dlsym, since the program knows nothing of it) and equal PMPI's results.
 */
#include "config.h"
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size, bad = 0, checks = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "dpcoll_active");
    checks++;
    if (!active || !active()) {
        bad++;
        if (rank == 0)
            printf("libdpcoll is not preloaded or not active\n");
    }
    enum { N = 100003 };
    static double a[N], b[N], c[N];
    static int ia[N], ib[N], ic[N];
    for (int i = 0; i < N; i++)
        a[i] = (double)((i * 7 + rank) % 13) - 6, ia[i] = i ^ rank;
    MPI_Allreduce(a, b, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    PMPI_Allreduce(a, c, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    checks++, bad += memcmp(b, c, sizeof(b)) != 0;
    MPI_Bcast(ia, N, MPI_INT, size - 1, MPI_COMM_WORLD);
    for (int i = 0; i < N; i++)
        ib[i] = i ^ (size - 1);
    checks++, bad += memcmp(ia, ib, sizeof(ia)) != 0;
    MPI_Allgather(&rank, 1, MPI_INT, ib, 1, MPI_INT, MPI_COMM_WORLD);
    PMPI_Allgather(&rank, 1, MPI_INT, ic, 1, MPI_INT, MPI_COMM_WORLD);
    checks++, bad += memcmp(ib, ic, sizeof(int) * (size_t)size) != 0;
    int all = 0;
    PMPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d%%: Checks: %d, Failures: %d, Errors: 0\n", all ? 0 : 100, checks, all ? 1 : 0);
    MPI_Finalize();
    return all ? 1 : 0;
}
