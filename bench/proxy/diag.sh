#!/usr/bin/env bash
# bench/proxy/diag.sh OUTDIR: where the proxy worker's time goes under GPU load.
# Two PEs, one per GPU (nvidia-h200-x2; no MPS needed), every peer through the
# proxy. The rate row (64 CTAs x 500 8-byte nbi puts, T=1 R=4 B=16) with
# GOSHMEM_INFO=1 prints each worker's driver time per kind of call at
# Finalize. Rows: the rate row with 64 CTAs (worker stream at the highest
# priority, the default) and at normal priority (GOSHMEM_PROXY_STREAM_PRIORITY=
# normal), 8 CTAs, two workers; the loaded round trip (64 background CTAs) on a
# reserved ring with one and two workers and on the shared ring (R=1). Needs bin/goshmem-perf and
# bin/gpu/proxy.fatbin.
set -u
out=${1:?OUTDIR}; mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GOSHMEM_GPU=on GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=10s GOSHMEM_INFO=1
export GOSHMEM_PROXY_WORKERS=${GOSHMEM_PROXY_WORKERS:-1} GOSHMEM_PROXY_RINGS=4 GOSHMEM_PROXY_BATCH=16 GOSHMEM_PROXY_MODE=tuned
V="-x GOSHMEM_GPU -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -x GOSHMEM_INFO -x GOSHMEM_PROXY_WORKERS -x GOSHMEM_PROXY_RINGS -x GOSHMEM_PROXY_BATCH -x GOSHMEM_PROXY_MODE -x GOSHMEM_PROXY_STREAM_PRIORITY -x CUDA_DEVICE_MAX_CONNECTIONS"
R="timeout 40 mpirun --bind-to none -np 2 $V bin/goshmem-perf proxy -module bin/gpu/proxy.fatbin -json"
row() { # label args...
    local l=$1; shift
    $R "$@" >"$out/$l.jsonl" 2>"$out/$l.log"; echo "$l rc=$?" >>"$out/summary.txt"
    grep -h '"name"' "$out/$l.jsonl" | head -3 >>"$out/summary.txt"
    grep -h "proxy worker" "$out/$l.log" >>"$out/summary.txt"
}
export GOSHMEM_PROXY_STREAM_PRIORITY=high CUDA_DEVICE_MAX_CONNECTIONS=8
row rate64 -rows rate -ctas 64 -per-cta 500
GOSHMEM_PROXY_STREAM_PRIORITY=normal row rate64_normalprio -rows rate -ctas 64 -per-cta 500
row rate8 -rows rate -ctas 8 -per-cta 1000
GOSHMEM_PROXY_WORKERS=2 row rate64_T2 -rows rate -ctas 64 -per-cta 500
row loaded_ctx1 -rows loaded -bg 64 -probe-ctx 1 -iters 100 -warmup 10
GOSHMEM_PROXY_WORKERS=2 row loaded_ctx1_T2 -rows loaded -bg 64 -probe-ctx 1 -iters 100 -warmup 10
GOSHMEM_PROXY_RINGS=1 row loaded_ctx0_R1 -rows loaded -bg 64 -probe-ctx 0 -iters 100 -warmup 10
cat "$out/summary.txt"
