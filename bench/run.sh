#!/usr/bin/env bash
# bench/run.sh: `make bench`. Measures goshmem (cmd/goshmem-perf, host mode,
# shm transport) and its CPU peers in one invocation, back to back on the same
# machine with the same mpirun binding, and reports goshmem ÷ peer ratios
# against the issue's targets.
#
#   peers: OpenSHMEM (Debian's OpenMPI oshmem over UCX) via bench/oshmem/run.sh,
#          once with -seg heap (shmem_malloc buffers: direct load/store) and once
#          with -seg data (static buffers: RMA through UCX);
#          the C floor (bench/oshmem/floor.c), which that script also runs.
#
# Writes bench/results/<YYYY-MM-DD-HHMMSS>-host/ (or $BENCH_OUT):
#   goshmem.jsonl                      goshmem-perf rows (the comparison run)
#   goshmem-pinned.jsonl               diagnostic: --bind-to none + -pin (see ratios)
#   goshmem-batch.jsonl                diagnostic: small ops timed 100 per sample
#   openshmem-heap.jsonl, openshmem-data.jsonl, floor.jsonl (floor-data.jsonl: its rerun)
#   *.log                              each step's stderr (headers, warnings)
#   ratios.txt, ratios.md              headline targets and the full ratio table
#   diagnostics.txt                    goshmem variants vs the default run
#   plot.png                           put_lat/get_lat (log-log) and put_bw, all series
#   machine.txt                        CPU, cores, kernel, clocks, load, versions, commands
#
# Then bench/coll/run.sh measures the collectives at 2, 4 and 8 PEs against
# the same peer (its own folder, bench/results/<...>-host-collectives/).
#
# Env: BENCH_ITERS (100000), BENCH_WARMUP (1000), BENCH_MAXSIZE (4194304),
#      BENCH_OUT (output directory), BENCH_TIMEOUT (seconds per step, 300),
#      BENCH_COLL (1; 0 skips the collectives; COLL_* as bench/coll/run.sh reads).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

iters="${BENCH_ITERS:-100000}"
warmup="${BENCH_WARMUP:-1000}"
maxsize="${BENCH_MAXSIZE:-4194304}"
tmo="${BENCH_TIMEOUT:-300}"
stamp="$(date +%Y-%m-%d-%H%M%S)"
out="${BENCH_OUT:-bench/results/$stamp-host}"
mkdir -p "$out"
build="$(mktemp -d "${TMPDIR:-/tmp}/goshmem-bench.XXXXXX")"
trap 'rm -rf "$build"' EXIT

die() { echo "bench/run.sh: $*" >&2; exit 1; }
step() { printf '\n### %s\n' "$*" >&2; }
t_start=$SECONDS

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's launcher by its own name: Debian's mpirun alternative may point to MPICH's.
mpirun=$(command -v mpirun.openmpi || command -v mpirun || true)
# The same launcher flags as bench/oshmem/run.sh's oshrun (oshrun is
# OpenMPI's mpirun): with np 2 both bind each rank to its own core.
mpirun_cmd=("$mpirun" --allow-run-as-root --oversubscribe -np 2)
common=(-iters "$iters" -warmup "$warmup" -maxsize "$maxsize")

cmds="$out/commands.txt"
: >"$cmds"
run() { # run CMD... : log it, then run it
    printf '%s\n' "$*" >>"$cmds"
    "$@"
}
load() { cut -d' ' -f1-3 /proc/loadavg; }
load_before="$(load)"

# ---------------------------------------------------------------- build
step "build goshmem-perf"
command -v go >/dev/null || die "go not found"
[ -n "$mpirun" ] || die "mpirun.openmpi not found (apt-get install openmpi-bin)"
ver="$(git describe --always --dirty 2>/dev/null || echo devel)"
# (cmd/goshmem-perf is a module of its own: built in its folder, go -C)
run go -C cmd/goshmem-perf build -ldflags "-X main.version=$ver" -o "$build/goshmem-perf" . ||
    die "go build in cmd/goshmem-perf failed"
perf="$build/goshmem-perf"

# ---------------------------------------------------------------- goshmem
step "goshmem (mpirun --oversubscribe -np 2, the comparison run)"
run timeout "$tmo" "${mpirun_cmd[@]}" "$perf" host -json "${common[@]}" \
    >"$out/goshmem.jsonl" 2>"$out/goshmem.log" ||
    { cat "$out/goshmem.log" >&2; die "goshmem-perf failed"; }
head -3 "$out/goshmem.log" >&2

step "goshmem diagnostics (not part of the comparison)"
# Init decides its wait policy from the CPUs in the process's affinity mask;
# bound to one core each, 2 PEs look oversubscribed. This run lets Init see
# both CPUs and then pins the measuring threads apart, to show the cost.
run timeout "$tmo" "$mpirun" --allow-run-as-root --oversubscribe --bind-to none -np 2 \
    "$perf" host -json -pin -variant pinned-after-init "${common[@]}" \
    -only '^(pingpong_p|pingpong_putsignal|barrier|alloc_free)$' \
    >"$out/goshmem-pinned.jsonl" 2>"$out/goshmem-pinned.log" ||
    echo "bench/run.sh: warning: pinned diagnostic run failed (see goshmem-pinned.log)" >&2
