/* goshmem device API: NVSHMEM's host API, declared (defined: only the
 * buffer registration, below).
 *
 * A goshmem program's host side is Go (package shmem): Init, Alloc,
 * LaunchCollective, the *OnStream calls. An NVSHMEM .cu file ported by
 * changing its include to <goshmem/nvshmem_compat.h> still has its host
 * code (main, nvshmem_init, nvshmem_malloc, nvshmemx_collective_launch,
 * the *_on_stream calls); these declarations let the whole file compile to
 * a fatbin (nvcc -fatbin), whose kernels a Go program loads with
 * shmem.LoadModule. Nothing defines them: a host object that calls one
 * fails to link, naming it. Their Go counterparts: nvshmem_malloc ->
 * shmem.AllocDevice, nvshmemx_collective_launch -> shmem.LaunchCollective,
 * nvshmemx_barrier_all_on_stream -> shmem.BarrierAllOnStream, ...
 *
 * Buffer registration is the exception: nvshmemx_buffer_register,
 * nvshmemx_buffer_unregister and nvshmemx_buffer_unregister_all are
 * defined by every goshmem program (package shmem exports them through
 * cgo), so C and C++ host code linked into the Go program calls them as
 * NVSHMEM's, local to the PE; they are declared for C as well (below).
 * In Go the same is shmem.RegisterDevice and Free of the Array it returns.
 * Kernels then use the registered address as the local side of their
 * puts and gets. goshmem ships no other C host function: its host runtime
 * is the Go package.
 *
 * The NVSHMEM calls that are host *and* device functions in NVSHMEM
 * (nvshmem_my_pe, nvshmem_barrier_all, nvshmem_ptr, the typed RMA, the
 * collectives) are not repeated here: nvshmem_compat.h defines them for
 * the device, and a fatbin compile does not check host code's calls to
 * them. Values of the NVSHMEM names below are NVSHMEM's (Ref: NVSHMEM 3.x
 * host/nvshmemx_api.h, non_abi/nvshmemx_error.h,
 * device_host_transport/nvshmem_constants.h); the structs keep only the
 * members ported code touches.
 *
 * CUDA C++ only, except the buffer registration (C and C++); define
 * GOSHMEM_NVSHMEM_NO_HOST_DECLS to leave all of them out. Included by
 * nvshmem_compat.h; C host code includes it alone.
 */
#ifndef GOSHMEM_NVSHMEM_HOST_H
#define GOSHMEM_NVSHMEM_HOST_H

#if !defined(GOSHMEM_NVSHMEM_NO_HOST_DECLS)
#include <stddef.h>
#ifdef __cplusplus
extern "C" {
#endif
/* Buffer registration, defined by every goshmem program (Go package shmem,
 * nvshmem_cgo.go) for the C and C++ code linked into it (cgo, or a library
 * that cgo links): nvshmemx_buffer_register(addr, length) is
 * shmem.RegisterDevice[byte](addr, length), nvshmemx_buffer_unregister(addr)
 * is Free of that array (addr: the address registered), and
 * nvshmemx_buffer_unregister_all frees every buffer registered this way.
 * They return 0 or an nvshmemx_status value (below, for CUDA C++:
 * 1 invalid value, 2 out of memory, 3 not supported, 7 internal: no live
 * Init, a driver failure) and log the reason (stderr, or
 * shmem.WithLogger's). Call them after shmem.Init, on any thread. */
int nvshmemx_buffer_register(void *addr, size_t length);
int nvshmemx_buffer_unregister(void *addr);
void nvshmemx_buffer_unregister_all(void);
#ifdef __cplusplus
}
#endif
#endif /* !GOSHMEM_NVSHMEM_NO_HOST_DECLS */

#if defined(__CUDACC__) && defined(__cplusplus) && !defined(GOSHMEM_NVSHMEM_NO_HOST_DECLS)
#include <cuda.h> /* CUmodule */
#include <cuda_runtime.h>

enum nvshmemx_status {
    NVSHMEMX_SUCCESS = 0,
    NVSHMEMX_ERROR_INVALID_VALUE,
    NVSHMEMX_ERROR_OUT_OF_MEMORY,
    NVSHMEMX_ERROR_NOT_SUPPORTED,
    NVSHMEMX_ERROR_SYMMETRY,
    NVSHMEMX_ERROR_GPU_NOT_SELECTED,
    NVSHMEMX_ERROR_COLLECTIVE_LAUNCH_FAILED,
    NVSHMEMX_ERROR_INTERNAL
};
enum nvshmemx_init_flags {
    NVSHMEMX_INIT_THREAD_PES = 1,
    NVSHMEMX_INIT_WITH_MPI_COMM = 1 << 1,
    NVSHMEMX_INIT_WITH_SHMEM = 1 << 2,
    NVSHMEMX_INIT_WITH_UNIQUEID = 1 << 3
};
enum nvshmemx_thread_support {
    NVSHMEM_THREAD_SINGLE = 0,
    NVSHMEM_THREAD_FUNNELED,
    NVSHMEM_THREAD_SERIALIZED,
    NVSHMEM_THREAD_MULTIPLE
};

