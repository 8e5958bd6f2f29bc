#!/usr/bin/env bash
# device call S: does b44bbea (the descriptor table grown at Init) change the growing call's median
# back to back? Its build ("b", the head) against 6284686 ("d3": call O's new, d3cfac2 with the alloc
# rows' sample budget), alternating, three passes (the files stay unpacked under $OUT/s, so that a cut
# call still brings back what it finished), 2 MiB (12 growths a row) and 512 MiB back to back
# and 512 MiB settled, 2 and 4 PEs on one GPU under MPS. Kernels by nvcc 11.8 (k118.tar.xz).
set -u
O=$OUT/s; mkdir -p $O; S=bin/o; G=bin/o/k
T0=$(date +%s)
step() { echo "$(( $(date +%s) - T0 )) s: $*" >>$O/steps.txt; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in perf-b perf-d3; do xz -dc $S/$b.xz >bin/$b; chmod +x bin/$b; done
mkdir -p $G && xz -dc $S/k118.tar.xz | tar -C $G -xf -
. tests/gpu/mps.sh; mps_start >>$O/machine.txt 2>&1
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0 GOSHMEM_GPU_LIB=gpulib/lib.fatbin
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x GOSHMEM_GPU_LIB"
alloc() { # binary np size outfile [extra perf flags]
  local who=$1 np=$2 size=$3 out=$4; shift 4
  env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 60 $M -x GOSHMEM_DEVICE_HEAP_SIZE -np $np bin/$who device -json -module $G/perf.fatbin -only '^alloc$' \
    -alloc-minsize $size -alloc-maxsize $size "$@" >>$O/$out.jsonl 2>>$O/$out.log
  step "$who $out $size rc $?"
}
# SHORT=1 (a call with little device time left): 2 MiB back to back only, d3 b b d3 at 2 PEs, then 4
if [ "${SHORT:-0}" = 1 ]; then
  for np in 2 4; do for who in perf-d3 perf-b perf-b perf-d3; do alloc $who $np 2097152 b2b-$who-np$np -alloc-reps 12; done; done
else
  for pass in 1 2 3; do
    if [ $pass = 2 ]; then order="perf-b perf-d3"; else order="perf-d3 perf-b"; fi
    for np in 2 4; do
      for who in $order; do
        alloc $who $np 2097152 b2b-$who-np$np -alloc-reps 12
        alloc $who $np 536870912 b2b-$who-np$np
        alloc $who $np 536870912 settle-$who-np$np -alloc-settle 5ms
      done
    done
  done
fi
mps_stop >>$O/machine.txt 2>&1
step end
cat $O/steps.txt
