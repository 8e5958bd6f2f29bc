import json,sys
d=sys.argv[1]
fams=('reduce_sum_float','reduce_sum_int64','broadcast','fcollect','alltoall','reducescatter_sum_float')
def load(f):
    out={}
    for l in open(f):
        try: r=json.loads(l)
        except: continue
        if r.get('name') in fams and r.get('scope') in ('thread','warp','block'):
            out[(r['name'],r['scope'],r['size'])]=r['median_us']
    return out
for np in (2,4):
    for g in sys.argv[2:]:
        a=load(f"{d}/{g}_np{np}.jsonl"); b=load(f"{d}/nvshmem_ign_np{np}.jsonl")
        keys=[k for k in a if k in b and k[2]<65536]
        bad=[k for k in keys if a[k]/b[k]>0.8]
        print(f"np{np} {g}: {len(bad)} of {len(keys)} rows over 0.8x")
        if g==sys.argv[2]:
            from itertools import groupby
            for (n,s),grp in groupby(sorted(bad),key=lambda k:(k[0],k[1])):
                grp=list(grp); print(f"   {n}/{s}: "+', '.join(f"{k[2]}:{a[k]/b[k]:.2f}" for k in grp))
