#!/usr/bin/env bash
# tests/gpu/arch.sh OUTDIR: the device suites with kernels built by THIS
# machine's nvcc (issue 39 item 6: no assertion may depend on one
# compiler's register allocation), in one call of at most BUDGET seconds
# (default 530):
#   1. builds every suite kernel with the local nvcc into bin/gpu-local
#      (Makefile rules with G=bin/gpu-local): the point-to-point kernels,
#      and beside them, in the background with make -j$(nproc), the
#      collective ones: tests/gpu/kernels/devcoll.cu in its DEVCOLL_NPARTS
#      parts (devcoll_<k>.fatbin, devcoll_remote_<k>.fatbin: one nvcc per
#      part, at once), perf_coll.fatbin and perf.fatbin;
#   2. starts MPS (tests/gpu/mps.sh) and runs, every PE on GPU 0,
#      bin/devtest -part p2p at 2, 4 and 8 PEs and over the proxy at 2 PEs,
#      -part p2p -heap-grow (a 32 MiB heap that grows) at 8, 4 and 2 PEs,
#      then, once the collective kernels exist, -part devcoll and -part stream
#      at 8, 4 and 2 PEs, -part stream -heap-grow at 8, and both families
#      with 1,024 teams alive on the last of them (-coll-teams world,many) at 8
#      (in that order: a step the budget no longer allows is listed as NOT RUN);
#   3. OUTDIR/regs.txt: registers and spills of every built kernel
#      (cuobjdump -res-usage). The kernels that carry __launch_bounds__(1024)
#      (bench/gpu/perf.cu's, and perf_coll's _block kernels from
#      bench/gpu/coll.cuh) must be at <= 64 registers with any compiler: a
#      kernel over it is counted and fails the run. The suite's own kernels
#      (devtest, compat, devcoll) carry no bounds and are launched with at
#      most 256 threads, which any count a compiler may give (<= 255) allows:
#      listed, not checked;
#   4. OUTDIR/summary.md: machine, nvcc, step table, failing tests.
# Needs bin/devtest (built on the dev machine: make gpu, and carried).
# Knobs: BUDGET, NPS ("2 4 8"), WATCHDOG (30s), LARGE (40001), SLARGE (300001).
set -u
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-bench/out/gpu-arch}}
mkdir -p "$out"
T0=$(date +%s)
BUDGET=${BUDGET:-530}
NPS=${NPS:-2 4 8}
WATCHDOG=${WATCHDOG:-30s}
LARGE=${LARGE:-40001}
SLARGE=${SLARGE:-300001}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GOSHMEM_GPU=on
log=$out/arch.log
: >"$log"
RESERVE_DEFAULT=10
. tests/gpu/steps.sh

