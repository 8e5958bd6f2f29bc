#!/usr/bin/env bash
# bench/ofi/run.sh: goshmem's ofi transport against raw libfabric, same
# provider, same machine, same run. Prints the raw floor (rawfi: fi_writemsg
# 8 B + completion wait, and 64 x 1 MiB windows) and goshmem-perf's
# put_lat/put_bw with GOSHMEM_TRANSPORT=ofi under mpirun -np 2.
# Usage: bench/ofi/run.sh [provider]   (default tcp;ofi_rxm)
set -euo pipefail
PROV=${1:-tcp;ofi_rxm}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-$(mktemp -d /tmp/goshmem-ofibench.XXXXXX)}
cc -O2 -Wall -o "$OUT/rawfi" "$ROOT/bench/ofi/rawfi.c" -lfabric -lpthread
(cd "$ROOT" && go build -o "$OUT/goshmem-perf" ./cmd/goshmem-perf)
echo "== raw libfabric ($PROV): counter vs CQ wait, with and without FI_DELIVERY_COMPLETE; target = progress thread"
for a in "" "-c" "-d -c"; do "$OUT/rawfi" -p "$PROV" $a -t thread -i 10000; done
echo "== raw, target busy-polling its CQ"
"$OUT/rawfi" -p "$PROV" -d -c -t spin -i 10000
echo "== goshmem over ofi ($PROV): put_lat + put_bw"
OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GOSHMEM_TRANSPORT=ofi GOSHMEM_OFI_PROVIDER="$PROV" \
	mpirun --oversubscribe -np 2 -x GOSHMEM_TRANSPORT -x GOSHMEM_OFI_PROVIDER -x OMPI_ALLOW_RUN_AS_ROOT \
	"$OUT/goshmem-perf" -only 'put_lat|put_bw' -iters 10000 -maxsize 1048576
