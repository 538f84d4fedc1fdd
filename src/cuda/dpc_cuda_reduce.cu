/*
 * Reductions of device buffers: dst[i] = a[i] op b[i] as CUDA kernels, for
 * every (type, op) pair the host kernels (src/dpc_reduce.c) have, with the
 * same expressions element by element, so host and device give the same
 * bits: integers in the unsigned type of their width (wrap-around), floats
 * one IEEE operation, float16/bfloat16 widened to float and rounded once back
 * with the very conversion functions of the host (dpc_half.h), MINLOC and
 * MAXLOC with MPI's tie rule, complex numbers with no fused multiply-add.
 * long double has no device arithmetic: those
 * pairs report "unsupported" and the caller reduces a host copy instead.
 * dst may equal a or b (element-wise, so safe).
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include "dpc_half.h"
#include "dpc_pairs.h"
#include "dpc_types.h"
#include "dpc_cuda_kernels.h"

template <class T, class F>
__global__ void reduce_kernel(T *dst, const T *a, const T *b, size_t n, F f)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        dst[i] = f(a[i], b[i]);
}

#define OP(name, EXPR)                                                        \
    template <class T, class W> struct name {                                 \
        __device__ T operator()(T x, T y) const { return (EXPR); }           \
    };
OP(Sum, (T)((W)x + (W)y))
OP(Prod, (T)((W)x * (W)y))
OP(Min, x < y ? x : y)
OP(Max, x > y ? x : y)
OP(Land, (T)((x != 0) & (y != 0)))
OP(Lor, (T)((x != 0) | (y != 0)))
OP(Lxor, (T)((x != 0) ^ (y != 0)))
OP(Band, (T)(x & y))
OP(Bor, (T)(x | y))
OP(Bxor, (T)(x ^ y))

struct HalfSum { __device__ uint16_t operator()(uint16_t x, uint16_t y) const
    { return dpc_float_to_half(dpc_half_to_float(x) + dpc_half_to_float(y)); } };
struct HalfProd { __device__ uint16_t operator()(uint16_t x, uint16_t y) const
    { return dpc_float_to_half(dpc_half_to_float(x) * dpc_half_to_float(y)); } };
struct HalfMin { __device__ uint16_t operator()(uint16_t x, uint16_t y) const
    { return dpc_half_to_float(x) < dpc_half_to_float(y) ? x : y; } };
struct HalfMax { __device__ uint16_t operator()(uint16_t x, uint16_t y) const
    { return dpc_half_to_float(x) > dpc_half_to_float(y) ? x : y; } };
struct Bf16Sum { __device__ uint16_t operator()(uint16_t x, uint16_t y) const
    { return dpc_float_to_bf16(dpc_bf16_to_float(x) + dpc_bf16_to_float(y)); } };
struct Bf16Prod { __device__ uint16_t operator()(uint16_t x, uint16_t y) const
    { return dpc_float_to_bf16(dpc_bf16_to_float(x) * dpc_bf16_to_float(y)); } };
struct Bf16Min { __device__ uint16_t operator()(uint16_t x, uint16_t y) const
    { return dpc_bf16_to_float(x) < dpc_bf16_to_float(y) ? x : y; } };
struct Bf16Max { __device__ uint16_t operator()(uint16_t x, uint16_t y) const
    { return dpc_bf16_to_float(x) > dpc_bf16_to_float(y) ? x : y; } };

struct BoolLand { __device__ bool operator()(bool x, bool y) const { return x && y; } };
struct BoolLor { __device__ bool operator()(bool x, bool y) const { return x || y; } };
struct BoolLxor { __device__ bool operator()(bool x, bool y) const { return x != y; } };

template <class T> struct MinLoc {
    __device__ T operator()(T x, T y) const
    {
        if (x.v < y.v) return x;
        if (y.v < x.v) return y;
        T r = x;
        r.i = x.i < y.i ? x.i : y.i;
        return r;
    }
};
template <class T> struct MaxLoc {
    __device__ T operator()(T x, T y) const
    {
        if (x.v > y.v) return x;
        if (y.v > x.v) return y;
        T r = x;
        r.i = x.i < y.i ? x.i : y.i;
        return r;
    }
};

/* Complex numbers: the host's expressions with every multiply and add
 * rounded on its own (the _rn intrinsics are never fused into an FMA, which
 * nvcc does to plain a * b + c by default): the host's bits, and the same
 * bits whichever operand comes first. */
