import json,glob,statistics,collections
def load(f):
    d={}
    for l in open(f):
        if not l.startswith('{'): continue
        r=json.loads(l); d[(r['name'],r['size'])]=r['median_us']
    return d
for it in [100,1000]:
  for np in [2,4]:
    print(f'== iters {it} np{np}')
    vals={v:[load(f'{v}_it{it}_np{np}_r{r}.jsonl') for r in (1,2,3)] for v in ['start','end','none','plain']}
    fams=sorted(set(k[0] for k in vals['start'][0]))
    for fam in fams:
        line=f'{fam[:22]:22s}'
        for v in vals:
            xs=[d[k] for d in vals[v] for k in d if k[0]==fam and k[1]<65536]
            if not xs: continue
            # mean and number of spikes (> 1.5x the row's min over reps)
            line+=f' {v}: mean {statistics.mean(xs):5.2f} med {statistics.median(xs):5.2f}'
        print(line)
    # spikes: per key per variant: value > 1.4 * min over all variants' non-plain reps
    sp=collections.Counter()
    for v in vals:
        for d in vals[v]:
            for k in d:
                if k[1]>=65536: continue
                ref=statistics.median([dd[k] for dd in vals[v]])
                if d[k]>1.4*ref: sp[v]+=1
    print('   spikes (>1.4x the median of its 3 reps):',dict(sp))
