#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* argv: coll (bcast|allgather|allreduce) bytes iters */
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *coll = argv[1];
    int bytes = atoi(argv[2]), iters = atoi(argv[3]);
    char *in = calloc((size_t)bytes * size, 1), *out = calloc((size_t)bytes * size, 1);
    for (int it = 0; it < iters; it++) {
        if (!strcmp(coll, "bcast"))
            MPI_Bcast(in, bytes, MPI_BYTE, 0, MPI_COMM_WORLD);
        else if (!strcmp(coll, "allgather"))
            MPI_Allgather(in, bytes, MPI_BYTE, out, bytes, MPI_BYTE, MPI_COMM_WORLD);
        else
            MPI_Allreduce(in, out, bytes / 4, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
    MPI_Finalize();
    return 0;
}
