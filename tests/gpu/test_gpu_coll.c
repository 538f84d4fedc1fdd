/*
 * Device buffers through every intercepted collective: each result, computed
 * by libdpcoll on cudaMalloc'd memory (with host memory on some ranks: the
 * mix must work too), is copied back and compared bit for bit with the MPI
 * library's own result (PMPI_*) on host copies of the same data. Integer-
 * valued data, so the sums are exact in any order.
 *
 * Without a usable GPU it prints one line saying why and exits 77 (skip).
 *
 * Built with -DFAKE_DEVICE it runs the same cases on the fake device of
 * fake_device_plugin.c (memory the host cannot touch), on any machine.
 */
#include "config.h"
#include <mpi.h>
#include "dpcoll.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, cases, failures;

#ifdef FAKE_DEVICE
void *fake_dev_alloc(size_t n);
void fake_dev_copy(void *dst, const void *src, size_t n);
unsigned long fake_dev_copies(void);
unsigned long fake_dev_reduces(void);
unsigned long fake_dev_host_allocs(void);
unsigned long fake_dev_ipc_opens(void);
unsigned long fake_dev_ipc_gets(void);
int fake_dev_ipc_mapped(void);
void fake_dev_fail_next_reduce(void);
int fake_dev_streams(void);
#define cudaSuccess 0
#define cudaMemcpyHostToDevice 0
#define cudaMemcpyDeviceToHost 0
static int cudaMalloc(void **p, size_t n) { *p = fake_dev_alloc(n); return 0; }
static void cudaFree(void *p) { (void)p; }
static void cudaMemcpy(void *d, const void *s, size_t n, int k) { (void)k; fake_dev_copy(d, s, n); }
#else
#include <cuda_runtime_api.h>
/* (counted on the fake device only) */
static unsigned long fake_dev_copies(void) { return 0; }
static unsigned long fake_dev_reduces(void) { return 0; }
static unsigned long fake_dev_ipc_gets(void) { return 0; }
#endif

