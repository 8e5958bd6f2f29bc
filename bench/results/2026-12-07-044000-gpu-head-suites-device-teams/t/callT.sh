#!/usr/bin/env bash
# device calls T1 and T2: the device suites at the head, kernels built by nvcc 11.8 on the dev
# machine (issue 39), with the checks added in this tree: which GPU a PE uses on the real driver
# (tests/gpu/run.sh's bin/spmd -mode gpu-device steps) and the collectives with 1,024 teams alive,
# on the team in the last slot (tests/gpu/coll.sh's -coll-teams world,many steps).
#   PART=run (T1): call S first (bench/results/2026-12-06-194000-gpu-growth-burst-fds/s/callS.sh,
#     with bin/o), then tests/gpu/run.sh;
#   PART=coll (T2): SKIP_BENCH=1 tests/gpu/coll.sh (the suites; no benchmark rows).
# Run from the repository root with bin/t1 and bin/o carried (PART=run), or bin/t2 (PART=coll): the
# tree and the carry must stay under 64 MiB. carry.tar.xz: t1 holds bin/devtest, bin/spmd and the
# point-to-point kernels (devtest, compat, and their _remote builds); t2 bin/devtest and the
# collective ones (devcoll_<k>, devcoll_remote_<k>, perf_coll), from `make fatbins` and `make gpucoll`.
set -u
mkdir -p $OUT/t
case ${PART:-run} in run) c=t1 ;; *) c=t2 ;; esac
xz -dc bin/$c/carry.tar.xz | tar -C bin -xf -
case ${PART:-run} in
run)
  bash bench/results/2026-12-06-194000-gpu-growth-burst-fds/s/callS.sh >$OUT/t/callS.out 2>&1
  echo "call S rc $?" >>$OUT/t/steps.txt
  bash tests/gpu/run.sh $OUT/t/suite >$OUT/t/suite.out 2>&1
  echo "run.sh rc $?" >>$OUT/t/steps.txt
  ;;
coll)
  SKIP_BENCH=1 BUDGET=${BUDGET:-540} bash tests/gpu/coll.sh $OUT/t/coll >$OUT/t/coll.out 2>&1
  echo "coll.sh rc $?" >>$OUT/t/steps.txt
  ;;
esac
cat $OUT/t/steps.txt
tail -60 $OUT/t/*/summary.md
(cd $OUT && tar czf resT-${PART:-run}.tgz t && rm -rf t)
