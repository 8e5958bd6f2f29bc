#!/usr/bin/env bash
# bench/proxy/nomps.sh OUTDIR: the proxy's rate and loaded rows on two GPUs (one PE per
# GPU) without the MPS daemon and then with it, to tell what MPS does to the worker's
# CUDA submissions. Needs bin/goshmem-perf and bin/gpu/proxy.fatbin.
set -u
out=${1:?OUTDIR}; mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GOSHMEM_GPU=on GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=10s GOSHMEM_INFO=1
export GOSHMEM_PROXY_WORKERS=1 GOSHMEM_PROXY_RINGS=4 GOSHMEM_PROXY_BATCH=16 GOSHMEM_PROXY_MODE=tuned
V="-x GOSHMEM_GPU -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -x GOSHMEM_INFO -x GOSHMEM_PROXY_WORKERS -x GOSHMEM_PROXY_RINGS -x GOSHMEM_PROXY_BATCH -x GOSHMEM_PROXY_MODE"
R="timeout 40 mpirun --bind-to none -np 2 $V bin/goshmem-perf proxy -module bin/gpu/proxy.fatbin -json"
rows() { # label
    echo "== $1" | tee -a "$out/all.jsonl"
    $R -rows rate -ctas 64 -per-cta 500 >>"$out/all.jsonl" 2>>"$out/$1.log"; echo "rate rc=$?" | tee -a "$out/all.jsonl"
    $R -rows loaded -bg 64 -probe-ctx 1 -iters 100 -warmup 10 >>"$out/all.jsonl" 2>>"$out/$1.log"; echo "loaded ctx1 rc=$?" | tee -a "$out/all.jsonl"
    $R -rows loaded -bg 64 -probe-ctx 0 -iters 100 -warmup 10 >>"$out/all.jsonl" 2>>"$out/$1.log"; echo "loaded ctx0 rc=$?" | tee -a "$out/all.jsonl"
    grep "per chain" "$out/$1.log" | tee -a "$out/all.jsonl"
}
rows nomps
. tests/gpu/mps.sh
mps_start && rows mps
mps_stop
