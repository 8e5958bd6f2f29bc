/* goshmem device API: the type tables the typed calls are generated from.
 * X(NAME, TYPE, BITS): goshmem_NAME_put etc. operate on TYPE, moved as a
 * BITS-wide word where atomicity matters (p, g, wait, atomics).
 * Mirrors NVSHMEM's NVSHMEMI_REPT_FOR_*_TYPES (OpenSHMEM 1.5 Tables 5-7, 10).
 * Assumes an LP64 ABI (Linux x86-64 / aarch64 host and CUDA device).
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_TYPES_H
#define GOSHMEM_TYPES_H

#include "defs.h"
#include "fp16.h"

#if defined(__cplusplus)
static_assert(sizeof(long) == 8 && sizeof(size_t) == 8 && sizeof(ptrdiff_t) == 8 && sizeof(long long) == 8,
              "goshmem device API assumes LP64");
#else
_Static_assert(sizeof(long) == 8 && sizeof(size_t) == 8 && sizeof(ptrdiff_t) == 8 && sizeof(long long) == 8,
               "goshmem device API assumes LP64");
#endif

/* RMA (put/get/p/g, _nbi, _warp/_block, put_signal). Ref: OpenSHMEM 1.5 Table 5. */
#define GOSHMEMI_FOR_RMA_TYPES(X)                                                                                     \
    X(float, float, 32)                                                                                               \
    X(double, double, 64)                                                                                             \
    X(char, char, 8)                                                                                                  \
    X(schar, signed char, 8)                                                                                          \
    X(short, short, 16)                                                                                               \
    X(int, int, 32)                                                                                                   \
    X(long, long, 64)                                                                                                 \
    X(longlong, long long, 64)                                                                                        \
    X(uchar, unsigned char, 8)                                                                                        \
    X(ushort, unsigned short, 16)                                                                                     \
    X(uint, unsigned int, 32)                                                                                         \
    X(ulong, unsigned long, 64)                                                                                       \
    X(ulonglong, unsigned long long, 64)                                                                              \
    X(int8, int8_t, 8)                                                                                                \
    X(int16, int16_t, 16)                                                                                             \
    X(int32, int32_t, 32)                                                                                             \
    X(int64, int64_t, 64)                                                                                             \
    X(uint8, uint8_t, 8)                                                                                              \
    X(uint16, uint16_t, 16)                                                                                           \
    X(uint32, uint32_t, 32)                                                                                           \
    X(uint64, uint64_t, 64)                                                                                           \
    X(size, size_t, 64)                                                                                               \
    X(ptrdiff, ptrdiff_t, 64)

/* The 16-bit floating-point RMA types (fp16.h), NVSHMEM's `half` and
 * `bfloat16` (NVSHMEMI_REPT_FOR_STANDARD_RMA_TYPES): typed put/get/p/g and
 * put_signal. A list of its own so code that does arithmetic or compares
 * elements of GOSHMEMI_FOR_RMA_TYPES keeps working on plain C types. */
#define GOSHMEMI_FOR_RMA_FLOAT16_TYPES(X)                                                                             \
    X(half, goshmem_half_t, 16)                                                                                       \
    X(bfloat16, goshmem_bfloat16_t, 16)

/* NVSHMEM's whole RMA type list (broadcast, fcollect, alltoall). */
#define GOSHMEMI_FOR_STANDARD_RMA_TYPES(X) GOSHMEMI_FOR_RMA_FLOAT16_TYPES(X) GOSHMEMI_FOR_RMA_TYPES(X)

