#!/bin/bash
# the landed build: device suite, then the full MPG comparison twice (BASE_COLL = head's perf_coll,
# 5312ea1), the second with the two builds swapped, so each runs first once
set -u
tar xJf bin/carryF.txz
O=$OUT/runF; mkdir -p $O
t0=$(date +%s)
SKIP_BENCH=1 BUDGET=200 RESERVE=10 bash tests/gpu/coll.sh $O/suite > $O/suite.txt 2>&1
echo "suite rc $? in $(( $(date +%s) - t0 )) s"; grep -i "overall" $O/suite.txt | head -5
t0=$(date +%s)
BASE_COLL=bin/var/head.fatbin timeout -k 10 250 bash bench/gpu/mpg.sh $O/mpg > $O/mpg.txt 2>&1
echo "mpg rc $? in $(( $(date +%s) - t0 )) s"
cp bin/gpu/perf_coll.fatbin bin/var/land.fatbin && cp bin/var/head.fatbin bin/gpu/perf_coll.fatbin
t0=$(date +%s)
BASE_COLL=bin/var/land.fatbin timeout -k 10 200 bash bench/gpu/mpg.sh $O/swap > $O/swap.txt 2>&1
echo "swap rc $? in $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf runF.tgz runF && rm -rf runF
