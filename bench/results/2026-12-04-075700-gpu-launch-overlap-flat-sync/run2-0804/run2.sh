#!/usr/bin/env bash
O=$1; mkdir -p $O
ONSTREAM_ONLY=1 REPEAT=2 bash bench/gpu/mpg.sh $O/onstream > $O/onstream.txt 2>&1
NPS="2 3 4" bash bench/gpu/ab.sh $O/ab flat=bin/var2/flat.fatbin dissem=bin/var2/dissem.fatbin > $O/ab.txt 2>&1
tar czf $O.tgz -C $(dirname $O) $(basename $O) && rm -rf $O
