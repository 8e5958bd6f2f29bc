#!/usr/bin/env bash
# tests/gpu/coll.sh OUTDIR: issue 17 on the GPU machine in ONE call (one
# H200; about 8 minutes at most, every step under its own timeout and the
# whole under BUDGET seconds):
#   1. builds the NVSHMEM peer (bench/gpu/nvshmem_perf.cu, with the
#      collective rows of bench/gpu/coll.cuh; -DNO_COLL when that fails) in
#      the background, against the Python environment's NVSHMEM;
#   2. starts MPS (tests/gpu/mps.sh) and runs the device suite's collective
#      and stream tests (bin/devtest -part devcoll: device collectives of every
#      op family, types, teams, scopes; -part stream: every *OnStream call,
#      StreamFromHandle, host collectives on GPU arrays) at 2, 4 and 8 PEs over
#      load/store, the stream tests once more on a GPU heap of 32 MiB that
#      grows (-heap-grow: the heap growth test too; GOSHMEM_INFO must say
#      CUDA VMM) (and the device collectives once more at 2 PEs with
#      GOSHMEM_GPU_COLL_LL=off: the flag round for every small size; the stream
#      calls at 2 PEs with GOSHMEM_GPU_STREAM_SYNC=kernel and at 3 PEs with
#      =memops; both families once more at the most PEs with 1,024 teams
#      alive, on the team in the last slot) and over
#      the CPU proxy (GOSHMEM_GPU_TRANSPORT=proxy, the
#      -DGOSHMEM_REMOTE_TRANSPORTS kernels);
#   3. the benchmark rows, 2 PEs under MPS: goshmem-perf device -only
#      coll|onstream and the NVSHMEM peer's same rows, then the ratio report;
#   4. OUTDIR/summary.md (machine, commands, step results, failing tests,
#      ratio table, headline verdicts) and the raw logs beside it.
# Needs what `make -j$(nproc) gpucoll` (or `make gpu`) built here and was carried:
# bin/devtest, bin/goshmem-perf, bin/gpu/{perf,perf_coll}.fatbin and the parts of
# tests/gpu/kernels/devcoll.cu, bin/gpu/devcoll_<k>.fatbin and devcoll_remote_<k>.fatbin
# (carry just these: the carry limit is 64 MiB; with SKIP_BENCH=1 the suite needs neither
# goshmem-perf nor the perf kernels). A missing part or perf_coll.fatbin is built on the GPU
# machine with its nvcc before the suite (make -j: the parts at once).
# On a machine with 2+ GPUs the two suites also run with 2 PEs on 2 GPUs.
# Knobs: BUDGET (s, default 510), NPS ("2 4 8"), PNPS (the proxy steps' PEs, default NPS), SKIP_PROXY=1, SKIP_BENCH=1, SKIP_2GPU=1, COLL_THREADS (1024),
# WATCHDOG (devtest's per-test limit, default 30s; over the proxy PWATCHDOG, 45s), LARGE (the large n of
# the device collective cases, default 40001; SLARGE, that of the stream calls, default 300001: past
# 1 MiB, so their grid kernels run; over the proxy PLARGE, 4099).
set -u
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-bench/out/gpu-coll}}
mkdir -p "$out"
T0=$(date +%s)
BUDGET=${BUDGET:-510}
NPS=${NPS:-2 4 8}
PNPS=${PNPS:-$NPS}
WATCHDOG=${WATCHDOG:-30s}
LARGE=${LARGE:-40001}
SLARGE=${SLARGE:-300001}
PLARGE=${PLARGE:-4099}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export GOSHMEM_GPU=on NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
log=$out/coll.log
: >"$log"
# what each suite step leaves for the benchmark rows after it (none to leave with SKIP_BENCH=1)
RESERVE_DEFAULT=150
[ "${SKIP_BENCH:-0}" = 1 ] && RESERVE_DEFAULT=10
. tests/gpu/steps.sh

