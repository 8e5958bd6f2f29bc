#!/usr/bin/env bash
# device call J (tree 7fe5207: the preparation publishes before zeroing, maps the peers at
# once, and is sized by the largest block; against 53de90f): kernels by nvcc 11.8 (call H's
# k118.tar.xz), the kernel library from the tree (GOSHMEM_GPU_LIB=gpulib/lib.fatbin: the
# binaries are built without the gpulib import to fit the carry).
# 1. alloc rows, 53de90f (old) and 7fe5207 (new) alternating, back to back and with
#    -alloc-settle 5ms, 2 and 4 PEs, one size per job;
# 2. a trace build of 7fe5207 (GOSHMEM_AHEAD_TRACE=1: each preparation's phases);
# 3. growth suites with the new devtest at 8, 4, 2 PEs (CHUNK=2M), 4 PEs with the 512M step,
#    the stream suite on a growing heap at 8 PEs.
set -u
O=$OUT/j; mkdir -p $O; S=bin/j; G=bin/j/k
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
step() { echo "$(el) s: $*" >>$O/steps.txt; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "nproc $(nproc)"; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in devtest perf-old perf-new perf-trace; do xz -dc $S/$b.xz >bin/$b; chmod +x bin/$b; done
mkdir -p $G && xz -dc $S/k118.tar.xz | tar -C $G -xf -
ls $G >>$O/machine.txt
. tests/gpu/mps.sh; mps_start >>$O/machine.txt 2>&1
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0 GOSHMEM_GPU_LIB=gpulib/lib.fatbin
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x GOSHMEM_GPU_LIB"
alloc() { # alloc who np size outfile [extra perf flags]
  local who=$1 np=$2 size=$3 out=$4; shift 4
  env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 60 $M -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_AHEAD_TRACE -np $np bin/perf-$who device -json -module $G/perf.fatbin -only '^alloc$' \
    -alloc-minsize $size -alloc-maxsize $size "$@" >>$O/$out.jsonl 2>>$O/$out.log
  step "alloc $who $out $size rc $?"
}
export GOSHMEM_AHEAD_TRACE=
# 1. A/B
for np in 2 4; do
  for size in 2097152 33554432 134217728 536870912 1073741824; do
    for who in old new; do
      alloc $who $np $size b2b-$who-np$np
      alloc $who $np $size settle-$who-np$np -alloc-settle 5ms
    done
  done
done
# 2. trace
export GOSHMEM_AHEAD_TRACE=1
for np in 2 4; do for size in 2097152 536870912 1073741824; do
  alloc trace $np $size trace-np$np
done; done
export GOSHMEM_AHEAD_TRACE=
# 3. suites
DT="bin/devtest -watchdog 30s -fatbin $G/devtest.fatbin -compat $G/compat.fatbin -coll $G/devcoll.fatbin"
GROW="env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=8G GOSHMEM_DEVICE_HEAP_CHUNK=2M GOSHMEM_INFO=1"
GX="-x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_DEVICE_HEAP_CHUNK -x GOSHMEM_INFO"
st() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); timeout $lim "$@" >$O/$name.log 2>&1; local rc=$?
  step "$name: rc $rc $(( $(date +%s) - t0 )) s: $(grep -E 'passed|PASS|FAIL' $O/$name.log | tail -1) [$(grep -c 'not prepared ahead' $O/$name.log) fallback warnings]"; }
for np in 8 4 2; do
  [ $(el) -lt 470 ] || { step "grow-np$np skipped (time)"; continue; }
  st grow-np$np 60 $GROW $M $GX -np $np $DT -part p2p -heap-grow -rounds 200
done
[ $(el) -lt 480 ] && st grow-np4-chunk512M 60 env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=8G GOSHMEM_INFO=1 $M -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_INFO -np 4 $DT -part p2p -heap-grow -rounds 200
[ $(el) -lt 480 ] && st grow-stream-np8 80 $GROW $M $GX -np 8 $DT -part stream -heap-grow -coll-large 300001
mps_stop >>$O/machine.txt 2>&1
step end
cat $O/steps.txt
grep -h "AHEAD" $O/trace-np4.log | head -40
(cd $OUT && tar czf resJ.tgz j && rm -rf j)
