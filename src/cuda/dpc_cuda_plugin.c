/*
 * libdpcoll_cuda.so: the CUDA runtime behind dpc_cuda.h. Built only with
 * --with-cuda and loaded by libdpcoll at run time (src/pmpi/cuda.c), so that
 * libdpcoll itself loads on machines without CUDA.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include "dpc_cuda.h"
#include "dpc_cuda_kernels.h"

static int init(char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, len, "%s", cudaGetErrorString(e));
        return -1;
    }
    if (n == 0)
        snprintf(why, len, "no CUDA device");
    return n;
}

static int is_device(const void *ptr)
{
    struct cudaPointerAttributes at;
    if (!ptr || cudaPointerGetAttributes(&at, ptr) != cudaSuccess) {
        cudaGetLastError();   /* clear the sticky "invalid value" of plain host memory */
        return 0;
    }
    return at.type == cudaMemoryTypeDevice;
}

/*
 * The GPU of libdpcoll's streams: the program's current one when the first
 * stream is made (its first call with a device buffer). CUDA's current GPU
 * is a thread's own, and work goes onto those streams from other threads
 * too: libdpcoll's progress thread, which never chose one (so GPU 0), and
 * the program's other threads. A kernel launched into another GPU's stream
 * fails, an event cannot be recorded on another GPU's stream, and a peer's
 * buffer is mapped (cudaIpcOpenMemHandle) for the current GPU. So each
 * entry point below that makes an event, queues work or maps a buffer runs
 * on that GPU, and gives the thread its own back afterwards.
 */
static int home = -1;

static int home_enter(int *prev)
{
    int h = __atomic_load_n(&home, __ATOMIC_ACQUIRE);
    *prev = -1;
    if (h < 0 || cudaGetDevice(prev) != cudaSuccess) {
        *prev = -1;
        return 0;
    }
    return *prev == h ? 0 : (int)cudaSetDevice(h);
}

static void home_leave(int prev)
{
    if (prev >= 0 && prev != __atomic_load_n(&home, __ATOMIC_ACQUIRE))
        cudaSetDevice(prev);
}

/* Returns CALL's result, CALL made on the streams' GPU. */
#define ON_HOME(CALL)                                                        \
    do {                                                                     \
        int prev_, e_ = home_enter(&prev_);                                  \
        if (!e_)                                                             \
            e_ = (int)(CALL);                                                \
        home_leave(prev_);                                                   \
        return e_;                                                           \
    } while (0)

static int stream_create(void **s)
{
    int h = -1;
    if (__atomic_load_n(&home, __ATOMIC_ACQUIRE) < 0 && cudaGetDevice(&h) == cudaSuccess)
        __atomic_store_n(&home, h, __ATOMIC_RELEASE);
    ON_HOME(cudaStreamCreateWithFlags((cudaStream_t *)s, cudaStreamNonBlocking));
}

static void stream_destroy(void *s)
{
    cudaStreamDestroy((cudaStream_t)s);
}

static int stream_sync(void *s)
{
    return (int)cudaStreamSynchronize((cudaStream_t)s);
}

static int copy_async(void *dst, const void *src, size_t bytes, void *s)
{
    if (!bytes)
        return 0;
    ON_HOME(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, (cudaStream_t)s));
}

static int reduce_async(void *dst, const void *a, const void *b, size_t n, int dt, int op, void *s)
{
    if (!n)   /* a probe: nothing launched */
        return dpc_cuda_reduce_launch(dst, a, b, n, dt, op, s);
    ON_HOME(dpc_cuda_reduce_launch(dst, a, b, n, dt, op, s));
}

static int host_alloc(void **p, size_t bytes)
{
    return (int)cudaMallocHost(p, bytes ? bytes : 1);
}

static void host_free(void *p)
{
    cudaFreeHost(p);
}

static const char *error_string(int err)
{
    return err == DPC_CUDA_UNSUPPORTED ? "no device kernel for this type" : cudaGetErrorString((cudaError_t)err);
}

static int event_create(void **ev)
{
    ON_HOME(cudaEventCreateWithFlags((cudaEvent_t *)ev, cudaEventDisableTiming));
}

static void event_destroy(void *ev)
{
    cudaEventDestroy((cudaEvent_t)ev);
}

static int event_record(void *ev, void *s)
{
    ON_HOME(cudaEventRecord((cudaEvent_t)ev, (cudaStream_t)s));
}

static int event_query(void *ev)
{
    cudaError_t e = cudaEventQuery((cudaEvent_t)ev);
    return e == cudaSuccess ? 0 : e == cudaErrorNotReady ? 1 : (int)e;
}

/* One event per thread and default stream: recorded, then waited on by
 * every stream, in the calling thread alone (another thread's record cannot
 * slip in between). Created at a thread's first call, never freed: a few
 * per thread. */