# ---- 0. what is here ----
{
    echo "date: $(date -u +%FT%TZ); host $(hostname); $(nproc) CPUs"
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,compute_mode --format=csv
    echo "mpirun: $(mpirun --version 2>&1 | head -1)"
    echo "nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none)"
    echo "binaries: $(ls -la bin/devtest bin/goshmem-perf 2>&1 | awk '{print $5, $9}' | tr '\n' ' ')"
    echo "fatbins: $(ls -la bin/gpu/devcoll*.fatbin bin/gpu/perf*.fatbin 2>&1 | awk '{print $5, $9}' | tr '\n' ' ')"
    echo "git: $(git log -1 --format='%h %s' 2>/dev/null || echo '(no git)')"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt" >>"$log"

# ---- 1. NVSHMEM peer, built in the background ----
NV=${NVSHMEM_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem}
NVROOT=$(dirname "$NV")
LIBS=$NV/lib
for d in "$NVROOT"/*/lib; do LIBS=$LIBS:$d; done
export LD_LIBRARY_PATH=$LIBS:${LD_LIBRARY_PATH:-}
B=/tmp/goshmem-coll-build
mkdir -p $B
build_peer() {
    local MPI_INC MPI_LIBDIR t0=$(date +%s)
    MPI_INC=$(mpicc --showme:incdirs 2>/dev/null | awk '{print $1}')
    [ -n "$MPI_INC" ] || MPI_INC=/usr/lib/x86_64-linux-gnu/openmpi/include
    MPI_LIBDIR=$(mpicc --showme:libdirs 2>/dev/null | awk '{print $1}')
    [ -n "$MPI_LIBDIR" ] || MPI_LIBDIR=/usr/lib/x86_64-linux-gnu/openmpi/lib
    ln -sf "$(ls $NV/lib/libnvshmem_host.so* | head -1)" $B/libnvshmem_host.so
    local cmd=(nvcc -rdc=true -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I"$NV/include" -I"$MPI_INC"
        bench/gpu/nvshmem_perf.cu -L$B -L"$NV/lib" -L"$MPI_LIBDIR" -lnvshmem_host -lnvshmem_device -lmpi
        -Xlinker -rpath -Xlinker "$NV/lib")
    if timeout 300 "${cmd[@]}" -o $B/nvshmem_perf; then
        echo "nvshmem_perf: built with the collective rows in $(($(date +%s) - t0)) s"
    else
        echo "nvshmem_perf: BUILD WITH COLLECTIVE ROWS FAILED; retrying without reducescatter (-DPC_NO_REDUCESCATTER)"
        if timeout 200 "${cmd[@]}" -DPC_NO_REDUCESCATTER -o $B/nvshmem_perf; then
            echo "nvshmem_perf: built WITHOUT the reducescatter rows"
        else
            echo "nvshmem_perf: retrying with -DNO_COLL"
            timeout 200 "${cmd[@]}" -DNO_COLL -o $B/nvshmem_perf && echo "nvshmem_perf: built WITHOUT the collective rows (-DNO_COLL)"
        fi
    fi
}
rm -f $B/nvshmem_perf
if [ "${SKIP_BENCH:-0}" != 1 ]; then
    build_peer >"$out/nvshmem_build.log" 2>&1 &
    build_pid=$!
fi

# kernels not carried: built here with this machine's nvcc (the Makefile's
# rules, make -j: one nvcc per part of devcoll.cu, at once)
NPARTS=$(sed -n 's/^#define DEVCOLL_NPARTS \([0-9]*\).*/\1/p' tests/gpu/kernels/devcoll.cu)
KFILES="$(for s in devcoll devcoll_remote; do for k in $(seq 0 $((NPARTS - 1))); do echo bin/gpu/${s}_$k.fatbin; done; done)"
# the benchmark's binary and kernels only when its rows run
BFILES=""
[ "${SKIP_BENCH:-0}" != 1 ] && BFILES="bin/goshmem-perf" && KFILES="$KFILES bin/gpu/perf_coll.fatbin"
kmissing=$(for f in $KFILES; do [ -s "$f" ] || echo "$f"; done)
if [ -n "$kmissing" ]; then
    say "building with the local nvcc: $(echo $kmissing)"
    timeout 300 make --no-print-directory -j"$(nproc)" $kmissing >"$out/build_kernels.log" 2>&1 ||
        say "kernel build failed or stopped: see $out/build_kernels.log"
    say "kernels built in $(($(date +%s) - T0)) s"
fi
missing=""
for f in bin/devtest $BFILES $KFILES; do
    [ -s "$f" ] || missing="$missing $f"
done
[ -n "$missing" ] && say "MISSING (build them on the dev machine with make gpu and carry bin/):$missing"


# ---- 2. MPS + suite ----
. tests/gpu/mps.sh
trap 'mps_stop >>"$log" 2>&1' EXIT
mps_ok=1
mps_start >>"$log" 2>&1 || { say "MPS did not start: the one-GPU steps are skipped (their kernels would wait on each other forever)"; fails=$((fails + 1)); mps_ok=0; }

# heap_vmm_row NAME: a row that passes when step NAME's GOSHMEM_INFO says
# the GPU heap is CUDA VMM (nothing when the step did not run)
heap_vmm_row() {
    local f heap
    f=$(step_log "$1")
    [ -f "$f" ] || return 0
    heap=$(grep -m1 -o 'GPU heap: .*' "$f" | cut -c1-110)
    if grep -q 'GPU heap: CUDA VMM' "$f"; then
        rows+=("| $1: GOSHMEM_INFO says CUDA VMM | \`grep 'GPU heap: CUDA VMM'\` | PASS | 0 | $heap |")
    else
        rows+=("| $1: GOSHMEM_INFO says CUDA VMM | \`grep 'GPU heap: CUDA VMM'\` | FAIL (not CUDA VMM) | 0 | ${heap:-no GOSHMEM_INFO heap line} |")
        fails=$((fails + 1))
    fi
}

# every PE on GPU 0 but in the two-GPU steps: those need MPS
step_skip() { [ "$mps_ok" = 0 ] && [ "${1#*2 GPUs}" = "$1" ] && echo "no MPS"; }

# every step on GPU 0 but the two-GPU ones
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
MPIRUN="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES"
# -part devcoll / stream: the device collectives, then the stream and host-GPU
# collective tests, as separate runs (a hang ends one run, not the other)
DT="bin/devtest -watchdog $WATCHDOG"
for np in $NPS; do
    lim=80 slim=60
    [ "$np" -gt 2 ] && lim=100
    [ "$np" -gt 4 ] && lim=140 slim=90
    step "${np} PEs, 1 GPU, MPS, load/store: device collectives" $lim $MPIRUN -np "$np" \
        $DT -part devcoll -fatbin "" -coll bin/gpu/devcoll.fatbin -coll-large "$LARGE"
    step "${np} PEs, 1 GPU, MPS, load/store: stream calls" $slim $MPIRUN -np "$np" \
        $DT -part stream -fatbin "" -coll bin/gpu/devcoll.fatbin -coll-large "$SLARGE"
    # the same on a GPU heap of 32 MiB at Init that grows (CUDA VMM), with the heap growth test
    hname="${np} PEs, 1 GPU, MPS, load/store, GPU heap from 32M (grows): stream calls, -heap-grow"
    step "$hname" $slim env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=4G GOSHMEM_DEVICE_HEAP_CHUNK=2M GOSHMEM_INFO=1 \
        $MPIRUN -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_DEVICE_HEAP_CHUNK -x GOSHMEM_INFO -np "$np" \
        $DT -part stream -heap-grow -fatbin "" -coll bin/gpu/devcoll.fatbin -coll-large "$SLARGE"
    heap_vmm_row "$hname"
done
# the on-stream barriers and syncs as kernels for every team (GOSHMEM_GPU_STREAM_SYNC=kernel; auto uses stream
# memory operations for teams of 2), and as memory operations for every team at 3 PEs (a flat sync of 3)
step "2 PEs, 1 GPU, MPS, load/store, GOSHMEM_GPU_STREAM_SYNC=kernel: stream calls" 60 env GOSHMEM_GPU_STREAM_SYNC=kernel \
    $MPIRUN -x GOSHMEM_GPU_STREAM_SYNC -np 2 $DT -part stream -fatbin "" -coll bin/gpu/devcoll.fatbin -coll-large "$SLARGE"
step "3 PEs, 1 GPU, MPS, load/store, GOSHMEM_GPU_STREAM_SYNC=memops: stream calls" 60 env GOSHMEM_GPU_STREAM_SYNC=memops \
    $MPIRUN -x GOSHMEM_GPU_STREAM_SYNC -np 3 $DT -part stream -fatbin "" -coll bin/gpu/devcoll.fatbin -coll-large "$SLARGE"
# the small collectives' flag round (no LL packets) at 2 PEs
step "2 PEs, 1 GPU, MPS, load/store, GOSHMEM_GPU_COLL_LL=off: device collectives" 80 env GOSHMEM_GPU_COLL_LL=off \
    $MPIRUN -x GOSHMEM_GPU_COLL_LL -np 2 $DT -part devcoll -fatbin "" -coll bin/gpu/devcoll.fatbin -coll-large "$LARGE"
# 1,024 teams alive at once: the collectives on the team in device slot 1023 (every PE in reverse
# order; the last row of the device's team table), at the most PEs
np=$(printf '%s\n' $NPS | sort -rn | head -1)
for p in devcoll stream; do
    step "${np} PEs, 1 GPU, MPS, load/store, 1,024 teams alive, on the last: $([ $p = devcoll ] && echo device collectives || echo stream calls)" \
        $((np > 4 ? 140 : 80)) $MPIRUN -np "$np" $DT -part $p -fatbin "" -coll bin/gpu/devcoll.fatbin -coll-teams world,many \
        -coll-large "$([ $p = stream ] && echo "$SLARGE" || echo "$LARGE")"
done
if [ "${SKIP_PROXY:-0}" != 1 ]; then
    for np in $PNPS; do
        for p in devcoll stream; do
            step "${np} PEs, 1 GPU, MPS, GOSHMEM_GPU_TRANSPORT=proxy: $([ $p = devcoll ] && echo device collectives || echo stream calls)" $((np > 4 ? 90 : 60)) \
                env GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=20s $MPIRUN -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -np "$np" \
                $DT -watchdog "${PWATCHDOG:-45s}" -part $p -fatbin "" -coll bin/gpu/devcoll_remote.fatbin -coll-large "$PLARGE"
        done
    done
fi

# two GPUs when this machine has them (one PE per GPU: GPU = node-local rank)
ngpu=$(CUDA_VISIBLE_DEVICES= nvidia-smi -L 2>/dev/null | wc -l)
if [ "$ngpu" -ge 2 ] && [ "${SKIP_2GPU:-0}" != 1 ]; then
    for p in devcoll stream; do
        step "2 PEs, 2 GPUs, load/store: $([ $p = devcoll ] && echo device collectives || echo stream calls)" 60 \
            env CUDA_VISIBLE_DEVICES=0,1 $MPIRUN -np 2 $DT -part $p -fatbin "" -coll bin/gpu/devcoll.fatbin -coll-large "$([ $p = stream ] && echo "$SLARGE" || echo "$LARGE")"
    done
fi

# ---- 3. benchmarks, 2 PEs ----
bench_rows=""
if [ "${SKIP_BENCH:-0}" != 1 ]; then
    export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-2G}
    # two PEs on one GPU: NVSHMEM runs its collectives and on-stream calls only in full MPG mode
    # (MPS, and the PEs' CUDA_MPS_ACTIVE_THREAD_PERCENTAGE adding up to <= 100, or this)
    export NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1
    PMPI="mpirun --bind-to none -np 2 -x CUDA_VISIBLE_DEVICES -x LD_LIBRARY_PATH -x NVSHMEM_SYMMETRIC_SIZE -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
    COMMON="-bw-maxsize 134217728 -coll-maxsize ${COLL_MAX:-67108864} -coll-threads ${COLL_THREADS:-1024}"
    RESERVE=75 STEP_STDOUT=$out/goshmem.jsonl step "goshmem-perf device coll+onstream, 2 PEs" 120 \
        $PMPI bin/goshmem-perf device -json -module bin/gpu/perf.fatbin -coll-module bin/gpu/perf_coll.fatbin \
        -only '^(coll|onstream)$' $COMMON
    say "   goshmem rows: $(grep -c '^{' "$out/goshmem.jsonl" 2>/dev/null)"
    # the peer's build had the whole suite to finish; give it what is left
    w=0
    while kill -0 "$build_pid" 2>/dev/null && [ "$(left)" -gt 70 ]; do sleep 2; w=$((w + 2)); done
    kill "$build_pid" 2>/dev/null
    cat "$out/nvshmem_build.log" >>"$log"
    say "   waited $w s for the NVSHMEM build"
    if [ -x $B/nvshmem_perf ]; then
        RESERVE=15 STEP_STDOUT=$out/nvshmem.jsonl step "nvshmem_perf coll+on_stream, 2 PEs" 120 \
            $PMPI $B/nvshmem_perf -only 'coll|on_stream' $COMMON
        say "   nvshmem rows: $(grep -c '^{' "$out/nvshmem.jsonl" 2>/dev/null)"
    else
        rows+=("| nvshmem_perf | build | FAIL (see nvshmem_build.log) | 0 | |")
        fails=$((fails + 1))
    fi
    if [ -s "$out/goshmem.jsonl" ]; then
        peer=""
        [ -s "$out/nvshmem.jsonl" ] && peer="$out/nvshmem.jsonl"
        timeout 30 bin/goshmem-perf report -md "$out/ratios.md" "$out/goshmem.jsonl" $peer >"$out/ratios.txt" 2>>"$log"
        bench_rows=1
    fi
