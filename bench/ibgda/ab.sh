#!/usr/bin/env bash
# bench/ibgda/ab.sh OUTDIR DIR_A DIR_B [ROUNDS]: the ibgda_rate rows of
# `goshmem-perf ibgda` with the fatbins of DIR_A and DIR_B, alternating
# ROUNDS times (A/B of a header change on the same GPU, same minute).
set -u
out=${1:?OUTDIR}; a=${2:?DIR_A}; b=${3:?DIR_B}; rounds=${4:-3}
mkdir -p "$out"
for r in $(seq 1 "$rounds"); do
    for d in "$a" "$b"; do
        l=$(basename "$d")-$r
        timeout 60 bin/goshmem-perf ibgda -fatbins "$d" -only '^ibgda_rate$' -reps 5 >"$out/$l.txt" 2>&1
        echo "$l rc=$?"
        grep -E "64 QPs|64x64|qps=64|64 CTAs" "$out/$l.txt" | head -4
    done
done
