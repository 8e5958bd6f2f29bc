#!/usr/bin/env bash
# tests/gpu/run.sh [OUTDIR]: the one script for the GPU machine.
#
#   1. kernels: bin/gpu/{devtest,compat}.fatbin (built here with CUDA 11.8 and
#      carried, or built now with the local nvcc when absent);
#   2. device test suite bin/devtest (Go, built on the dev machine:
#      make gpu, or go -C tests/gpu build -o ../../bin/devtest ./devtest), 2 PEs on one GPU:
#      without MPS (few rounds: the GPU time-slices the two processes), the
#      fault test (PE 0 writes an illegal address: every PE must exit
#      non-zero within FAULT_LIMIT seconds), then with MPS (many rounds) and
#      4 PEs with MPS, 2 and 4 PEs with MPS on a GPU heap of 32 MiB that
#      grows (-heap-grow), 2 PEs with MPS over the CPU proxy
#      (GOSHMEM_GPU_TRANSPORT=proxy), which GPU a PE uses (bin/spmd -mode
#      gpu-device, when carried: the local rank, GOSHMEM_DEVICE, WithDevice,
#      a context current on the thread calling Init, an ordinal out of range
#      on every PE or on one); 2 PEs on two GPUs when nvidia-smi lists >= 2
#      (load/store, then proxy)
#      (GPU = node-local rank);
#   3. benchmarks: tests/gpu/bench.sh OUTDIR when it exists (hook);
#   4. OUTDIR (default $OUT, else bench/out/gpu-devtest): devtest.log (all
#      output) and summary.md (date, GPUs, driver, commands, pass/fail
#      counts, timings) for bench/results/.
#
# Run on the device machine: carry bin/devtest bin/spmd bin/gpu/devtest.fatbin
# bin/gpu/compat.fatbin and run `bash tests/gpu/run.sh`.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-bench/out/gpu-devtest}}
mkdir -p "$out"
log=$out/devtest.log
summary=$out/summary.md
: >"$log"
exec > >(tee -a "$log") 2>&1

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GOSHMEM_GPU=on
ROUNDS_NOMPS=${ROUNDS_NOMPS:-20}
ROUNDS_MPS=${ROUNDS_MPS:-2000}
FAULT_LIMIT=${FAULT_LIMIT:-30}
MPIRUN="mpirun --bind-to none -x GOSHMEM_GPU"
NVCC_FLAGS="-std=c++17 -Iinclude -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -fatbin"

. tests/gpu/mps.sh
trap mps_stop EXIT

secs_since() { # seconds since $1 (date +%s%N), one decimal
    local ms=$((($(date +%s%N) - $1) / 1000000))
    printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}
rows=()
fails=0
row() { rows+=("| $1 | \`$2\` | $3 | $4 | $5 |"); }

echo "== devtest $(date -u +%FT%TZ) on $(hostname)"
nvidia-smi -L
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader | head -1)
ngpu=$(nvidia-smi -L | wc -l)
echo "driver $driver, $ngpu GPU(s); $(mpirun --version | head -1); nvcc: $(nvcc --version 2>/dev/null | grep release || echo none)"

# 1. kernels
for k in devtest compat; do
    if [ ! -s "bin/gpu/$k.fatbin" ]; then
        echo "== building bin/gpu/$k.fatbin with the local nvcc"
        mkdir -p bin/gpu
        nvcc $NVCC_FLAGS "tests/gpu/kernels/$k.cu" -o "bin/gpu/$k.fatbin" || { echo "nvcc failed"; exit 1; }
    fi
done
if [ ! -x bin/devtest ]; then
    echo "bin/devtest missing: build it on the dev machine (make gpu, or go -C tests/gpu build -o ../../bin/devtest ./devtest) and carry it"
    exit 1
fi

