#!/usr/bin/env bash
# bench/coll/run.sh: the collective rows of goshmem-perf host -coll and of the
# OpenSHMEM peer (bench/oshmem/oshbench.c -coll) at 2, 4 and 8 PEs on this
# machine, goshmem and OpenSHMEM in the same run, as pairs: for each PE
# count, ROUNDS rounds; in each round every row runs as a goshmem job and an
# OpenSHMEM job back to back (which goes first alternates), so the two sides
# of a ratio see the same load from other work on the machine. Each row's
# median over the rounds is kept (goshmem-perf merge); then goshmem ÷
# OpenSHMEM per PE count. Every row: each PE runs the collective + a
# barrier, PE 0 times the pair.
#
#   usage: bench/coll/run.sh [OUTDIR]        (make bench runs it after bench/run.sh)
#
# Writes OUTDIR (default bench/results/<YYYY-MM-DD-HHMMSS>-host-collectives/):
#   goshmem-np<N>-r<R>.jsonl, openshmem-np<N>-r<R>.jsonl   each round's rows (its row jobs)
#   goshmem-np<N>.jsonl, openshmem-np<N>.jsonl             merged (goshmem-perf merge)
#   ratios-np<N>.txt, ratios-np<N>.md                      targets and every row
#   floor-np2-r<R>.jsonl, floor-np2.jsonl                  bench/coll/copyfloor.c: memcpy of a 2-PE
#                                                          alltoall's / sum-reduce's bytes, 2 processes at once
#   put_bw.jsonl                                           goshmem put_bw 1 MiB, 2 PEs (copy bandwidth)
#   *.log, machine.txt                                     headers, machine, load, commands
#
# Env: COLL_NPS ("2 4 8"), COLL_ROUNDS (3), COLL_ITERS (2000: iterations of a
#      row up to 4 KiB, fewer above, at least 100), COLL_MAXSIZE (1048576), BENCH_WARMUP (1000),
#      BENCH_TIMEOUT (seconds per step, 600).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"

nps="${COLL_NPS:-2 4 8}"
rounds="${COLL_ROUNDS:-3}"
iters="${COLL_ITERS:-2000}"
maxsize="${COLL_MAXSIZE:-1048576}"
warmup="${BENCH_WARMUP:-1000}"
tmo="${BENCH_TIMEOUT:-600}"
stamp="$(date +%Y-%m-%d-%H%M%S)"
out="${1:-bench/results/$stamp-host-collectives}"
mkdir -p "$out"
build="$(mktemp -d "${TMPDIR:-/tmp}/goshmem-coll.XXXXXX")"
trap 'rm -rf "$build"' EXIT

