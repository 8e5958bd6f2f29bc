#!/usr/bin/env bash
# tests/hdr/run.sh: `make hdrcheck`. Device API (include/goshmem.h) checks:
#   1. host mode: tests/hdr/hdrcheck.c, collcheck.c (device collectives,
#      PEs and blocks as OS threads) and signalcheck.c (signal paths, NVSHMEM
#      constants) as C11 (gcc) and as C++17 (g++), run; collcheck under
#      AddressSanitizer + UBSan; then the three under ThreadSanitizer;
#   2. nvcc (when present): kernels.cu, compat_kernels.cu (every family by
#      its NVSHMEM name through nvshmem_compat.h) and the NVSHMEM Jacobi port to fatbins
#      (sm_90 SASS + compute_90 PTX; the smoke test, coll_kernels.cu and
#      gpulib/lib.cu once more for sm_80), cuobjdump checks of the arch list and
#      of the goshmemi_device_state symbol, the PTX ordering instructions,
#      a multi-object host link, and an -rdc device link.
# Without nvcc step 2 is skipped with a loud warning, and fails only when
# GOSHMEM_REQUIRE_NVCC=1. Install nvcc with scripts/cuda.sh.
#
# tests/hdr/run.sh host runs step 1 alone; tests/hdr/run.sh nvcc [GROUP...]
# step 2 alone, or its groups named (kernels, coll90, coll80, lib80, regs;
# all by default), each of which can run beside the others: make test runs
# them as jobs of their own (scripts/test.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${HDR_OUT:-bin/hdr}
mkdir -p "$out"
CFLAGS="-Wall -Wextra -Werror -O2 -pthread -Iinclude"
part=${1:-all}
[ $# = 0 ] || shift
case $part in
all | host) [ $# = 0 ] || { echo "usage: tests/hdr/run.sh [host | nvcc [kernels coll90 coll80 lib80 regs]]" >&2; exit 2; } ;;
nvcc) ;;
*) echo "usage: tests/hdr/run.sh [host | nvcc [kernels coll90 coll80 lib80 regs]]" >&2; exit 2 ;;
esac