typedef struct nvshmemx_uniqueid {
    int version;
    char internal[124];
} nvshmemx_uniqueid_t;
#define NVSHMEMX_UNIQUEID_INITIALIZER {}

typedef struct nvshmemx_init_attr {
    int version;
    void *mpi_comm; /* MPI_Comm * with NVSHMEMX_INIT_WITH_MPI_COMM */
    char args_[128];
} nvshmemx_init_attr_t;
#define NVSHMEMX_INIT_ATTR_INITIALIZER {}

typedef struct nvshmem_team_config {
    int num_contexts;
} nvshmem_team_config_t;

extern "C" {
/* setup */
void nvshmem_init(void);
int nvshmem_init_thread(int requested, int *provided);
void nvshmem_query_thread(int *provided);
void nvshmem_finalize(void);
int nvshmemx_init_attr(unsigned int flags, nvshmemx_init_attr_t *attr);
int nvshmemx_hostlib_init_attr(unsigned int flags, nvshmemx_init_attr_t *attr);
void nvshmemx_hostlib_finalize(void);
int nvshmemx_init_status(void);
int nvshmemx_set_attr_uniqueid_args(const int myrank, const int nranks, const nvshmemx_uniqueid_t *uniqueid,
                                    nvshmemx_init_attr_t *attr);
int nvshmemx_set_attr_mpi_comm_args(void *mpi_comm, nvshmemx_init_attr_t *attr);
int nvshmemx_get_uniqueid(nvshmemx_uniqueid_t *uniqueid);
int nvshmemx_cumodule_init(CUmodule module);
int nvshmemx_cumodule_finalize(CUmodule module);

/* memory */
void *nvshmem_malloc(size_t size);
void *nvshmem_calloc(size_t count, size_t size);
void *nvshmem_align(size_t alignment, size_t size);
void nvshmem_free(void *ptr);
/* nvshmemx_buffer_register, _unregister and _unregister_all: above, for C
 * too. In Go: shmem.RegisterDevice and Array.Free. */
void *nvshmemx_buffer_register_symmetric(void *buf_ptr, size_t size, int flags);
int nvshmemx_buffer_unregister_symmetric(void *mmap_ptr, size_t size);

/* teams */
int nvshmem_team_split_strided(nvshmem_team_t parent_team, int PE_start, int PE_stride, int PE_size,
                               const nvshmem_team_config_t *config, long config_mask, nvshmem_team_t *new_team);
int nvshmem_team_split_2d(nvshmem_team_t parent_team, int xrange, const nvshmem_team_config_t *xaxis_config,
                          long xaxis_mask, nvshmem_team_t *xaxis_team, const nvshmem_team_config_t *yaxis_config,
                          long yaxis_mask, nvshmem_team_t *yaxis_team);
void nvshmem_team_destroy(nvshmem_team_t team);
void nvshmem_team_get_config(nvshmem_team_t team, nvshmem_team_config_t *config);

/* launch */
int nvshmemx_collective_launch(const void *func, dim3 gridDims, dim3 blockDims, void **args, size_t sharedMem,
                               cudaStream_t stream);
int nvshmemx_collective_launch_query_gridsize(const void *func, dim3 blockDims, void **args, size_t sharedMem,
                                              int *gridsize);

/* stream-ordered */
void nvshmemx_quiet_on_stream(cudaStream_t stream);
void nvshmemx_barrier_all_on_stream(cudaStream_t stream);
int nvshmemx_barrier_on_stream(nvshmem_team_t team, cudaStream_t stream);
void nvshmemx_sync_all_on_stream(cudaStream_t stream);
int nvshmemx_team_sync_on_stream(nvshmem_team_t team, cudaStream_t stream);
void nvshmemx_putmem_on_stream(void *dest, const void *source, size_t bytes, int pe, cudaStream_t stream);
void nvshmemx_getmem_on_stream(void *dest, const void *source, size_t bytes, int pe, cudaStream_t stream);
void nvshmemx_putmem_nbi_on_stream(void *dest, const void *source, size_t bytes, int pe, cudaStream_t stream);
void nvshmemx_getmem_nbi_on_stream(void *dest, const void *source, size_t bytes, int pe, cudaStream_t stream);
void nvshmemx_putmem_signal_on_stream(void *dest, const void *source, size_t bytes, uint64_t *sig_addr,
                                      uint64_t signal, int sig_op, int pe, cudaStream_t stream);
void nvshmemx_putmem_signal_nbi_on_stream(void *dest, const void *source, size_t bytes, uint64_t *sig_addr,
                                          uint64_t signal, int sig_op, int pe, cudaStream_t stream);
void nvshmemx_signal_op_on_stream(uint64_t *sig_addr, uint64_t signal, int sig_op, int pe, cudaStream_t stream);
void nvshmemx_signal_wait_until_on_stream(uint64_t *sig_addr, int cmp, uint64_t cmp_value, cudaStream_t stream);
int nvshmemx_alltoallmem_on_stream(nvshmem_team_t team, void *dest, const void *src, size_t nelem,
                                   cudaStream_t stream);
int nvshmemx_broadcastmem_on_stream(nvshmem_team_t team, void *dest, const void *src, size_t nelem, int PE_root,
                                    cudaStream_t stream);
int nvshmemx_fcollectmem_on_stream(nvshmem_team_t team, void *dest, const void *src, size_t nelem,
                                   cudaStream_t stream);
}

