package main

import (
	"fmt"
	"io"
	"strings"
)

// Dataset is goshmem's rows and the peers' rows of one run.
type Dataset struct {
	Ours      []Row
	Peers     map[string][]Row // by Row.Series()
	PeerOrder []string         // series in the order first seen
	// Report options: skip the headline table; list only the rows that
	// some peer also has.
	NoHeadlines, MatchedOnly bool
}

// NewDataset groups peer rows by series. Rows of lib "goshmem" among the
// peers are kept as a peer series too (e.g. another timing mode), under
// their series name.
func NewDataset(ours []Row, peers ...[]Row) Dataset {
	d := Dataset{Ours: ours, Peers: map[string][]Row{}}
	for _, rows := range peers {
		for _, r := range rows {
			s := r.Series()
			if _, ok := d.Peers[s]; !ok {
				d.PeerOrder = append(d.PeerOrder, s)
			}
			d.Peers[s] = append(d.Peers[s], r)
		}
	}
	return d
}

// findScope returns the row of series (or ours, when series is "") with
// that name and size; the last one wins if a file holds repeats. It also
// matches the scope (thread, warp, block) when both scope and the row's
// scope are set and are not "-": device rows of one name and size differ
// by scope, host and oshbench rows have one.
func (d Dataset) findScope(series, name string, size int64, scope string) (Row, bool) {
	rows := d.Ours
	if series != "" {
		rows = d.Peers[series]
	}
	var out Row
	ok := false
	for _, r := range rows {
		if r.Name == name && r.Size == size && scopeMatch(scope, r.Scope) {
			out, ok = r, true
		}
	}
	return out, ok
}

func scopeMatch(want, have string) bool {
	return want == "" || want == "-" || have == "" || have == "-" || want == have
}

// isDevice reports whether the rows are device-mode rows (transport cuda).
func isDevice(rows []Row) bool {
	for _, r := range rows {
		if r.Transport == "cuda" {
			return true
		}
	}
	return false
}

// displayName is the row's name, with the scope appended for warp and
// block rows (device mode), so a table shows put_lat/warp.
func displayName(r Row) string {
	if r.Scope == "warp" || r.Scope == "block" {
		return r.Name + "/" + r.Scope
	}
	return r.Name
}

// Ratio compares ours with peer, always as "goshmem ÷ peer" of the row's
// figure of merit: time for latency rows (< 1: goshmem is faster), bandwidth
// for the _bw rows (> 1: goshmem is faster). ok is false when either value is
// missing or zero.
func Ratio(ours, peer Row) (ratio float64, ok bool) {
	if ours.IsBandwidth() {
		return bwRatio(ours, peer)
	}
	if ours.MedianUS <= 0 || peer.MedianUS <= 0 {
		return 0, false
	}
	return ours.MedianUS / peer.MedianUS, true
}

// bwRatio is goshmem's bandwidth ÷ the peer's, for any row.
func bwRatio(ours, peer Row) (float64, bool) {
	if ours.BWGBs <= 0 || peer.BWGBs <= 0 {
		return 0, false
	}
	return ours.BWGBs / peer.BWGBs, true
}

// value is the row's figure of merit with its unit.
func value(r Row) string {
	if r.IsBandwidth() {
		return fmtBW(r)
	}
	return fmtUS(r.MedianUS)
}

// fmtBW is the row's bandwidth with its unit.
func fmtBW(r Row) string { return fmt.Sprintf("%.2f GB/s", r.BWGBs) }

func fmtUS(us float64) string {
	switch {
	case us >= 100:
		return fmt.Sprintf("%.0f us", us)
	case us >= 10:
		return fmt.Sprintf("%.1f us", us)
	}
	return fmt.Sprintf("%.3f us", us)
}

func fmtRatio(x float64) string {
	switch {
	case x >= 10:
		return fmt.Sprintf("%.1fx", x)
	case x >= 0.1:
		return fmt.Sprintf("%.2fx", x)
	}
	return fmt.Sprintf("%.3fx", x)
}

// grid is a table of cells rendered as aligned text or as Markdown.
type grid struct {
	head  []string
	right []bool // right-align column i
	rows  [][]string
}

