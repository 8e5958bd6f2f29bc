#!/usr/bin/env bash
# tests/gpu/final.sh OUTDIR: the end-of-session check on the GPU machine, one
# call (about 5 minutes on nvidia-h200-x2): the device suite (tests/gpu/run.sh,
# incl. the proxy and IBGDA-over-the-emulated-NIC steps), the device suite over
# the proxy's ofi backend (tests/gpu/proxy_ofi.sh), the proxy benchmark on 2
# GPUs (bench/proxy/run.sh), the loaded row on ONE GPU under MPS with the
# default throttle (bench/proxy/mps_loaded.sh) and the IBGDA issue benchmark
# (bench/ibgda/run.sh). Needs what `make gpu` built: bin/devtest,
# bin/goshmem-perf, bin/gpu/*.fatbin. Writes OUTDIR/steps.txt and one folder
# per step; OUTDIR/final.tgz holds them all.
set -u
out=${1:?OUTDIR}; mkdir -p "$out"
step() { # name limit cmd...
    local n=$1 lim=$2; shift 2
    local t0=$(date +%s)
    timeout "$lim" "$@" >"$out/$n.out" 2>&1
    echo "$n rc $? $(( $(date +%s) - t0 ))s" | tee -a "$out/steps.txt"
}
step suite 200 bash tests/gpu/run.sh "$out/suite"
step pxofi 120 bash tests/gpu/proxy_ofi.sh "$out/pxofi"
step proxy 170 env BUDGET=150 bash bench/proxy/run.sh "$out/proxy"
step mps 120 env CUDA_VISIBLE_DEVICES=0 WAYS=auto:auto bash bench/proxy/mps_loaded.sh "$out/mps" 6
step ibgda 120 bash bench/ibgda/run.sh "$out/ibgda"
(cd "$out" && tar czf final.tgz suite pxofi proxy mps ibgda ./*.out steps.txt 2>/dev/null)
