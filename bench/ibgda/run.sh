#!/usr/bin/env bash
# IBGDA on the GPU machine (GPU side real, NIC EMULATED), run in the repo root:
#   bash bench/ibgda/run.sh OUTDIR
#
# Needs (built on the dev machine by `make gpu`, carried in bin/):
#   bin/goshmem-perf, bin/gpu/ibgda_perf_{gpu,sys,none}.fatbin
# (rebuilt here with this machine's nvcc only if missing).
# One process on one GPU; no MPI, no MPS. The soft NIC (emulation) runs on a
# host core for the put+quiet rows; the issue and rate rows run with it off.
# Writes into OUTDIR: ibgda.txt (tables + targets), ibgda.jsonl, quiet_vs_qps.png,
# machine.txt, log.txt. Finishes in well under 4 minutes; every step is
# under `timeout`.
set -u
OUTDIR=${1:-${OUT:-bench/out/ibgda}}
mkdir -p "$OUTDIR"
LOG=$OUTDIR/log.txt
: >"$LOG"
log() { echo "$@" | tee -a "$LOG"; }
rc=0

# ---- inputs -----------------------------------------------------------------
if [ ! -x bin/goshmem-perf ]; then
  log "FAIL: bin/goshmem-perf missing (run make gpu on the dev machine and carry bin/)"
  exit 1
fi
for m in gpu sys none; do
  f=bin/gpu/ibgda_perf_$m.fatbin
  if [ ! -s "$f" ]; then
    M=$(echo $m | tr a-z A-Z)
    log "building $f with this machine's nvcc"
    mkdir -p bin/gpu
    timeout 120 nvcc -std=c++17 -Iinclude -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 \
      -fatbin -DGOSHMEM_IBGDA_ORDER_$M bench/ibgda/ibgda_perf.cu -o "$f" >>"$LOG" 2>&1 || { log "FAIL: nvcc $f"; exit 1; }
  fi
done

# ---- machine ------------------------------------------------------------------
{
  echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
  echo "host: $(hostname)"
  echo "commit: $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
  echo "goshmem-perf: $(bin/goshmem-perf help 2>&1 | head -1)"
  timeout 20 nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,pstate,temperature.gpu,power.draw --format=csv 2>&1
  timeout 20 nvidia-smi topo -m 2>&1 | head -20
  lscpu 2>/dev/null | grep -E 'Model name|^CPU\(s\)|MHz' | head -5
  echo "NIC: none used; the soft NIC (ibgda.SoftNIC, Go, emulation) runs on a host core"
} >"$OUTDIR/machine.txt" 2>&1
log "machine: $(head -6 "$OUTDIR/machine.txt" | tr '\n' ' ')"

# ---- run ----------------------------------------------------------------------
# Issue latency (3 orderings x 2 posting paths), message rate (15 configs),
# put+quiet vs 1..16 QPs (ctx and PE-wide). Expected run time: ~30 s.
t0=$(date +%s)
timeout 100 bin/goshmem-perf ibgda -fatbins bin/gpu -iters 10000 -warmup 1000 -reps 5 -max-qps 16 \
  -json-out "$OUTDIR/ibgda.jsonl" -plot "$OUTDIR/quiet_vs_qps.png" >"$OUTDIR/ibgda.txt" 2>>"$LOG"
r=$?
log "goshmem-perf ibgda: exit $r after $(( $(date +%s) - t0 )) s"
[ $r -eq 0 ] || rc=1
if [ $r -ne 0 ] && [ ! -s "$OUTDIR/ibgda.jsonl" ]; then
  # A failure in one section must not lose the others: run them one by one.
  for sec in ibgda_issue ibgda_rate ibgda_put_quiet; do
    t0=$(date +%s)
    timeout 45 bin/goshmem-perf ibgda -fatbins bin/gpu -only "^$sec\$" -json-out "$OUTDIR/$sec.jsonl" \
      -plot "$OUTDIR/$sec.png" >"$OUTDIR/$sec.txt" 2>>"$LOG"
    log "  retry $sec alone: exit $? after $(( $(date +%s) - t0 )) s"
  done
fi
cat "$OUTDIR"/*.txt >>"$LOG" 2>/dev/null
log "done: $(ls "$OUTDIR" | tr '\n' ' ')"
exit $rc
