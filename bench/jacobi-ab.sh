#!/usr/bin/env bash
# bench/jacobi-ab.sh OUTDIR: Jacobi 16384^2, 1000 iterations, 2 PEs (one per GPU), with several
# kernel builds (bin/gpu/jacobi*.fatbin) and the same Go host: which device-code change costs what.
set -u
OUTDIR=${1:?OUTDIR}; mkdir -p "$OUTDIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for fb in bin/gpu/jacobi*.fatbin; do
  for v in "" -neighborhood_sync; do
    echo "== $fb $v" >>"$OUTDIR/jacobi-ab.txt"
    timeout 60 mpirun --bind-to none -np 2 bin/jacobi-gpu -fatbin "$fb" $v 2>&1 | grep -E "GPUs:|rror|mismatch" >>"$OUTDIR/jacobi-ab.txt"
  done
done
cat "$OUTDIR/jacobi-ab.txt"
