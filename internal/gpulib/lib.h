/* The ABI between package shmem (through internal/gpulib) and lib.cu
 * (gpulib/, a module of its own): the kernels' one argument and the codes
 * Go passes. gpulib.go mirrors every value; gpulib_test.go checks them
 * against this file. */
#ifndef GOSHMEMI_LIB_H
#define GOSHMEMI_LIB_H

#include <stdint.h>

/* Version of this interface (and of the kernels' names and arguments):
 * raise it with any change to them. The gpulib module registers its image
 * with the version it was built for; internal/gpulib refuses another. */
#define GOSHMEMI_LIB_ABI 1

/* Threads of the one block every library kernel runs as. */
#define GOSHMEMI_LIB_THREADS 1024

#define GOSHMEMI_LIB_NARGS 8
typedef struct goshmemi_lib_args {
    uint64_t v[GOSHMEMI_LIB_NARGS];
} goshmemi_lib_args_t;

/* Comparisons of goshmemi_lib_signal_wait, in shmem.Cmp's order. */
#define GOSHMEMI_LIB_CMP_EQ 0
#define GOSHMEMI_LIB_CMP_NE 1
#define GOSHMEMI_LIB_CMP_GT 2
#define GOSHMEMI_LIB_CMP_GE 3
#define GOSHMEMI_LIB_CMP_LT 4
#define GOSHMEMI_LIB_CMP_LE 5

/* Signal operations of goshmemi_lib_put_signal. */
#define GOSHMEMI_LIB_SIGNAL_SET 0
#define GOSHMEMI_LIB_SIGNAL_ADD 1

/* Reduction operators, in shmem.Op's order. */
#define GOSHMEMI_LIB_OP_SUM 0
#define GOSHMEMI_LIB_OP_PROD 1
#define GOSHMEMI_LIB_OP_MIN 2
#define GOSHMEMI_LIB_OP_MAX 3
#define GOSHMEMI_LIB_OP_AND 4
#define GOSHMEMI_LIB_OP_OR 5
#define GOSHMEMI_LIB_OP_XOR 6

/* What goshmemi_lib_move_part moves. */
#define GOSHMEMI_LIB_MOVE_BROADCAST 0
#define GOSHMEMI_LIB_MOVE_FCOLLECT 1
#define GOSHMEMI_LIB_MOVE_ALLTOALL 2

/* The argument word of the grid reductions (goshmemi_lib_reduce_part_<T>)
 * that makes one launch the whole collective: nonzero, the kernel runs the
 * team syncs before and after its data step itself (its blocks must be
 * resident together with every member's); zero, Go enqueues them as Sync
 * kernels around it. The movers' fused form is its own kernel
 * (goshmemi_lib_move_fused). */
#define GOSHMEMI_LIB_ARG_FUSED 6

#endif /* GOSHMEMI_LIB_H */
