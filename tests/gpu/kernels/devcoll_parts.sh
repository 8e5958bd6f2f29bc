#!/usr/bin/env bash
# tests/gpu/kernels/devcoll_parts.sh DIR: checks the parts of devcoll.cu that
# `make gpucoll` built into DIR (devcoll_<k>.fatbin and devcoll_remote_<k>.fatbin,
# k = 0 .. DEVCOLL_NPARTS-1): in each set, every kernel of the file is an
# entry of exactly one part and no part has a kernel the file does not
# (devtest looks each kernel up across the parts of -coll). Needs nvcc and
# cuobjdump.
set -euo pipefail
cd "$(dirname "$0")/../../.."
dir=${1:?usage: tests/gpu/kernels/devcoll_parts.sh DIR}
src=tests/gpu/kernels/devcoll.cu
n=$(sed -n 's/^#define DEVCOLL_NPARTS \([0-9]*\).*/\1/p' "$src")
[ -n "$n" ] || { echo "devcoll_parts: no DEVCOLL_NPARTS in $src" >&2; exit 1; }
# the file's kernels: the __global__ functions of the whole file, preprocessed
want=$(nvcc -std=c++17 -Iinclude -E "$src" | grep -v '^#' | tr '\n' ' ' |
    grep -o '__attribute__((global)) *void *[A-Za-z_0-9]*' | awk '{print $NF}' | sort)
[ -n "$want" ] || { echo "devcoll_parts: found no kernel in $src" >&2; exit 1; }
fail=0
for set in devcoll devcoll_remote; do
    got=""
    for k in $(seq 0 $((n - 1))); do
        f=$dir/${set}_$k.fatbin
        [ -s "$f" ] || { echo "devcoll_parts: $f missing (make gpucoll builds it)"; fail=1; continue; }
        got+=$(cuobjdump -symbols "$f" | awk -v f="$f" '$1 == "STT_FUNC" && $3 == "STO_ENTRY" {print $4, f}')$'\n'
    done
    for name in $want; do
        in=$(awk -v k="$name" '$1 == k {printf " %s", $2}' <<<"$got")
        case $(wc -w <<<"$in") in
        1) ;;
        0) echo "devcoll_parts: kernel $name is in no part of $dir/${set}_<k>.fatbin"; fail=1 ;;
        *) echo "devcoll_parts: kernel $name is in several parts:$in"; fail=1 ;;
        esac
    done
    extra=$(awk 'NF == 2 {print $1}' <<<"$got" | sort -u | comm -23 - <(echo "$want"))
    [ -z "$extra" ] || { echo "devcoll_parts: kernels in $dir/${set}_<k>.fatbin that $src does not define: $extra"; fail=1; }
done
[ $fail = 0 ] || exit 1
echo "devcoll_parts: $(wc -w <<<"$want") kernels of $src, each in one of $n parts of $dir/devcoll_<k>.fatbin and of devcoll_remote_<k>.fatbin"