# step NAME TIMEOUT CMD...: runs CMD, records rc, seconds and the summary line
step() {
    local name=$1 limit=$2
    shift 2
    echo
    echo "== $name: $*"
    local t0 t1 rc tmp
    tmp=$(mktemp)
    t0=$(date +%s%N)
    timeout "$limit" "$@" 2>&1 | tee "$tmp"
    rc=${PIPESTATUS[0]}
    secs=$(secs_since "$t0")
    local line
    line=$(grep -E 'devtest: [0-9]+ passed' "$tmp" | tail -1 | sed 's/^devtest: //')
    [ -z "$line" ] && line="(no summary line)"
    local verdict=PASS
    [ "$rc" != 0 ] && { verdict="FAIL (rc $rc)"; fails=$((fails + 1)); }
    # a growth prepared ahead must be adopted on this machine: its fallback
    # (a warning) fails the step
    [ "$verdict" = PASS ] && grep -q 'not prepared ahead' "$tmp" &&
        { verdict="FAIL (the growth prepared ahead fell back: $(grep -m1 -o 'not prepared ahead.*' "$tmp" | cut -c1-120))"; fails=$((fails + 1)); }
    row "$name" "$*" "$verdict" "$secs" "$line"
    last_out=$tmp
}

# devrule NAME WANT WHY [VAR=VALUE...]: one job of bin/spmd -mode gpu-device at 2 PEs with
# GOSHMEM_INFO=1, the variables of the device choice empty but for the VAR=VALUEs given. WANT is
# the device every PE must report, with its GPU heap checks passed, and WHY what GOSHMEM_INFO must
# say chose it on every PE (on one GPU every rule gives device 0); or WANT is "fail": Init fails
# on every PE with ErrInvalidArgument, naming the valid range of devices.
SPMD="bin/spmd -mode gpu-device -heap 16777216 -guard 20s"
devrule() {
    local name=$1 want=$2 rule=$3
    shift 3
    local cmd="env GOSHMEM_INFO=1 GOSHMEM_GPU_LIB=${GOSHMEM_GPU_LIB:-gpulib/lib.fatbin} GOSHMEM_DEVICE= SPMD_WITH_DEVICE="
    cmd="$cmd SPMD_CURRENT_DEVICE= SPMD_RANK_ENV= $* $MPIRUN -np 2 $SPMD"
    echo
    echo "== $name: $cmd"
    local tmp t0 rc pe why=""
    tmp=$(mktemp)
    t0=$(date +%s%N)
    timeout 60 $cmd 2>&1 | tee "$tmp"
    rc=${PIPESTATUS[0]}
    [ "$rc" = 0 ] || why="$why rc $rc;"
    grep -q FAIL "$tmp" && why="$why $(grep -m1 FAIL "$tmp" | cut -c1-120);"
    for pe in 0 1; do
        if [ "$want" = fail ]; then
            grep -q "gpu-device: rank $pe: Init failed (ErrInvalidArgument=true):" "$tmp" ||
                why="$why rank $pe: Init did not fail with ErrInvalidArgument;"
        else
            grep -q "gpu-device: PE $pe: device $want\$" "$tmp" || why="$why PE $pe did not report device $want;"
            grep -q "gpu-device: PE $pe: GPU heap: ok" "$tmp" || why="$why PE $pe: GPU heap checks not ok;"
            grep -q "info: PE $pe: GPU $want (.*) chosen by $rule" "$tmp" || why="$why PE $pe: GOSHMEM_INFO does not say chosen by $rule;"
        fi
    done
    if [ "$want" = fail ] && ! grep -q "valid range \[0, $ngpu)" "$tmp"; then
        why="$why no error names the valid range [0, $ngpu);"
    fi
    local verdict=PASS
    [ -n "$why" ] && { verdict="FAIL:$why"; fails=$((fails + 1)); }
    row "$name" "$cmd" "$verdict" "$(secs_since "$t0")" \
        "$(grep -m1 -o 'gpu-device: rank 0: Init failed.*\|PE 0: GPU [0-9]* (.*) chosen by [^;]*' "$tmp" | cut -c1-160)"
}