host_checks() {
    echo "hdrcheck: gcc -std=c11"
    gcc -std=c11 $CFLAGS tests/hdr/hdrcheck.c -o "$out/hdrcheck_c"
    "$out/hdrcheck_c" 2>"$out/hdrcheck_c.stderr" || { cat "$out/hdrcheck_c.stderr"; exit 1; }
    echo "hdrcheck: g++ -std=c++17"
    g++ -std=c++17 $CFLAGS tests/hdr/hdrcheck.cpp -o "$out/hdrcheck_cpp"
    "$out/hdrcheck_cpp" 2>"$out/hdrcheck_cpp.stderr" || { cat "$out/hdrcheck_cpp.stderr"; exit 1; }
    echo "collcheck: gcc -std=c11"
    gcc -std=c11 $CFLAGS tests/hdr/collcheck.c -o "$out/collcheck_c" -lm
    timeout 600 "$out/collcheck_c" 2>"$out/collcheck_c.stderr" || { cat "$out/collcheck_c.stderr"; exit 1; }
    echo "collcheck: g++ -std=c++17 (every 4th type/op)"
    g++ -std=c++17 $CFLAGS tests/hdr/collcheck.cpp -o "$out/collcheck_cpp" -lm
    timeout 600 "$out/collcheck_cpp" quick 2>"$out/collcheck_cpp.stderr" || { cat "$out/collcheck_cpp.stderr"; exit 1; }

    for lang in c cpp; do # signal paths: typed put_signal_nbi, bad signal ops, NVSHMEM constants
        if [ $lang = c ]; then cc="gcc -std=c11"; else cc="g++ -std=c++17"; fi
        echo "hdrcheck: signalcheck ($cc)"
        $cc $CFLAGS tests/hdr/signalcheck.$lang -o "$out/signalcheck_$lang"
        "$out/signalcheck_$lang" 2>"$out/signalcheck_$lang.stderr" || { cat "$out/signalcheck_$lang.stderr"; exit 1; }
    done

    # collcheck under AddressSanitizer and UndefinedBehaviorSanitizer: the collectives' host
    # code reads no byte past a case's src (collcheck poisons the bytes after it), touches
    # nothing outside the PEs' heaps and other live objects, and has no undefined behaviour
    # (shifts, overflow, misaligned or null accesses) on any path it runs.
    echo "collcheck: gcc -std=c11 -fsanitize=address,undefined"
    gcc -std=c11 -Wall -Wextra -Werror -O1 -g -pthread -fsanitize=address,undefined -fno-sanitize-recover=undefined \
        -Iinclude tests/hdr/collcheck.c -o "$out/collcheck_asan" -lm
    timeout 600 "$out/collcheck_asan" 2>"$out/collcheck_asan.stderr" || { tail -n 60 "$out/collcheck_asan.stderr"; exit 1; }

    # The same host checks under ThreadSanitizer, every relaxed atomic acquiring or releasing
    # (GOSHMEMI_HOST_SYNC_ATOMICS, ordering.h; TSan cannot see fences): a report is a data access
    # between PEs, or between a group's threads, that no signal, flag, LL packet or AMO orders.
    # (collcheck with its quick subset: about a minute with the builds.)
    TSAN="-Wall -Wextra -Werror -Wno-tsan -O1 -g -pthread -fsanitize=thread -DGOSHMEMI_HOST_SYNC_ATOMICS -Iinclude"
    tsan_run() { TSAN_OPTIONS="halt_on_error=1 exitcode=66" timeout 600 "$@" $arg 2>"$out/${t}_tsan.stderr"; }
    for t in hdrcheck signalcheck collcheck; do
        echo "hdrcheck: $t under ThreadSanitizer (gcc -std=c11 -fsanitize=thread)"
        gcc -std=c11 $TSAN tests/hdr/$t.c -o "$out/${t}_tsan" -lm
        arg=""
        [ $t = collcheck ] && arg=quick
        rc=0
        tsan_run "$out/${t}_tsan" || rc=$?
        if [ $rc != 0 ] && grep -q "unexpected memory mapping" "$out/${t}_tsan.stderr"; then
            # TSan's shadow layout and the kernel's address randomization disagree: without it
            echo "hdrcheck: ThreadSanitizer could not map its shadow memory; again with setarch -R"
            rc=0
            tsan_run setarch "$(uname -m)" -R "$out/${t}_tsan" || rc=$?
        fi
        [ $rc = 0 ] || { tail -n 80 "$out/${t}_tsan.stderr"; echo "hdrcheck: $t under ThreadSanitizer failed (rc $rc)"; exit 1; }
    done

}
[ "$part" = nvcc ] || host_checks
[ "$part" != host ] || exit 0

if ! command -v nvcc >/dev/null 2>&1; then
    echo "################################################################"
    echo "hdrcheck: WARNING: nvcc NOT FOUND: CUDA compile checks SKIPPED"
    echo "hdrcheck: install it with: bash scripts/cuda.sh  (~5.5 GB)"
    echo "################################################################"
    [ "${GOSHMEM_REQUIRE_NVCC:-0}" = 1 ] && { echo "hdrcheck: GOSHMEM_REQUIRE_NVCC=1: failing"; exit 1; }
    exit 0
fi

NVCC="nvcc -std=c++17 -Iinclude -Werror all-warnings"
GENCODE="-gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90"
fail=0
check() { # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@" >/dev/null 2>&1; then echo "hdrcheck: ok   $what"; else echo "hdrcheck: FAIL $what"; fail=1; fi
}
fatbin_checks() { # fatbin_checks FILE
    local f=$1
    check "$f: sm_90 SASS" bash -c "cuobjdump -lelf '$f' | grep -q 'sm_90'"
    check "$f: compute_90 PTX" bash -c "cuobjdump -lptx '$f' | grep -q 'sm_90.ptx'"
    check "$f: symbol goshmemi_device_state" bash -c "cuobjdump -symbols '$f' | grep -qw goshmemi_device_state"
}

# sm_80 (A100): Hopper-only instructions in the header and the kernel
# library are guarded by __CUDA_ARCH__ >= 900, so the smoke test, every
# device collective and the library compile for it too (SASS only: the
# sm_90 builds carry the PTX).
GENCODE80="-gencode arch=compute_80,code=sm_80"
sm80_check() { # sm80_check FATBIN: sm_80 SASS and the device state symbol
    check "$1: sm_80 SASS" bash -c "cuobjdump -lelf '$1' | grep -q 'sm_80'"
    check "$1: symbol goshmemi_device_state" bash -c "cuobjdump -symbols '$1' | grep -qw goshmemi_device_state"
}

