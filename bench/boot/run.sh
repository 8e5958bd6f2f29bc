#!/usr/bin/env bash
# bench/boot/run.sh OUT: Init of NP PEs (default 8) on this machine under
# the tcp bootstrap (a shell loop, no launcher) and under MPI (mpirun),
# alternating, RUNS times each (default 7); then goshmem-perf host put and
# barrier rows with 2 PEs under each bootstrap (neither bound to cores:
# mpirun --bind-to none, the loop does not bind). Writes OUT/initfin.txt
# (one line per run), OUT/perf-{mpi,tcp}.jsonl, OUT/summary.md (medians and
# the perf rows side by side) and OUT/commands.txt.
set -euo pipefail
out=${1:?usage: bench/boot/run.sh OUT}
NP=${NP:-8}
RUNS=${RUNS:-7}
ITERS=${ITERS:-20000}
mkdir -p "$out"
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(mktemp -d "${TMPDIR:-/tmp}/goshmem-boot.XXXXXX")
trap 'rm -rf "$build"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's launcher by name (on Debian mpirun may be MPICH's).
MPIRUN=${MPIRUN:-$(command -v mpirun.openmpi || command -v mpirun)}
cmds=$out/commands.txt
: >"$cmds"
(cd "$root" && go build -o "$build/" ./tests/integration/spmd) # goshmem-perf: a module of its own
(cd "$root/cmd/goshmem-perf" && go build -o "$build/" .)
echo "commit $(cd "$root" && git describe --always --dirty 2>/dev/null || echo devel); $(nproc) CPUs; load before $(cut -d' ' -f1-3 /proc/loadavg)" >"$out/machine.txt"

port=29600
# tcpjob NP PROGRAM ARGS...: NP PEs from a shell loop, tcp bootstrap.
tcpjob() {
	local np=$1 pids=() rc=0
	shift
	port=$((port + 1))
	for ((r = 0; r < np; r++)); do
		GOSHMEM_RANK=$r GOSHMEM_NPES=$np GOSHMEM_BOOTSTRAP_ADDR=127.0.0.1:$port GOSHMEM_BOOTSTRAP_TOKEN=bench "$@" &
		pids+=($!)
	done
	for p in "${pids[@]}"; do wait "$p" || rc=$?; done
	return $rc
}
mpijob() {
	local np=$1
	shift
	"$MPIRUN" --oversubscribe --bind-to none -np "$np" "$@"
}
echo "tcp: for r in 0..NP-1: GOSHMEM_RANK=r GOSHMEM_NPES=NP GOSHMEM_BOOTSTRAP_ADDR=127.0.0.1:PORT GOSHMEM_BOOTSTRAP_TOKEN=bench spmd -mode initfin -heap 0 &; wait" >>"$cmds"
echo "mpi: $MPIRUN --oversubscribe --bind-to none -np NP spmd -mode initfin -heap 0" >>"$cmds"

: >"$out/initfin.txt"
for ((i = 1; i <= RUNS; i++)); do
	for boot in tcp mpi; do
		t0=$(date +%s.%N)
		line=$(${boot}job "$NP" "$build/spmd" -mode initfin -heap 0 2>&1 | grep '^initfin:')
		t1=$(date +%s.%N)
		echo "$boot run $i: $line; job wall $(echo "$t1 - $t0" | bc)s" | tee -a "$out/initfin.txt"
	done
done

perfargs=(host -json -iters "$ITERS" -warmup 1000 -maxsize 4096 -only '^(put_lat|p_lat|pingpong_p|barrier)$')
echo "perf tcp: 2 PEs from the loop: goshmem-perf ${perfargs[*]}" >>"$cmds"
echo "perf mpi: $MPIRUN --oversubscribe --bind-to none -np 2 goshmem-perf ${perfargs[*]}" >>"$cmds"
for boot in tcp mpi; do
	${boot}job 2 "$build/goshmem-perf" "${perfargs[@]}" >"$out/perf-$boot.jsonl" 2>"$out/perf-$boot.log"
done
echo "load after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/machine.txt"

python3 - "$out" <<'PY'
import json, re, statistics, sys, os
out = sys.argv[1]
init = {"tcp": [], "mpi": []}; wall = {"tcp": [], "mpi": []}
def ms(s):
    m = re.match(r"([\d.]+)(µs|us|ms|s)$", s)
    v = float(m.group(1)); u = m.group(2)
    return v * {"µs": 1e-3, "us": 1e-3, "ms": 1, "s": 1e3}[u]
for l in open(os.path.join(out, "initfin.txt")):
    m = re.match(r"(\w+) run \d+: initfin: np \d+: Init (\S+), Finalize \S+; job wall ([\d.]+)s", l)
    if m:
        init[m.group(1)].append(ms(m.group(2))); wall[m.group(1)].append(float(m.group(3)) * 1e3)
rows = ["| measurement | tcp | mpi | tcp / mpi |", "|---|---|---|---|"]
for name, d in (("Init on PE 0, median ms", init), ("job wall (start to exit), median ms", wall)):
    t, m = statistics.median(d["tcp"]), statistics.median(d["mpi"])
    rows.append(f"| {name} ({len(d['tcp'])} runs each) | {t:.1f} | {m:.1f} | {t/m:.2f} |")
def load(p):
    r = {}
    for l in open(p):
        if l.startswith("{"):
            j = json.loads(l)
            r[(j.get("bench") or j.get("name"), j.get("size", 0))] = j
    return r
pt, pm = load(os.path.join(out, "perf-tcp.jsonl")), load(os.path.join(out, "perf-mpi.jsonl"))
rows += ["", "| goshmem-perf host row (2 PEs) | size | tcp median us | mpi median us | tcp / mpi |", "|---|---|---|---|---|"]
for k in sorted(pt, key=lambda k: (str(k[0]), k[1])):
    if k not in pm: continue
    a, b = pt[k], pm[k]
    key = next((f for f in ("median_us", "p50_us", "lat_us", "us") if f in a), None)
    if key is None: continue
    rows.append(f"| {k[0]} | {k[1]} | {a[key]:.3f} | {b[key]:.3f} | {a[key]/b[key]:.2f} |")
open(os.path.join(out, "summary.md"), "w").write("\n".join(rows) + "\n")
print("\n".join(rows))
PY
