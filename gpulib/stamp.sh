#!/usr/bin/env bash
# Prints the hash of lib.fatbin's inputs (run from the repository root):
# sha256 of every input, in byte order of its path, as "path\n" then its
# bytes. The inputs: lib.cu, lib.h, goshmem.h and every device header but
# the NVSHMEM compat layer (nvshmem_compat.h, nvshmem_host.h: for ported
# programs; lib.cu includes neither). gpulib_test.go computes the same
# (inputHash) and compares it with the committed lib.fatbin.sha256.
set -euo pipefail
{ echo gpulib/lib.cu; echo internal/gpulib/lib.h; echo include/goshmem.h
  find include/goshmem -name '*.h' ! -name 'nvshmem_compat.h' ! -name 'nvshmem_host.h'; } |
	LC_ALL=C sort | while read -r f; do printf '%s\n' "$f"; cat "$f"; done | sha256sum | cut -d' ' -f1
