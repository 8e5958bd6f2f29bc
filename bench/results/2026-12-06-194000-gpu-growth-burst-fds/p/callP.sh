#!/usr/bin/env bash
# device call P: (1) perf-fd (exported descriptors closed once imported, descriptor table grown at Init)
# against perf-new (call O's burst build), back to back, 2 MiB and 512 MiB, 2 and 4 PEs, alternating, twice;
# (2) a trace build with wall-clock stamps (and GOSHMEM_AHEAD_EARLY: the next preparation started before
# the size is published), 512 MiB back to back at 2 and 4 PEs; (3) growth suites with devtest-fd.
set -u
O=$OUT/p; mkdir -p $O; S=bin/o; G=bin/o/k
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
step() { echo "$(el) s: $*" >>$O/steps.txt; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in perf-new perf-fd perf-trace2 devtest-fd; do xz -dc $S/$b.xz >bin/$b; chmod +x bin/$b; done
mkdir -p $G && xz -dc $S/k118.tar.xz | tar -C $G -xf -
. tests/gpu/mps.sh; mps_start >>$O/machine.txt 2>&1
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0 GOSHMEM_GPU_LIB=gpulib/lib.fatbin GOSHMEM_AHEAD_TRACE= GOSHMEM_AHEAD_NOZERO= GOSHMEM_AHEAD_EARLY=
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x GOSHMEM_GPU_LIB -x GOSHMEM_AHEAD_TRACE -x GOSHMEM_AHEAD_NOZERO -x GOSHMEM_AHEAD_EARLY"
alloc() { # binary np size outfile [extra perf flags]
  local who=$1 np=$2 size=$3 out=$4; shift 4
  env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 60 $M -x GOSHMEM_DEVICE_HEAP_SIZE -np $np bin/$who device -json -module $G/perf.fatbin -only '^alloc$' \
    -alloc-minsize $size -alloc-maxsize $size "$@" >>$O/$out.jsonl 2>>$O/$out.log
  step "$who $out $size rc $?"
}
for pass in 1 2; do for np in 2 4; do for size in 2097152 536870912; do
  alloc perf-new $np $size b2b-new-np$np
  alloc perf-fd $np $size b2b-fd-np$np
done; done; done
export GOSHMEM_AHEAD_TRACE=1
for np in 2 4; do
  alloc perf-trace2 $np 536870912 trace2-np$np
  GOSHMEM_AHEAD_EARLY=1 alloc perf-trace2 $np 536870912 trace2-early-np$np
  alloc perf-trace2 $np 2097152 trace2-np$np
done
export GOSHMEM_AHEAD_TRACE=
DT="bin/devtest-fd -watchdog 30s -fatbin $G/devtest.fatbin -compat $G/compat.fatbin -coll $G/devcoll.fatbin"
GROW="env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=8G GOSHMEM_DEVICE_HEAP_CHUNK=2M GOSHMEM_INFO=1"
GX="-x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_DEVICE_HEAP_CHUNK -x GOSHMEM_INFO"
st() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); timeout $lim "$@" >$O/$name.log 2>&1; local rc=$?
  step "$name: rc $rc $(( $(date +%s) - t0 )) s: $(grep -E 'passed|PASS|FAIL' $O/$name.log | tail -1) [$(grep -c 'not prepared ahead' $O/$name.log) fallback warnings]"; }
for np in 8 4 2; do st grow-np$np 60 $GROW $M $GX -np $np $DT -part p2p -heap-grow -rounds 200; done
st grow-np4-chunk512M 60 env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=8G GOSHMEM_INFO=1 $M -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_INFO -np 4 $DT -part p2p -heap-grow -rounds 200
st stream-grow-np8 60 $GROW $M $GX -np 8 $DT -part stream -heap-grow -rounds 200
mps_stop >>$O/machine.txt 2>&1
step end
cat $O/steps.txt
(cd $OUT && tar czf resP.tgz p && rm -rf p)
