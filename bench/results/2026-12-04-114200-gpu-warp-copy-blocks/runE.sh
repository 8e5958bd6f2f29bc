#!/bin/bash
# device suite with the landed kernels, then the full MPG comparison (BASE_COLL = the previous header's perf_coll)
set -u
tar xJf bin/carryE.txz
echo placeholder > bin/gpu/perf_coll.fatbin
O=$OUT/runE; mkdir -p $O
t0=$(date +%s)
SKIP_BENCH=1 BUDGET=200 RESERVE=10 bash tests/gpu/coll.sh $O/suite > $O/suite.txt 2>&1
echo "suite rc $? in $(( $(date +%s) - t0 )) s"; grep -i "overall" $O/suite.txt | head -5
cd $OUT && tar czf runE-suite.tgz runE && rm -rf runE
