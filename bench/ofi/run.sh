#!/usr/bin/env bash
# bench/ofi/run.sh: goshmem's ofi transport against raw libfabric, same
# provider, same machine, same run, interleaved.
#
# Each of ROUNDS rounds runs, back to back:
#   raw     rawfi: fi_writemsg 8 B + write-counter wait (no delivery
#           completion: the write completes once sent), target = a thread
#           in fi_cq_sread; and 64 x 1 MiB windows + counter wait
#   raw-dc  the same with FI_DELIVERY_COMPLETE and CQ completions: the
#           semantics goshmem's Put + Quiet needs (the data is at the target)
#   rawdcspin raw-dc with the target busy-polling its CQ (-t spin), as a
#           goshmem PE waiting in a barrier or WaitUntil drives its endpoint
#   goshmem goshmem-perf put_lat 8 B and put_bw 1 MiB, GOSHMEM_TRANSPORT=ofi,
#           mpirun -np 2
#   before  (when BEFORE names another goshmem-perf binary, e.g. one built
#           from an earlier commit) the same run of that binary
# and the summary takes, per row, the median over rounds of each round's
# median (a round disturbed by another process on this shared machine moves
# one sample, not the result), with the ratios goshmem / raw.
# The load average and the machine are written beside the numbers.
#
# Usage: bench/ofi/run.sh [OUTDIR]   (default: a temporary directory)
# Environment: PROV (tcp;ofi_rxm), ROUNDS (5), ITERS (10000), BEFORE (none).
set -euo pipefail
PROV=${PROV:-tcp;ofi_rxm}
ROUNDS=${ROUNDS:-5}
ITERS=${ITERS:-10000}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${1:-$(mktemp -d /tmp/goshmem-ofibench.XXXXXX)}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
cc -O2 -Wall -o "$OUT/rawfi" "$ROOT/bench/ofi/rawfi.c" -lfabric -lpthread
(cd "$ROOT/cmd/goshmem-perf" && go build -o "$OUT/goshmem-perf" .) # a module of its own

{
	echo "command: bench/ofi/run.sh $OUT (PROV=$PROV ROUNDS=$ROUNDS ITERS=$ITERS)"
	echo "date: $(date -u +%FT%TZ)"
	echo "host: $(uname -srm); $(nproc) CPUs online; $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
	echo "libfabric: $(fi_info --version 2>/dev/null | tr '\n' ' ')"
	echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ -n "${BEFORE:-}" ]; then echo "before: $BEFORE"; fi
} >"$OUT/machine.txt"

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
: >"$OUT/rows.txt" # round kind row value
for ((r = 1; r <= ROUNDS; r++)); do
	echo "== round $r/$ROUNDS (load $(cut -d' ' -f1 /proc/loadavg))"
	echo "round $r load average $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/load.txt"
	timeout 120 "$OUT/rawfi" -p "$PROV" -t thread -i "$ITERS" | tee "$OUT/raw-$r.log"
	timeout 120 "$OUT/rawfi" -p "$PROV" -d -c -t thread -i "$ITERS" | tee "$OUT/rawdc-$r.log"
	timeout 120 "$OUT/rawfi" -p "$PROV" -d -c -t spin -i "$ITERS" | tee "$OUT/rawdcspin-$r.log"
	kinds=goshmem
	if [ -n "${BEFORE:-}" ]; then kinds="goshmem before"; fi
	for g in $kinds; do
		bin="$OUT/goshmem-perf"
		[ "$g" = before ] && bin=$BEFORE
		GOSHMEM_TRANSPORT=ofi GOSHMEM_OFI_PROVIDER="$PROV" timeout 180 \
			mpirun --oversubscribe -np 2 -x GOSHMEM_TRANSPORT -x GOSHMEM_OFI_PROVIDER -x OMPI_ALLOW_RUN_AS_ROOT \
			"$bin" -json -only 'put_lat|put_bw' -iters "$ITERS" -minsize 8 -maxsize 1048576 \
			>"$OUT/$g-$r.jsonl" 2>"$OUT/$g-$r.log"
		# rows: put_lat 8 B median (us), put_bw 1 MiB (GB/s)
		sed -n 's/.*"name":"put_lat","size":8,.*"median_us":\([0-9.e+-]*\).*/\1/p' "$OUT/$g-$r.jsonl" | head -1 | awk -v r="$r" -v g="$g" '{print r, g, "lat8", $1}' >>"$OUT/rows.txt"
		sed -n 's/.*"name":"put_bw","size":1048576,.*"bw_gbs":\([0-9.e+-]*\).*/\1/p' "$OUT/$g-$r.jsonl" | head -1 | awk -v r="$r" -v g="$g" '{print r, g, "bw1m", $1}' >>"$OUT/rows.txt"
		echo "$g:"
		grep -E '"name":"put_(lat|bw)","size":(8|1048576),' "$OUT/$g-$r.jsonl" || true
	done
	for k in raw rawdc rawdcspin; do
		awk -v r="$r" -v k="$k" '/^put_lat/ {print r, k, "lat8", $8} /^put_bw/ {print r, k, "bw1m", $(NF-3)}' "$OUT/$k-$r.log" >>"$OUT/rows.txt"
	done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >>"$OUT/machine.txt"

# Median of the per-round medians, and the ratios.
awk '
function med(key,   n, i, j, t, a) {
	n = split(vals[key], a, " ")
	for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++) if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ vals[$2 " " $3] = vals[$2 " " $3] " " $4; all[$2 " " $3] = all[$2 " " $3] sprintf(" %.3g", $4) }
END {
	printf "%-8s %-5s %12s   %s\n", "kind", "row", "median", "per round"
	for (k in vals) printf "%-8s %-5s %12.3f   %s\n", substr(k, 1, index(k, " ") - 1), substr(k, index(k, " ") + 1), med(k), all[k] | "sort"
	close("sort")
	gl = med("goshmem lat8"); rl = med("raw lat8"); dl = med("rawdc lat8"); sl = med("rawdcspin lat8")
	gb = med("goshmem bw1m"); rb = med("raw bw1m"); db = med("rawdc bw1m")
	printf "\nput 8 B + quiet: goshmem %.2f us; / raw fi_write + counter wait %.2f us = %.2fx (target <= 1.2x); / raw with FI_DELIVERY_COMPLETE %.2f us = %.2fx; / the same, target spinning %.2f us = %.2fx\n", gl, rl, gl / rl, dl, gl / dl, sl, gl / sl
	printf "put 1 MiB bandwidth: goshmem %.3f GB/s; / raw %.3f GB/s = %.2fx (target >= 0.9x); / raw with FI_DELIVERY_COMPLETE %.3f GB/s = %.2fx\n", gb, rb, gb / rb, db, gb / db
	if (("before lat8") in vals) printf "before (BEFORE): put 8 B + quiet %.2f us (%.2fx raw); put 1 MiB bandwidth %.3f GB/s\n", med("before lat8"), med("before lat8") / rl, med("before bw1m")
}' "$OUT/rows.txt" | tee "$OUT/summary.txt"
echo "results in $OUT"
