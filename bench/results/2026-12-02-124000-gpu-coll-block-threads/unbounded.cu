#include <goshmem.h>
extern "C" __global__ void k_bc_thread(int team, void *d, const void *s, size_t n) { if (threadIdx.x == 0) goshmem_broadcastmem((goshmem_team_t)team, d, s, n, 0); }
extern "C" __global__ void k_bc_thread_loop(int team, void *d, const void *s, size_t n, int it) { if (threadIdx.x == 0) for (int i = 0; i < it; i++) goshmem_broadcastmem((goshmem_team_t)team, d, s, n, 0); }
extern "C" __global__ void k_bc_thread_2loop(int team, void *d, const void *s, size_t n, int it, int w) { if (threadIdx.x == 0) for (int i = 0; i < w; i++) goshmem_broadcastmem((goshmem_team_t)team, d, s, n, 0);
  goshmemx_barrier_block((goshmem_team_t)team);
  if (threadIdx.x == 0) for (int i = 0; i < it; i++) goshmem_broadcastmem((goshmem_team_t)team, d, s, n, 0); }
extern "C" __global__ void k_bc_block(int team, void *d, const void *s, size_t n) { goshmemx_broadcastmem_block((goshmem_team_t)team, d, s, n, 0); }
extern "C" __global__ void k_bc_warp(int team, void *d, const void *s, size_t n) { if (threadIdx.x < 32) goshmemx_broadcastmem_warp((goshmem_team_t)team, d, s, n, 0); }
extern "C" __global__ void k_barrier_block(int team) { goshmemx_barrier_block((goshmem_team_t)team); }
