#!/usr/bin/env bash
# device call B (tree 3c43a15): kernel library with nvcc 13, VMM probe, alloc/register rows,
# host A/B vs c2a82ce, team-table timing, p2p + heap-grow suites with nvcc-13 kernels
set -u
O=$OUT/b; mkdir -p $O; S=bin/s44; G=bin/gpu-local
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "nproc $(nproc)"; nvcc --version | grep release; mpirun --version | head -1; echo "tree 3c43a15"; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in devtest goshmem-perf vmmprobe; do xz -dc $S/$b.xz >bin/$b; chmod +x bin/$b; done
tar -C $S -xJf $S/ab.tar.xz
step() { echo "$(el) s: $*" >>$O/steps.txt; }
# background builds
( t=$(date +%s); cd gpulib && nice -n 5 nvcc -std=c++17 -I../include -I../internal/gpulib --threads 0 \
  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100 \
  -gencode arch=compute_100,code=compute_100 -Xfatbin -compress-all -fatbin lib.cu -o /tmp/lib.fatbin >$O/gpulib.log 2>&1
  echo "gpulib rc $? $(( $(date +%s) - t )) s" >>$O/steps.txt ) &
gl=$!
mkdir -p $G
( t=$(date +%s); nice -n 5 make --no-print-directory -j4 G=$G $G/devtest.fatbin $G/compat.fatbin $G/perf_remote.fatbin >$O/p2pbuild.log 2>&1
  echo "p2p kernels rc $? $(( $(date +%s) - t )) s" >>$O/steps.txt ) &
pb=$!
( cd bin/teams-gpu && W=/tmp/w && mkdir -p $W && nvcc -std=c++17 -Isrc/include -arch=sm_90 -fatbin bench.cu -o $W/new.fatbin && gcc -O2 -Isrc/include bench_host.c -o $W/new_host -ldl ) >$O/teamsbuild.log 2>&1 &
tb=$!
# host A/B (no MPS; GOSHMEM_GPU default, as a program on a GPU machine runs)
rows='^(put_lat|p_lat|pingpong_p|pingpong_putsignal|amo_fadd|barrier|lock)$'
args="host -json -iters 50000 -warmup 2000 -maxsize 8"
for pass in 1 2; do
  for who in base new new base; do
    if [ $who = base ]; then
      timeout 60 mpirun --oversubscribe --bind-to none -np 2 -x LD_LIBRARY_PATH=$PWD/$S/ab/libs $S/ab/base/goshmem-perf $args -only "$rows" >>$O/shm-base.jsonl 2>>$O/host.log
    else
      timeout 60 mpirun --oversubscribe --bind-to none -np 2 bin/goshmem-perf $args -only "$rows" >>$O/shm-new.jsonl 2>>$O/host.log
    fi
  done
  timeout 60 mpirun --oversubscribe --bind-to none -np 2 bin/goshmem-perf $args -ctx -only '^(pingpong_p|pingpong_putsignal|barrier|lock)$' >>$O/shm-newctx.jsonl 2>>$O/host.log
done
step "host A/B done"
timeout 60 bin/vmmprobe >$O/vmmprobe.txt 2>&1; step "vmmprobe rc $?"
wait $tb; timeout 60 /tmp/w/new_host /tmp/w/new.fatbin new >$O/teams.txt 2>&1; step "teams rc $?"
. tests/gpu/mps.sh; mps_start >>$O/machine.txt 2>&1
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES"
timeout 60 bin/vmmprobe >$O/vmmprobe-mps.txt 2>&1; step "vmmprobe under MPS rc $?"
for np in 2 4; do
  env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 130 $M -x GOSHMEM_DEVICE_HEAP_SIZE -np $np bin/goshmem-perf device -json -module $S/perf.fatbin -only '^(alloc|register)$' -bw-maxsize 67108864 >$O/mem-np$np.jsonl 2>$O/mem-np$np.log
  step "mem rows np$np rc $?"
done
wait $pb
DT="bin/devtest -fatbin $G/devtest.fatbin -compat $G/compat.fatbin -watchdog 30s"
st() { local name=$1; shift; local t0=$(date +%s); timeout 100 "$@" >$O/$name.log 2>&1; local rc=$?; step "$name: rc $rc $(( $(date +%s) - t0 )) s: $(grep -E 'passed|PASS|FAIL' $O/$name.log | tail -1)"; }
for np in 8 4 2; do
  st p2p-np$np $M -np $np $DT -part p2p -rounds 200
  st grow-np$np env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=4G GOSHMEM_INFO=1 $M -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_INFO -np $np $DT -part p2p -heap-grow -rounds 200
done
if [ $(el) -lt 470 ] && [ -s $G/perf_remote.fatbin ]; then
  env GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 80 $M -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_DEVICE_HEAP_SIZE -np 2 bin/goshmem-perf device -json -module $G/perf_remote.fatbin -only '^register$' -bw-maxsize 67108864 >$O/reg-proxy-np2.jsonl 2>$O/reg-proxy-np2.log
  step "proxy register rows rc $?"
fi
mps_stop >>$O/machine.txt 2>&1
while kill -0 $gl 2>/dev/null && [ $(el) -lt 565 ]; do sleep 2; done
kill -0 $gl 2>/dev/null && step "gpulib still building: not kept"
[ -s /tmp/lib.fatbin ] && ! kill -0 $gl 2>/dev/null && cp /tmp/lib.fatbin $OUT/lib.fatbin && cuobjdump -lelf -lptx /tmp/lib.fatbin >$O/lib-contents.txt 2>&1
step end
cat $O/steps.txt
(cd $OUT && tar czf resB.tgz b && rm -rf b)
