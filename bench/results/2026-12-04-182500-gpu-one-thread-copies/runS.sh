#!/bin/bash
# c6 = runR's c4 with the reductions' copies per block through goshmemi_cg_copy_one from 64 B (not
# goshmemi_copy_blocks_one); c6b = c6 from 128 B; head = main (0753e1b); lb* = thread kernels at
# __launch_bounds__(1024); NVSHMEM in the first pass
set -u
tar xJf bin/carryS.txz
O=$OUT/r; mkdir -p $O
V="head c6 c6b c4 lbhead lbc6 lbc6b lbc4"
B=""; for v in $V; do B="$B $v=bin/var/$v.fatbin"; done
R=""; for v in $V; do R="$v=bin/var/$v.fatbin $R"; done
bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
PEER=0 bash bench/gpu/ab.sh $O/ab2 $R > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
