/*
 * The MPI library's own operations left in flight while a rank waits in a
 * collective of libdpcoll's (test_mpi_misc's mode "mpiprogress").
 *
 * MPI lets a program start an operation, enter a collective, and complete
 * the first operation afterwards, while its peers complete theirs first:
 *
 *   even rank:  MPI_Isend(big) to r+1;  collective;  MPI_Wait(isend)
 *   odd rank:   MPI_Recv(big) from r-1; collective
 *
 * The receive can only finish if the sender's MPI library makes progress
 * while the sender waits in the collective. MPICH's own collectives run its
 * progress engine as they wait; a collective of libdpcoll's waits on its own
 * UCX worker, and before it let the library run, the odd rank sat in
 * MPI_Recv, the even one in the collective, until DPCOLL_TIMEOUT. The same
 * with a nonblocking collective that goes to the MPI library (one with a
 * program's op on a 12-byte type) in place of the send, and with a
 * nonblocking collective of libdpcoll's waited for with MPI_Wait in place
 * of the blocking one. Every result is checked against closed forms; every
 * collective must have run on libdpcoll (dpcoll_last_algorithm). And a rank
 * waiting for a nonblocking collective of ours must not spin its core.
 */
#include "mpi_util.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "dpcoll.h"

/* large enough for a rendezvous in the MPI library (the sender acts again
 * after the receiver has posted), and for MPICH's allreduce to go in steps */
#define P2P_BYTES (8u << 20)
#define NBC_INTS (1u << 20)

enum { OURS_ALLREDUCE, OURS_BCAST, OURS_ALLTOALL, OURS_IALLREDUCE, OURS_ITEST, OURS_COUNT };
static const char *const ours_name[OURS_COUNT] = {
    "MPI_Allreduce", "MPI_Bcast", "MPI_Alltoall", "MPI_Iallreduce + MPI_Wait",
    "MPI_Iallreduce + an MPI_Test loop"};

