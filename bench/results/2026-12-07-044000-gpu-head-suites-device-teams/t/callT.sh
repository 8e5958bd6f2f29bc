#!/usr/bin/env bash
# device call T: the device suites at the head, kernels built by nvcc 11.8 on the dev machine
# (issue 39), with the checks added in this tree: the collectives with 1,024 teams alive, on the
# team in the last slot (tests/gpu/coll.sh's -coll-teams world,many steps), and which GPU a PE
# uses on the real driver (tests/gpu/run.sh's bin/spmd -mode gpu-device steps).
# SKIP_BENCH=1 tests/gpu/coll.sh (the suites, no benchmark rows), then tests/gpu/run.sh, each
# suite's results packed as it ends. LEAN=1 (little device time left): coll.sh at 8 PEs only
# without the proxy steps, run.sh with fewer rounds and without the IBGDA steps.
# Run from the repository root with bin/t carried: carry.tar.xz holds bin/devtest, bin/spmd and
# the kernels of `make fatbins` and `make gpucoll` the suites use (devtest, compat and their
# _remote builds; devcoll_<k>, devcoll_remote_<k>; not perf_coll, which only benchmarks use).
set -u
T0=$(date +%s)
mkdir -p $OUT/t
xz -dc bin/t/carry.tar.xz | tar -C bin -xf -
if [ "${LEAN:-0}" = 1 ]; then
  export NPS=8 SKIP_PROXY=1 ROUNDS_NOMPS=5 ROUNDS_MPS=200 ROUNDS_PROXY=50 SKIP_IBGDA=1
fi
SKIP_BENCH=1 BUDGET=${COLL_BUDGET:-300} bash tests/gpu/coll.sh $OUT/t/coll >$OUT/t/coll.out 2>&1
echo "coll.sh rc $? after $(( $(date +%s) - T0 )) s" >>$OUT/t/steps.txt
(cd $OUT && tar czf resT-coll.tgz t)
bash tests/gpu/run.sh $OUT/t/suite >$OUT/t/suite.out 2>&1
echo "run.sh rc $? after $(( $(date +%s) - T0 )) s" >>$OUT/t/steps.txt
cat $OUT/t/steps.txt
for f in $OUT/t/coll/summary.md $OUT/t/suite/summary.md; do grep -E '^\| |overall' $f | cut -c1-150 | grep -v '^| step' | tail -45; done
(cd $OUT && tar czf resT.tgz t && rm -rf t resT-coll.tgz)
