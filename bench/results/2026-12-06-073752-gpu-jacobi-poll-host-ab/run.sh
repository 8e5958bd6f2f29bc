#!/usr/bin/env bash
# device call 2: host A/B (c2a82ce vs ab0d468) and Jacobi polling A/B
set -u
O=$OUT
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; echo "nproc $(nproc)"; nvcc --version | grep release; mpirun --version | head -1; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
A=bin/ab
rows='^(put_lat|p_lat|pingpong_p|pingpong_putsignal|amo_fadd|barrier|lock)$'
args="host -json -iters 50000 -warmup 2000 -maxsize 8"
mpi() { mpirun --oversubscribe --bind-to none "$@"; }
t0=$(date +%s)
for pass in 1 2 3; do
  for who in base new new base; do
    echo "pass $pass $who" >>$O/host.log
    if [ $who = base ]; then
      mpi -np 2 -x LD_LIBRARY_PATH=$PWD/$A/libs $A/base/goshmem-perf $args -only "$rows" >>$O/shm-base.jsonl 2>>$O/host.log
    else
      mpi -np 2 $A/new/goshmem-perf $args -only "$rows" >>$O/shm-new.jsonl 2>>$O/host.log
    fi
  done
  mpi -np 2 $A/new/goshmem-perf $args -ctx -only '^(pingpong_p|pingpong_putsignal|barrier|lock)$' >>$O/shm-newctx.jsonl 2>>$O/host.log
done
echo "host A/B: $(( $(date +%s) - t0 )) s" >>$O/machine.txt
mkdir -p bin/gpu && cp $A/jacobi-gpu bin/jacobi-gpu && cp $A/jacobi.fatbin bin/gpu/jacobi.fatbin && cp bin/abx/jacobi-gpu-new bin/jacobi-gpu-new
export NVSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NCCL=1 NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo
NV=$(python3 -c 'import nvidia.nvshmem, os; print(os.path.dirname(nvidia.nvshmem.__file__))' 2>/dev/null)
# the NVSHMEM peer, as bench/jacobi/run.sh builds it
lib=/tmp/nvshmem_lib; mkdir -p $lib; ln -sf "$NV"/lib/* $lib/
[ -e "$lib/libnvshmem_host.so" ] || ln -sf "$(ls "$NV"/lib/libnvshmem_host.so* | head -1)" "$lib/libnvshmem_host.so"
inc=""; libs=""; for d in $(mpicxx --showme:incdirs); do inc="$inc -I$d"; done; for d in $(mpicxx --showme:libdirs); do libs="$libs -L$d -Xlinker -rpath=$d"; done
t0=$(date +%s)
nvcc -std=c++17 -O3 -rdc=true -gencode arch=compute_90,code=sm_90 -DUSE_REAL_NVSHMEM -I"$NV/include" -Iinclude $inc bench/jacobi/jacobi_nvshmem_host.cu -o bin/jacobi_nvshmem -L"$lib" -Xlinker -rpath="$NV/lib" -lnvshmem_host -lnvshmem_device $libs -lmpi >$O/build_peer.log 2>&1
echo "peer build rc $? $(( $(date +%s) - t0 )) s" >>$O/machine.txt
export LD_LIBRARY_PATH="$NV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CUDA_MPS_PIPE_DIRECTORY=/tmp/mps_pipe CUDA_MPS_LOG_DIRECTORY=/tmp/mps_log
mkdir -p $CUDA_MPS_PIPE_DIRECTORY $CUDA_MPS_LOG_DIRECTORY
nvidia-cuda-mps-control -d
J() { echo "== $*" >>$O/jacobi.log; timeout 60 mpirun --oversubscribe --bind-to none -np 2 "$@" -nx 16384 -ny 16384 -niter 1000 -csv >>$O/jacobi.log 2>&1; echo "rc $?" >>$O/jacobi.log; }
# correctness at a small size with the new polling, every variant
for v in "" -use_block_comm -neighborhood_sync; do
  echo "== small new $v" >>$O/jacobi.log
  timeout 30 mpirun --oversubscribe --bind-to none -np 2 bin/jacobi-gpu-new -nx 512 -ny 512 -niter 500 $v >>$O/jacobi.log 2>&1; echo "rc $?" >>$O/jacobi.log
done
for rep in 1 2; do
  for v in "" -use_block_comm -neighborhood_sync; do
    J bin/jacobi-gpu-new -poll_max 0 $v
    J bin/jacobi-gpu-new $v
    J bin/jacobi-gpu-new -poll_max 50us $v
    J bin/jacobi_nvshmem $v
  done
done
for nc in 1000; do J bin/jacobi-gpu-new -nccheck $nc; J bin/jacobi_nvshmem -nccheck $nc; done
echo quit | nvidia-cuda-mps-control
echo "done $(date -u)" >>$O/machine.txt
