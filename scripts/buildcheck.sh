#!/usr/bin/env bash
# scripts/buildcheck.sh: building a goshmem program needs Go and a C compiler,
# nothing else, and the program links only libc.
#
# In a private mount namespace, /usr is overlaid and every file of the native
# packages goshmem loads at run time is removed from the overlay (MPI,
# libfabric, rdma-core, CUDA: headers, libraries, pkg-config files), with
# pkg-config itself. There it builds examples/hello and runs it as a 1-PE
# job. Go's build cache keys a cgo package by its own files and CGO_CFLAGS,
# not by the system headers it includes, so the build sets a CGO_CFLAGS of its
# own: every cgo package is compiled in the namespace (or comes from an earlier
# compile there of the same sources), and pure Go packages come from the cache. Outside, `ldd` of the binary must
# list only libc-family libraries. The host's files are never touched.
# Needs root (unshare, overlayfs); CI runs as root. Without root it skips,
# saying so, unless GOSHMEM_REQUIRE_BUILDCHECK=1.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/usr/local/go/bin:$PATH

if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null; then
	echo "buildcheck: SKIP: needs root and unshare(1) for a mount namespace"
	[ "${GOSHMEM_REQUIRE_BUILDCHECK:-0}" != 1 ] || exit 1
	exit 0
fi

# The packages whose files the build must not need. Missing ones are fine.
pkgs=(libfabric-dev libfabric1 libibverbs-dev libibverbs1 ibverbs-providers librdmacm1 librdmacm-dev
	libopenmpi-dev libopenmpi3 openmpi-bin openmpi-common libmpich-dev libmpich12 mpich
	nvidia-cuda-dev nvidia-cuda-toolkit libcuda1 libnvidia-ptxjitcompiler1 libcudart11.0
	pkg-config pkgconf pkgconf-bin libpkgconf3)
list=$(mktemp)
work=$(mktemp -d)
trap 'rm -rf "$list" "$work"' EXIT
for p in "${pkgs[@]}"; do
	dpkg -L "$p" 2>/dev/null | grep '^/usr/' >>"$list" || true
done
echo "buildcheck: hiding $(wc -l <"$list") paths of: $(for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 && printf '%s ' "$p"; done)"

out=$work/hello
mkdir -p "$work/upper" "$work/ovl"
unshare --mount --propagation private bash -euo pipefail -c '
	list=$1 work=$2 out=$3
	mount -t overlay overlay -o lowerdir=/usr,upperdir="$work/upper",workdir="$work/ovl" /usr
	# Files only (directories shared with other packages stay); then the
	# symlinks and directories the packages alone own.
	while read -r f; do
		if [ -f "$f" ] || [ -L "$f" ]; then rm -f "$f"; fi
	done <"$list"
	tac "$list" | while read -r d; do if [ -d "$d" ]; then rmdir "$d" 2>/dev/null || true; fi; done
	for h in /usr/include/rdma/fabric.h /usr/include/infiniband/verbs.h /usr/include/infiniband/mlx5dv.h \
		/usr/include/cuda.h /usr/include/x86_64-linux-gnu/openmpi/mpi.h /usr/lib/x86_64-linux-gnu/openmpi/include/mpi.h; do
		if [ -e "$h" ]; then echo "buildcheck: FAIL: $h still visible in the namespace" >&2; exit 1; fi
	done
	if command -v pkg-config >/dev/null; then echo "buildcheck: FAIL: pkg-config still on PATH" >&2; exit 1; fi
	for l in libfabric.so.1 libibverbs.so.1 libmlx5.so.1 libmpi.so.40 libmpich.so.12 libcuda.so.1; do
		if ldconfig -p | grep -q "$l" && [ -e "$(ldconfig -p | awk -v l="$l" "\$1==l {print \$NF; exit}")" ]; then
			echo "buildcheck: FAIL: $l still loadable in the namespace" >&2; exit 1
		fi
	done
	CGO_CFLAGS="-O2 -g -DGOSHMEM_BUILDCHECK=1" go build -o "$out" ./examples/hello
	echo "buildcheck: examples/hello built with no MPI, libfabric, rdma-core, CUDA or pkg-config present"
	"$out" >"$work/run.txt" 2>&1 || { cat "$work/run.txt" >&2; echo "buildcheck: FAIL: hello did not run as a 1-PE job there" >&2; exit 1; }
	echo "buildcheck: and ran there as a 1-PE job: $(head -1 "$work/run.txt")"
' _ "$list" "$work" "$out"

bad=$(ldd "$out" | awk '{print $1}' | grep -Ev '^(linux-vdso\.so\.1|libc\.so\.6|/lib64/ld-linux-x86-64\.so\.2|libpthread\.so\.0|libdl\.so\.2|libm\.so\.6|librt\.so\.1|libresolv\.so\.2)$' || true)
echo "buildcheck: ldd examples/hello: $(ldd "$out" | awk '{print $1}' | tr '\n' ' ')"
if [ -n "$bad" ]; then
	echo "buildcheck: FAIL: examples/hello links more than libc: $bad" >&2
	exit 1
fi
echo "buildcheck: OK: examples/hello is $(stat -c %s "$out") bytes and links only libc-family libraries"
