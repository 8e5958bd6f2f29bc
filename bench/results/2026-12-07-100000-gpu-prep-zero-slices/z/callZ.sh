#!/usr/bin/env bash
# device call Z: which part of the growing heap makes call X's sum_reduce_on_stream 16 B row 2.5x
# the fixed heap's: call H's on-stream rows (2 PEs, the head's library, bin/x/perf-old) with
# (grow) the defaults, (fixed) GOSHMEM_DEVICE_HEAP_MAX=fixed, (big) a 4 GiB heap at Init, so that
# no allocation of the job leaves less than a step and nothing is prepared during the rows, and
# (small) GOSHMEM_DEVICE_HEAP_CHUNK=2M (2 MiB preparations); three passes.
set -u
T0=$(date +%s)
O=$OUT/z
mkdir -p $O
xz -dc bin/x/perf-old.xz >bin/perf-old && chmod +x bin/perf-old
. bench/alloc/rows.sh
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin
alloc_begin $O/alloc
R='^(onstream|sum_reduce_on_stream|broadcast_on_stream)$'
for pass in 1 2 3; do
  for mode in grow fixed big small; do
    (case $mode in
       fixed) export GOSHMEM_DEVICE_HEAP_MAX=fixed ;;
       big) export GOSHMEM_DEVICE_HEAP_SIZE=4G ;;
       small) export GOSHMEM_DEVICE_HEAP_CHUNK=2M ;;
     esac
     timeout 60 $(alloc_mpirun) -np 2 bin/perf-old device -json -module bin/x/perf.fatbin -coll-module "" \
       -only "$R" -coll-maxsize 1048576 -coll-iters 50 -stream-iters 500 >>$O/alloc/rows-$mode.jsonl 2>$O/alloc/rows-$mode-$pass.log)
    alloc_step "rows $mode pass $pass rc $?"
  done
done
alloc_end
grep -v 'rc 0$' $O/alloc/steps.txt
python3 - $O/alloc <<'PY'
import json, os, sys, collections
d = sys.argv[1]
rows = collections.defaultdict(lambda: collections.defaultdict(list))
modes = ("grow", "fixed", "big", "small")
for mode in modes:
    f = os.path.join(d, "rows-%s.jsonl" % mode)
    if os.path.exists(f):
        for line in open(f):
            if line.startswith("{"):
                r = json.loads(line)
                rows[(r["name"], r["size"])][mode].append("%.2f" % r["median_us"])
print("us per call, each pass: name size | " + " | ".join(modes))
for (n, s), by in sorted(rows.items()):
    if s <= 4096:
        print("%-22s %6d | %s" % (n, s, " | ".join(" ".join(by[m]) for m in modes)))
PY
(cd $OUT && tar czf resZ.tgz z && rm -rf z)
echo "done after $(( $(date +%s) - T0 )) s"
