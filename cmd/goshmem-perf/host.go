package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// Defaults shared with bench/oshmem/oshbench.c.
const (
	bwWindow     = 64               // PutNBI per put_bw window
	bwTargetNS   = 50 * 1000 * 1000 // ~50 ms per put_bw size
	bwMaxWindows = 100000
	bwMinWindows = 10
	allocSize    = 1 << 20 // alloc_free
	lockRounds   = 10      // lock: timed rounds (the median is reported)
)

type hostOpts struct {
	iters, warmup, barrierIters int
	minSize, maxSize            int
	only                        *regexp.Regexp
	json                        bool
	plot, md                    string
	peers                       []string
	timing                      string // per-iter | batch
	batch                       int
	heap                        uint64
	variant                     string
	ctx                         bool // -ctx: the wait rows through the Context forms
	pin                         bool
	coll                        bool // -coll: the collective rows only
	collIters, collMaxSize      int
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

func parseHostFlags(args []string, stderr io.Writer) (hostOpts, error) {
	var o hostOpts
	fs := flag.NewFlagSet("host", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&o.iters, "iters", 100000, "iterations per latency row (sizes > 32 KiB scaled down like oshbench; >= 10000 for a stable median)")
	fs.IntVar(&o.warmup, "warmup", 1000, "warm-up iterations before each row")
	fs.IntVar(&o.barrierIters, "barrier-iters", -1, "iterations of barrier and alloc_free (-1: iters/10)")
	fs.IntVar(&o.minSize, "minsize", 8, "smallest size of put_lat/get_lat (put_bw starts at max(4096, minsize))")
	fs.IntVar(&o.maxSize, "maxsize", 4<<20, "largest size of put_lat/get_lat/put_bw")
	only := fs.String("only", "", "run only the rows whose name matches this `regexp`")
	fs.BoolVar(&o.json, "json", false, "JSON lines on stdout (the header goes to stderr)")
	fs.StringVar(&o.plot, "plot", "", "write a PNG plot to `file` (with the -peer series overlaid)")
	fs.StringVar(&o.md, "md", "", "write the ratio report as Markdown to `file` (needs -peer)")
	fs.Var((*multiFlag)(&o.peers), "peer", "peer JSON-lines `file` (bench/oshmem -json output); repeatable")
	fs.StringVar(&o.timing, "timing", "per-iter", "per-iter: time every operation (timer cost included, as oshbench); batch: time -batch operations per sample and report per-operation time")
	fs.IntVar(&o.batch, "batch", 100, "operations per sample with -timing batch")
	fs.StringVar(&o.variant, "variant", "", "label the rows as series goshmem/`name` (a non-default run)")
	fs.BoolVar(&o.ctx, "ctx", false, "run the wait rows (pingpong_p, pingpong_putsignal, barrier, lock) through the Context forms with a context that is never done; the rows are series goshmem/ctx unless -variant names another")
	fs.BoolVar(&o.pin, "pin", false, "after Init, pin the measuring thread of PE i to online CPU i mod n (diagnostic: run under mpirun --bind-to none, so Init sees every CPU, and still keep the PEs apart)")
	fs.BoolVar(&o.coll, "coll", false, "run the collective rows only (barrier, bcast, reduce, fcollect, collect, alltoall, alltoalls, scans at 8 B..-coll-maxsize per PE, op + barrier timed on PE 0), at any number of PEs")
	fs.IntVar(&o.collIters, "coll-iters", 2000, "iterations of a collective row up to 4 KiB (fewer above, at least 100)")
	fs.IntVar(&o.collMaxSize, "coll-maxsize", 1<<20, "largest collective row size in bytes per PE")
	heap := fs.Uint64("heap", 0, "symmetric heap bytes per PE (0: enough for -maxsize, unless GOSHMEM_SYMMETRIC_SIZE is set)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpirun --oversubscribe -np 2 goshmem-perf [host] [flags]\n"+
			"Rows: put_lat get_lat p_lat g_lat pingpong_p pingpong_putsignal amo_fadd barrier put_bw iput_bw iget_bw alloc_free lock\n"+
			"-coll rows: barrier bcast reduce_sum_int64 reduce_sum_float64 fcollect collect alltoall alltoalls inscan_sum_int64 exscan_sum_int64\n")
		fs.PrintDefaults()
	}
	re, err := parseFlags(fs, args, only)
	if err != nil {
		return o, err
	}
	o.only = re
	o.iters = max(o.iters, 1)
	o.warmup = max(o.warmup, 0)
	if o.barrierIters < 0 {
		o.barrierIters = o.iters / 10
	}
	o.barrierIters = max(o.barrierIters, 1)
	o.minSize = max(o.minSize, 1)
	o.maxSize = max(o.maxSize, 8)
	switch o.timing {
	case "per-iter", "batch":
	default:
		return o, fmt.Errorf("-timing %q: want per-iter or batch", o.timing)
	}
	o.batch = max(o.batch, 1)
	o.collIters = max(o.collIters, 1)
	o.collMaxSize = max(o.collMaxSize, 8)
	o.heap = *heap
	if o.ctx && o.variant == "" {
		o.variant = "ctx"
	}
	return o, nil
}

