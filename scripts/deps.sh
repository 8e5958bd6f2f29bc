#!/usr/bin/env bash
# Installs what goshmem needs on Debian 12 (idempotent: it installs only what is missing).
#   scripts/deps.sh          build and test dependencies (OpenMPI, MPICH, libfabric, rdma-core's mlx5dv.h, iproute2, gcc)
#   scripts/deps.sh --cuda   also CUDA 11.8's nvcc from Debian non-free (scripts/cuda.sh, ~5.5 GB),
#                            used by `make hdrcheck` to compile the device header to sm_90 fatbins
# Go itself is expected at /usr/local/go or on PATH; Go modules come from the module proxy.
set -euo pipefail

# MPICH (mpich: mpiexec.mpich and libmpich.so.12, no headers) is for the tests that run one
# binary under both MPIs. Its mpirun/mpiexec alternatives have a lower priority than OpenMPI's,
# so the bare mpirun stays OpenMPI's; the scripts and tests name mpirun.openmpi anyway.
pkgs=(openmpi-bin libopenmpi-dev mpich libfabric-dev libibverbs-dev ibverbs-providers iproute2 util-linux pkg-config gcc make)

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" != 0 ]; then SUDO=sudo; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "deps: all present (${pkgs[*]})"
fi

if ! command -v go >/dev/null 2>&1 && [ ! -x /usr/local/go/bin/go ]; then
  echo "deps: no Go toolchain found; install Go 1.26 and put it on PATH" >&2
  exit 1
fi

if [ "${1:-}" = "--cuda" ]; then
  if command -v nvcc >/dev/null 2>&1; then
    echo "deps: nvcc present ($(nvcc --version | grep -o 'release [0-9.]*'))"
  else
    free_kb=$(df -Pk / | awk 'NR==2 {print $4}')
    if [ "${free_kb:-0}" -lt $((8 * 1024 * 1024)) ]; then
      echo "deps: WARNING: only $((free_kb / 1024)) MiB free on /; CUDA's nvcc needs ~6 GB: not installing it" >&2
    else
      bash "$(dirname "$0")/cuda.sh"
    fi
  fi
fi
