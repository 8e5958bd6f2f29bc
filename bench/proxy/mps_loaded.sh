#!/usr/bin/env bash
# bench/proxy/mps_loaded.sh OUTDIR [TRIES]: 2 PEs on ONE GPU under MPS, the
# loaded round-trip row (64 background CTAs per PE posting on the default
# context, the probe on a reserved ring; T=2 R=1 B=16 tuned) TRIES times for
# each way in WAYS (default "keep:32 drain:32 drain:8", each
# GOSHMEM_PROXY_THROTTLE:GOSHMEM_PROXY_INFLIGHT), each try its own mpirun
# under `timeout`; then, each way, the shared-ring loaded row and the
# 64-CTA rate row (what draining costs). A try whose worker stream stalls
# ends at GOSHMEM_TIMEOUT (8 s) with the proxy's ring state in its log.
# Needs bin/goshmem-perf and bin/gpu/proxy.fatbin.
set -u
out=${1:?OUTDIR}; tries=${2:-6}; mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GOSHMEM_GPU=on GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=8s GOSHMEM_INFO=1
export GOSHMEM_PROXY_WORKERS=2 GOSHMEM_PROXY_RINGS=1 GOSHMEM_PROXY_BATCH=16 GOSHMEM_PROXY_MODE=tuned
V="-x GOSHMEM_GPU -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -x GOSHMEM_INFO -x GOSHMEM_PROXY_WORKERS -x GOSHMEM_PROXY_RINGS -x GOSHMEM_PROXY_BATCH -x GOSHMEM_PROXY_MODE -x GOSHMEM_PROXY_THROTTLE -x GOSHMEM_PROXY_INFLIGHT"
P="bin/goshmem-perf proxy -module bin/gpu/proxy.fatbin -json"
. tests/gpu/mps.sh
trap mps_stop EXIT
mps_start || { echo "MPS did not start"; exit 1; }
S=$out/summary.txt
for way in ${WAYS:-keep:32 drain:32 drain:8}; do
    export GOSHMEM_PROXY_THROTTLE=${way%%:*} GOSHMEM_PROXY_INFLIGHT=${way#*:}
    l=${way/:/-}
    pass=0
    for i in $(seq 1 "$tries"); do
        t0=$(date +%s)
        timeout 40 mpirun --bind-to none -np 2 $V $P -rows loaded -bg 64 -probe-ctx 1 -iters 100 -warmup 10 \
            >"$out/$l-$i.jsonl" 2>"$out/$l-$i.log"
        rc=$?
        row=$(grep -h '"name"' "$out/$l-$i.jsonl" | head -1 | grep -o '"median_us":[0-9.e+-]*')
        echo "$way try $i: rc=$rc $(( $(date +%s) - t0 ))s $row" | tee -a "$S"
        grep -h -o "proxy rings[^\"]*" "$out/$l-$i.log" | head -2 | cut -c1-1500 | sed 's/^/    /' | tee -a "$S"
        if [ $rc = 0 ]; then pass=$((pass + 1)); else mps_stop; mps_start >/dev/null || echo "MPS did not restart"; fi
    done
    echo "$way: $pass of $tries passed" | tee -a "$S"
    GOSHMEM_PROXY_RINGS=1 timeout 60 mpirun --bind-to none -np 2 $V $P -rows loaded -bg 64 -probe-ctx 0 -iters 10 -warmup 2 \
        >"$out/$l-shared.jsonl" 2>"$out/$l-shared.log"
    echo "$way loaded shared: rc=$?" | tee -a "$S"
    grep -h '"name"' "$out/$l-shared.jsonl" | cut -c1-220 | tee -a "$S"
    timeout 60 mpirun --bind-to none -np 2 $V $P -rows rate -ctas 64 -per-cta 500 >"$out/$l-rate.jsonl" 2>"$out/$l-rate.log"
    echo "$way rate 64 CTAs: rc=$?" | tee -a "$S"
    grep -h '"name"' "$out/$l-rate.jsonl" | cut -c1-220 | tee -a "$S"
    grep -h "proxy worker\|throttle" "$out/$l-rate.log" | head -6 | cut -c1-400 | sed 's/^/    /' >>"$S"
done
