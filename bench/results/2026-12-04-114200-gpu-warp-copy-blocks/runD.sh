#!/bin/bash
set -u
tar xJf bin/carryD.txz
O=$OUT/r; mkdir -p $O
B="base=bin/var/base.fatbin d4=bin/var/d4.fatbin fin4=bin/var/fin4.fatbin fin4b=bin/var/fin4b.fatbin fin4c=bin/var/fin4c.fatbin zc2=bin/var/zc2.fatbin x1=bin/var/x1.fatbin lbbase=bin/var/lbbase.fatbin lbd4=bin/var/lbd4.fatbin lbfin4=bin/var/lbfin4.fatbin lbfin4b=bin/var/lbfin4b.fatbin lbx1=bin/var/lbx1.fatbin"
bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
B2="fin4=bin/var/fin4.fatbin lbx1=bin/var/lbx1.fatbin lbfin4b=bin/var/lbfin4b.fatbin lbfin4=bin/var/lbfin4.fatbin lbd4=bin/var/lbd4.fatbin lbbase=bin/var/lbbase.fatbin x1=bin/var/x1.fatbin zc2=bin/var/zc2.fatbin fin4c=bin/var/fin4c.fatbin fin4b=bin/var/fin4b.fatbin d4=bin/var/d4.fatbin base=bin/var/base.fatbin"
PEER=0 bash bench/gpu/ab.sh $O/ab2 $B2 > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