# sm_90 fatbins: the test kernel files but coll_kernels.cu (coll90), the
# smoke test (and for sm_80), GPU scope, the PTX ordering instructions, the
# IBGDA doorbell, remote collectives, links
nvcc_kernels() {
    for src in kernels compat_kernels jacobi_nvshmem_port cxi_kernels; do
        $NVCC $GENCODE -fatbin "tests/hdr/$src.cu" -o "$out/$src.fatbin"
        fatbin_checks "$out/$src.fatbin"
    done
    # GPU smoke test (run on the GPU machine: bin/hdr/smoke_host bin/hdr/smoke.fatbin [0|1])
    $NVCC $GENCODE -fatbin tests/hdr/gpu/smoke.cu -o "$out/smoke.fatbin"
    fatbin_checks "$out/smoke.fatbin"
    gcc -std=c11 $CFLAGS tests/hdr/gpu/smoke_host.c -o "$out/smoke_host" -ldl
    $NVCC -DGOSHMEM_DEVICE_SCOPE_GPU $GENCODE -fatbin tests/hdr/kernels.cu -o "$out/kernels_gpuscope.fatbin"
    fatbin_checks "$out/kernels_gpuscope.fatbin"
    check "tests/hdr/gpu/smoke.cu for sm_80" $NVCC $GENCODE80 -fatbin tests/hdr/gpu/smoke.cu -o "$out/smoke_sm80.fatbin"
    sm80_check "$out/smoke_sm80.fatbin"
    # the point-to-point API (puts, gets, AMOs, signals, waits) for sm_80, with
    # and without the remote backends: what the device suite's kernels use
    # (make fatbins builds those for sm_80 too, bin/gpu/devtest_sm80.fatbin)
    check "tests/hdr/kernels.cu for sm_80" $NVCC $GENCODE80 -fatbin tests/hdr/kernels.cu -o "$out/kernels_sm80.fatbin"
    sm80_check "$out/kernels_sm80.fatbin"
    check "tests/hdr/kernels.cu for sm_80 with -DGOSHMEM_REMOTE_TRANSPORTS" $NVCC $GENCODE80 -DGOSHMEM_REMOTE_TRANSPORTS \
        -fatbin tests/hdr/kernels.cu -o "$out/kernels_remote_sm80.fatbin"
    sm80_check "$out/kernels_remote_sm80.fatbin"

    # the ordering instructions the design names, in the PTX
    # (kernels.fatbin's compute_90 PTX: the same compile as nvcc -arch=sm_90 -ptx)
    cuobjdump -ptx "$out/kernels.fatbin" >"$out/kernels.ptx"
    for ins in fence.sc.sys fence.sc.gpu fence.acq_rel.sys st.release.sys.global.u64 ld.acquire.sys.global.u64 \
        ld.relaxed.sys.global st.relaxed.sys.global atom.relaxed.sys.global.add red.relaxed.sys.global.add \
        red.release.sys.global.add atom.relaxed.sys.global.cas trap; do
        check "PTX has $ins" grep -q "$ins" "$out/kernels.ptx"
    done

    # IBGDA doorbell ordering of the device API's backend (ibgda/backend.h):
    # system scope unless the build asks for GPU scope. Its queues can be in
    # host memory (the soft NIC's always are), where a GPU-scope release store
    # of the doorbell record need never become visible to the host.
    printf '#define GOSHMEM_REMOTE_TRANSPORTS\n#include <goshmem.h>\nextern "C" __global__ void k_ring(goshmemi_ibgda_qp_t *qp) { goshmemi_ibgda_ring(qp, 1, 2); }\n' >"$out/ring.cu"
    $NVCC -arch=sm_90 -ptx "$out/ring.cu" -o "$out/ring.ptx"
    $NVCC -arch=sm_90 -ptx -DGOSHMEM_IBGDA_ORDER_GPU "$out/ring.cu" -o "$out/ring_gpu.ptx"
    check "IBGDA ring through goshmem.h: fence.sc.sys + st.relaxed.sys (default)" bash -c "
        grep -q fence.sc.sys '$out/ring.ptx' && grep -q st.relaxed.sys.global.u32 '$out/ring.ptx' &&
        grep -q st.relaxed.sys.global.u64 '$out/ring.ptx' && ! grep -q st.release.gpu '$out/ring.ptx'"
    # GPU scope: one ordering point, {WQE, record} -> release -> doorbell (qp.h goshmemi_ibgda_ring_c)
    check "IBGDA ring with -DGOSHMEM_IBGDA_ORDER_GPU: relaxed record, st.release.gpu doorbell" bash -c "
        grep -q st.relaxed.sys.global.u32 '$out/ring_gpu.ptx' && grep -q st.release.gpu.global.u64 '$out/ring_gpu.ptx' &&
        ! grep -q st.release.gpu.global.u32 '$out/ring_gpu.ptx' && ! grep -q fence.sc.sys '$out/ring_gpu.ptx'"

    # device collectives with the remote backends compiled in (their put_signal path)
    printf '#define GOSHMEM_REMOTE_TRANSPORTS\n#include <goshmem.h>\nextern "C" __global__ void k_c(float *d, const float *s, size_t n) { goshmemx_float_sum_reduce_block(0, d, s, n); goshmemx_fcollectmem_block(0, d, s, n); }\n' >"$out/coll_remote.cu"
    check "device collectives with -DGOSHMEM_REMOTE_TRANSPORTS" $NVCC $GENCODE -fatbin "$out/coll_remote.cu" -o "$out/coll_remote.fatbin"

    # two objects that both include goshmem.h link into one host program
    # (nvcc's host shadow of the __constant__ pointer is internal)
    printf '#include <goshmem.h>\nextern "C" __global__ void k_a(int *x) { *x = goshmem_my_pe(); }\n' >"$out/link_a.cu"
    printf '#include <goshmem.h>\nextern "C" __global__ void k_b(int *x) { *x = goshmem_n_pes(); }\nint main() { return 0; }\n' >"$out/link_b.cu"
    check "two TUs link (whole-program mode)" bash -c "$NVCC -arch=sm_90 -c $out/link_a.cu -o $out/link_a.o &&
        $NVCC -arch=sm_90 -c $out/link_b.cu -o $out/link_b.o && nvcc $out/link_a.o $out/link_b.o -o $out/link_ab"
    check "-rdc device link with GOSHMEM_DEFINE_DEVICE_STATE in one TU" bash -c "
        $NVCC -arch=sm_90 -rdc=true -DGOSHMEM_DEFINE_DEVICE_STATE -c $out/link_a.cu -o $out/rdc_a.o &&
        $NVCC -arch=sm_90 -rdc=true -c $out/link_b.cu -o $out/rdc_b.o &&
        nvcc -arch=sm_90 -rdc=true $out/rdc_a.o $out/rdc_b.o -o $out/rdc_ab &&
        cuobjdump -symbols $out/rdc_ab | grep -qw goshmemi_device_state"
}

