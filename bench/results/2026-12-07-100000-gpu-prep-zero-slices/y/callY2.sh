#!/usr/bin/env bash
# device call Y2: the prep rows as they landed (stream_settled, stream_in_prep: 1000 ReduceOnStream
# of 16 B + Synchronize one by one, a kernel each; call Y timed on-stream barriers, which at 2 PEs
# are stream memory operations that no kernel holds back), for head (the tree's library) and
# nozero (no memset in the preparation), and head with GOSHMEM_DEVICE_HEAP_CHUNK=2M (2 MiB
# preparations); 2 and 4 PEs, two passes, then 2 MiB alloc rows with one growth sample.
set -u
T0=$(date +%s)
O=$OUT/y2
mkdir -p $O
for b in head nozero; do xz -dc bin/x/perf-$b.xz >bin/perf-$b && chmod +x bin/perf-$b; done
. bench/alloc/rows.sh
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin ALLOC_MODULE=bin/x/perf.fatbin
alloc_begin $O/alloc
for pass in 1 2; do
  for np in 2 4; do
    for b in head nozero; do
      alloc_row bin/perf-$b $np 2097152 $b-np$np -alloc-reps 1
    done
    (export GOSHMEM_DEVICE_HEAP_CHUNK=2M; alloc_row bin/perf-head $np 2097152 chunk2M-np$np -alloc-reps 1)
  done
done
alloc_end
grep -v 'rc 0$' $O/alloc/steps.txt
python3 bench/alloc/summary.py $O/alloc > $O/summary.txt
grep -E 'jsonl|stream_' $O/summary.txt
(cd $OUT && tar czf resY2.tgz y2 && rm -rf y2)
echo "done after $(( $(date +%s) - T0 )) s"