func runHost(args []string, stdout, stderr io.Writer) int {
	o, err := parseHostFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "goshmem-perf:", err)
		return 2
	}
	var peers [][]Row
	for _, p := range o.peers { // read before Init: a bad file fails fast
		rows, err := ReadRowsFile(p)
		if err != nil {
			fmt.Fprintln(stderr, "goshmem-perf:", err)
			return 2
		}
		peers = append(peers, rows)
	}
	var initOpts []shmem.Option
	if o.heap != 0 {
		initOpts = append(initOpts, shmem.WithSymmetricSize(o.heap))
	} else if os.Getenv("GOSHMEM_SYMMETRIC_SIZE") == "" {
		heap := 2*o.maxSize + allocSize + (16 << 20)
		if o.coll {
			// Six collective buffers, sized for the job's PE count (read
			// before Init from the launcher; the heap is reserved sparsely).
			heap += 6*collBufLen(o.collMaxSize, launcherSize()) + (1 << 20)
		}
		initOpts = append(initOpts, shmem.WithSymmetricSize(uint64(heap)))
	}
	if err := shmem.Init(initOpts...); err != nil {
		fmt.Fprintln(stderr, "goshmem-perf: Init:", err)
		return 1
	}
	bw := bufio.NewWriter(stdout)
	h := &host{o: o, me: shmem.MyPE(), npes: shmem.NPEs(), pinned: -1}
	if o.ctx {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		h.ctx = ctx
	}
	if h.me == 0 {
		if o.json {
			h.out = JSONWriter{w: bw}
		} else {
			h.out = NewTableWriter(bw)
		}
	}
	h.flush = func() { _ = bw.Flush() }
	err = h.run(stdout, stderr)
	h.flush()
	if err != nil {
		// The other PEs may be waiting for this one in a barrier or a
		// ping-pong: end the whole job rather than hang it.
		msg := fmt.Sprintf("goshmem-perf: PE %d: %v", h.me, err)
		if h.npes > 1 {
			shmem.GlobalExit(1, msg)
		}
		fmt.Fprintln(stderr, msg)
		return 1
	}
	if err := shmem.Finalize(); err != nil {
		fmt.Fprintf(stderr, "goshmem-perf: PE %d: Finalize: %v\n", h.me, err)
		return 1
	}
	if h.me == 0 && (len(peers) > 0 || o.plot != "" || o.md != "") {
		rep := stdout
		if o.json {
			rep = stderr // keep stdout pure JSON lines
		}
		d := NewDataset(h.rows, peers...)
		if err := writeOutputs(rep, d, o.md, o.plot, h.title); err != nil {
			fmt.Fprintln(stderr, "goshmem-perf:", err)
			return 1
		}
	}
	return 0
}

// host runs the host-mode benchmarks on one PE.
type host struct {
	o        hostOpts
	me, npes int
	peer     int // the target PE: 1 from PE 0, 0 from the others
	out      RowWriter
	flush    func()
	rows     []Row
	title    string

	sbuf, dbuf   shmem.Array[byte]
	flag, target shmem.Array[int64]
	sig          shmem.Array[uint64]
	samples      []int64
	timerNS      Summary
	pinned       int             // CPU the measuring thread was pinned to (-pin), else -1
	ctx          context.Context // -ctx: the wait rows' context (never done), else nil
}

