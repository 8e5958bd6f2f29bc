#!/usr/bin/env bash
# device call Z2: call Z's on-stream rows (2 PEs, defaults: the job's first preparation, of 512
# MiB, runs during the first rows) with three builds: old (the head: one memset), new (16 MiB
# slices) and nozero (no memset): is the clearing what holds sum_reduce_on_stream 16 B back?
# Three passes, interleaved; -coll-maxsize 1 MiB as in call Z (the row allocations start the
# preparation; a first try with 4 KiB started none during the rows, and no build was slow).
set -u
T0=$(date +%s)
O=$OUT/z2
mkdir -p $O
for b in old new nozero; do xz -dc bin/x/perf-$b.xz >bin/perf-$b && chmod +x bin/perf-$b; done
. bench/alloc/rows.sh
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin
alloc_begin $O/alloc
R='^(onstream|sum_reduce_on_stream|broadcast_on_stream)$'
for pass in 1 2 3; do
  for b in old new nozero; do
    timeout 60 $(alloc_mpirun) -np 2 bin/perf-$b device -json -module bin/x/perf.fatbin -coll-module "" \
       -only "$R" -coll-maxsize 1048576 -coll-iters 50 -stream-iters 500 >>$O/alloc/rows-$b.jsonl 2>$O/alloc/rows-$b-$pass.log
    alloc_step "rows $b pass $pass rc $?"
  done
done
alloc_end
grep -v 'rc 0$' $O/alloc/steps.txt
python3 - $O/alloc <<'PY'
import json, os, sys, collections
d = sys.argv[1]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
modes = ("old", "new", "nozero")
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
(cd $OUT && tar czf resZ2.tgz z2 && rm -rf z2)
echo "done after $(( $(date +%s) - T0 )) s"
