/* goshmem device API: atomic memory operations on symmetric objects.
 *
 * Every AMO is atomic with respect to all other AMOs on the same object
 * from any PE (and any thread), and unordered with respect to other memory
 * operations (relaxed): use goshmem_fence/quiet to order it, as OpenSHMEM
 * specifies. Fetching forms return the value before the operation.
 * CUDA: atom.relaxed.{sys,gpu} on the peer's address (red.relaxed for the
 * non-fetching forms; fetch/set are ld/st.relaxed); .gpu only when all
 * peers share this GPU. Host: __atomic builtins, relaxed.
 * Ref: OpenSHMEM 1.5 §9.7 (memory ordering: AMOs are unordered).
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_AMO_H
#define GOSHMEM_AMO_H

#include "ordering.h"
#include "remote.h"
#include "types.h"

/* fetch, set, swap: every AMO type (incl. float, double). */
#define GOSHMEMI_AMO_EXTENDED(NAME, TYPE, BITS)                                                                       \
    /* Atomically returns source on PE pe. */                                                                         \
    GOSHMEMI_FN TYPE goshmem_##NAME##_atomic_fetch(const TYPE *source, int pe)                                        \
    {                                                                                                                 \
        return goshmemi_from_bits_##NAME(goshmemi_amo_at_u##BITS(GOSHMEMI_AMO_FETCH, source, pe, 0, 0, 1));                                 \
    }                                                                                                                 \
    /* Atomically sets dest on PE pe to value. */                                                                     \
    GOSHMEMI_FN void goshmem_##NAME##_atomic_set(TYPE *dest, TYPE value, int pe)                                      \
    {                                                                                                                 \
        (void)goshmemi_amo_at_u##BITS(GOSHMEMI_AMO_SET, dest, pe, goshmemi_to_bits_##NAME(value), 0, 0);                          \
    }                                                                                                                 \
    /* Atomically replaces dest on PE pe with value; returns the old value. */                                        \
    GOSHMEMI_FN TYPE goshmem_##NAME##_atomic_swap(TYPE *dest, TYPE value, int pe)                                     \
    {                                                                                                                 \
        return goshmemi_from_bits_##NAME(goshmemi_amo_at_u##BITS(GOSHMEMI_AMO_SWAP, dest, pe,                         \
                                                                 goshmemi_to_bits_##NAME(value), 0, 1));                                 \
    }

/* fetch_add, add, fetch_inc, inc, compare_swap: integer AMO types. */
#define GOSHMEMI_AMO_STANDARD(NAME, TYPE, BITS)                                                                       \
    GOSHMEMI_AMO_EXTENDED(NAME, TYPE, BITS)                                                                           \
    /* Atomically: if dest on PE pe == cond, dest = value. Returns the old value. */                                  \
    GOSHMEMI_FN TYPE goshmem_##NAME##_atomic_compare_swap(TYPE *dest, TYPE cond, TYPE value, int pe)                  \
    {                                                                                                                 \
        return (TYPE)goshmemi_amo_at_u##BITS(GOSHMEMI_AMO_CSWAP, dest, pe, (uint##BITS##_t)value,             \
                                             (uint##BITS##_t)cond, 1);         \
    }                                                                                                                 \
    /* Atomically adds value to dest on PE pe; returns the old value. */                                              \
    GOSHMEMI_FN TYPE goshmem_##NAME##_atomic_fetch_add(TYPE *dest, TYPE value, int pe)                                \
    {                                                                                                                 \
        return (TYPE)goshmemi_amo_at_u##BITS(GOSHMEMI_AMO_ADD, dest, pe, (uint##BITS##_t)value, 0, 1);                            \
    }                                                                                                                 \
    /* Atomically adds value to dest on PE pe. */                                                                     \
    GOSHMEMI_FN void goshmem_##NAME##_atomic_add(TYPE *dest, TYPE value, int pe)                                      \
    {                                                                                                                 \
        (void)goshmemi_amo_at_u##BITS(GOSHMEMI_AMO_ADD, dest, pe, (uint##BITS##_t)value, 0, 0);                                                                   \
    }                                                                                                                 \
    /* Atomically increments dest on PE pe; returns the old value. */                                                 \
    GOSHMEMI_FN TYPE goshmem_##NAME##_atomic_fetch_inc(TYPE *dest, int pe)                                            \
    {                                                                                                                 \
        return goshmem_##NAME##_atomic_fetch_add(dest, (TYPE)1, pe);                                                  \
    }                                                                                                                 \
    /* Atomically increments dest on PE pe. */                                                                        \
    GOSHMEMI_FN void goshmem_##NAME##_atomic_inc(TYPE *dest, int pe) { goshmem_##NAME##_atomic_add(dest, (TYPE)1, pe); }

/* fetch_and/or/xor and and/or/xor: bitwise AMO types. */
#define GOSHMEMI_AMO_BITWISE_OP(NAME, TYPE, BITS, OP, OPC)                                                            \
    /* Atomically dest on PE pe OP= value (OP: _and, _or, _xor); returns the old value. */                            \
    GOSHMEMI_FN TYPE goshmem_##NAME##_atomic_fetch##OP(TYPE *dest, TYPE value, int pe)                                \
    {                                                                                                                 \
        return (TYPE)goshmemi_amo_at_u##BITS(OPC, dest, pe, (uint##BITS##_t)value, 0, 1);                                                      \
    }                                                                                                                 \
    /* Atomically dest on PE pe OP= value. */                                                                         \
    GOSHMEMI_FN void goshmem_##NAME##_atomic##OP(TYPE *dest, TYPE value, int pe)                                      \
    {                                                                                                                 \
        (void)goshmemi_amo_at_u##BITS(OPC, dest, pe, (uint##BITS##_t)value, 0, 0);                                                                   \
    }
#define GOSHMEMI_AMO_BITWISE(NAME, TYPE, BITS)                                                                        \
    GOSHMEMI_AMO_BITWISE_OP(NAME, TYPE, BITS, _and, GOSHMEMI_AMO_AND)                                                 \
    GOSHMEMI_AMO_BITWISE_OP(NAME, TYPE, BITS, _or, GOSHMEMI_AMO_OR)                                                   \
    GOSHMEMI_AMO_BITWISE_OP(NAME, TYPE, BITS, _xor, GOSHMEMI_AMO_XOR)

GOSHMEMI_FOR_AMO_STANDARD_TYPES(GOSHMEMI_AMO_STANDARD)
GOSHMEMI_FOR_AMO_EXTENDED_ONLY_TYPES(GOSHMEMI_AMO_EXTENDED)
GOSHMEMI_FOR_AMO_BITWISE_TYPES(GOSHMEMI_AMO_BITWISE)
#undef GOSHMEMI_AMO_EXTENDED
#undef GOSHMEMI_AMO_STANDARD
#undef GOSHMEMI_AMO_BITWISE
#undef GOSHMEMI_AMO_BITWISE_OP

#endif /* GOSHMEM_AMO_H */