__device__ inline float mul_rn(float a, float b) { return __fmul_rn(a, b); }
__device__ inline double mul_rn(double a, double b) { return __dmul_rn(a, b); }
__device__ inline float add_rn(float a, float b) { return __fadd_rn(a, b); }
__device__ inline double add_rn(double a, double b) { return __dadd_rn(a, b); }
__device__ inline float sub_rn(float a, float b) { return __fsub_rn(a, b); }
__device__ inline double sub_rn(double a, double b) { return __dsub_rn(a, b); }
template <class T> struct ComplexSum {
    __device__ T operator()(T x, T y) const
    {
        T r;
        r.re = add_rn(x.re, y.re);
        r.im = add_rn(x.im, y.im);
        return r;
    }
};
template <class T> struct ComplexProd {
    __device__ T operator()(T x, T y) const
    {
        T r;
        r.re = sub_rn(mul_rn(x.re, y.re), mul_rn(x.im, y.im));
        r.im = add_rn(mul_rn(x.re, y.im), mul_rn(x.im, y.re));
        return r;
    }
};

template <class T, class F>
static int launch(void *dst, const void *a, const void *b, size_t n, cudaStream_t s)
{
    if (n == 0)
        return 0;
    unsigned threads = 256;
    size_t want = (n + threads - 1) / threads;
    unsigned blocks = want > 65535 ? 65535 : (unsigned)want;   /* grid-stride beyond */
    reduce_kernel<T, F><<<blocks, threads, 0, s>>>((T *)dst, (const T *)a, (const T *)b, n, F());
    return (int)cudaGetLastError();
}

template <class T, class W>
static int int_ops(int op, void *d, const void *a, const void *b, size_t n, cudaStream_t s)
{
    switch (op) {
    case DPC_OP_SUM: return launch<T, Sum<T, W>>(d, a, b, n, s);
    case DPC_OP_PROD: return launch<T, Prod<T, W>>(d, a, b, n, s);
    case DPC_OP_MIN: return launch<T, Min<T, W>>(d, a, b, n, s);
    case DPC_OP_MAX: return launch<T, Max<T, W>>(d, a, b, n, s);
    case DPC_OP_LAND: return launch<T, Land<T, W>>(d, a, b, n, s);
    case DPC_OP_LOR: return launch<T, Lor<T, W>>(d, a, b, n, s);
    case DPC_OP_LXOR: return launch<T, Lxor<T, W>>(d, a, b, n, s);
    case DPC_OP_BAND: return launch<T, Band<T, W>>(d, a, b, n, s);
    case DPC_OP_BOR: return launch<T, Bor<T, W>>(d, a, b, n, s);
    case DPC_OP_BXOR: return launch<T, Bxor<T, W>>(d, a, b, n, s);
    default: return DPC_CUDA_UNSUPPORTED;
    }
}

template <class T>
static int float_ops(int op, void *d, const void *a, const void *b, size_t n, cudaStream_t s)
{
    switch (op) {
    case DPC_OP_SUM: return launch<T, Sum<T, T>>(d, a, b, n, s);
    case DPC_OP_PROD: return launch<T, Prod<T, T>>(d, a, b, n, s);
    case DPC_OP_MIN: return launch<T, Min<T, T>>(d, a, b, n, s);
    case DPC_OP_MAX: return launch<T, Max<T, T>>(d, a, b, n, s);
    default: return DPC_CUDA_UNSUPPORTED;
    }
}

template <class T>
static int complex_ops(int op, void *d, const void *a, const void *b, size_t n, cudaStream_t s)
{
    switch (op) {
    case DPC_OP_SUM: return launch<T, ComplexSum<T>>(d, a, b, n, s);
    case DPC_OP_PROD: return launch<T, ComplexProd<T>>(d, a, b, n, s);
    default: return DPC_CUDA_UNSUPPORTED;
    }
}

template <class T>
static int pair_ops(int op, void *d, const void *a, const void *b, size_t n, cudaStream_t s)
{
    switch (op) {
    case DPC_OP_MINLOC: return launch<T, MinLoc<T>>(d, a, b, n, s);
    case DPC_OP_MAXLOC: return launch<T, MaxLoc<T>>(d, a, b, n, s);
    default: return DPC_CUDA_UNSUPPORTED;
    }
}

