#!/usr/bin/env python3
"""Tables of this folder's README from the runs' goshmem-perf JSON rows (read inside the run tarballs).

  python3 tools.py sizes  RUN.tgz AB FIRST SERIES... [--fams F,F] [--scope S]   per-size medians (us), NVSHMEM last
  python3 tools.py over   RUN.tgz AB FIRST SERIES...    device rows < 64 KiB over 0.8x NVSHMEM, per series
  python3 tools.py capped RUN.tgz AB FIRST BASE SERIES... mean / worst change against BASE per family (warp rows)
  python3 tools.py mpg    RUN.tgz RUN [DIR]               device rows < 64 KiB over 0.8x NVSHMEM in an mpg.sh run
                                                        (series ign = this build, base = BASE_COLL; DIR: the
                                                        run's mpg.sh output folder, default mpg)
  python3 tools.py scopes RUN.tgz RUN                     mpg.sh run: this build minus BASE_COLL below 64 KiB, per scope
  python3 tools.py onab   RUN.tgz RUN                     on-stream rows, new vs old goshmem-perf (median of the repeats)

AB is ab1, ab2 or ab3 (the tarball's r/AB); FIRST is the series ab.sh ran first (its files carry no
name); a run's series are in its runX.sh.
"""
import json, sys, tarfile

FAMS = ('reduce_sum_float', 'reduce_sum_int64', 'broadcast', 'fcollect', 'alltoall', 'reducescatter_sum_float')


def rows(tgz, name, scope=True):
    """median_us by (name, scope, size), or (name, size) without scope, of one JSON-rows file in tgz."""
    d = {}
    with tarfile.open(tgz) as t:
        try:
            f = t.extractfile(name)
        except KeyError:
            return d
        for line in f.read().decode().splitlines():
            if line.startswith('{'):
                r = json.loads(line)
                d[(r['name'], r['scope'], r['size']) if scope else (r['name'], r['size'])] = r['median_us']
    return d


def load(tgz, ab, first, series, np):
    """series' rows in an ab.sh run (r/AB of the tarball)."""
    return rows(tgz, f'r/{ab}/goshmem_np{np}.jsonl' if series == first else (
        f'r/{ab}/nvshmem_np{np}.jsonl' if series == 'nvshmem' else f'r/{ab}/goshmem_{series}_np{np}.jsonl'))


def sizes(tgz, ab, first, series, fams, scope):
    for np in (2, 4):
        V = {v: load(tgz, ab, first, v, np) for v in series + ['nvshmem']}
        for fam in fams:
            print(f'{np} PEs {fam} {scope}: ' + ' '.join(f'{v:>8s}' for v in V))
            for s in sorted({k[2] for k in V[series[0]] if k[0] == fam and k[1] == scope}):
                print(f'  {s:6d}       ' + ' '.join(f'{V[v].get((fam, scope, s), 0):8.2f}' for v in V))


def over(tgz, ab, first, series):
    for np in (2, 4):
        n = load(tgz, ab, first, 'nvshmem', np)
        for v in series:
            g = load(tgz, ab, first, v, np)
            keys = [k for k in g if k in n and k[0] in FAMS and k[1] in ('thread', 'warp', 'block') and k[2] < 65536]
            bad = sorted(k for k in keys if g[k] / n[k] > 0.8)
            print(f'{np} PEs {v}: {len(bad)} of {len(keys)} over 0.8x; warp: ' +
                  ' '.join(f'{k[0][:5]}{k[2]}:{g[k] / n[k]:.2f}' for k in bad if k[1] == 'warp'))


