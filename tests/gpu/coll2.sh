#!/usr/bin/env bash
# tests/gpu/coll2.sh OUTDIR: issue 17 on the two-GPU machine (nvidia-h200-x2) in ONE call
# (about 8 minutes at most, every step under its own timeout, the whole under BUDGET s):
#   1. builds the NVSHMEM peer (bench/gpu/nvshmem_build.sh) and the NCCL peer
#      (bench/gpu/nccl_build.sh) in the background, against the Python environment's packages;
#   2. the device suite's collective and stream tests (bin/devtest -part devcoll / stream) with
#      one PE per GPU (2 PEs, no MPS) over load/store (NVLink) and over the CPU proxy
#      (GOSHMEM_GPU_TRANSPORT=proxy); then, under MPS, 4 PEs on the two GPUs (two per GPU: peers
#      on the same GPU and over NVLink in one team);
#   3. the benchmark rows with one PE per GPU: goshmem-perf device -only coll|onstream up to
#      COLL_MAX (default 256 MiB: the on-stream rows reach it, the device collective rows the
#      buffer size BW_MAX, default 256 MiB), NVSHMEM's same rows, NCCL's on-stream rows
#      (ncclAllReduce, ncclBroadcast, ncclAllGather, grouped send/recv), and the on-stream rows
#      once more per grid setting in TUNE (series goshmem/<setting>); then `goshmem-perf report`
#      over all of them (the headline table has the all-reduce target: >= 0.9x NCCL's bus
#      bandwidth from 64 MiB);
#   4. OUTDIR/summary.md (machine and topology, commands, step results, failing tests, ratio
#      tables) and OUTDIR/coll2.tgz with the raw logs.
# Needs, carried: bin/devtest, bin/goshmem-perf, bin/gpu/{perf,perf_coll}.fatbin and the parts
# bin/gpu/devcoll_<k>.fatbin and devcoll_remote_<k>.fatbin (make -j$(nproc) gpucoll).
# Knobs: BUDGET (s, default 540), SKIP_SUITE=1, SKIP_BENCH=1, SKIP_MPS=1 (no 4-PE step), COLL_MAX,
# BW_MAX, TUNE (default "GOSHMEM_GPU_COLL_BLOCK=64K GOSHMEM_GPU_COLL_FUSED=0"; "" for none),
# WATCHDOG (devtest's per-test limit, default 30s), LARGE / SLARGE / PLARGE as in tests/gpu/coll.sh.
set -u
cd "$(dirname "$0")/../.."
out=${1:-${OUT:-bench/out/gpu-coll2}}
mkdir -p "$out"
T0=$(date +%s)
BUDGET=${BUDGET:-540}
WATCHDOG=${WATCHDOG:-30s}
LARGE=${LARGE:-40001}
SLARGE=${SLARGE:-300001}
PLARGE=${PLARGE:-4099}
COLL_MAX=${COLL_MAX:-268435456}
BW_MAX=${BW_MAX:-268435456}
TUNE=${TUNE-GOSHMEM_GPU_COLL_BLOCK=64K GOSHMEM_GPU_COLL_FUSED=0}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# NVLink multicast stays off in every library (the machine's rule)
export GOSHMEM_GPU=on NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0,1}
export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-4G}
log=$out/coll2.log
: >"$log"
# what each suite step leaves for the benchmark rows after it (none to leave with SKIP_BENCH=1)
RESERVE_DEFAULT=200
[ "${SKIP_BENCH:-0}" = 1 ] && RESERVE_DEFAULT=10
. tests/gpu/steps.sh

{
    echo "date: $(date -u +%FT%TZ); host $(hostname); $(nproc) CPUs"
    nvidia-smi -L
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,compute_mode --format=csv
    nvidia-smi topo -m
    echo "mpirun: $(mpirun --version 2>&1 | head -1)"
    echo "nvcc: $(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none)"
    echo "binaries: $(ls -la bin/devtest bin/goshmem-perf 2>&1 | awk '{print $5, $9}' | tr '\n' ' ')"
    echo "fatbins: $(ls -la bin/gpu/devcoll*.fatbin bin/gpu/perf*.fatbin 2>&1 | awk '{print $5, $9}' | tr '\n' ' ')"
    echo "git: $(git log -1 --format='%h %s' 2>/dev/null || echo '(no git)')"
} >"$out/machine.txt" 2>&1
cat "$out/machine.txt" >>"$log"
ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
if [ "$ngpu" -lt 2 ]; then
    say "this machine has $ngpu GPU(s): tests/gpu/coll2.sh needs two (tests/gpu/coll.sh is the one-GPU run)"
    exit 2
