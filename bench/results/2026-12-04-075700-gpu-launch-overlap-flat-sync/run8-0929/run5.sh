#!/usr/bin/env bash
O=$1; mkdir -p $O
t0=$(date +%s)
timeout -k 10 ${MPG_LIMIT:-500} bash bench/gpu/mpg.sh $O/mpg > $O/mpg.txt 2>&1
echo "mpg rc $? in $(( $(date +%s) - t0 )) s"; grep -h "on stream" $O/mpg/ratios_ign_np4.txt | head -6
tar czf $O-mpg.tgz -C $O mpg mpg.txt