die() { echo "bench/coll/run.sh: $*" >&2; exit 1; }
step() { printf '\n### %s\n' "$*" >&2; }
cmds="$out/commands.txt"
: >"$cmds"
run() { printf '%s\n' "$*" >>"$cmds"; "$@"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
load_before="$(load)"
t_start=$SECONDS

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Open MPI's launcher by its own name: Debian's mpirun alternative may point to MPICH's.
mpirun=$(command -v mpirun.openmpi || command -v mpirun || true)
command -v go >/dev/null || die "go not found"
[ -n "$mpirun" ] || die "mpirun.openmpi not found (apt-get install openmpi-bin)"
command -v oshcc >/dev/null || die "oshcc not found (apt-get install libopenmpi-dev openmpi-bin)"

step "build"
ver="$(git describe --always --dirty 2>/dev/null || echo devel)"
run go -C cmd/goshmem-perf build -ldflags "-X main.version=$ver" -o "$build/goshmem-perf" . # a module of its own
perf="$build/goshmem-perf"
run oshcc -O2 -std=c11 -Wall -o "$build/oshbench" bench/oshmem/oshbench.c
run gcc -O2 -std=c11 -Wall -o "$build/copyfloor" bench/coll/copyfloor.c

common=(-json -coll -coll-iters "$iters" -barrier-iters "$iters" -warmup "$warmup" -coll-maxsize "$maxsize")
# The rows; the scans have no OpenSHMEM row (oshmem implements OpenSHMEM 1.4).
rows=(barrier bcast reduce_sum_int64 reduce_sum_float64 fcollect collect alltoall alltoalls inscan_sum_int64 exscan_sum_int64)
peerless=" inscan_sum_int64 exscan_sum_int64 "
goshmem() { # np round row
    run timeout "$tmo" "$mpirun" --allow-run-as-root --oversubscribe -np "$1" "$perf" host "${common[@]}" -only "^$3\$" \
        >>"$out/goshmem-np$1-r$2.jsonl" 2>>"$out/goshmem-np$1.log" ||
        { tail "$out/goshmem-np$1.log" >&2; die "goshmem-perf at $1 PEs ($3) failed"; }
}
openshmem() { # np round row
    # The OpenSHMEM heap: six buffers of 2 x maxsize x np, with room to spare.
    local heap=$(( (12 * maxsize * $1 + (64 << 20)) ))
    run timeout "$tmo" oshrun --allow-run-as-root --oversubscribe -np "$1" \
        --mca opal_common_ucx_opal_mem_hooks 0 -x SHMEM_SYMMETRIC_HEAP_SIZE="$heap" \
        "$build/oshbench" "${common[@]}" -rows "$3" >"$build/osh.out" 2>>"$out/openshmem-np$1.log" ||
        { tail "$out/openshmem-np$1.log" >&2; die "oshbench at $1 PEs ($3) failed"; }
    grep '^{' "$build/osh.out" >>"$out/openshmem-np$1-r$2.jsonl" || die "no OpenSHMEM rows at $1 PEs ($3)"
}

for np in $nps; do
    for r in $(seq 1 "$rounds"); do
        step "$np PEs, round $r of $rounds (load $(load))"
        for k in "${!rows[@]}"; do
            row="${rows[$k]}"
            if [[ $peerless == *" $row "* ]]; then goshmem "$np" "$r" "$row"; continue; fi
            if (( (r + k) % 2 )); then goshmem "$np" "$r" "$row"; openshmem "$np" "$r" "$row"
            else openshmem "$np" "$r" "$row"; goshmem "$np" "$r" "$row"; fi
        done
        if [[ $np == 2 ]]; then
            run "$build/copyfloor" -iters 500 >"$out/floor-np2-r$r.jsonl" || die "copyfloor failed"
        fi
    done
    "$perf" merge "$out"/goshmem-np"$np"-r*.jsonl >"$out/goshmem-np$np.jsonl"
    "$perf" merge "$out"/openshmem-np"$np"-r*.jsonl >"$out/openshmem-np$np.jsonl"
    if [[ $np == 2 ]]; then "$perf" merge "$out"/floor-np2-r*.jsonl >"$out/floor-np2.jsonl"; fi
done

step "goshmem put_bw 1 MiB at 2 PEs (the copy bandwidth a reduce is measured against)"
run timeout "$tmo" "$mpirun" --allow-run-as-root --oversubscribe -np 2 "$perf" host -json -only '^put_bw$' \
    -minsize 1048576 -maxsize 1048576 >"$out/put_bw.jsonl" 2>"$out/put_bw.log" ||
    echo "bench/coll/run.sh: warning: put_bw run failed" >&2
load_after="$(load)"

{
    echo "date:        $(date -Is)"
    echo "host:        $(hostname)"
    echo "cpu:         $(lscpu | sed -n 's/^Model name: *//p' | head -1)"
    echo "nproc:       $(nproc) (online: $(cat /sys/devices/system/cpu/online 2>/dev/null))"
    echo "kernel:      $(uname -srm)"
    echo "loadavg:     before $load_before, after $load_after (other work on this machine skews results)"
    echo "go:          $(go version)"
    echo "mpirun:      $("$mpirun" --version 2>/dev/null | head -1)"
    echo "oshmem:      $(grep -m1 -o 'oshmem [0-9.]*[^)]*' "$out"/openshmem-np*.log | head -1 || echo unknown)"
    echo "goshmem:     $ver"
    echo "rounds:      $rounds per PE count ($nps), each row a goshmem job and an OpenSHMEM job back to back; iters $iters (fewer above 4 KiB, at least 100), warmup $warmup"
    echo "duration:    $((SECONDS - t_start)) s"
    echo
    echo "commands (from $root):"
    awk '!seen[$0]++ { print "  " $0 }' "$cmds"
} >"$out/machine.txt"
rm -f "$cmds"

for np in $nps; do
    step "report, $np PEs"
    {
        echo "goshmem-perf host -coll vs OpenSHMEM (oshmem) -coll, $np PEs on $(nproc) CPUs, median of $rounds rounds, $(date '+%Y-%m-%d %H:%M')"
        floor=()
        [[ -s "$out/floor-np$np.jsonl" ]] && floor=("$out/floor-np$np.jsonl")
        "$perf" report -md "$out/ratios-np$np.md" -title "$np PEs, median of $rounds rounds" \
            "$out/goshmem-np$np.jsonl" "$out/openshmem-np$np.jsonl" "${floor[@]}"
    } | tee "$out/ratios-np$np.txt"
done
echo
echo "wrote $out/ ($((SECONDS - t_start)) s)"