# every device collective (the longest compiles: groups of their own)
nvcc_coll90() {
    $NVCC $GENCODE -fatbin tests/hdr/coll_kernels.cu -o "$out/coll_kernels.fatbin"
    fatbin_checks "$out/coll_kernels.fatbin"
}
nvcc_coll80() {
    check "tests/hdr/coll_kernels.cu for sm_80" $NVCC $GENCODE80 -fatbin tests/hdr/coll_kernels.cu -o "$out/coll_kernels_sm80.fatbin"
    sm80_check "$out/coll_kernels_sm80.fatbin"
}

nvcc_lib80() {
    check "gpulib/lib.cu for sm_80" $NVCC -Igpulib -Iinternal/gpulib $GENCODE80 -fatbin gpulib/lib.cu -o "$out/lib_sm80.fatbin"
    sm80_check "$out/lib_sm80.fatbin"
}

nvcc_regs() {
    # Register budget of Jacobi's sweep kernel: 1024-thread blocks need <= 32
    # registers for two blocks per SM. A heavier inlined block put pushes it past
    # that (one block per SM, half the speed: docs/gpu.md): keep it honest.
    regs_of() { # regs_of CUBIN KERNEL
        cuobjdump --dump-resource-usage "$1" | awk -v k="Function $2:" '$0 ~ k {getline; sub(/.*REG:/, ""); print $1 + 0}'
    }
    $NVCC -arch=sm_90 -cubin examples/jacobi-gpu/jacobi.cu -o "$out/jacobi.cubin" 2>/dev/null
    jr=$(regs_of "$out/jacobi.cubin" jacobi_kernel)
    check "jacobi_kernel (examples/jacobi-gpu) <= 32 registers (has ${jr:-none})" test "${jr:-99}" -le "${JACOBI_MAX_REGS:-32}"

    # Register budget of the device collectives at 1024 threads: with
    # __launch_bounds__(1024) every family and scope fits 64 registers with at
    # most COLL_MAX_SPILL bytes of spill stores per thread, in the kernel or the
    # out-of-line functions it calls (tests/hdr/coll_bounds.cu). The one-thread
    # forms (cb_*_thread) may spill up to COLL_MAX_SPILL_THREAD: their
    # multi-block copy (goshmemi_copy_blocks_one, out of line) keeps up to eight
    # 16-byte loads in flight, and in a 64-register kernel it and its callers
    # spill 64-880 bytes. Measured there against the block-by-block copies:
    # the fcollect and alltoall of 8-64 B at 4 PEs 0.2-1.4 us faster, the
    # reducescatter from 128 B 1.1-1.4x faster; the reductions below 128 B and
    # the 2-PE reduce at every size up to 0.8 us slower, the fcollect and
    # alltoall of 32-64 B at 2 PEs 0.2-0.7 us slower
    # (bench/results/2026-12-04-182500-gpu-one-thread-copies).
    # The warp fcollect, alltoall and broadcast (cb_*mem_warp) may spill up to
    # COLL_MAX_SPILL_WARP: their copies keep several loads per lane in flight
    # (goshmemi_copy_blocks_warp), which in a 64-register kernel spills about
    # 270-370 bytes, and were still faster there than the two-deep copies on
    # average (bench/results/2026-12-04-114200-gpu-warp-copy-blocks).
    $NVCC -arch=sm_90 -cubin -Xptxas -v tests/hdr/coll_bounds.cu -o "$out/coll_bounds.cubin" >"$out/coll_bounds.ptxas" 2>&1
    awk '/Compiling entry function/ {match($0, /function .[a-z_0-9A-Z]*/); k = substr($0, RSTART + 10, RLENGTH - 10)}
         /bytes spill stores/ {match($0, /[0-9]+ bytes spill stores/); split(substr($0, RSTART, RLENGTH), a, " "); if (!(k in w) || a[1] + 0 > w[k]) w[k] = a[1] + 0}
         END {for (k in w) print k, w[k]}' \
        "$out/coll_bounds.ptxas" >"$out/coll_bounds.spills"
    nk=$(wc -l <"$out/coll_bounds.spills")
    worst=$(sort -k2 -n "$out/coll_bounds.spills" | tail -1)
    check "device collectives at __launch_bounds__(1024): $nk kernels, <= ${COLL_MAX_SPILL:-64} B spilled each, one-thread forms <= ${COLL_MAX_SPILL_THREAD:-960} B, warp movers <= ${COLL_MAX_SPILL_WARP:-448} B (worst: ${worst:-none})" \
        awk -v m="${COLL_MAX_SPILL:-64}" -v mt="${COLL_MAX_SPILL_THREAD:-960}" -v mw="${COLL_MAX_SPILL_WARP:-448}" -v n="$nk" \
        'n < 36 {exit 1} $1 ~ /_thread$/ {if ($2 > mt) exit 1; next} $1 ~ /mem_warp$/ {if ($2 > mw) exit 1; next} $2 > m {exit 1}' "$out/coll_bounds.spills"
}

groups=${*:-kernels coll90 coll80 lib80 regs}
for g in $groups; do
    case $g in
    kernels | coll90 | coll80 | lib80 | regs) ;;
    *) echo "hdrcheck: unknown nvcc group $g (want kernels, coll90, coll80, lib80 or regs)" >&2; exit 2 ;;
    esac
done
echo "hdrcheck: $(nvcc --version | grep release) ($groups)"
for g in $groups; do "nvcc_$g"; done
[ $fail = 0 ] || { echo "hdrcheck: nvcc checks FAILED ($groups)"; exit 1; }
echo "hdrcheck: nvcc checks passed ($groups)"
