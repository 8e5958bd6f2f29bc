#!/usr/bin/env bash
# device call A: the device suites at the head (e76f769 and later: every CUDA call puts back another
# context current on its thread; team Destroy clears the device row; a growth by need agrees that
# every PE mapped its peers; RegisterDevice refuses every heap), kernels built by nvcc 11.8 on the
# dev machine (call T's, the device code is unchanged since), Go binaries from this tree.
# SKIP_BENCH=1 tests/gpu/coll.sh (the suites, no benchmark rows), then tests/gpu/run.sh, each
# suite's results packed as it ends. LEAN=1 (little device time left): coll.sh at 8 PEs only
# without the proxy steps, run.sh with fewer rounds and without the IBGDA steps.
# Run from the repository root with bin/u carried: carry.tar.xz holds bin/devtest, bin/spmd and
# the kernels of `make fatbins` and `make gpucoll` the suites use (devtest, compat and their
# _remote builds; devcoll_<k>, devcoll_remote_<k>; not perf_coll, which only benchmarks use).
set -u
T0=$(date +%s)
mkdir -p $OUT/a
xz -dc bin/u/carry.tar.xz | tar -C bin -xf -
if [ "${LEAN:-0}" = 1 ]; then
  export NPS=8 SKIP_PROXY=1 ROUNDS_NOMPS=5 ROUNDS_MPS=200 ROUNDS_PROXY=50 SKIP_IBGDA=1
fi
SKIP_BENCH=1 BUDGET=${COLL_BUDGET:-300} bash tests/gpu/coll.sh $OUT/a/coll >$OUT/a/coll.out 2>&1
echo "coll.sh rc $? after $(( $(date +%s) - T0 )) s" >>$OUT/a/steps.txt
(cd $OUT && tar czf resA-coll.tgz a)
bash tests/gpu/run.sh $OUT/a/suite >$OUT/a/suite.out 2>&1
echo "run.sh rc $? after $(( $(date +%s) - T0 )) s" >>$OUT/a/steps.txt
cat $OUT/a/steps.txt
for f in $OUT/a/coll/summary.md $OUT/a/suite/summary.md; do grep -E '^\| |overall' $f | cut -c1-150 | grep -v '^| step' | tail -45; done
(cd $OUT && tar czf resA.tgz a && rm -rf a resA-coll.tgz)
