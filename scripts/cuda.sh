#!/usr/bin/env bash
# scripts/cuda.sh: install nvcc (CUDA 11.8, Debian bookworm non-free) idempotently.
#
# Used by `make hdrcheck` / `make gpu` to compile the device API into fatbins
# (sm_90 SASS + compute_90 PTX). Nothing here needs a GPU.
#
# Skips everything when `nvcc --version` already reports 11.8 or newer.
# Otherwise: adds a private apt source (contrib non-free non-free-firmware) on
# the same mirror the machine already uses, runs apt-get update and installs
# nvidia-cuda-toolkit (nvcc, cuobjdump, ptxas, fatbinary; Debian's nvcc wrapper
# drives g++-11). Measured here: ~140-150 s, ~5.5 GB on /.
#
# Environment: GOSHMEM_CUDA_FORCE=1 reinstalls even when nvcc is present.
set -euo pipefail

want_major=11
want_minor=8

nvcc_ok() {
    command -v nvcc >/dev/null 2>&1 || return 1
    local v
    v=$(nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9]*\)\.\([0-9]*\).*/\1 \2/p' | head -1)
    [ -n "$v" ] || return 1
    set -- $v
    [ "$1" -gt "$want_major" ] || { [ "$1" -eq "$want_major" ] && [ "$2" -ge "$want_minor" ]; }
}

if [ "${GOSHMEM_CUDA_FORCE:-0}" != 1 ] && nvcc_ok; then
    echo "cuda.sh: $(nvcc --version | grep release) already installed"
    exit 0
fi

if [ "$(id -u)" != 0 ]; then
    echo "cuda.sh: need root to install nvidia-cuda-toolkit (apt-get)" >&2
    exit 1
fi

# Reuse the mirror this machine already uses for Debian main.
mirror=""
for f in /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list; do
    [ -r "$f" ] || continue
    # active lines only (deb822 "URIs:" or one-line "deb URL"), never comments
    mirror=$(grep -E '^[[:space:]]*(URIs:|deb[[:space:]])' "$f" | grep -Eo 'https?://[^ ]+/debian/?' |
        grep -v security | head -1 || true)
    [ -n "$mirror" ] && break
done
mirror=${mirror:-http://deb.debian.org/debian}
mirror=${mirror%/}
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")

src=/etc/apt/sources.list.d/goshmem-nonfree.sources
want="Types: deb
URIs: $mirror
Suites: $codename $codename-updates
Components: contrib non-free non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
if [ ! -f "$src" ] || [ "$(cat "$src")" != "$want" ]; then
    printf '%s\n' "$want" >"$src"
    echo "cuda.sh: wrote $src ($mirror $codename contrib non-free)"
fi

start=$(date +%s)
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
cand=$(apt-cache policy nvidia-cuda-toolkit | awk '/Candidate:/ {print $2}')
if [ -z "$cand" ] || [ "$cand" = "(none)" ]; then
    echo "cuda.sh: nvidia-cuda-toolkit has no candidate after adding $src" >&2
    exit 1
fi
echo "cuda.sh: installing nvidia-cuda-toolkit $cand"
apt-get install -y -qq --no-install-recommends nvidia-cuda-toolkit >/dev/null
echo "cuda.sh: done in $(( $(date +%s) - start )) s: $(nvcc --version | grep release)"
nvcc_ok || { echo "cuda.sh: nvcc older than $want_major.$want_minor" >&2; exit 1; }
