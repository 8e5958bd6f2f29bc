#!/usr/bin/env bash
# scripts/cuda.sh: install nvcc (CUDA 11.8, Debian bookworm non-free) idempotently.
#
# Used by `make hdrcheck` / `make gpu` to compile the device API into fatbins
# (sm_90 SASS + compute_90 PTX). Nothing here needs a GPU.
#
# Skips everything when `nvcc --version` already reports 11.8 or newer.
# Otherwise: adds a private apt source (contrib non-free non-free-firmware) on
# the mirror the machine's apt configuration already uses for Debian main of
# the running suite (stops, saying so, when it names none), runs apt-get update
# and installs nvidia-cuda-toolkit (nvcc, cuobjdump, ptxas, fatbinary; Debian's
# nvcc wrapper drives g++-11). Needs about 5.5 GB on /.
#
# Environment: GOSHMEM_CUDA_FORCE=1 reinstalls even when nvcc is present.
#
# Sourcing the file defines the functions without running anything (tests).

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

# debian_main_mirror APT_DIR SUITE prints the first URI that the apt
# configuration under APT_DIR (sources.list, sources.list.d/*.list one-line
# entries, sources.list.d/*.sources deb822 stanzas; the files apt itself reads)
# uses for binary packages of SUITE's main component, without a trailing
# slash; nothing when there is none. Comments, disabled stanzas, deb-src and
# other suites (SUITE-security, SUITE-updates) do not count.
debian_main_mirror() {
    local dir=$1 suite=$2 f uri
    local -a lists=() deb822=()
    [ -r "$dir/sources.list" ] && lists+=("$dir/sources.list")
    for f in "$dir"/sources.list.d/*.list; do [ -r "$f" ] && lists+=("$f"); done
    for f in "$dir"/sources.list.d/*.sources; do [ -r "$f" ] && deb822+=("$f"); done
    uri=""
    if [ ${#lists[@]} -gt 0 ]; then
        # deb [ options ] URI SUITE COMPONENT...
        uri=$(awk -v suite="$suite" '
            /^[[:space:]]*#/ || $1 != "deb" { next }
            {
                i = 2
                if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                u = $i; s = $(i + 1)
                if (s != suite) next
                for (j = i + 2; j <= NF; j++) if ($j == "main") { print u; exit }
            }' "${lists[@]}")
    fi
    if [ -z "$uri" ] && [ ${#deb822[@]} -gt 0 ]; then
        # Stanzas of "Key: value..." lines, separated by blank lines; a line
        # that starts with white space continues the previous key's value.
        uri=$(awk -v suite="$suite" '
            function reset() { deb = 0; insuite = 0; main = 0; enabled = 1; first = ""; key = "" }
            function flush() {
                if (!done && deb && insuite && main && enabled && first != "") { print first; done = 1 }
                reset()
            }
            function value(from,    j) {
                for (j = from; j <= NF; j++) {
                    if (key == "types:" && $j == "deb") deb = 1
                    if (key == "suites:" && $j == suite) insuite = 1
                    if (key == "components:" && $j == "main") main = 1
                    if (key == "uris:" && first == "") first = $j
                    if (key == "enabled:" && tolower($j) == "no") enabled = 0
                }
            }
            BEGIN { reset() }
            FNR == 1 { flush() }
            /^[[:space:]]*#/ { next }
            /^[[:space:]]*$/ { flush(); next }
            /^[[:space:]]/ { value(1); next }
            { key = tolower($1); value(2) }
            END { flush() }' "${deb822[@]}")
    fi
    printf '%s' "${uri%/}"
}

main() {
    if [ "${GOSHMEM_CUDA_FORCE:-0}" != 1 ] && nvcc_ok; then
        echo "cuda.sh: $(nvcc --version | grep release) already installed"
        exit 0
    fi

    if [ "$(id -u)" != 0 ]; then
        echo "cuda.sh: need root to install nvidia-cuda-toolkit (apt-get)" >&2
        exit 1
    fi

    local codename mirror
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    if [ -z "$codename" ]; then
        echo "cuda.sh: /etc/os-release names no VERSION_CODENAME: cannot tell which Debian suite to add non-free for" >&2
        exit 1
    fi
    # The non-free source goes on the mirror this machine already uses for
    # Debian main: no mirror is built into this script.
    mirror=$(debian_main_mirror /etc/apt "$codename")
    if [ -z "$mirror" ]; then
        echo "cuda.sh: the apt configuration (/etc/apt/sources.list, /etc/apt/sources.list.d/*.list, *.sources)" >&2
        echo "cuda.sh: names no Debian mirror for '$codename main'; add the machine's mirror there" >&2
        echo "cuda.sh: (e.g. a deb822 stanza with Types: deb, URIs: <mirror>, Suites: $codename, Components: main) and rerun" >&2
        exit 1
    fi

    local src=/etc/apt/sources.list.d/goshmem-nonfree.sources want
    want="Types: deb
URIs: $mirror
Suites: $codename $codename-updates
Components: contrib non-free non-free-firmware
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg"
    if [ ! -f "$src" ] || [ "$(cat "$src")" != "$want" ]; then
        printf '%s\n' "$want" >"$src"
        echo "cuda.sh: wrote $src ($mirror $codename contrib non-free)"
    fi

    local start cand
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
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -euo pipefail
    main "$@"
fi
