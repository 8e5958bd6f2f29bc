#!/usr/bin/env bash
# device call B: what this session's library changes cost the growing AllocDevice: base (9098353,
# the session's start) against head (f72297c: the growth by need has one more exchange, in which
# every PE says it mapped its peers' chunks; every CUDA call puts back another current context),
# both with the same goshmem-perf rows. Back to back at 2 MiB and 512 MiB, and 1 GiB with
# -alloc-settle 5ms (larger than the 512 MiB preparation: the rest is mapped by need), 2 and 4 PEs,
# two passes, interleaved. Run from the repository root with bin/x carried.
set -u
T0=$(date +%s)
O=$OUT/b
mkdir -p $O
for b in base head; do xz -dc bin/x/perf-$b.xz >bin/perf-$b && chmod +x bin/perf-$b; done
. bench/alloc/rows.sh
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin ALLOC_MODULE=bin/x/perf.fatbin
alloc_begin $O/alloc
for pass in 1 2; do
  for np in 2 4; do
    for b in base head; do
      alloc_row bin/perf-$b $np 2097152 $b-np$np
      alloc_row bin/perf-$b $np 536870912 $b-np$np
      alloc_row bin/perf-$b $np 1073741824 $b-settle-np$np -alloc-settle 5ms
    done
  done
done
alloc_end
grep -v 'rc 0$' $O/alloc/steps.txt
python3 bench/alloc/summary.py $O/alloc > $O/summary.txt
grep -E 'jsonl|alloc_grow|cumemalloc|stream_in' $O/summary.txt
(cd $OUT && tar czf resB.tgz b && rm -rf b)
echo "done after $(( $(date +%s) - T0 )) s"
