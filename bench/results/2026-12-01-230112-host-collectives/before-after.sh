#!/usr/bin/env bash
# before-after.sh: goshmem's collectives before issue 16's changes (commit
# 511f1c9, the parent of this work, with this run's collective rows added to
# its goshmem-perf) and after (HEAD), and OpenSHMEM, in paired rounds: in
# each round every binary runs every row in turn. Rows of the calls that did
# not exist before (collect, alltoalls, scans) are left out.
#   usage: bench/results/<this folder>/before-after.sh OUTDIR   (from the repository root)
set -euo pipefail
out="$1"; mkdir -p "$out"
rounds="${ROUNDS:-5}"
b="$(mktemp -d)"; trap 'rm -rf "$b"' EXIT
git archive 511f1c9 | tar -x -C "$b"
cp cmd/goshmem-perf/{host.go,hostcoll.go,merge.go,result.go,ratio.go,table.go,main.go} "$b/cmd/goshmem-perf/"
# The old library has no Collect, AllToAllStrided or scans: drop those rows.
python3 - "$b/cmd/goshmem-perf/hostcoll.go" <<'PY'
import sys
p = sys.argv[1]; s = open(p).read()
for name in ["collect", "alltoalls", "inscan_sum_int64", "exscan_sum_int64"]:
    i = s.index('{"%s"' % name); j = s.index('}},\n', i) + 4; s = s[:i] + s[j:]
open(p, "w").write(s)
PY
(cd "$b" && go build -o "$b/before" ./cmd/goshmem-perf)
go build -o "$b/after" ./cmd/goshmem-perf
oshcc -O2 -std=c11 -o "$b/oshbench" bench/oshmem/oshbench.c
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
rows='barrier|bcast|reduce_sum_int64|reduce_sum_float64|fcollect|alltoall'
for np in 2 4 8; do
    for r in $(seq 1 "$rounds"); do
        for v in before after; do
            mpirun --allow-run-as-root --oversubscribe -np "$np" "$b/$v" host -json -coll -variant "$v" \
                -coll-iters 1000 -barrier-iters 1000 -only "^($rows)\$" >>"$out/$v-np$np-r$r.jsonl" 2>>"$out/$v.log"
        done
        oshrun --allow-run-as-root --oversubscribe -np "$np" --mca opal_common_ucx_opal_mem_hooks 0 \
            -x SHMEM_SYMMETRIC_HEAP_SIZE=$((12 * 1048576 * np + (64 << 20))) "$b/oshbench" -json -coll \
            -coll-iters 1000 -barrier-iters 1000 -rows "${rows//|/,}" 2>>"$out/openshmem.log" | grep '^{' >"$out/openshmem-np$np-r$r.jsonl"
    done
    for v in before after openshmem; do "$b/after" merge "$out/$v-np$np"-r*.jsonl >"$out/$v-np$np.jsonl"; done
    "$b/after" report -headlines=false "$out/after-np$np.jsonl" "$out/before-np$np.jsonl" "$out/openshmem-np$np.jsonl" >"$out/before-after-np$np.txt"
done
