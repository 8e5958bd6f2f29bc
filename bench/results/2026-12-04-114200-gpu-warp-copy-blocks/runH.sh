#!/bin/bash
# warp copies: the fewer-rounds path choice (v1), and v1 + warp broadcast LL only up to 256 B (v2), against the landed build
set -u
tar xJf bin/carryH.txz
O=$OUT/r; mkdir -p $O
B="land=bin/var/land.fatbin v1=bin/var/v1.fatbin v2=bin/var/v2.fatbin lbland=bin/var/lbfin4b.fatbin lbv2=bin/var/lbv2.fatbin"
PEER=0 NPS="2 3 4" bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
B2="v2=bin/var/v2.fatbin lbv2=bin/var/lbv2.fatbin lbland=bin/var/lbfin4b.fatbin v1=bin/var/v1.fatbin land=bin/var/land.fatbin"
PEER=0 bash bench/gpu/ab.sh $O/ab2 $B2 > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
