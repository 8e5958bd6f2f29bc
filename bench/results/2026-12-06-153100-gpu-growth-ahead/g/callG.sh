#!/usr/bin/env bash
# device call G (tree b02883e: the growth prepared ahead): kernels built by nvcc 11.8 (k118.tar.xz).
# 1. suites at 8, 4, 2 PEs on one GPU under MPS: point to point, point to point on a growing heap
#    (CHUNK=2M; once at 4 PEs with the default 512M step), device collectives, stream calls,
#    stream calls on a growing heap at 8 PEs;
# 2. alloc rows, one size per job, 2 and 4 PEs, back to back and with -alloc-settle 5ms;
# 3. registered-source PutOnStream over the proxy, 3 runs;
# 4. RMA / collective rows on the growing heap vs GOSHMEM_DEVICE_HEAP_MAX=fixed, alternating.
set -u
O=$OUT/g; mkdir -p $O; S=bin/g; G=bin/g/k
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
step() { echo "$(el) s: $*" >>$O/steps.txt; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "nproc $(nproc)"; mpirun --version | head -1; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in devtest goshmem-perf; do xz -dc $S/$b.xz >bin/$b; chmod +x bin/$b; done
mkdir -p $G && xz -dc $S/k118.tar.xz | tar -C $G -xf -
. tests/gpu/mps.sh; mps_start >>$O/machine.txt 2>&1
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES"
GROW="env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=8G GOSHMEM_DEVICE_HEAP_CHUNK=2M GOSHMEM_INFO=1"
GX="-x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_DEVICE_HEAP_CHUNK -x GOSHMEM_INFO"
DT="bin/devtest -watchdog 30s -fatbin $G/devtest.fatbin -compat $G/compat.fatbin -coll $G/devcoll.fatbin"
st() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); timeout $lim "$@" >$O/$name.log 2>&1; local rc=$?
  step "$name: rc $rc $(( $(date +%s) - t0 )) s: $(grep -E 'passed|PASS|FAIL' $O/$name.log | tail -1) [$(grep -c 'not prepared ahead' $O/$name.log) fallback warnings]"; }
# 1. suites
for np in 8 4 2; do
  st p2p-np$np 60 $M -np $np $DT -part p2p -rounds 200
  st grow-np$np 60 $GROW $M $GX -np $np $DT -part p2p -heap-grow -rounds 200
done
st grow-np4-chunk512M 60 env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=8G GOSHMEM_INFO=1 $M -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_INFO -np 4 $DT -part p2p -heap-grow -rounds 200
for np in 8 4 2; do
  st devcoll-np$np 90 $M -np $np $DT -part devcoll -coll-large 40001
  st stream-np$np 90 $M -np $np $DT -part stream -coll-large 300001
done
st grow-stream-np8 90 $GROW $M $GX -np 8 $DT -part stream -heap-grow -coll-large 300001
# 2. alloc rows
for np in 2 4; do
  for size in 2097152 8388608 33554432 134217728 268435456 536870912 1073741824; do
    for who in new settle; do
      X=""; [ $who = settle ] && X="-alloc-settle 5ms"
      env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 60 $M -x GOSHMEM_DEVICE_HEAP_SIZE -np $np bin/goshmem-perf device -json -module $G/perf.fatbin -only '^alloc$' \
        -alloc-minsize $size -alloc-maxsize $size $X >>$O/alloc-$who-np$np.jsonl 2>>$O/alloc-$who-np$np.log
      step "alloc $who np$np $size rc $?"
    done
  done
done
# 3. registered source over the proxy, 3 runs
for run in 1 2 3; do
  [ $(el) -lt 480 ] || { step "proxy register run $run skipped (time)"; continue; }
  env GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 45 $M -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_DEVICE_HEAP_SIZE -np 2 bin/goshmem-perf device -json -module $G/perf_remote.fatbin -only '^register$' -reg-maxsize 67108864 >>$O/reg-proxy-np2.jsonl 2>>$O/reg-proxy-np2.log
  step "proxy register run $run rc $?"
done
# 4. RMA and on-stream collective rows: growing heap vs fixed, alternating
R='^(put_lat|get_lat|p_lat|pingpong_p|barrier|put_bw|barrier_on_stream|sum_reduce_on_stream|broadcast_on_stream|fcollect_on_stream|alltoall_on_stream)$'
for pass in 1 2; do
  for mode in grow fixed; do
    [ $(el) -lt 500 ] || { step "rows $mode pass $pass skipped (time)"; continue; }
    HM=auto; [ $mode = fixed ] && HM=fixed
    env GOSHMEM_DEVICE_HEAP_MAX=$HM GOSHMEM_INFO=1 timeout 45 $M -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_INFO -np 2 bin/goshmem-perf device -json -module $G/perf.fatbin -coll-module "" \
      -only "$R" -iters 2000 -maxsize 65536 -maxsize-thread 4096 -bw-maxsize 16777216 -bw-bytes 1073741824 -coll-maxsize 1048576 -coll-iters 50 -launches 1000 -stream-iters 200 \
      >>$O/rows-$mode.jsonl 2>$O/rows-$mode-$pass.log
    step "rows $mode pass $pass rc $?"
  done
done
mps_stop >>$O/machine.txt 2>&1
step end
cat $O/steps.txt
(cd $OUT && tar czf resG.tgz g && rm -rf g)
