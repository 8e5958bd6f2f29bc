#!/usr/bin/env bash
# bench/proxy/run.sh OUTDIR: `goshmem-perf proxy` on the GPU machine (issue 7).
#
# Two PEs (one per GPU on a 2-GPU machine, else sharing one with MPS; the
# MPS daemon is started here either way and stopped at the end), every peer
# through the CPU proxy (GOSHMEM_GPU_TRANSPORT=proxy): the GPU enqueues
# 16-byte descriptors into host-pinned rings, CPU workers submit them as
# stream-ordered copies / stream writes / atomic kernels between the
# CUDA-IPC-mapped heaps and write the completion counter with
# cuStreamWriteValue64. Real end to end: GPU, host rings, CPU workers, CUDA
# transport (no NIC: one node).
#
# Robustness (the 2026-11-29 paths run lost every row after the first hung
# rate row: killing a client in the middle of a kernel left the MPS server
# failing the next client's Init with CUDA_ERROR_LAUNCH_FAILED):
#   - every row is one mpirun under its own time limit (run_limited: the
#     row's processes, found by PID, get SIGTERM then SIGKILL);
#   - after a row that failed or timed out, the MPS daemon is stopped and
#     started again before the next row;
#   - GOSHMEM_TIMEOUT (10 s) is below every row's limit, so a device wait
#     that never ends traps with GOSHMEMI_ERR_PROXY_TIMEOUT and names what
#     it waited for (space / done / reply) instead of being killed silently;
#   - the whole script keeps to BUDGET seconds (default 160: it runs as a
#     170 s step of bench/gpu-all.sh paths): a row that would not fit is
#     skipped and reported as such, and the summary is always written.
# Row order: the issue's key rows first (enqueue tuned / baseline with put +
# completion and round trip; loaded round trip, shared vs reserved ring, 64
# background CTAs), then the message-rate curve over T and B, then the
# device rows over the proxy if time is left.
#
# Needs from the dev machine (make gpu; carry bin/): bin/goshmem-perf,
# bin/gpu/proxy.fatbin, bin/gpu/perf.fatbin. Writes OUTDIR/{*.jsonl,*.log,
# proxy_rate.png, rows.txt, summary.md}.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-bench/out/proxy}}
mkdir -p "$out"
exec > >(tee -a "$out/run.log") 2>&1

T0=$(date +%s)
BUDGET=${BUDGET:-160}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# GOSHMEM_INFO=1: the settings at Init and, at Finalize, each worker's requests,
# chains and time spent submitting them (in each row's .log)
export GOSHMEM_GPU=on GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=10s GOSHMEM_INFO=1
PERF=bin/goshmem-perf
for f in $PERF bin/gpu/proxy.fatbin bin/gpu/perf.fatbin bin/gpu/perf_remote.fatbin; do
    [ -s "$f" ] || { echo "missing $f: run 'make gpu' on the dev machine and carry bin/"; exit 1; }
done
. tests/gpu/mps.sh
trap mps_stop EXIT
mps_start || { echo "MPS did not start: the concurrent rows need it"; exit 1; }

VARS="-x GOSHMEM_GPU -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -x GOSHMEM_PROXY_WORKERS -x GOSHMEM_PROXY_RINGS -x GOSHMEM_PROXY_BATCH -x GOSHMEM_PROXY_MODE -x GOSHMEM_INFO"
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 $VARS"
fails=0
: >"$out/rows.txt"

# descendants PID: every process below PID (children first found by PPID).
descendants() {
    local c
    for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        echo "$c"
        descendants "$c"
    done
}

# alive PID: the process exists and is not a zombie.
alive() {
    local s
    s=$(ps -o stat= -p "$1" 2>/dev/null) && [ -n "$s" ] && [ "${s#Z}" = "$s" ]
}

# run_limited SECONDS CMD...: runs CMD; past SECONDS, SIGTERM to CMD and
# everything below it (mpirun and its ranks, by PID), SIGKILL 3 s later;
# returns CMD's status, or 124 when it had to be stopped.
run_limited() {
    local limit=$1
    shift
    "$@" &
    local pid=$! ticks=0
    while kill -0 "$pid" 2>/dev/null; do
        if [ "$ticks" -ge $((limit * 10)) ]; then
            local procs p n
            procs="$pid $(descendants "$pid")"
            kill -TERM $procs 2>/dev/null
            for n in $(seq 30); do # up to 3 s for them to go
                n=0
                for p in $procs; do alive "$p" && n=1; done
                [ $n = 0 ] && break
                sleep 0.1
            done
            kill -KILL $procs 2>/dev/null
            wait "$pid" 2>/dev/null
            return 124
        fi
        sleep 0.1
        ticks=$((ticks + 1))
    done
    wait "$pid"
}

