/* float16 and bfloat16 <-> float conversions, branch-free so the reduction
 * loops that use them still vectorize. Rounding is to nearest, ties to even,
 * as IEEE 754 prescribes; NaNs stay NaNs (quiet), infinities stay infinite. */
#ifndef DPC_HALF_H
#define DPC_HALF_H

#include <stdint.h>
#include <string.h>

/* The CUDA kernels use these very functions, so a reduction gives the same
 * bits on the device as on the host (ranks may mix the two). */
#ifdef __CUDACC__
#define DPC_HD __host__ __device__
#else
#define DPC_HD
#endif

DPC_HD static inline uint32_t dpc_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
DPC_HD static inline float dpc_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

DPC_HD static inline float dpc_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    /* Placing the 15 exponent+mantissa bits at the top of a float's field
     * and multiplying by 2^112 re-biases the exponent (15 -> 127) and turns
     * half subnormals into the right normal floats, exactly. */
    uint32_t scaled = dpc_f2u(dpc_u2f(em << 13) * 0x1p112f);
    uint32_t special = (em << 13) | 0x7f800000u; /* inf, NaN keep payload */
    return dpc_u2f((em >= 0x7c00u ? special : scaled) | sign);
}

DPC_HD static inline uint16_t dpc_float_to_half(float f)
{
    uint32_t u = dpc_f2u(f);
    uint32_t sign = u & 0x80000000u;
    uint32_t a = u ^ sign;
    /* overflow to inf; NaN to a quiet NaN */
    uint32_t big = a > 0x7f800000u ? 0x7e00u : 0x7c00u;
    /* results in half's subnormal range: adding 0.5 lets the FPU do the
     * shift and the round-to-nearest-even; the low bits are the answer */
    uint32_t small = dpc_f2u(dpc_u2f(a) + 0.5f) - 0x3f000000u;
    /* normal range: re-bias and round to nearest even by hand */
    uint32_t odd = (a >> 13) & 1u;
    uint32_t normal = (a + 0xc8000000u + 0xfffu + odd) >> 13;
    uint32_t r = a >= 0x47800000u ? big : (a < 0x38800000u ? small : normal);
    return (uint16_t)(r | (sign >> 16));
}

DPC_HD static inline float dpc_bf16_to_float(uint16_t b)
{
    return dpc_u2f((uint32_t)b << 16);
}

DPC_HD static inline uint16_t dpc_float_to_bf16(float f)
{
    uint32_t u = dpc_f2u(f);
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

#endif
