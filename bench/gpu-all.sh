#!/usr/bin/env bash
# bench/gpu-all.sh PART OUTDIR: every GPU-machine script of the project in one
# device call, each under its own timeout, logs kept even when a step fails.
#   PART=core: device suite (tests/gpu/run.sh), device perf vs NVSHMEM on 2 GPUs
#              and on 1 GPU with MPS (bench/gpu/run.sh), Jacobi vs NVSHMEM.
#   PART=paths: Jacobi kernel-build A/B, the device suite (proxy and IBGDA-over-soft-NIC steps
#              included), proxy and CXI (emulated trigger) benchmarks; IBGDA's with IBGDA=1.
# Needs `make gpu` binaries and fatbins in bin/ (carried from the dev machine).
set -u
PART=${1:?core|paths}
OUTDIR=${2:?OUTDIR}
mkdir -p "$OUTDIR"
export NVSHMEM_DISABLE_NVLS=1
step() { # name seconds command...
    local name=$1 secs=$2
    shift 2
    local t0=$(date +%s)
    timeout "$secs" "$@" >"$OUTDIR/$name.out" 2>&1
    echo "$name rc=$? $(($(date +%s) - t0))s" | tee -a "$OUTDIR/steps.txt"
}
ngpu=$(nvidia-smi -L | wc -l)
echo "GPUs: $ngpu; $(date -u +%FT%TZ)" >"$OUTDIR/steps.txt"
case $PART in
core)
    step devtest 240 bash tests/gpu/run.sh "$OUTDIR/devtest"
    step perf 150 env CTAS=0 bash bench/gpu/run.sh "$OUTDIR/perf"
    if [ "$ngpu" -ge 2 ]; then
        step perf-1gpu 150 env CTAS=0 CUDA_VISIBLE_DEVICES=0 bash bench/gpu/run.sh "$OUTDIR/perf-1gpu"
    fi
    step jacobi 200 env NITER=1000 bash bench/jacobi/run.sh "$OUTDIR/jacobi"
    ;;
paths)
    [ -f bench/jacobi-ab.sh ] && [ "$ngpu" -ge 2 ] && step jacobi-ab 70 bash bench/jacobi-ab.sh "$OUTDIR/jacobi-ab"
    step devtest 180 bash tests/gpu/run.sh "$OUTDIR/devtest"
    [ -f bench/proxy/run.sh ] && step proxy 170 bash bench/proxy/run.sh "$OUTDIR/proxy"
    [ -f bench/cxi/run.sh ] && step cxi 150 bash bench/cxi/run.sh "$OUTDIR/cxi"
    [ "${IBGDA:-0}" = 1 ] && [ -f bench/ibgda/run.sh ] && step ibgda 120 bash bench/ibgda/run.sh "$OUTDIR/ibgda"
    ;;
esac
cat "$OUTDIR/steps.txt"
