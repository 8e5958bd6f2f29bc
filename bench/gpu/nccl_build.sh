# bench/gpu/nccl_build.sh: source it, then `nccl_build LOG` builds the NCCL peer
# (bench/gpu/nccl_perf.cu) into $NB/nccl_perf in the background against the Python
# environment's NCCL (the nvidia-nccl package's include/nccl.h and lib/libnccl.so.2; NCCL_HOME
# overrides), its output to LOG; nccl_pid is the build's PID. It exports LD_LIBRARY_PATH with
# NCCL's lib directory, for the runs.
NB=/tmp/goshmem-nccl-build
nccl_find() { # prints the directory holding include/nccl.h and lib/libnccl.so*
    local site d
    if [ -n "${NCCL_HOME:-}" ]; then echo "$NCCL_HOME"; return; fi
    for site in /opt/torch/.venv/lib/python3.12/site-packages $(python3 -c 'import site; print(" ".join(site.getsitepackages()))' 2>/dev/null); do
        for d in "$site"/nvidia/nccl "$site"/nvidia/cu13 "$site"/nvidia/cu12; do
            if [ -f "$d/include/nccl.h" ] && ls "$d"/lib/libnccl.so* >/dev/null 2>&1; then echo "$d"; return; fi
        done
    done
    d=$(find /opt /usr -name nccl.h -path '*/include/*' 2>/dev/null | head -1)
    [ -n "$d" ] && dirname "$(dirname "$d")"
}
nccl_build() {
    local log=$1 nc inc libdir
    mkdir -p $NB
    nc=$(nccl_find)
    if [ -z "$nc" ]; then
        echo "nccl_perf: no NCCL found (include/nccl.h and lib/libnccl.so*); set NCCL_HOME" >"$log"
        nccl_pid=""
        return 1
    fi
    export LD_LIBRARY_PATH=$nc/lib:${LD_LIBRARY_PATH:-}
    inc=$(mpicc --showme:incdirs 2>/dev/null | awk '{print $1}')
    libdir=$(mpicc --showme:libdirs 2>/dev/null | awk '{print $1}')
    (t0=$(date +%s)
        echo "NCCL from $nc: $(ls "$nc"/lib/libnccl.so* | tr '\n' ' ')"
        timeout 200 nvcc -O2 -std=c++17 -I"$nc/include" -I"${inc:-/usr/lib/x86_64-linux-gnu/openmpi/include}" \
            bench/gpu/nccl_perf.cu -L"$nc/lib" -l:"$(basename "$(ls "$nc"/lib/libnccl.so* | head -1)")" \
            -L"${libdir:-/usr/lib/x86_64-linux-gnu/openmpi/lib}" -lmpi -Xlinker -rpath -Xlinker "$nc/lib" \
            -o $NB/nccl_perf && echo "nccl_perf built in $(($(date +%s) - t0)) s"
    ) >"$log" 2>&1 &
    nccl_pid=$!
}