static __thread cudaEvent_t user_ev[2];

static int order_after_user(void *const *streams, int n)
{
    static const cudaStream_t defaults[2] = {cudaStreamLegacy, cudaStreamPerThread};
    for (int d = 0; d < 2; d++) {
        cudaError_t e;
        if (!user_ev[d] &&
            (e = cudaEventCreateWithFlags(&user_ev[d], cudaEventDisableTiming)) != cudaSuccess)
            return (int)e;
        if ((e = cudaEventRecord(user_ev[d], defaults[d])) != cudaSuccess)
            return (int)e;
        for (int i = 0; i < n; i++)
            if (streams[i] &&
                (e = cudaStreamWaitEvent((cudaStream_t)streams[i], user_ev[d], 0)) != cudaSuccess)
                return (int)e;
    }
    return 0;
}

/* The allocation that holds a device pointer: a handle names a whole
 * allocation (a framework's caching allocator hands out pieces of big
 * ones), so the peer needs the base and our offset in it. The runtime has
 * no call for that; the driver's cuMemGetAddressRange does, found in the
 * driver library the runtime has already loaded. */
typedef int (*range_fn)(unsigned long long *base, size_t *size, unsigned long long ptr);
static range_fn address_range;
static pthread_once_t range_once = PTHREAD_ONCE_INIT;

static void find_address_range(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (h)
        address_range = (range_fn)dlsym(h, "cuMemGetAddressRange_v2");
}

static int ipc_get(const void *ptr, void *handle, size_t *offset)
{
    pthread_once(&range_once, find_address_range);
    unsigned long long base = 0;
    size_t size = 0;
    if (!address_range)
        return (int)cudaErrorNotSupported;
    if (address_range(&base, &size, (unsigned long long)(uintptr_t)ptr) != 0)
        return (int)cudaErrorInvalidValue;
    *offset = (size_t)((uintptr_t)ptr - (uintptr_t)base);
    _Static_assert(sizeof(cudaIpcMemHandle_t) == DPC_IPC_HANDLE_BYTES, "IPC handle size");
    return (int)cudaIpcGetMemHandle((cudaIpcMemHandle_t *)handle, (void *)(uintptr_t)base);
}

static int ipc_open(const void *handle, void **base)
{
    cudaIpcMemHandle_t h;
    memcpy(&h, handle, sizeof(h));
    /* (mapped for, and peer access enabled from, our GPU) */
    ON_HOME(cudaIpcOpenMemHandle(base, h, cudaIpcMemLazyEnablePeerAccess));
}

static int ipc_close(void *base)
{
    ON_HOME(cudaIpcCloseMemHandle(base));
}

static int device_of(const void *ptr, char *id, size_t len)
{
    struct cudaPointerAttributes at;
    cudaError_t e = cudaPointerGetAttributes(&at, ptr);
    if (e != cudaSuccess)
        return (int)e;
    return (int)cudaDeviceGetPCIBusId(id, (int)len, at.device);
}

/* Another process's GPU can be one this process does not see at all
 * (CUDA_VISIBLE_DEVICES): no access then, and the lookup's error is
 * cleared so that it does not surface at the next launch. */
static int peer_access(const char *from, const char *to, int *yes)
{
    int a, b, can = 0;
    *yes = 0;
    if (!strcmp(from, to)) {
        *yes = 1;
        return 0;
    }
    if (cudaDeviceGetByPCIBusId(&a, from) != cudaSuccess ||
        cudaDeviceGetByPCIBusId(&b, to) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    cudaError_t e = cudaDeviceCanAccessPeer(&can, a, b);
    if (e != cudaSuccess)
        return (int)e;
    *yes = can != 0;
    return 0;
}

static const dpc_cuda_plugin_t plugin = {
    .peer_access = peer_access,
    .order_after_user = order_after_user, .device_of = device_of,
    .ipc_get = ipc_get, .ipc_open = ipc_open, .ipc_close = ipc_close,
    .version = DPC_CUDA_PLUGIN_VERSION,
    .event_create = event_create, .event_destroy = event_destroy,
    .event_record = event_record, .event_query = event_query,
    .init = init, .is_device = is_device,
    .stream_create = stream_create, .stream_destroy = stream_destroy, .stream_sync = stream_sync,
    .copy_async = copy_async, .reduce_async = reduce_async,
    .host_alloc = host_alloc, .host_free = host_free, .error_string = error_string,
};

__attribute__((visibility("default"))) const dpc_cuda_plugin_t *dpc_cuda_plugin_get(int version)
{
    return version == DPC_CUDA_PLUGIN_VERSION ? &plugin : NULL;
}
