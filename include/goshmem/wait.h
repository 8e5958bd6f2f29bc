/* goshmem device API: point-to-point synchronization on local symmetric
 * variables (wait_until, wait_until_all/any/some, their _vector forms, and
 * test, test_all/any/some).
 *
 * Acquire semantics: each poll is an acquire load at the chosen scope, so it
 * reads memory (never a register or a stale L1 line), and the poll that
 * sees the satisfying value is itself the acquire: every store the writer
 * released before that value (put + fence + p, put_signal, quiet +
 * signal_op) is visible to the caller afterwards. No fence follows the
 * loop: a fence.acq_rel there is a MEMBAR.ALL, while an acquire load only
 * invalidates L1 (goshmemi_acquire_load_u*; diag_pp_* rows, docs/gpu.md).
 * CUDA: ld.acquire.{sys,gpu} loop.
 * Ref: OpenSHMEM 1.5 §9.10 (point-to-point synchronization routines).
 *
 * status arrays (may be NULL): element i takes part when status[i] == 0.
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_WAIT_H
#define GOSHMEM_WAIT_H

#include "ordering.h"
#include "types.h"

#define GOSHMEMI_CMP_HOLDS(a, cmp, b)                                                                                 \
    ((cmp) == GOSHMEM_CMP_EQ   ? (a) == (b)                                                                           \
     : (cmp) == GOSHMEM_CMP_NE ? (a) != (b)                                                                           \
     : (cmp) == GOSHMEM_CMP_GT ? (a) > (b)                                                                            \
     : (cmp) == GOSHMEM_CMP_GE ? (a) >= (b)                                                                           \
     : (cmp) == GOSHMEM_CMP_LT ? (a) < (b)                                                                            \
                               : (a) <= (b))

/* Traps on a comparison operator outside GOSHMEM_CMP_* (it would never hold). */
GOSHMEMI_FN void goshmemi_check_cmp(int cmp)
{
    if (GOSHMEMI_UNLIKELY((unsigned)cmp >= GOSHMEM_CMP_SENTINEL))
        goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_INVALID_ARG, GOSHMEMI_ERROR_INFO(cmp, 0),
                      "comparison operator is not one of GOSHMEM_CMP_*");
}

