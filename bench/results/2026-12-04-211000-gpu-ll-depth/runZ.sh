#!/bin/bash
# head = main (5312ea1); w8 = runX's s8w with the 8-word LL batch for a warp's broadcast only (one
# thread's kernels SASS-identical to head's); w8dl = w8 with a warp's large-block copies (from 4
# 16-byte words a lane) out of line and 8 words a lane deep; w8dl4 = out of line, 4 deep; w8d8i =
# inline, 8 deep; wb* = warp kernels at __launch_bounds__(1024)
set -u
tar xJf bin/carryZ.txz
O=$OUT/r; mkdir -p $O
V="head w8 w8dl w8dl4 w8d8i wbhead wbw8 wbw8dl wbw8dl4"
B=""; for v in $V; do B="$B $v=bin/var/$v.fatbin"; done
R=""; for v in $V; do R="$v=bin/var/$v.fatbin $R"; done
bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
PEER=0 bash bench/gpu/ab.sh $O/ab2 $R > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
