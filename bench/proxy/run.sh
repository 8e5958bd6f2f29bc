#!/usr/bin/env bash
# bench/proxy/run.sh OUTDIR: `goshmem-perf proxy` on the GPU machine (issue 7).
#
# Two PEs on one GPU (MPS started here and stopped at the end), every peer
# through the CPU proxy (GOSHMEM_GPU_TRANSPORT=proxy): the GPU enqueues
# 16-byte descriptors into host-pinned rings, CPU workers submit them as
# stream-ordered copies / atomic kernels between the CUDA-IPC-mapped heaps
# and write the completion counter with cuStreamWriteValue64. Real end to
# end: GPU, host rings, CPU workers, CUDA transport (no NIC: one node).
#
# Needs from the dev machine (make gpu; carry bin/): bin/goshmem-perf,
# bin/gpu/proxy.fatbin, bin/gpu/perf.fatbin. Writes OUTDIR/{*.jsonl,*.log,
# proxy_rate.png, summary.md}. Every step is wrapped in timeout; about 3 min.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-bench/out/proxy}}
mkdir -p "$out"
exec > >(tee -a "$out/run.log") 2>&1

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GOSHMEM_GPU=on GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=60s
PERF=bin/goshmem-perf
for f in $PERF bin/gpu/proxy.fatbin bin/gpu/perf.fatbin; do
    [ -s "$f" ] || { echo "missing $f: run 'make gpu' on the dev machine and carry bin/"; exit 1; }
done
. tests/gpu/mps.sh
trap mps_stop EXIT
mps_start || { echo "MPS did not start: the concurrent rows need it"; exit 1; }

VARS="-x GOSHMEM_GPU -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -x GOSHMEM_PROXY_WORKERS -x GOSHMEM_PROXY_RINGS -x GOSHMEM_PROXY_BATCH -x GOSHMEM_PROXY_MODE -x GOSHMEM_INFO"
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2 $VARS"
fails=0
# run NAME LIMIT T R B MODE ARGS...: one goshmem-perf proxy run, JSON rows appended to OUTDIR/NAME.jsonl
run() {
    local name=$1 limit=$2
    export GOSHMEM_PROXY_WORKERS=$3 GOSHMEM_PROXY_RINGS=$4 GOSHMEM_PROXY_BATCH=$5 GOSHMEM_PROXY_MODE=$6
    shift 6
    echo "== $name: T=$GOSHMEM_PROXY_WORKERS R=$GOSHMEM_PROXY_RINGS B=$GOSHMEM_PROXY_BATCH $GOSHMEM_PROXY_MODE: $*"
    timeout "$limit" $MPIRUN $PERF proxy -module bin/gpu/proxy.fatbin -json "$@" >>"$out/$name.jsonl" 2>>"$out/$name.log"
    local rc=$?
    [ $rc != 0 ] && { echo "   FAILED rc $rc (see $out/$name.log)"; tail -5 "$out/$name.log"; fails=$((fails + 1)); }
    tail -n 4 "$out/$name.jsonl" 2>/dev/null
}
: >"$out/latency.jsonl"; : >"$out/rate.jsonl"; : >"$out/loaded.jsonl"
echo "== $(date -u +%FT%TZ) on $(hostname)"; nvidia-smi -L; lscpu | grep -E 'Model name|^CPU\(s\)|MHz' | head -4

# 1. one 8 B operation (seed Table 3): tuned vs baseline enqueue, put + completion, round trip
GOSHMEM_INFO=1 run latency 60 1 4 16 tuned -rows enqueue,put_quiet,rtt -iters 10000
run latency 60 1 4 16 baseline -rows enqueue,put_quiet,rtt -iters 10000

# 2. message rate against workers T, rings R, chain B (seed Fig. 7)
for B in 1 4 16; do
    for T in 1 2 4; do
        run rate 40 $T 4 $B tuned -rows rate -ctas 64 -per-cta 2000
    done
done
for R in 1 16; do run rate 40 4 $R 16 tuned -rows rate -ctas 64 -per-cta 2000; done
timeout 30 $PERF proxy -plot-rates "$out/rate.jsonl" -o "$out/proxy_rate.png" || echo "plot failed"

# 3. loaded round trip, 64 background CTAs (seed Fig. 6 / Table 11): one ring for
#    the default context, the probe on it (shared) or on context 1's reserved ring
run loaded 90 2 1 16 tuned -rows loaded -bg 64 -probe-ctx 0 -iters 300 -warmup 30
run loaded 90 2 1 16 tuned -rows loaded -bg 64 -probe-ctx 1 -iters 300 -warmup 30

# 4. the regular device rows over the proxy, and over load/store for reference
export GOSHMEM_PROXY_WORKERS=1 GOSHMEM_PROXY_RINGS=4 GOSHMEM_PROXY_BATCH=16 GOSHMEM_PROXY_MODE=tuned
echo "== device rows over the proxy"
timeout 90 $MPIRUN $PERF device -module bin/gpu/perf.fatbin -json -diag=false -variant proxy -iters 2000 \
    -maxsize 65536 -maxsize-thread 4096 -only '^(put_lat|p_lat|g_lat|pingpong_p|pingpong_putsignal|barrier)$' \
    >"$out/device_proxy.jsonl" 2>"$out/device_proxy.log" || { echo "   FAILED (device rows over the proxy)"; fails=$((fails + 1)); }
echo "== device rows over load/store (p2p), same rows"
GOSHMEM_GPU_TRANSPORT=p2p timeout 90 $MPIRUN $PERF device -module bin/gpu/perf.fatbin -json -diag=false -variant p2p -iters 2000 \
    -maxsize 65536 -maxsize-thread 4096 -only '^(p_lat|pingpong_p)$' \
    >"$out/device_p2p.jsonl" 2>"$out/device_p2p.log" || { echo "   FAILED (p2p reference)"; fails=$((fails + 1)); }

# 5. summary
{
    echo "# goshmem proxy benchmark (bench/proxy/run.sh)"
    echo
    echo "- date: $(date -u +%FT%TZ); host $(hostname); $(nvidia-smi -L | head -1)"
    echo "- CPU: $(lscpu | grep 'Model name' | sed 's/.*: *//')"
    echo "- 2 PEs on one GPU with MPS, GOSHMEM_GPU_TRANSPORT=proxy (one node: the workers submit CUDA copies/atomic kernels, no NIC)"
    echo "- seed 000 Table 3 (P-IB, tuned mini-proxy): issue 0.13 us, put+completion 4.10 us, RTT 5.89 us; baseline 2.27 / 7.07 / 14.59 us"
    echo
    echo "| row | variant | median us | p99 us | bw_gbs (rate rows: M msg/s) | timing |"
    echo "|---|---|---|---|---|---|"
    cat "$out"/latency.jsonl "$out"/rate.jsonl "$out"/loaded.jsonl "$out"/device_proxy.jsonl "$out"/device_p2p.jsonl 2>/dev/null |
        sed -n 's/.*"name":"\([^"]*\)".*"size":\([0-9]*\).*"median_us":\([0-9.e+-]*\),"p99_us":\([0-9.e+-]*\),"bw_gbs":\([0-9.e+-]*\).*"timing":"\([^"]*\)".*"variant":"\([^"]*\)".*/| \1 (\2 B) | \7 | \3 | \4 | \5 | \6 |/p'
    echo
    echo "overall: $([ $fails = 0 ] && echo PASS || echo "FAIL ($fails steps)")"
} >"$out/summary.md"
cat "$out/summary.md"
exit $((fails > 0))