#define GOSHMEMI_WAIT_DEF(NAME, TYPE, BITS)                                                                           \
    /* One poll: the current value of *ivar (acquire load, fresh from memory). */                                    \
    GOSHMEMI_FN TYPE goshmemi_poll_##NAME(const TYPE *ivar, int sys)                                                  \
    {                                                                                                                 \
        return goshmemi_from_bits_##NAME(goshmemi_acquire_load_u##BITS(ivar, sys));                                   \
    }                                                                                                                 \
    /* Waits until (*ivar cmp cmp_value); acquire. Returns the satisfying value. */                                   \
    GOSHMEMI_FN TYPE goshmemi_wait_##NAME(TYPE *ivar, int cmp, TYPE cmp_value)                                        \
    {                                                                                                                 \
        int sys = goshmemi_sys_scope();                                                                               \
        TYPE v;                                                                                                       \
        goshmemi_check_cmp(cmp);                                                                                      \
        while (v = goshmemi_poll_##NAME(ivar, sys), !GOSHMEMI_CMP_HOLDS(v, cmp, cmp_value))                           \
            goshmemi_poll_pause();                                                                                    \
        return v;                                                                                                     \
    }                                                                                                                 \
    /* Blocks until the local *ivar satisfies (*ivar cmp cmp_value); acquire. */                                      \
    GOSHMEMI_FN void goshmem_##NAME##_wait_until(TYPE *ivar, int cmp, TYPE cmp_value)                                 \
    {                                                                                                                 \
        (void)goshmemi_wait_##NAME(ivar, cmp, cmp_value);                                                             \
    }                                                                                                                 \
    /* Returns 1 when (*ivar cmp cmp_value) holds now (then with acquire), else 0. */                                 \
    GOSHMEMI_FN int goshmem_##NAME##_test(TYPE *ivar, int cmp, TYPE cmp_value)                                        \
    {                                                                                                                 \
        int sys = goshmemi_sys_scope();                                                                               \
        TYPE v;                                                                                                       \
        goshmemi_check_cmp(cmp);                                                                                      \
        v = goshmemi_poll_##NAME(ivar, sys);                                                                          \
        if (!GOSHMEMI_CMP_HOLDS(v, cmp, cmp_value)) return 0;                                                         \
        return 1;                                                                                                     \
    }                                                                                                                 \
    /* Internal: cmp_values NULL -> every element compares with cmp_value. */                                         \
    GOSHMEMI_FN int goshmemi_holds_##NAME(const TYPE *ivars, size_t i, int cmp, const TYPE *cmp_values,               \
                                          TYPE cmp_value, int sys)                                                    \
    {                                                                                                                 \
        TYPE v = goshmemi_poll_##NAME(&ivars[i], sys);                                                                \
        TYPE c = cmp_values ? cmp_values[i] : cmp_value;                                                              \
        return GOSHMEMI_CMP_HOLDS(v, cmp, c);                                                                         \
    }                                                                                                                 \
    GOSHMEMI_FN void goshmemi_wait_all_##NAME(TYPE *ivars, size_t nelems, const int *status, int cmp,                 \
                                              const TYPE *cmp_values, TYPE cmp_value)                                 \
    {                                                                                                                 \
        int sys = goshmemi_sys_scope();                                                                               \
        goshmemi_check_cmp(cmp);                                                                                      \
        for (size_t i = 0; i < nelems; i++) {                                                                         \
            if (status && status[i]) continue;                                                                        \
            while (!goshmemi_holds_##NAME(ivars, i, cmp, cmp_values, cmp_value, sys)) goshmemi_poll_pause();          \
        }                                                                                                             \
    }                                                                                                                 \
    /* One pass: index of the first satisfied element or SIZE_MAX. */                                                 \
    GOSHMEMI_FN size_t goshmemi_test_any_##NAME(TYPE *ivars, size_t nelems, const int *status, int cmp,               \
                                                const TYPE *cmp_values, TYPE cmp_value, int sys)                      \
    {                                                                                                                 \
        for (size_t i = 0; i < nelems; i++) {                                                                         \
            if (status && status[i]) continue;                                                                        \
            if (goshmemi_holds_##NAME(ivars, i, cmp, cmp_values, cmp_value, sys)) return i;                           \
        }                                                                                                             \
        return SIZE_MAX;                                                                                              \
    }                                                                                                                 \
    /* One pass: stores satisfied indices in indices[], returns how many. */                                          \
    GOSHMEMI_FN size_t goshmemi_test_some_##NAME(TYPE *ivars, size_t nelems, size_t *indices, const int *status,      \
                                                 int cmp, const TYPE *cmp_values, TYPE cmp_value, int sys)            \
    {                                                                                                                 \
        size_t n = 0;                                                                                                 \
        for (size_t i = 0; i < nelems; i++) {                                                                         \
            if (status && status[i]) continue;                                                                        \
            if (goshmemi_holds_##NAME(ivars, i, cmp, cmp_values, cmp_value, sys)) indices[n++] = i;                   \
        }                                                                                                             \
        return n;                                                                                                     \
    }                                                                                                                 \
    GOSHMEMI_FN int goshmemi_any_active_##NAME(size_t nelems, const int *status)                                      \
    {                                                                                                                 \
        for (size_t i = 0; i < nelems; i++)                                                                           \
            if (!status || !status[i]) return 1;                                                                      \
        return 0;                                                                                                     \
    }                                                                                                                 \
    GOSHMEMI_FN size_t goshmemi_wait_any_##NAME(TYPE *ivars, size_t nelems, const int *status, int cmp,               \
                                                const TYPE *cmp_values, TYPE cmp_value)                               \
    {                                                                                                                 \
        int sys = goshmemi_sys_scope();                                                                               \
        size_t r;                                                                                                     \
        goshmemi_check_cmp(cmp);                                                                                      \
        if (!goshmemi_any_active_##NAME(nelems, status)) return SIZE_MAX;                                             \
        while ((r = goshmemi_test_any_##NAME(ivars, nelems, status, cmp, cmp_values, cmp_value, sys)) == SIZE_MAX)    \
            goshmemi_poll_pause();                                                                                    \
        return r;                                                                                                     \
    }                                                                                                                 \
    GOSHMEMI_FN size_t goshmemi_wait_some_##NAME(TYPE *ivars, size_t nelems, size_t *indices, const int *status,      \
                                                 int cmp, const TYPE *cmp_values, TYPE cmp_value)                     \
    {                                                                                                                 \
        int sys = goshmemi_sys_scope();                                                                               \
        size_t n;                                                                                                     \
        goshmemi_check_cmp(cmp);                                                                                      \
        if (!goshmemi_any_active_##NAME(nelems, status)) return 0;                                                    \
        while ((n = goshmemi_test_some_##NAME(ivars, nelems, indices, status, cmp, cmp_values, cmp_value, sys)) == 0) \
            goshmemi_poll_pause();                                                                                    \
        return n;                                                                                                     \
    }                                                                                                                 \
    /* Blocks until every active ivars[i] satisfies (ivars[i] cmp cmp_value); acquire. */                             \
    GOSHMEMI_FN void goshmem_##NAME##_wait_until_all(TYPE *ivars, size_t nelems, const int *status, int cmp,          \
                                                     TYPE cmp_value)                                                  \
    {                                                                                                                 \
        goshmemi_wait_all_##NAME(ivars, nelems, status, cmp, NULL, cmp_value);                                        \
    }                                                                                                                 \
    /* Blocks until some active element satisfies; returns its index (SIZE_MAX if none is active); acquire. */        \
    GOSHMEMI_FN size_t goshmem_##NAME##_wait_until_any(TYPE *ivars, size_t nelems, const int *status, int cmp,        \
                                                       TYPE cmp_value)                                                \
    {                                                                                                                 \
        return goshmemi_wait_any_##NAME(ivars, nelems, status, cmp, NULL, cmp_value);                                 \
    }                                                                                                                 \
    /* Blocks until at least one active element satisfies; writes all satisfied indices seen in one pass to           \
     * indices[] and returns their count (0 if none is active); acquire. */                                           \
    GOSHMEMI_FN size_t goshmem_##NAME##_wait_until_some(TYPE *ivars, size_t nelems, size_t *indices,                  \
                                                        const int *status, int cmp, TYPE cmp_value)                   \
    {                                                                                                                 \
        return goshmemi_wait_some_##NAME(ivars, nelems, indices, status, cmp, NULL, cmp_value);                       \
    }                                                                                                                 \
    /* _vector forms: element i compares with cmp_values[i]. */                                                       \
    GOSHMEMI_FN void goshmem_##NAME##_wait_until_all_vector(TYPE *ivars, size_t nelems, const int *status, int cmp,   \
                                                            const TYPE *cmp_values)                                   \
    {                                                                                                                 \
        goshmemi_wait_all_##NAME(ivars, nelems, status, cmp, cmp_values, (TYPE)0);                                    \
    }                                                                                                                 \
    GOSHMEMI_FN size_t goshmem_##NAME##_wait_until_any_vector(TYPE *ivars, size_t nelems, const int *status,          \
                                                              int cmp, const TYPE *cmp_values)                        \
    {                                                                                                                 \
        return goshmemi_wait_any_##NAME(ivars, nelems, status, cmp, cmp_values, (TYPE)0);                             \
    }                                                                                                                 \
    GOSHMEMI_FN size_t goshmem_##NAME##_wait_until_some_vector(TYPE *ivars, size_t nelems, size_t *indices,           \
                                                               const int *status, int cmp, const TYPE *cmp_values)    \
    {                                                                                                                 \
        return goshmemi_wait_some_##NAME(ivars, nelems, indices, status, cmp, cmp_values, (TYPE)0);                   \
    }                                                                                                                 \
    /* 1 when every active element satisfies now (then with acquire). */                                              \
    GOSHMEMI_FN int goshmem_##NAME##_test_all(TYPE *ivars, size_t nelems, const int *status, int cmp, TYPE cmp_value) \
    {                                                                                                                 \
        int sys = goshmemi_sys_scope();                                                                               \
        goshmemi_check_cmp(cmp);                                                                                      \
        for (size_t i = 0; i < nelems; i++) {                                                                         \
            if (status && status[i]) continue;                                                                        \
            if (!goshmemi_holds_##NAME(ivars, i, cmp, NULL, cmp_value, sys)) return 0;                                \
        }                                                                                                             \
        return 1;                                                                                                     \
    }                                                                                                                 \
    /* Index of an active element that satisfies now (then with acquire), else SIZE_MAX. */                           \
    GOSHMEMI_FN size_t goshmem_##NAME##_test_any(TYPE *ivars, size_t nelems, const int *status, int cmp,              \
                                                 TYPE cmp_value)                                                      \
    {                                                                                                                 \
        int sys = goshmemi_sys_scope();                                                                               \
        size_t r;                                                                                                     \
        goshmemi_check_cmp(cmp);                                                                                      \
        r = goshmemi_test_any_##NAME(ivars, nelems, status, cmp, NULL, cmp_value, sys);                               \
        return r;                                                                                                     \
    }                                                                                                                 \
    /* Satisfied active indices now into indices[]; returns the count (acquire when > 0). */                          \
    GOSHMEMI_FN size_t goshmem_##NAME##_test_some(TYPE *ivars, size_t nelems, size_t *indices, const int *status,     \
                                                  int cmp, TYPE cmp_value)                                            \
    {                                                                                                                 \
        int sys = goshmemi_sys_scope();                                                                               \
        size_t n;                                                                                                     \
        goshmemi_check_cmp(cmp);                                                                                      \
        n = goshmemi_test_some_##NAME(ivars, nelems, indices, status, cmp, NULL, cmp_value, sys);                     \
        return n;                                                                                                     \
    }
GOSHMEMI_FOR_WAIT_TYPES(GOSHMEMI_WAIT_DEF)
#undef GOSHMEMI_WAIT_DEF

#endif /* GOSHMEM_WAIT_H */
