#!/usr/bin/env bash
# Prints the hash of lib.fatbin's inputs (run from the repository root):
# sha256 of every input, in byte order of its path, as "path\n" then its
# bytes. gpulib_test.go computes the same (inputHash) and compares it with
# the committed lib.fatbin.sha256.
set -euo pipefail
{ echo gpulib/lib.cu; echo internal/gpulib/lib.h; echo include/goshmem.h; find include/goshmem -name '*.h'; } |
	LC_ALL=C sort | while read -r f; do printf '%s\n' "$f"; cat "$f"; done | sha256sum | cut -d' ' -f1
