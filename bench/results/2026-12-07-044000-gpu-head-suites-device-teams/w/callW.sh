#!/usr/bin/env bash
# device call W: tests/gpu/run.sh and SKIP_BENCH=1 tests/gpu/coll.sh themselves (not arch.sh) with
# every suite kernel built there by the GPU machine's nvcc 13.0 (issue 39 item 6 names both
# suites): the point-to-point kernels and the devcoll parts in one make -j16 of the Makefile's
# rules into bin/gpu (nothing carried there), then run.sh (every one-GPU placement, the six
# device-choice jobs), then coll.sh at 2, 4 and 8 PEs (load/store, proxy, 1,024 teams) in what
# is left of WBUDGET (s, default 560). Run from the repository root with bin/t carried (only
# bin/devtest and bin/spmd are taken from it).
set -u
T0=$(date +%s)
W=${WBUDGET:-560}
mkdir -p $OUT/w
xz -dc bin/t/carry.tar.xz | tar -C bin -xf - devtest spmd
rm -f bin/gpu/*.fatbin
N=$(sed -n 's/^#define DEVCOLL_NPARTS \([0-9]*\).*/\1/p' tests/gpu/kernels/devcoll.cu)
K="bin/gpu/devtest.fatbin bin/gpu/devtest_remote.fatbin bin/gpu/compat.fatbin bin/gpu/compat_remote.fatbin"
K="$K $(for k in $(seq 0 $((N - 1))); do echo bin/gpu/devcoll_$k.fatbin bin/gpu/devcoll_remote_$k.fatbin; done)"
{ nvcc --version | grep release; timeout 330 make --no-print-directory -j16 $K; echo "make rc $?"; } >$OUT/w/build.log 2>&1
echo "kernels built with nvcc 13.0 after $(( $(date +%s) - T0 )) s: $(tail -1 $OUT/w/build.log)" >>$OUT/w/steps.txt
ls -l bin/gpu >>$OUT/w/build.log
bash tests/gpu/run.sh $OUT/w/suite >$OUT/w/suite.out 2>&1
echo "run.sh rc $? after $(( $(date +%s) - T0 )) s" >>$OUT/w/steps.txt
(cd $OUT && tar czf resW-suite.tgz w)
SKIP_BENCH=1 BUDGET=$(( W - ($(date +%s) - T0) )) bash tests/gpu/coll.sh $OUT/w/coll >$OUT/w/coll.out 2>&1
echo "coll.sh rc $? after $(( $(date +%s) - T0 )) s" >>$OUT/w/steps.txt
cat $OUT/w/steps.txt
for f in $OUT/w/suite/summary.md $OUT/w/coll/summary.md; do grep -E '^\| |overall|^- kernels|^Budget' $f | cut -c1-150 | grep -v '^| step'; done
(cd $OUT && tar czf resW.tgz w && rm -rf w resW-suite.tgz)