fi

# ---- 1. the peers, built in the background ----
nvshmem_pid="" nccl_pid=""
if [ "${SKIP_BENCH:-0}" != 1 ]; then
    . bench/gpu/nvshmem_build.sh
    nvshmem_build "$out/nvshmem_build.log"
    nvshmem_pid=$build_pid
    . bench/gpu/nccl_build.sh
    nccl_build "$out/nccl_build.log"
fi
NPARTS=$(sed -n 's/^#define DEVCOLL_NPARTS \([0-9]*\).*/\1/p' tests/gpu/kernels/devcoll.cu)
missing=""
for f in bin/devtest bin/goshmem-perf bin/gpu/perf.fatbin bin/gpu/perf_coll.fatbin \
    $(for s in devcoll devcoll_remote; do for k in $(seq 0 $((NPARTS - 1))); do echo bin/gpu/${s}_$k.fatbin; done; done); do
    [ -s "$f" ] || missing="$missing $f"
done
[ -n "$missing" ] && say "MISSING (build them on the dev machine with make gpu and carry bin/):$missing"

# ---- 2. the suite ----
MPIRUN="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_VISIBLE_DEVICES -x NCCL_NVLS_ENABLE -x NVSHMEM_DISABLE_NVLS"
DT="bin/devtest -watchdog $WATCHDOG"
large() { [ "$1" = stream ] && echo "$SLARGE" || echo "$LARGE"; }
what() { [ "$1" = devcoll ] && echo device collectives || echo stream calls; }
if [ "${SKIP_SUITE:-0}" != 1 ]; then
    for p in devcoll stream; do
        step "2 PEs, 2 GPUs, load/store: $(what $p)" 80 $MPIRUN -np 2 \
            $DT -part $p -fatbin "" -coll bin/gpu/devcoll.fatbin -coll-large "$(large $p)"
    done
    for p in devcoll stream; do
        step "2 PEs, 2 GPUs, GOSHMEM_GPU_TRANSPORT=proxy: $(what $p)" 60 \
            env GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=20s $MPIRUN -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -np 2 \
            bin/devtest -watchdog "${PWATCHDOG:-45s}" -part $p -fatbin "" -coll bin/gpu/devcoll_remote.fatbin -coll-large "$PLARGE"
    done
    if [ "${SKIP_MPS:-0}" != 1 ]; then
        . tests/gpu/mps.sh
        if mps_start >>"$log" 2>&1; then
            for p in devcoll stream; do
                step "4 PEs, 2 GPUs (2 per GPU), MPS, load/store: $(what $p)" 100 \
                    $MPIRUN -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -np 4 \
                    $DT -part $p -fatbin "" -coll bin/gpu/devcoll.fatbin -coll-large "$(large $p)"
            done
            mps_stop >>"$log" 2>&1
        else
            rows+=("| 4 PEs, 2 GPUs, MPS | - | NOT RUN (MPS did not start) | 0 | |")
            fails=$((fails + 1))
        fi
    fi
fi

