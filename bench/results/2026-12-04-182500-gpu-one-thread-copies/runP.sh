#!/bin/bash
# head = main's kernels (0753e1b); c1 = one thread's copies batched (goshmemi_cg_copy_one below 128 B,
# goshmemi_copy_blocks_one over every block; reductions' copies from 32 B); c1ll16 = c1 with the
# one-thread LL exchange up to 16 B per member; c1a48 = c1 with it up to 48 B over all members;
# d4ll16 = c1ll16 with 4 loads in flight instead of 8; lb* = thread kernels at __launch_bounds__(1024)
set -u
tar xJf bin/carryP.txz
O=$OUT/r; mkdir -p $O
V="head c1 c1ll16 c1a48 d4ll16 lbhead lbc1ll16 lbd4ll16"
B=""; for v in $V; do B="$B $v=bin/var/$v.fatbin"; done
R=""; for v in $V; do R="$v=bin/var/$v.fatbin $R"; done
bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
PEER=0 bash bench/gpu/ab.sh $O/ab2 $R > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
