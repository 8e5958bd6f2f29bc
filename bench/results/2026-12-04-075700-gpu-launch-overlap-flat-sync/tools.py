#!/usr/bin/env python3
"""The tables of this folder's README from the runs' goshmem-perf JSON rows.

  python3 tools.py device   RUN/mpg SERIES...  device rows < 64 KiB over 0.8x NVSHMEM (run5, run8)
  python3 tools.py onstream DIR                on-stream rows over 0.8x, overlapped vs plain (run2, run5, run8)
  python3 tools.py ab       DIR                flat vs dissemination sync, per form (run2 ab)
  python3 tools.py trigger  DIR                trigger placement means and slow batches (run3)
"""
import json, os, statistics, sys
from itertools import groupby


def load(f, scope=False):
    """median_us by (name, size), or (name, scope, size) with scope."""
    d = {}
    for line in open(f):
        if not line.startswith('{'):
            continue
        r = json.loads(line)
        d[(r['name'], r['scope'], r['size']) if scope else (r['name'], r['size'])] = r['median_us']
    return d


def device(d, series):
    fams = ('reduce_sum_float', 'reduce_sum_int64', 'broadcast', 'fcollect', 'alltoall', 'reducescatter_sum_float')
    for np in (2, 4):
        b = {k: v for k, v in load(f"{d}/nvshmem_ign_np{np}.jsonl", True).items() if k[0] in fams}
        for g in series:
            a = {k: v for k, v in load(f"{d}/{g}_np{np}.jsonl", True).items()
                 if k[0] in fams and k[1] in ('thread', 'warp', 'block')}
            keys = [k for k in a if k in b and k[2] < 65536]
            bad = [k for k in keys if a[k] / b[k] > 0.8]
            print(f"np{np} {g}: {len(bad)} of {len(keys)} rows over 0.8x")
            if g == series[0]:
                for (n, s), grp in groupby(sorted(bad), key=lambda k: (k[0], k[1])):
                    print(f"   {n}/{s}: " + ', '.join(f"{k[2]}:{a[k] / b[k]:.2f}" for k in grp))


def onstream(d):
    for sfx in ('', '_2'):
        for np in (2, 4):
            if not os.path.exists(f'{d}/goshmem_ign_np{np}{sfx}.jsonl'):
                continue
            g, p, n = (load(f'{d}/{s}_np{np}{sfx}.jsonl') for s in ('goshmem_ign', 'goshmem_plain', 'nvshmem_ign'))
            print(f'np{np}{sfx}')
            for fam in ('barrier_on_stream', 'sync_on_stream', 'sum_reduce_on_stream', 'broadcast_on_stream',
                        'fcollect_on_stream', 'alltoall_on_stream', 'reducescatter_on_stream'):
                ks = [k for k in g if k[0] == fam and k[1] < 65536]
                if not ks:
                    continue
                og = sum(1 for k in ks if k in n and g[k] > 0.8 * n[k])
                op = sum(1 for k in ks if k in n and p.get(k, 1e9) > 0.8 * n[k])
                worst = max((g[k] / n[k], k[1]) for k in ks if k in n) if any(k in n for k in ks) else None
                print(f'  {fam:26s} rows {len(ks):2d} over0.8x: pdl {og:2d} plain {op:2d}  worst pdl {worst}')


def ab(d):
    for np in (2, 3, 4):
        a, b = load(f'{d}/goshmem_np{np}.jsonl', True), load(f'{d}/goshmem_dissem_np{np}.jsonl', True)
        try:
            n = load(f'{d}/nvshmem_np{np}.jsonl', True)
        except OSError:
            n = {}
        ks = [k for k in a if k in b and k[2] < 65536]
        r = [a[k] / b[k] for k in ks]
        print(f'np{np}: rows {len(ks)} geomean flat/dissem {statistics.geometric_mean(r):.3f}; '
              f'faster>0.1us {sum(1 for k in ks if a[k] < b[k] - 0.1)} slower>0.1us {sum(1 for k in ks if a[k] > b[k] + 0.1)}',
              (f'over0.8x flat {sum(1 for k in ks if k in n and a[k] > 0.8 * n[k])} '
               f'dissem {sum(1 for k in ks if k in n and b[k] > 0.8 * n[k])}' if n else ''))
        by = {}
        for k in ks:
            by.setdefault((k[0], k[1]), []).append(a[k] - b[k])
        for f, v in sorted(by.items()):
            print(f'   {f[0][:22]:22s} {f[1]:6s} mean diff {statistics.mean(v):+.2f} us  min {min(v):+.2f} max {max(v):+.2f}')


def trigger(d):
    for it in (100, 1000):
        for np in (2, 4):
            print(f'== iters {it} np{np}')
            vals = {v: [load(f'{d}/{v}_it{it}_np{np}_r{r}.jsonl') for r in (1, 2, 3)] for v in ('start', 'end', 'none', 'plain')}
            for fam in sorted(set(k[0] for k in vals['start'][0])):
                line = f'{fam[:22]:22s}'
                for v in vals:
                    xs = [x[k] for x in vals[v] for k in x if k[0] == fam and k[1] < 65536]
                    if xs:
                        line += f' {v}: mean {statistics.mean(xs):5.2f} med {statistics.median(xs):5.2f}'
                print(line)
            slow = {}
            for v in vals:
                for x in vals[v]:
                    for k in x:
                        if k[1] < 65536 and x[k] > 1.4 * statistics.median([y[k] for y in vals[v]]):
                            slow[v] = slow.get(v, 0) + 1
            print('   spikes (>1.4x the median of its 3 reps):', slow)


if __name__ == '__main__':
    {'device': lambda: device(sys.argv[2], sys.argv[3:]), 'onstream': lambda: onstream(sys.argv[2]),
     'ab': lambda: ab(sys.argv[2]), 'trigger': lambda: trigger(sys.argv[2])}[sys.argv[1]]()
