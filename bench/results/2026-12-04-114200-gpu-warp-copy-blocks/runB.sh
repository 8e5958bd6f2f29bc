#!/bin/bash
set -u
tar xJf bin/carryB.txz
O=$OUT/r; mkdir -p $O
B="base=bin/var/base.fatbin d4=bin/var/d4.fatbin nb4=bin/var/nb4.fatbin nb2=bin/var/nb2.fatbin nt4=bin/var/nt4.fatbin nt2=bin/var/nt2.fatbin lbbase=bin/var/lbbase.fatbin lbd4=bin/var/lbd4.fatbin lbnb4=bin/var/lbnb4.fatbin lbnb2=bin/var/lbnb2.fatbin"
NPS="2 3 4" bash bench/gpu/ab.sh $O/ab1 $B > $O/ab1.txt 2>&1
B2="nb4=bin/var/nb4.fatbin lbnb2=bin/var/lbnb2.fatbin lbnb4=bin/var/lbnb4.fatbin lbd4=bin/var/lbd4.fatbin lbbase=bin/var/lbbase.fatbin nt2=bin/var/nt2.fatbin nt4=bin/var/nt4.fatbin nb2=bin/var/nb2.fatbin d4=bin/var/d4.fatbin base=bin/var/base.fatbin"
PEER=0 bash bench/gpu/ab.sh $O/ab2 $B2 > $O/ab2.txt 2>&1
cd $OUT && tar czf r.tgz r && rm -rf r
