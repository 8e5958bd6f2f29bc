#!/usr/bin/env bash
# on-stream rows: PDL trigger placement variants vs plain launches, 2 and 4 PEs, iters 100 and 1000
O=$1; mkdir -p $O
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0
. tests/gpu/mps.sh
mps_start || { echo "MPS did not start"; exit 1; }
X="-x CUDA_VISIBLE_DEVICES -x LD_LIBRARY_PATH -x GOSHMEM_GPU -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY"
GP="bin/goshmem-perf device -json -module bin/gpu/perf.fatbin -coll-module bin/gpu/perf_coll.fatbin -only ^onstream$ -bw-maxsize 134217728 -coll-threads 1024 -coll-maxsize 65536"
for r in 1 2 3; do
 for it in 100 1000; do
  for np in 2 4; do
   for v in start end none plain; do
    case $v in
     start) e="GOSHMEM_GPU_LAUNCH_OVERLAP=1";;
     end) e="GOSHMEM_GPU_LIB=bin/var3/trig1.fatbin";;
     none) e="GOSHMEM_GPU_LIB=bin/var3/trig2.fatbin";;
     plain) e="GOSHMEM_GPU_LAUNCH_OVERLAP=0";;
    esac
    f=$O/${v}_it${it}_np${np}_r$r
    env $e timeout -k 5 100 mpirun --bind-to none --oversubscribe -np $np $X -x ${e%%=*} $GP -coll-iters $it -variant $v >$f.jsonl 2>$f.log
    echo "$f rc $? $(grep -c '^{' $f.jsonl) rows"
   done
  done
 done
done
mps_stop
tar czf $O.tgz -C $(dirname $O) $(basename $O) && rm -rf $O
