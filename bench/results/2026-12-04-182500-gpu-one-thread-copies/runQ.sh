#!/bin/bash
# c2 = one thread's copies, second form: goshmemi_cg_copy_one's last batch predicated (from 32 B),
# goshmemi_copy_blocks_one taking blocks of 8+ words one by one (8 loads in flight) and smaller ones
# 4 blocks x 2 words a round (reductions' copies from 32 B); c2r = c2 with the reductions' copies as
# before; c3 = c2 with 4 blocks x 1 word a round; head = main (0753e1b); lb* = thread kernels at
# __launch_bounds__(1024)
set -u
tar xJf bin/carryQ.txz
O=$OUT/r; mkdir -p $O
V="head c2 c2r c3 lbhead lbc2 lbc3"
B=""; for v in $V; do B="$B $v=bin/var/$v.fatbin"; done
R=""; for v in $V; do R="$v=bin/var/$v.fatbin $R"; done
PEER=0 bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
PEER=0 bash bench/gpu/ab.sh $O/ab2 $R > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