func (g *grid) add(cells ...string) { g.rows = append(g.rows, cells) }

func (g *grid) widths() []int {
	w := make([]int, len(g.head))
	for _, row := range append([][]string{g.head}, g.rows...) {
		for i, c := range row {
			w[i] = max(w[i], len([]rune(c)))
		}
	}
	return w
}

func (g *grid) text(out io.Writer) {
	w := g.widths()
	line := func(row []string) {
		var b strings.Builder
		for i, c := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			if g.right[i] {
				b.WriteString(padLeft(c, w[i]))
			} else {
				b.WriteString(padRight(c, w[i]))
			}
		}
		fmt.Fprintln(out, strings.TrimRight(b.String(), " "))
	}
	line(g.head)
	sep := make([]string, len(w))
	for i := range w {
		sep[i] = strings.Repeat("-", w[i])
	}
	line(sep)
	for _, r := range g.rows {
		line(r)
	}
}

func (g *grid) markdown(out io.Writer) {
	esc := func(s string) string { return strings.ReplaceAll(s, "|", `\|`) }
	row := func(cells []string) {
		for i := range cells {
			cells[i] = esc(cells[i])
		}
		fmt.Fprintf(out, "| %s |\n", strings.Join(cells, " | "))
	}
	row(append([]string(nil), g.head...))
	sep := make([]string, len(g.head))
	for i := range sep {
		sep[i] = "---"
		if g.right[i] {
			sep[i] = "---:"
		}
	}
	fmt.Fprintf(out, "| %s |\n", strings.Join(sep, " | "))
	for _, r := range g.rows {
		row(append([]string(nil), r...))
	}
}

// RatioGrid is every goshmem row against every peer series that has the
// same (name, size): the peer's value and goshmem ÷ peer.
func RatioGrid(d Dataset) *grid {
	g := &grid{head: []string{"name", "size", "goshmem"}, right: []bool{false, true, true}}
	for _, s := range d.PeerOrder {
		g.head = append(g.head, s, "ratio vs "+s)
		g.right = append(g.right, true, true)
	}
	for _, r := range d.Ours {
		cells := []string{displayName(r), fmtSize(r.Size), value(r)}
		matched := false
		for _, s := range d.PeerOrder {
			p, ok := d.findScope(s, r.Name, r.Size, r.Scope)
			if !ok {
				cells = append(cells, "-", "-")
				continue
			}
			matched = true
			ratio, ok := Ratio(r, p)
			rs := "-"
			if ok {
				rs = fmtRatio(ratio)
			}
			cells = append(cells, value(p), rs)
		}
		if matched || !d.MatchedOnly {
			g.add(cells...)
		}
	}
	return g
}

// Headline is one of the targets.
type Headline struct {
	Label string
	Name  string
	Size  int64
	// PeerLib selects the peer series compared ("openshmem" matches
	// openshmem/heap and openshmem/data); empty for an absolute target.
	PeerLib string
	// Max: the ratio (or absolute microseconds) must be <= Target;
	// otherwise >= Target.
	Max    bool
	Target float64
	// Scope selects device rows of that scope ("" matches any).
	Scope string
	// BW compares bandwidth (goshmem ÷ peer, higher is better) in a row
	// that is otherwise compared by time.
	BW bool
}

