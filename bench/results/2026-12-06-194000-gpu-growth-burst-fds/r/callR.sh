#!/usr/bin/env bash
# device call R: the final build ("new": burst-doubled preparation, descriptor table grown at Init) against
# 13cdd56 ("old"; both with the alloc rows' new sample budget), 2 and 4 PEs on one GPU under MPS;
# NVSHMEM's growing nvshmem_malloc in the same call; the point-to-point growth suites with the new devtest
# (the stream suite needs the devcoll kernels, not in this carry). Kernels by
# nvcc 11.8 (k118.tar.xz: perf, devtest, compat), library from the tree.
set -u
O=$OUT/r; mkdir -p $O; S=bin/o; G=bin/o/k
T0=$(date +%s)
el() { echo $(( $(date +%s) - T0 )); }
step() { echo "$(el) s: $*" >>$O/steps.txt; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | grep release; } >$O/machine.txt 2>&1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
for b in perf-b perf-old devtest-b; do xz -dc $S/$b.xz >bin/$b; chmod +x bin/$b; done
mkdir -p $G && xz -dc $S/k118.tar.xz | tar -C $G -xf -
NV=$(python3 -c 'import nvidia.nvshmem, os; print(os.path.dirname(nvidia.nvshmem.__file__))' 2>/dev/null)
NV=${NV:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem}
lib=/tmp/nvshmem_lib; mkdir -p $lib; ln -sf "$NV"/lib/* $lib/
[ -e $lib/libnvshmem_host.so ] || ln -sf "$(ls "$NV"/lib/libnvshmem_host.so* | head -1)" $lib/libnvshmem_host.so
inc=""; libs=""
for d in $(mpicxx --showme:incdirs); do inc="$inc -I$d"; done
for d in $(mpicxx --showme:libdirs); do libs="$libs -L$d -Xlinker -rpath=$d"; done
nvcc -std=c++17 -O2 -rdc=true -gencode arch=compute_90,code=sm_90 -I"$NV/include" $inc bench/alloc/nvshmem_alloc.cu -o bin/nvshmem_alloc \
  -L$lib -Xlinker -rpath="$NV/lib" -lnvshmem_host -lnvshmem_device $libs -lmpi >$O/build.log 2>&1
step "build rc $?"
export LD_LIBRARY_PATH="$NV/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export NVSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NCCL=1 NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo
export NVSHMEM_SYMMETRIC_SIZE=268435456
. tests/gpu/mps.sh; mps_start >>$O/machine.txt 2>&1
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0 GOSHMEM_GPU_LIB=gpulib/lib.fatbin GOSHMEM_AHEAD_TRACE= GOSHMEM_AHEAD_NOZERO=
M="mpirun --bind-to none --oversubscribe -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x GOSHMEM_GPU_LIB -x GOSHMEM_AHEAD_TRACE -x GOSHMEM_AHEAD_NOZERO"
MN="mpirun --bind-to none --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x CUDA_VISIBLE_DEVICES -x LD_LIBRARY_PATH -x NVSHMEM_DISABLE_NVLS -x NVSHMEM_DISABLE_NCCL -x NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE -x NVSHMEM_REMOTE_TRANSPORT -x NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME -x NVSHMEM_SYMMETRIC_SIZE"
alloc() { # binary np size outfile [extra perf flags]
  local who=$1 np=$2 size=$3 out=$4; shift 4
  env GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 60 $M -x GOSHMEM_DEVICE_HEAP_SIZE -np $np bin/$who device -json -module $G/perf.fatbin -only '^alloc$' \
    -alloc-minsize $size -alloc-maxsize $size "$@" >>$O/$out.jsonl 2>>$O/$out.log
  step "$who $out $size rc $?"
}
for np in 2 4; do
  for size in 2097152 33554432 536870912 1073741824; do
    timeout 90 $MN -np $np bin/nvshmem_alloc -size $size -total 4294967296 >>$O/nvshmem-np$np.txt 2>>$O/nvshmem-np$np.log
    step "nvshmem np$np $size rc $?"
    alloc perf-old $np $size b2b-old-np$np
    alloc perf-b $np $size b2b-new-np$np
  done
  for size in 536870912 1073741824; do
    alloc perf-old $np $size settle-old-np$np -alloc-settle 5ms
    alloc perf-b $np $size settle-new-np$np -alloc-settle 5ms
  done
done
# one PE: a growth maps its own chunk only (no peers, no export wait), the floor of any growth in the call
for size in 33554432 1073741824; do alloc perf-b 1 $size b2b-new-np1; done
DT="bin/devtest-b -watchdog 30s -fatbin $G/devtest.fatbin -compat $G/compat.fatbin"
GROW="env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=8G GOSHMEM_DEVICE_HEAP_CHUNK=2M GOSHMEM_INFO=1"
GX="-x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_DEVICE_HEAP_CHUNK -x GOSHMEM_INFO"
st() { local name=$1 lim=$2; shift 2; local t0=$(date +%s); timeout $lim "$@" >$O/$name.log 2>&1; local rc=$?
  step "$name: rc $rc $(( $(date +%s) - t0 )) s: $(grep -E 'passed|PASS|FAIL' $O/$name.log | tail -1) [$(grep -c 'not prepared ahead' $O/$name.log) fallback warnings]"; }
for np in 8 4 2; do
  [ $(el) -lt 480 ] || { step "grow-np$np skipped (time)"; continue; }
  st grow-np$np 60 $GROW $M $GX -np $np $DT -part p2p -heap-grow -rounds 200
done
[ $(el) -lt 480 ] && st grow-np4-chunk512M 60 env GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_MAX=8G GOSHMEM_INFO=1 $M -x GOSHMEM_DEVICE_HEAP_SIZE -x GOSHMEM_DEVICE_HEAP_MAX -x GOSHMEM_INFO -np 4 $DT -part p2p -heap-grow -rounds 200
mps_stop >>$O/machine.txt 2>&1
step end
cat $O/steps.txt
(cd $OUT && tar czf resR.tgz r && rm -rf r)
