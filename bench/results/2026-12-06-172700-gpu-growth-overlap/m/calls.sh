#!/usr/bin/env bash
# device calls M and N (H100, right after call L on the same machine; binaries and kernels from
# bin/l): the 1 GiB settled rows with the trace build of c430aa5 (M, twice at 2 and 4 PEs), and
# 512 MiB back to back at 2 PEs without MPS, with MPS and GOSHMEM_DEVICE_HEAP_MAX=8G, with MPS
# and the default reservation (N). The commands as run (each was one `run` line):
# M:
#   export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0 GOSHMEM_GPU_LIB=gpulib/lib.fatbin GOSHMEM_AHEAD_TRACE=1
#   . tests/gpu/mps.sh; mps_start
#   for rep in 1 2; do for np in 2 4; do env GOSHMEM_DEVICE_HEAP_SIZE=256M mpirun ... -np $np bin/perf-trace-c430 device \
#     -json -module bin/l/k/perf.fatbin -only '^alloc$' -alloc-minsize 1073741824 -alloc-maxsize 1073741824 -alloc-settle 5ms
#   done; done
# N: the same binary, -alloc-minsize/-alloc-maxsize 536870912, no -alloc-settle, -np 2:
#   nomps (no MPS daemon), then mps_start and mps-max8g (GOSHMEM_DEVICE_HEAP_MAX=8G), mps-auto.
