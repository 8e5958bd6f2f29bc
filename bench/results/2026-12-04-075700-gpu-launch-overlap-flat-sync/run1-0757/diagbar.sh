#!/usr/bin/env bash
# in-kernel barrier latency (diag_barrier rows) of perf.fatbin builds: NAME=FATBIN..., NPS, REPS
set -u
out=$1; shift
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0
. tests/gpu/mps.sh
trap 'mps_stop' EXIT
mps_start || { echo "MPS did not start"; exit 1; }
X="-x CUDA_VISIBLE_DEVICES -x LD_LIBRARY_PATH -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
for r in $(seq 1 "${REPS:-2}"); do
  for np in ${NPS:-2 3 4}; do
    for nf in "$@"; do
      n=${nf%%=*} f=${nf#*=}
      timeout -k 5 60 mpirun --bind-to none --oversubscribe -np "$np" $X bin/goshmem-perf device -json -module "$f" \
        -only '^diag_barrier$' -variant "$n" >"$out/${n}_np${np}_r$r.jsonl" 2>"$out/${n}_np${np}_r$r.log"
      echo "$n np$np r$r rc $?: $(grep -o '"name":"diag_bar_[a-z_]*","size":0,"iters":[0-9]*,"median_us":[0-9.]*' "$out/${n}_np${np}_r$r.jsonl" | sed 's/"size":0,"iters":[0-9]*,//' | tr '\n' ' ')"
    done
  done
done
