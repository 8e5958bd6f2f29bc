#!/usr/bin/env bash
# tests/gpu/proxy_ofi.sh [OUTDIR]: the GPU proxy's ofi backend on the GPU
# machine (issue 7 item 2: inter-node GPU heaps through the proxy).
#
# Every device access to the other PE goes through the CPU proxy
# (GOSHMEM_GPU_TRANSPORT=proxy) and its ofi backend (GOSHMEM_PROXY_BACKEND=ofi,
# GOSHMEM_TRANSPORT=ofi): the origin's worker stages each request in host
# memory and writes it over libfabric into the target's inbox; the target's
# proxy applies it to its own GPU heap and acknowledges it. On one machine
# this is the inter-node path over loopback (provider tcp;ofi_rxm, or
# sockets when tcp is not offered).
#
#   1. device suite bin/devtest (devtest_remote.fatbin: the kernels that
#      reach peers through the proxy), 2 PEs on one GPU with MPS;
#   2. one latency row: goshmem-perf proxy -rows put_quiet,rtt over it;
#   3. with >= 2 GPUs: the device suite on two GPUs (no MPS).
#
# Needs (built on the dev machine by `make gpu`, carried): bin/devtest,
# bin/goshmem-perf, bin/gpu/{devtest_remote,compat_remote,proxy}.fatbin.
# Writes OUTDIR (default bench/out/gpu-proxy-ofi): run.log, devtest*.log,
# latency.jsonl, latency.log, summary.md. About 2-4 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-bench/out/gpu-proxy-ofi}}
mkdir -p "$out"
: >"$out/run.log"
exec > >(tee -a "$out/run.log") 2>&1

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GOSHMEM_GPU=on GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_PROXY_BACKEND=ofi GOSHMEM_TRANSPORT=ofi
export GOSHMEM_TIMEOUT=${RTIMEOUT:-20s} GOSHMEM_INFO=1
export GOSHMEM_OFI_PROVIDER=${GOSHMEM_OFI_PROVIDER:-tcp;ofi_rxm}
VARS="-x GOSHMEM_GPU -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_PROXY_BACKEND -x GOSHMEM_TRANSPORT -x GOSHMEM_TIMEOUT -x GOSHMEM_INFO -x GOSHMEM_OFI_PROVIDER"
MPIRUN="mpirun --allow-run-as-root --oversubscribe --bind-to none -np 2"
DTR="bin/devtest -fatbin bin/gpu/devtest_remote.fatbin -compat bin/gpu/compat_remote.fatbin -watchdog ${WATCHDOG:-30s}"
PERF=bin/goshmem-perf

for f in bin/devtest $PERF bin/gpu/devtest_remote.fatbin bin/gpu/compat_remote.fatbin bin/gpu/proxy.fatbin; do
    [ -s "$f" ] || { echo "missing $f: run 'make gpu' on the dev machine and carry bin/"; exit 1; }
done
. tests/gpu/mps.sh
trap mps_stop EXIT

echo "== proxy ofi backend $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi -L
ngpu=$(nvidia-smi -L | wc -l)
echo "libfabric: $(ldd bin/devtest 2>/dev/null | grep -o 'libfabric[^ ]* => [^ ]*' || echo 'dlopen')"

rows=()
fails=0
row() { rows+=("| $1 | \`$2\` | $3 | $4 | $5 |"); }

# step NAME LOG LIMIT CMD...: runs CMD with a time limit, output to OUTDIR/LOG
step() {
    local name=$1 logf=$out/$2 limit=$3
    shift 3
    echo
    echo "== $name: $*"
    local t0 rc secs line verdict=PASS
    t0=$(date +%s)
    timeout -k 5 "$limit" "$@" >"$logf" 2>&1
    rc=$?
    secs=$(($(date +%s) - t0))
    tail -n 25 "$logf"
    line=$(grep -E 'devtest: [0-9]+ passed' "$logf" | tail -1 | sed 's/^devtest: //')
    [ "$rc" = 124 ] && verdict="FAIL (timed out after ${limit}s)"
    [ "$rc" != 0 ] && [ "$rc" != 124 ] && verdict="FAIL (rc $rc)"
    [ "$verdict" != PASS ] && fails=$((fails + 1))
    row "$name" "$*" "$verdict" "$secs" "${line:-}"
    last_rc=$rc
}

