#!/bin/bash
# on-stream rows only: goshmem-perf with the landed lib.fatbin (new, runN's build) against one built with the
# previous commit's lib.fatbin (old), interleaved, 5 repeats (order alternating), 2 and 4 PEs on one GPU
set -u
tar xJf bin/carryO.txz
O=$OUT/runO; mkdir -p $O
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0
. tests/gpu/mps.sh
trap 'mps_stop' EXIT
mps_start || { echo "MPS did not start"; exit 1; }
X="-x CUDA_VISIBLE_DEVICES -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
for i in 1 2 3 4 5; do
  order="new old"; [ $((i % 2)) = 0 ] && order="old new"
  for np in 2 4; do
    for v in $order; do
      bin=bin/goshmem-perf; [ $v = old ] && bin=bin/goshmem-perf-old
      timeout -k 5 100 mpirun --bind-to none --oversubscribe -np $np $X $bin device -json -module bin/gpu/perf.fatbin \
        -coll-module bin/gpu/perf_coll.fatbin -only '^onstream$' -coll-threads 1024 -coll-maxsize 65536 \
        > $O/${v}_np${np}_$i.jsonl 2> $O/${v}_np${np}_$i.log
      echo "$v np$np rep $i: rc $? $(grep -c '^{' $O/${v}_np${np}_$i.jsonl) rows"
    done
  done
done
cd $OUT && tar czf runO.tgz runO && rm -rf runO