DT="bin/devtest -fatbin bin/gpu/devtest.fatbin -compat bin/gpu/compat.fatbin -watchdog ${WATCHDOG:-30s}"
# GOSHMEM_TIMEOUT of the remote-transport steps: below devtest's -watchdog,
# so that goshmem's own timeouts (device IBGDA/proxy waits, the soft NIC,
# Synchronize under the soft NIC: at most 1.25x + 1 s) fire and say what
# hung before the watchdog ends the process with a bare "hang?".
RTIMEOUT=${RTIMEOUT:-20s}
# The same kernels built with -DGOSHMEM_REMOTE_TRANSPORTS (include/goshmem/remote.h):
# the only build whose device calls can reach PEs through the proxy or IBGDA.
DTR="bin/devtest -fatbin bin/gpu/devtest_remote.fatbin -compat bin/gpu/compat_remote.fatbin -watchdog ${WATCHDOG:-30s}"
# The soft NIC steps: the emulated NIC runs the atomics test's 8,192 device
# atomics and lock operations from a host goroutine (about 16 s on one H100
# under MPS), while the PE that finished first waits for the other in the next
# barrier, so their limits are three times the other remote steps'. They do
# not follow RTIMEOUT and WATCHDOG; keep RTIMEOUT_SOFT at most
# (WATCHDOG_SOFT - 1 s) / 1.25, so that goshmem's own timeouts fire first.
RTIMEOUT_SOFT=${RTIMEOUT_SOFT:-60s}
DTR_SOFT="bin/devtest -fatbin bin/gpu/devtest_remote.fatbin -compat bin/gpu/compat_remote.fatbin -watchdog ${WATCHDOG_SOFT:-90s}"

# 2a. two PEs on one GPU, no MPS
step "2 PEs, 1 GPU, no MPS" 100 $MPIRUN -np 2 $DT -rounds "$ROUNDS_NOMPS"

# 2b. fault: every PE must exit non-zero within FAULT_LIMIT seconds
echo
echo "== fault test (limit ${FAULT_LIMIT}s)"
tmp=$(mktemp)
t0=$(date +%s%N)
timeout 60 $MPIRUN -np 2 $DT -fault 2>&1 | tee "$tmp"
rc=${PIPESTATUS[0]}
secs=$(secs_since "$t0")
verdict=PASS
why=""
[ "$rc" = 0 ] && why="$why mpirun exit 0;"
[ "$rc" = 124 ] && why="$why hung (timeout);"
[ "${secs%.*}" -ge "$FAULT_LIMIT" ] && why="$why took ${secs}s > ${FAULT_LIMIT}s;"
grep -q 'fault ok' "$tmp" || why="$why PE 0 did not report the fault naming t_fault;"
grep -q 'BarrierAll returned' "$tmp" && why="$why PE 1 left its barrier;"
grep -q 'still running\|FAIL fault' "$tmp" && why="$why fault check failed;"
if [ -n "$why" ]; then verdict="FAIL:$why"; fails=$((fails + 1)); fi
echo "fault test: rc $rc in ${secs}s: $verdict"
row "fault (PE 0 illegal address, PE 1 in barrier)" "$MPIRUN -np 2 $DT -fault" "$verdict" "$secs" \
    "mpirun rc $rc; $(grep -o 'kernel "t_fault"[^;]*' "$tmp" | head -1)"

