#!/usr/bin/env bash
# device call V: (1) SKIP_BENCH=1 tests/gpu/coll.sh again at the head, now that a step reserves
# 10 s rather than 150 with SKIP_BENCH=1 (call T's run left the six proxy steps NOT RUN, for
# budget); (2) the first run of bench/alloc/rows.sh's NVSHMEM peer (alloc_nvshmem_build through
# bench/gpu/nvshmem_build.sh, then nvshmem_malloc back to back) beside goshmem's growing
# AllocDevice in the same call: 2 MiB (13 growths) and 512 MiB back to back at 2 and 4 PEs.
# Kernels by nvcc 11.8 (bin/t, call T's carry); goshmem-perf built without the gpulib import, the
# kernel library from the tree (bin/v). Run from the repository root with bin/t and bin/v carried.
set -u
T0=$(date +%s)
mkdir -p $OUT/v
xz -dc bin/t/carry.tar.xz | tar -C bin -xf -
SKIP_BENCH=1 BUDGET=${COLL_BUDGET:-300} bash tests/gpu/coll.sh $OUT/v/coll >$OUT/v/coll.out 2>&1
echo "coll.sh rc $? after $(( $(date +%s) - T0 )) s" >>$OUT/v/steps.txt
grep -E '^\| |overall' $OUT/v/coll/summary.md | cut -c1-150 | grep -v '^| step'
xz -dc bin/v/goshmem-perf.xz >bin/perf-v && chmod +x bin/perf-v
. bench/alloc/rows.sh
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin ALLOC_MODULE=bin/v/perf.fatbin
alloc_begin $OUT/v/alloc
alloc_nvshmem_build
for np in 2 4; do
  alloc_row bin/perf-v $np 2097152 b2b-np$np -alloc-reps 12
  alloc_nvshmem $np 2097152
  alloc_row bin/perf-v $np 536870912 b2b-np$np
  alloc_nvshmem $np 536870912
done
alloc_end
echo "alloc rows done after $(( $(date +%s) - T0 )) s" >>$OUT/v/steps.txt
cat $OUT/v/steps.txt $OUT/v/alloc/steps.txt
python3 bench/alloc/summary.py $OUT/v/alloc
(cd $OUT && tar czf resV.tgz v && rm -rf v)
