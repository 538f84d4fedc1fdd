/*
 * Facts for the device path that only a GPU can give (tests/gpu/run.sh
 * prints them; nothing here passes or fails but a crash):
 *  1. Does a program that only ever passes host buffers get a CUDA context
 *     on GPU 0 from libdpcoll (its memory-type checks use the runtime's
 *     cudaPointerGetAttributes, which may initialize one)? Every rank of a
 *     CPU-only job on a GPU node would then hold hundreds of MiB there.
 *  2. Does the driver's cuPointerGetAttributes, which needs no context of
 *     its own, still tell device memory from host memory on a thread with
 *     no current context (a framework's communication thread)? If so, the
 *     plugin's is_device could use it and avoid 1.
 * The driver is reached with dlopen (as the plugin does), never linked.
 */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <mpi.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*dev_get_fn)(CUdevice *, int);
typedef CUresult (*state_fn)(CUdevice, unsigned *, int *);
typedef CUresult (*ctx_cur_fn)(CUcontext *);
typedef CUresult (*attrs_fn)(unsigned, CUpointer_attribute *, void **, CUdeviceptr);
static attrs_fn ptr_attrs;
static ctx_cur_fn ctx_current;
static void *dev_ptr, *host_ptr;
static int rank;

static void describe(const char *what, const void *p)
{
    CUmemorytype t = (CUmemorytype)0;
    int managed = -1;
    CUpointer_attribute at[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED};
    void *data[2] = {&t, &managed};
    CUresult r = ptr_attrs(2, at, data, (CUdeviceptr)(uintptr_t)p);
    printf("probe: rank %d: cuPointerGetAttributes(%s) = %d, memory type %d (device is %d), "
           "managed %d\n", rank, what, (int)r, (int)t, (int)CU_MEMORYTYPE_DEVICE, managed);
}

static void *no_context_thread(void *arg)
{
    (void)arg;
    CUcontext c = NULL;
    CUresult r = ctx_current(&c);
    printf("probe: rank %d: a new thread's current context: %s (%d)\n", rank,
           c ? "set" : "none", (int)r);
    describe("device pointer, thread without a context", dev_ptr);
    describe("host pointer, thread without a context", host_ptr);
    return NULL;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    void *cu = dlopen("libcuda.so.1", RTLD_NOW);
    init_fn cu_init = cu ? (init_fn)dlsym(cu, "cuInit") : NULL;
    dev_get_fn dev_get = cu ? (dev_get_fn)dlsym(cu, "cuDeviceGet") : NULL;
    state_fn state = cu ? (state_fn)dlsym(cu, "cuDevicePrimaryCtxGetState") : NULL;
    ctx_current = cu ? (ctx_cur_fn)dlsym(cu, "cuCtxGetCurrent") : NULL;
    ptr_attrs = cu ? (attrs_fn)dlsym(cu, "cuPointerGetAttributes") : NULL;
    if (!cu_init || !dev_get || !state || !ctx_current || !ptr_attrs || cu_init(0) != CUDA_SUCCESS) {
        if (rank == 0)
            printf("SKIP: no CUDA driver here: the probe needs a GPU\n");
        MPI_Finalize();
        return 77;
    }
    /* 1: host buffers only, through every path that asks about memory */
    size_t n = 1 << 14;
    float *a = malloc(sizeof(float) * n), *b = malloc(sizeof(float) * n * 4);
    for (size_t i = 0; i < n; i++)
        a[i] = 1;
    for (int k = 0; k < 8; k++) {
        MPI_Allreduce(a, b, (int)n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        MPI_Allgather(a, (int)n / 4, MPI_FLOAT, b, (int)n / 4, MPI_FLOAT, MPI_COMM_WORLD);
        MPI_Bcast(a, (int)n, MPI_FLOAT, 0, MPI_COMM_WORLD);
    }
    CUdevice d;
    unsigned flags = 0;
    int active = -1;
    if (dev_get(&d, 0) == CUDA_SUCCESS && state(d, &flags, &active) == CUDA_SUCCESS)
        printf("probe: rank %d: GPU 0's primary context after 24 host-buffer collectives: %s\n",
               rank, active ? "ACTIVE (libdpcoll or MPI made one)" : "inactive (none made)");
    /* 2: a device pointer asked about from a thread with no context */
    if (cudaMalloc(&dev_ptr, 1 << 20) != cudaSuccess) {
        printf("probe: rank %d: cudaMalloc failed\n", rank);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    host_ptr = a;
    describe("device pointer, the allocating thread", dev_ptr);
    pthread_t th;
    pthread_create(&th, NULL, no_context_thread, NULL);
    pthread_join(th, NULL);
    cudaFree(dev_ptr);
    free(a);
    free(b);
    MPI_Finalize();
    return 0;
}
