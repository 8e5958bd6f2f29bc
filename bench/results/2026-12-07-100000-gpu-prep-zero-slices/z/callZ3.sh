#!/usr/bin/env bash
# device call Z3: two other ways to clear a prepared chunk, against old (one cuMemsetD8Async)
# and nozero: ce (a 2 MiB memset, then cuMemcpyDtoDAsync doubling from the cleared front: 8
# copies for 512 MiB) and paced (16 MiB memsets, each waited for before the next is queued).
# (1) call Z2's on-stream rows, three passes; (2) the alloc rows back to back at 2 MiB and 512
# MiB, 2 and 4 PEs, two passes: what each costs the growth.
set -u
T0=$(date +%s)
O=$OUT/z3
mkdir -p $O
B="old ce paced nozero"
for b in $B; do xz -dc bin/x/perf-$b.xz >bin/perf-$b && chmod +x bin/perf-$b; done
. bench/alloc/rows.sh
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin ALLOC_MODULE=bin/x/perf.fatbin
alloc_begin $O/alloc
R='^(onstream|sum_reduce_on_stream|broadcast_on_stream)$'
for pass in 1 2 3; do
  for b in $B; do
    timeout 60 $(alloc_mpirun) -np 2 bin/perf-$b device -json -module bin/x/perf.fatbin -coll-module "" \
       -only "$R" -coll-maxsize 1048576 -coll-iters 50 -stream-iters 500 >>$O/alloc/rows-$b.jsonl 2>$O/alloc/rows-$b-$pass.log
    alloc_step "rows $b pass $pass rc $?"
  done
done
for pass in 1 2; do
  for np in 2 4; do
    for size in 2097152 536870912; do
      for b in old ce paced; do
        alloc_row bin/perf-$b $np $size $b-np$np
      done
    done
  done
done
alloc_end
grep -v 'rc 0$' $O/alloc/steps.txt
python3 - $O/alloc <<'PY'
import json, os, sys, collections
d = sys.argv[1]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
modes = ("old", "ce", "paced", "nozero")
for mode in modes:
    f = os.path.join(d, "rows-%s.jsonl" % mode)
    if os.path.exists(f):
        for line in open(f):
            if line.startswith("{"):
                r = json.loads(line)
                rows[(r["name"], r["size"])][mode].append("%.2f" % r["median_us"])
print("us per call, each pass: name size | " + " | ".join(modes))
for (n, s), by in sorted(rows.items()):
    if s <= 64:
        print("%-22s %6d | %s" % (n, s, " | ".join(" ".join(by[m]) for m in modes)))
PY
python3 bench/alloc/summary.py $O/alloc | grep -v '^rows-' > $O/summary.txt
grep -E 'jsonl|alloc_grow|alloc_series|alloc_fit|cumemalloc' $O/summary.txt
(cd $OUT && tar czf resZ3.tgz z3 && rm -rf z3)
echo "done after $(( $(date +%s) - T0 )) s"
