#!/bin/bash
# session 2026-12-04 afternoon run A: warp copy depth A/B
set -u
tar xJf bin/carryA.txz
O=$OUT/r; mkdir -p $O
B="base=bin/var/base.fatbin d4=bin/var/d4.fatbin d8=bin/var/d8.fatbin d4zc=bin/var/d4zc.fatbin d8zc=bin/var/d8zc.fatbin lbbase=bin/var/lbbase.fatbin lbd4=bin/var/lbd4.fatbin lbd8=bin/var/lbd8.fatbin"
bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
B2="d4=bin/var/d4.fatbin base=bin/var/base.fatbin lbd4=bin/var/lbd4.fatbin lbbase=bin/var/lbbase.fatbin d8=bin/var/d8.fatbin lbd8=bin/var/lbd8.fatbin d4zc=bin/var/d4zc.fatbin"
PEER=0 bash bench/gpu/ab.sh $O/ab2 $B2 > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
