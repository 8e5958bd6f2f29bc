#!/bin/bash
# LL senders' loads in flight together (f), with longer warp (f1k, f2k) and one-thread (ft32, ft64)
# LL limits and an 8-word batch (f2kb8), against the landed build (land); lb* = warp kernels at
# __launch_bounds__(1024), lbt* = thread kernels at __launch_bounds__(1024)
set -u
tar xJf bin/carryI.txz
O=$OUT/r; mkdir -p $O
B="land=bin/var/land.fatbin f=bin/var/f.fatbin f1k=bin/var/f1k.fatbin f2k=bin/var/f2k.fatbin ft32=bin/var/ft32.fatbin ft64=bin/var/ft64.fatbin f2kb8=bin/var/f2kb8.fatbin lbland=bin/var/lbland.fatbin lbf=bin/var/lbf.fatbin lbf2k=bin/var/lbf2k.fatbin lbtland=bin/var/lbtland.fatbin lbtf=bin/var/lbtf.fatbin lbtft64=bin/var/lbtft64.fatbin"
bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
B2="lbtft64=bin/var/lbtft64.fatbin lbtf=bin/var/lbtf.fatbin lbtland=bin/var/lbtland.fatbin lbf2k=bin/var/lbf2k.fatbin lbf=bin/var/lbf.fatbin lbland=bin/var/lbland.fatbin f2kb8=bin/var/f2kb8.fatbin ft64=bin/var/ft64.fatbin ft32=bin/var/ft32.fatbin f2k=bin/var/f2k.fatbin f1k=bin/var/f1k.fatbin f=bin/var/f.fatbin land=bin/var/land.fatbin"
PEER=0 NPS="2 3 4" bash bench/gpu/ab.sh $O/ab2 $B2 > $O/ab2.txt 2>&1
PEER=0 bash bench/gpu/ab.sh $O/ab3 $B > $O/ab3.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
