import json,sys
def load(f):
    d={}
    for l in open(f):
        if not l.startswith('{'): continue
        r=json.loads(l); d[(r['name'],r['scope'],r['size'])]=r['median_us']
    return d
for np in [2,3,4]:
    a=load(f'goshmem_np{np}.jsonl'); b=load(f'goshmem_dissem_np{np}.jsonl')
    try: n=load(f'nvshmem_np{np}.jsonl')
    except: n={}
    ks=[k for k in a if k in b and k[2]<65536]
    import statistics
    r=[a[k]/b[k] for k in ks]
    print(f'np{np}: rows {len(ks)} geomean flat/dissem {statistics.geometric_mean(r):.3f}; faster>0.1us {sum(1 for k in ks if a[k]<b[k]-0.1)} slower>0.1us {sum(1 for k in ks if a[k]>b[k]+0.1)}',
      (f'over0.8x flat {sum(1 for k in ks if k in n and a[k]>0.8*n[k])} dissem {sum(1 for k in ks if k in n and b[k]>0.8*n[k])}' if n else ''))
    by={}
    for k in ks:
        by.setdefault((k[0],k[1]),[]).append(a[k]-b[k])
    for f,v in sorted(by.items()): print(f'   {f[0][:22]:22s} {f[1]:6s} mean diff {statistics.mean(v):+.2f} us  min {min(v):+.2f} max {max(v):+.2f}')
