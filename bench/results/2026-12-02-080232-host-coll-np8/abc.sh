#!/usr/bin/env bash
# abc.sh OUT MAINBIN BRANCHBIN OSHBENCH: bench/coll/run.sh's rows and commands, with two goshmem
# builds (main = before, branch = after) and the OpenSHMEM peer, in the same rounds: per round and
# row, the three jobs back to back, in an order that rotates by round and row.
# Env: COLL_NPS ("8"), COLL_ROUNDS (5), COLL_ITERS (2000), COLL_MAXSIZE (1048576), BENCH_WARMUP (1000),
#      COLL_ROWS (bench/coll/run.sh's rows, without the peerless scans).
set -euo pipefail
out=$1 main=$2 branch=$3 osh=$4
nps="${COLL_NPS:-8}" rounds="${COLL_ROUNDS:-5}" iters="${COLL_ITERS:-2000}"
maxsize="${COLL_MAXSIZE:-1048576}" warmup="${BENCH_WARMUP:-1000}" tmo=600
read -r -a rows <<<"${COLL_ROWS:-barrier bcast reduce_sum_int64 reduce_sum_float64 fcollect collect alltoall alltoalls}"
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun=$(command -v mpirun.openmpi || command -v mpirun)
cmds="$out/commands.txt"
run() { printf '%s\n' "$*" >>"$cmds"; "$@"; }
common=(-json -coll -coll-iters "$iters" -barrier-iters "$iters" -warmup "$warmup" -coll-maxsize "$maxsize")
gosh() { # side bin np round row
    run timeout "$tmo" "$mpirun" --allow-run-as-root --oversubscribe -np "$3" "$2" host "${common[@]}" -only "^$5\$" \
        >>"$out/$1-np$3-r$4.jsonl" 2>>"$out/$1-np$3.log"
}
oshm() { # np round row
    local heap=$(( (12 * maxsize * $1 + (64 << 20)) ))
    run timeout "$tmo" oshrun --allow-run-as-root --oversubscribe -np "$1" \
        --mca opal_common_ucx_opal_mem_hooks 0 -x SHMEM_SYMMETRIC_HEAP_SIZE="$heap" \
        "$osh" "${common[@]}" -rows "$3" >"$out/osh.out" 2>>"$out/openshmem-np$1.log"
    grep '^{' "$out/osh.out" >>"$out/openshmem-np$1-r$2.jsonl"; rm -f "$out/osh.out"
}
for np in $nps; do
    for r in $(seq 1 "$rounds"); do
        echo "np $np round $r load $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)" | tee -a "$out/load.log" >&2
        for k in "${!rows[@]}"; do
            row=${rows[$k]}
            case $(( (r + k) % 3 )) in
            0) oshm "$np" "$r" "$row"; gosh main "$main" "$np" "$r" "$row"; gosh branch "$branch" "$np" "$r" "$row" ;;
            1) gosh main "$main" "$np" "$r" "$row"; gosh branch "$branch" "$np" "$r" "$row"; oshm "$np" "$r" "$row" ;;
            2) gosh branch "$branch" "$np" "$r" "$row"; oshm "$np" "$r" "$row"; gosh main "$main" "$np" "$r" "$row" ;;
            esac
        done
    done
    for s in main branch openshmem; do "$branch" merge "$out"/$s-np"$np"-r*.jsonl >"$out/$s-np$np.jsonl"; done
done
echo "load after $(cut -d' ' -f1-3 /proc/loadavg) $(date -u +%T)" >>"$out/load.log"
