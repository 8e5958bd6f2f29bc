#!/usr/bin/env bash
# device call H (tree: the growth prepared ahead + on-stream syncs under graph capture take the
# kernel; uncommitted on top of f8b6d6d): kernels by nvcc 11.8.
# 1. stream suite 4x at 2 PEs (call G's CUDA-graph failure), then at 4 and 8 PEs;
# 2. alloc rows (cuMemAlloc samples now before the job's first AllocDevice), back to back and
#    with -alloc-settle 5ms, 2 and 4 PEs, one size per job; 1 GiB with GOSHMEM_DEVICE_HEAP_CHUNK=1G;
# 3. on-stream collective rows, growing heap vs GOSHMEM_DEVICE_HEAP_MAX=fixed, alternating.
set -u
O=$OUT/h; mkdir -p $O; S=bin/h; G=bin/h/k
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
step() { echo "$(el) s: $*" >>$O/steps.txt; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "nproc $(nproc)"; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in devtest goshmem-perf; do xz -dc $S/$b.xz >bin/$b; chmod +x bin/$b; done
mkdir -p $G && xz -dc $S/k118.tar.xz | tar -C $G -xf -
. tests/gpu/mps.sh; mps_start >>$O/machine.txt 2>&1
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES"
DT="bin/devtest -watchdog 30s -fatbin $G/devtest.fatbin -compat $G/compat.fatbin -coll $G/devcoll.fatbin"
st() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); timeout $lim "$@" >$O/$name.log 2>&1; local rc=$?
  step "$name: rc $rc $(( $(date +%s) - t0 )) s: $(grep -E 'passed|PASS|FAIL' $O/$name.log | tail -1) [$(grep -c 'not prepared ahead' $O/$name.log) fallback warnings]"; }
for i in 1 2 3 4; do st stream-np2-$i 60 $M -np 2 $DT -part stream -coll-large 300001; done
st stream-np4 60 $M -np 4 $DT -part stream -coll-large 300001
st stream-np8 90 $M -np 8 $DT -part stream -coll-large 300001
for np in 2 4; do
  for size in 2097152 33554432 134217728 536870912 1073741824; do
    for who in new settle; do
      X=""; [ $who = settle ] && X="-alloc-settle 5ms"
      env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 60 $M -x GOSHMEM_DEVICE_HEAP_SIZE -np $np bin/goshmem-perf device -json -module $G/perf.fatbin -only '^alloc$' \
        -alloc-minsize $size -alloc-maxsize $size $X >>$O/alloc-$who-np$np.jsonl 2>>$O/alloc-$who-np$np.log
      step "alloc $who np$np $size rc $?"
    done
  done
  env GOSHMEM_DEVICE_HEAP_SIZE=256M GOSHMEM_DEVICE_HEAP_CHUNK=1G timeout 60 $M -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_CHUNK -np $np bin/goshmem-perf device -json -module $G/perf.fatbin -only '^alloc$' \
    -alloc-minsize 1073741824 -alloc-maxsize 1073741824 -alloc-settle 5ms >>$O/alloc-chunk1G-np$np.jsonl 2>>$O/alloc-chunk1G-np$np.log
  step "alloc chunk1G settle np$np rc $?"
done
R='^(onstream|barrier_on_stream|sum_reduce_on_stream|broadcast_on_stream|fcollect_on_stream|alltoall_on_stream)$'
for pass in 1 2; do
  for mode in grow fixed; do
    [ $(el) -lt 280 ] || { step "rows $mode pass $pass skipped (time)"; continue; }
    HM=auto; [ $mode = fixed ] && HM=fixed
    env GOSHMEM_DEVICE_HEAP_MAX=$HM timeout 60 $M -x GOSHMEM_DEVICE_HEAP_MAX -np 2 bin/goshmem-perf device -json -module $G/perf.fatbin -coll-module "" \
      -only "$R" -coll-maxsize 16777216 -coll-iters 50 -stream-iters 500 >>$O/rows-$mode.jsonl 2>$O/rows-$mode-$pass.log
    step "rows $mode pass $pass rc $?"
  done
done
mps_stop >>$O/machine.txt 2>&1
step end
cat $O/steps.txt
(cd $OUT && tar czf resH.tgz h && rm -rf h)