static void *dmalloc(size_t n)
{
    void *p = NULL;
    if (cudaMalloc(&p, n ? n : 1) != cudaSuccess) {
        fprintf(stderr, "rank %d: cudaMalloc(%zu) failed\n", rank, n);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

/* a buffer on the device or on the host, by mode: 0 all host, 1 all device,
 * 2 device on even ranks only */
static int on_device(int mode) { return mode == 1 || (mode == 2 && rank % 2 == 0); }
static void *buf_alloc(int mode, size_t n) { return on_device(mode) ? dmalloc(n) : calloc(1, n ? n : 1); }
static void buf_free(int mode, void *p) { if (on_device(mode)) cudaFree(p); else free(p); }
static void put(int mode, void *dst, const void *src, size_t n)
{
    if (on_device(mode)) cudaMemcpy(dst, src, n, cudaMemcpyHostToDevice); else memcpy(dst, src, n);
}
static void get(int mode, void *dst, const void *src, size_t n)
{
    if (on_device(mode)) cudaMemcpy(dst, src, n, cudaMemcpyDeviceToHost); else memcpy(dst, src, n);
}

static void check(const char *what, int mode, long n, const void *got, const void *want, size_t bytes)
{
    int bad = memcmp(got, want, bytes) != 0, any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD);
    cases++;
    if (any) {
        failures++;
        if (rank == 0)
            printf("FAILED: %s, buffers %s, count %ld\n", what,
                   mode == 1 ? "on the device" : mode == 2 ? "mixed" : "on the host", n);
    }
}

#ifdef FAKE_DEVICE
/* Will a blocking call of this many bytes go device to device through CUDA
 * IPC (every rank's buffers on the device, DPCOLL_IPC on, from
 * DPCOLL_IPC_MIN bytes)? Its reductions too need DPCOLL_DEVICE_REDUCE, and
 * all ranks on one GPU (DPCOLL_FAKE_GPUS spreads them over several) or on
 * GPUs with peer access to each other (DPCOLL_FAKE_P2P=1). */
static int ipc_expected(int mode, size_t bytes, int reduces)
{
    const char *v = getenv("DPCOLL_IPC"), *m = getenv("DPCOLL_IPC_MIN"),
               *dr = getenv("DPCOLL_DEVICE_REDUCE"), *g = getenv("DPCOLL_FAKE_GPUS"),
               *p2p = getenv("DPCOLL_FAKE_P2P");
    size_t min = m ? strtoull(m, NULL, 10) : 65536;
    int reach = !g || atoi(g) <= 1 || size == 1 || (p2p && !strcmp(p2p, "1"));
    return mode == 1 && size > 1 && !(v && !strcmp(v, "0")) && bytes >= min && bytes > 0 &&
           !(reduces && ((dr && !strcmp(dr, "0")) || !reach));
}

#else
/* (which path a real GPU takes depends on its topology: not checked) */
static int ipc_expected(int mode, size_t bytes, int reduces)
{
    (void)mode; (void)bytes; (void)reduces;
    return 0;
}
#endif
#ifdef FAKE_DEVICE
/* Elements [lo, hi) of n that rank k reduces in the IPC allreduce. */
static long ipc_slice(long n, int k)
{
    return n / size + (k < n % size);
}
#endif

static void fill(int *h, long n, int salt)
{
    for (long i = 0; i < n; i++)
        h[i] = rank * 1000 + salt * 7 + (int)(i % 977);
}

static void run(int mode, long n)
{
    size_t b = sizeof(int) * (size_t)n, bp = b * (size_t)size;
    size_t bpx = bp + sizeof(int) * 2 * (size_t)size;   /* room for allgatherv's gaps */
    int *hin = malloc(bpx), *hout = malloc(bpx), *ref = malloc(bpx);
    void *din = buf_alloc(mode, bpx), *dout = buf_alloc(mode, bpx);
    MPI_Request r;
    /* allreduce, out of place, in place, nonblocking */
    fill(hin, n, 1);
    put(mode, din, hin, b);
#ifdef FAKE_DEVICE
    unsigned long before = fake_dev_copies(), rbefore = fake_dev_reduces();
#endif
    MPI_Allreduce(din, dout, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
#ifdef FAKE_DEVICE
    /* and its reductions on the device (p-1 kernels per chunk: the owner
     * algorithm), unless DPCOLL_DEVICE_REDUCE=0 keeps them on the host */
    const char *dr = getenv("DPCOLL_DEVICE_REDUCE");
    int dev_red = !(dr && !strcmp(dr, "0"));
    unsigned long red = fake_dev_reduces() - rbefore, want_red = 0;
    for (long e0 = 0, ce = (1 << 20) / sizeof(int); e0 < n; e0 += ce) {
        long cnt = n - e0 < ce ? n - e0 : ce;   /* a chunk; this rank's block of it: */
        if (cnt / size + (rank < cnt % size) > 0)
            want_red += (unsigned long)(size - 1);
    }
    if (ipc_expected(mode, b, 1)) {
        /* device to device: this rank reduces its slice from the p-1
         * peers' inputs (one kernel each), then copies the others' slices */
        unsigned long cp = fake_dev_copies() - before, want_cp = 0;
        for (int k = 0; k < size; k++)
            want_cp += k != rank && ipc_slice(n, k) > 0;
        want_red = ipc_slice(n, rank) > 0 ? (unsigned long)(size - 1) : 0;
        cases++;
        if (red != want_red || cp != want_cp) {
            failures++;
            printf("FAILED: rank %d: allreduce through CUDA IPC of %zu bytes made %lu device "
                   "reductions (want %lu) and %lu copies (want %lu)\n", rank, b, red, want_red,
                   cp, want_cp);
        }
    } else if (on_device(mode) && b >= (2u << 20) && size > 1 &&
               (dev_red ? red != want_red : red != 0)) {
        failures++;
        printf("FAILED: rank %d: allreduce of %zu bytes made %lu device reductions (%s)\n", rank,
               b, red, dev_red ? "want one per peer and chunk" : "DPCOLL_DEVICE_REDUCE=0: want none");
    }
    /* 2 MiB and more on the device: a pipeline of 1 MiB chunks, each copied
     * in and out on its own (whole staging would make 3 copies) */
    unsigned long made = fake_dev_copies() - before, want = 2 * ((b + (1u << 20) - 1) >> 20);
    if (!ipc_expected(mode, b, 1) && on_device(mode) && b >= (2u << 20) && made < want) {
        failures++;
        printf("FAILED: rank %d: allreduce of %zu bytes made %lu device copies, a pipeline %lu\n",
               rank, b, made, want);
    }
#endif
    get(mode, hout, dout, b);
    PMPI_Allreduce(hin, ref, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check("allreduce", mode, n, hout, ref, b);
    put(mode, dout, hin, b);
    MPI_Allreduce(MPI_IN_PLACE, dout, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    get(mode, hout, dout, b);
    check("allreduce in place", mode, n, hout, ref, b);
    if (b >= (2u << 20)) {
        /* persistent, started twice with new data (a pipeline: its copies
         * are steps of every start's schedule) */
        MPI_Request pr;
        MPI_Allreduce_init(din, dout, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, MPI_INFO_NULL, &pr);
        for (int round = 0; round < 2; round++) {
            fill(hin, n, 10 + round);
            put(mode, din, hin, b);
            MPI_Start(&pr);
            MPI_Wait(&pr, MPI_STATUS_IGNORE);
            get(mode, hout, dout, b);
            PMPI_Allreduce(hin, ref, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            check("persistent allreduce", mode, n, hout, ref, b);
        }
        MPI_Request_free(&pr);
        fill(hin, n, 1);
        put(mode, din, hin, b);
    }
    MPI_Iallreduce(din, dout, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    get(mode, hout, dout, b);
    PMPI_Allreduce(hin, ref, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    check("iallreduce max", mode, n, hout, ref, b);
    /* reduce_scatter_block */
    fill(hin, n * size, 2);
    put(mode, din, hin, bp);
#ifdef FAKE_DEVICE
    rbefore = fake_dev_reduces();
    before = fake_dev_copies();
#endif
    MPI_Reduce_scatter_block(din, dout, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
#ifdef FAKE_DEVICE
    /* 2 MiB and more in all: chunks of 1 MiB of each block, each rank's
     * slices reduced on its device (p-1 kernels a chunk), nothing copied
     * back (only the p-1 slices for the peers go to the host) */
    if (ipc_expected(mode, bp, 1)) {
        /* device to device: this rank's block reduced from the p-1 peers'
         * inputs, one kernel each, nothing copied */
        unsigned long rs_red = fake_dev_reduces() - rbefore, cp = fake_dev_copies() - before;
        unsigned long want_rs = n > 0 ? (unsigned long)(size - 1) : 0;
        cases++;
        if (rs_red != want_rs || cp != 0) {
            failures++;
            printf("FAILED: rank %d: reduce_scatter_block through CUDA IPC of %zu bytes made %lu "
                   "device reductions (want %lu) and %lu copies (want 0)\n", rank, bp, rs_red,
                   want_rs, cp);
        }
    } else if (on_device(mode) && bp >= (2u << 20) && size > 1) {
        unsigned long chunks = (b + (1u << 20) - 1) >> 20;
        unsigned long want_rs = dev_red ? chunks * (unsigned long)(size - 1) : 0;
        unsigned long rs_red = fake_dev_reduces() - rbefore, cp = fake_dev_copies() - before;
        if (rs_red != want_rs || (dev_red && cp != want_rs)) {
            failures++;
            printf("FAILED: rank %d: reduce_scatter_block of %zu bytes made %lu device "
                   "reductions (want %lu) and %lu copies\n", rank, bp, rs_red, want_rs, cp);
        }
    }
#endif
    get(mode, hout, dout, b);
    PMPI_Reduce_scatter_block(hin, ref, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check("reduce_scatter_block", mode, n, hout, ref, b);
    /* reduce_scatter: rank i's block has n - i elements (at least 0) */
    {
        int *rc = malloc(sizeof(int) * size);
        long tot = 0;
        for (int i = 0; i < size; i++)
            tot += rc[i] = (int)(n > i ? n - i : 0);
        (void)tot;
#ifdef FAKE_DEVICE
        rbefore = fake_dev_reduces();
        before = fake_dev_copies();
#endif
        MPI_Reduce_scatter(din, dout, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
#ifdef FAKE_DEVICE
        /* unequal blocks, 2 MiB and more in all: the same chunks (1 MiB of
         * each block, as far as it goes), the own block's slices reduced
         * on the device, one copy to the host per peer's slice */
        if (on_device(mode) && (size_t)tot * sizeof(int) >= (2u << 20) && size > 1) {
            unsigned long want_rs = 0, want_cp = 0;
            for (int j = 0; j < size; j++) {
                unsigned long ch = ((unsigned long)rc[j] * sizeof(int) + (1u << 20) - 1) >> 20;
                if (j == rank)
                    want_rs = dev_red ? ch * (unsigned long)(size - 1) : 0;
                else
                    want_cp += ch;
            }
            unsigned long rs_red = fake_dev_reduces() - rbefore, cp = fake_dev_copies() - before;
            if (rs_red != want_rs || (dev_red && cp != want_cp)) {
                failures++;
                printf("FAILED: rank %d: reduce_scatter of %ld bytes made %lu device "
                       "reductions (want %lu) and %lu copies (want %lu)\n", rank,
                       tot * (long)sizeof(int), rs_red, want_rs, cp, want_cp);
            }
        }
#endif
        get(mode, hout, dout, sizeof(int) * (size_t)rc[rank]);
        PMPI_Reduce_scatter(hin, ref, rc, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        check("reduce_scatter", mode, n, hout, ref, sizeof(int) * (size_t)rc[rank]);
        free(rc);
    }
    /* allgather, bcast, alltoall */
    fill(hin, n, 3);
    put(mode, din, hin, b);
#ifdef FAKE_DEVICE
    before = fake_dev_copies();
#endif
    MPI_Allgather(din, (int)n, MPI_INT, dout, (int)n, MPI_INT, MPI_COMM_WORLD);
#ifdef FAKE_DEVICE
    /* device to device: p copies (the p-1 peers' blocks pulled, the own
     * one moved); else staged: the call writes all of its output, so it is
     * copied out, never in */
    if (ipc_expected(mode, bp, 0)) {
        cases++;
        if (fake_dev_copies() - before != (unsigned long)size) {
            failures++;
            printf("FAILED: rank %d: allgather through CUDA IPC of %zu bytes made %lu device "
                   "copies, want %d\n", rank, bp, fake_dev_copies() - before, size);
        }
    } else if (on_device(mode) && n > 0 && fake_dev_copies() - before != 2) {
        failures++;
        printf("FAILED: rank %d: allgather of %zu bytes made %lu device copies, want 2 (the input "
               "in, the output out)\n", rank, bp, fake_dev_copies() - before);
    }
#endif
    get(mode, hout, dout, bp);
    PMPI_Allgather(hin, (int)n, MPI_INT, ref, (int)n, MPI_INT, MPI_COMM_WORLD);
    check("allgather", mode, n, hout, ref, bp);
    fill(hin, n, 4);
    put(mode, dout, hin, b);
    MPI_Bcast(dout, (int)n, MPI_INT, size - 1, MPI_COMM_WORLD);
    get(mode, hout, dout, b);
    memcpy(ref, hin, b);
    PMPI_Bcast(ref, (int)n, MPI_INT, size - 1, MPI_COMM_WORLD);
    check("bcast", mode, n, hout, ref, b);
    fill(hin, n * size, 5);
    put(mode, din, hin, bp);
    MPI_Ialltoall(din, (int)n, MPI_INT, dout, (int)n, MPI_INT, MPI_COMM_WORLD, &r);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    get(mode, hout, dout, bp);
    PMPI_Alltoall(hin, (int)n, MPI_INT, ref, (int)n, MPI_INT, MPI_COMM_WORLD);
    check("ialltoall", mode, n, hout, ref, bp);
    /* blocking alltoall (device to device through CUDA IPC when all ranks'
     * buffers are on the device), and allgather in place */
    fill(hin, n * size, 6);
    put(mode, din, hin, bp);
    MPI_Alltoall(din, (int)n, MPI_INT, dout, (int)n, MPI_INT, MPI_COMM_WORLD);
    get(mode, hout, dout, bp);
    PMPI_Alltoall(hin, (int)n, MPI_INT, ref, (int)n, MPI_INT, MPI_COMM_WORLD);
    check("alltoall", mode, n, hout, ref, bp);
    for (long i = 0; i < n * size; i++)
        hout[i] = i / (n ? n : 1) == rank ? (int)(rank * 31 + i % 7) : -1;
    memcpy(ref, hout, bp);
    put(mode, dout, hout, bp);
    MPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, dout, (int)n, MPI_INT, MPI_COMM_WORLD);
    get(mode, hout, dout, bp);
    PMPI_Allgather(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, ref, (int)n, MPI_INT, MPI_COMM_WORLD);
    check("allgather in place", mode, n, hout, ref, bp);
    /* v-variants: rank i's block has n - i elements (at least 0); allgatherv
     * leaves two elements between blocks, which must come back unchanged
     * (the receive side is copied in first: the call does not write it all) */
    int *cnt = malloc(sizeof(int) * size), *dis = malloc(sizeof(int) * size);
    for (int i = 0, at = 0; i < size; i++) {
        cnt[i] = (int)(n > i ? n - i : 0);
        dis[i] = at;
        at += cnt[i] + 2;
    }
    for (size_t i = 0; i < bpx / sizeof(int); i++)
        hout[i] = ref[i] = -7 - (int)(i % 5);
    put(mode, dout, hout, bpx);
    MPI_Allgatherv(din, cnt[rank], MPI_INT, dout, cnt, dis, MPI_INT, MPI_COMM_WORLD);
    get(mode, hout, dout, bpx);
    PMPI_Allgatherv(hin, cnt[rank], MPI_INT, ref, cnt, dis, MPI_INT, MPI_COMM_WORLD);
    check("allgatherv (gaps between blocks)", mode, n, hout, ref, bpx);
    for (int i = 0, at = 0; i < size; i++) {
        dis[i] = at;
        at += cnt[i];
    }
    /* alltoallv: ranks i and j exchange n - (i + j) % 3 elements (at least 0) */
    for (int j = 0, at = 0; j < size; j++) {
        long c = n - (rank + j) % 3;
        cnt[j] = (int)(c > 0 ? c : 0);
        dis[j] = at;
        at += cnt[j];
    }
    MPI_Alltoallv(din, cnt, dis, MPI_INT, dout, cnt, dis, MPI_INT, MPI_COMM_WORLD);
    get(mode, hout, dout, bp);
    PMPI_Alltoallv(hin, cnt, dis, MPI_INT, ref, cnt, dis, MPI_INT, MPI_COMM_WORLD);
    check("alltoallv", mode, n, hout, ref, bp);
    free(cnt);
    free(dis);
    /* persistent forms of the others: each start reads the device buffers
     * anew, each end writes the result back (two starts, new data) */
    MPI_Request pr[4];
    MPI_Bcast_init(dout, (int)n, MPI_INT, 0, MPI_COMM_WORLD, MPI_INFO_NULL, &pr[0]);
    MPI_Allgather_init(din, (int)n, MPI_INT, dout, (int)n, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                       &pr[1]);
    MPI_Alltoall_init(din, (int)n, MPI_INT, dout, (int)n, MPI_INT, MPI_COMM_WORLD, MPI_INFO_NULL,
                      &pr[2]);
    MPI_Reduce_scatter_block_init(din, dout, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD,
                                  MPI_INFO_NULL, &pr[3]);
    static const char *const pname[4] = {"persistent bcast", "persistent allgather",
                                         "persistent alltoall", "persistent reduce_scatter_block"};
    for (int round = 0; round < 2; round++)
        for (int k = 0; k < 4; k++) {
            fill(hin, n * size, 20 + round * 4 + k);
            put(mode, k == 0 ? dout : din, hin, k == 1 ? b : bp);
            MPI_Start(&pr[k]);
            MPI_Wait(&pr[k], MPI_STATUS_IGNORE);
            size_t got = k == 0 || k == 3 ? b : bp;
            get(mode, hout, dout, got);
            if (k == 0) {
                memcpy(ref, hin, b);
                PMPI_Bcast(ref, (int)n, MPI_INT, 0, MPI_COMM_WORLD);
            } else if (k == 1) {
                PMPI_Allgather(hin, (int)n, MPI_INT, ref, (int)n, MPI_INT, MPI_COMM_WORLD);
            } else if (k == 2) {
                PMPI_Alltoall(hin, (int)n, MPI_INT, ref, (int)n, MPI_INT, MPI_COMM_WORLD);
            } else {
                PMPI_Reduce_scatter_block(hin, ref, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            }
            check(pname[k], mode, n, hout, ref, got);
        }
    for (int k = 0; k < 4; k++)
        MPI_Request_free(&pr[k]);
    buf_free(mode, din);
    buf_free(mode, dout);
    free(hin);
    free(hout);
    free(ref);
}

/* Nonblocking and persistent calls through CUDA IPC (ipc_nb.c), n ints a
 * rank (4 MiB and more: from DPC_IPC_NB_MIN), all buffers on the device.
 * On the fake device the copies and kernels are counted too. */
static void nb_ipc_cases(long n)
{
    size_t b = sizeof(int) * (size_t)n, bp = b * (size_t)size;
    int *h = malloc(bp), *out = malloc(bp), *ref = malloc(bp);
    void *din = dmalloc(bp), *dout = dmalloc(bp);
    int red_ipc = ipc_expected(1, b, 1), move_ipc = ipc_expected(1, bp, 0);
    MPI_Request r;
    /* the call returns before its peers come: rank 0 starts an allreduce,
     * then sends rank 1 the message it waits for before its own start (a
     * call that waited for its peers' handshake would never get there) */
    fill(h, n, 80);
    put(1, din, h, b);
    unsigned long c0 = fake_dev_copies(), r0 = fake_dev_reduces();
    int token = 0;
    if (rank == 1)
        MPI_Recv(&token, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Iallreduce(din, dout, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD, &r);
    if (rank == 0 && size > 1)
        MPI_Send(&token, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
    MPI_Wait(&r, MPI_STATUS_IGNORE);
    unsigned long cp = fake_dev_copies() - c0, red = fake_dev_reduces() - r0;
    get(1, out, dout, b);
    PMPI_Allreduce(h, ref, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    check("iallreduce through CUDA IPC, a peer late", 1, n, out, ref, b);
    if (red_ipc) {
        /* device to device: this rank's slice from p-1 kernels, the p-1
         * others' slices copied (nothing staged, no pipeline) */
        cases++;
        if (red != (unsigned long)(size - 1) || cp != (unsigned long)(size - 1)) {
            failures++;
            printf("FAILED: rank %d: iallreduce through CUDA IPC of %zu bytes made %lu device "
                   "reductions and %lu copies (want %d of each)\n", rank, b, red, cp, size - 1);
        }
    }
    /* persistent, three starts with new data, in place: the first asks
     * for its buffer's handle (once: in place, input and output are one)
     * and maps the peers'; the others keep them (bound to the request) */
    MPI_Request pr;
    MPI_Allreduce_init(MPI_IN_PLACE, dout, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &pr);
    for (int round = 0; round < 3; round++) {
        fill(h, n, 81 + round);
        put(1, dout, h, b);
        r0 = fake_dev_reduces();
        unsigned long g0 = fake_dev_ipc_gets();
        MPI_Start(&pr);
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        red = fake_dev_reduces() - r0;
        unsigned long gets = fake_dev_ipc_gets() - g0;
        cases++;
        if (red_ipc && gets != (round ? 0ul : 1ul)) {
            failures++;
            printf("FAILED: rank %d: start %d of a persistent allreduce through CUDA IPC asked "
                   "for %lu IPC handles (want %lu)\n", rank, round, gets, round ? 0ul : 1ul);
        }
        get(1, out, dout, b);
        PMPI_Allreduce(h, ref, (int)n, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        check("persistent allreduce in place through CUDA IPC", 1, n, out, ref, b);
        cases++;
        if (red_ipc && red != (unsigned long)(size - 1)) {
            failures++;
            printf("FAILED: rank %d: start %d of a persistent allreduce through CUDA IPC made "
                   "%lu device reductions (want %d)\n", rank, round, red, size - 1);
        }
    }
    MPI_Request_free(&pr);
    /* allgather, bcast, alltoall: device copies only, p, 1 (0 at the
     * root), p: a staged call would copy to the host and back as well */
    for (int k = 0; k < 3; k++) {
        fill(h, k == 2 ? n * size : n, 84 + k);
        put(1, k == 1 ? dout : din, h, k == 2 ? bp : b);
        c0 = fake_dev_copies();
        if (k == 0)
            MPI_Iallgather(din, (int)n, MPI_INT, dout, (int)n, MPI_INT, MPI_COMM_WORLD, &r);
        else if (k == 1)
            MPI_Ibcast(dout, (int)n, MPI_INT, 1, MPI_COMM_WORLD, &r);
        else
            MPI_Ialltoall(din, (int)n, MPI_INT, dout, (int)n, MPI_INT, MPI_COMM_WORLD, &r);
        MPI_Wait(&r, MPI_STATUS_IGNORE);
        cp = fake_dev_copies() - c0;
        size_t got = k == 1 ? b : bp;
        get(1, out, dout, got);
        if (k == 0)
            PMPI_Allgather(h, (int)n, MPI_INT, ref, (int)n, MPI_INT, MPI_COMM_WORLD);
        else if (k == 1) {
            memcpy(ref, h, b);
            PMPI_Bcast(ref, (int)n, MPI_INT, 1, MPI_COMM_WORLD);
        } else
            PMPI_Alltoall(h, (int)n, MPI_INT, ref, (int)n, MPI_INT, MPI_COMM_WORLD);
        static const char *const what[3] = {"iallgather through CUDA IPC",
                                            "ibcast through CUDA IPC", "ialltoall through CUDA IPC"};
        check(what[k], 1, n, out, ref, got);
        unsigned long want = k == 1 ? (rank == 1 ? 0ul : 1ul) : (unsigned long)size;
        cases++;
        if ((k == 1 ? ipc_expected(1, b, 0) : move_ipc) && cp != want) {
            failures++;
            printf("FAILED: rank %d: %s made %lu device copies (want %lu)\n", rank, what[k], cp,
                   want);
        }
    }
    cudaFree(din);
    cudaFree(dout);
    free(h);
    free(out);
    free(ref);
}

/* A type with holes (an int, then an int's gap) cannot go device to
 * device: nonblocking and persistent calls of 2 MiB and more try, fall
 * back, and their jobs pack the staged host copies at the start, which
 * must hold the device data by then (mode as buf_alloc). */
static void nb_holes_case(int mode, long n)
{
    MPI_Datatype holes;
    MPI_Type_create_resized(MPI_INT, 0, 2 * sizeof(int), &holes);
    MPI_Type_commit(&holes);
    size_t bp = 2 * sizeof(int) * (size_t)n * (size_t)size;
    int *h = malloc(bp), *out = malloc(bp), *ref = malloc(bp);
    void *din = buf_alloc(mode, bp), *dout = buf_alloc(mode, bp);
    MPI_Request r;
    for (int k = 0; k < 3; k++) {
        fill(h, (long)(bp / sizeof(int)), 95 + k);
        put(mode, din, h, bp);
        memset(out, 0x5a, bp);   /* (the gaps must stay as they are) */
        memcpy(ref, out, bp);
        put(mode, dout, out, bp);
        if (k == 0)
            MPI_Ialltoall(din, (int)n, holes, dout, (int)n, holes, MPI_COMM_WORLD, &r);
        else if (k == 1)
            MPI_Iallgather(din, (int)n, holes, dout, (int)n, holes, MPI_COMM_WORLD, &r);
        else
            MPI_Alltoall_init(din, (int)n, holes, dout, (int)n, holes, MPI_COMM_WORLD,
                              MPI_INFO_NULL, &r);
        for (int start = 0; start < (k == 2 ? 2 : 1); start++) {
            if (start) {   /* new data for the second start */
                fill(h, (long)(bp / sizeof(int)), 98);
                put(mode, din, h, bp);
            }
            if (k == 2)
                MPI_Start(&r);
            MPI_Wait(&r, MPI_STATUS_IGNORE);
            get(mode, out, dout, bp);
            if (k == 1)
                PMPI_Allgather(h, (int)n, holes, ref, (int)n, holes, MPI_COMM_WORLD);
            else
                PMPI_Alltoall(h, (int)n, holes, ref, (int)n, holes, MPI_COMM_WORLD);
            static const char *const what[3] = {"ialltoall of a type with holes",
                                                "iallgather of a type with holes",
                                                "persistent alltoall of a type with holes"};
            check(what[k], mode, n, out, ref, bp);
        }
        if (k == 2)
            MPI_Request_free(&r);
    }
    buf_free(mode, din);
    buf_free(mode, dout);
    free(h);
    free(out);
    free(ref);
    MPI_Type_free(&holes);
}

/* Staged calls whose blocks start after the buffer's address (the first
 * displacement 3): the host copy starts at the blocks' span, so the
 * pointer the call runs on lies before it. On the fake device the memory
 * just before a pinned block is device memory the host cannot touch. The
 * call on the copies must neither take it for a device buffer (it staged
 * its host copy again, and its result never reached the device) nor read
 * there (the in-place alltoallv copied its buffer from the start). Both
 * forms; n ints a block (small: staged, not CUDA IPC). */
static void staged_offset_case(int mode, int n)
{
    int cnt[64], dis[64], at = 3;
    for (int k = 0; k < size; k++) {
        cnt[k] = n + k;
        dis[k] = at;
        at += cnt[k] + 1;
    }
    /* the in-place alltoallv's blocks: what a sends b, b sends a
     * (n + (a + b) % 3), with a gap after each; at 2 ranks they can span
     * more than the allgatherv's, so the buffers hold the larger span */
    int c2[64], d2[64], a2 = 3;
    for (int q = 0; q < size; q++) {
        c2[q] = n + (q + rank) % 3;
        d2[q] = a2;
        a2 += c2[q] + 1;
    }
    if (a2 > at)
        at = a2;
    size_t bytes = sizeof(int) * (size_t)at;
    int *h = malloc(bytes), *out = malloc(bytes), *ref = malloc(bytes);
    void *d = buf_alloc(mode, bytes), *din = buf_alloc(mode, bytes);
    for (int nb = 0; nb < 2; nb++)
        for (int k = 0; k < 2; k++) {
            MPI_Request r = MPI_REQUEST_NULL;
            for (int i = 0; i < at; i++)
                h[i] = rank * 1000 + i + 7 * k + 3 * nb;
            put(mode, d, h, bytes);
            memcpy(ref, h, bytes);
            if (k == 0) {   /* in place, blocks c2 at d2 */
                if (nb)
                    MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, d, c2, d2, MPI_INT,
                                   MPI_COMM_WORLD, &r);
                else
                    MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, d, c2, d2, MPI_INT,
                                  MPI_COMM_WORLD);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
                PMPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, ref, c2, d2, MPI_INT,
                               MPI_COMM_WORLD);
            } else {
                put(mode, din, h + dis[rank], sizeof(int) * (size_t)cnt[rank]);
                if (nb)
                    MPI_Iallgatherv(din, cnt[rank], MPI_INT, d, cnt, dis, MPI_INT, MPI_COMM_WORLD,
                                    &r);
                else
                    MPI_Allgatherv(din, cnt[rank], MPI_INT, d, cnt, dis, MPI_INT, MPI_COMM_WORLD);
                MPI_Wait(&r, MPI_STATUS_IGNORE);
                PMPI_Allgatherv(h + dis[rank], cnt[rank], MPI_INT, ref, cnt, dis, MPI_INT,
                                MPI_COMM_WORLD);
            }
            get(mode, out, d, bytes);
            static const char *const what[2][2] = {
                {"alltoallv in place, first block at 3", "allgatherv, first block at 3"},
                {"ialltoallv in place, first block at 3", "iallgatherv, first block at 3"}};
            check(what[nb][k], mode, n, out, ref, bytes);
        }
    buf_free(mode, d);
    buf_free(mode, din);
    free(h);
    free(out);
    free(ref);
}

#ifdef FAKE_DEVICE
/* A persistent allgather that cannot go device to device (device buffers
 * on even ranks, host on odd ones), started 7 times: it tries at start 0,
 * then skips 1, 2, 4 ... starts after each fallback (alike on every rank),
 * so it tries at starts 0, 2 and 5. Each try asks for the two buffers'
 * handles on a device rank. Every result right. */
static void persistent_backoff_case(long n)
{
    size_t b = sizeof(int) * (size_t)n, bp = b * (size_t)size;
    int *h = malloc(bp), *out = malloc(bp), *ref = malloc(bp);
    void *din = buf_alloc(2, b), *dout = buf_alloc(2, bp);
    MPI_Request pr;
    MPI_Allgather_init(din, (int)n, MPI_INT, dout, (int)n, MPI_INT, MPI_COMM_WORLD,
                       MPI_INFO_NULL, &pr);
    unsigned long g0 = fake_dev_ipc_gets();
    for (int round = 0; round < 7; round++) {
        fill(h, n, 90 + round);
        put(2, din, h, b);
        MPI_Start(&pr);
        MPI_Wait(&pr, MPI_STATUS_IGNORE);
        get(2, out, dout, bp);
        PMPI_Allgather(h, (int)n, MPI_INT, ref, (int)n, MPI_INT, MPI_COMM_WORLD);
        check("persistent allgather, device buffers on even ranks only", 2, n, out, ref, bp);
    }
    MPI_Request_free(&pr);
    unsigned long gets = fake_dev_ipc_gets() - g0,
                  want = on_device(2) && ipc_expected(1, b, 0) ? 3ul * 2 : 0;
    cases++;
    if (gets != want) {
        failures++;
        printf("FAILED: rank %d: 7 starts of a persistent allgather that falls back asked for "
               "%lu IPC handles (want %lu: tries at starts 0, 2 and 5)\n", rank, gets, want);
    }
    buf_free(2, din);
    buf_free(2, dout);
    free(h);
    free(out);
    free(ref);
}

/* One allgather of n ints a rank on new buffers (mode as buf_alloc), salt
 * in the data; 1 when the result differs from its closed form. h, r: host
 * room for n * size ints. */
static int allgather_wrong(MPI_Comm comm, int mode, long n, int salt, int *h, int *r)
{
    void *d_in = buf_alloc(mode, sizeof(int) * (size_t)n),
         *d_out = buf_alloc(mode, sizeof(int) * (size_t)n * size);
    fill(h, n, salt);
    put(mode, d_in, h, sizeof(int) * (size_t)n);
    MPI_Allgather(d_in, (int)n, MPI_INT, d_out, (int)n, MPI_INT, comm);
    get(mode, r, d_out, sizeof(int) * (size_t)n * size);
    int bad = 0;
    for (int k = 0; k < size && !bad; k++)
        for (long i = 0; i < n && !bad; i++)
            bad = r[k * n + i] != k * 1000 + salt * 7 + (int)(i % 977);
    buf_free(mode, d_in);
    buf_free(mode, d_out);
    return bad;
}

/* Run with DPCOLL_TIMEOUT=2: rank 0 skips a device allreduce that goes
 * through CUDA IPC; the others, held in its handshakes, give up within the
 * timeout with an error naming the call and rank 0 (MPICH's own
 * collectives there would wait forever). */
static void ipc_timeout_case(void)
{
    long n = 1 << 16;
    void *d = dmalloc(sizeof(int) * (size_t)n), *o = dmalloc(sizeof(int) * (size_t)n);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_name(c, "ipc-skipped");
    int one = 1, all = 0;   /* a first call everybody makes (sets the communicator up) */
    MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, c);
    cases++;
    if (rank != 0) {
        double t0 = MPI_Wtime();
        int e = MPI_Allreduce(d, o, (int)n, MPI_INT, MPI_SUM, c), cls = -1;
        double waited = MPI_Wtime() - t0;
        MPI_Error_class(e, &cls);
        const char *msg = dpcoll_error_message();
        if (cls != MPI_ERR_OTHER || waited > 30 || !strstr(msg, "MPI_Allreduce") ||
            !strstr(msg, "ipc-skipped") || !strstr(msg, "waiting for rank") ||
            (rank == 1 && !strstr(msg, " 0"))) {
            failures++;
            printf("FAILED: rank %d: a device allreduce with rank 0 absent returned class %d "
                   "after %.1f s (want MPI_ERR_OTHER within DPCOLL_TIMEOUT): %s\n", rank, cls,
                   waited, msg);
        }
    }
    /* (the communicator's sequence is off now: not used again) */
}

/* Run with DPCOLL_TIMEOUT=2: an Iallreduce through CUDA IPC, rank 0 absent
 * (the others give up within the timeout, naming the call and rank 0), or
 * with `fail`, rank 0's device reduction failing: then every rank's request
 * fails at once, saying where (rank 0: here; the others: on rank 0), none
 * by the timeout. */
static void nb_ipc_timeout_case(int fail)
{
    long n = 1 << 20;
    void *d = dmalloc(sizeof(int) * (size_t)n), *o = dmalloc(sizeof(int) * (size_t)n);
    MPI_Comm c;
    MPI_Comm_dup(MPI_COMM_WORLD, &c);
    MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
    MPI_Comm_set_name(c, fail ? "ipc-failed" : "ipc-skipped");
    int one = 1, all = 0;
    MPI_Allreduce(&one, &all, 1, MPI_INT, MPI_SUM, c);
    cases++;
    if (rank == 0 && fail)
        fake_dev_fail_next_reduce();
    if (rank != 0 || fail) {
        MPI_Request r;
        double t0 = MPI_Wtime();
        int e = MPI_Iallreduce(d, o, (int)n, MPI_INT, MPI_SUM, c, &r), cls = -1;
        /* (a request's error comes back through MPI_COMM_WORLD's handler) */
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        if (e == MPI_SUCCESS)
            e = MPI_Wait(&r, MPI_STATUS_IGNORE);
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_ARE_FATAL);
        double waited = MPI_Wtime() - t0;
        MPI_Error_class(e, &cls);
        const char *msg = dpcoll_error_message();
        int bad = cls != MPI_ERR_OTHER || waited > 30 || !strstr(msg, "MPI_Iallreduce") ||
                  !strstr(msg, fail ? "ipc-failed" : "ipc-skipped");
        if (fail)
            bad |= !strstr(msg, "(allreduce, cuda_ipc)") || strstr(msg, "timed out") ||
                   !strstr(msg, rank == 0 ? "failed here" : "failed on rank 0");
        else
            bad |= !strstr(msg, "waiting for rank") || (rank == 1 && !strstr(msg, " 0"));
        if (bad) {
            failures++;
            printf("FAILED: rank %d: an iallreduce through CUDA IPC, rank 0 %s, returned class %d "
                   "after %.1f s (want MPI_ERR_OTHER within DPCOLL_TIMEOUT): %s\n", rank,
                   fail ? "failing" : "absent", cls, waited, msg);
        }
    }
    /* (the communicator's sequence is off now: not used again) */
}
#endif

/* A program's own op on device buffers: every rank's (mode 1) or the even
 * ranks' (mode 2, the others on the host). Blocking, libdpcoll runs it on
 * host copies; nonblocking, the MPI library does, on host copies where the
 * buffers are on the device: that call must be MPICH's nonblocking one
 * too (its blocking one does not match the host ranks' MPI_I..., and the
 * job hung), waited for before the result goes back. Closed-form sums. */
static void user_isum(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    for (int i = 0; i < *len; i++)
        ((int *)inout)[i] += ((int *)in)[i];
}

static void user_op_case(int mode, long n)
{
    MPI_Op op;
    MPI_Op_create(user_isum, 1, &op);
    size_t b = sizeof(int) * (size_t)n;
    int *h = malloc(b * (size_t)size), *r = malloc(b * (size_t)size);
    void *din = buf_alloc(mode, b * (size_t)size), *dout = buf_alloc(mode, b * (size_t)size);
    for (int nb = 0; nb < 2; nb++) {
        /* allreduce: element i of rank q is q + i, so the sum is p(p-1)/2 + p i */
        for (long i = 0; i < n; i++)
            h[i] = rank + (int)i;
        put(mode, din, h, b);
        MPI_Request q;
        if (nb) {
            MPI_Iallreduce(din, dout, (int)n, MPI_INT, op, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else {
            MPI_Allreduce(din, dout, (int)n, MPI_INT, op, MPI_COMM_WORLD);
        }
        get(mode, r, dout, b);
        for (long i = 0; i < n; i++)
            h[i] = size * (size - 1) / 2 + size * (int)i;
        check(nb ? "MPI_Iallreduce with a user op" : "MPI_Allreduce with a user op", mode, n, r,
              h, b);
        /* reduce-scatter (blocks): element j of rank q's input is q + j;
         * this rank's block is j = rank*n .. */
        for (long j = 0; j < n * size; j++)
            h[j] = rank + (int)j;
        put(mode, din, h, b * (size_t)size);
        if (nb) {
            MPI_Ireduce_scatter_block(din, dout, (int)n, MPI_INT, op, MPI_COMM_WORLD, &q);
            MPI_Wait(&q, MPI_STATUS_IGNORE);
        } else {
            MPI_Reduce_scatter_block(din, dout, (int)n, MPI_INT, op, MPI_COMM_WORLD);
        }
        get(mode, r, dout, b);
        for (long i = 0; i < n; i++)
            h[i] = size * (size - 1) / 2 + size * (int)(rank * n + i);
        check(nb ? "MPI_Ireduce_scatter_block with a user op"
                 : "MPI_Reduce_scatter_block with a user op", mode, n, r, h, b);
    }
    MPI_Op_free(&op);
    buf_free(mode, din);
    buf_free(mode, dout);
    free(h);
    free(r);
}

/* a op b = a on elements of three ints (12 bytes: libdpcoll has no stand-in
 * type of that size, so the MPI library runs it, in rank order): the
 * result is rank 0's contribution */
static void user_keep_left(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    (void)dt;
    memcpy(inout, in, 3 * sizeof(int) * (size_t)*len);
}

/* A nonblocking reduction that goes to the MPI library (a program's op on
 * a 12-byte type), on device buffers, started before a blocking collective of ours on
 * another communicator on the device ranks and after it on the others:
 * legal (the first call does not block), and it hung when the device
 * ranks waited inside MPI_Iallreduce for the library's call on their host
 * copies, which the others had not started yet (stage_nb.c). */
static void nb_library_order_case(int mode, long n)
{
    MPI_Op op;
    MPI_Op_create(user_keep_left, 0, &op);
    MPI_Datatype three_ints;
    MPI_Type_contiguous(3, MPI_INT, &three_ints);
    MPI_Type_commit(&three_ints);
    n -= n % 3;
    MPI_Comm other;
    MPI_Comm_dup(MPI_COMM_WORLD, &other);
    size_t b = sizeof(int) * (size_t)n;
    int *h = malloc(b), *r = malloc(b);
    void *din = buf_alloc(mode, b), *dout = buf_alloc(mode, b);
    for (long i = 0; i < n; i++)
        h[i] = rank * 7 + (int)i;
    put(mode, din, h, b);
    int x = rank + 1, sum = 0;
    MPI_Request q;
    if (on_device(mode)) {
        MPI_Iallreduce(din, dout, (int)n / 3, three_ints, op, MPI_COMM_WORLD, &q);
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, other);
    } else {
        MPI_Allreduce(&x, &sum, 1, MPI_INT, MPI_SUM, other);
        MPI_Iallreduce(din, dout, (int)n / 3, three_ints, op, MPI_COMM_WORLD, &q);
    }
    MPI_Wait(&q, MPI_STATUS_IGNORE);
    get(mode, r, dout, b);
    for (long i = 0; i < n; i++)
        h[i] = (int)i;   /* rank 0's */
    check("MPI_Iallreduce of the MPI library's (a program's op on 3 ints) started in another "
          "order than a blocking allreduce on another communicator", mode, n, r, h, b);
    int want = size * (size + 1) / 2;
    check("... and that allreduce", mode, 1, &sum, &want, sizeof(int));
    MPI_Comm_free(&other);
    MPI_Op_free(&op);
    MPI_Type_free(&three_ints);
    buf_free(mode, din);
    buf_free(mode, dout);
    free(h);
    free(r);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
#ifndef FAKE_DEVICE
    int ndev = 0, ok = cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0, all = 0;
    MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (!all) {
        if (rank == 0)
            printf("SKIP: no usable CUDA device here (%s): the device-buffer tests need a GPU\n",
                   cudaGetErrorString(cudaGetDeviceCount(&ndev)));
        MPI_Finalize();
        return 77;
    }
    cudaSetDevice(rank % ndev);
#endif
#ifdef FAKE_DEVICE
    if (argc > 1 && !strcmp(argv[1], "timeout")) {
        ipc_timeout_case();
        nb_ipc_timeout_case(0);
        nb_ipc_timeout_case(1);
        int worst = 0;   /* (MPICH's: rank 0 is here at once, the others after the timeout) */
        PMPI_Allreduce(&failures, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
        if (rank == 0)
            printf("np=%d: CUDA IPC with rank 0 absent (blocking, nonblocking) or failing: %s\n",
                   size, worst ? "FAILED" : "every other rank stopped, naming it");
        MPI_Finalize();
        return worst ? 1 : 0;
    }
    /* "requests": the nonblocking and persistent cases through CUDA IPC
     * alone (short enough to run under valgrind) */
    if (argc > 1 && !strcmp(argv[1], "requests")) {
        nb_ipc_cases(1 << 20);
        nb_holes_case(1, 1 << 18);
        if (size > 1)
            persistent_backoff_case(1 << 20);
        goto summary;
    }
    /* MPI_Init made no stream (a CUDA context on the default GPU in every
     * rank, before the program picks its own) */
    cases++;
    if (fake_dev_streams() != 0) {
        failures++;
        printf("FAILED: rank %d: %d CUDA streams made by MPI_Init, before any device buffer\n",
               rank, fake_dev_streams());
    }
#endif
    /* the very first device call goes device to device (no staging before
     * it has made the streams) */
    {
        long n = 16384;
        int *h = malloc(sizeof(int) * (size_t)n * size), *r = malloc(sizeof(int) * (size_t)n * size);
        int *ref = malloc(sizeof(int) * (size_t)n * size);
        void *d_in = dmalloc(sizeof(int) * (size_t)n), *d_out = dmalloc(sizeof(int) * (size_t)n * size);
        fill(h, n, 70);
        put(1, d_in, h, sizeof(int) * (size_t)n);
        MPI_Allgather(d_in, (int)n, MPI_INT, d_out, (int)n, MPI_INT, MPI_COMM_WORLD);
        get(1, r, d_out, sizeof(int) * (size_t)n * size);
        PMPI_Allgather(h, (int)n, MPI_INT, ref, (int)n, MPI_INT, MPI_COMM_WORLD);
        check("allgather as the first device call", 1, n, r, ref, sizeof(int) * (size_t)n * size);
        cudaFree(d_in);
        cudaFree(d_out);
        free(h);
        free(r);
        free(ref);
    }
    /* the last two: pipelines of 4 and of 17 chunks (the last one short) */
    const long counts[] = {0, 1, 7, 1000, 1 << 20, (1 << 22) + 3};
    for (int mode = 1; mode <= 2; mode++)
        for (int c = 0; c < 6; c++)
            run(mode, counts[c]);
    nb_ipc_cases(1 << 20);
    nb_ipc_cases((1 << 20) + 5);
    for (int mode = 1; mode <= 2; mode++) {
        nb_holes_case(mode, (1 << 18) + 3);
        staged_offset_case(mode, 1000);
        user_op_case(mode, 1000);
        user_op_case(mode, (1 << 20) + 3);   /* (a pipeline's size: staged whole) */
        if (mode == 2)   /* (device buffers on some ranks, host on the others) */
            nb_library_order_case(mode, 100000);
    }
#ifdef FAKE_DEVICE
    if (size > 1)
        persistent_backoff_case(1 << 20);
#endif
#ifdef FAKE_DEVICE
    /* pinned memory is kept for the next call: the same large allreduce
     * again and again allocates none after the first */
    {
        long n = 1 << 20;
        void *d = dmalloc(sizeof(int) * (size_t)n);
        unsigned long a0 = 0;
        for (int i = 0; i < 5; i++) {
            if (i == 1)
                a0 = fake_dev_host_allocs();
            MPI_Allreduce(MPI_IN_PLACE, d, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        }
        cases++;
        if (fake_dev_host_allocs() != a0) {
            failures++;
            printf("FAILED: rank %d: 4 repeated allreduces allocated %lu pinned blocks\n", rank,
                   fake_dev_host_allocs() - a0);
        }
    }
    /* many distinct device buffers, one call each: the peers' mappings
     * are kept for later calls, but no more than the cache holds (256):
     * the least recently used are closed, and results stay right */
    if (ipc_expected(1, 1u << 30, 0)) {
        long n = 16384;   /* 64 KiB a block: from DPCOLL_IPC_MIN */
        unsigned long o0 = fake_dev_ipc_opens();
        int *h = malloc(sizeof(int) * (size_t)n * size), *r = malloc(sizeof(int) * (size_t)n * size);
        int bad = 0;
        /* (a fresh communicator: no attempts skipped after the failed
         * ones of the mixed cases) */
        MPI_Comm fresh;
        MPI_Comm_dup(MPI_COMM_WORLD, &fresh);
        for (int it = 0; it < 140; it++)
            bad |= allgather_wrong(fresh, 1, n, 40 + it, h, r);
        cases++;
        if (bad || fake_dev_ipc_mapped() > 256 ||
            fake_dev_ipc_opens() - o0 < 2ul * 140 * (unsigned long)(size - 1)) {
            failures++;
            printf("FAILED: rank %d: 140 allgathers on new buffers: %s, %d peer mappings open "
                   "(at most 256), %lu opened (want %lu)\n", rank, bad ? "WRONG" : "right",
                   fake_dev_ipc_mapped(), fake_dev_ipc_opens() - o0, 280ul * (unsigned long)(size - 1));
        }
        /* Calls that cannot go device to device (host buffers on odd
         * ranks) and calls that can, interleaved: after a failed attempt
         * the next ones skip it, on every rank alike, so all keep matching
         * and every result is right. */
        bad = 0;
        for (int it = 0; it < 40; it++)
            bad |= allgather_wrong(fresh, it % 5 < 2 ? 2 : 1, n, 50 + it, h, r);
        cases++;
        if (bad) {
            failures++;
            printf("FAILED: rank %d: allgathers alternating host and device buffers: WRONG\n", rank);
        }
        /* A reduction that fails on one rank fails the call on every rank
         * (the others would copy its slice): nobody hangs, every rank gets
         * an error, and the next call on the communicator is right. (When
         * the allreduce goes device to device: all ranks on one GPU.) */
        if (ipc_expected(1, sizeof(int) * (size_t)n, 1)) {
            void *d = dmalloc(sizeof(int) * (size_t)n), *o = dmalloc(sizeof(int) * (size_t)n);
            MPI_Comm_set_errhandler(fresh, MPI_ERRORS_RETURN);
            fill(h, n, 60);
            put(1, d, h, sizeof(int) * (size_t)n);
            if (rank == 0)
                fake_dev_fail_next_reduce();
            int e = MPI_Allreduce(d, o, (int)n, MPI_INT, MPI_SUM, fresh), any_ok = 0;
            int ok_here = e == MPI_SUCCESS;
            MPI_Allreduce(&ok_here, &any_ok, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
            e = MPI_Allreduce(d, o, (int)n, MPI_INT, MPI_SUM, fresh);
            get(1, r, o, sizeof(int) * (size_t)n);
            PMPI_Allreduce(h, r + n, (int)n, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            cases++;
            if (any_ok || e != MPI_SUCCESS || memcmp(r, r + n, sizeof(int) * (size_t)n)) {
                failures++;
                printf("FAILED: rank %d: a device reduction failing on rank 0: %s; the next "
                       "call: %s\n", rank, any_ok ? "some rank got MPI_SUCCESS" : "all got an error",
                       e != MPI_SUCCESS ? "an error" : "right or wrong below");
            }
        }
        MPI_Comm_free(&fresh);
        free(h);
        free(r);
    }
    /* with every rank on the device and IPC on, peers' buffers were mapped */
    if (ipc_expected(1, 1u << 30, 0)) {
        cases++;
        if (fake_dev_ipc_opens() == 0) {
            failures++;
            printf("FAILED: rank %d: no peer buffer was mapped through CUDA IPC\n", rank);
        }
    }
    /* the staging must really have run: copies through the plugin */
    unsigned long c = fake_dev_copies(), min = 0;
    MPI_Allreduce(&c, &min, 1, MPI_UNSIGNED_LONG, MPI_MIN, MPI_COMM_WORLD);
    if (min < (unsigned long)cases) {
        failures++;
        if (rank == 0)
            printf("FAILED: only %lu copies through the plugin for %d cases\n", min, cases);
    }
summary:
#endif
    /* (a rank's own checks count on that rank only) */
    int worst = 0;
    MPI_Allreduce(&failures, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    failures = worst;
    if (rank == 0)
        printf("np=%d: %d %s-buffer cases compared with PMPI, %d failed\n", size, cases,
#ifdef FAKE_DEVICE
               "fake-device",
#else
               "device",
#endif
               failures);
    MPI_Finalize();
    return failures ? 1 : 0;
}
