/*
 * The device reduction kernels against the host kernels, pair by pair: for
 * every (type, op) that MPI defines, dst = a op b computed by the CUDA plugin
 * on device memory must equal, bit for bit, what src/dpc_reduce.c computes on
 * the host from the same inputs. That is what keeps replicas identical when
 * one rank reduces on its GPU and another on its CPU.
 *
 * Inputs are pseudo-random bit patterns (so floats include infinities,
 * subnormals, NaNs and negative zeros), with a quarter of the elements made
 * equal in value on both sides so that MIN/MAX and the MINLOC/MAXLOC tie rule
 * (smaller index wins) are exercised. Two exceptions to "bit for bit", both
 * reported in the closing line:
 *   - a result that is NaN on both sides matches whatever its payload: x86
 *     propagates an input NaN's payload, the GPU returns its canonical NaN;
 *   - only the value bytes of the pair types count (their padding is not
 *     data).
 * long double has no device kernel: the plugin must say so (the caller then
 * reduces a host copy). Also checked: in place (dst == a), and a count
 * beyond one launch's grid (the kernel's grid-stride loop).
 *
 * Loads the plugin like libdpcoll does (DPCOLL_CUDA_PLUGIN, else the build's
 * own); device memory comes from the same CUDA runtime (cudaMalloc). Without a usable GPU it prints one line and exits 77 (skip).
 */
#include "config.h"
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dpc_cuda.h"
#include "dpc_half.h"
#include "dpc_reduce.h"
#include "dpc_types.h"

static const dpc_cuda_plugin_t *cu;
static void *stream;
static int failures, pairs, nan_matches;

