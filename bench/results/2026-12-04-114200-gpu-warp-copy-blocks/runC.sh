#!/bin/bash
set -u
tar xJf bin/carryC.txz
O=$OUT/r; mkdir -p $O
B="base=bin/var/base.fatbin d4=bin/var/d4.fatbin sgA=bin/var/sgA.fatbin sgB=bin/var/sgB.fatbin sgC=bin/var/sgC.fatbin sgD=bin/var/sgD.fatbin lbbase=bin/var/lbbase.fatbin lbd4=bin/var/lbd4.fatbin lbsgA=bin/var/lbsgA.fatbin lbsgB=bin/var/lbsgB.fatbin"
bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
B2="sgB=bin/var/sgB.fatbin lbsgB=bin/var/lbsgB.fatbin lbsgA=bin/var/lbsgA.fatbin lbd4=bin/var/lbd4.fatbin lbbase=bin/var/lbbase.fatbin sgD=bin/var/sgD.fatbin sgC=bin/var/sgC.fatbin sgA=bin/var/sgA.fatbin d4=bin/var/d4.fatbin base=bin/var/base.fatbin"
PEER=0 bash bench/gpu/ab.sh $O/ab2 $B2 > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
