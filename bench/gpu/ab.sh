#!/usr/bin/env bash
# bench/gpu/ab.sh OUTDIR NAME=FATBIN...: goshmem's device collective rows from several builds of
# bench/gpu/perf_coll.cu (an A/B of header changes) against NVSHMEM's, several PEs on one GPU under
# MPS, in ONE call on the GPU machine. The first build is series goshmem, each other one series
# goshmem/NAME, interleaved per PE count so the builds see the same machine state.
# NPS: the PE counts (default "2 4"); COLL_MAX: the largest size per PE (default 64 KiB);
# PEER=0: no NVSHMEM rows. Every PE may use every SM (NVSHMEM's full MPG mode, as mpg.sh's ign).
# Needs, carried: bin/goshmem-perf, bin/gpu/perf.fatbin and the fatbins named. Writes
# OUTDIR/{goshmem,goshmem_NAME,nvshmem}_np<N>.jsonl, their logs, ratios_np<N>.{txt,md}, machine.txt.
set -u
cd "$(dirname "$0")/../.."
out=${1:?usage: ab.sh OUTDIR NAME=FATBIN...}
shift
[ $# -ge 1 ] || { echo "ab.sh: no builds named"; exit 2; }
mkdir -p "$out"
NPS=${NPS:-2 4}
COLL_MAX=${COLL_MAX:-65536}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GOSHMEM_GPU=on NVSHMEM_DISABLE_NVLS=1 CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-2G}
{
    echo "date: $(date -u +%FT%TZ); host $(hostname); $(nproc) CPUs"
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,compute_mode --format=csv
    echo "builds: $*"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt"

. bench/gpu/nvshmem_build.sh
build_pid=""
[ "${PEER:-1}" = 1 ] && nvshmem_build "$out/nvshmem_build.log"

. tests/gpu/mps.sh
trap 'mps_stop' EXIT
mps_start || { echo "MPS did not start"; exit 1; }
X="-x CUDA_VISIBLE_DEVICES -x LD_LIBRARY_PATH -x NVSHMEM_SYMMETRIC_SIZE -x NVSHMEM_DISABLE_NVLS -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
run() { # run NAME NP -- CMD...: one mpirun, 150 s at most; stdout (JSON rows) to NAME.jsonl
    local name=$1 np=$2 t0
    shift 3
    t0=$(date +%s)
    timeout -k 5 150 mpirun --bind-to none --oversubscribe -np "$np" $X \
        -x NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 "$@" >"$out/$name.jsonl" 2>"$out/$name.log"
    echo "$name: rc $? in $(($(date +%s) - t0)) s, $(grep -c '^{' "$out/$name.jsonl") rows"
}
for np in $NPS; do
    first=1
    for nf in "$@"; do
        n=${nf%%=*} f=${nf#*=}
        if [ $first = 1 ]; then
            run goshmem_np$np "$np" -- bin/goshmem-perf device -json -module bin/gpu/perf.fatbin -coll-module "$f" \
                -only '^coll$' -coll-threads 1024 -coll-maxsize "$COLL_MAX"
            first=0
        else
            run goshmem_${n}_np$np "$np" -- bin/goshmem-perf device -json -module bin/gpu/perf.fatbin -coll-module "$f" \
                -only '^coll$' -coll-threads 1024 -coll-maxsize "$COLL_MAX" -variant "$n"
        fi
    done
    if [ -n "$build_pid" ]; then wait "$build_pid"; build_pid=""; cat "$out/nvshmem_build.log"; fi
    [ "${PEER:-1}" = 1 ] && [ -x $B/nvshmem_perf ] &&
        run nvshmem_np$np "$np" -- $B/nvshmem_perf -only coll -coll-threads 1024 -coll-maxsize "$COLL_MAX"
done
mps_stop
for np in $NPS; do
    peers=""
    [ -s "$out/nvshmem_np$np.jsonl" ] && peers="$out/nvshmem_np$np.jsonl"
    for nf in "${@:2}"; do peers="$peers $out/goshmem_${nf%%=*}_np$np.jsonl"; done
    timeout 30 bin/goshmem-perf report -md "$out/ratios_np$np.md" "$out/goshmem_np$np.jsonl" $peers \
        >"$out/ratios_np$np.txt" 2>&1
done