/* Point-to-point synchronization (wait_until*, test*). Ref: OpenSHMEM 1.5 Table 10. */
#define GOSHMEMI_FOR_WAIT_TYPES(X)                                                                                    \
    X(short, short, 16)                                                                                               \
    X(int, int, 32)                                                                                                   \
    X(long, long, 64)                                                                                                 \
    X(longlong, long long, 64)                                                                                        \
    X(ushort, unsigned short, 16)                                                                                     \
    X(uint, unsigned int, 32)                                                                                         \
    X(ulong, unsigned long, 64)                                                                                       \
    X(ulonglong, unsigned long long, 64)                                                                              \
    X(int32, int32_t, 32)                                                                                             \
    X(int64, int64_t, 64)                                                                                             \
    X(uint32, uint32_t, 32)                                                                                           \
    X(uint64, uint64_t, 64)                                                                                           \
    X(size, size_t, 64)                                                                                               \
    X(ptrdiff, ptrdiff_t, 64)

/* Standard AMOs (fetch_add, add, fetch_inc, inc, compare_swap) and the
 * extended ones (fetch, set, swap). Ref: OpenSHMEM 1.5 Table 6. */
#define GOSHMEMI_FOR_AMO_STANDARD_TYPES(X)                                                                            \
    X(int, int, 32)                                                                                                   \
    X(long, long, 64)                                                                                                 \
    X(longlong, long long, 64)                                                                                        \
    X(uint, unsigned int, 32)                                                                                         \
    X(ulong, unsigned long, 64)                                                                                       \
    X(ulonglong, unsigned long long, 64)                                                                              \
    X(int32, int32_t, 32)                                                                                             \
    X(int64, int64_t, 64)                                                                                             \
    X(uint32, uint32_t, 32)                                                                                           \
    X(uint64, uint64_t, 64)                                                                                           \
    X(size, size_t, 64)                                                                                               \
    X(ptrdiff, ptrdiff_t, 64)

/* Extended-only AMO types (fetch, set, swap). */
#define GOSHMEMI_FOR_AMO_EXTENDED_ONLY_TYPES(X)                                                                       \
    X(float, float, 32)                                                                                               \
    X(double, double, 64)

/* Bitwise AMOs (fetch_and/or/xor, and/or/xor). Ref: OpenSHMEM 1.5 Table 7. */
#define GOSHMEMI_FOR_AMO_BITWISE_TYPES(X)                                                                             \
    X(uint, unsigned int, 32)                                                                                         \
    X(ulong, unsigned long, 64)                                                                                       \
    X(ulonglong, unsigned long long, 64)                                                                              \
    X(int32, int32_t, 32)                                                                                             \
    X(int64, int64_t, 64)                                                                                             \
    X(uint32, uint32_t, 32)                                                                                           \
    X(uint64, uint64_t, 64)

/* Sized RMA: goshmem_put8/16/32/64/128 etc. (OpenSHMEM 1.5 Table 8). */
#define GOSHMEMI_FOR_SIZES(X) X(8, 1) X(16, 2) X(32, 4) X(64, 8) X(128, 16)

/* Bit-exact conversion between TYPE and its BITS-wide word (memcpy folds to
 * a register move on every compiler here). */
#define GOSHMEMI_BITS_CONV(NAME, TYPE, BITS)                                                                          \
    GOSHMEMI_FN uint##BITS##_t goshmemi_to_bits_##NAME(TYPE v)                                                        \
    {                                                                                                                 \
        uint##BITS##_t w;                                                                                             \
        __builtin_memcpy(&w, &v, sizeof w);                                                                           \
        return w;                                                                                                     \
    }                                                                                                                 \
    GOSHMEMI_FN TYPE goshmemi_from_bits_##NAME(uint##BITS##_t w)                                                      \
    {                                                                                                                 \
        TYPE v;                                                                                                       \
        __builtin_memcpy(&v, &w, sizeof v);                                                                           \
        return v;                                                                                                     \
    }
GOSHMEMI_FOR_RMA_TYPES(GOSHMEMI_BITS_CONV)
GOSHMEMI_FOR_RMA_FLOAT16_TYPES(GOSHMEMI_BITS_CONV)
#undef GOSHMEMI_BITS_CONV

#endif /* GOSHMEM_TYPES_H */