# mps_restart: after a failed row, so that its fault cannot fail the next
# rows' Init (what happened to the 2026-11-29 run).
mps_restart() {
    echo "   restarting MPS after the failure"
    mps_stop
    mps_start || echo "   MPS did not restart"
}

left() { echo $((BUDGET - ($(date +%s) - T0))); }

# budget DESC MIN LIMIT: with fewer than MIN s of the budget left, logs DESC
# as SKIPPED and returns 1; else sets the caller's `limit` to LIMIT, at most
# the time left - 8 s.
budget() {
    local l
    l=$(left)
    if [ "$l" -lt "$2" ]; then
        echo "== SKIPPED (time budget: ${l}s left) $1"
        echo "SKIPPED $1" >>"$out/rows.txt"
        return 1
    fi
    limit=$3
    [ "$limit" -gt $((l - 8)) ] && limit=$((l - 8))
    return 0
}

# row NAME LIMIT T R B MODE ARGS...: one goshmem-perf proxy run, JSON rows
# appended to OUTDIR/NAME.jsonl, its stderr to OUTDIR/NAME.log.
row() {
    local name=$1 limit=$2
    export GOSHMEM_PROXY_WORKERS=$3 GOSHMEM_PROXY_RINGS=$4 GOSHMEM_PROXY_BATCH=$5 GOSHMEM_PROXY_MODE=$6
    shift 6
    local desc="$name: T=$GOSHMEM_PROXY_WORKERS R=$GOSHMEM_PROXY_RINGS B=$GOSHMEM_PROXY_BATCH $GOSHMEM_PROXY_MODE: $*"
    # a stopped row costs its limit + 3 s (SIGKILL grace) + ~3 s (MPS restart)
    budget "$desc" 16 "$limit" || return 0
    echo "== $desc (limit ${limit}s, $(($(date +%s) - T0))s into the run)"
    local t0 rc
    t0=$(date +%s)
    echo "---- $desc" >>"$out/$name.log"
    run_limited "$limit" $MPIRUN $PERF proxy -module bin/gpu/proxy.fatbin -json "$@" >>"$out/$name.jsonl" 2>>"$out/$name.log"
    rc=$?
    local secs=$(($(date +%s) - t0))
    if [ $rc != 0 ]; then
        local why="FAILED rc $rc"
        [ $rc = 124 ] && why="TIMED OUT after ${limit}s"
        echo "   $why in ${secs}s (see $out/$name.log)"
        tail -5 "$out/$name.log"
        echo "$why ${secs}s $desc" >>"$out/rows.txt"
        fails=$((fails + 1))
        mps_restart
    else
        echo "ok ${secs}s $desc" >>"$out/rows.txt"
    fi
    grep -F "\"variant\":\"T${GOSHMEM_PROXY_WORKERS}R${GOSHMEM_PROXY_RINGS}B${GOSHMEM_PROXY_BATCH}/$GOSHMEM_PROXY_MODE\"" "$out/$name.jsonl" 2>/dev/null | tail -n 4
}
: >"$out/latency.jsonl"; : >"$out/rate.jsonl"; : >"$out/loaded.jsonl"
echo "== $(date -u +%FT%TZ) on $(hostname), budget ${BUDGET}s"; nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)|MHz' | head -4

# 1. one 8 B operation: tuned (producer in registers, ctx p,
#    default context) and baseline enqueue, put + completion, round trip
row latency 30 1 4 16 tuned -rows enqueue,put_quiet,rtt -iters 10000
row latency 30 1 4 16 baseline -rows enqueue,put_quiet,rtt -iters 10000

# 2. loaded round trip, 64 background CTAs on each PE:
#    two workers, one ring for the default context; the probe shares it
#    (probe-ctx 0: it queues behind the bulk chains; few iterations, as each
#    takes that long) or has context 1's reserved ring, which the second
#    worker serves alone (proxy.go: with T >= 2 the last worker serves only
#    reserved rings)
row loaded 30 2 1 16 tuned -rows loaded -bg 64 -probe-ctx 1 -iters 100 -warmup 10
row loaded 40 2 1 16 tuned -rows loaded -bg 64 -probe-ctx 0 -iters 10 -warmup 2

