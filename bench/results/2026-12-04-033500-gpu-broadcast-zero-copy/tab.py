import json,sys,os
d=sys.argv[1]; np=sys.argv[2]; names=sys.argv[3:]
scope=os.environ.get('SCOPE','warp'); fams=os.environ.get('FAMS','broadcast,fcollect,alltoall').split(',')
mx=int(os.environ.get('MAX','65536'))
def load(f):
    out={}
    for l in open(f):
        try: r=json.loads(l)
        except: continue
        out[(r['name'],r['scope'],r['size'])]=r['median_us']
    return out
ds=[load(f"{d}/{n}_np{np}.jsonl") for n in names]
keys=[k for k in ds[0] if k[1]==scope and k[0] in fams and k[2]<=mx]
print(f'np{np} {scope}'.ljust(22),' '.join(n.replace('goshmem_','')[-8:].rjust(8) for n in names))
for k in keys:
    print(f"{k[0][:12]} {k[2]:>7}".ljust(22),' '.join(f"{x.get(k,float('nan')):8.2f}" for x in ds))
