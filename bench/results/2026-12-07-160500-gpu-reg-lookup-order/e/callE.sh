#!/usr/bin/env bash
# device call E: (1) the kernel library rebuilt by nvcc 13.0 (sm_80, sm_90, sm_100, compute_100
# PTX) with the registered-buffer lookups of variant c (a relaxed scan, then end, base, end
# confirmed with acquire loads on the candidate only); meanwhile (2) the IBGDA soft-NIC step of
# tests/gpu/run.sh, which failed once in call D (atomics hung on PE 0), alternating the kernels
# of head (07:57 build) with the committed library against variant c's kernels with call D's
# library, twice each, each on a fresh MPS daemon; (3) tests/gpu/run.sh with variant c's library
# and kernels; (4) put_on_stream_reg over the proxy: head's library, D's, c's, alternating.
# Run from the repository root with bin/e carried.
set -u
T0=$(date +%s)
O=$OUT/e
mkdir -p $O
xz -dc bin/e/carry-e.tar.xz | tar -C bin -xf -
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
{ date -u; uname -r; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader; nvcc --version | tail -2; } >$O/machine.txt 2>&1
cp gpulib/lib.fatbin bin/lib-head.fatbin
(t=$(date +%s); cd gpulib && nvcc -std=c++17 -I../include -I../internal/gpulib --threads 0 \
  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100 \
  -gencode arch=compute_100,code=compute_100 -Xfatbin -compress-all -fatbin lib.cu -o $O/lib.fatbin >$O/gpulib.log 2>&1
  echo "nvcc rc $? in $(( $(date +%s) - t )) s" >>$O/gpulib.log) &
BUILD=$!
. tests/gpu/mps.sh
ib() { # $1 label, $2 kernel dir, $3 library
  mps_start >>$O/mps.log 2>&1
  local t=$(date +%s)
  env GOSHMEM_GPU=on GOSHMEM_GPU_LIB=$3 GOSHMEM_GPU_TRANSPORT=ibgda GOSHMEM_IBGDA_NIC=soft GOSHMEM_TIMEOUT=20s timeout 60 \
    mpirun --bind-to none -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x GOSHMEM_GPU -x GOSHMEM_GPU_LIB -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_IBGDA_NIC -x GOSHMEM_TIMEOUT \
    -np 2 bin/devtest -fatbin $2/devtest_remote.fatbin -compat $2/compat_remote.fatbin -watchdog 30s -rounds 20 >$O/ib-$1.out 2>&1
  local rc=$?
  mps_stop >>$O/mps.log 2>&1
  echo "ibgda soft $1: rc $rc in $(( $(date +%s) - t )) s: $(grep -E 'passed, .* failed' $O/ib-$1.out | head -1) $(grep -m1 FAIL $O/ib-$1.out | cut -c1-160)" | tee -a $O/steps.txt
}
ib head-1 bin/old bin/lib-head.fatbin
ib c-1 bin/gpu bin/lib-d.fatbin
ib head-2 bin/old bin/lib-head.fatbin
ib c-2 bin/gpu bin/lib-d.fatbin
wait $BUILD
cat $O/gpulib.log; cuobjdump --list-elf $O/lib.fatbin; cuobjdump --list-ptx $O/lib.fatbin
[ -s $O/lib.fatbin ] || { (cd $OUT && tar czf resE.tgz e && rm -rf e); exit 1; }
cp $O/lib.fatbin gpulib/lib.fatbin
export GOSHMEM_GPU_LIB=gpulib/lib.fatbin
left=$(( 520 - ($(date +%s) - T0) )); [ $left -gt 60 ] || left=60
timeout $left bash tests/gpu/run.sh $O/suite >$O/suite.out 2>&1
echo "run.sh rc $? after $(( $(date +%s) - T0 )) s" | tee -a $O/steps.txt
grep -E '^\| |overall' $O/suite/summary.md | grep -v '^| step' | awk -F'|' '{print $2 "|" $4 "|" $6}' | cut -c1-150
mps_start >>$O/mps.log 2>&1
M="mpirun --bind-to none --oversubscribe -x CUDA_MPS_PIPE_DIRECTORY -x CUDA_MPS_LOG_DIRECTORY -x GOSHMEM_GPU -x GOSHMEM_GPU_LIB"
export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=0
for pass in 1 2; do
  for lib in head d c; do
    [ $(( $(date +%s) - T0 )) -gt 570 ] && break 2
    f=gpulib/lib.fatbin; [ $lib = head ] && f=bin/lib-head.fatbin; [ $lib = d ] && f=bin/lib-d.fatbin
    env GOSHMEM_GPU_LIB=$f GOSHMEM_GPU_TRANSPORT=proxy GOSHMEM_DEVICE_HEAP_SIZE=256M timeout 30 $M -x GOSHMEM_GPU_TRANSPORT -x GOSHMEM_DEVICE_HEAP_SIZE -x CUDA_VISIBLE_DEVICES -np 2 \
      bin/w/perf device -json -module bin/gpu/perf_remote.fatbin -only '^register$' -reg-maxsize 4194304 >>$O/reg-proxy-$lib.jsonl 2>>$O/reg-proxy-$lib.log
    echo "reg proxy $lib pass $pass rc $? after $(( $(date +%s) - T0 )) s" >>$O/steps.txt
  done
done
mps_stop >>$O/mps.log 2>&1
for lib in head d c; do echo "== $lib: size us ratio"; python3 -c '
import json,sys
for l in open(sys.argv[1]):
    try: r=json.loads(l)
    except Exception: continue
    if r.get("name")=="put_on_stream_reg": print(r["size"], r["median_us"], r["timing"].split(";")[1].split("x the")[0].strip())
' $O/reg-proxy-$lib.jsonl | tr '\n' ' '; echo; done
(cd $OUT && tar czf resE.tgz --exclude=lib.fatbin e && mv e/lib.fatbin . && rm -rf e)
echo "done after $(( $(date +%s) - T0 )) s"
