#!/bin/bash
# c4 = runQ's c2 with the reductions' copies out of line only from 32 B a block and 96 B over all
# blocks; c4nl = c4 with one thread's LL exchange only up to 16 B over all members (4 PEs: none);
# c4h = c4 with main's goshmemi_cg_copy_one; head = main (0753e1b); lb* = thread kernels at
# __launch_bounds__(1024)
set -u
tar xJf bin/carryR.txz
O=$OUT/r; mkdir -p $O
V="head c4 c4nl c4h c2 lbhead lbc4 lbc4nl"
B=""; for v in $V; do B="$B $v=bin/var/$v.fatbin"; done
R=""; for v in $V; do R="$v=bin/var/$v.fatbin $R"; done
PEER=0 bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
PEER=0 bash bench/gpu/ab.sh $O/ab2 $R > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
