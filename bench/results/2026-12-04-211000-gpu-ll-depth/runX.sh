#!/bin/bash
# head = main (5312ea1); s8 = the broadcast's LL in its own code for 8 words a thread per batch when
# 4 do not cover len (a warp's LL limit 1 KiB, one thread's 32 B), 4 a batch otherwise as head;
# s8w = s8 with one thread's limit at 16 B (head's); s16 = s8 with a 16-word batch for a warp above
# 1 KiB, its limit 2 KiB over all receivers; s8d8 = s8 with a warp's copies 8 words a lane deep (was
# 4); lb* = thread kernels, wb* = warp kernels at __launch_bounds__(1024)
set -u
tar xJf bin/carryX.txz
O=$OUT/r; mkdir -p $O
V="head s8 s8w s16 s8d8 lbhead lbs8 wbhead wbs8 wbs8d8"
B=""; for v in $V; do B="$B $v=bin/var/$v.fatbin"; done
R=""; for v in $V; do R="$v=bin/var/$v.fatbin $R"; done
bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
PEER=0 bash bench/gpu/ab.sh $O/ab2 $R > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
