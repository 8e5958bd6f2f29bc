#!/usr/bin/env bash
# bench/jacobi-where.sh OUTDIR: where do Jacobi's 2 PEs run, and what does MPS
# do to the 2-GPU time? Jacobi 16384^2, 1000 iterations, 2 PEs, goshmem and
# the NVSHMEM original (bin/jacobi_nvshmem, built by bench/jacobi/run.sh's
# build_peer when missing), in three settings run back to back:
#   nomps       no MPS daemon (one PE per GPU needs none)
#   mps         a fresh MPS daemon over both GPUs
#   mps-after1  a daemon started and quit with CUDA_VISIBLE_DEVICES=0 first
#               (what bench/gpu-all.sh core's perf-1gpu step does), then a
#               fresh one
# During each goshmem run nvidia-smi lists the compute processes per GPU.
set -u
OUTDIR=${1:?OUTDIR}; mkdir -p "$OUTDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 NVSHMEM_DISABLE_NCCL=1 NVSHMEM_REMOTE_TRANSPORT=none
export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo
NV=$(python3 -c 'import nvidia.nvshmem, os; print(os.path.dirname(nvidia.nvshmem.__file__))' 2>/dev/null)
NV=${NV:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem}
export LD_LIBRARY_PATH="$NV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
L=$OUTDIR/where.txt
{ date -u +%FT%TZ; nvidia-smi -L; pgrep -a nvidia-cuda-mps || echo "no MPS process"; } >"$L" 2>&1
if [ ! -x bin/jacobi_nvshmem ]; then
    ( source <(sed -n '/^build_peer()/,/^}/p' bench/jacobi/run.sh); build_peer ) >"$OUTDIR/build_peer.log" 2>&1
fi
one() { # label cmd...
    local label=$1; shift
    ( sleep 2; nvidia-smi --query-compute-apps=pid,gpu_bus_id,used_memory --format=csv,noheader ) >"$OUTDIR/apps.tmp" 2>&1 &
    local t=$(timeout 90 "$@" 2>&1 | tee -a "$OUTDIR/runs.log" | grep -E "^16384x16384|GPU [0-9]+ \(" | tr '\n' ' ')
    wait
    echo "$label: $t | apps: $(tr '\n' ';' <"$OUTDIR/apps.tmp")" | tee -a "$L"
}
setting() { # name
    for rep in 1 2; do
        one "$1 goshmem #$rep" mpirun --bind-to none -np 2 env GOSHMEM_INFO=1 bin/jacobi-gpu
        [ -x bin/jacobi_nvshmem ] && one "$1 nvshmem #$rep" mpirun --bind-to none -np 2 bin/jacobi_nvshmem
    done
}
nvidia-smi -q -d PERFORMANCE,CLOCK >"$OUTDIR/clocks-before.txt" 2>&1
for g in 0 1; do
    one "1 PE on GPU $g goshmem" env CUDA_VISIBLE_DEVICES=$g bin/jacobi-gpu
    [ -x bin/jacobi_nvshmem ] && one "1 PE on GPU $g nvshmem" env CUDA_VISIBLE_DEVICES=$g mpirun --bind-to none -np 1 bin/jacobi_nvshmem
done
setting nomps
nvidia-smi -q -d PERFORMANCE,CLOCK >"$OUTDIR/clocks-after.txt" 2>&1
[ "${FULL:-0}" = 1 ] || { cat "$L"; exit 0; }
export CUDA_MPS_PIPE_DIRECTORY=/tmp/jw-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/jw-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d && echo "MPS started" >>"$L"
setting mps
echo quit | nvidia-cuda-mps-control; sleep 2
CUDA_VISIBLE_DEVICES=0 nvidia-cuda-mps-control -d && echo "MPS started with CUDA_VISIBLE_DEVICES=0" >>"$L"
CUDA_VISIBLE_DEVICES=0 timeout 30 mpirun --bind-to none -np 2 bin/jacobi-gpu -nx 512 -ny 512 -niter 100 >>"$OUTDIR/runs.log" 2>&1
echo quit | nvidia-cuda-mps-control; sleep 1
{ echo "after quit:"; pgrep -a nvidia-cuda-mps || echo "no MPS process"; } >>"$L"
nvidia-cuda-mps-control -d && echo "MPS started again (both GPUs)" >>"$L"
setting mps-after1
echo quit | nvidia-cuda-mps-control
cat "$L"
