# bench/alloc/rows.sh: the heap-growth rows on the GPU machine, several PEs on one GPU under MPS.
# Source it from the repository root in a device call's script, then:
#   alloc_begin DIR                  DIR/machine.txt, the MPS daemon, the environment; each job's
#                                    exit status and time go to DIR/steps.txt (alloc_step TEXT adds one)
#   alloc_row PERF NP SIZE NAME [FLAG...]
#                                    one job of `PERF device -only '^alloc$'` at SIZE bytes and NP PEs,
#                                    its JSON rows appended to DIR/NAME.jsonl (stderr to DIR/NAME.log);
#                                    FLAGs go to goshmem-perf (-alloc-settle 5ms, -alloc-reps 12)
#   alloc_nvshmem_build              builds bench/alloc/nvshmem_alloc.cu into $ALLOC_BUILD/nvshmem_alloc
#                                    with bench/gpu/nvshmem_build.sh (NVSHMEM 3 from the Python
#                                    environment, NVSHMEM_HOME) and waits for it
#   alloc_nvshmem NP SIZE            one job of it (cudaMalloc, then nvshmem_malloc back to back up to
#                                    4 GiB a PE), appended to DIR/nvshmem-npNP.txt
#   alloc_end                        stops the MPS daemon
# `python3 bench/alloc/summary.py DIR` prints every row with its ratio to the job's cuMemAlloc.
# Settings (environment): ALLOC_MODULE, the perf kernels (default bin/gpu/perf.fatbin);
# ALLOC_HEAP, GOSHMEM_DEVICE_HEAP_SIZE of every job (default 256M, so that the rows grow the heap);
# ALLOC_TIMEOUT, seconds a job may take (default 60). GOSHMEM_GPU_LIB and other GOSHMEM_ variables
# set by the caller reach every PE.
. tests/gpu/mps.sh
ALLOC_BUILD=${ALLOC_BUILD:-/tmp/goshmem-alloc-build}

alloc_step() { echo "$(($(date +%s) - alloc_t0)) s: $*" >>"$alloc_dir/steps.txt"; }

alloc_begin() {
    alloc_dir=$1 alloc_t0=$(date +%s)
    mkdir -p "$alloc_dir"
    { date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
      nvcc --version | grep release; } >"$alloc_dir/machine.txt" 2>&1
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export GOSHMEM_GPU=on CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-0}
    mps_start >>"$alloc_dir/machine.txt" 2>&1
}

alloc_end() {
    mps_stop >>"$alloc_dir/machine.txt" 2>&1
    alloc_step end
}

# mpirun's -x for every variable the PEs need: MPS's, the GPU's and each GOSHMEM_ one set here.
alloc_mpirun() {
    local v args=""
    for v in CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY CUDA_VISIBLE_DEVICES LD_LIBRARY_PATH \
        $(env | sed -n 's/^\(GOSHMEM_[A-Z0-9_]*\)=.*/\1/p') $(env | sed -n 's/^\(NVSHMEM_[A-Z0-9_]*\)=.*/\1/p'); do
        [ -n "${!v+x}" ] && args="$args -x $v"
    done
    echo "mpirun --bind-to none --oversubscribe$args"
}

alloc_row() {
    local perf=$1 np=$2 size=$3 name=$4 rc
    shift 4
    (export GOSHMEM_DEVICE_HEAP_SIZE=${ALLOC_HEAP:-256M}
        timeout "${ALLOC_TIMEOUT:-60}" $(alloc_mpirun) -np "$np" "$perf" device -json \
            -module "${ALLOC_MODULE:-bin/gpu/perf.fatbin}" -only '^alloc$' \
            -alloc-minsize "$size" -alloc-maxsize "$size" "$@" \
            >>"$alloc_dir/$name.jsonl" 2>>"$alloc_dir/$name.log")
    rc=$?
    alloc_step "$perf np$np $size $* -> $name: rc $rc"
}

alloc_nvshmem_build() {
    local rc
    . bench/gpu/nvshmem_build.sh
    mkdir -p "$ALLOC_BUILD"
    nvshmem_build "$alloc_dir/nvshmem-build.log" bench/alloc/nvshmem_alloc.cu "$ALLOC_BUILD/nvshmem_alloc"
    wait "$build_pid"
    rc=$?
    alloc_step "nvshmem_alloc build: rc $rc"
    # One GPU shared under MPS: no NVLink multicast, no NCCL, no remote transport.
    export NVSHMEM_DISABLE_NVLS=1 NVSHMEM_DISABLE_NCCL=1 NVSHMEM_IGNORE_CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=1 \
        NVSHMEM_REMOTE_TRANSPORT=none NVSHMEM_BOOTSTRAP_UID_SOCK_IFNAME=lo
    export NVSHMEM_SYMMETRIC_SIZE=${NVSHMEM_SYMMETRIC_SIZE:-268435456}
    return $rc
}

alloc_nvshmem() {
    local np=$1 size=$2 rc
    timeout $((${ALLOC_TIMEOUT:-60} + 30)) $(alloc_mpirun) -np "$np" "$ALLOC_BUILD/nvshmem_alloc" \
        -size "$size" -total 4294967296 >>"$alloc_dir/nvshmem-np$np.txt" 2>>"$alloc_dir/nvshmem-np$np.log"
    rc=$?
    alloc_step "nvshmem np$np $size: rc $rc"
}
