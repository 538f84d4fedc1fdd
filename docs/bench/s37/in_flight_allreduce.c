/* K MPI_Iallreduce in flight then Waitall; optional compute of G us between; argv: bytes K rounds G */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b){double x=*(double*)a,y=*(double*)b;return x<y?-1:x>y;}
static void spin_us(double us){double t=MPI_Wtime()+us*1e-6; volatile double s=0; while(MPI_Wtime()<t) s+=1;}
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rank; MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    size_t n = (argc > 1 ? strtoul(argv[1], 0, 10) : 16384) / 4;
    int K = argc > 2 ? atoi(argv[2]) : 4, R = argc > 3 ? atoi(argv[3]) : 400;
    double G = argc > 4 ? atof(argv[4]) : 0;
    float *in[64], *out[64];
    for (int k = 0; k < K; k++) { in[k] = malloc(n*4); out[k] = malloc(n*4); for (size_t i=0;i<n;i++) in[k][i]=(float)(i%7+rank); }
    double *t = calloc(R, sizeof(double));
    MPI_Barrier(MPI_COMM_WORLD);
    for (int it = 0; it < R; it++) {
        MPI_Request r[64];
        double t0 = MPI_Wtime();
        for (int k = 0; k < K; k++)
            MPI_Iallreduce(in[k], out[k], (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &r[k]);
        if (G > 0) spin_us(G);
        MPI_Waitall(K, r, MPI_STATUSES_IGNORE);
        t[it] = (MPI_Wtime() - t0) * 1e6 / K;
    }
    int bad = 0; for (int k=0;k<K;k++) for (size_t i=0;i<n;i++) if (out[k][i] != (float)(2*(i%7)+1)) bad++;
    qsort(t, R, sizeof(double), cmp);
    if (rank == 0) printf("bytes %zu K %d gap %.0f: median %.2f us/call, p10 %.2f p90 %.2f, bad %d\n", n*4, K, G, t[R/2], t[R/10], t[R*9/10], bad);
    MPI_Finalize();
    return 0;
}
