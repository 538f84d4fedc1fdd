/*
 * The CUDA plugin (src/cuda/dpc_cuda_plugin.c, compiled into this test)
 * over a stand-in CUDA runtime that keeps, as CUDA does, a current GPU per
 * thread (GPU 0 in a thread that never chose one) and refuses what CUDA
 * refuses: a kernel launched into a stream of another GPU than the current
 * one, an event recorded on a stream of another GPU than its own. Work goes
 * onto libdpcoll's streams from threads other than the one that made them
 * (the progress thread, the program's other threads): it must run on the
 * streams' GPU, and leave the thread's own current GPU as it was. Runs on
 * any machine with the CUDA headers (no GPU, no CUDA library).
 */
#include "config.h"
#include <check.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dpc_cuda.h"
#include "../check_run.h"

/* ---- the stand-in runtime ------------------------------------------------ */

#define NDEV 2
static __thread int cur;               /* this thread's current GPU */
struct CUstream_st { int dev; };
struct CUevent_st { int dev; };
static int ipc_opened_on = -1, ipc_closed_on = -1, launched_on = -1;
static char mapped_byte;

static int stream_dev(cudaStream_t s)
{
    /* the default streams are the current GPU's */
    return s == cudaStreamLegacy || s == cudaStreamPerThread || !s ? cur : s->dev;
}

cudaError_t cudaGetDeviceCount(int *n) { *n = NDEV; return cudaSuccess; }
cudaError_t cudaGetDevice(int *d) { *d = cur; return cudaSuccess; }
cudaError_t cudaSetDevice(int d)
{
    if (d < 0 || d >= NDEV)
        return cudaErrorInvalidDevice;
    cur = d;
    return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    (void)flags;
    *s = malloc(sizeof(**s));
    (*s)->dev = cur;
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s) { free(s); return cudaSuccess; }
cudaError_t cudaStreamSynchronize(cudaStream_t s) { (void)s; return cudaSuccess; }
cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int f)
{
    (void)s; (void)e; (void)f;   /* (may cross GPUs) */
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    (void)flags;
    *e = malloc(sizeof(**e));
    (*e)->dev = cur;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) { free(e); return cudaSuccess; }
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    return e->dev == stream_dev(s) ? cudaSuccess : cudaErrorInvalidResourceHandle;
}
cudaError_t cudaEventQuery(cudaEvent_t e) { (void)e; return cudaSuccess; }
cudaError_t cudaMemcpyAsync(void *d, const void *s, size_t n, enum cudaMemcpyKind k,
                            cudaStream_t st)
{
    (void)d; (void)s; (void)n; (void)k; (void)st;   /* (any GPU's stream will do) */
    return cudaSuccess;
}
cudaError_t cudaMallocHost(void **p, size_t n) { *p = malloc(n); return *p ? cudaSuccess : cudaErrorMemoryAllocation; }
cudaError_t cudaFreeHost(void *p) { free(p); return cudaSuccess; }
const char *cudaGetErrorString(cudaError_t e) { return e ? "stand-in error" : "no error"; }
cudaError_t cudaGetLastError(void) { return cudaSuccess; }
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    (void)a; (void)p;
    return cudaErrorInvalidValue;
}
cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t *h, void *p)
{
    (void)p;
    memset(h, 0, sizeof(*h));
    return cudaSuccess;
}
cudaError_t cudaIpcOpenMemHandle(void **p, cudaIpcMemHandle_t h, unsigned int flags)
{
    (void)h; (void)flags;
    ipc_opened_on = cur;   /* mapped for, and peer access enabled from, this GPU */
    *p = &mapped_byte;
    return cudaSuccess;
}
cudaError_t cudaIpcCloseMemHandle(void *p) { (void)p; ipc_closed_on = cur; return cudaSuccess; }
cudaError_t cudaDeviceGetPCIBusId(char *id, int len, int dev)
{
    snprintf(id, (size_t)len, "0000:0%d:00.0", dev);
    return cudaSuccess;
}
cudaError_t cudaDeviceGetByPCIBusId(int *dev, const char *id)
{
    return sscanf(id, "0000:0%d:00.0", dev) == 1 ? cudaSuccess : cudaErrorInvalidDevice;
}
cudaError_t cudaDeviceCanAccessPeer(int *can, int a, int b) { *can = a != b; return cudaSuccess; }

/* the kernels' launcher (dpc_cuda_reduce.cu): a launch into a stream of
 * another GPU than the current one fails, as in CUDA */