static void die(const char *what, int err)
{
    printf("FAILED: %s: %s\n", what, cu->error_string(err));
    exit(1);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

/* Is the element at p a NaN of a floating-point type (or the value of a
 * float pair)? */
static int is_nan(dpc_dtype_t dt, const unsigned char *p)
{
    float f;
    double d;
    uint16_t h;
    switch (dt) {
    case DPC_FLOAT: case DPC_FLOAT_INT: memcpy(&f, p, 4); return isnan(f);
    case DPC_DOUBLE: case DPC_DOUBLE_INT: memcpy(&d, p, 8); return isnan(d);
    case DPC_COMPLEX_FLOAT: return is_nan(DPC_FLOAT, p) || is_nan(DPC_FLOAT, p + 4);
    case DPC_COMPLEX_DOUBLE: return is_nan(DPC_DOUBLE, p) || is_nan(DPC_DOUBLE, p + 8);
    case DPC_FLOAT16: memcpy(&h, p, 2); return isnan(dpc_half_to_float(h));
    case DPC_BFLOAT16: memcpy(&h, p, 2); return isnan(dpc_bf16_to_float(h));
    default: return 0;
    }
}

/* Inputs: random bits; every fourth element of b equal in value to a's
 * (same value bytes, another index for the pairs); bool as 0/1. */
static void make_inputs(dpc_dtype_t dt, unsigned char *a, unsigned char *b, size_t n)
{
    size_t es = dpc_dtype_size(dt), o1, l1, o2, l2;
    dpc_dtype_value_bytes(dt, &o1, &l1, &o2, &l2);
    for (size_t i = 0; i < n * es; i++) {
        a[i] = (unsigned char)next();
        b[i] = (unsigned char)next();
    }
    for (size_t i = 0; i < n; i++) {
        unsigned char *x = a + i * es, *y = b + i * es;
        if (dt == DPC_BOOL) {
            x[0] &= 1;
            y[0] &= 1;
        }
        if (i % 4 == 3)
            memcpy(y + o1, x + o1, l1);   /* a tie: the value (o1) only */
    }
}

/* Compares n results; returns the first index that differs, or n. */
static size_t compare(dpc_dtype_t dt, const unsigned char *got, const unsigned char *want,
                      size_t n, int *nans)
{
    size_t es = dpc_dtype_size(dt), o1, l1, o2, l2;
    dpc_dtype_value_bytes(dt, &o1, &l1, &o2, &l2);
    for (size_t i = 0; i < n; i++) {
        const unsigned char *g = got + i * es, *w = want + i * es;
        if (memcmp(g + o1, w + o1, l1) != 0) {
            if (!(is_nan(dt, g + o1) && is_nan(dt, w + o1)))
                return i;
            (*nans)++;
        }
        if (l2 && memcmp(g + o2, w + o2, l2) != 0)
            return i;
    }
    return n;
}

static void *dmalloc(size_t bytes)
{
    void *p = NULL;
    int e = (int)cudaMalloc(&p, bytes ? bytes : 1);
    if (e)
        die("cudaMalloc", e);
    return p;
}

/* One (type, op) pair over n elements, out of place and in place. */
static void run_pair(dpc_dtype_t dt, dpc_op_t op, size_t n)
{
    dpc_reduce_fn_t host = dpc_reduce_kernel(op, dt);
    size_t bytes = n * dpc_dtype_size(dt);
    unsigned char *a = malloc(bytes), *b = malloc(bytes), *want = malloc(bytes),
                  *got = malloc(bytes);
    void *da = dmalloc(bytes), *db = dmalloc(bytes), *dd = dmalloc(bytes);
    make_inputs(dt, a, b, n);
    host(want, a, b, n);
    int e;
    if ((e = cu->copy_async(da, a, bytes, stream)) || (e = cu->copy_async(db, b, bytes, stream)))
        die("copy to the device", e);
    e = cu->reduce_async(dd, da, db, n, dt, op, stream);
    if (e == -1) {
        /* no device kernel: allowed for long double alone */
        pairs++;
        if (dt != DPC_LONG_DOUBLE && dt != DPC_LONG_DOUBLE_INT) {
            failures++;
            printf("FAILED: %s %s has no device kernel\n", dpc_dtype_name(dt), dpc_op_name(op));
        }
        goto out;
    }
    if (e)
        die("reduce_async", e);
    for (int in_place = 0; in_place < 2; in_place++) {
        if (in_place && (e = cu->reduce_async(da, da, db, n, dt, op, stream)))
            die("reduce_async in place", e);
        if ((e = cu->copy_async(got, in_place ? da : dd, bytes, stream)) ||
            (e = cu->stream_sync(stream)))
            die("copy back", e);
        size_t bad = compare(dt, got, want, n, &nan_matches);
        pairs++;
        if (bad < n) {
            failures++;
            size_t es = dpc_dtype_size(dt);
            printf("FAILED: %s %s%s, n=%zu: element %zu differs from the host's (bytes:", dpc_dtype_name(dt),
                   dpc_op_name(op), in_place ? " in place" : "", n, bad);
            for (size_t k = 0; k < es; k++)
                printf(" %02x/%02x", got[bad * es + k], want[bad * es + k]);
            printf(" device/host)\n");
        }
    }
out:
    if ((e = cu->stream_sync(stream)))   /* the copies from a and b are done */
        die("stream_sync", e);
    cudaFree(da);
    cudaFree(db);
    cudaFree(dd);
    free(a);
    free(b);
    free(want);
    free(got);
}

int main(void)
{
    const char *path = getenv("DPCOLL_CUDA_PLUGIN");
    if (!path)
        path = TOP_BUILDDIR "/.libs/libdpcoll_cuda.so";
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    dpc_cuda_plugin_get_fn get = h ? (dpc_cuda_plugin_get_fn)dlsym(h, DPC_CUDA_PLUGIN_SYMBOL) : NULL;
    cu = get ? get(DPC_CUDA_PLUGIN_VERSION) : NULL;
    if (!cu) {
        printf("FAILED: cannot load the CUDA plugin %s: %s\n", path, dlerror());
        return 1;
    }
    char why[256] = "";
    if (cu->init(why, sizeof why) <= 0) {
        printf("SKIP: no usable CUDA device here (%s): the device kernels need a GPU\n", why);
        return 77;
    }
    int e = cu->stream_create(&stream);
    if (e)
        die("stream_create", e);
    for (int dt = 0; dt < DPC_DTYPE_COUNT; dt++)
        for (int op = 0; op < DPC_OP_COUNT; op++)
            if (dpc_reduce_kernel((dpc_op_t)op, (dpc_dtype_t)dt))
                run_pair((dpc_dtype_t)dt, (dpc_op_t)op, 100003);
    /* beyond one grid (65535 blocks of 256 threads): the grid-stride loop */
    run_pair(DPC_INT8, DPC_OP_SUM, (size_t)65535 * 256 * 2 + 5);
    run_pair(DPC_FLOAT, DPC_OP_MAX, (size_t)65535 * 256 + 1);
    cu->stream_destroy(stream);
    printf("device kernels: %d (type, op) cases compared bit for bit with the host kernels "
           "(%d NaN results matched as NaN), %d failed\n", pairs, nan_matches, failures);
    return failures ? 1 : 0;
}
