#!/bin/bash
# the landed build (runS's c4): device suite, then the full MPG comparison (BASE_COLL = main's
# perf_coll, 0753e1b)
set -u
tar xJf bin/carryT.txz
O=$OUT/runT; mkdir -p $O
t0=$(date +%s)
SKIP_BENCH=1 BUDGET=200 RESERVE=10 bash tests/gpu/coll.sh $O/suite > $O/suite.txt 2>&1
echo "suite rc $? in $(( $(date +%s) - t0 )) s"; grep -i "overall" $O/suite.txt | head -5
t0=$(date +%s)
BASE_COLL=bin/var/head.fatbin timeout -k 10 400 bash bench/gpu/mpg.sh $O/mpg > $O/mpg.txt 2>&1
echo "mpg rc $? in $(( $(date +%s) - t0 )) s"; grep -h "on stream" $O/mpg/ratios_ign_np4.txt | head -6
cd $OUT && tar czf runT.tgz runT && rm -rf runT