int dpc_cuda_reduce_launch(void *dst, const void *a, const void *b, size_t n, int dt, int op,
                           void *s);
int dpc_cuda_reduce_launch(void *dst, const void *a, const void *b, size_t n, int dt, int op,
                           void *s)
{
    (void)dst; (void)a; (void)b; (void)dt; (void)op;
    if (!n)
        return 0;
    launched_on = cur;
    return stream_dev(s) == cur ? 0 : (int)cudaErrorInvalidResourceHandle;
}

/* ---- the tests ------------------------------------------------------------ */

const dpc_cuda_plugin_t *dpc_cuda_plugin_get(int version);
static const dpc_cuda_plugin_t *pl;
static void *stream;

/* What a thread whose current GPU is `mine` gets from the plugin's calls on
 * the stream (made on GPU 1): each call's result, and its GPU after. */
typedef struct { int mine, ev_create, ev_record, reduce, copy, ipc_open, ipc_close, after; } seen_t;

static void *use_stream(void *arg)
{
    seen_t *r = arg;
    cudaSetDevice(r->mine);
    void *ev = NULL, *base = NULL;
    float x[4] = {0}, y[4] = {0};
    unsigned char h[DPC_IPC_HANDLE_BYTES] = {0};
    r->ev_create = pl->event_create(&ev);
    r->ev_record = ev ? pl->event_record(ev, stream) : -1;
    r->reduce = pl->reduce_async(x, x, y, 4, 0, 0, stream);
    r->copy = pl->copy_async(x, y, sizeof(x), stream);
    r->ipc_open = pl->ipc_open(h, &base);
    r->ipc_close = base ? pl->ipc_close(base) : -1;
    if (ev)
        pl->event_destroy(ev);
    cudaGetDevice(&r->after);
    return NULL;
}

static void streams_on_gpu1(void)
{
    pl = dpc_cuda_plugin_get(DPC_CUDA_PLUGIN_VERSION);
    ck_assert_ptr_nonnull(pl);
    launched_on = ipc_opened_on = ipc_closed_on = -1;
    cudaSetDevice(1);   /* the program's GPU */
    ck_assert_int_eq(pl->stream_create(&stream), 0);
    ck_assert_int_eq(((cudaStream_t)stream)->dev, 1);
}

static void expect_on_gpu1(const seen_t *r)
{
    ck_assert_msg(r->ev_create == 0 && r->ev_record == 0,
                  "an event made and recorded from a thread on GPU %d: %d, %d", r->mine,
                  r->ev_create, r->ev_record);
    ck_assert_msg(r->reduce == 0 && launched_on == 1,
                  "a reduction launched from a thread on GPU %d: %d, on GPU %d", r->mine,
                  r->reduce, launched_on);
    ck_assert_int_eq(r->copy, 0);
    ck_assert_msg(r->ipc_open == 0 && ipc_opened_on == 1 && r->ipc_close == 0 && ipc_closed_on == 1,
                  "a peer's buffer mapped from a thread on GPU %d: on GPU %d", r->mine,
                  ipc_opened_on);
    ck_assert_msg(r->after == r->mine, "the thread's GPU was %d, is %d after", r->mine, r->after);
    pl->stream_destroy(stream);
}

START_TEST(test_other_thread)
{
    /* a thread that never chose a GPU (CUDA's GPU 0): the progress thread */
    streams_on_gpu1();
    seen_t r = {.mine = 0};
    pthread_t t;
    pthread_create(&t, NULL, use_stream, &r);
    pthread_join(t, NULL);
    expect_on_gpu1(&r);
}
END_TEST

START_TEST(test_program_thread_switched)
{
    /* the program's thread, which has moved to GPU 0 since the streams
     * were made: its choice stays */
    streams_on_gpu1();
    seen_t r = {.mine = 0};
    use_stream(&r);
    expect_on_gpu1(&r);
}
END_TEST

START_TEST(test_same_gpu)
{
    /* the usual case: the calls change nothing */
    streams_on_gpu1();
    seen_t r = {.mine = 1};
    use_stream(&r);
    expect_on_gpu1(&r);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("plugin_device");
    TCase *tc = tcase_create("threads");
    tcase_add_test(tc, test_other_thread);
    tcase_add_test(tc, test_program_thread_switched);
    tcase_add_test(tc, test_same_gpu);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    return check_run(suite());
}
