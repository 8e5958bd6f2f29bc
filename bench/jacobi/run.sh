#!/usr/bin/env bash
# bench/jacobi/run.sh: goshmem's examples/jacobi-gpu against the NVSHMEM
# original's host on the same GPUs, same kernels (examples/jacobi-gpu/jacobi.cu).
# For the GPU machine. Built beforehand elsewhere and carried: bin/jacobi-gpu
# (go build ./examples/jacobi-gpu) and bin/gpu/jacobi.fatbin (nvcc -fatbin,
# see examples/jacobi-gpu/main.go). Built here: the NVSHMEM peer
# bench/jacobi/jacobi_nvshmem_host.cu against the NVSHMEM of the machine's
# Python environment.
#
#   bash bench/jacobi/run.sh [OUTDIR]        (OUTDIR defaults to $OUT, else bench/out/jacobi)
#
# Steps: build the peer (in the background); start CUDA MPS (2 PEs on one GPU
# must run at once); correctness on small meshes (1, 2, 3 PEs, every
# variant, uneven row split, a run that converges early); then the default
# 16384 x 16384, 1000 iterations, for goshmem and NVSHMEM, default /
# -use_block_comm / -neighborhood_sync, 2 PEs (on 1 GPU with MPS; one PE per
# GPU when there are 2 or more). Prints and saves every log line, and
# summary.txt with the 2-PE times and the ratio goshmem / NVSHMEM (below 1:
# goshmem faster). Exit status: non-zero when a correctness run failed.
# Env: SIZES ("16384" by default; "8192 16384" for more), NITER (1000),
# REPS (1: runs per variant and library at each size).
set -uo pipefail
cd "$(dirname "$0")/../.."
OUTDIR=${1:-${OUT:-bench/out/jacobi}}
mkdir -p "$OUTDIR"
LOG=$OUTDIR/jacobi.log
SUM=$OUTDIR/summary.txt
: >"$LOG"
say() { echo "$@" | tee -a "$LOG"; }

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# NVLink multicast stays off (shared machines): NVSHMEM, NCCL, PyTorch.
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
# NVSHMEM with several PEs per GPU under MPS: full MPG mode, no NCCL, no NIC.
export NVSHMEM_DISABLE_NCCL=1 NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_REMOTE_TRANSPORT=none
export NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=${NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME:-lo}
SIZES=${SIZES:-16384}
NITER=${NITER:-1000}
REPS=${REPS:-1}
MPIRUN="mpirun --oversubscribe --bind-to none"

say "== machine"
{
    date -u +%Y-%m-%dT%H:%M:%SZ
    nvidia-smi --query-gpu=index,name,driver_version,memory.total,clocks.max.sm,clocks.max.mem --format=csv
    nvidia-smi topo -m 2>/dev/null | head -5
    nvcc --version | grep release
    mpirun --version | head -1
    nproc
} 2>&1 | tee -a "$LOG"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')

