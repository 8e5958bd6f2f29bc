#!/usr/bin/env bash
# device call 3 (tree 5fe5991): host A/B, Jacobi vs NVSHMEM, RegisterDevice
# and heap growth tests and rows (kernels: nvcc 11.8, sm_90)
set -u
O=$OUT; C=bin/c3
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "nproc $(nproc)"; nvcc --version | grep release; mpirun --version | head -1; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
tar -C $C -xJf $C/ab.tar.xz   # bin/c3/ab/{base,libs}
rows='^(put_lat|p_lat|pingpong_p|pingpong_putsignal|amo_fadd|barrier|lock)$'
args="host -json -iters 50000 -warmup 2000 -maxsize 8"
mpi() { mpirun --oversubscribe --bind-to none "$@"; }
t0=$(date +%s)
for pass in 1 2 3; do
  for who in base new new base; do
    echo "pass $pass $who" >>$O/host.log
    if [ $who = base ]; then
      mpi -np 2 -x LD_LIBRARY_PATH=$PWD/$C/ab/libs $C/ab/base/goshmem-perf $args -only "$rows" >>$O/shm-base.jsonl 2>>$O/host.log
    else
      mpi -np 2 $C/goshmem-perf $args -only "$rows" >>$O/shm-new.jsonl 2>>$O/host.log
    fi
  done
  mpi -np 2 $C/goshmem-perf $args -ctx -only '^(pingpong_p|pingpong_putsignal|barrier|lock)$' >>$O/shm-newctx.jsonl 2>>$O/host.log
done
echo "host A/B: $(( $(date +%s) - t0 )) s" >>$O/machine.txt
# Jacobi (bench/jacobi/run.sh, 2 reps)
mkdir -p bin/gpu && cp $C/jacobi-gpu bin/jacobi-gpu && cp $C/gpu/jacobi.fatbin bin/gpu/jacobi.fatbin
t0=$(date +%s)
SIZES=16384 REPS=2 timeout 240 bash bench/jacobi/run.sh $O/jacobi >/dev/null 2>&1
echo "jacobi: rc $? $(( $(date +%s) - t0 )) s" >>$O/machine.txt
rm -f $O/jacobi/build_peer.log.gz; gzip -f $O/jacobi/jacobi.log
# the NVSHMEM peer with -nccheck 1000 too
export NVSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NCCL=1 NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo
NV=$(python3 -c 'import nvidia.nvshmem, os; print(os.path.dirname(nvidia.nvshmem.__file__))' 2>/dev/null)
NV=${NV:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem}
. tests/gpu/mps.sh
mps_start >>$O/machine.txt 2>&1
for p in bin/jacobi-gpu bin/jacobi_nvshmem; do
  echo "== $p -nccheck 1000" >>$O/jacobi-nc1000.log
  LD_LIBRARY_PATH=$NV/lib timeout 60 mpirun --oversubscribe --bind-to none -x LD_LIBRARY_PATH -np 2 $p -nx 16384 -ny 16384 -niter 1000 -nccheck 1000 -csv >>$O/jacobi-nc1000.log 2>&1
done
# RegisterDevice and heap growth (devtest p2p with the new tests) and rows
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES"
G=$C/gpu
DT="$C/devtest -fatbin $G/devtest.fatbin -compat $G/compat.fatbin -watchdog 30s"
st() { local name=$1; shift; local t0=$(date +%s); timeout 120 "$@" >$O/$name.log 2>&1; local rc=$?; echo "$name: rc $rc $(( $(date +%s) - t0 )) s: $(grep -E 'passed|PASS|FAIL' $O/$name.log | tail -2 | tr '\n' ' ')" >>$O/steps.txt; }
for np in 2 4 8; do
  st p2p-np$np $M -np $np $DT -part p2p -rounds 200
  st grow-np$np env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=4G GOSHMEM_INFO=1 $M -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_INFO -np $np $DT -part p2p -heap-grow -rounds 200
done
st proxy-np2 env GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_TIMEOUT=20s $M -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_TIMEOUT -np 2 $C/devtest -fatbin $G/devtest_remote.fatbin -compat $G/compat_remote.fatbin -watchdog 30s -part p2p -rounds 100
for np in 2 4; do
  t0=$(date +%s)
  env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 150 $M -x GOSHMEM_DEVICE_HEAP_SIZE -np $np $C/goshmem-perf device -json -module $G/perf.fatbin -only '^(alloc|register)$' -bw-maxsize 67108864 >$O/mem-np$np.jsonl 2>$O/mem-np$np.log
  echo "mem rows np$np: rc $? $(( $(date +%s) - t0 )) s" >>$O/steps.txt
done
mps_stop >>$O/machine.txt 2>&1
echo "done $(date -u)" >>$O/machine.txt
