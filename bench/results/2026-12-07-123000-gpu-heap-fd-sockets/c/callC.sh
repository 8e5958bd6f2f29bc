#!/usr/bin/env bash
# device call C: the growing GPU heap with chunk descriptors passed over Unix sockets, one
# connected per peer (74a35b1..76425f0, which also makes Finalize wait for queued GPU work), on
# the real driver. (1) the machine's ptrace settings; (2) bin/spmd -mode gpu-heap (grow, grow
# again, past the maximum, Finalize; puts into a peer's new chunk) at 2 and 4 PEs under MPS, plain
# and with -deny-ptrace (a seccomp filter refusing ptrace, pidfd_getfd, process_vm_readv/writev, as
# a container's default profile does); (3) tests/gpu/run.sh (the device suite, its heap-growth
# steps included); (4) what the growing AllocDevice costs, base 4f60f10 against new 76425f0, same
# rows as call B of 2026-12-07-104000 (2 MiB and 512 MiB back to back, 1 GiB settled, 2 and 4 PEs).
# Kernels: nvcc 11.8 builds from the dev machine (bin/u's set); the kernel library from the tree
# (GOSHMEM_GPU_LIB=gpulib/lib.fatbin; the Go binaries are built without the gpulib import).
# Run from the repository root with bin/v carried.
set -u
T0=$(date +%s)
O=$OUT/c
mkdir -p $O
xz -dc bin/v/carry-c.tar.xz | tar -C bin -xf -
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ date -u; uname -r; grep PRETTY /etc/os-release; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "ptrace_scope: $(cat /proc/sys/kernel/yama/ptrace_scope 2>&1)"
  echo "max_dgram_qlen: $(cat /proc/sys/net/unix/max_dgram_qlen 2>&1)"
  grep -E '^(Seccomp|CapEff)' /proc/self/status; id; } >$O/machine.txt 2>&1
. tests/gpu/mps.sh
mps_start >>$O/machine.txt 2>&1
export CUDA_VISIBLE_DEVICES=0 GOSHMEM_GPU=on
for np in 2 4; do
  for deny in "" -deny-ptrace; do
    env GOSHMEM_INFO=1 GOSHMEM_DEVICE_HEAP_SIZE=4M GOSHMEM_DEVICE_HEAP_MAX=64M GOSHMEM_DEVICE_HEAP_CHUNK=2M GOSHMEM_MAX_TEAMS=34 \
      timeout 90 mpirun --bind-to none --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES \
      -x GOSHMEM_GPU -x GOSHMEM_GPU_LIB -x GOSHMEM_INFO -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX \
      -x GOSHMEM_DEVICE_HEAP_CHUNK -x GOSHMEM_MAX_TEAMS -np $np bin/spmd -mode gpu-heap -heap 16777216 -guard 60s $deny \
      >$O/spmd-np$np$deny.out 2>&1
    echo "spmd gpu-heap np$np $deny: rc $? ok-steps $(grep -c ': ok$' $O/spmd-np$np$deny.out) fails $(grep -c FAIL $O/spmd-np$np$deny.out) after $(( $(date +%s) - T0 )) s" >>$O/steps.txt
  done
done
mps_stop >>$O/machine.txt 2>&1
timeout 150 bash tests/gpu/run.sh $O/suite >$O/suite.out 2>&1
echo "run.sh rc $? after $(( $(date +%s) - T0 )) s" >>$O/steps.txt
. bench/alloc/rows.sh
export ALLOC_MODULE=bin/gpu/perf.fatbin
alloc_begin $O/alloc
for np in 2 4; do
  for b in base new; do
    [ $(( $(date +%s) - T0 )) -gt 330 ] && break 2
    alloc_row bin/perf-$b $np 2097152 $b-np$np
    alloc_row bin/perf-$b $np 536870912 $b-np$np
    alloc_row bin/perf-$b $np 1073741824 $b-settle-np$np -alloc-settle 5ms
  done
done
alloc_end
cat $O/steps.txt
grep -E 'GPU heap:|FAIL' $O/spmd-np4-deny-ptrace.out | cut -c1-200 | head -5
grep -E '^\| |overall' $O/suite/summary.md | cut -c1-150 | grep -v '^| step' | tail -40
python3 bench/alloc/summary.py $O/alloc > $O/summary.txt
grep -E 'jsonl|alloc_grow|cumemalloc' $O/summary.txt
(cd $OUT && tar czf resC.tgz c && rm -rf c)
echo "done after $(( $(date +%s) - T0 )) s"
