#!/usr/bin/env bash
O=$1; mkdir -p $O
t0=$(date +%s)
SKIP_BENCH=1 BUDGET=200 RESERVE=10 bash tests/gpu/coll.sh $O/suite > $O/suite.txt 2>&1
echo "suite rc $? in $(( $(date +%s) - t0 )) s"; grep -i "overall" $O/suite.txt | head -5
tar czf $O-suite.tgz -C $O suite suite.txt
