#!/usr/bin/env bash
# device call T: the device suites at the head, kernels built by nvcc 11.8 on the dev machine
# (issue 39), with the checks added in this tree: which GPU a PE uses on the real driver
# (tests/gpu/run.sh's bin/spmd -mode gpu-device steps) and the collectives with 1,024 teams alive,
# on the team in the last slot (tests/gpu/coll.sh's -coll-teams world,many steps).
# tests/gpu/run.sh, then SKIP_BENCH=1 tests/gpu/coll.sh (the suites, no benchmark rows) in what
# is left of LIMIT s (default 570; each suite's results packed as it ends). Run from the repository root with bin/t carried: carry.tar.xz holds
# bin/devtest, bin/spmd and the kernels of `make fatbins` and `make gpucoll` the suites use
# (devtest, compat and their _remote builds; devcoll_<k>, devcoll_remote_<k>, perf_coll).
set -u
T0=$(date +%s)
mkdir -p $OUT/t
xz -dc bin/t/carry.tar.xz | tar -C bin -xf -
bash tests/gpu/run.sh $OUT/t/suite >$OUT/t/suite.out 2>&1
echo "run.sh rc $? after $(( $(date +%s) - T0 )) s" >>$OUT/t/steps.txt
(cd $OUT && tar czf resT-suite.tgz t)
SKIP_BENCH=1 BUDGET=$(( ${LIMIT:-570} - ($(date +%s) - T0) )) bash tests/gpu/coll.sh $OUT/t/coll >$OUT/t/coll.out 2>&1
echo "coll.sh rc $? after $(( $(date +%s) - T0 )) s" >>$OUT/t/steps.txt
cat $OUT/t/steps.txt
for f in $OUT/t/suite/summary.md $OUT/t/coll/summary.md; do grep -E '^\| |overall|PASS|FAIL' $f | cut -c1-150 | grep -v '^| step' | tail -45; done
(cd $OUT && tar czf resT.tgz t && rm -rf t resT-suite.tgz)
