/* goshmem-perf device collective rows, goshmem side: coll.cuh over
 * goshmem's native names (goshmem_<T>_<op>_reduce, goshmemx_..._block ...).
 * A fatbin of its own (bin/gpu/perf_coll.fatbin, `make gpu`), loaded by
 * `goshmem-perf device -coll-module`, so the point-to-point rows
 * (perf.fatbin) do not depend on it.
 *
 * Build: nvcc -std=c++17 -O3 -I include -gencode arch=compute_90,code=sm_90 \
 *        -gencode arch=compute_90,code=compute_90 -fatbin -o bin/gpu/perf_coll.fatbin bench/gpu/perf_coll.cu
 */
#include <goshmem.h>

#define PC_T(name) goshmem_##name
#define PC_X(name) goshmemx_##name
typedef goshmem_team_t pc_team_t;

#include "coll.cuh"