fi
mps_stop >>"$log" 2>&1

# ---- 4. summary ----
{
    echo "# issue 17 on the GPU machine: device collectives, stream calls, collective benchmarks (tests/gpu/coll.sh)"
    echo
    echo '```'
    cat "$out/machine.txt"
    echo '```'
    echo
    echo "Budget ${BUDGET} s, used $(($(date +%s) - T0)) s. Kernels: bin/gpu/devcoll_<k>.fatbin (load/store), devcoll_remote_<k>.fatbin (proxy); large n $LARGE (stream calls $SLARGE, proxy $PLARGE)."
    echo
    echo "| step | command | result | seconds | devtest summary |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "## failing tests"
    echo
    failing_tests
    if [ -n "$bench_rows" ]; then
        echo
        echo "## benchmarks (2 PEs, one GPU, MPS): goshmem vs NVSHMEM, ratio = goshmem time / NVSHMEM time"
        echo
        cat "$out/ratios.md" 2>/dev/null || { echo '```'; cat "$out/ratios.txt"; echo '```'; }
        echo
        echo "host Reduce on a GPU array vs the on-stream reduce of the same size:"
        echo
        grep '"host_reduce_gpu"' "$out/goshmem.jsonl" | sed 's/^/    /'
    fi
    echo
    echo "overall: $([ $fails = 0 ] && echo PASS || echo "FAIL ($fails steps failed)")"
} >"$out/summary.md"
cat "$out/summary.md"
(cd "$out" && tar czf coll.tgz ./*.log ./*.jsonl ./*.txt ./*.md 2>/dev/null)
exit $((fails > 0))
