#!/usr/bin/env bash
# goshmem device API vs NVSHMEM, run ON the GPU machine, in the repo root:
#   bash bench/gpu/run.sh [OUTDIR]        (default: $OUT, else bench/out/gpu)
#
# Needs (carried from the dev machine): bin/goshmem-perf (Go, built there) and
# bin/gpu/perf.fatbin (nvcc 11.8: see bench/gpu/perf.cu); the fatbin is rebuilt
# here with this machine's nvcc when missing. Builds the NVSHMEM peer
# (bench/gpu/nvshmem_perf.cu) with this machine's nvcc against the Python
# package's NVSHMEM, starts MPS (2 PEs share one GPU: ping-pong and barrier
# kernels must run at once), runs both with 2 PEs back to back, then
# `goshmem-perf report` for the ratio table (text + Markdown) and the plot.
# Writes: goshmem.jsonl nvshmem.jsonl ratios.txt ratios.md plot.png machine.txt log.txt
set -u
OUTDIR=${1:-${OUT:-bench/out/gpu}}
mkdir -p "$OUTDIR"
LOG=$OUTDIR/log.txt
: >"$LOG"
log() { echo "$@" | tee -a "$LOG"; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0
NV=${NVSHMEM_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem}
NVROOT=$(dirname "$NV")
LIBS=$NV/lib
for d in "$NVROOT"/*/lib; do LIBS=$LIBS:$d; done
export LD_LIBRARY_PATH=$LIBS:${LD_LIBRARY_PATH:-}
NP=${NP:-2}
GO_FLAGS=${GO_FLAGS:-}
NV_FLAGS=${NV_FLAGS:-}
TMO=${TMO:-100}
B=/tmp/goshmem-gpu-build
mkdir -p $B

# ---- build ----
MPI_INC=$(mpicc --showme:incdirs 2>/dev/null | awk '{print $1}')
[ -n "$MPI_INC" ] || MPI_INC=/usr/lib/x86_64-linux-gnu/openmpi/include
MPI_LIBDIR=$(mpicc --showme:libdirs 2>/dev/null | awk '{print $1}')
[ -n "$MPI_LIBDIR" ] || MPI_LIBDIR=/usr/lib/x86_64-linux-gnu/openmpi/lib
ln -sf "$(ls $NV/lib/libnvshmem_host.so* | head -1)" $B/libnvshmem_host.so
t0=$(date +%s)
if ! nvcc -rdc=true -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I"$NV/include" -I"$MPI_INC" \
    bench/gpu/nvshmem_perf.cu -o $B/nvshmem_perf -L$B -L"$NV/lib" -L"$MPI_LIBDIR" \
    -lnvshmem_host -lnvshmem_device -lmpi -Xlinker -rpath -Xlinker "$NV/lib" >>"$LOG" 2>&1; then
  log "BUILD FAILED: nvshmem_perf (see log.txt)"
fi
log "# nvshmem_perf build: $(($(date +%s) - t0)) s"
FATBIN=bin/gpu/perf.fatbin
if [ ! -s $FATBIN ]; then
  FATBIN=$B/perf.fatbin
  nvcc -std=c++17 -O3 -I include -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
    -fatbin -o $FATBIN bench/gpu/perf.cu >>"$LOG" 2>&1 || log "BUILD FAILED: perf.fatbin"
fi

# ---- machine ----
M=$OUTDIR/machine.txt
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname); kernel $(uname -r); $(nproc) CPUs"
  nvidia-smi -L
  echo "GPU count: $(nvidia-smi -L | wc -l)"
  nvidia-smi --query-gpu=name,driver_version,pci.bus_id,clocks.sm,clocks.max.sm,clocks.mem,clocks.max.mem,power.draw,temperature.gpu,compute_mode --format=csv
  nvidia-smi topo -m 2>/dev/null | head -5
  echo "nvcc: $(nvcc --version | tail -2 | head -1)"
  echo "NVSHMEM: $NV ($(ls $NV/lib | tr '\n' ' '))"
  echo "mpirun: $(mpirun --version 2>&1 | head -1)"
  echo "goshmem-perf: $(bin/goshmem-perf help 2>&1 | head -0; ls -la bin/goshmem-perf | awk '{print $5, $6, $7, $8}') fatbin $FATBIN"
  echo "env: NVSHMEM_DISABLE_NVLS=$NVSHMEM_DISABLE_NVLS NP=$NP"
} >"$M" 2>&1

# ---- MPS ----
export CUDA_MPS_PIPE_DIRECTORY=/tmp/goshmem-mps-pipe CUDA_MPS_LOG_DIRECTORY=/tmp/goshmem-mps-log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
MPS=off
stop_mps() { [ $MPS = on ] && echo quit | nvidia-cuda-mps-control && MPS=stopped; }
trap stop_mps EXIT
if [ "${NO_MPS:-0}" != 1 ] && nvidia-cuda-mps-control -d >>"$LOG" 2>&1; then
  MPS=on
  sleep 1
fi
CONC=""
[ $MPS = on ] || CONC="-concurrent=false"
NVCONC=""
[ $MPS = on ] || NVCONC="-no-concurrent"
echo "MPS: $MPS (CUDA_MPS_PIPE_DIRECTORY=$CUDA_MPS_PIPE_DIRECTORY)" >>"$M"

export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-2G}
MPIRUN="mpirun --bind-to none -np $NP -x LD_LIBRARY_PATH -x NVSHMEM_SYMMETRIC_SIZE -x NVSHMEM_DISABLE_NVLS -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
# ---- goshmem ----
CMD1="$MPIRUN bin/goshmem-perf device -json -module $FATBIN $CONC $GO_FLAGS"
echo "command goshmem: $CMD1" >>"$M"
t0=$(date +%s)
timeout $TMO $CMD1 >"$OUTDIR/goshmem.jsonl" 2>>"$LOG"
log "# goshmem-perf device: rc=$? $(($(date +%s) - t0)) s, $(grep -c '^{' "$OUTDIR/goshmem.jsonl") rows"
# ---- NVSHMEM ----
CMD2="$MPIRUN $B/nvshmem_perf $NVCONC $NV_FLAGS"
echo "command nvshmem: $CMD2" >>"$M"
t0=$(date +%s)
timeout $TMO $CMD2 >"$OUTDIR/nvshmem.jsonl" 2>>"$LOG" ||
  true
log "# nvshmem_perf: $(($(date +%s) - t0)) s, $(grep -c '^{' "$OUTDIR/nvshmem.jsonl") rows"
# ---- put_bw with more CTAs (both libraries), report in bw_ctas$CTAS.txt ----
CTAS=${CTAS:-132}
if [ "$CTAS" != 0 ]; then
  timeout 60 $MPIRUN bin/goshmem-perf device -json -module $FATBIN -ctas $CTAS -only '^(put_bw|diag_put_bw_unroll4)$' \
    >$B/g$CTAS.jsonl 2>>"$LOG"
  timeout 60 $MPIRUN $B/nvshmem_perf -ctas $CTAS -only put_bw >$B/n$CTAS.jsonl 2>>"$LOG"
  echo "command ctas: ... -ctas $CTAS -only put_bw (both)" >>"$M"
  bin/goshmem-perf report $B/g$CTAS.jsonl $B/n$CTAS.jsonl >"$OUTDIR/bw_ctas$CTAS.txt" 2>>"$LOG"
fi
stop_mps
echo "MPS after run: $MPS" >>"$M"
# ---- what each library's g and put + quiet compile to (SASS memory ops) ----
for f in perf_g_thread perf_put_thread perf_p_thread; do
  echo "== nvshmem $f" >>"$LOG"
  cuobjdump -sass -fun $f $B/nvshmem_perf 2>&1 | grep -E 'LD|ST|MEMBAR|FENCE|CCTL|ATOM|RED|CALL' | grep -v ULDC | head -40 >>"$LOG"
done
nvidia-smi --query-gpu=clocks.sm,clocks.mem,temperature.gpu --format=csv >>"$M" 2>&1

# ---- report ----
bin/goshmem-perf report -md "$OUTDIR/ratios.md" -plot "$OUTDIR/plot.png" \
  -title "$(head -3 "$M" | tail -1 | cut -c1-80), $(grep -m1 '^date' "$M"), MPS $MPS" \
  "$OUTDIR/goshmem.jsonl" "$OUTDIR/nvshmem.jsonl" >"$OUTDIR/ratios.txt" 2>>"$LOG"
cat "$OUTDIR/ratios.txt"
