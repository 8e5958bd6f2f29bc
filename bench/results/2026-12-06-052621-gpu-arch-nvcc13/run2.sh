#!/usr/bin/env bash
# run2.sh OUTDIR (from the repository root): the second call of this run.
# The first call (tests/gpu/arch.sh beside the kernel library's build) ran
# out of its 420 s for the collective kernels, so this one builds only
# devcoll.fatbin with the machine's nvcc, then runs the device collectives
# and stream calls at 8, 4 and 2 PEs under MPS (as the budget allows), with
# the new kernel library (GOSHMEM_GPU_LIB=gpulib/lib.fatbin). While
# devcoll.fatbin builds, the point-to-point suite runs at 8 PEs with the
# new library.
set -u
out=${1:?OUTDIR}
mkdir -p "$out"
T0=$(date +%s)
BUDGET=${BUDGET:-560}
log=$out/arch.log
: >"$log"
RESERVE_DEFAULT=5
. tests/gpu/steps.sh
. tests/gpu/mps.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GOSHMEM_GPU=on
export GOSHMEM_GPU_LIB=$PWD/gpulib/lib.fatbin
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
G=bin/gpu-local
mkdir -p $G
nvccv=$(nvcc --version | grep -o 'release [0-9.]*')
say "date: $(date -u +%FT%TZ); $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader); nvcc $nvccv"
t0=$(date +%s)
NV="nvcc -std=c++17 -Iinclude -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -fatbin"
timeout 450 $NV tests/gpu/kernels/devcoll.cu -o $G/devcoll.fatbin >"$out/build_coll.log" 2>&1 &
coll_pid=$!
trap 'kill $coll_pid 2>/dev/null; mps_stop >>"$log" 2>&1' EXIT
$NV tests/gpu/kernels/devtest.cu -o $G/devtest.fatbin >"$out/build_p2p.log" 2>&1 &
p2p_pid=$!
$NV tests/gpu/kernels/compat.cu -o $G/compat.fatbin >>"$out/build_p2p.log" 2>&1
wait $p2p_pid
say "point-to-point kernels built in $(($(date +%s) - t0)) s"
mps_start >>"$log" 2>&1
MPIRUN="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x GOSHMEM_GPU_LIB -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES"
DT="bin/devtest -watchdog 30s"
RESERVE=100 step "8 PEs, 1 GPU, MPS, new kernel library, $nvccv kernels: point-to-point" 90 \
    $MPIRUN -np 8 $DT -part p2p -fatbin $G/devtest.fatbin -compat $G/compat.fatbin -rounds 200
wait $coll_pid && say "devcoll.fatbin built in $(($(date +%s) - t0)) s" ||
    say "devcoll.fatbin build FAILED or stopped after $(($(date +%s) - t0)) s (build_coll.log)"
if [ -s $G/devcoll.fatbin ]; then
    for np in 8 4 2; do
        step "${np} PEs, 1 GPU, MPS, new kernel library, $nvccv kernels: device collectives" $((np > 4 ? 120 : 80)) \
            $MPIRUN -np $np $DT -part devcoll -fatbin $G/devcoll.fatbin -coll $G/devcoll.fatbin -coll-large 40001
        step "${np} PEs, 1 GPU, MPS, new kernel library, $nvccv kernels: stream calls" $((np > 4 ? 90 : 60)) \
            $MPIRUN -np $np $DT -part stream -fatbin $G/devcoll.fatbin -coll $G/devcoll.fatbin -coll-large 300001
    done
    cuobjdump -res-usage $G/devcoll.fatbin 2>&1 | awk '/Function/ {k = $2} /REG:/ {print "  " k, $0}' | sed 's/  */ /g' >"$out/regs_devcoll.txt"
else
    rows+=("| device collectives and stream calls | | NOT RUN (no $G/devcoll.fatbin) | 0 | |")
    fails=$((fails + 1))
fi
mps_stop >>"$log" 2>&1
{
    echo "Budget $BUDGET s, used $(($(date +%s) - T0)) s."
    echo
    echo "| step | command | result | seconds | devtest summary |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "## failing tests"
    echo
    failing_tests
    echo
    echo "overall: $([ $fails = 0 ] && echo PASS || echo "FAIL ($fails steps failed)")"
} >"$out/summary.md"
cat "$out/summary.md"