run timeout "$tmo" "${mpirun_cmd[@]}" "$perf" host -json -timing batch -batch 100 -variant batch-timing \
    "${common[@]}" -maxsize 64 -only '^(put_lat|get_lat|p_lat|g_lat|amo_fadd)$' \
    >"$out/goshmem-batch.jsonl" 2>"$out/goshmem-batch.log" ||
    echo "bench/run.sh: warning: batch-timing diagnostic run failed (see goshmem-batch.log)" >&2

# ---------------------------------------------------------------- OpenSHMEM + floor
for seg in heap data; do
    step "OpenSHMEM -seg $seg (bench/oshmem/run.sh; oshrun --oversubscribe -np 2) and the floor"
    OSHBENCH_TIMEOUT="$tmo" run bash bench/oshmem/run.sh -o "$build/oshmem" -json -seg "$seg" "${common[@]}" \
        >"$build/osh-$seg.out" 2>"$out/openshmem-$seg.log" ||
        { cat "$out/openshmem-$seg.log" >&2; die "bench/oshmem/run.sh -seg $seg failed"; }
    grep '^{' "$build/osh-$seg.out" | grep -v '"lib":"floor["/]' >"$out/openshmem-$seg.jsonl" || true
    floor="$out/floor.jsonl"
    [[ $seg == data ]] && floor="$out/floor-data.jsonl"
    grep '^{' "$build/osh-$seg.out" | grep '"lib":"floor["/]' >"$floor" || true
    grep -v '^{' "$build/osh-$seg.out" >>"$out/openshmem-$seg.log" || true
    head -1 "$out/openshmem-$seg.log" >&2
    [[ -s "$out/openshmem-$seg.jsonl" ]] || die "no OpenSHMEM rows for -seg $seg (see $out/openshmem-$seg.log)"
done

load_after="$(load)"

# ---------------------------------------------------------------- machine
{
    echo "date:        $(date -Is)"
    echo "host:        $(hostname)"
    echo "cpu:         $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
    echo "lscpu:       $(lscpu | grep -E '^(CPU\(s\)|Thread\(s\) per core|Core\(s\) per socket|Socket\(s\)|L3 cache|Hypervisor vendor):' | sed 's/  */ /g' | paste -sd';' -)"
    echo "nproc:       $(nproc) (online: $(cat /sys/devices/system/cpu/online 2>/dev/null))"
    echo "kernel:      $(uname -srm)"
    echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
    echo "governor:    $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo 'n/a (no cpufreq)')"
    echo "loadavg:     before $load_before, after $load_after (other work on this machine skews results)"
    echo "go:          $(go version)"
    echo "mpirun:      $("$mpirun" --version 2>/dev/null | head -1)"
    echo "oshmem:      $(grep -m1 -o 'oshmem [0-9.]*[^)]*' "$out/openshmem-heap.log" || echo unknown)"
    echo "ucx:         $(ucx_info -v 2>/dev/null | sed -n 's/^# Library version: *//p' | head -1 || true)"
    echo "gcc:         $(gcc --version | head -1)"
    echo "goshmem:     $ver"
    echo "binding:     $("$mpirun" --allow-run-as-root --oversubscribe -np 2 --report-bindings true 2>&1 | sed 's/^.*MCW //' | sort | paste -sd';' -)"
    echo "duration:    $((SECONDS - t_start)) s for the measurements"
    echo
    echo "commands (from $root):"
    sed 's/^/  /' "$cmds"
    echo "  $perf report -plot $out/plot.png -md $out/ratios.md -title ... $out/goshmem.jsonl $out/openshmem-heap.jsonl $out/openshmem-data.jsonl $out/floor.jsonl"
} >"$out/machine.txt"
rm -f "$cmds"

# ---------------------------------------------------------------- report
title="$(sed -n 's/^# //p' "$out/goshmem.log" | head -1); load $load_before -> $load_after"
step "report"
{
    echo "goshmem-perf host vs OpenSHMEM (oshmem) and the floor, $(date '+%Y-%m-%d %H:%M'), $(sed -n 's/^cpu: *//p' "$out/machine.txt"), $(nproc) CPUs"
    echo "goshmem: $(head -1 "$out/goshmem.log" | sed 's/^# //')"
    echo "peers:   $(head -1 "$out/openshmem-heap.log" | sed 's/^# //')"
    echo "binding: mpirun/oshrun --oversubscribe -np 2 (each rank bound to its own core); load average $load_before -> $load_after"
    "$perf" report -plot "$out/plot.png" -md "$out/ratios.md" -title "$title" \
        "$out/goshmem.jsonl" "$out/openshmem-heap.jsonl" "$out/openshmem-data.jsonl" "$out/floor.jsonl"
} | tee "$out/ratios.txt"

{
    echo
    echo "Diagnostics: goshmem variants (not part of the comparison); ratio = default run ÷ variant"
    "$perf" report -headlines=false -matched \
        "$out/goshmem.jsonl" "$out/goshmem-pinned.jsonl" "$out/goshmem-batch.jsonl" "$out/floor.jsonl"
} | tee "$out/diagnostics.txt"

echo
echo "wrote $out/:"
ls -l "$out" | tail -n +2 | awk '{printf "  %8s  %s\n", $5, $9}'
echo "total $((SECONDS - t_start)) s"

# ---------------------------------------------------------------- collectives
if [[ "${BENCH_COLL:-1}" != 0 ]]; then
    step "collectives at 2, 4 and 8 PEs (bench/coll/run.sh)"
    bash bench/coll/run.sh || die "bench/coll/run.sh failed"
fi
