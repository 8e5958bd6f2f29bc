#!/bin/bash
# head = main (5312ea1); bb8 = the broadcast's LL packets 8 a thread per batch (was 4; a warp's LL
# limit becomes 1 KiB); bb8L = bb8 with the one-thread broadcast's LL up to 32 B and a warp's up to
# 2 KiB over all receivers; bb8T64 = bb8L with one thread's up to 64 B; xw8 = a warp's LL exchange
# 8 words a lane per batch, its limit 1 KiB over all members; fd = a warp's fcollect/alltoall LL
# unpacked straight into dst; lb* = thread kernels, wb* = warp kernels at __launch_bounds__(1024)
set -u
tar xJf bin/carryW.txz
O=$OUT/r; mkdir -p $O
V="head bb8 bb8L bb8T64 xw8 fd lbhead lbbb8L lbbb8T64 wbhead wbbb8L wbxw8 wbfd"
B=""; for v in $V; do B="$B $v=bin/var/$v.fatbin"; done
R=""; for v in $V; do R="$v=bin/var/$v.fatbin $R"; done
bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
PEER=0 bash bench/gpu/ab.sh $O/ab2 $R > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