# ---- 3. benchmarks, one PE per GPU ----
bench=""
if [ "${SKIP_BENCH:-0}" != 1 ]; then
    PMPI="mpirun --bind-to none -np 2 -x CUDA_VISIBLE_DEVICES -x LD_LIBRARY_PATH -x NVSHMEM_SYMMETRIC_SIZE -x NVSHMEM_DISABLE_NVLS -x NCCL_NVLS_ENABLE -x GOSHMEM_GPU"
    GP="bin/goshmem-perf device -json -module bin/gpu/perf.fatbin -coll-module bin/gpu/perf_coll.fatbin -bw-maxsize $BW_MAX -coll-maxsize $COLL_MAX -coll-threads 1024"
    RESERVE=150 STEP_STDOUT=$out/goshmem.jsonl step "goshmem-perf device coll+onstream, 2 PEs, 2 GPUs" 170 \
        $PMPI $GP -only '^(coll|onstream)$'
    [ -n "$nccl_pid" ] && { wait "$nccl_pid"; cat "$out/nccl_build.log" >>"$log"; }
    if [ -x "$NB/nccl_perf" ]; then
        RESERVE=120 STEP_STDOUT=$out/nccl.jsonl step "nccl_perf on_stream, 2 PEs, 2 GPUs" 60 \
            $PMPI "$NB/nccl_perf" -only on_stream -coll-maxsize "$COLL_MAX"
    else
        rows+=("| nccl_perf | build | FAIL (see nccl_build.log) | 0 | |")
        fails=$((fails + 1))
    fi
    # the peer's build had the suite and goshmem's rows to finish; give it what is left
    w=0
    while [ -n "$nvshmem_pid" ] && kill -0 "$nvshmem_pid" 2>/dev/null && [ "$(left)" -gt 100 ]; do sleep 2; w=$((w + 2)); done
    [ -n "$nvshmem_pid" ] && kill "$nvshmem_pid" 2>/dev/null
    cat "$out/nvshmem_build.log" >>"$log"
    say "   waited $w s for the NVSHMEM build"
    if [ -x "$B/nvshmem_perf" ]; then
        RESERVE=40 STEP_STDOUT=$out/nvshmem.jsonl step "nvshmem_perf coll+on_stream, 2 PEs, 2 GPUs" 150 \
            $PMPI "$B/nvshmem_perf" -only 'coll|on_stream' -bw-maxsize "$BW_MAX" -coll-maxsize "$COLL_MAX" -coll-threads 1024
    else
        rows+=("| nvshmem_perf | build | FAIL (see nvshmem_build.log) | 0 | |")
        fails=$((fails + 1))
    fi
    # the on-stream rows under other grid settings (GOSHMEM_GPU_COLL_*: the defaults were chosen
    # with every PE on one GPU)
    tuned=""
    for t in $TUNE; do
        v=$(echo "${t#GOSHMEM_GPU_COLL_}" | tr 'A-Z=' 'a-z_')
        RESERVE=25 STEP_STDOUT=$out/goshmem_$v.jsonl step "goshmem-perf onstream, $t, 2 PEs, 2 GPUs" 60 \
            env "$t" $PMPI -x "${t%%=*}" $GP -only '^onstream$' -variant "$v"
        tuned="$tuned $out/goshmem_$v.jsonl"
    done
    if [ -s "$out/goshmem.jsonl" ]; then
        peers=""
        for f in "$out/nvshmem.jsonl" "$out/nccl.jsonl" $tuned; do [ -s "$f" ] && peers="$peers $f"; done
        timeout 30 bin/goshmem-perf report -md "$out/ratios.md" "$out/goshmem.jsonl" $peers >"$out/ratios.txt" 2>>"$log"
        bench=1
    fi
fi

# ---- 4. summary ----
{
    echo "# issue 17 on two GPUs: device collectives, stream calls, benchmarks against NVSHMEM and NCCL (tests/gpu/coll2.sh)"
    echo
    echo '```'
    cat "$out/machine.txt"
    echo '```'
    echo
    echo "Budget ${BUDGET} s, used $(($(date +%s) - T0)) s. One PE per GPU unless a step says otherwise; large n $LARGE (stream calls $SLARGE, proxy $PLARGE); benchmarks up to $COLL_MAX bytes."
    echo
    echo "| step | command | result | seconds | devtest summary / rows |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
    echo
    echo "## failing tests"
    echo
    failing_tests
    if [ -n "$bench" ]; then
        echo
        echo "## benchmarks (2 PEs, one per GPU): goshmem vs NVSHMEM and NCCL"
        echo
        cat "$out/ratios.md" 2>/dev/null || { echo '```'; cat "$out/ratios.txt"; echo '```'; }
        echo
        echo "NCCL's all-reduce bus bandwidth (nccl-tests' busbw = algbw x 2(n-1)/n):"
        echo
        grep '"sum_reduce_on_stream"' "$out/nccl.jsonl" 2>/dev/null | grep -o '"size":[0-9]*\|busbw [0-9.]* GB/s' | paste - - | sed 's/^/    /'
        echo
        echo "host Reduce on a GPU array vs the on-stream reduce of the same size:"
        echo
        grep '"host_reduce_gpu"' "$out/goshmem.jsonl" | sed 's/^/    /'
    fi
    echo
    echo "overall: $([ $fails = 0 ] && echo PASS || echo "FAIL ($fails steps failed)")"
} >"$out/summary.md"
cat "$out/summary.md"
(cd "$out" && tar czf coll2.tgz ./*.log ./*.jsonl ./*.txt ./*.md 2>/dev/null)
exit $((fails > 0))
