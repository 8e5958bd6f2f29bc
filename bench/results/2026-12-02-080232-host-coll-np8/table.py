#!/usr/bin/env python3
# table.py DIR NP: before/after/OpenSHMEM table (Markdown) from DIR/{main,branch,openshmem}-npNP.jsonl
import json, sys
d, np = sys.argv[1], sys.argv[2]
def load(side):
    out = {}
    try:
        for l in open(f"{d}/{side}-np{np}.jsonl"):
            if l.startswith('{'):
                j = json.loads(l); out[(j['name'], j['size'])] = j['median_us']
    except FileNotFoundError:
        pass
    return out
m, b, o = load('main'), load('branch'), load('openshmem')
def sz(s):
    return f"{s>>20}M" if s >= 1<<20 and s % (1<<20) == 0 else f"{s>>10}K" if s >= 1024 and s % 1024 == 0 else str(s)
def us(v): return "-" if v is None else (f"{v:.1f}" if v < 1000 else f"{v:.0f}")
def r(a, c): return "-" if a is None or c is None else f"{a/c:.2f}x"
print(f"| row | size | before (main) us | after (h-coll8) us | OpenSHMEM us | before ÷ OpenSHMEM | after ÷ OpenSHMEM | after ÷ before |")
print("|---|---|---|---|---|---|---|---|")
for k in m:
    a, c, p = m.get(k), b.get(k), o.get(k)
    flag = " **>1**" if (c is not None and p is not None and c > p) else ""
    print(f"| {k[0]} | {sz(k[1])} | {us(a)} | {us(c)} | {us(p)} | {r(a,p)} | {r(c,p)}{flag} | {r(c,a)} |")
