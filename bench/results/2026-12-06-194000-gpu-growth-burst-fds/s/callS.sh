#!/usr/bin/env bash
# device call S: does b44bbea (the descriptor table grown at Init) change the growing call's median
# back to back? Its build ("b", the head) against 6284686 ("d3": call O's new, d3cfac2 with the alloc
# rows' sample budget), alternating, three passes, 2 MiB (-alloc-reps 12: 13 growths a row) and 512 MiB back to back
# and 512 MiB settled, 2 and 4 PEs on one GPU under MPS, through bench/alloc/rows.sh. Kernels by
# nvcc 11.8 (k118.tar.xz), the library from the tree. Run from the repository root, bin/o carried.
set -u
S=bin/o G=bin/o/k
for b in perf-b perf-d3; do xz -dc $S/$b.xz >bin/$b; chmod +x bin/$b; done
mkdir -p $G && xz -dc $S/k118.tar.xz | tar -C $G -xf -
. bench/alloc/rows.sh
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin ALLOC_MODULE=$G/perf.fatbin
alloc_begin $OUT/s
# SHORT=1 (a call with little device time left): 2 MiB back to back only, d3 b b d3 at 2 PEs, then 4
if [ "${SHORT:-0}" = 1 ]; then
  for np in 2 4; do for who in perf-d3 perf-b perf-b perf-d3; do
    alloc_row bin/$who $np 2097152 b2b-$who-np$np -alloc-reps 12
  done; done
else
  for pass in 1 2 3; do
    if [ $pass = 2 ]; then order="perf-b perf-d3"; else order="perf-d3 perf-b"; fi
    for np in 2 4; do
      for who in $order; do
        alloc_row bin/$who $np 2097152 b2b-$who-np$np -alloc-reps 12
        alloc_row bin/$who $np 536870912 b2b-$who-np$np
        alloc_row bin/$who $np 536870912 settle-$who-np$np -alloc-settle 5ms
      done
    done
  done
fi
alloc_end
cat $OUT/s/steps.txt
python3 bench/alloc/summary.py $OUT/s
# One file back: the device tool returns a few files a call (a cut call still returns the unpacked ones).
(cd $OUT && tar czf resS.tgz s && rm -rf s)
