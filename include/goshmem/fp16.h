/* goshmem device API: the 16-bit floating-point element types.
 *
 *   goshmem_half_t      IEEE 754 binary16: CUDA's __half (cuda_fp16.h), NVSHMEM's `half`
 *   goshmem_bfloat16_t  bfloat16 (the top 16 bits of a binary32): CUDA's __nv_bfloat16
 *                       (cuda_bf16.h), NVSHMEM's `bfloat16` type name
 *
 * Under nvcc they ARE CUDA's types, so kernels pass their own __half /
 * __nv_bfloat16 arrays to goshmem_half_* / goshmem_bfloat16_* calls. In host
 * mode (gcc/g++) they are stand-in structs holding the 16-bit pattern, with
 * the same conversions, so the device code that uses them compiles and is
 * tested on the CPU:
 *   goshmemi_half_to_float, goshmemi_float_to_half,
 *   goshmemi_bfloat16_to_float, goshmemi_float_to_bfloat16
 * float -> 16 bit rounds to nearest, ties to even (CUDA: __float2half_rn,
 * __float2bfloat16_rn); 16 bit -> float is exact. NaN stays NaN (quiet),
 * infinities and signed zeros are kept, values beyond the format's range
 * round to infinity, and binary16 subnormals are produced and read.
 * Reductions on these types accumulate in float and round once (coll_data.h).
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_FP16_H
#define GOSHMEM_FP16_H

#include "defs.h"

#if GOSHMEMI_CUDA
#include <cuda_bf16.h>
#include <cuda_fp16.h>
typedef __half goshmem_half_t;
typedef __nv_bfloat16 goshmem_bfloat16_t;
/* (value, location) pairs of the maxloc reduction: CUDA's double2 */
typedef double2 goshmem_double2_t;

GOSHMEMI_FN float goshmemi_half_to_float(goshmem_half_t h) { return __half2float(h); }
GOSHMEMI_FN goshmem_half_t goshmemi_float_to_half(float f) { return __float2half_rn(f); }
GOSHMEMI_FN float goshmemi_bfloat16_to_float(goshmem_bfloat16_t h) { return __bfloat162float(h); }
GOSHMEMI_FN goshmem_bfloat16_t goshmemi_float_to_bfloat16(float f) { return __float2bfloat16_rn(f); }
#else
/* Host stand-ins: 2 bytes, 2-byte aligned, like CUDA's types. */
typedef struct goshmem_half {
    uint16_t bits;
} goshmem_half_t;
typedef struct goshmem_bfloat16 {
    uint16_t bits;
} goshmem_bfloat16_t;
/* CUDA's double2: 16 bytes, 16-byte aligned */
typedef struct __attribute__((aligned(16))) goshmem_double2 {
    double x, y;
} goshmem_double2_t;

GOSHMEMI_FN uint32_t goshmemi_f32_bits(float f)
{
    uint32_t x;
    __builtin_memcpy(&x, &f, 4);
    return x;
}
GOSHMEMI_FN float goshmemi_f32_from_bits(uint32_t x)
{
    float f;
    __builtin_memcpy(&f, &x, 4);
    return f;
}

/* binary16 -> binary32, exact. */
GOSHMEMI_FN float goshmemi_half_to_float(goshmem_half_t h)
{
    uint32_t sign = (uint32_t)(h.bits & 0x8000u) << 16, e = (h.bits >> 10) & 0x1fu, m = h.bits & 0x3ffu;
    if (e == 0) { /* zero or subnormal: m * 2^-24, exact in binary32 */
        float v = (float)m * 5.9604644775390625e-08f;
        return goshmemi_f32_from_bits(goshmemi_f32_bits(v) | sign);
    }
    if (e == 31) return goshmemi_f32_from_bits(sign | 0x7f800000u | (m << 13)); /* inf, NaN (payload kept) */
    return goshmemi_f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

/* binary32 -> binary16, round to nearest even. */
GOSHMEMI_FN goshmem_half_t goshmemi_float_to_half(float f)
{
    uint32_t x = goshmemi_f32_bits(f), ax = x & 0x7fffffffu;
    goshmem_half_t h;
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
    if (ax >= 0x7f800000u) { /* inf or NaN (NaN stays a quiet NaN) */
        h.bits = (uint16_t)(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u | ((ax >> 13) & 0x3ffu) : 0u));
        return h;
    }
    if (ax >= 0x477ff000u) { /* >= 65520: rounds to infinity */
        h.bits = (uint16_t)(sign | 0x7c00u);
        return h;
    }
    uint32_t e = ax >> 23;
    if (e < 113) { /* below 2^-14: a subnormal (or zero) of binary16, unit 2^-24 */
        uint32_t shift = 126 - e;
        if (shift > 24) {
            h.bits = sign;
            return h;
        }
        uint32_t m = (ax & 0x7fffffu) | 0x800000u, q = m >> shift, r = m & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (r > half || (r == half && (q & 1u))) q++;
        h.bits = (uint16_t)(sign | q);
        return h;
    }
    uint32_t q = ((e - 112) << 10) | ((ax >> 13) & 0x3ffu), r = ax & 0x1fffu;
    if (r > 0x1000u || (r == 0x1000u && (q & 1u))) q++; /* a carry into the exponent is right */
    h.bits = (uint16_t)(sign | q);
    return h;
}

/* bfloat16 -> binary32, exact. */
GOSHMEMI_FN float goshmemi_bfloat16_to_float(goshmem_bfloat16_t h) { return goshmemi_f32_from_bits((uint32_t)h.bits << 16); }

/* binary32 -> bfloat16, round to nearest even. */
GOSHMEMI_FN goshmem_bfloat16_t goshmemi_float_to_bfloat16(float f)
{
    uint32_t x = goshmemi_f32_bits(f);
    goshmem_bfloat16_t h;
    if ((x & 0x7fffffffu) > 0x7f800000u)
        h.bits = (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
    else
        h.bits = (uint16_t)((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
    return h;
}
#endif

#endif /* GOSHMEM_FP16_H */