# 2c. with MPS
if mps_start; then
    step "2 PEs, 1 GPU, MPS" 90 $MPIRUN -np 2 $DT -rounds "$ROUNDS_MPS"
    echo get_server_list | nvidia-cuda-mps-control
    step "4 PEs, 1 GPU, MPS" 60 $MPIRUN -np 4 --oversubscribe $DT -rounds 200
    # the GPU heap that grows (CUDA VMM): the point-to-point suite on a heap
    # of 32 MiB at Init, and devtest's heap growth test (-heap-grow: arrays
    # in new chunks, Free, regrow, past GOSHMEM_DEVICE_HEAP_MAX refused);
    # GOSHMEM_INFO must say the heap is CUDA VMM
    for np in 2 4; do
        step "$np PEs, 1 GPU, MPS, GPU heap from 32M (grows), -heap-grow" 90 \
            env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=4G GOSHMEM_DEVICE_HEAP_CHUNK=2M GOSHMEM_INFO=1 \
            $MPIRUN --oversubscribe -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_DEVICE_HEAP_CHUNK -x GOSHMEM_INFO \
            -np $np $DT -part p2p -heap-grow -rounds 200
        heap=$(grep -m1 -o 'GPU heap: .*' "$last_out" | cut -c1-110)
        if grep -q 'GPU heap: CUDA VMM' "$last_out"; then
            row "$np PEs: GOSHMEM_INFO says the GPU heap is CUDA VMM" "grep 'GPU heap: CUDA VMM'" PASS 0 "$heap"
        else
            row "$np PEs: GOSHMEM_INFO says the GPU heap is CUDA VMM" "grep 'GPU heap: CUDA VMM'" "FAIL (not CUDA VMM)" 0 "${heap:-no GOSHMEM_INFO heap line}"
            fails=$((fails + 1))
        fi
    done
    # the same suite with every peer behind the CPU proxy (issue 7): device
    # ops to the other PE become descriptors, submitted by proxy workers
    step "2 PEs, 1 GPU, MPS, GOSHMEM_GPU_TRANSPORT=proxy" 150 env GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=$RTIMEOUT \
        $MPIRUN -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -np 2 $DTR -rounds "${ROUNDS_PROXY:-200}"
    # The same suite with every device access to the other PE over IBGDA:
    # GPU-built mlx5 WQEs executed by the soft NIC, an EMULATION (a host
    # goroutine per PE, queues in host-pinned memory, the GPU heaps reached
    # through the cuda transport). The kernels are the -DGOSHMEM_REMOTE_TRANSPORTS
    # build (remote.h); without it the peer is unreachable.
    [ "${SKIP_IBGDA:-0}" = 1 ] && echo "== SKIPPED (SKIP_IBGDA=1): ibgda over the emulated NIC" || \
    step "2 PEs, 1 GPU, MPS, ibgda over the emulated NIC (EMULATION)" 150 \
        env GOSHMEM_GPU_TRANSPORT=ibgda GOSHMEM_IBGDA_NIC=soft GOSHMEM_INFO=1 GOSHMEM_TIMEOUT=$RTIMEOUT_SOFT \
        $MPIRUN -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_IBGDA_NIC -x GOSHMEM_INFO -x GOSHMEM_TIMEOUT -np 2 $DTR_SOFT -rounds "${ROUNDS_IBGDA:-20}"
    # The same with CPU-assisted doorbells (GOSHMEM_IBGDA_DOORBELL=cpu, issue 4):
    # the GPU's doorbell stores go nowhere; a host thread per PE watches the
    # doorbell records and rings (verbs.Ring) the word that alone drives the
    # emulated NIC. Still an EMULATION of the NIC; the ringer is the real one.
    [ "${SKIP_IBGDA:-0}" = 1 ] && echo "== SKIPPED (SKIP_IBGDA=1): ibgda CPU-assisted doorbells" || \
    step "2 PEs, 1 GPU, MPS, ibgda CPU-assisted doorbells over the emulated NIC (EMULATION)" 150 \
        env GOSHMEM_GPU_TRANSPORT=ibgda GOSHMEM_IBGDA_NIC=soft GOSHMEM_IBGDA_DOORBELL=cpu GOSHMEM_INFO=1 GOSHMEM_TIMEOUT=$RTIMEOUT_SOFT \
        $MPIRUN -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_IBGDA_NIC -x GOSHMEM_IBGDA_DOORBELL -x GOSHMEM_INFO -x GOSHMEM_TIMEOUT \
        -np 2 $DTR_SOFT -rounds "${ROUNDS_IBGDA_CPU:-10}"
    # which GPU a PE uses (issue 39), on the real driver: bin/spmd -mode gpu-device, the program of
    # tests/integration's TestGPUDevice (fake driver). Each PE prints its device and checks host
    # RMA and an atomic on the GPU heap.
    if [ -x bin/spmd ]; then
        devrule "2 PEs: the device is the local rank modulo the GPUs" 0 "local rank"
        devrule "2 PEs: GOSHMEM_DEVICE=0" 0 GOSHMEM_DEVICE GOSHMEM_DEVICE=0
        devrule "2 PEs: shmem.WithDevice(0) over GOSHMEM_DEVICE=$ngpu" 0 WithDevice GOSHMEM_DEVICE=$ngpu SPMD_WITH_DEVICE=0
        devrule "2 PEs: the device of a context current on the thread calling Init (kept current)" 0 \
            "the calling thread's current CUDA context" SPMD_CURRENT_DEVICE=0
        devrule "2 PEs: GOSHMEM_DEVICE=$ngpu, out of range: Init fails on every PE" fail - GOSHMEM_DEVICE=$ngpu
        devrule "2 PEs: GOSHMEM_DEVICE=$ngpu on PE 1 only: Init fails on every PE" fail - SPMD_RANK_ENV=1:GOSHMEM_DEVICE=$ngpu
    else
        row "which GPU a PE uses (WithDevice, GOSHMEM_DEVICE, a current context)" "$SPMD" "NOT RUN (no bin/spmd: make gpu builds it)" 0 ""
    fi
    # informational: the same fault under MPS (a fatal fault is reported to every client of the server)
    echo
    echo "== fault under MPS (informational)"
    t0=$(date +%s%N)
    timeout 60 $MPIRUN -np 2 $DT -fault 2>&1 | tee "$tmp"
    rc=${PIPESTATUS[0]}
    secs=$(secs_since "$t0")
    row "fault under MPS (informational)" "$MPIRUN -np 2 $DT -fault" "rc $rc" "$secs" \
        "$(grep -c 'exiting 1' "$tmp") of 2 PEs exited 1 as designed"
    mps_stop
