#!/usr/bin/env bash
# device call I: where a prepared growth's time goes (an uncommitted trace build of 0e2e663:
# GOSHMEM_AHEAD_TRACE=1 prints each preparation's phases and each adoption's wait).
set -u
O=$OUT/i; mkdir -p $O; S=bin/i
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
xz -dc $S/goshmem-perf.xz >bin/goshmem-perf; chmod +x bin/goshmem-perf
nvidia-smi -L >$O/machine.txt
. tests/gpu/mps.sh; mps_start >>$O/machine.txt 2>&1
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0 GOSHMEM_AHEAD_TRACE=1
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x GOSHMEM_AHEAD_TRACE"
for np in 2 4; do for size in 2097152 134217728; do for who in new settle; do
  X=""; [ $who = settle ] && X="-alloc-settle 5ms"
  env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 60 $M -x GOSHMEM_DEVICE_HEAP_SIZE -np $np bin/goshmem-perf device -json -module $S/perf.fatbin -only '^alloc$' \
    -alloc-minsize $size -alloc-maxsize $size $X >$O/alloc-$who-np$np-$size.jsonl 2>$O/alloc-$who-np$np-$size.log
done; done; done
# without MPS: 1 PE (no peers), the preparation alone
mps_stop >>$O/machine.txt 2>&1
env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 60 bin/goshmem-perf device -json -module $S/perf.fatbin -only '^alloc$' -alloc-minsize 2097152 -alloc-maxsize 2097152 >$O/alloc-new-np1.jsonl 2>$O/alloc-new-np1.log
grep -h AHEAD $O/*.log | head -60
(cd $OUT && tar czf resI.tgz i && rm -rf i)