// The wait rows' blocking calls: the Context forms with h.ctx under -ctx.

func (h *host) waitUntil(a shmem.Array[int64], v int64) error {
	if h.ctx != nil {
		return shmem.WaitUntilContext(h.ctx, a, 0, shmem.CmpEQ, v)
	}
	return shmem.WaitUntil(a, 0, shmem.CmpEQ, v)
}

func (h *host) signalWait(sig shmem.Array[uint64], v uint64) error {
	var err error
	if h.ctx != nil {
		_, err = shmem.SignalWaitUntilContext(h.ctx, sig, 0, shmem.CmpEQ, v)
	} else {
		_, err = shmem.SignalWaitUntil(sig, 0, shmem.CmpEQ, v)
	}
	return err
}

func (h *host) barrierAll() error {
	if h.ctx != nil {
		return shmem.BarrierAllContext(h.ctx)
	}
	return shmem.BarrierAll()
}

func (h *host) set(l *shmem.Lock) error {
	if h.ctx != nil {
		return l.SetContext(h.ctx)
	}
	return l.Set()
}

func (h *host) want(name string) bool { return h.o.only == nil || h.o.only.MatchString(name) }

func (h *host) run(stdout, stderr io.Writer) (err error) {
	runtime.LockOSThread() // one OS thread for the measuring loop
	defer runtime.UnlockOSThread()
	if h.o.pin {
		if h.pinned, err = pinThread(h.me); err != nil {
			return err
		}
	}
	h.peer = 1
	if h.me != 0 || h.npes == 1 {
		h.peer = 0
	}
	if h.sbuf, err = shmem.Alloc[byte](h.o.maxSize); err != nil {
		return err
	}
	if h.dbuf, err = shmem.Alloc[byte](h.o.maxSize); err != nil {
		return err
	}
	// One word per array, each on its own cache line (arrays are 64 B aligned).
	if h.flag, err = shmem.Alloc[int64](8); err != nil {
		return err
	}
	if h.target, err = shmem.Alloc[int64](8); err != nil {
		return err
	}
	if h.sig, err = shmem.Alloc[uint64](8); err != nil {
		return err
	}
	fill := h.sbuf.Local()
	for i := range fill {
		fill[i] = byte(h.me + 1)
	}
	h.samples = make([]int64, max(h.o.iters, h.o.barrierIters, h.o.collIters, bwMaxWindows))
	h.timerNS = timerOverhead(100000)
	if h.me == 0 {
		h.header(stdout, stderr)
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	steps := []struct {
		name string
		fn   func() error
	}{
		{"put_lat", func() error { return h.eachSize(h.o.minSize, h.putLat) }},
		{"get_lat", func() error { return h.eachSize(h.o.minSize, h.getLat) }},
		{"p_lat", h.pLat},
		{"g_lat", h.gLat},
		{"pingpong_p", h.pingpongP},
		{"pingpong_putsignal", h.pingpongPutSignal},
		{"pingpong_p_localpoll", h.pingpongPLocalPoll},
		{"amo_fadd", h.amoFadd},
		{"barrier", h.barrier},
		{"put_bw", func() error { return h.eachSize(max(4096, h.o.minSize), h.putBW) }},
		{"iput_bw", func() error { return h.stridedBW(true) }},
		{"iget_bw", func() error { return h.stridedBW(false) }},
		{"alloc_free", h.allocFree},
		{"lock", h.lock},
	}
	if h.o.coll {
		steps = steps[:0]
		steps = append(steps, struct {
			name string
			fn   func() error
		}{"collectives", h.collectives})
	}
	for _, s := range steps {
		if s.name == "collectives" {
			if err := s.fn(); err != nil {
				return err
			}
			continue
		}
		if s.name == "pingpong_p_localpoll" && h.o.only == nil {
			continue // diagnostic: only when asked for by -only
		}
		if !h.want(s.name) {
			continue
		}
		if err := s.fn(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return shmem.BarrierAll()
}

func (h *host) header(stdout, stderr io.Writer) {
	w := stdout
	if h.o.json {
		w = stderr
	}
	host, _ := os.Hostname()
	h.title = fmt.Sprintf("goshmem %s, host mode, transport %s, %d PEs, GOMAXPROCS=%d, %s, %d of %d CPUs in PE 0's affinity, %s",
		versionString(), hostTransport(), h.npes, runtime.GOMAXPROCS(0), cpuModel(), runtime.NumCPU(), onlineCPUs(), time.Now().Format("2006-01-02 15:04"))
	if h.o.variant != "" {
		h.title += ", variant " + h.o.variant
	}
	fmt.Fprintf(w, "# %s\n", h.title)
	if h.pinned >= 0 {
		fmt.Fprintf(w, "# -pin: PE 0's measuring thread pinned to CPU %d after Init (PE i to CPU i mod %d)\n", h.pinned, onlineCPUs())
	}
	fmt.Fprintf(w, "# host %s, %s %s/%s; iters=%d barrier_iters=%d warmup=%d sizes %d..%d timing=%s",
		host, runtime.Version(), runtime.GOOS, runtime.GOARCH, h.o.iters, h.o.barrierIters, h.o.warmup, h.o.minSize, h.o.maxSize, h.o.timing)
	if h.o.timing == "batch" {
		fmt.Fprintf(w, " (batch=%d)", h.o.batch)
	}
	fmt.Fprintf(w, "\n# timer overhead (nanotime pair + harness call, inside every per-iter sample): median %.0f ns, p99 %.0f ns\n",
		h.timerNS.Median, h.timerNS.P99)
	if h.o.coll {
		fmt.Fprintf(w, "# collective rows: coll_iters=%d coll_maxsize=%d; every PE runs op + BarrierAll, PE 0's time of the pair is a sample\n",
			h.o.collIters, h.o.collMaxSize)
	} else if h.npes == 1 {
		fmt.Fprintf(w, "# 1 PE: every row targets PE 0 itself; ping-pong rows are skipped (run under mpirun -np 2)\n")
	}
	if h.o.json {
		return
	}
	h.flush()
}

// emit records and prints a row (PE 0 only).
func (h *host) emit(name string, size, iters int, s Summary, bw float64, timing string, allocs float64) {
	if h.me != 0 {
		return
	}
	a := allocs
	r := Row{Lib: "goshmem", Name: name, Size: int64(size), Iters: int64(iters),
		MedianUS: s.Median / 1000, P99US: s.P99 / 1000, BWGBs: bw,
		Transport: hostTransport(), Scope: "thread", Timing: timing, AllocsPerOp: &a, Variant: h.o.variant, NPEs: h.npes}
	if h.npes == 1 {
		r.Transport = "shm (self)"
	}
	h.rows = append(h.rows, r)
	h.out.Write(r)
	h.flush()
}

func (h *host) eachSize(lo int, fn func(size int) error) error {
	for _, s := range sizes(lo, h.o.maxSize) {
		if err := fn(s); err != nil {
			return fmt.Errorf("size %d: %w", s, err)
		}
	}
	return nil
}

func mallocs() uint64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.Mallocs
}

// measure runs op warm times, then n times timed, on this PE, and returns
// the per-operation summary, the timing label and the Go allocations per
// operation. per-iter: one sample per operation. batch: one sample per
// -batch operations, divided by the batch (so the timer cost is amortized;
// p99 is then the p99 of batch means).
func (h *host) measure(n, warm int, op func() error) (Summary, string, float64, error) {
	for i := 0; i < warm; i++ {
		if err := op(); err != nil {
			return Summary{}, "", 0, err
		}
	}
	m0 := mallocs()
	if h.o.timing == "batch" && h.o.batch > 1 {
		b := h.o.batch
		ns := max(n/b, 1)
		for i := 0; i < ns; i++ {
			t0 := nanotime()
			for k := 0; k < b; k++ {
				if err := op(); err != nil {
					return Summary{}, "", 0, err
				}
			}
			h.samples[i] = (nanotime() - t0 + int64(b)/2) / int64(b)
		}
		allocs := float64(mallocs()-m0) / float64(ns*b)
		return Summarize(h.samples[:ns]), fmt.Sprintf("batch of %d (per-op mean)", b), allocs, nil
	}
	s := h.samples[:n]
	for i := range s {
		t0 := nanotime()
		if err := op(); err != nil {
			return Summary{}, "", 0, err
		}
		s[i] = nanotime() - t0
	}
	allocs := float64(mallocs()-m0) / float64(n)
	return Summarize(s), "per-iter", allocs, nil
}

func warmupFor(warm, n int) int { return min(warm, n) }

// oneSided is the shape of put_lat, get_lat, p_lat, g_lat and amo_fadd:
// PE 0 measures while the others wait in the closing barrier.
func (h *host) oneSided(name string, size, n int, op func() error, bw bool, check func() error) error {
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	var (
		s      Summary
		timing string
		allocs float64
		err    error
	)
	if h.me == 0 {
		s, timing, allocs, err = h.measure(n, warmupFor(h.o.warmup, n), op)
		if err != nil {
			return err // runHost ends the job (GlobalExit): the peers are in the barrier
		}
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if check != nil {
		if err := check(); err != nil {
			return err
		}
	}
	b := 0.0
	if bw && s.Median > 0 {
		b = float64(size) / s.Median // bytes per ns = GB/s
	}
	h.emit(name, size, n, s, b, timing, allocs)
	return nil
}

func (h *host) putLat(size int) error {
	src := h.sbuf.Local()[:size]
	dst, pe := h.dbuf, h.peer
	op := func() error {
		if err := shmem.Put(dst, 0, src, pe); err != nil {
			return err
		}
		return shmem.Quiet()
	}
	check := func() error {
		// PE 0's sbuf holds 1s: the last byte must have arrived at PE 1.
		if h.me == 1 || h.npes == 1 {
			if got := h.dbuf.Local()[size-1]; got != 1 {
				return fmt.Errorf("put_lat %d: data did not arrive at PE %d (byte %d = %d, want 1)", size, h.me, size-1, got)
			}
		}
		return nil
	}
	return h.oneSided("put_lat", size, itersFor(h.o.iters, size), op, true, check)
}

func (h *host) getLat(size int) error {
	dst := h.sbuf.Local()[:size]
	src, pe := h.dbuf, h.peer
	op := func() error { return shmem.Get(dst, src, 0, pe) }
	return h.oneSided("get_lat", size, itersFor(h.o.iters, size), op, true, nil)
}

func (h *host) pLat() error {
	t, pe := h.target, h.peer
	v := int64(0)
	op := func() error {
		v++
		if err := shmem.P(t, 0, v, pe); err != nil {
			return err
		}
		return shmem.Quiet()
	}
	return h.oneSided("p_lat", 8, h.o.iters, op, false, nil)
}

func (h *host) gLat() error {
	t, pe := h.target, h.peer
	var acc int64
	op := func() error {
		v, err := shmem.G(t, 0, pe)
		acc += v
		return err
	}
	err := h.oneSided("g_lat", 8, h.o.iters, op, false, nil)
	runtime.KeepAlive(acc) // the loads are what is measured
	return err
}

func (h *host) amoFadd() error {
	t, pe := h.target, h.peer
	t.Local()[0] = 0
	n := h.o.iters
	w := warmupFor(h.o.warmup, n)
	var acc int64
	op := func() error {
		v, err := shmem.AtomicFetchAdd(t, 0, 1, pe)
		acc += v
		return err
	}
	check := func() error {
		if h.me == h.peerOf0() {
			want := int64(w + n)
			if h.o.timing == "batch" {
				want = int64(w + max(n/h.o.batch, 1)*h.o.batch)
			}
			if got := t.Local()[0]; got != want {
				return fmt.Errorf("amo_fadd: counter on PE %d is %d, want %d", h.me, got, want)
			}
		}
		return nil
	}
	err := h.oneSided("amo_fadd", 8, n, op, false, check)
	runtime.KeepAlive(acc) // the loads are what is measured
	return err
}

// peerOf0 is the PE that PE 0 targets.
func (h *host) peerOf0() int {
	if h.npes == 1 {
		return 0
	}
	return 1
}

// pingpong is the shape of the round-trip rows: PE 0 sends i and waits
// for the echo, PE 1 waits for i and echoes it; other PEs sit it out.
func (h *host) pingpong(name string, send func(i int64, pe int) error, wait func(i int64) error) error {
	if h.npes < 2 {
		return nil
	}
	n, w := h.o.iters, warmupFor(h.o.warmup, h.o.iters)
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	var (
		s      Summary
		timing string
		allocs float64
	)
	switch h.me {
	case 0:
		i := int64(0)
		op := func() error {
			i++
			if err := send(i, 1); err != nil {
				return err
			}
			return wait(i)
		}
		total := w + n
		if h.o.timing == "batch" {
			total = w + max(n/h.o.batch, 1)*h.o.batch
		}
		var err error
		if s, timing, allocs, err = h.measure(n, w, op); err != nil {
			return err
		}
		if i != int64(total) {
			return fmt.Errorf("%s: ran %d round trips, PE 1 expects %d", name, i, total)
		}
		timing += " round trip"
	case 1:
		total := w + n
		if h.o.timing == "batch" {
			total = w + max(n/h.o.batch, 1)*h.o.batch
		}
		for i := int64(1); i <= int64(total); i++ {
			if err := wait(i); err != nil {
				return err
			}
			if err := send(i, 0); err != nil {
				return err
			}
		}
	}
	if err := shmem.Quiet(); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	h.emit(name, 8, n, s, 0, timing, allocs)
	return nil
}

func (h *host) pingpongP() error {
	f := h.flag
	f.Local()[0] = 0
	return h.pingpong("pingpong_p",
		func(i int64, pe int) error { return shmem.P(f, 0, i, pe) },
		func(i int64) error { return h.waitUntil(f, i) })
}

// pingpongPLocalPoll is pingpong_p with WaitUntil replaced by a bare
// atomic load loop on Local(): a diagnostic that separates the cost of
// WaitUntil (and its wait policy) from that of P and of the cache-line
// transfers. Not an OpenSHMEM row; run it with -only.
func (h *host) pingpongPLocalPoll() error {
	f := h.flag
	f.Local()[0] = 0
	p := &f.Local()[0]
	return h.pingpong("pingpong_p_localpoll",
		func(i int64, pe int) error { return shmem.P(f, 0, i, pe) },
		func(i int64) error {
			for atomic.LoadInt64(p) != i {
			}
			return nil
		})
}

func (h *host) pingpongPutSignal() error {
	sig, data := h.sig, h.dbuf
	src := h.sbuf.Local()[:8]
	sig.Local()[0] = 0
	return h.pingpong("pingpong_putsignal",
		func(i int64, pe int) error {
			return shmem.PutSignal(data, 0, src, sig, 0, uint64(i), shmem.SignalSet, pe)
		},
		func(i int64) error { return h.signalWait(sig, uint64(i)) })
}

// collective is the shape of barrier and alloc_free: every PE runs op the
// same number of times and times it; PE 0's samples are reported.
func (h *host) collective(name string, size int, op func() error) error {
	n := h.o.barrierIters
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	s, timing, allocs, err := h.measure(n, warmupFor(h.o.warmup, n), op)
	if err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	h.emit(name, size, n, s, 0, timing+", PE0", allocs)
	return nil
}

func (h *host) barrier() error { return h.collective("barrier", 0, h.barrierAll) }

func (h *host) allocFree() error {
	return h.collective("alloc_free", allocSize, func() error {
		a, err := shmem.Alloc[byte](allocSize)
		if err != nil {
			return err
		}
		return a.Free()
	})
}

// lock times contended hand-overs, as oshbench: every PE loops Set/Clear
// k times on one lock (k = barrier-iters / lockRounds) between two
// barriers; a round's sample is its time over the n*k acquisitions, and
// PE 0 reports the median of lockRounds rounds (after one warm-up round
// of min(warmup, k)).
func (h *host) lock() error {
	l, err := shmem.NewLock()
	if err != nil {
		return err
	}
	k := max(h.o.barrierIters/lockRounds, 1)
	round := func(k int) error {
		for i := 0; i < k; i++ {
			if err := h.set(l); err != nil {
				return err
			}
			if err := l.Clear(); err != nil {
				return err
			}
		}
		return nil
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if err := round(min(h.o.warmup, k)); err != nil {
		return err
	}
	m0 := mallocs()
	for r := 0; r < lockRounds; r++ {
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
		t0 := nanotime()
		if err := round(k); err != nil {
			return err
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
		h.samples[r] = (nanotime() - t0) / int64(h.npes*k)
	}
	allocs := float64(mallocs()-m0) / float64(lockRounds*k)
	if err := l.Free(); err != nil {
		return err
	}
	h.emit("lock", 8, k, Summarize(h.samples[:lockRounds]), 0,
		fmt.Sprintf("per hand-over: %d PEs x %d Set/Clear per round, median of %d rounds, PE0", h.npes, k, lockRounds), allocs)
	return nil
}

// timeWindows is the timing loop of the bandwidth rows (put_bw, iput_bw,
// iget_bw), as oshbench: between two barriers, PE 0 runs 2 warm-up
// windows, then timed windows into h.samples until bwTargetNS have passed
// and at least bwMinWindows ran (at most bwMaxWindows, and no more than
// len(h.samples)). It returns the number of timed windows and the Go
// allocations per operation (perWindow operations per window); on the
// other PEs nwin and allocs are 0. An error of window on PE 0 returns at
// once, without the closing barrier (runHost then ends the job).
func (h *host) timeWindows(window func() error, perWindow int) (nwin int, allocs float64, err error) {
	if err := shmem.BarrierAll(); err != nil {
		return 0, 0, err
	}
	if h.me == 0 {
		for r := 0; r < 2; r++ {
			if err := window(); err != nil {
				return 0, 0, err
			}
		}
		m0 := mallocs()
		start := nanotime()
		for nwin < bwMaxWindows && nwin < len(h.samples) {
			t0 := nanotime()
			if err := window(); err != nil {
				return 0, 0, err
			}
			t1 := nanotime()
			h.samples[nwin] = t1 - t0
			nwin++
			if t1-start >= bwTargetNS && nwin >= bwMinWindows {
				break
			}
		}
		allocs = float64(mallocs()-m0) / float64(nwin*perWindow)
	}
	if err := shmem.BarrierAll(); err != nil {
		return 0, 0, err
	}
	return nwin, allocs, nil
}

// putBW times windows of bwWindow PutNBI + one Quiet, as oshbench: 2
// warm-up windows, then windows until ~50 ms have passed (at least 10).
func (h *host) putBW(size int) error {
	src := h.sbuf.Local()[:size]
	dst, pe := h.dbuf, h.peer
	window := func() error {
		for k := 0; k < bwWindow; k++ {
			if err := shmem.PutNBI(dst, 0, src, pe); err != nil {
				return err
			}
		}
		return shmem.Quiet()
	}
	nwin, allocs, err := h.timeWindows(window, bwWindow)
	if err != nil {
		return err
	}
	if h.me != 0 {
		return nil
	}
	s := Summarize(h.samples[:nwin])
	bw := 0.0
	if s.Median > 0 {
		bw = float64(size) * bwWindow / s.Median
	}
	h.emit("put_bw", size, nwin, s, bw, fmt.Sprintf("per-window W=%d (us per window)", bwWindow), allocs)
	return nil
}

// launcherSize is the job's PE count as the launcher tells it before Init
// (OpenMPI's OMPI_COMM_WORLD_SIZE, PMI's PMI_SIZE, the tcp bootstrap's
// GOSHMEM_NPES, torchrun's WORLD_SIZE, Slurm's SLURM_NTASKS), else 8.
func launcherSize() int {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "GOSHMEM_NPES", "WORLD_SIZE", "SLURM_NTASKS"} {
		if n, err := strconv.Atoi(os.Getenv(v)); err == nil && n > 0 {
			return n
		}
	}
	return 8
}

// cpuModel is /proc/cpuinfo's first "model name".
func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// hostTransport names the transport the rows measured: the runtime uses shm
// between PEs of one node unless GOSHMEM_TRANSPORT=ofi forces libfabric.
func hostTransport() string {
	if os.Getenv("GOSHMEM_TRANSPORT") == "ofi" {
		return "ofi"
	}
	return "shm"
}

// parseFlags parses a subcommand's flags, refuses positional arguments and
// compiles the -only pattern (nil when empty).
func parseFlags(fs *flag.FlagSet, args []string, only *string) (*regexp.Regexp, error) {
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if *only == "" {
		return nil, nil
	}
	re, err := regexp.Compile(*only)
	if err != nil {
		return nil, fmt.Errorf("-only: %v", err)
	}
	return re, nil
}
