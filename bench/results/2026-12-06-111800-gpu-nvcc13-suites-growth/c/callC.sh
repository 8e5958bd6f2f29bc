#!/usr/bin/env bash
# device call C (tree 104e416): stream suites with the nvcc-13 kernel library (embedded), alloc rows with the growth step
set -u
O=$OUT/c; mkdir -p $O; S=bin/s45; G=$S/gpu13
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
step() { echo "$(el) s: $*" >>$O/steps.txt; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "tree 104e416 (lib.fatbin: nvcc 13.0, sm_80/90/100 + compute_100)"; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in devtest goshmem-perf; do xz -dc $S/$b.xz >bin/$b; chmod +x bin/$b; done
. tests/gpu/mps.sh; mps_start >>$O/machine.txt 2>&1
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES"
st() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); timeout $lim "$@" >$O/$name.log 2>&1; local rc=$?; step "$name: rc $rc $(( $(date +%s) - t0 )) s: $(grep -E 'passed|PASS|FAIL' $O/$name.log | tail -1)"; }
for np in 8 4 2; do
  st stream-np$np 90 $M -np $np bin/devtest -watchdog 30s -part stream -fatbin "" -coll $G/devcoll.fatbin -coll-large 300001
done
st devcoll-np8 90 $M -np 8 bin/devtest -watchdog 30s -part devcoll -fatbin "" -coll $G/devcoll.fatbin -coll-large 40001
st grow-stream-np8 90 env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=8G GOSHMEM_INFO=1 $M -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_INFO -np 8 bin/devtest -watchdog 30s -part stream -heap-grow -fatbin "" -coll $G/devcoll.fatbin -coll-large 300001
for np in 2 4; do
  env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 150 $M -x GOSHMEM_DEVICE_HEAP_SIZE -np $np bin/goshmem-perf device -json -module $G/perf.fatbin -only '^alloc$' >$O/alloc-np$np.jsonl 2>$O/alloc-np$np.log
  step "alloc rows np$np rc $?"
done
env GOSHMEM_DEVICE_HEAP_SIZE=256M GOSHMEM_DEVICE_HEAP_CHUNK=2M timeout 100 $M -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_CHUNK -np 4 bin/goshmem-perf device -json -module $G/perf.fatbin -only '^alloc$' -alloc-maxsize 67108864 >$O/alloc-np4-chunk2M.jsonl 2>$O/alloc-np4-chunk2M.log
step "alloc rows np4 chunk 2M rc $?"
mps_stop >>$O/machine.txt 2>&1
cat $O/steps.txt
(cd $OUT && tar czf resC.tgz c && rm -rf c)
