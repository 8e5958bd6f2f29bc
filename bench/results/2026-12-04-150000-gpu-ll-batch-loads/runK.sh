#!/bin/bash
# h0 = runJ's g with the warp broadcast LL up to 1 KiB and the one-thread broadcast LL up to 16 B
# (32 B at 2 PEs); h1 = h0 with one thread's root sending receiver by receiver (runI's loop);
# h2 = h0 with the LL senders' loads unconditional from a clamped index (runI's f) instead of
# predicated; h3 = h1 + h2; hw = h0 with the warp fcollect/alltoall LL packets unpacked straight
# into dst; land = the landed build; lb* warp kernels, lbt* thread kernels at __launch_bounds__(1024)
set -u
tar xJf bin/carryK.txz
O=$OUT/r; mkdir -p $O
V="land h0 h1 h2 h3 hw lbland lbh0 lbh2 lbhw lbtland lbth0 lbth1 lbth2 lbth3"
B=""; for v in $V; do B="$B $v=bin/var/$v.fatbin"; done
R=""; for v in $V; do R="$v=bin/var/$v.fatbin $R"; done
bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
PEER=0 bash bench/gpu/ab.sh $O/ab2 $R > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
