#!/usr/bin/env bash
# Installs what goshmem needs on Debian 12 (idempotent: it installs only what is missing).
#   scripts/deps.sh          build and test dependencies (OpenMPI, libfabric, pkg-config, gcc)
# Go itself is expected at /usr/local/go or on PATH; Go modules come from the module proxy.
set -euo pipefail

pkgs=(openmpi-bin libopenmpi-dev libfabric-dev pkg-config gcc make)

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
  echo "deps: no Go toolchain found; install Go >= 1.22 and put it on PATH" >&2
  exit 1
fi
