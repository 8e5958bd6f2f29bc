#!/usr/bin/env bash
# device call D: (1) the kernel library gpulib/lib.fatbin rebuilt by the machine's nvcc 13.0 for
# sm_80, sm_90, sm_100 and compute_100 PTX (the Makefile's gpulib recipe) after the registered-buffer
# lookups' change (end, base, end again, acquire loads); (2) tests/gpu/run.sh with the new library
# and nvcc 11.8 kernels built on the dev VM from the same headers; (3) put_on_stream_reg over the
# proxy, old library against new, alternating, two passes.
# Run from the repository root with bin/d carried.
set -u
T0=$(date +%s)
O=$OUT/d
mkdir -p $O
xz -dc bin/d/carry-d.tar.xz | tar -C bin -xf -
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ date -u; uname -r; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -2; git log -1 --format=%H 2>/dev/null; } >$O/machine.txt 2>&1
archs="80 90"; nvcc --list-gpu-arch 2>/dev/null | grep -qx compute_100 && archs="$archs 100"
last=${archs##* }; gc=""; for a in $archs; do gc="$gc -gencode arch=compute_$a,code=sm_$a"; done
echo "gpulib: $(nvcc --version | grep -o 'release [0-9.]*'): SASS for sm_${archs// /, sm_}, PTX compute_$last" >$O/gpulib.log
t=$(date +%s)
(cd gpulib && nvcc -std=c++17 -I../include -I../internal/gpulib --threads 0 $gc \
  -gencode arch=compute_$last,code=compute_$last -Xfatbin -compress-all -fatbin lib.cu -o $O/lib.fatbin) >>$O/gpulib.log 2>&1
echo "nvcc rc $? in $(( $(date +%s) - t )) s, $(stat -c %s $O/lib.fatbin 2>/dev/null) bytes" >>$O/gpulib.log
cuobjdump --list-elf $O/lib.fatbin >>$O/gpulib.log 2>&1; cuobjdump --list-ptx $O/lib.fatbin >>$O/gpulib.log 2>&1
cat $O/gpulib.log
[ -s $O/lib.fatbin ] || { (cd $OUT && tar czf resD.tgz d && rm -rf d); exit 1; }
cp gpulib/lib.fatbin $O/../lib-old.fatbin.tmp
cp $O/lib.fatbin gpulib/lib.fatbin
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin
left=$(( 560 - ($(date +%s) - T0) )); [ $left -gt 150 ] || left=150
timeout $left bash tests/gpu/run.sh $O/suite >$O/suite.out 2>&1
echo "run.sh rc $? after $(( $(date +%s) - T0 )) s" | tee -a $O/steps.txt
grep -E '^\| |overall' $O/suite/summary.md | grep -v '^| step' | awk -F'|' '{print $2 "|" $4 "|" $6}' | cut -c1-170
# put_on_stream_reg over the proxy: old library, new library, twice
. tests/gpu/mps.sh
mps_start >>$O/machine.txt 2>&1
M="mpirun --bind-to none --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x GOSHMEM_GPU -x GOSHMEM_GPU_LIB"
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0
for pass in 1 2; do
  for lib in old new; do
    [ $(( $(date +%s) - T0 )) -gt 520 ] && break 2
    f=gpulib/lib.fatbin; [ $lib = old ] && f=$O/../lib-old.fatbin.tmp
    env GOSHMEM_GPU_LIB=$f GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 45 $M -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_DEVICE_HEAP_SIZE -x CUDA_VISIBLE_DEVICES -np 2 \
      bin/w/perf device -json -module bin/gpu/perf_remote.fatbin -only '^register$' -reg-maxsize 4194304 >>$O/reg-proxy-$lib.jsonl 2>>$O/reg-proxy-$lib.log
    echo "reg proxy $lib pass $pass rc $? after $(( $(date +%s) - T0 )) s" | tee -a $O/steps.txt
  done
done
mps_stop >>$O/machine.txt 2>&1
for lib in old new; do echo "== $lib"; python3 -c '
import json,sys
for l in open(sys.argv[1]):
    try: r=json.loads(l)
    except Exception: continue
    if r.get("name")=="put_on_stream_reg": print(r["size"], r["median_us"], r["timing"].split(";")[1].split("(")[0].strip())
' $O/reg-proxy-$lib.jsonl; done
rm -f $O/../lib-old.fatbin.tmp
(cd $OUT && tar czf resD.tgz --exclude=lib.fatbin d && mv d/lib.fatbin . && rm -rf d)
echo "done after $(( $(date +%s) - T0 )) s"