#define GOSHMEMI_NVH_RMA_ON_STREAM(NAME, TYPE, BITS)                                                                  \
    extern "C" void nvshmemx_##NAME##_put_on_stream(TYPE *dest, const TYPE *source, size_t nelems, int pe,           \
                                                    cudaStream_t stream);                                             \
    extern "C" void nvshmemx_##NAME##_get_on_stream(TYPE *dest, const TYPE *source, size_t nelems, int pe,           \
                                                    cudaStream_t stream);                                             \
    extern "C" void nvshmemx_##NAME##_put_nbi_on_stream(TYPE *dest, const TYPE *source, size_t nelems, int pe,       \
                                                        cudaStream_t stream);                                         \
    extern "C" void nvshmemx_##NAME##_get_nbi_on_stream(TYPE *dest, const TYPE *source, size_t nelems, int pe,       \
                                                        cudaStream_t stream);                                         \
    extern "C" void nvshmemx_##NAME##_p_on_stream(TYPE *dest, const TYPE value, int pe, cudaStream_t stream);        \
    extern "C" TYPE nvshmemx_##NAME##_g_on_stream(const TYPE *src, int pe, cudaStream_t stream);                     \
    extern "C" void nvshmemx_##NAME##_put_signal_on_stream(TYPE *dest, const TYPE *source, size_t nelems,            \
                                                           uint64_t *sig_addr, uint64_t signal, int sig_op, int pe,  \
                                                           cudaStream_t stream);                                      \
    extern "C" void nvshmemx_##NAME##_put_signal_nbi_on_stream(TYPE *dest, const TYPE *source, size_t nelems,        \
                                                               uint64_t *sig_addr, uint64_t signal, int sig_op,      \
                                                               int pe, cudaStream_t stream);                          \
    extern "C" int nvshmemx_##NAME##_alltoall_on_stream(nvshmem_team_t team, TYPE *dest, const TYPE *src,            \
                                                        size_t nelem, cudaStream_t stream);                           \
    extern "C" int nvshmemx_##NAME##_broadcast_on_stream(nvshmem_team_t team, TYPE *dest, const TYPE *src,           \
                                                         size_t nelem, int PE_root, cudaStream_t stream);             \
    extern "C" int nvshmemx_##NAME##_fcollect_on_stream(nvshmem_team_t team, TYPE *dest, const TYPE *src,            \
                                                        size_t nelem, cudaStream_t stream);
GOSHMEMI_FOR_RMA_TYPES(GOSHMEMI_NVH_RMA_ON_STREAM)
GOSHMEMI_FOR_RMA_FLOAT16_TYPES(GOSHMEMI_NVH_RMA_ON_STREAM)
#undef GOSHMEMI_NVH_RMA_ON_STREAM

#define GOSHMEMI_NVH_WAIT_ON_STREAM(NAME, TYPE, BITS)                                                                 \
    extern "C" void nvshmemx_##NAME##_wait_until_on_stream(TYPE *ivar, int cmp, TYPE cmp_value, cudaStream_t stream);
GOSHMEMI_FOR_WAIT_TYPES(GOSHMEMI_NVH_WAIT_ON_STREAM)
#undef GOSHMEMI_NVH_WAIT_ON_STREAM

/* reductions on a stream: NVSHMEM's (type, op) pairs (coll_data.h's list;
 * Ref: NVSHMEM 3.x host/nvshmemx_coll_api.h) */
#define GOSHMEMI_NVH_RED_OP(NAME, TYPE, ACC, WT, CONV, OP)                                                            \
    extern "C" int nvshmemx_##NAME##_##OP##_reduce_on_stream(nvshmem_team_t team, TYPE *dest, const TYPE *src,      \
                                                             size_t nreduce, cudaStream_t stream);                    \
    extern "C" int nvshmemx_##NAME##_##OP##_reducescatter_on_stream(nvshmem_team_t team, TYPE *dest,                \
                                                                    const TYPE *src, size_t nreduce,                  \
                                                                    cudaStream_t stream);
GOSHMEMI_FOR_REDUCE_TYPES_AND_OPS(GOSHMEMI_NVH_RED_OP)
#undef GOSHMEMI_NVH_RED_OP

#endif /* __CUDACC__ && __cplusplus && !GOSHMEM_NVSHMEM_NO_HOST_DECLS */
#endif /* GOSHMEM_NVSHMEM_HOST_H */
