#!/usr/bin/env bash
# device call U: the device suites at 8 PEs with kernels built there by the GPU machine's nvcc 13.0
# (tests/gpu/arch.sh, issue 39 item 6), now with both collective families on the team in the last
# slot of a 1,024-team table. Run from the repository root with bin/t carried (call T's carry;
# only bin/devtest is taken from it). ARCH_BUDGET (s, default 550) bounds arch.sh.
set -u
T0=$(date +%s)
mkdir -p $OUT/u
xz -dc bin/t/carry.tar.xz | tar -C bin -xf - devtest
NPS=8 BUDGET=${ARCH_BUDGET:-550} bash tests/gpu/arch.sh $OUT/u/arch >$OUT/u/arch.out 2>&1
echo "arch.sh rc $? after $(( $(date +%s) - T0 )) s" >>$OUT/u/steps.txt
cat $OUT/u/steps.txt
grep -E '^\| |overall|Budget' $OUT/u/arch/summary.md | cut -c1-160 | grep -v '^| step'
(cd $OUT && tar czf resU.tgz u && rm -rf u)
