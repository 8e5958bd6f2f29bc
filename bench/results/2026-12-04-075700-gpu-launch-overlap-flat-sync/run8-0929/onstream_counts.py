import json,sys
def load(f):
    d={}
    for l in open(f):
        if not l.startswith('{'): continue
        r=json.loads(l); d[(r['name'],r['size'])]=r['median_us']
    return d
for sfx in ['']:
  for np in [2,4]:
    g=load(f'goshmem_ign_np{np}{sfx}.jsonl'); p=load(f'goshmem_plain_np{np}{sfx}.jsonl'); n=load(f'nvshmem_ign_np{np}{sfx}.jsonl')
    print(f'np{np}{sfx}')
    for fam in ['barrier_on_stream','sync_on_stream','sum_reduce_on_stream','broadcast_on_stream','fcollect_on_stream','alltoall_on_stream','reducescatter_on_stream']:
        ks=[k for k in g if k[0]==fam and k[1]<65536]
        if not ks: continue
        og=sum(1 for k in ks if k in n and g[k]>0.8*n[k]); op=sum(1 for k in ks if k in n and p.get(k,1e9)>0.8*n[k])
        worst=max((g[k]/n[k],k[1]) for k in ks if k in n) if any(k in n for k in ks) else None
        print(f'  {fam:26s} rows {len(ks):2d} over0.8x: pdl {og:2d} plain {op:2d}  worst pdl {worst}')
