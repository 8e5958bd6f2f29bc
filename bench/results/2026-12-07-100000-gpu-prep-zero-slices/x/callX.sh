#!/usr/bin/env bash
# device call X: what a GPU heap preparation running in the background costs the program's
# kernels, with the preparation's memset as one grid (old: the head, 9098353) and in slices of
# 16 MiB (new) and 64 MiB (s64). (1) `goshmem-perf device -only '^alloc$'` at 2 MiB and 512 MiB,
# back to back, 2 and 4 PEs, old/new/s64 interleaved, two passes: the alloc rows (the growth must
# not get slower) and the prep rows (stream_settled, stream_in_prep: 1000 BarrierAllOnStream +
# Synchronize one by one, without and during a preparation); (2) call H's on-stream rows at 2 PEs,
# growing heap (old, new) against the fixed heap, two passes. Binaries built without the gpulib
# import (bin/x/perf-*.xz), the kernel library from the tree, the perf kernels of call V (nvcc
# 11.8). Run from the repository root with bin/x carried.
set -u
T0=$(date +%s)
O=$OUT/x
mkdir -p $O
for b in old new s64; do xz -dc bin/x/perf-$b.xz >bin/perf-$b && chmod +x bin/perf-$b; done
. bench/alloc/rows.sh
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin ALLOC_MODULE=bin/x/perf.fatbin
alloc_begin $O/alloc
for pass in 1 2; do
  for np in 2 4; do
    for size in 2097152 536870912; do
      for b in old new s64; do
        alloc_row bin/perf-$b $np $size $b-np$np
      done
    done
  done
done
R='^(onstream|barrier_on_stream|sum_reduce_on_stream|broadcast_on_stream|fcollect_on_stream|alltoall_on_stream)$'
for pass in 1 2; do
  for mode in old new fixed; do
    [ $(( $(date +%s) - T0 )) -lt 420 ] || { alloc_step "rows $mode pass $pass NOT RUN (time)"; continue; }
    b=$mode HM=auto; [ $mode = fixed ] && b=old HM=fixed
    (export GOSHMEM_DEVICE_HEAP_MAX=$HM
     timeout 60 $(alloc_mpirun) -np 2 bin/perf-$b device -json -module bin/x/perf.fatbin -coll-module "" \
       -only "$R" -coll-maxsize 16777216 -coll-iters 50 -stream-iters 500 >>$O/alloc/rows-$mode.jsonl 2>$O/alloc/rows-$mode-$pass.log)
    alloc_step "rows $mode pass $pass rc $?"
  done
done
alloc_end
cat $O/alloc/steps.txt
python3 bench/alloc/summary.py $O/alloc | grep -v '^rows-' > $O/summary.txt
grep -E 'jsonl|stream_|alloc_grow|alloc_series' $O/summary.txt
python3 - $O/alloc <<'PY'
import json, glob, os, sys, collections
d = sys.argv[1]
rows = collections.defaultdict(list)
for mode in ("old", "new", "fixed"):
    f = os.path.join(d, "rows-%s.jsonl" % mode)
    if not os.path.exists(f):
        continue
    for line in open(f):
        if line.startswith("{"):
            r = json.loads(line)
            rows[(r["name"], r["size"])].append((mode, r["median_us"]))
print("on-stream rows (us, each pass): name size old | new | fixed")
for (n, s), v in sorted(rows.items()):
    by = collections.defaultdict(list)
    for m, x in v:
        by[m].append("%.2f" % x)
    print("%-22s %9d  %s | %s | %s" % (n, s, " ".join(by["old"]), " ".join(by["new"]), " ".join(by["fixed"])))
PY
(cd $OUT && tar czf resX.tgz x && rm -rf x)
echo "done after $(( $(date +%s) - T0 )) s"
