#!/bin/bash
# g = LL senders' loads predicated and in flight together, the broadcast root loading each word once
# for all receivers, warp broadcast LL up to 512 B at any team size; gw170 = g with the old warp limit
# (512 B over all receivers); gw1k = warp 1 KiB; gt16/gt32 = one-thread broadcast LL up to 16/32 B;
# f = runI's f; against the landed build (land); lb* warp kernels, lbt* thread kernels at __launch_bounds__(1024)
set -u
tar xJf bin/carryJ.txz
O=$OUT/r; mkdir -p $O
V="land g gw170 gw1k gt16 gt32 f lbland lbg lbtland lbtg lbtgt16"
B=""; for v in $V; do B="$B $v=bin/var/$v.fatbin"; done
R=""; for v in $V; do R="$v=bin/var/$v.fatbin $R"; done
bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
PEER=0 NPS="2 3 4" bash bench/gpu/ab.sh $O/ab2 $R > $O/ab2.txt 2>&1
PEER=0 bash bench/gpu/ab.sh $O/ab3 $B > $O/ab3.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