extern "C" int dpc_cuda_reduce_launch(void *d, const void *a, const void *b, size_t n, int dt,
                                      int op, void *stream)
{
    cudaStream_t s = (cudaStream_t)stream;
    switch (dt) {
    case DPC_INT8: return int_ops<int8_t, unsigned>(op, d, a, b, n, s);
    case DPC_UINT8: return int_ops<uint8_t, unsigned>(op, d, a, b, n, s);
    case DPC_INT16: return int_ops<int16_t, unsigned>(op, d, a, b, n, s);
    case DPC_UINT16: return int_ops<uint16_t, unsigned>(op, d, a, b, n, s);
    case DPC_INT32: return int_ops<int32_t, uint32_t>(op, d, a, b, n, s);
    case DPC_UINT32: return int_ops<uint32_t, uint32_t>(op, d, a, b, n, s);
    case DPC_INT64: return int_ops<int64_t, uint64_t>(op, d, a, b, n, s);
    case DPC_UINT64: return int_ops<uint64_t, uint64_t>(op, d, a, b, n, s);
    case DPC_FLOAT: return float_ops<float>(op, d, a, b, n, s);
    case DPC_DOUBLE: return float_ops<double>(op, d, a, b, n, s);
    case DPC_FLOAT16:
        switch (op) {
        case DPC_OP_SUM: return launch<uint16_t, HalfSum>(d, a, b, n, s);
        case DPC_OP_PROD: return launch<uint16_t, HalfProd>(d, a, b, n, s);
        case DPC_OP_MIN: return launch<uint16_t, HalfMin>(d, a, b, n, s);
        case DPC_OP_MAX: return launch<uint16_t, HalfMax>(d, a, b, n, s);
        default: return DPC_CUDA_UNSUPPORTED;
        }
    case DPC_BFLOAT16:
        switch (op) {
        case DPC_OP_SUM: return launch<uint16_t, Bf16Sum>(d, a, b, n, s);
        case DPC_OP_PROD: return launch<uint16_t, Bf16Prod>(d, a, b, n, s);
        case DPC_OP_MIN: return launch<uint16_t, Bf16Min>(d, a, b, n, s);
        case DPC_OP_MAX: return launch<uint16_t, Bf16Max>(d, a, b, n, s);
        default: return DPC_CUDA_UNSUPPORTED;
        }
    case DPC_BOOL:
        switch (op) {
        case DPC_OP_LAND: return launch<bool, BoolLand>(d, a, b, n, s);
        case DPC_OP_LOR: return launch<bool, BoolLor>(d, a, b, n, s);
        case DPC_OP_LXOR: return launch<bool, BoolLxor>(d, a, b, n, s);
        default: return DPC_CUDA_UNSUPPORTED;
        }
    case DPC_BYTE:
        switch (op) {
        case DPC_OP_BAND: return launch<uint8_t, Band<uint8_t, unsigned>>(d, a, b, n, s);
        case DPC_OP_BOR: return launch<uint8_t, Bor<uint8_t, unsigned>>(d, a, b, n, s);
        case DPC_OP_BXOR: return launch<uint8_t, Bxor<uint8_t, unsigned>>(d, a, b, n, s);
        default: return DPC_CUDA_UNSUPPORTED;
        }
    case DPC_FLOAT_INT: return pair_ops<dpc_float_int_t>(op, d, a, b, n, s);
    case DPC_DOUBLE_INT: return pair_ops<dpc_double_int_t>(op, d, a, b, n, s);
    case DPC_LONG_INT: return pair_ops<dpc_long_int_t>(op, d, a, b, n, s);
    case DPC_2INT: return pair_ops<dpc_2int_t>(op, d, a, b, n, s);
    case DPC_SHORT_INT: return pair_ops<dpc_short_int_t>(op, d, a, b, n, s);
    case DPC_COMPLEX_FLOAT: return complex_ops<dpc_complex_float_t>(op, d, a, b, n, s);
    case DPC_COMPLEX_DOUBLE: return complex_ops<dpc_complex_double_t>(op, d, a, b, n, s);
    default: return DPC_CUDA_UNSUPPORTED;   /* long double and its pair */
    }
}
