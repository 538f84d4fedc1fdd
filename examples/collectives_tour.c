/*
 * A plain MPI program (it needs nothing of libdpcoll to build or run): for
 * each collective and a range of sizes it times MPI_<coll> and the MPI
 * library's own PMPI_<coll> on the same buffers, and checks
 * that both give the same bytes. Run it with the shim:
 *
 *   mpiexec -n 4 env LD_PRELOAD=libdpcoll.so DPCOLL_STATS=1 ./collectives_tour
 *
 * and MPI_<coll> runs on libdpcoll; without it, both columns are MPICH.
 * Times are medians over repeats; speedup = native / ours.
 */
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { ALLREDUCE, REDUCE_SCATTER, ALLGATHER, BCAST, ALLTOALL, NCOLL };
static const char *names[NCOLL] = {"allreduce", "reduce_scatter_block", "allgather", "bcast", "alltoall"};
static int rank, size;

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* bytes: the per-rank buffer each call moves */
static void call(int coll, int native, float *in, float *out, int n)
{
    int blk = n / size > 0 ? n / size : 1;
    switch (coll) {
    case ALLREDUCE:
        (native ? PMPI_Allreduce : MPI_Allreduce)(in, out, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        break;
    case REDUCE_SCATTER:
        (native ? PMPI_Reduce_scatter_block : MPI_Reduce_scatter_block)(in, out, blk, MPI_FLOAT,
                                                                       MPI_SUM, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        (native ? PMPI_Allgather : MPI_Allgather)(in, blk, MPI_FLOAT, out, blk, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    case BCAST:
        memcpy(out, in, sizeof(float) * (size_t)n);
        (native ? PMPI_Bcast : MPI_Bcast)(out, n, MPI_FLOAT, 0, MPI_COMM_WORLD);
        break;
    default:
        (native ? PMPI_Alltoall : MPI_Alltoall)(in, blk, MPI_FLOAT, out, blk, MPI_FLOAT, MPI_COMM_WORLD);
        break;
    }
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *(*last_algo)(void) = (const char *(*)(void))dlsym(RTLD_DEFAULT, "dpcoll_last_algorithm");
    int (*active)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "dpcoll_active");
    int max_bytes = argc > 1 ? atoi(argv[1]) : 16 << 20;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    if (rank == 0)
        printf("%d ranks; MPI_<coll> runs on %s\ntimes: medians of %d calls of each (a quarter of "
               "that from 4 MiB), the two interleaved call by call, slowest rank\n\n"
               "%-22s %10s %-20s %12s %12s %8s %6s\n", size,
               active && active() ? "libdpcoll (PMPI_<coll> is MPICH's own)" : "the MPI library itself",
               reps, "collective", "bytes", "algorithm", "ours us", "native us", "speedup", "same");
    size_t cap = (size_t)max_bytes / sizeof(float) * (size_t)size + 16;
    float *in = malloc(sizeof(float) * cap), *o1 = malloc(sizeof(float) * cap),
          *o2 = malloc(sizeof(float) * cap);
    double *t1 = malloc(sizeof(double) * (size_t)reps), *t2 = malloc(sizeof(double) * (size_t)reps);
    for (size_t i = 0; i < cap; i++)
        in[i] = (float)((i * 7 + (size_t)rank) % 17) - 8;   /* integers: exact in any order */
    int bad_total = 0;
    for (int coll = 0; coll < NCOLL; coll++) {
        for (int bytes = 8; bytes <= max_bytes; bytes *= 16) {
            int n = bytes / (int)sizeof(float);
            if (coll == REDUCE_SCATTER || coll == ALLGATHER || coll == ALLTOALL)
                n = n < size ? size : n;   /* at least one element per rank */
            int r = bytes >= (4 << 20) ? (reps + 3) / 4 : reps;
            /* one untimed call of each first (the first calls on a size's
             * buffers bring their pages and lines in), then the two
             * interleaved, call by call, so that neither side's times come
             * from a quieter or noisier stretch of the run than the
             * other's (in batches, one side after the other, MPICH against
             * itself came out 0.70-1.27x at 512 KiB). Each timed call
             * starts from a barrier made of MPI_Allreduce: on libdpcoll a
             * rank that waits there sleeps, where in MPICH's it would spin
             * on a core, and with more ranks than cores that would starve
             * the ranks still in the call before */
            call(coll, 0, in, o1, n);
            const char *algo = last_algo ? last_algo() : "-";
            call(coll, 1, in, o2, n);
            int one = 1, sum;
            for (int k = 0; k < r; k++) {
                for (int native = 0; native < 2; native++) {
                    MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
                    double t = MPI_Wtime();
                    call(coll, native, in, native ? o2 : o1, n);
                    (native ? t2 : t1)[k] = MPI_Wtime() - t;
                }
            }
            int blk = n / size > 0 ? n / size : 1;
            size_t outn = coll == REDUCE_SCATTER ? (size_t)blk
                        : coll == ALLGATHER || coll == ALLTOALL ? (size_t)blk * (size_t)size : (size_t)n;
            int bad = memcmp(o1, o2, sizeof(float) * outn) != 0, any = 0;
            PMPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            bad_total += any;
            /* the slowest rank's median is the collective's time */
            qsort(t1, (size_t)r, sizeof(double), cmp);
            qsort(t2, (size_t)r, sizeof(double), cmp);
            double m[2] = {t1[r / 2], t2[r / 2]}, mx[2];
            PMPI_Allreduce(m, mx, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
            if (rank == 0)
                printf("%-22s %10zu %-20s %12.1f %12.1f %7.2fx %6s\n", names[coll],
                       sizeof(float) * (size_t)n, algo[0] ? algo : "-", mx[0] * 1e6, mx[1] * 1e6,
                       mx[1] / mx[0], any ? "NO" : "yes");
        }
    }
    if (rank == 0)
        printf("\n%s\n", bad_total ? "RESULTS DIFFER from the MPI library's" :
               "every result equal to the MPI library's, bit for bit");
    free(in); free(o1); free(o2); free(t1); free(t2);
    MPI_Finalize();
    return bad_total ? 1 : 0;
}