else
    row "2 PEs, 1 GPU, MPS" "nvidia-cuda-mps-control -d" "FAIL (MPS did not start)" 0 ""
    fails=$((fails + 1))
fi

# 2d. two GPUs (GPU = node-local rank)
if [ "$ngpu" -ge 2 ]; then
    step "2 PEs, 2 GPUs, no MPS" 90 $MPIRUN -np 2 $DT -rounds 200
    step "2 PEs, 2 GPUs, GOSHMEM_GPU_TRANSPORT=proxy" 150 env GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=$RTIMEOUT \
        $MPIRUN -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -np 2 $DTR -rounds "${ROUNDS_PROXY:-200}"
else
    row "2 PEs, 2 GPUs" "-" "NOT RUN (only $ngpu GPU)" 0 ""
fi

# 3. benchmarks hook (goshmem-perf device mode; maintained separately)
if [ -f tests/gpu/bench.sh ]; then
    echo
    echo "== benchmarks: tests/gpu/bench.sh $out"
    bash tests/gpu/bench.sh "$out" || { echo "bench.sh failed"; fails=$((fails + 1)); }
fi

# 4. summary
{
    echo "# goshmem device test suite (tests/gpu/run.sh)"
    echo
    echo "- date: $(date -u +%FT%TZ)"
    echo "- GPUs ($ngpu):"
    nvidia-smi -L | sed 's/^/  - /'
    echo "- driver: $driver; $(mpirun --version | head -1); nvcc on this machine: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none)"
    echo "- kernels: bin/gpu/devtest.fatbin, bin/gpu/compat.fatbin ($(cuobjdump -lelf bin/gpu/devtest.fatbin 2>/dev/null | tr '\n' ' '))"
    echo "- env: OMPI_ALLOW_RUN_AS_ROOT=1 GOSHMEM_GPU=on; rounds: $ROUNDS_NOMPS without MPS, $ROUNDS_MPS with MPS"
    echo
    echo "| step | command | result | seconds | devtest summary |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "Per-test lines (ok/FAIL, time) and barrier timings are in devtest.log."
    echo
    echo "overall: $([ $fails = 0 ] && echo PASS || echo "FAIL ($fails steps failed)")"
} >"$summary"
echo
cat "$summary"
exit $((fails > 0))
