#!/bin/bash
set -u
tar xJf bin/carryF.txz
O=$OUT/runF; mkdir -p $O
t0=$(date +%s)
BASE_COLL=bin/var/base.fatbin timeout -k 10 500 bash bench/gpu/mpg.sh $O/mpg > $O/mpg.txt 2>&1
echo "mpg rc $? in $(( $(date +%s) - t0 )) s"; grep -h "on stream" $O/mpg/ratios_ign_np4.txt | head -6
cd $OUT && tar czf runF-mpg.tgz runF && rm -rf runF
