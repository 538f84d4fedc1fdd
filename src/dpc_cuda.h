/*
 * The CUDA plugin's interface. libdpcoll itself never links the CUDA
 * libraries: a build with CUDA also installs libdpcoll_cuda.so (which does)
 * and libdpcoll loads it with dlopen at MPI_Init. On a machine without a GPU
 * or driver the load or its init fails, libdpcoll says so in one log line
 * and runs host-only; a program that never passes device memory never
 * notices. All functions return 0 or a CUDA error code (error_string names
 * it), except where stated.
 */
#ifndef DPC_CUDA_H
#define DPC_CUDA_H

#include <stddef.h>

#define DPC_CUDA_PLUGIN_VERSION 5
#define DPC_IPC_HANDLE_BYTES 64

typedef struct dpc_cuda_plugin {
    int version;
    /* Devices visible (>= 1), or 0 / negative with the reason in why. */
    int (*init)(char *why, size_t len);
    /* 1 if ptr is device memory (cudaMemoryTypeDevice), else 0. Host,
     * registered-host and managed memory are host-accessible: 0. */
    int (*is_device)(const void *ptr);
    int (*stream_create)(void **stream);
    void (*stream_destroy)(void *stream);
    int (*stream_sync)(void *stream);
    /* cudaMemcpyAsync with cudaMemcpyDefault (any direction). */
    int (*copy_async)(void *dst, const void *src, size_t bytes, void *stream);
    /* dst[i] = a[i] op b[i] on the device (dpc_dtype_t, dpc_op_t); -1 when
     * the pair has no device kernel (long double). */
    int (*reduce_async)(void *dst, const void *a, const void *b, size_t n, int dt, int op,
                        void *stream);
    int (*host_alloc)(void **p, size_t bytes);      /* pinned host memory */
    void (*host_free)(void *p);
    const char *(*error_string)(int err);
    /* Events mark a point in a stream's work, for polling without blocking:
     * event_query returns 0 once the work before event_record is done, 1
     * while it is not, else an error. (version 2) */
    int (*event_create)(void **ev);
    void (*event_destroy)(void *ev);
    int (*event_record)(void *ev, void *stream);
    int (*event_query)(void *ev);
    /* Makes each of the n streams wait (on the device, without blocking the
     * host) for all the work the calling thread has queued so far on CUDA's
     * default streams, the legacy one and its per-thread one. Why: a
     * cudaMemcpy from pageable memory into device memory returns before the
     * data land there, and our streams are non-blocking ones, which CUDA
     * does not order after the default stream; without this wait a
     * collective can read a device buffer the program has just filled and
     * get the old contents. Work on the program's own streams is the
     * program's to synchronize before the call, as with any CUDA-aware MPI.
     * (version 3) */
    int (*order_after_user)(void *const *streams, int n);
    /* CUDA IPC, between processes of one node (version 4). ipc_get: the
     * handle (DPC_IPC_HANDLE_BYTES, opaque) of the allocation holding the
     * device pointer ptr, and ptr's offset in it. ipc_open: maps a handle
     * another process got, *base the allocation's start here (device
     * memory: copies and kernels use it like our own). ipc_close: unmaps. */
    int (*ipc_get)(const void *ptr, void *handle, size_t *offset);
    int (*ipc_open)(const void *handle, void **base);
    int (*ipc_close)(void *base);
    /* The GPU that holds device pointer ptr, as a name every process of
     * the node gives alike (its PCI bus id), into id (len bytes). */
    int (*device_of)(const void *ptr, char *id, size_t len);
    /* Whether kernels on GPU `from` can read and write memory on GPU `to`
     * (both named as device_of names them): *yes 1 for the same GPU, or
     * when the two have peer access (NVLink, or PCIe peer to peer), which
     * a peer's mapping then enables (ipc_open); 0 otherwise, also for a GPU
     * this process does not see (CUDA_VISIBLE_DEVICES). (version 5) */
    int (*peer_access)(const char *from, const char *to, int *yes);
} dpc_cuda_plugin_t;

/* The one symbol the plugin exports. */
typedef const dpc_cuda_plugin_t *(*dpc_cuda_plugin_get_fn)(int version);
#define DPC_CUDA_PLUGIN_SYMBOL "dpc_cuda_plugin_get"
const dpc_cuda_plugin_t *dpc_cuda_plugin_get(int version);

#endif
