#!/usr/bin/env bash
# bench/gpu/mpg.sh OUTDIR: goshmem's device collectives and on-stream calls against NVSHMEM's,
# several PEs on one GPU under MPS, in ONE call on the GPU machine (about 5 minutes).
#
# NVSHMEM runs its collectives and on-stream calls with several PEs per GPU only in "full MPG"
# mode: MPS running, and the PEs' CUDA_MPS_ACTIVE_THREAD_PERCENTAGE adding up to at most 100, or
# NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 (otherwise "limited MPG": nvshmem_perf then
# refuses those rows). This script runs both libraries in two configurations:
#   ign: every PE may use every SM (NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1), at
#        NPS PEs (default "2 4"; 4 PEs up to COLL_MAX4, default 16 MiB per PE);
#   pct: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=100/npes for every PE (each sees its share of the SMs),
#        2 PEs;
# and NVSHMEM's reducescatter rows once more with NVSHMEM_REDUCE_SCRATCH_SIZE=256M (the default
# 512 KiB scratch makes NVSHMEM assert past n * npes * 4 B = 256 KiB); and goshmem once more with
# GOSHMEM_GPU_COLL_LL=off (no LL packets; series goshmem/noll) up to NOLL_MAX (default 1 MiB), and
# its on-stream rows with GOSHMEM_GPU_COLL_THREADS=1024 (series goshmem/t1024), at 2 PEs, and with
# GOSHMEM_GPU_STREAM_SYNC=kernel and =memops (the on-stream barriers and syncs as kernels, or as stream
# memory operations, for every team; series goshmem/synckernel, goshmem/syncmemops) at NPS PEs; and its
# on-stream rows with plain launches (GOSHMEM_GPU_LAUNCH_OVERLAP=0; series goshmem/plain) at NPS PEs.
# BASE_COLL=FATBIN: the device collective rows once more from another build of bench/gpu/perf_coll.cu
# (series goshmem/base, e.g. the commit before a change), at NPS PEs.
# ONSTREAM_ONLY=1: only the on-stream rows (goshmem, goshmem/sync{kernel,memops} and NVSHMEM at NPS PEs, up to
# COLL_MAX), each REPEAT times (default 1; the second run's files end in _2), no pct/noll/t1024/rs runs.
# Needs, carried: bin/goshmem-perf, bin/gpu/perf.fatbin, bin/gpu/perf_coll.fatbin. Writes
# OUTDIR/{goshmem,nvshmem}_<config>.jsonl, their stderr logs, ratios_<config>.txt (goshmem-perf
# report) and machine.txt.
set -u
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-bench/out/mpg}}
mkdir -p "$out"
NPS=${NPS:-2 4}
COLL_MAX=${COLL_MAX:-67108864}
COLL_MAX4=${COLL_MAX4:-16777216}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GOSHMEM_GPU=on NVSHMEM_DISABLE_NVLS=1 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-2G}
{
    echo "date: $(date -u +%FT%TZ); host $(hostname); $(nproc) CPUs"
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,compute_mode --format=csv
    echo "mpirun: $(mpirun --version 2>&1 | head -1)"
    echo "nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none)"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

. bench/gpu/nvshmem_build.sh
nvshmem_build "$out/nvshmem_build.log"

. tests/gpu/mps.sh
trap 'mps_stop' EXIT
mps_start || { echo "MPS did not start"; exit 1; }
X="-x CUDA_VISIBLE_DEVICES -x LD_LIBRARY_PATH -x NVSHMEM_SYMMETRIC_SIZE -x NVSHMEM_DISABLE_NVLS -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
GONLY='^(coll|onstream)$' NONLY='coll|on_stream'
if [ "${ONSTREAM_ONLY:-0}" = 1 ]; then GONLY='^onstream$' NONLY='on_stream'; fi
GP="bin/goshmem-perf device -json -module bin/gpu/perf.fatbin -coll-module bin/gpu/perf_coll.fatbin -only $GONLY -bw-maxsize 134217728 -coll-threads 1024"
NP="-only $NONLY -bw-maxsize 134217728 -coll-threads 1024"
# run NAME NP LIMIT ENV... -- CMD...: one mpirun under LIMIT s; stdout (JSON rows) to NAME.jsonl
run() {
    local name=$1 np=$2 lim=$3 t0
    shift 3
    local envs=() xs=""
    while [ "$1" != -- ]; do
        envs+=("$1")
        xs="$xs -x ${1%%=*}"
        shift
    done
    shift
    t0=$(date +%s)
    env "${envs[@]}" timeout -k 5 "$lim" mpirun --bind-to none --oversubscribe -np "$np" $X $xs "$@" \
        >"$out/$name.jsonl" 2>"$out/$name.log"
    echo "$name: rc $? in $(($(date +%s) - t0)) s, $(grep -c '^{' "$out/$name.jsonl") rows"
}
if [ "${ONSTREAM_ONLY:-0}" = 1 ]; then
    # goshmem, its kernel syncs and NVSHMEM, interleaved, REPEAT times (the peer's build runs
    # during the first goshmem runs)
    for i in $(seq 1 "${REPEAT:-1}"); do
        sfx=""
        [ "$i" -gt 1 ] && sfx=_$i
        for np in $NPS; do
            run goshmem_ign_np$np$sfx "$np" 100 GOSHMEM_GPU=on -- $GP -coll-maxsize "$COLL_MAX"
            for v in kernel memops; do
                run goshmem_sync${v}_np$np$sfx "$np" 100 GOSHMEM_GPU_STREAM_SYNC=$v -- $GP -coll-maxsize "$COLL_MAX" -variant sync$v
            done
            run goshmem_plain_np$np$sfx "$np" 100 GOSHMEM_GPU_LAUNCH_OVERLAP=0 -- $GP -coll-maxsize "$COLL_MAX" -variant plain
            if [ -n "${build_pid:-}" ]; then wait "$build_pid"; build_pid=""; cat "$out/nvshmem_build.log"; fi
            [ -x $B/nvshmem_perf ] && run nvshmem_ign_np$np$sfx "$np" 100 NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 -- \
                $B/nvshmem_perf $NP -coll-maxsize "$COLL_MAX"
        done
    done
else
for np in $NPS; do
    m=$COLL_MAX
    [ "$np" -gt 2 ] && m=$COLL_MAX4
    run goshmem_ign_np$np "$np" 150 GOSHMEM_GPU=on -- $GP -coll-maxsize "$m"
done
run goshmem_pct_np2 2 150 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 -- $GP -coll-maxsize "$COLL_MAX"
# A/B: goshmem without LL packets (GOSHMEM_GPU_COLL_LL=off: the flag round), up to NOLL_MAX
for np in $NPS; do
    run goshmem_noll_np$np "$np" 120 GOSHMEM_GPU_COLL_LL=off -- $GP -coll-maxsize "${NOLL_MAX:-1048576}" -variant noll
done
# and the one-block on-stream kernels on 1024 threads (GOSHMEM_GPU_COLL_THREADS=1024) instead of by size
run goshmem_t1024_np2 2 120 GOSHMEM_GPU_COLL_THREADS=1024 -- $GP -only '^onstream$' -coll-maxsize "${NOLL_MAX:-1048576}" -variant t1024
# and the on-stream barriers and syncs as kernels, and as memory operations, for every team
for np in $NPS; do
    for v in kernel memops; do
        run goshmem_sync${v}_np$np "$np" 100 GOSHMEM_GPU_STREAM_SYNC=$v -- $GP -only '^onstream$' -coll-maxsize "${NOLL_MAX:-1048576}" -variant sync$v
    done
    run goshmem_plain_np$np "$np" 100 GOSHMEM_GPU_LAUNCH_OVERLAP=0 -- $GP -only '^onstream$' -coll-maxsize "${NOLL_MAX:-1048576}" -variant plain
done
# and the device collectives of another build (BASE_COLL)
if [ -n "${BASE_COLL:-}" ]; then
    for np in $NPS; do
        m=$COLL_MAX
        [ "$np" -gt 2 ] && m=$COLL_MAX4
        run goshmem_base_np$np "$np" 150 GOSHMEM_GPU=on -- bin/goshmem-perf device -json -module bin/gpu/perf.fatbin \
            -coll-module "$BASE_COLL" -only '^coll$' -bw-maxsize 134217728 -coll-threads 1024 -coll-maxsize "$m" -variant base
    done
fi
wait $build_pid
cat "$out/nvshmem_build.log"
if [ -x $B/nvshmem_perf ]; then
    for np in $NPS; do
        m=$COLL_MAX
        [ "$np" -gt 2 ] && m=$COLL_MAX4
        run nvshmem_ign_np$np "$np" 150 NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 -- $B/nvshmem_perf $NP -coll-maxsize "$m"
    done
    run nvshmem_pct_np2 2 150 CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50 -- $B/nvshmem_perf $NP -coll-maxsize "$COLL_MAX"
    run nvshmem_rs_np2 2 100 NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_REDUCE_SCRATCH_SIZE=268435456 \
        NVSHMEM_MAX_TEAMS=8 NVSHMEM_SYMMETRIC_SIZE=8G -- $B/nvshmem_perf -only reducescatter -bw-maxsize 134217728 \
        -coll-threads 1024 -coll-maxsize "$COLL_MAX"
fi
fi
mps_stop
# ratios_rs_np2: goshmem's 2-PE rows against NVSHMEM's reducescatter with the larger scratch
for c in ign_np2 ign_np4 pct_np2 rs_np2 ign_np2_2 ign_np4_2; do
    g=$out/goshmem_$c.jsonl
    [ $c = rs_np2 ] && g=$out/goshmem_ign_np2.jsonl
    [ -s "$g" ] || continue
    peers=""
    [ -s "$out/nvshmem_$c.jsonl" ] && peers="$out/nvshmem_$c.jsonl"
    for v in noll t1024 synckernel syncmemops plain base; do
        [ -s "$out/goshmem_${v}_${c#ign_}.jsonl" ] && [ "${c%%_*}" = ign ] && peers="$peers $out/goshmem_${v}_${c#ign_}.jsonl"
    done
    timeout 30 bin/goshmem-perf report -md "$out/ratios_$c.md" "$g" $peers >"$out/ratios_$c.txt" 2>&1
done
grep -h "nvshmem_perf:\|limited MPG\|full MPG" "$out"/*.log | sort | uniq -c | head -20
tail -n 60 "$out/ratios_ign_np2.txt" 2>/dev/null
