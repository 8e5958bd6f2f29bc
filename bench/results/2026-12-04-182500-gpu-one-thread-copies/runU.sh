#!/bin/bash
# runT's MPG comparison twice more: as runT (the landed perf_coll, BASE_COLL = main's), then with the
# two builds swapped (main's as perf_coll, the landed one as BASE_COLL), so each build runs first once
set -u
tar xJf bin/carryU.txz
O=$OUT/runU; mkdir -p $O
t0=$(date +%s)
BASE_COLL=bin/var/head.fatbin timeout -k 10 280 bash bench/gpu/mpg.sh $O/mpg > $O/mpg.txt 2>&1
echo "mpg rc $? in $(( $(date +%s) - t0 )) s"
cp bin/gpu/perf_coll.fatbin bin/var/land.fatbin && cp bin/var/head.fatbin bin/gpu/perf_coll.fatbin
t0=$(date +%s)
BASE_COLL=bin/var/land.fatbin timeout -k 10 250 bash bench/gpu/mpg.sh $O/swap > $O/swap.txt 2>&1
echo "swap rc $? in $(( $(date +%s) - t0 )) s"
cd $OUT && tar czf runU.tgz runU && rm -rf runU
