#!/usr/bin/env bash
# Build and run the OpenSHMEM (oshmem) peer benchmark and the shared-memory floor.
#
# usage: bench/oshmem/run.sh [-o OUTDIR] [oshbench flags: -iters N -warmup N -maxsize B -json]
#   OUTDIR (or $OSHBENCH_OUT): where the binaries are built; default a temp dir
#   (removed at exit). The same flags go to oshbench and to floor (floor ignores
#   -maxsize; its default iters is 200000 unless -iters is given).
# Env: OSHBENCH_TIMEOUT (seconds for the oshrun step, default 300).
#
# oshrun needs "--mca opal_common_ucx_opal_mem_hooks 0" on this machine: without it
# every oshmem program crashes with SIGSEGV in shmem_finalize (Debian 12's OpenMPI 4.1.4 with UCX).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

out="${OSHBENCH_OUT:-}"
if [[ $# -ge 2 && ( "$1" == "-o" || "$1" == "--out" ) ]]; then
    out="$2"
    shift 2
fi

die() { echo "bench/oshmem/run.sh: $*" >&2; exit 1; }

command -v oshcc >/dev/null 2>&1 ||
    die "oshcc not found: install Debian's OpenMPI with oshmem (apt-get install libopenmpi-dev openmpi-bin)"
command -v oshrun >/dev/null 2>&1 ||
    die "oshrun not found: install openmpi-bin"
command -v gcc >/dev/null 2>&1 || die "gcc not found"

if [[ -z "$out" ]]; then
    out="$(mktemp -d "${TMPDIR:-/tmp}/oshbench.XXXXXX")"
    trap 'rm -rf "$out"' EXIT
else
    mkdir -p "$out"
fi

oshcc -O2 -std=c11 -Wall -o "$out/oshbench" "$here/oshbench.c" ||
    die "oshcc failed to build oshbench.c"
gcc -O2 -std=c11 -Wall -o "$out/floor" "$here/floor.c" ||
    die "gcc failed to build floor.c"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

rc=0
timeout "${OSHBENCH_TIMEOUT:-300}" \
    oshrun --allow-run-as-root --oversubscribe -np 2 \
    --mca opal_common_ucx_opal_mem_hooks 0 \
    "$out/oshbench" "$@" || rc=$?
if [[ $rc -ne 0 ]]; then
    [[ $rc -eq 124 ]] && die "oshbench timed out after ${OSHBENCH_TIMEOUT:-300} s"
    die "oshbench failed (exit $rc)"
fi

"$out/floor" "$@" || die "floor failed (exit $?)"
