#!/usr/bin/env bash
# device call D (tree afb51ff): alloc rows one size per job at 4 and 2 PEs (default 512M step), stream -heap-grow at 8 PEs with CHUNK=2M
set -u
O=$OUT/d; mkdir -p $O; S=bin/s46; G=$S/gpu13
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
step() { echo "$(el) s: $*" >>$O/steps.txt; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree afb51ff"; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in devtest goshmem-perf; do xz -dc $S/$b.xz >bin/$b; chmod +x bin/$b; done
. tests/gpu/mps.sh; mps_start >>$O/machine.txt 2>&1
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES"
timeout 90 env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=4G GOSHMEM_DEVICE_HEAP_CHUNK=2M GOSHMEM_INFO=1 $M -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_DEVICE_HEAP_CHUNK -x GOSHMEM_INFO -np 8 bin/devtest -watchdog 30s -part stream -heap-grow -fatbin "" -coll $G/devcoll.fatbin -coll-large 300001 >$O/grow-stream-np8.log 2>&1
step "grow-stream-np8 rc $?: $(grep -E 'passed' $O/grow-stream-np8.log | tail -1)"
for np in 4 2; do
  for s in 2097152 8388608 33554432 134217728 268435456 536870912 1073741824; do
    env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 60 $M -x GOSHMEM_DEVICE_HEAP_SIZE -np $np bin/goshmem-perf device -json -module $G/perf.fatbin -only '^alloc$' -alloc-minsize $s -alloc-maxsize $s >>$O/alloc-np$np.jsonl 2>>$O/alloc-np$np.log
    step "alloc np$np size $s rc $?"
  done
done
mps_stop >>$O/machine.txt 2>&1
cat $O/steps.txt
(cd $OUT && tar czf resD.tgz d && rm -rf d)
