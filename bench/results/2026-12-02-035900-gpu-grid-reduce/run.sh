#!/usr/bin/env bash
# grid reductions on the H200: correctness (devtest stream part with a large n) and on-stream rows
cd "$(dirname "$0")/.." && tar xzf bin/carry.tgz
. tests/gpu/mps.sh
mps_start >/dev/null
export CUDA_VISIBLE_DEVICES=0 GOSHMEM_GPU=on
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/machine.txt
M="mpirun --allow-run-as-root --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT"
export GOSHMEM_TIMEOUT=20s
for np in 2 4; do
  echo "=== load/store stream calls, $np PEs, -coll-large 2000001"
  timeout 150 $M -np $np bin/devtest -watchdog 60s -part stream -fatbin bin/gpu/devcoll.fatbin -coll bin/gpu/devcoll.fatbin -coll-large 2000001 > $OUT/ls_stream_np$np.log 2>&1
  grep -E "^devtest: (FAIL|PE 0: FAIL|[0-9]+ passed)" $OUT/ls_stream_np$np.log | cut -c1-400
done
echo "=== proxy stream calls, 2 PEs (one-block path)"
GOSHMEM_GPU_TRANSPORT=proxy timeout 120 $M -np 2 bin/devtest -watchdog 40s -part stream -fatbin bin/gpu/devcoll_remote.fatbin -coll bin/gpu/devcoll_remote.fatbin -coll-large 4099 > $OUT/proxy_stream_np2.log 2>&1
grep -E "^devtest: (FAIL|PE 0: FAIL|[0-9]+ passed)" $OUT/proxy_stream_np2.log | cut -c1-300
echo "=== goshmem-perf onstream, 2 PEs"
timeout 150 $M -np 2 bin/goshmem-perf device -json -module bin/gpu/perf.fatbin -coll-module bin/gpu/perf_coll.fatbin -only '^onstream$' -coll-maxsize 67108864 > $OUT/onstream_np2.jsonl 2> $OUT/onstream_np2.err
tail -3 $OUT/onstream_np2.err
python3 - $OUT/onstream_np2.jsonl <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if l.startswith('{'):
        r=json.loads(l); print(r['name'], r.get('size'), round(r['median_us'],2), r.get('bw_gbs'))
PY
mps_stop >/dev/null
