#!/usr/bin/env python3
# perround.py DIR NP ROUNDS: per-round time ratios (each round's own OpenSHMEM job) of the rows
# that missed 1.0x at 8 PEs on 2026-12-01.
import json, sys
d, np, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
rows = [('bcast', 1024), ('bcast', 65536), ('reduce_sum_int64', 8), ('reduce_sum_int64', 1024),
        ('reduce_sum_float64', 8), ('alltoall', 8), ('alltoall', 1024), ('alltoall', 65536), ('alltoall', 1048576)]
def get(side, r):
    o = {}
    for l in open(f"{d}/{side}-np{np}-r{r}.jsonl"):
        if l.startswith('{'):
            j = json.loads(l); o[(j['name'], j['size'])] = j['median_us']
    return o
for k in rows:
    a = [get('branch', r)[k] / get('openshmem', r)[k] for r in range(1, n + 1)]
    b = [get('main', r)[k] / get('openshmem', r)[k] for r in range(1, n + 1)]
    print(f"{k[0]} {k[1]}: after/OpenSHMEM by round " + " ".join(f"{x:.2f}" for x in a) +
          " | before/OpenSHMEM " + " ".join(f"{x:.2f}" for x in b))