def capped(tgz, ab, first, base, series):
    for np in (2, 4):
        b = load(tgz, ab, first, base, np)
        V = {v: load(tgz, ab, first, v, np) for v in series}
        for fam in FAMS[2:5]:
            ks = [k for k in b if k[0] == fam and k[1] == 'warp' and k[2] < 65536]
            out = []
            for v in series:
                d = [V[v][k] - b[k] for k in ks]
                sm = [V[v][k] - b[k] for k in ks if k[2] <= 1024]
                lg = [b[k] / V[v][k] for k in ks if k[2] >= 2048]
                out.append(f'{v}: <=1K mean {sum(sm) / len(sm):+.2f} worst {max(sm):+.2f}, >=2K speedup '
                           f'{min(lg):.2f}-{max(lg):.2f}x')
            print(f'{np} PEs {fam}: ' + ' | '.join(out))


def mpg(tgz, run, sub='mpg'):
    for np in (2, 4):
        n = rows(tgz, f'{run}/{sub}/nvshmem_ign_np{np}.jsonl')
        for v in ('ign', 'base'):
            g = rows(tgz, f'{run}/{sub}/goshmem_{v}_np{np}.jsonl')
            keys = [k for k in g if k in n and k[0] in FAMS and k[1] in ('thread', 'warp', 'block') and k[2] < 65536]
            bad = sorted(k for k in keys if g[k] / n[k] > 0.8)
            print(f'{np} PEs goshmem_{v}: {len(bad)} of {len(keys)} over 0.8x: ' +
                  ' '.join(f'{k[0][:5]}/{k[1]}{k[2]}:{g[k] / n[k]:.2f}' for k in bad))


def scopes(tgz, run):
    import statistics
    for np in (2, 4):
        g, b = (rows(tgz, f'{run}/mpg/goshmem_{v}_np{np}.jsonl') for v in ('ign', 'base'))
        for sc in ('thread', 'warp', 'block'):
            ks = [k for k in g if k in b and k[0] in FAMS and k[1] == sc and k[2] < 65536]
            d = {k: g[k] - b[k] for k in ks}
            w = max(d, key=d.get)
            print(f'{np} PEs {sc}: mean {statistics.mean(d.values()):+.3f} us, worst {d[w]:+.2f} ({w[0]} {w[2]} B), '
                  f'best {min(d.values()):+.2f}')


def onab(tgz, run):
    import statistics
    with tarfile.open(tgz) as t:
        names = [m.name for m in t.getmembers() if m.name.endswith('.jsonl')]
    for np in (2, 4):
        V = {}
        for v in ('new', 'old'):
            reps = [rows(tgz, m, False) for m in names if f'/{v}_np{np}_' in m]
            V[v] = {k: statistics.median(r[k] for r in reps if k in r) for k in reps[0]}
        diffs = []
        for fam in sorted({k[0] for k in V['new']}):
            ks = sorted(k for k in V['new'] if k[0] == fam)
            print(f'{np} PEs {fam} (new/old us): ' + ' '.join(f'{k[1]}:{V["new"][k]:.2f}/{V["old"][k]:.2f}' for k in ks))
            diffs += [V['new'][k] - V['old'][k] for k in ks if k[1] <= 2048 and 'on_stream' in fam and 'barrier' not in fam]
        print(f'{np} PEs: mean new - old over the collectives on stream up to 2 KiB: {statistics.mean(diffs):+.3f} us')


if __name__ == '__main__':
    a = sys.argv[1:]
    fams, scope = ['fcollect', 'alltoall', 'broadcast'], 'warp'
    if '--fams' in a:
        i = a.index('--fams'); fams = a[i + 1].split(','); del a[i:i + 2]
    if '--scope' in a:
        i = a.index('--scope'); scope = a[i + 1]; del a[i:i + 2]
    if a[0] == 'sizes':
        sizes(a[1], a[2], a[3], a[4:], fams, scope)
    elif a[0] == 'over':
        over(a[1], a[2], a[3], a[4:])
    elif a[0] == 'capped':
        capped(a[1], a[2], a[3], a[4], a[5:])
    elif a[0] == 'mpg':
        mpg(*a[1:4])
    elif a[0] == 'scopes':
        scopes(a[1], a[2])
    elif a[0] == 'onab':
        onab(a[1], a[2])