# 3. message rate against workers T and chain B at R=4, rings R at T=4 B=16,
#    from 8 CTAs x 2000 puts; the rows most likely to be slow (small B) last.
#    One 64-CTA row for reference: many posting and waiting CTAs load the
#    host link the worker's driver submissions use (docs/proxy.md).
for T in 1 2 4; do row rate 15 $T 4 16 tuned -rows rate -ctas 8 -per-cta 2000; done
for R in 1 16; do row rate 15 4 $R 16 tuned -rows rate -ctas 8 -per-cta 2000; done
for B in 4 1; do
    for T in 1 2 4; do
        row rate 15 $T 4 $B tuned -rows rate -ctas 8 -per-cta 2000
    done
done
row rate64 15 1 4 16 tuned -rows rate -ctas 64 -per-cta 500
timeout 10 $PERF proxy -plot-rates "$out/rate.jsonl" -o "$out/proxy_rate.png" || echo "plot failed (no rate rows?)"

# 4. the regular device rows over the proxy, and over load/store for
#    reference, while the budget lasts
device_rows() { # name limit transport variant only
    local limit
    budget "device rows $4" 25 "$2" || return 0
    echo "== device rows over $3 (limit ${limit}s)"
    export GOSHMEM_PROXY_WORKERS=1 GOSHMEM_PROXY_RINGS=4 GOSHMEM_PROXY_BATCH=16 GOSHMEM_PROXY_MODE=tuned
    # kernels that reach peers through the proxy need GOSHMEM_REMOTE_TRANSPORTS;
    # built so, the block-scope kernels take too many registers a thread for
    # a 1024-thread block to launch (CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES): 256
    local mod=bin/gpu/perf.fatbin bt=1024
    [ "$3" = proxy ] && mod=bin/gpu/perf_remote.fatbin bt=256
    GOSHMEM_GPU_TRANSPORT=$3 run_limited "$limit" $MPIRUN $PERF device -module $mod -block-threads $bt -json -diag=false -variant "$4" \
        -iters 2000 -maxsize 65536 -maxsize-thread 4096 -only "$5" >"$out/$1.jsonl" 2>"$out/$1.log"
    local rc=$?
    if [ $rc != 0 ]; then
        echo "   FAILED rc $rc (device rows $4)"
        echo "FAILED rc $rc device rows $4" >>"$out/rows.txt"
        fails=$((fails + 1))
        mps_restart
    else
        echo "ok device rows $4" >>"$out/rows.txt"
    fi
}
device_rows device_proxy 60 proxy proxy '^(put_lat|p_lat|g_lat|pingpong_p|pingpong_putsignal|barrier)$'
device_rows device_p2p 40 p2p p2p '^(p_lat|pingpong_p)$'

# 5. summary
{
    echo "# goshmem proxy benchmark (bench/proxy/run.sh)"
    echo
    echo "- date: $(date -u +%FT%TZ); host $(hostname); $(nvidia-smi -L | head -1); $(($(date +%s) - T0)) s"
    echo "- CPU: $(lscpu | grep 'Model name' | sed 's/.*: *//')"
    echo "- 2 PEs with MPS, GOSHMEM_GPU_TRANSPORT=proxy (one node: the workers submit CUDA copies/stream writes/atomic kernels, no NIC)"
    echo "- published tuned CPU proxy (InfiniBand): issue 0.13 us, put+completion 4.10 us, RTT 5.89 us; baseline 2.27 / 7.07 / 14.59 us"
    echo
    echo "## rows"
    echo
    sed 's/^/    /' "$out/rows.txt"
    echo
    echo "| row | variant | median us | p99 us | bw_gbs (rate rows: M msg/s; loaded: background M msg/s) | timing |"
    echo "|---|---|---|---|---|---|"
    cat "$out"/latency.jsonl "$out"/loaded.jsonl "$out"/rate.jsonl "$out"/rate64.jsonl "$out"/device_proxy.jsonl "$out"/device_p2p.jsonl 2>/dev/null |
        sed -n 's/.*"name":"\([^"]*\)".*"size":\([0-9]*\).*"median_us":\([0-9.e+-]*\),"p99_us":\([0-9.e+-]*\),"bw_gbs":\([0-9.e+-]*\).*"timing":"\([^"]*\)".*"variant":"\([^"]*\)".*/| \1 (\2 B) | \7 | \3 | \4 | \5 | \6 |/p'
    echo
    echo "overall: $([ $fails = 0 ] && echo PASS || echo "FAIL ($fails steps)")"
} >"$out/summary.md"
cat "$out/summary.md"
exit $((fails > 0))
