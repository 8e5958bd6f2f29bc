#!/usr/bin/env bash
# device call Y: the prep rows (stream_settled, stream_in_prep), now taken first in the job while
# the mapped heap is small (call X's came after the alloc rows, whose freed blocks left GiBs
# mapped: 4096 blocks of 2 MiB never grew the heap). Builds: old (the head's one memset), new
# (16 MiB slices), nozero (no memset at all: what the driver calls alone cost the kernels).
# 2 and 4 PEs, three passes, then 2 MiB alloc rows with one growth sample. Run from the
# repository root with bin/x carried.
set -u
T0=$(date +%s)
O=$OUT/y
mkdir -p $O
for b in old new nozero; do xz -dc bin/x/perf-$b.xz >bin/perf-$b && chmod +x bin/perf-$b; done
. bench/alloc/rows.sh
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin ALLOC_MODULE=bin/x/perf.fatbin
alloc_begin $O/alloc
for pass in 1 2 3; do
  for np in 2 4; do
    for b in old new nozero; do
      alloc_row bin/perf-$b $np 2097152 $b-np$np -alloc-reps 1
    done
  done
done
alloc_end
cat $O/alloc/steps.txt | grep -v 'rc 0$'
python3 bench/alloc/summary.py $O/alloc > $O/summary.txt
grep -E 'jsonl|stream_' $O/summary.txt
grep -h 'stream_in_prep\|want 0' $O/alloc/*.log | sort | uniq -c | head
(cd $OUT && tar czf resY.tgz y && rm -rf y)
echo "done after $(( $(date +%s) - T0 )) s"
