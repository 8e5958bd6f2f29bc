#!/usr/bin/env bash
# ab.sh OUTDIR NP ROUNDS ROWSREGEX MAXSIZE BIN_LABEL=PATH ...
# alternates the binaries in each round (order rotates), one job per binary per round
set -u
out=$1 np=$2 rounds=$3 rows=$4 maxsize=$5; shift 5
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$out"
bins=("$@")
for r in $(seq 1 "$rounds"); do
  n=${#bins[@]}
  for k in $(seq 0 $((n-1))); do
    b=${bins[$(( (k + r) % n ))]}
    lab=${b%%=*} path=${b#*=}
    echo "r$r $lab load $(cut -d' ' -f1 /proc/loadavg)" >>"$out/log"
    timeout 300 mpirun.openmpi --allow-run-as-root --oversubscribe -np "$np" "$path" host -json -coll -coll-iters ${ITERS:-2000} -barrier-iters ${ITERS:-2000} -warmup 1000 -coll-maxsize "$maxsize" -only "$rows" >>"$out/$lab-np$np-r$r.jsonl" 2>>"$out/$lab.log" || echo "FAIL $lab r$r" >>"$out/log"
  done
done
python3 - "$out" "$np" <<'PY'
import json,glob,sys,statistics,collections,os
out,np=sys.argv[1],sys.argv[2]
d=collections.defaultdict(lambda: collections.defaultdict(list))
labs=[]
for f in sorted(glob.glob(f"{out}/*-np{np}-r*.jsonl")):
    lab=os.path.basename(f).rsplit(f"-np{np}-r",1)[0]
    if lab not in labs: labs.append(lab)
    for l in open(f):
        if not l.startswith('{'): continue
        j=json.loads(l); d[(j['name'],j['size'])][lab].append(j['median_us'])
print("row".ljust(26)+"".join(l.rjust(22) for l in labs))
for k in d:
    print(f"{k[0]} {k[1]}".ljust(26)+"".join((f"{statistics.median(d[k][l]):.1f} ({len(d[k][l])})" if d[k][l] else "-").rjust(22) for l in labs))
PY