# ---- the NVSHMEM peer, built in the background ----
NV=${NVSHMEM_HOME:-$(python3 -c 'import nvidia.nvshmem, os; print(os.path.dirname(nvidia.nvshmem.__file__))' 2>/dev/null)}
NV=${NV:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem}
build_peer() {
    local lib=/tmp/nvshmem_lib
    mkdir -p "$lib"
    ln -sf "$NV"/lib/* "$lib"/
    [ -e "$lib/libnvshmem_host.so" ] || ln -sf "$(ls "$NV"/lib/libnvshmem_host.so* | head -1)" "$lib/libnvshmem_host.so"
    local mpicxx=mpicxx
    command -v mpicxx >/dev/null || mpicxx=mpicc
    local inc="" libs=""
    for d in $($mpicxx --showme:incdirs); do inc="$inc -I$d"; done
    for d in $($mpicxx --showme:libdirs); do libs="$libs -L$d -Xlinker -rpath=$d"; done
    ls "$NV/lib" "$NV/include" | head -40
    nvcc -std=c++17 -O3 -rdc=true -gencode arch=compute_90,code=sm_90 -DUSE_REAL_NVSHMEM \
        -I"$NV/include" -Iinclude $inc bench/jacobi/jacobi_nvshmem_host.cu -o bin/jacobi_nvshmem \
        -L"$lib" -Xlinker -rpath="$NV/lib" -lnvshmem_host -lnvshmem_device $libs -lmpi
}
mkdir -p bin
(build_peer >"$OUTDIR/build_peer.log" 2>&1; echo $? >"$OUTDIR/build_peer.rc") &
BUILD_PID=$!
export LD_LIBRARY_PATH="$NV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# ---- CUDA MPS: every PE's kernels run at once (device barriers, waits) ----
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_log
mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
stop_mps() { echo quit | nvidia-cuda-mps-control >/dev/null 2>&1; }
trap stop_mps EXIT
if nvidia-cuda-mps-control -d; then say "== MPS started"; else say "== MPS did NOT start"; fi

fail=0
# run NAME TIMEOUT CMD...: one logged run; a non-zero exit counts as a failure.
run() {
    local name=$1 t=$2
    shift 2
    say "---- $name: $*"
    local t0=$(date +%s.%N)
    timeout "$t" "$@" 2>&1 | tee -a "$LOG"
    local rc=${PIPESTATUS[0]}
    say "---- $name: exit $rc, $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s wall"
    [ "$rc" = 0 ] || fail=1
    return "$rc"
}

GO=bin/jacobi-gpu
say "== correctness, small meshes (goshmem)"
run go-1pe 30 env GOSHMEM_INFO=1 $GO -nx 256 -ny 256 -niter 300
for v in "" -use_block_comm -neighborhood_sync "-use_block_comm -neighborhood_sync"; do
    run "go-2pe $v" 30 $MPIRUN -np 2 $GO -nx 512 -ny 512 -niter 500 $v
done
for v in "" -use_block_comm -neighborhood_sync; do
    run "go-3pe-uneven $v" 30 $MPIRUN -np 3 $GO -nx 200 -ny 102 -niter 300 -nccheck 7 $v
done
run go-2pe-converges 60 $MPIRUN -np 2 $GO -nx 8 -ny 8 -niter 30000 -nccheck 1
run go-2pe-converges-nccheck5 60 $MPIRUN -np 2 $GO -nx 8 -ny 8 -niter 30000 -nccheck 5 -csv

wait "$BUILD_PID"
BRC=$(cat "$OUTDIR/build_peer.rc" 2>/dev/null || echo 1)
say "== NVSHMEM peer build: exit $BRC (log: build_peer.log)"
tail -20 "$OUTDIR/build_peer.log" | tee -a "$LOG"
if [ "$BRC" = 0 ]; then
    say "== correctness, small mesh (NVSHMEM)"
    run nv-2pe 60 $MPIRUN -np 2 bin/jacobi_nvshmem -nx 512 -ny 512 -niter 500
fi

# ---- the default size ----
: >"$OUTDIR/times.txt"
for n in $SIZES; do
    for v in "" -use_block_comm -neighborhood_sync; do
        for rep in $(seq "$REPS"); do
            if run "go-2pe-$n $v #$rep" 120 $MPIRUN -np 2 $GO -nx "$n" -ny "$n" -niter "$NITER" $v; then
                t=$(tail -n 400 "$LOG" | grep -E "^${n}x${n}: 1 GPU" | tail -1 | sed -E 's/.*2 GPUs: *([0-9.]+) s.*/\1/')
                s=$(tail -n 400 "$LOG" | grep -E "^${n}x${n}: 1 GPU" | tail -1 | sed -E 's/.*1 GPU: *([0-9.]+) s.*/\1/')
                echo "goshmem $n ${v:-default} $t $s" >>"$OUTDIR/times.txt"
            fi
            if [ "$BRC" = 0 ] && run "nv-2pe-$n $v #$rep" 120 $MPIRUN -np 2 bin/jacobi_nvshmem -nx "$n" -ny "$n" -niter "$NITER" $v; then
                t=$(tail -n 400 "$LOG" | grep -E "^${n}x${n}: 1 GPU" | tail -1 | sed -E 's/.*2 GPUs: *([0-9.]+) s.*/\1/')
                s=$(tail -n 400 "$LOG" | grep -E "^${n}x${n}: 1 GPU" | tail -1 | sed -E 's/.*1 GPU: *([0-9.]+) s.*/\1/')
                echo "nvshmem $n ${v:-default} $t $s" >>"$OUTDIR/times.txt"
            fi
        done
    done
done

# ---- summary: best of REPS per (size, variant), ratio goshmem / NVSHMEM ----
{
    echo "Jacobi, 2 PEs on $NGPU GPU(s) ($( [ "$NGPU" -ge 2 ] && echo 'one PE per GPU' || echo 'sharing one GPU under MPS')), $NITER iterations"
    echo "size variant goshmem_s nvshmem_s ratio(goshmem/nvshmem) goshmem_1gpu_s nvshmem_1gpu_s"
    awk '{k=$2" "$3; if(!(k in seen)){seen[k]=1; order[++n]=k}
          if($1=="goshmem"&&(!(k in g)||$4<g[k])){g[k]=$4; gs[k]=$5}
          if($1=="nvshmem"&&(!(k in v)||$4<v[k])){v[k]=$4; vs[k]=$5}}
         END{for(i=1;i<=n;i++){k=order[i]; r=(k in g && k in v && v[k]>0)? sprintf("%.3f", g[k]/v[k]) : "n/a";
             printf "%s %s %s %s %s %s\n", k, (k in g?g[k]:"n/a"), (k in v?v[k]:"n/a"), r, (k in gs?gs[k]:"n/a"), (k in vs?vs[k]:"n/a")}}' "$OUTDIR/times.txt"
    echo "correctness failures: $fail"
} | tee "$SUM" | tee -a "$LOG"
exit "$fail"
