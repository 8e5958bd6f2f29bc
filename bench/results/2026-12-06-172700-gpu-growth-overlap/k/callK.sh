#!/usr/bin/env bash
# device call K: a trace build of 7fe5207 with two switches (GOSHMEM_AHEAD_SERIAL=1: the
# peers' chunks mapped one after another; GOSHMEM_AHEAD_ZEROFIRST=1: the chunk zeroed before
# it is published, as in 53de90f), alloc rows back to back, to see which change helps.
set -u
O=$OUT/k; mkdir -p $O; S=bin/k; G=bin/k/k
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
step() { echo "$(el) s: $*" >>$O/steps.txt; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
xz -dc $S/perf-trace2.xz >bin/perf-trace2; chmod +x bin/perf-trace2
mkdir -p $G && xz -dc $S/k118.tar.xz | tar -C $G -xf -
. tests/gpu/mps.sh; mps_start >>$O/machine.txt 2>&1
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0 GOSHMEM_GPU_LIB=gpulib/lib.fatbin GOSHMEM_AHEAD_TRACE=1
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x GOSHMEM_GPU_LIB -x GOSHMEM_AHEAD_TRACE -x GOSHMEM_AHEAD_SERIAL -x GOSHMEM_AHEAD_ZEROFIRST"
for pass in 1 2; do
for mode in par serial zerofirst serial-zerofirst; do
  export GOSHMEM_AHEAD_SERIAL= GOSHMEM_AHEAD_ZEROFIRST=
  case $mode in *serial*) export GOSHMEM_AHEAD_SERIAL=1;; esac
  case $mode in *zerofirst*) export GOSHMEM_AHEAD_ZEROFIRST=1;; esac
  for np in 4 2; do for size in 536870912 2097152; do
    env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 60 $M -x GOSHMEM_DEVICE_HEAP_SIZE -np $np bin/perf-trace2 device -json -module $G/perf.fatbin -only '^alloc$' \
      -alloc-minsize $size -alloc-maxsize $size >>$O/$mode-np$np.jsonl 2>>$O/$mode-np$np.log
    step "$mode np$np $size rc $?"
  done; done
done
done
mps_stop >>$O/machine.txt 2>&1
step end
cat $O/steps.txt
(cd $OUT && tar czf resK.tgz k && rm -rf k)
