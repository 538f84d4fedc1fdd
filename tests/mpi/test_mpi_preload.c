/*
 * A plain MPI program, linked only with the MPI library: run under
 * LD_PRELOAD=libdpcoll.so its collectives must run on libdpcoll (found with
 * dlsym, since the program knows nothing of it) and equal PMPI's results.
 *
 * "loop [N]": then N times (default 12) the same large calls with new data
 * (allreduce, bcast, allgather, reduce-scatter, alltoall), on the world and
 * on a duplicate made and freed for each half of them, each result checked
 * as above: a training loop's repeated signatures, which DPCOLL_AUTOTUNE
 * measures and decides (run.sh).
 *
 * "pairs": then the bcast again on communicators of two consecutive world
 * ranks (MPI_Comm_split), checked the same way: with DPCOLL_TEST_NODES a
 * communicator within one node, which may read its members' memory, in a
 * job whose world may not (run.sh). Rank 0 prints the model's time of a
 * 1 MiB ring allreduce there (dpcoll_predict, found as dpcoll_active is),
 * which run.sh compares with a job on one node of two ranks, and the nodes
 * the world and its pair span with the world's node map (dpcoll_comm_nodes),
 * which run.sh compares with DPCOLL_TEST_NODES's placement.
 */
#include "config.h"
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
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
    if (argc > 1 && !strcmp(argv[1], "pairs")) {
        MPI_Comm pair;
        MPI_Comm_split(MPI_COMM_WORLD, rank / 2, rank, &pair);
        for (int i = 0; i < N; i++)
            ia[i] = rank % 2 == 0 ? i * 5 : -1;
        MPI_Bcast(ia, N, MPI_INT, 0, pair);
        int wrong = 0;
        for (int i = 0; i < N; i++)
            wrong += ia[i] != i * 5;
        checks++, bad += wrong != 0;
        double (*predict)(const char *, const char *, int, MPI_Datatype, MPI_Comm) =
            (double (*)(const char *, const char *, int, MPI_Datatype, MPI_Comm))dlsym(
                RTLD_DEFAULT, "dpcoll_predict");
        double t = predict ? predict("allreduce", "ring", 1 << 18, MPI_FLOAT, pair) : -1;
        if (rank == 0)
            printf("pair prediction: ring allreduce of 1 MiB %.6g s\n", t);
        int (*nodes)(MPI_Comm, int *, size_t *) =
            (int (*)(MPI_Comm, int *, size_t *))dlsym(RTLD_DEFAULT, "dpcoll_comm_nodes");
        int *map = calloc((size_t)size, sizeof(int));
        size_t eager = 0;
        int world_nodes = nodes && map ? nodes(MPI_COMM_WORLD, map, &eager) : -1;
        int pair_nodes = nodes ? nodes(pair, NULL, NULL) : -1;
        if (rank == 0) {
            printf("nodes: world %d (", world_nodes);
            for (int i = 0; map && i < size; i++)
                printf("%s%d", i ? " " : "", map[i]);
            printf("), pair %d, eager %s\n", pair_nodes, eager > 0 ? "given" : "none");
        }
        free(map);
        MPI_Comm_free(&pair);
    }
    int loops = argc > 1 && !strcmp(argv[1], "loop") ? (argc > 2 ? atoi(argv[2]) : 12) : 0;
    enum { B = 20000 };   /* ints per rank's block: 80 KB, beyond the replayed calls */
    int *blk = malloc(sizeof(int) * B * (size_t)size), *got = malloc(sizeof(int) * B * (size_t)size),
        *ref = malloc(sizeof(int) * B * (size_t)size);
    for (int half = 0; half < 2 && loops; half++) {
        MPI_Comm comm = MPI_COMM_WORLD;
        if (half)
            MPI_Comm_dup(MPI_COMM_WORLD, &comm);
        for (int it = 0; it < loops / 2; it++) {
            for (int i = 0; i < N; i++)
                a[i] = (double)((i * 5 + rank * 3 + it) % 17) - 8;
            MPI_Allreduce(a, b, N, MPI_DOUBLE, MPI_SUM, comm);
            PMPI_Allreduce(a, c, N, MPI_DOUBLE, MPI_SUM, comm);
            checks++, bad += memcmp(b, c, sizeof(b)) != 0;
            int root = it % size;
            for (int i = 0; i < N; i++)
                ia[i] = rank == root ? i * 3 + it : -1;
            MPI_Bcast(ia, N, MPI_INT, root, comm);
            int wrong = 0;
            for (int i = 0; i < N; i++)
                wrong += ia[i] != i * 3 + it;
            checks++, bad += wrong != 0;
            for (int i = 0; i < B * size; i++)
                blk[i] = (i * 7 + rank + it) % 101;
            MPI_Allgather(blk, B, MPI_INT, got, B, MPI_INT, comm);
            PMPI_Allgather(blk, B, MPI_INT, ref, B, MPI_INT, comm);
            checks++, bad += memcmp(got, ref, sizeof(int) * B * (size_t)size) != 0;
            MPI_Reduce_scatter_block(blk, got, B, MPI_INT, MPI_SUM, comm);
            PMPI_Reduce_scatter_block(blk, ref, B, MPI_INT, MPI_SUM, comm);
            checks++, bad += memcmp(got, ref, sizeof(int) * B) != 0;
            MPI_Alltoall(blk, B, MPI_INT, got, B, MPI_INT, comm);
            PMPI_Alltoall(blk, B, MPI_INT, ref, B, MPI_INT, comm);
            checks++, bad += memcmp(got, ref, sizeof(int) * B * (size_t)size) != 0;
        }
        if (half)
            MPI_Comm_free(&comm);
    }
    free(blk);
    free(got);
    free(ref);
    int all = 0;
    PMPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%d%%: Checks: %d, Failures: %d, Errors: 0\n", all ? 0 : 100, checks, all ? 1 : 0);
    MPI_Finalize();
    return all ? 1 : 0;
}