/* One collective of libdpcoll's, its result checked against closed forms. */
static void run_ours(int which, const char *what)
{
    int p = t_size, r = t_rank, ok = 1;
    int x[4] = {r + 1, 2 * r, 7, -r};
    int *a = calloc((size_t)p, sizeof(int)), *b = calloc((size_t)p, sizeof(int));
    int y[4] = {0};
    MPI_Request q;
    switch (which) {
    case OURS_ALLREDUCE:
    case OURS_IALLREDUCE:
    case OURS_ITEST:
        if (which == OURS_ALLREDUCE) {
            MPI_Allreduce(x, y, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        } else {
            MPI_Iallreduce(x, y, 4, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
            if (which == OURS_IALLREDUCE) {
                MPI_Wait(&q, MPI_STATUS_IGNORE);
            } else {
                for (int done = 0; !done;)
                    MPI_Test(&q, &done, MPI_STATUS_IGNORE);
            }
        }
        ok = y[0] == p * (p + 1) / 2 && y[1] == p * (p - 1) && y[2] == 7 * p &&
             y[3] == -p * (p - 1) / 2;
        break;
    case OURS_BCAST:
        y[0] = r == p - 1 ? 12345 : 0;
        MPI_Bcast(y, 1, MPI_INT, p - 1, MPI_COMM_WORLD);
        ok = y[0] == 12345;
        break;
    case OURS_ALLTOALL:
        for (int i = 0; i < p; i++)
            a[i] = 100 * r + i;
        MPI_Alltoall(a, 1, MPI_INT, b, 1, MPI_INT, MPI_COMM_WORLD);
        for (int i = 0; i < p; i++)
            ok &= b[i] == 100 * i + r;
        break;
    }
    t_cases++;
    if (!ok)
        t_fail("%s: %s gave a wrong result", what, ours_name[which]);
    else if (dpcoll_active() && !dpcoll_last_algorithm()[0])
        t_fail("%s: %s did not run on libdpcoll", what, ours_name[which]);
    free(a);
    free(b);
}

/* even rank r sends P2P_BYTES to r+1 with MPI_Isend, enters the collective,
 * then waits; r+1 receives with MPI_Recv first. */
static void p2p_case(int which)
{
    char what[96];
    snprintf(what, sizeof(what), "MPI_Isend of %u bytes in flight", P2P_BYTES);
    unsigned char *buf = malloc(P2P_BYTES);
    int r = t_rank;
    bool sender = r % 2 == 0 && r + 1 < t_size, receiver = r % 2 == 1;
    MPI_Request q;
    if (sender) {
        for (size_t i = 0; i < P2P_BYTES; i++)
            buf[i] = (unsigned char)(i * 7 + (size_t)r);
        MPI_Isend(buf, (int)P2P_BYTES, MPI_BYTE, r + 1, 5, MPI_COMM_WORLD, &q);
        run_ours(which, what);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else if (receiver) {
        memset(buf, 0, P2P_BYTES);
        MPI_Recv(buf, (int)P2P_BYTES, MPI_BYTE, r - 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        run_ours(which, what);
        size_t bad = 0;
        for (size_t i = 0; i < P2P_BYTES && !bad; i++)
            if (buf[i] != (unsigned char)(i * 7 + (size_t)(r - 1)))
                bad = i + 1;
        t_cases++;
        if (bad)
            t_fail("%s: byte %zu received wrong", what, bad - 1);
    } else {
        run_ours(which, what);
    }
    free(buf);
}

/* MPI defines a non-commutative op's result in rank order; "keep the left
 * operand" is associative, and makes the result rank 0's contribution.
 * Its elements are three ints (12 bytes, a size libdpcoll has no stand-in
 * type for), so that the MPI library runs it. */
static void keep_left(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, 3 * sizeof(int) * (size_t)*len);
}

/* every rank starts MPI_Iallreduce with a program's op on three ints (which
 * goes to the MPI library); even ranks then enter the collective and wait
 * after it, odd ranks wait first. */
static void nbc_case(int which, MPI_Op left, MPI_Datatype int3)
{
    const char *what = "the MPI library's MPI_Iallreduce in flight";
    int *in = malloc(sizeof(int) * NBC_INTS), *out = malloc(sizeof(int) * NBC_INTS);
    for (unsigned i = 0; i < NBC_INTS; i++)
        in[i] = (int)(i * 3u) + t_rank, out[i] = -1;
    MPI_Request q;
    MPI_Iallreduce(in, out, NBC_INTS / 3, int3, left, MPI_COMM_WORLD, &q);
    if (t_rank % 2 == 0) {
        run_ours(which, what);
        MPI_Wait(&q, MPI_STATUS_IGNORE);
    } else {
        MPI_Wait(&q, MPI_STATUS_IGNORE);
        run_ours(which, what);
    }
    unsigned bad = 0;
    for (unsigned i = 0; i < NBC_INTS / 3 * 3 && !bad; i++)
        if (out[i] != (int)(i * 3u))
            bad = i + 1;
    t_cases++;
    if (bad)
        t_fail("%s: element %u is %d, expected rank 0's %d", what, bad - 1, out[bad - 1],
               (int)((bad - 1) * 3u));
    free(in);
    free(out);
}

static double cpu_s(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);   /* (every thread: ours too) */
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
           (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

/* A rank waiting for a nonblocking collective of ours whose last member is
 * late must give its core away: MPICH's MPI_Wait, MPI_Waitany and
 * MPI_Waitsome on such a request spun in its poll function, a whole core
 * for as long as the wait lasted (while MPI_Waitall slept). The ranks but
 * the last wait LATE_S; the process may use half of that in CPU time (it
 * used all of it; a wait that naps uses 3-10%, 20% under valgrind). */
#define LATE_S 0.5
static void late_peer_case(int how)
{
    static const char *const name[] = {"MPI_Wait", "MPI_Waitany", "MPI_Waitsome",
                                       "MPI_Waitall"};
    int x = t_rank + 1, y = 0, idx, n;
    MPI_Request q;
    MPI_Status st[1];
    MPI_Barrier(MPI_COMM_WORLD);
    bool late = t_rank == t_size - 1;
    if (late)
        usleep((useconds_t)(LATE_S * 1e6));
    double c0 = cpu_s(), w0 = MPI_Wtime();
    MPI_Iallreduce(&x, &y, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &q);
    switch (how) {
    case 0: MPI_Wait(&q, MPI_STATUS_IGNORE); break;
    case 1: MPI_Waitany(1, &q, &idx, MPI_STATUS_IGNORE); break;
    case 2: MPI_Waitsome(1, &q, &n, &idx, st); break;
    default: MPI_Waitall(1, &q, st); break;
    }
    double cpu = cpu_s() - c0, wall = MPI_Wtime() - w0;
    t_cases++;
    if (y != t_size * (t_size + 1) / 2)
        t_fail("%s on MPI_Iallreduce with a late member: %d, expected %d", name[how], y,
               t_size * (t_size + 1) / 2);
    else if (!late && wall > LATE_S / 2 && cpu > wall / 2)
        t_fail("%s on MPI_Iallreduce, waiting %.2f s for a late member, used %.2f s of CPU "
               "(rank %d)", name[how], wall, cpu, t_rank);
}

START_TEST(test_mpi_progress)
{
    MPI_Op left;
    MPI_Op_create(keep_left, 0, &left);
    MPI_Datatype int3;
    MPI_Type_contiguous(3, MPI_INT, &int3);
    MPI_Type_commit(&int3);
    for (int which = 0; which < OURS_COUNT; which++) {
        p2p_case(which);
        t_agree("MPI_Isend in flight across a collective of libdpcoll's");
        nbc_case(which, left, int3);
        t_agree("the MPI library's nonblocking collective in flight across one of libdpcoll's");
    }
    MPI_Op_free(&left);
    MPI_Type_free(&int3);
    for (int how = 0; how < 4; how++) {
        late_peer_case(how);
        t_agree("waits for a nonblocking collective of libdpcoll's with a late member");
    }
}
END_TEST

void add_mpi_progress_test(TCase *tc)
{
    tcase_add_test(tc, test_mpi_progress);
}
