#!/usr/bin/env bash
cd "$(dirname "$0")/.." && tar xzf bin/carry.tgz
. tests/gpu/mps.sh
mps_start >/dev/null
export CUDA_VISIBLE_DEVICES=0 GOSHMEM_GPU=on
unset CUDA_MODULE_LOADING
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/machine.txt
M="mpirun --allow-run-as-root --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -x GOSHMEM_INFO"
F="-fatbin bin/gpu/devcoll_remote.fatbin -coll bin/gpu/devcoll_remote.fatbin -coll-large 4099 -watchdog 30s"
for np in 2 4; do
  echo "=== proxy stream calls, $np PEs (CUDA_MODULE_LOADING unset)"
  GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=10s GOSHMEM_INFO=$([ $np = 2 ] && echo 1 || echo 0) timeout 150 $M -np $np bin/devtest -part stream $F > $OUT/proxy_stream_np$np.log 2>&1
  grep -E "CUDA_MODULE_LOADING|^devtest: (FAIL|PE 0: FAIL|[0-9]+ passed)" $OUT/proxy_stream_np$np.log | cut -c1-400
done
echo "=== proxy device collectives, 2 PEs"
GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=20s timeout 100 $M -np 2 bin/devtest -part devcoll $F > $OUT/proxy_devcoll_np2.log 2>&1
grep -E "^devtest: (FAIL|PE 0: FAIL|[0-9]+ passed)" $OUT/proxy_devcoll_np2.log | cut -c1-300
echo "=== load/store stream calls, 2 PEs"
timeout 100 $M -np 2 bin/devtest -part stream -fatbin bin/gpu/devcoll.fatbin -coll bin/gpu/devcoll.fatbin > $OUT/ls_stream_np2.log 2>&1
grep -E "^devtest: (FAIL|PE 0: FAIL|[0-9]+ passed)" $OUT/ls_stream_np2.log | cut -c1-300
mps_stop >/dev/null