// Headlines are the targets of the performance issue.
var Headlines = []Headline{
	{Label: "put 8 B + quiet", Name: "put_lat", Size: 8, PeerLib: "openshmem", Max: true, Target: 0.1},
	{Label: "p + wait_until ping-pong (round trip)", Name: "pingpong_p", Size: 8, PeerLib: "openshmem", Max: true, Target: 0.35},
	{Label: "p + wait_until ping-pong vs floor", Name: "pingpong_p", Size: 8, PeerLib: "floor", Max: true, Target: 1.15},
	// The same 15% against the floor of the same shape: a p + wait_until
	// round trip touches two lines (one in each PE's heap), the floor above
	// bounces one; bench/oshmem/floor.c measures both.
	{Label: "p + wait_until ping-pong vs 2-line floor", Name: "pingpong_p", Size: 8, PeerLib: "floor/2line", Max: true, Target: 1.15},
	{Label: "barrier_all", Name: "barrier", Size: 0, PeerLib: "openshmem", Max: true, Target: 0.7},
	{Label: "1 MiB put bandwidth (put_bw)", Name: "put_bw", Size: 1 << 20, PeerLib: "openshmem", Max: false, Target: 0.9},
	{Label: "1 MiB strided put bandwidth, stride 2 (iput_bw)", Name: "iput_bw", Size: 1 << 20, PeerLib: "openshmem", Max: false, Target: 1.0},
	{Label: "1 MiB strided get bandwidth, stride 2 (iget_bw)", Name: "iget_bw", Size: 1 << 20, PeerLib: "openshmem", Max: false, Target: 1.0},
	{Label: "Alloc+Free 1 MiB (absolute)", Name: "alloc_free", Size: 1 << 20, Max: true, Target: 50},
}

// DeviceHeadlines are the device-mode targets (rows with transport cuda),
// against NVSHMEM measured in the same run on the same GPU, the CUDA copy
// of the same size, and the absolute launch cost.
var DeviceHeadlines = []Headline{
	{Label: "device putmem 8 B + quiet (thread)", Name: "put_lat", Size: 8, Scope: "thread", PeerLib: "nvshmem", Max: true, Target: 0.6},
	{Label: "device p + wait_until ping-pong (round trip)", Name: "pingpong_p", Size: 8, Scope: "thread", PeerLib: "nvshmem", Max: true, Target: 0.8},
	{Label: "device barrier_all (thread)", Name: "barrier", Size: 0, Scope: "thread", PeerLib: "nvshmem", Max: true, Target: 0.8},
	{Label: "device barrier_all (block)", Name: "barrier", Size: 0, Scope: "block", PeerLib: "nvshmem", Max: true, Target: 0.8},
	{Label: "put bandwidth block 1 MiB", Name: "put_bw", Size: 1 << 20, Scope: "block", PeerLib: "nvshmem", Max: false, Target: 0.95},
	{Label: "put bandwidth block 16 MiB", Name: "put_bw", Size: 16 << 20, Scope: "block", PeerLib: "nvshmem", Max: false, Target: 0.95},
	{Label: "put bandwidth block 256 MiB", Name: "put_bw", Size: 256 << 20, Scope: "block", PeerLib: "nvshmem", Max: false, Target: 0.95},
	{Label: "put bandwidth block 1 MiB vs copy", Name: "put_bw", Size: 1 << 20, Scope: "block", PeerLib: "cudamemcpy", Max: false, Target: 0.9},
	{Label: "put bandwidth block 16 MiB vs copy", Name: "put_bw", Size: 16 << 20, Scope: "block", PeerLib: "cudamemcpy", Max: false, Target: 0.9},
	{Label: "put bandwidth block 256 MiB vs copy", Name: "put_bw", Size: 256 << 20, Scope: "block", PeerLib: "cudamemcpy", Max: false, Target: 0.9},
	{Label: "Go Launch of an empty kernel (absolute)", Name: "launch", Size: 0, Max: true, Target: 5},
}

// collRowNames are the collective rows (host -coll) that OpenSHMEM has
// too; the scan rows have no peer (oshmem implements OpenSHMEM 1.4).
var collRowNames = []string{"bcast", "reduce_sum_int64", "reduce_sum_float64", "fcollect", "collect", "alltoall", "alltoalls"}

// CollHeadlines are the collective targets at npes PEs: every row at most
// OpenSHMEM's time, and at 2 PEs the 1 MiB sum-reduces and alltoall at
// most 0.6x.
func CollHeadlines(npes int) []Headline {
	var hs []Headline
	if npes == 2 {
		for _, n := range []string{"reduce_sum_int64", "reduce_sum_float64", "alltoall"} {
			hs = append(hs, Headline{Label: n + " 1 MiB, 2 PEs", Name: n, Size: 1 << 20, PeerLib: "openshmem", Max: true, Target: 0.6})
		}
	}
	hs = append(hs, Headline{Label: "barrier", Name: "barrier", PeerLib: "openshmem", Max: true, Target: 1})
	for _, n := range collRowNames {
		for _, size := range collSizes {
			hs = append(hs, Headline{Label: fmt.Sprintf("%s %s", n, fmtSize(int64(size))), Name: n, Size: int64(size),
				PeerLib: "openshmem", Max: true, Target: 1})
		}
	}
	return hs
}