G=bin/gpu-local
nvccv=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none)
{
    echo "date: $(date -u +%FT%TZ); host $(hostname); $(nproc) CPUs"
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,compute_cap --format=csv
    echo "nvcc: $nvccv"
    echo "git: $(git log -1 --format='%h %s' 2>/dev/null || echo '(no git)')"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt" >>"$log"
if [ ! -x bin/devtest ]; then
    say "bin/devtest missing: build it on the dev machine (make gpu) and carry it"
    exit 1
fi

# ---- 1. kernels, with this machine's nvcc ----
MK="make --no-print-directory G=$G"
P2P="$G/devtest.fatbin $G/compat.fatbin $G/devtest_remote.fatbin $G/compat_remote.fatbin"
NPARTS=$(sed -n 's/^#define DEVCOLL_NPARTS \([0-9]*\).*/\1/p' tests/gpu/kernels/devcoll.cu)
DEVCOLL=$(for k in $(seq 0 $((NPARTS - 1))); do echo $G/devcoll_$k.fatbin; done)
COLL="$DEVCOLL $G/perf_coll.fatbin $G/perf.fatbin $(for k in $(seq 0 $((NPARTS - 1))); do echo $G/devcoll_remote_$k.fatbin; done)"
mkdir -p $G
t0=$(date +%s)
# the collective kernels: started first, in the background (the parts of
# devcoll.cu at once, the load/store ones first)
timeout 420 $MK -j"$(nproc)" $COLL >"$out/build_coll.log" 2>&1 &
coll_pid=$!
if timeout 240 $MK -j4 $P2P >"$out/build_p2p.log" 2>&1; then
    say "point-to-point kernels built with $nvccv in $(($(date +%s) - t0)) s"
else
    say "point-to-point kernel build FAILED (see build_p2p.log)"
    fails=$((fails + 1))
fi

# ---- 2. MPS + suites ----
. tests/gpu/mps.sh
trap 'kill $coll_pid 2>/dev/null; mps_stop >>"$log" 2>&1' EXIT
mps_start >>"$log" 2>&1 || say "MPS did not start: the steps below may time out (PEs time-slice one GPU)"
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
MPIRUN="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES"
DT="bin/devtest -watchdog $WATCHDOG"
for np in $NPS; do
    RESERVE=200 step "${np} PEs, 1 GPU, MPS, $nvccv kernels: point-to-point" $((np > 4 ? 90 : 60)) \
        $MPIRUN -np "$np" $DT -part p2p -fatbin $G/devtest.fatbin -compat $G/compat.fatbin -rounds 200
done
RESERVE=180 step "2 PEs, 1 GPU, MPS, GOSHMEM_GPU_TRANSPORT=proxy, $nvccv kernels: point-to-point" 60 \
    env GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=20s $MPIRUN -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -np 2 \
    $DT -part p2p -fatbin $G/devtest_remote.fatbin -compat $G/compat_remote.fatbin -rounds 100
# heap growth (a GPU heap of 32 MiB at Init that grows: VMM chunks mapped
# on every PE, RegisterDevice beside them), the most PEs first
for np in $(printf '%s\n' $NPS | sort -rn); do
    RESERVE=170 step "${np} PEs, 1 GPU, MPS, GPU heap from 32M (grows), $nvccv kernels: point-to-point, -heap-grow" \
        $((np > 4 ? 90 : 60)) env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=4G GOSHMEM_DEVICE_HEAP_CHUNK=2M GOSHMEM_INFO=1 \
        $MPIRUN -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_DEVICE_HEAP_CHUNK -x GOSHMEM_INFO -np "$np" \
        $DT -part p2p -heap-grow -fatbin $G/devtest.fatbin -compat $G/compat.fatbin -rounds 200
done

w0=$(date +%s)
while kill -0 $coll_pid 2>/dev/null && [ "$(left)" -gt 60 ]; do sleep 2; done
if kill -0 $coll_pid 2>/dev/null; then
    say "collective kernels still building after $(($(date +%s) - t0)) s: stopped (budget)"
    kill $coll_pid 2>/dev/null
fi
wait $coll_pid 2>/dev/null && say "collective kernels built in $(($(date +%s) - t0)) s (waited $(($(date +%s) - w0)) s)" ||
    say "collective kernel build did not finish (see build_coll.log)"
missing=$(for f in $DEVCOLL; do [ -s "$f" ] || echo "$f"; done)
if [ -z "$missing" ]; then
    # the most PEs first: what the budget leaves out is the smaller runs
    for np in $(printf '%s\n' $NPS | sort -rn); do
        step "${np} PEs, 1 GPU, MPS, $nvccv kernels: device collectives" $((np > 4 ? 120 : 80)) $MPIRUN -np "$np" \
            $DT -part devcoll -fatbin "" -coll $G/devcoll.fatbin -coll-large "$LARGE"
        step "${np} PEs, 1 GPU, MPS, $nvccv kernels: stream calls" $((np > 4 ? 90 : 60)) $MPIRUN -np "$np" \
            $DT -part stream -fatbin "" -coll $G/devcoll.fatbin -coll-large "$SLARGE"
    done
    np=$(printf '%s\n' $NPS | sort -rn | head -1)
    step "${np} PEs, 1 GPU, MPS, GPU heap from 32M (grows), $nvccv kernels: stream calls, -heap-grow" $((np > 4 ? 90 : 60)) \
        env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=4G GOSHMEM_DEVICE_HEAP_CHUNK=2M GOSHMEM_INFO=1 \
        $MPIRUN -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_DEVICE_HEAP_CHUNK -x GOSHMEM_INFO -np "$np" \
        $DT -part stream -heap-grow -fatbin "" -coll $G/devcoll.fatbin -coll-large "$SLARGE"
    # 1,024 teams alive at once, the collectives on the team in the device table's last slot
    for p in devcoll stream; do
        step "${np} PEs, 1 GPU, MPS, 1,024 teams alive, on the last, $nvccv kernels: $([ $p = devcoll ] && echo device collectives || echo stream calls)" \
            $((np > 4 ? 140 : 80)) $MPIRUN -np "$np" $DT -part $p -fatbin "" -coll $G/devcoll.fatbin -coll-teams world,many \
            -coll-large "$([ $p = stream ] && echo "$SLARGE" || echo "$LARGE")"
    done
else
    rows+=("| device collectives and stream calls | | NOT RUN (missing: $(echo $missing)) | 0 | |")
    fails=$((fails + 1))
fi
mps_stop >>"$log" 2>&1

# ---- 3. registers per kernel (launch bounds hold with this compiler) ----
for f in $G/*.fatbin; do
    echo "== $f"
    cuobjdump -res-usage "$f" 2>&1 | awk '/Function/ {k = $2} /REG:/ {print "  " k, $0}' | sed 's/  */ /g'
done >"$out/regs.txt"
# over 64 registers among the kernels with __launch_bounds__(1024)
over=$(awk '/^== / {f = $2; next}
    /REG:/ {if (f !~ /\/perf(_remote)?\.fatbin$/ && !(f ~ /\/perf_coll\.fatbin$/ && $1 ~ /_block:$/)) next
            for (i = 1; i <= NF; i++) if ($i ~ /^REG:/) {split($i, a, ":"); if (a[2] + 0 > 64) {n++; print "over 64 registers:", f, $1, $i > "/dev/stderr"}}}
    END {print n + 0}' "$out/regs.txt" 2>>"$log")
say "kernels with __launch_bounds__(1024) over 64 registers: $over (regs.txt)"
[ "$over" = 0 ] || fails=$((fails + 1))

# ---- 4. summary ----
{
    echo "# device suites with kernels built by this machine's nvcc (tests/gpu/arch.sh)"
    echo
    echo '```'
    cat "$out/machine.txt"
    echo '```'
    echo
    echo "Budget ${BUDGET} s, used $(($(date +%s) - T0)) s. Kernels: $G (built here with $nvccv); kernels with __launch_bounds__(1024) over 64 registers: $over."
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
exit $((fails > 0))
