#!/usr/bin/env bash
# device call Z4: is it the job's first clearing on a stream of its own that holds the rows back
# (call Z2: the 16 B row during the job's first preparation; the prep rows of Y2 and Y3 saw no
# stall during later preparations)? head (the tree) against warm (the same, plus one 2 MiB
# clearing through startZero/finishZero at Init, while nothing runs); call Z2's on-stream rows,
# 2 PEs, three passes; then the same at 4 PEs, two passes.
set -u
T0=$(date +%s)
O=$OUT/z4
mkdir -p $O
for b in head warm; do xz -dc bin/x/perf-$b.xz >bin/perf-$b && chmod +x bin/perf-$b; done
. bench/alloc/rows.sh
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin
alloc_begin $O/alloc
R='^(onstream|sum_reduce_on_stream|broadcast_on_stream)$'
for np in 2 4; do
  for pass in 1 2 3; do
    [ $np = 4 ] && [ $pass = 3 ] && continue
    for b in head warm; do
      timeout 60 $(alloc_mpirun) -np $np bin/perf-$b device -json -module bin/x/perf.fatbin -coll-module "" \
         -only "$R" -coll-maxsize 1048576 -coll-iters 50 -stream-iters 500 >>$O/alloc/rows-$b-np$np.jsonl 2>$O/alloc/rows-$b-np$np-$pass.log
      alloc_step "rows $b np$np pass $pass rc $?"
    done
  done
done
alloc_end
grep -v 'rc 0$' $O/alloc/steps.txt
python3 - $O/alloc <<'PY'
import json, os, sys, collections
d = sys.argv[1]
for np in (2, 4):
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    modes = ("head", "warm")
    for mode in modes:
        f = os.path.join(d, "rows-%s-np%d.jsonl" % (mode, np))
        if os.path.exists(f):
            for line in open(f):
                if line.startswith("{"):
                    r = json.loads(line)
                    rows[(r["name"], r["size"])][mode].append("%.2f" % r["median_us"])
    print("%d PEs, us per call, each pass: name size | head | warm" % np)
    for (n, s), by in sorted(rows.items()):
        if s <= 64:
            print("%-22s %6d | %s" % (n, s, " | ".join(" ".join(by[m]) for m in modes)))
PY
(cd $OUT && tar czf resZ4.tgz z4 && rm -rf z4)
echo "done after $(( $(date +%s) - T0 )) s"
