#!/bin/bash
# one thread's small blocks in lockstep (t4/t2) against the landed build, unbounded and at __launch_bounds__(1024)
set -u
tar xJf bin/carryG.txz
O=$OUT/r; mkdir -p $O
B="land=bin/var/land.fatbin t4=bin/var/t4.fatbin t2=bin/var/t2.fatbin lbtland=bin/var/lbtland.fatbin lbt4=bin/var/lbt4.fatbin lbt2=bin/var/lbt2.fatbin"
PEER=0 NPS="2 3 4" bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
B2="t4=bin/var/t4.fatbin lbt2=bin/var/lbt2.fatbin lbt4=bin/var/lbt4.fatbin lbtland=bin/var/lbtland.fatbin t2=bin/var/t2.fatbin land=bin/var/land.fatbin"
PEER=0 bash bench/gpu/ab.sh $O/ab2 $B2 > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
