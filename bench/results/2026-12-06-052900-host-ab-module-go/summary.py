import json, sys, os, statistics, re, collections
out = sys.argv[1]
def load(name):
    d = collections.defaultdict(list)
    p = os.path.join(out, name)
    if not os.path.exists(p): return d
    for l in open(p):
        if not l.startswith("{"): continue
        j = json.loads(l)
        key = (j.get("bench") or j.get("name") or j.get("row"), j.get("size", 0))
        v = next((j[f] for f in ("median_us", "p50_us", "lat_us", "us") if f in j), None)
        if v is not None: d[key].append(v)
    return d
def table(title, a, b, an, bn):
    rows = [f"### {title}", "", f"| row | size | {an} median us | {bn} median us | {bn} / {an} |", "|---|---|---|---|---|"]
    for k in sorted(set(a) & set(b), key=lambda k: (str(k[0]), k[1])):
        x, y = statistics.median(a[k]), statistics.median(b[k])
        rows.append(f"| {k[0]} | {k[1]} | {x:.3f} | {y:.3f} | {y/x:.2f} |")
    return rows + [""]
r = []
r += table("shm, 2 PEs (4 runs each, B N N B x2)", load("shm-base.jsonl"), load("shm-new.jsonl"), "before", "after")
r += table("ofi (tcp;ofi_rxm), 2 PEs", load("ofi-base.jsonl"), load("ofi-new.jsonl"), "before", "after")
r += table("wait rows with and without a context, after, same passes", load("shm-newplain.jsonl"), load("shm-newctx.jsonl"), "plain", "Context")
init = collections.defaultdict(list)
p = os.path.join(out, "initfin.txt")
if os.path.exists(p):
    for l in open(p):
        m = re.match(r"(\w+) run \d+: initfin: np \d+: Init (\S+),", l)
        if m:
            s = m.group(2); v = float(re.match(r"[\d.]+", s).group(0)); u = s[len(re.match(r"[\d.]+", s).group(0)):]
            init[m.group(1)].append(v * {"µs": 1e-3, "us": 1e-3, "ms": 1, "s": 1e3}[u])
    if init:
        r += ["### Init of 8 PEs under mpirun (PE 0, ms)", "", "| build | runs | median | min | max |", "|---|---|---|---|---|"]
        for k in ("base", "new"):
            v = init[k]
            if v: r.append(f"| {'before' if k=='base' else 'after'} | {len(v)} | {statistics.median(v):.1f} | {min(v):.1f} | {max(v):.1f} |")
open(os.path.join(out, "summary.md"), "w").write("\n".join(r) + "\n")
print("\n".join(r))