// isColl reports whether the rows are collective rows (host -coll).
func isColl(rows []Row) bool {
	for _, r := range rows {
		if r.Name == "bcast" {
			return true
		}
	}
	return false
}

// headlinesFor picks the host, collective or device targets by goshmem's
// rows.
func headlinesFor(d Dataset) []Headline {
	switch {
	case isDevice(d.Ours):
		hs := append(DeviceHeadlines[:len(DeviceHeadlines):len(DeviceHeadlines)], devCollHeadlines()...)
		return append(hs, ncclHeadlines(d)...)
	case isColl(d.Ours):
		return CollHeadlines(d.Ours[0].NPEs)
	}
	return Headlines
}

// Verdicts.
const (
	Pass = "PASS"
	Fail = "FAIL"
	NA   = "n/a"
)

// HeadlineResult is one headline against one peer series.
type HeadlineResult struct {
	Headline
	Peer    string // series, or "" for absolute
	Ours    Row
	PeerRow Row
	Ratio   float64 // or the absolute value in us
	Verdict string
}

// EvalHeadlines compares goshmem with every matching peer series.
func EvalHeadlines(d Dataset, hs []Headline) []HeadlineResult {
	var out []HeadlineResult
	for _, h := range hs {
		ours, haveOurs := d.findScope("", h.Name, h.Size, h.Scope)
		check := func(x float64) string {
			if (h.Max && x <= h.Target) || (!h.Max && x >= h.Target) {
				return Pass
			}
			return Fail
		}
		if h.PeerLib == "" {
			res := HeadlineResult{Headline: h, Ours: ours, Verdict: NA}
			if haveOurs {
				res.Ratio = ours.MedianUS
				res.Verdict = check(ours.MedianUS)
			}
			out = append(out, res)
			continue
		}
		matched := false
		for _, s := range d.PeerOrder {
			rows := d.Peers[s]
			if len(rows) == 0 || rows[0].Lib != h.PeerLib {
				continue
			}
			matched = true
			res := HeadlineResult{Headline: h, Peer: s, Ours: ours, Verdict: NA}
			if p, ok := d.findScope(s, h.Name, h.Size, h.Scope); ok && haveOurs {
				res.PeerRow = p
				ratio := Ratio
				if h.BW {
					ratio = bwRatio
				}
				if r, ok := ratio(ours, p); ok {
					res.Ratio = r
					res.Verdict = check(r)
				}
			}
			out = append(out, res)
		}
		if !matched {
			out = append(out, HeadlineResult{Headline: h, Peer: h.PeerLib + " (no data)", Ours: ours, Verdict: NA})
		}
	}
	return out
}

// HeadlineGrid renders EvalHeadlines.
func HeadlineGrid(rs []HeadlineResult) *grid {
	g := &grid{
		head:  []string{"headline", "goshmem", "peer", "peer value", "goshmem÷peer", "target", "verdict"},
		right: []bool{false, true, false, true, true, false, false},
	}
	prev := ""
	for _, r := range rs {
		val := value
		if r.BW {
			val = fmtBW
		}
		label, ours := r.Label, "-"
		if r.Ours.Name != "" {
			ours = val(r.Ours)
		}
		if label == prev {
			label, ours = "", ""
		}
		prev = r.Label
		cmp := "≥"
		if r.Max {
			cmp = "≤"
		}
		if r.PeerLib == "" {
			g.add(label, ours, "(absolute)", "-", "-", fmt.Sprintf("%s %g us", cmp, r.Target), r.Verdict)
			continue
		}
		pv, ratio := "-", "-"
		if r.PeerRow.Name != "" {
			pv = val(r.PeerRow)
		}
		if r.Verdict != NA {
			ratio = fmtRatio(r.Ratio)
		}
		g.add(label, ours, r.Peer, pv, ratio, fmt.Sprintf("%s %gx", cmp, r.Target), r.Verdict)
	}
	return g
}

