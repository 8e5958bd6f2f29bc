# bench/gpu/nvshmem_build.sh: source it, then `nvshmem_build LOG [SRC OUT]` builds an NVSHMEM
# program (default: the NVSHMEM peer, bench/gpu/nvshmem_perf.cu, into $B/nvshmem_perf) in the
# background against the Python environment's NVSHMEM (NVSHMEM_HOME), its output to LOG;
# build_pid is the build's PID. It exports LD_LIBRARY_PATH with NVSHMEM's and its sibling
# packages' lib directories, for the runs.
NV=${NVSHMEM_HOME:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nvshmem}
B=/tmp/goshmem-mpg-build
nvshmem_build() {
    local log=$1 src=${2:-bench/gpu/nvshmem_perf.cu} bin=${3:-$B/nvshmem_perf} libs=$NV/lib d inc libdir
    for d in "$(dirname "$NV")"/*/lib; do libs=$libs:$d; done
    export LD_LIBRARY_PATH=$libs:${LD_LIBRARY_PATH:-}
    mkdir -p $B
    ln -sf "$(ls $NV/lib/libnvshmem_host.so* | head -1)" $B/libnvshmem_host.so
    inc=$(mpicc --showme:incdirs 2>/dev/null | awk '{print $1}')
    libdir=$(mpicc --showme:libdirs 2>/dev/null | awk '{print $1}')
    (t0=$(date +%s)
        timeout 300 nvcc -rdc=true -O3 -std=c++17 -gencode arch=compute_90,code=sm_90 -I"$NV/include" \
            -I"${inc:-/usr/lib/x86_64-linux-gnu/openmpi/include}" "$src" -L$B -L"$NV/lib" \
            -L"${libdir:-/usr/lib/x86_64-linux-gnu/openmpi/lib}" -lnvshmem_host -lnvshmem_device -lmpi \
            -Xlinker -rpath -Xlinker "$NV/lib" -o "$bin" && echo "$(basename "$bin") built in $(($(date +%s) - t0)) s"
    ) >"$log" 2>&1 &
    build_pid=$!
}