# the provider: tcp;ofi_rxm, else sockets (a libfabric without tcp)
# (fabric.ErrNoProvider: "no matching libfabric provider")
no_provider() { grep -qi 'no matching libfabric provider' "$1"; }

mps_start || { echo "MPS did not start"; row "MPS" "nvidia-cuda-mps-control -d" "FAIL" 0 ""; fails=1; }
if [ "$fails" = 0 ]; then
    step "devtest, 2 PEs, 1 GPU, MPS, proxy over ofi ($GOSHMEM_OFI_PROVIDER)" devtest_mps.log 120 \
        $MPIRUN $VARS $DTR -rounds "${ROUNDS:-50}"
    if [ "$last_rc" != 0 ] && no_provider "$out/devtest_mps.log" && [ "$GOSHMEM_OFI_PROVIDER" != sockets ]; then
        echo "== $GOSHMEM_OFI_PROVIDER not offered here: again with sockets"
        export GOSHMEM_OFI_PROVIDER=sockets
        mps_stop; mps_start
        step "devtest, 2 PEs, 1 GPU, MPS, proxy over ofi (sockets)" devtest_mps_sockets.log 120 \
            $MPIRUN $VARS $DTR -rounds "${ROUNDS:-50}"
    fi
    echo "-- GOSHMEM_INFO (which backend serves which peer):"
    grep -h 'info: PE [01]: GPU' "$out"/devtest_mps*.log | head -2
    grep -h 'proxy worker' "$out"/devtest_mps*.log | head -4
    [ "$last_rc" != 0 ] && { mps_stop; mps_start; }

    step "goshmem-perf proxy put_quiet,rtt over ofi ($GOSHMEM_OFI_PROVIDER)" latency.log 60 \
        $MPIRUN $VARS $PERF proxy -module bin/gpu/proxy.fatbin -json -rows put_quiet,rtt -iters "${ITERS:-2000}" -warmup 100
    # the JSON rows are on stdout, the info lines on stderr: both went to the log
    grep '^{' "$out/latency.log" >"$out/latency.jsonl"
    echo "-- latency rows:"
    cat "$out/latency.jsonl"
    mps_stop
fi

if [ "$ngpu" -ge 2 ]; then
    step "devtest, 2 PEs, 2 GPUs, proxy over ofi ($GOSHMEM_OFI_PROVIDER)" devtest_2gpu.log 90 \
        $MPIRUN $VARS $DTR -rounds "${ROUNDS_2GPU:-30}"
else
    row "devtest, 2 PEs, 2 GPUs" "-" "NOT RUN (only $ngpu GPU)" 0 ""
fi

{
    echo "# GPU proxy, ofi backend (tests/gpu/proxy_ofi.sh)"
    echo
    echo "- date: $(date -u +%FT%TZ); GPUs: $ngpu; driver $(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)"
    echo "- env: GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_PROXY_BACKEND=ofi GOSHMEM_TRANSPORT=ofi GOSHMEM_OFI_PROVIDER=$GOSHMEM_OFI_PROVIDER GOSHMEM_TIMEOUT=$GOSHMEM_TIMEOUT"
    echo "- one machine: the inter-node path over loopback (requests staged in host memory, applied by the target PE's proxy)"
    echo
    echo "| step | command | result | seconds | devtest summary |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "latency rows (latency.jsonl):"
    echo
    sed 's/^/    /' "$out/latency.jsonl" 2>/dev/null
    echo
    echo "overall: $([ $fails = 0 ] && echo PASS || echo "FAIL ($fails steps failed)")"
} >"$out/summary.md"
echo
cat "$out/summary.md"
exit $((fails > 0))