// segNotes explains the peer series names.
var segNotes = map[string]string{
	"openshmem/heap":            "OpenSHMEM (oshmem/UCX), buffers from shmem_malloc: peers' heaps are mapped, so RMA is direct load/store",
	"openshmem/data":            "OpenSHMEM (oshmem/UCX), buffers in the static data segment: RMA goes through UCX (the issue's reference figures)",
	"floor":                     "C floor: two processes sharing one mapping (bench/oshmem/floor.c); nothing can beat it",
	"floor/copy":                "memory floor: glibc memcpy of the bytes a PE of a 2-PE alltoall writes (2 blocks) or a 2-PE sum-reduce reads and writes (one copy of the size), two processes at once (bench/coll/copyfloor.c)",
	"floor/2line":               "C floor of the same round trip with one line per process, each polled by its owner: the shape of any p + wait_until between two heaps",
	"goshmem/pinned-after-init": "goshmem under mpirun --bind-to none, measuring thread pinned after Init (-pin): Init sees both CPUs, so the spin policy is not the oversubscribed one",
	"goshmem/batch-timing":      "goshmem timing 100 operations per sample (-timing batch): the ~30 ns timer pair amortized away",
	"nvshmem":                   "NVSHMEM (GPU machine's Python package), the same kernels (bench/gpu/kernels.cuh) built against it, same run, same GPU",
	"floor/sys":                 "floor: 8 B store to the peer's mapping + __threadfence_system (fence.sc.sys), no library",
	"floor/gpu":                 "floor: 8 B store to the peer's mapping + __threadfence (fence.sc.gpu), no library",
	"cudamemcpy":                "cudaMemcpyAsync DtoD of the same size into the peer's buffer (nvshmem_ptr), timed with CUDA events",
	"cudart":                    "CUDA runtime <<<>>> launch of the same empty kernel from C++",
	"nccl":                      "NCCL (GPU machine's Python package) on the same stream shape (bench/gpu/nccl_perf.cu), one GPU per PE: ncclAllReduce, ncclBroadcast, ncclAllGather, grouped ncclSend/ncclRecv",
}

// WriteReport prints the headline table and the full ratio table, as text
// or Markdown.
func WriteReport(out io.Writer, d Dataset, markdown bool) {
	render := func(g *grid) {
		if markdown {
			g.markdown(out)
		} else {
			g.text(out)
		}
	}
	h1 := func(s string) {
		if markdown {
			fmt.Fprintf(out, "\n## %s\n\n", s)
		} else {
			fmt.Fprintf(out, "\n== %s ==\n\n", s)
		}
	}
	note := func(s string) {
		if markdown {
			fmt.Fprintf(out, "%s\n\n", s)
		} else {
			fmt.Fprintln(out, s)
		}
	}
	if !d.NoHeadlines {
		h1("Headline targets")
		note("goshmem÷peer: time ratio for latency rows (< 1: goshmem is faster), bandwidth ratio for the _bw rows (> 1: goshmem is faster).")
		if !markdown {
			fmt.Fprintln(out)
		}
		render(HeadlineGrid(EvalHeadlines(d, headlinesFor(d))))
	}
	h1("All rows: goshmem ÷ peer (same run, same machine)")
	note("Latency rows show median us and goshmem time ÷ peer time (< 1: goshmem is faster); the _bw rows show GB/s and goshmem BW ÷ peer BW (> 1: goshmem is faster).")
	if !markdown {
		fmt.Fprintln(out)
	}
	render(RatioGrid(d))
	if len(d.PeerOrder) > 0 {
		fmt.Fprintln(out)
		for _, s := range d.PeerOrder {
			if n := segNotes[s]; n != "" {
				if markdown {
					fmt.Fprintf(out, "- `%s`: %s\n", s, n)
				} else {
					fmt.Fprintf(out, "  %s: %s\n", s, n)
				}
			}
		}
	}
}
