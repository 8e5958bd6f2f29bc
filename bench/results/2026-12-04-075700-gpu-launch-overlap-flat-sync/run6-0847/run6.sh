#!/usr/bin/env bash
# LL broadcast: device rows (ab, 2/3/4 PEs, with NVSHMEM), then on-stream rows with the library
# built with it (GOSHMEM_GPU_LIB) against the built-in one, and NVSHMEM's on-stream rows
O=$1; mkdir -p $O
NPS="2 3 4" bash bench/gpu/ab.sh $O/ab bcll=bin/var4/bcll.fatbin base=bin/var4/base.fatbin > $O/ab.txt 2>&1
echo "ab rc $?"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0 NVSHMEM_DISABLE_NVLS=1 NVSHMEM_SYMMETRIC_SIZE=2G
. tests/gpu/mps.sh
mps_start || { echo "MPS did not start"; exit 1; }
X="-x CUDA_VISIBLE_DEVICES -x LD_LIBRARY_PATH -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x NVSHMEM_SYMMETRIC_SIZE -x NVSHMEM_DISABLE_NVLS"
GP="bin/goshmem-perf device -json -module bin/gpu/perf.fatbin -coll-module bin/gpu/perf_coll.fatbin -only ^onstream$ -bw-maxsize 134217728 -coll-threads 1024 -coll-maxsize 65536 -coll-iters 1000"
B=/tmp/goshmem-mpg-build
mkdir -p $O/os
for r in 1 2; do
 for np in 2 4; do
  for v in base bcll; do
   e="GOSHMEM_GPU_LAUNCH_OVERLAP=1"; [ $v = bcll ] && e="GOSHMEM_GPU_LIB=bin/var4/lib_bcll.fatbin"
   f=$O/os/goshmem_${v}_np${np}_r$r
   env $e timeout -k 5 100 mpirun --bind-to none --oversubscribe -np $np $X -x ${e%%=*} $GP -variant $v >$f.jsonl 2>$f.log
   echo "$f rc $? $(grep -c '^{' $f.jsonl) rows"
  done
  f=$O/os/nvshmem_np${np}_r$r
  [ -x $B/nvshmem_perf ] && NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 timeout -k 5 100 mpirun --bind-to none --oversubscribe -np $np $X -x NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE $B/nvshmem_perf -only on_stream -bw-maxsize 134217728 -coll-threads 1024 -coll-maxsize 65536 >$f.jsonl 2>$f.log
  echo "$f rc $? $(grep -c '^{' $f.jsonl 2>/dev/null) rows"
 done
done
mps_stop
tar czf $O.tgz -C $(dirname $O) $(basename $O) && rm -rf $O
