package main

import (
	"fmt"
	"io"
	"strings"
)

// descriptions say what each row name measures (goshmem's calls; the
// oshbench rows of the same name measure the OpenSHMEM equivalents).
var descriptions = map[string]string{
	"put_lat":              "Put + Quiet, PE 0 -> PE 1 (shmem_putmem + shmem_quiet)",
	"get_lat":              "Get, PE 0 <- PE 1 (shmem_getmem)",
	"p_lat":                "P int64 + Quiet (shmem_long_p + shmem_quiet)",
	"g_lat":                "G int64 (shmem_long_g)",
	"pingpong_p":           "P + WaitUntil ping-pong, round trip (shmem_long_p + shmem_long_wait_until)",
	"pingpong_putsignal":   "PutSignal 8 B + SignalWaitUntil ping-pong, round trip",
	"pingpong_p_localpoll": "diagnostic: P + a bare atomic load loop on Local() instead of WaitUntil, round trip",
	"amo_fadd":             "AtomicFetchAdd int64 (shmem_long_atomic_fetch_add)",
	"barrier":              "BarrierAll, PE 0's time (shmem_barrier_all)",
	"put_bw":               "window of 64 PutNBI + one Quiet; latency = one window; GB/s = 1e9 B/s",
	"iput_bw":              "window of 16 IPut int64 at stride 2 (dst and src) + one Quiet (shmem_long_iput); GB/s of elements moved",
	"iget_bw":              "window of 16 IGet int64 at stride 2 (dst and src) (shmem_long_iget); GB/s of elements moved",
	"alloc_free":           "Alloc[byte] 1 MiB + Free, collective, PE 0's time",
	"bcast":                "Broadcast from PE 0 + BarrierAll, every PE, PE 0's time (shmem_broadcast64 + shmem_barrier_all)",
	"reduce_sum_int64":     "Reduce OpSum int64 + BarrierAll (shmem_long_sum_to_all)",
	"reduce_sum_float64":   "Reduce OpSum float64 + BarrierAll (shmem_double_sum_to_all)",
	"fcollect":             "FCollect + BarrierAll; size per PE (shmem_fcollect64)",
	"collect":              "Collect (the same n everywhere) + BarrierAll; size per PE (shmem_collect64)",
	"alltoall":             "AllToAll + BarrierAll; size per destination PE (shmem_alltoall64)",
	"alltoalls":            "AllToAllStrided int64, strides 2 + BarrierAll; payload per destination PE (shmem_alltoalls64)",
	"inscan_sum_int64":     "SumInScan int64 + BarrierAll (shmem_long_sum_inscan: OpenSHMEM 1.6)",
	"exscan_sum_int64":     "SumExScan int64 + BarrierAll (shmem_long_sum_exscan: OpenSHMEM 1.6)",
	"launch":               "device mode: host cost of one launch of an empty kernel (bursts of 128, queue never full)",
	"launch_b2b":           "device mode: back-to-back launches of an empty kernel (bounded by the GPU retiring them)",
	"launch_sync":          "device mode: host launch of an empty kernel + Synchronize",
	"alloc_grow":           "device mode: AllocDevice that grows the GPU heap (new chunk on every PE), PE 0's time",
	"alloc_fit":            "device mode: AllocDevice inside the mapped GPU heap, PE 0's time",
	"alloc_series":         "device mode: mean AllocDevice of a series that keeps growing the GPU heap (a growth, then the calls that fit in what it mapped), PE 0's time",
	"cumemalloc":           "device mode: cuMemAlloc of the same size, every PE at once, PE 0's time",
	"stream_settled":       "device mode: ReduceOnStream of 16 B + Stream.Synchronize, one by one, while no GPU heap preparation runs",
	"stream_in_prep":       "device mode: ReduceOnStream of 16 B + Stream.Synchronize, one by one, while the GPU heap's next growth is prepared in the background",
	"put_on_stream_reg":    "device mode: PutOnStream PE 0 -> PE 1 from a RegisterDevice'd cuMemAlloc, per call",
	"put_on_stream_heap":   "device mode: PutOnStream PE 0 -> PE 1 from an AllocDevice array, per call",
	"memcpy_dtod":          "device mode: cuMemcpyDtoD of the registered buffer on this GPU, per call",
	"memcpy_peer":          "device mode: cuMemcpyPeer of the registered buffer to the peer's GPU, per call",
}

// TableWriter prints rows as NVSHMEM-perftest-shaped blocks: one block per
// benchmark name, one line per size.
type TableWriter struct {
	w    io.Writer
	last string
}

// NewTableWriter returns a writer on w.
func NewTableWriter(w io.Writer) *TableWriter { return &TableWriter{w: w} }

// Write prints one row, opening a new block when the name changes.
func (t *TableWriter) Write(r Row) {
	key := r.Series() + " " + r.Name
	if key != t.last {
		t.last = key
		desc := descriptions[r.Name]
		if desc == "" {
			desc = r.Name
		}
		fmt.Fprintf(t.w, "#\n# %s %s: %s\n", r.Series(), r.Name, desc)
		fmt.Fprintf(t.w, "%12s  %-7s %9s %12s %12s %10s  %s\n",
			"size(B)", "scope", "iters", "latency(us)", "p99(us)", "BW(GB/s)", "timing")
	}
	scope := r.Scope
	if scope == "" {
		scope = "-"
	}
	bw := "-"
	if r.BWGBs > 0 {
		bw = fmt.Sprintf("%.3f", r.BWGBs)
	}
	fmt.Fprintf(t.w, "%12d  %-7s %9d %12.3f %12.3f %10s  %s\n",
		r.Size, scope, r.Iters, r.MedianUS, r.P99US, bw, r.Timing)
}

// JSONWriter prints rows as JSON lines.
type JSONWriter struct{ w io.Writer }

// Write prints one row as a JSON line.
func (j JSONWriter) Write(r Row) {
	b := r.MarshalLine()
	b = append(b, '\n')
	_, _ = j.w.Write(b)
}

// RowWriter is TableWriter or JSONWriter.
type RowWriter interface{ Write(Row) }

// fmtSize prints a byte count the short way: 8, 4K, 1M.
func fmtSize(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%dM", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%dK", n>>10)
	}
	return fmt.Sprint(n)
}

// padRight and padLeft pad by runes (the tables use ÷, ≤, ×).
func padRight(s string, n int) string {
	if k := n - len([]rune(s)); k > 0 {
		return s + strings.Repeat(" ", k)
	}
	return s
}

func padLeft(s string, n int) string {
	if k := n - len([]rune(s)); k > 0 {
		return strings.Repeat(" ", k) + s
	}
	return s
}
