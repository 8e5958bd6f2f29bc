#!/bin/bash
# land = the landed kernels (8c7f077); b32 / b64 = land with the one-thread broadcast's LL limit at
# 32 / 64 B (was 16); lb* = thread kernels at __launch_bounds__(1024)
set -u
tar xJf bin/carryV.txz
O=$OUT/r; mkdir -p $O
V="land b32 b64 lbland lbb32"
B=""; for v in $V; do B="$B $v=bin/var/$v.fatbin"; done
R=""; for v in $V; do R="$v=bin/var/$v.fatbin $R"; done
PEER=0 bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
PEER=0 bash bench/gpu/ab.sh $O/ab2 $R > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
