package main

import (
	"bufio"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/ibgda"
)

// IBGDA mode: the GPU side of goshmem's IBGDA path for real on a GPU, the NIC
// EMULATED. Kernels (bench/ibgda/ibgda_perf.cu, one fatbin per ordering
// build option) build mlx5 WQEs with include/goshmem/ibgda/, write the
// doorbell record and ring the doorbell; the QP structs are in GPU memory,
// the SQ rings, doorbell records, the doorbell word (standing in for the UAR
// page) and the CQs in host-pinned memory mapped into the GPU
// (cuMemHostAlloc DEVICEMAP).
//
// Rows:
//   - ibgda_issue: one thread, one 8 B inline RDMA write, issue time
//     (build + doorbell record + doorbell), per ordering build (gpu, sys,
//     none = unordered) and posting path (shared QP: atomic reservation and
//     ordered publication; exclusive: the owner's indices in registers).
//     The soft NIC is OFF: the ring holds every WQE (no recycling).
//   - ibgda_rate: WQEs/s against threads, QPs, SMs, batch size, warp-
//     cooperative posting. Soft NIC OFF, rings large enough not to recycle:
//     this is the GPU's issue rate, not a NIC's message rate.
//   - ibgda_put_quiet: one thread, signaled 8 B inline write on QP 0 + quiet,
//     against the QP count: ctx quiet (QP 0 only) vs PE-wide quiet (every
//     QP). The soft NIC runs on a host core polling the host-pinned doorbell
//     records, writes the payload into a host-pinned target buffer (not GPU
//     memory) and writes the CQEs. System-scope ordering build (the queues
//     are in host memory).
type ibgdaOpts struct {
	dir           string
	iters, warmup int
	reps          int
	rateWQEs      int
	maxQP         int
	json          bool
	plot          string
	jsonOut       string
	only          *regexp.Regexp
	timeout       time.Duration
}

func parseIbgdaFlags(args []string, stderr io.Writer) (ibgdaOpts, error) {
	var o ibgdaOpts
	fs := flag.NewFlagSet("ibgda", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.dir, "fatbins", "bin/gpu", "directory of ibgda_perf_{gpu,sys,none}.fatbin (bench/ibgda/ibgda_perf.cu, make fatbins)")
	fs.IntVar(&o.iters, "iters", 10000, "timed iterations of the latency rows (at most 10000)")
	fs.IntVar(&o.warmup, "warmup", 1000, "untimed iterations before them")
	fs.IntVar(&o.reps, "reps", 5, "timed repetitions of each rate row (median reported; one untimed before)")
	fs.IntVar(&o.rateWQEs, "rate-wqes", ibgda.MaxWQEBBs, "WQEs per QP per rate repetition (<= the ring: nothing recycles)")
	fs.IntVar(&o.maxQP, "max-qps", 16, "largest QP count of the put_quiet rows")
	fs.BoolVar(&o.json, "json", false, "JSON lines on stdout (the header goes to stderr)")
	fs.StringVar(&o.jsonOut, "json-out", "", "also write the rows as JSON lines to `file`")
	fs.StringVar(&o.plot, "plot", "", "write the put+completion vs QP count plot (PNG) to `file`")
	fs.DurationVar(&o.timeout, "kernel-timeout", 20*time.Second, "a kernel that runs longer is reported as hung and the run ends")
	only := fs.String("only", "", "run only the rows whose name matches this `regexp` (ibgda_issue, ibgda_rate, ibgda_put_quiet)")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: goshmem-perf ibgda [flags]   (one process, one GPU; the NIC is the soft NIC, an emulation)\n")
		fs.PrintDefaults()
	}
	re, err := parseFlags(fs, args, only)
	if err != nil {
		return o, err
	}
	o.only = re
	o.iters = max(1, min(o.iters, 10000))
	o.warmup = max(0, o.warmup)
	o.reps = max(1, o.reps)
	o.maxQP = max(1, min(o.maxQP, ibgdaQPs))
	o.rateWQEs = max(64, min(o.rateWQEs, ibgda.MaxWQEBBs))
	if o.iters+o.warmup > ibgda.MaxWQEBBs {
		return o, fmt.Errorf("-iters %d + -warmup %d exceed the ring (%d WQEBBs): the issue rows never recycle it", o.iters, o.warmup, ibgda.MaxWQEBBs)
	}
	return o, nil
}

const (
	ibgdaQPs    = 64                     // QPs of the testbed
	ibgdaSQ     = ibgda.MaxWQEBBs        // WQEBBs per SQ (2 MiB)
	ibgdaCQEs   = 1024                   // CQEs per CQ
	ibgdaRKey   = 0x5eed                 // the target region's rkey (soft NIC)
	ibgdaTarget = 4096                   // bytes of the host-pinned target region
	ibgdaMaxCTA = 1024                   // CTAs of a rate row at most
	ibLine      = 64                     // one cache line per doorbell record / doorbell word
	ibgdaLib    = "goshmem"              // rows' lib
	ibgdaTrans  = "ibgda (emulated NIC)" // rows' transport label
)

// ibbed is the testbed: ibgdaQPs QPs with their memory.
type ibbed struct {
	o    ibgdaOpts
	ctx  *cuda.Context
	name string
	mods map[string]*cuda.Module // gpu, sys, none

	sq     [ibgdaQPs]unsafe.Pointer // host-pinned SQ rings
	sqDev  [ibgdaQPs]cuda.DevicePtr
	recs   unsafe.Pointer // host-pinned: per QP 3 lines: dbrec, db, cq dbrec
	recDev cuda.DevicePtr
	cq     unsafe.Pointer // host-pinned CQs
	cqDev  cuda.DevicePtr
	target unsafe.Pointer // host-pinned target region (the "remote" memory)
	// the same queues in GPU memory (issue/rate rows, NIC off): SQs, records, CQs
	sqG   [ibgdaQPs]cuda.DevicePtr
	recG  cuda.DevicePtr
	cqG   cuda.DevicePtr
	place string // "gpu" or "host": where reset put the SQ, records and CQ

	qps, ptrs, nbb, samples, meta, times, rc, errw cuda.DevicePtr

	out   RowWriter
	flush func()
	rows  []Row
	w     io.Writer // header / text
}

func runIbgda(args []string, stdout, stderr io.Writer) int {
	o, err := parseIbgdaFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "goshmem-perf ibgda:", err)
		return 2
	}
	bw := bufio.NewWriter(stdout)
	defer bw.Flush()
	b := &ibbed{o: o, mods: map[string]*cuda.Module{}, flush: func() { _ = bw.Flush() }, w: bw}
	if o.json {
		b.out, b.w = JSONWriter{w: bw}, stderr
	} else {
		b.out = &ibgdaTable{w: bw}
	}
	runtime.LockOSThread()
	if err := b.setup(); err != nil {
		fmt.Fprintln(stderr, "goshmem-perf ibgda: setup:", err)
		return 1
	}
	if err := b.run(); err != nil {
		b.flush()
		fmt.Fprintln(stderr, "goshmem-perf ibgda:", err)
		return 1
	}
	b.targets()
	b.flush()
	if o.jsonOut != "" {
		var out []byte
		for _, r := range b.rows {
			out = append(append(out, r.MarshalLine()...), '\n')
		}
		if err := os.WriteFile(o.jsonOut, out, 0o644); err != nil {
			fmt.Fprintln(stderr, "goshmem-perf ibgda:", err)
			return 1
		}
	}
	if o.plot != "" {
		if err := writeQuietPlot(o.plot, b.rows, b.title()); err != nil {
			fmt.Fprintln(stderr, "goshmem-perf ibgda:", err)
			return 1
		}
	}
	return 0
}

func (b *ibbed) title() string {
	return fmt.Sprintf("goshmem %s, ibgda mode on %s, NIC EMULATED (soft NIC on the host), %s",
		versionString(), b.name, time.Now().Format("2006-01-02 15:04"))
}

func (b *ibbed) setup() error {
	if err := cuda.Load(); err != nil {
		return err
	}
	var err error
	if b.ctx, err = cuda.Device(0).RetainPrimary(); err != nil {
		return err
	}
	if b.name, err = cuda.Device(0).Name(); err != nil {
		return err
	}
	for _, m := range []string{"gpu", "sys", "none"} {
		path := filepath.Join(b.o.dir, "ibgda_perf_"+m+".fatbin")
		if b.mods[m], err = b.ctx.ModuleLoad(path); err != nil {
			return fmt.Errorf("%s: %w (build it with make fatbins)", path, err)
		}
	}
	pinned := func(n int) (unsafe.Pointer, cuda.DevicePtr, error) {
		p, err := b.ctx.MemHostAlloc(n, cuda.HostAllocPortable|cuda.HostAllocDeviceMap)
		if err != nil {
			return nil, 0, err
		}
		clear(unsafe.Slice((*byte)(p), n))
		d, err := b.ctx.MemHostGetDevicePointer(p)
		return p, d, err
	}
	for q := range b.sq {
		if b.sq[q], b.sqDev[q], err = pinned(ibgdaSQ * ibgda.SendWQEBB); err != nil {
			return err
		}
	}
	if b.recs, b.recDev, err = pinned(ibgdaQPs * 3 * ibLine); err != nil {
		return err
	}
	if b.cq, b.cqDev, err = pinned(ibgdaQPs * ibgdaCQEs * ibgda.CQESize); err != nil {
		return err
	}
	if b.target, _, err = pinned(ibgdaTarget); err != nil {
		return err
	}
	dev := func(n int) (cuda.DevicePtr, error) {
		p, err := b.ctx.MemAlloc(n)
		if err == nil {
			err = b.ctx.MemsetD8(p, 0, n)
		}
		return p, err
	}
	for _, a := range []struct {
		p *cuda.DevicePtr
		n int
	}{{&b.qps, ibgdaQPs * ibgda.QPStructSize}, {&b.ptrs, ibgdaQPs * 8}, {&b.nbb, ibgdaQPs * ibgdaSQ},
		{&b.samples, 4 * 10000}, {&b.meta, 64}, {&b.times, 16 * ibgdaMaxCTA}, {&b.rc, 8}, {&b.errw, 8}} {
		if *a.p, err = dev(a.n); err != nil {
			return err
		}
	}
	for q := range b.sqG {
		if b.sqG[q], err = dev(ibgdaSQ * ibgda.SendWQEBB); err != nil {
			return err
		}
	}
	if b.recG, err = dev(ibgdaQPs * 3 * ibLine); err != nil {
		return err
	}
	if b.cqG, err = dev(ibgdaQPs * ibgdaCQEs * ibgda.CQESize); err != nil {
		return err
	}
	cqInit := make([]byte, ibgdaQPs*ibgdaCQEs*ibgda.CQESize)
	ibgda.InitCQ(cqInit)
	if err := b.ctx.MemcpyHtoD(b.cqG, unsafe.Pointer(&cqInit[0]), len(cqInit)); err != nil {
		return err
	}
	ptrs := make([]byte, 8*ibgdaQPs)
	for q := 0; q < ibgdaQPs; q++ {
		binary.LittleEndian.PutUint64(ptrs[8*q:], uint64(b.qps)+uint64(q*ibgda.QPStructSize))
	}
	return b.ctx.MemcpyHtoD(b.ptrs, unsafe.Pointer(&ptrs[0]), len(ptrs))
}

func (b *ibbed) hostBytes(p unsafe.Pointer, off, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(p, off)), n)
}

func (b *ibbed) qpn(q int) uint32 { return 0x100 + uint32(q) }

// reset gives QPs [0, n) a fresh state: descriptors + zero state words in
// GPU memory, zero doorbell records and doorbell words, invalid CQEs.
// place "host": SQ, doorbell records and CQ in host-pinned memory (the soft
// NIC reads them); "gpu": in GPU memory, as IBGDA places them for a real
// NIC (the NIC must be off: nothing consumes them). The doorbell word, the
// UAR stand-in, is host-pinned either way (a store over PCIe).
func (b *ibbed) reset(n int, place string) error {
	buf := make([]byte, n*ibgda.QPStructSize)
	for q := 0; q < n; q++ {
		db := uint64(b.recDev) + uint64(q*3*ibLine+ibLine)
		rec := uint64(b.recDev) + uint64(q*3*ibLine)
		sq := uint64(b.sqDev[q])
		cq := uint64(b.cqDev) + uint64(q*ibgdaCQEs*ibgda.CQESize)
		if place == "gpu" {
			rec = uint64(b.recG) + uint64(q*3*ibLine)
			sq = uint64(b.sqG[q])
			cq = uint64(b.cqG) + uint64(q*ibgdaCQEs*ibgda.CQESize)
		}
		copy(buf[q*ibgda.QPStructSize:], ibgda.EncodeQP(ibgda.QPDesc{
			QPN: b.qpn(q), SQBuf: sq, SQWQEBBs: ibgdaSQ, CQEs: ibgdaCQEs,
			DBRec: rec, DB: db, CQDBRec: rec + 2*ibLine, CQBuf: cq,
			ErrWord: uint64(b.errw), SQNBB: uint64(b.nbb) + uint64(q*ibgdaSQ),
		}))
		clear(b.hostBytes(b.recs, q*3*ibLine, 3*ibLine))
		ibgda.InitCQ(b.hostBytes(b.cq, q*ibgdaCQEs*ibgda.CQESize, ibgdaCQEs*ibgda.CQESize))
	}
	if err := b.ctx.MemcpyHtoD(b.qps, unsafe.Pointer(&buf[0]), len(buf)); err != nil {
		return err
	}
	if err := b.ctx.MemsetD8(b.recG, 0, n*3*ibLine); err != nil {
		return err
	}
	if err := b.ctx.MemsetD8(b.errw, 0, 8); err != nil {
		return err
	}
	b.place = place
	return b.ctx.MemsetD8(b.rc, 0, 8)
}

// sndDBR reads QP q's send doorbell record (wherever reset put it).
func (b *ibbed) sndDBR(q int) (uint32, error) {
	off := q*3*ibLine + 4*ibgda.SndDBR
	if b.place != "gpu" {
		return binary.BigEndian.Uint32(b.hostBytes(b.recs, off, 4)), nil
	}
	var v [4]byte
	err := b.ctx.MemcpyDtoH(unsafe.Pointer(&v[0]), b.recG+cuda.DevicePtr(off), 4)
	return binary.BigEndian.Uint32(v[:]), err
}

// qpConfig describes QP q to the soft NIC (host addresses of the pinned rings).
func (b *ibbed) qpConfig(q int) ibgda.QPConfig {
	return ibgda.QPConfig{
		QPN:     b.qpn(q),
		SQ:      ibgda.SQ{Buf: b.hostBytes(b.sq[q], 0, ibgdaSQ*ibgda.SendWQEBB), WQEBBs: ibgdaSQ},
		DBRec:   b.hostBytes(b.recs, q*3*ibLine, 8),
		DB:      b.hostBytes(b.recs, q*3*ibLine+ibLine, 8),
		CQ:      b.hostBytes(b.cq, q*ibgdaCQEs*ibgda.CQESize, ibgdaCQEs*ibgda.CQESize),
		CQEs:    ibgdaCQEs,
		CQDBRec: b.hostBytes(b.recs, q*3*ibLine+2*ibLine, 4),
	}
}

// launch runs one kernel to completion, or reports it hung after the
// kernel timeout (the process must then exit: the kernel still runs).
func (b *ibbed) launch(mod, kernel string, grid, block uint32, a *cuda.Args) error {
	f, err := b.mods[mod].Function(kernel)
	if err != nil {
		return err
	}
	if err := f.Launch([3]uint32{grid, 1, 1}, [3]uint32{block, 1, 1}, 0, cuda.Stream{}, a); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- b.ctx.Synchronize() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("%s (%s ordering): %w", kernel, mod, err)
		}
		return nil
	case <-time.After(b.o.timeout):
		return fmt.Errorf("%s (%s ordering) grid %d x %d did not finish within %v: hung (a poster waiting for ring space or a CQE that never came); exiting", kernel, mod, grid, block, b.o.timeout)
	}
}

// cycles reads n cycle samples and the meta words; returns the summary
// (ns), the kernel's clock in GHz and its rc word.
func (b *ibbed) cycles(n int) (Summary, float64, uint64, error) {
	var meta [5]uint64
	if err := b.ctx.MemcpyDtoH(unsafe.Pointer(&meta[0]), b.meta, 40); err != nil {
		return Summary{}, 0, 0, err
	}
	s := make([]uint32, n)
	if err := b.ctx.MemcpyDtoH(unsafe.Pointer(&s[0]), b.samples, 4*n); err != nil {
		return Summary{}, 0, 0, err
	}
	ghz := float64(meta[3]-meta[2]) / float64(meta[1]-meta[0])
	if !(ghz > 0) || meta[1] <= meta[0] {
		ghz = 1.98
	}
	ns := make([]int64, n)
	for i, c := range s {
		ns[i] = int64(float64(c)/ghz*16 + 0.5)
	}
	sum := Summarize(ns)
	sum.Median /= 16
	sum.P99 /= 16
	return sum, ghz, meta[4], nil
}

func (b *ibbed) emit(r Row) {
	r.Lib, r.Transport = ibgdaLib, ibgdaTrans
	b.rows = append(b.rows, r)
	b.out.Write(r)
	b.flush()
}

func (b *ibbed) want(name string) bool { return b.o.only == nil || b.o.only.MatchString(name) }

func (b *ibbed) run() error {
	fmt.Fprintf(b.w, "# %s\n", b.title())
	fmt.Fprintf(b.w, "# EMULATION: no NIC. QP structs in GPU memory; SQ rings (%d WQEBBs), doorbell records and CQs in GPU memory (q=gpu, as IBGDA with a real NIC) or host-pinned memory (q=host, where the soft NIC reads them); the doorbell word (UAR stand-in) host-pinned.\n", ibgdaSQ)
	fmt.Fprintf(b.w, "# ibgda_issue, ibgda_rate: soft NIC OFF, rings never recycle: GPU issue cost only. ibgda_put_quiet: soft NIC ON (host core, busy polling), payload into host-pinned memory, system-scope ordering.\n")
	b.flush()
	steps := []struct {
		name string
		fn   func() error
	}{{"ibgda_issue", b.issue}, {"ibgda_rate", b.rate}, {"ibgda_put_quiet", b.putQuiet}}
	for _, s := range steps {
		if !b.want(s.name) {
			continue
		}
		if err := s.fn(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

var ibgdaOrderings = []struct{ mod, label string }{
	{"gpu", "GPU-scope release (default)"}, {"sys", "system-scope fence"}, {"none", "unordered (opt-in, unsafe)"},
}

func (b *ibbed) issue() error {
	raddr := uint64(uintptr(b.target))
	for _, place := range []string{"gpu", "host"} {
		for _, ord := range ibgdaOrderings {
			for _, excl := range []int32{0, 1} {
				if err := b.reset(1, place); err != nil {
					return err
				}
				var a cuda.Args
				a.Ptr(b.qps).U64(raddr).U32(ibgdaRKey).I32(int32(b.o.iters)).I32(int32(b.o.warmup)).I32(excl).
					Ptr(b.samples).Ptr(b.meta)
				if err := b.launch(ord.mod, "ib_issue_lat", 1, 1, &a); err != nil {
					return err
				}
				s, ghz, rc, err := b.cycles(b.o.iters)
				if err != nil {
					return err
				}
				if rc != 0 {
					return fmt.Errorf("ib_issue_lat (%s) returned rc %d", ord.mod, int32(rc))
				}
				// The ring must show every WQE published: doorbell record == warmup+iters.
				got, err := b.sndDBR(0)
				if err != nil {
					return err
				}
				if want := uint32(b.o.warmup+b.o.iters) & 0xffff; got != want {
					return fmt.Errorf("ib_issue_lat (%s): doorbell record %d, want %d", ord.mod, got, want)
				}
				path := "shared QP"
				if excl == 1 {
					path = "exclusive QP"
				}
				b.emit(Row{Name: "ibgda_issue", Size: 8, Iters: int64(b.o.iters), MedianUS: s.Median / 1000,
					P99US: s.P99 / 1000, Scope: "thread", Variant: ord.mod,
					Config: fmt.Sprintf("%s, %s, queues in %s memory", ord.label, path, place),
					Timing: clockTiming(ghz) + "; soft NIC off"})
			}
		}
	}
	return nil
}

// rateCfg is one message-rate configuration (CTAs, threads per CTA, QPs).
type rateCfg struct {
	ctas, threads, qps int
	mapping            int32 // 0 thread, 1 warp, 2 CTA, 3 SM
	batch              int
	coop, excl         bool
}

func (c rateCfg) String() string {
	s := fmt.Sprintf("thr=%d qps=%d ctas=%d batch=%d", c.ctas*c.threads, c.qps, c.ctas, c.batch)
	switch {
	case c.coop:
		s += " warp-coop"
	case c.excl:
		s += " excl"
	default:
		s += " shared"
	}
	return s
}

var rateCfgs = []rateCfg{
	{1, 1, 1, 0, 1, false, false}, {1, 1, 1, 0, 1, false, true},
	{1, 1, 1, 0, 16, false, false}, {1, 1, 1, 0, 16, false, true},
	{1, 32, 1, 1, 32, true, false}, {1, 256, 1, 2, 32, true, false}, {8, 256, 8, 2, 32, true, false},
	{16, 1, 16, 2, 1, false, true}, {16, 1, 16, 2, 16, false, true}, {16, 1, 16, 2, 16, false, false},
	{1, 32, 32, 0, 16, false, true}, {1, 64, 64, 0, 16, false, true},
	{64, 1, 64, 2, 16, false, false}, {64, 1, 64, 2, 16, false, true},
	{64, 32, 64, 2, 32, true, false},
}

func (b *ibbed) rate() error {
	raddr := uint64(uintptr(b.target))
	for _, place := range []string{"gpu", "host"} {
		for _, c := range rateCfgs {
			total := c.ctas * c.threads
			perQP := (total + c.qps - 1) / c.qps // threads sharing a QP
			per := b.o.rateWQEs / perQP          // WQEs per thread
			if c.coop {
				per = b.o.rateWQEs / perQP
			} else {
				per -= per % c.batch
			}
			if per < c.batch {
				return fmt.Errorf("%v: %d WQEs per QP give a thread fewer than one batch", c, b.o.rateWQEs)
			}
			var rates []float64
			for rep := 0; rep <= b.o.reps; rep++ {
				if err := b.reset(c.qps, place); err != nil {
					return err
				}
				var a cuda.Args
				a.Ptr(b.qps).I32(int32(c.qps)).I32(c.mapping).I32(int32(per)).I32(int32(c.batch)).
					I32(b2i(c.coop)).I32(b2i(c.excl)).U64(raddr).U32(ibgdaRKey).Ptr(b.times).Ptr(b.rc)
				if err := b.launch("gpu", "ib_rate", uint32(c.ctas), uint32(c.threads), &a); err != nil {
					return err
				}
				t := make([]uint64, 2*c.ctas)
				if err := b.ctx.MemcpyDtoH(unsafe.Pointer(&t[0]), b.times, 16*c.ctas); err != nil {
					return err
				}
				var rc int64
				if err := b.ctx.MemcpyDtoH(unsafe.Pointer(&rc), b.rc, 8); err != nil {
					return err
				}
				if int32(rc) != 0 {
					return fmt.Errorf("%v: ib_rate returned rc %d", c, int32(rc))
				}
				lo, hi := t[0], t[1]
				for i := 0; i < c.ctas; i++ {
					lo, hi = min(lo, t[2*i]), max(hi, t[2*i+1])
				}
				// Every QP's doorbell record must show all of its WQEs.
				if total%c.qps == 0 {
					want := uint32(total/c.qps*per) & 0xffff
					for q := 0; q < c.qps; q++ {
						got, err := b.sndDBR(q)
						if err != nil {
							return err
						}
						if got != want {
							return fmt.Errorf("%v: QP %d doorbell record %d, want %d", c, q, got, want)
						}
					}
				}
				if rep > 0 && hi > lo {
					rates = append(rates, float64(total*per)/float64(hi-lo)*1e3)
				}
			}
			med := median(rates)
			b.emit(Row{Name: "ibgda_rate", Size: 8, Iters: int64(total * per), MMsgS: med, Scope: "grid",
				Variant: "gpu", Config: c.String() + " q=" + place,
				Timing: fmt.Sprintf("%%globaltimer per CTA, median of %d; soft NIC off (issue rate)", len(rates))})
		}
	}
	return nil
}

func b2i(v bool) int32 {
	if v {
		return 1
	}
	return 0
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	for i := 1; i < len(s); i++ { // insertion sort: a handful of values
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func (b *ibbed) putQuiet() error {
	raddr := uint64(uintptr(b.target))
	target := b.hostBytes(b.target, 0, ibgdaTarget)
	base := uint64(0)
	for n := 1; n <= b.o.maxQP; n++ {
		if err := b.reset(n, "host"); err != nil {
			return err
		}
		nic := ibgda.NewSoftNIC()
		if err := nic.RegisterMR(ibgdaRKey, target, ibgda.AccessAll); err != nil {
			return err
		}
		for q := 0; q < n; q++ {
			if err := nic.AddQP(b.qpConfig(q)); err != nil {
				return err
			}
		}
		nic.SetBusyPoll(true)
		nic.Start()
		for scope, label := range []string{"ctx", "pe"} {
			var a cuda.Args
			a.Ptr(b.qps).Ptr(b.ptrs).I32(int32(n)).I32(int32(scope)).U64(raddr).U32(ibgdaRKey).U64(base).
				I32(int32(b.o.iters)).I32(int32(b.o.warmup)).Ptr(b.samples).Ptr(b.meta)
			err := b.launch("sys", "ib_put_quiet", 1, 1, &a)
			if err != nil {
				nic.Stop()
				return err
			}
			s, ghz, rc, err := b.cycles(b.o.iters)
			if err != nil {
				nic.Stop()
				return err
			}
			base += uint64(b.o.iters + b.o.warmup)
			got := binary.LittleEndian.Uint64(target)
			st := nic.Stats()
			if rc != 0 || got != base || st.ErrCQEs.Load() != 0 {
				var ew uint64
				_ = b.ctx.MemcpyDtoH(unsafe.Pointer(&ew), b.errw, 8)
				nic.Stop()
				return fmt.Errorf("%d QPs, %s quiet: rc %d, target word %d (want %d), error CQEs %d, error word %#x",
					n, label, int32(rc), got, base, st.ErrCQEs.Load(), ew)
			}
			b.emit(Row{Name: "ibgda_put_quiet", Size: 8, Iters: int64(b.o.iters), MedianUS: s.Median / 1000,
				P99US: s.P99 / 1000, Scope: label, Variant: "sys", Config: fmt.Sprintf("qps=%d", n),
				Timing: clockTiming(ghz) + "; soft NIC on (emulation), target host-pinned"})
		}
		nic.Stop()
	}
	return nil
}

// ibgdaTable prints ibgda rows as one block per row name.
type ibgdaTable struct {
	w    io.Writer
	last string
}

var ibgdaDescriptions = map[string]string{
	"ibgda_issue":     "one thread issues one 8 B inline RDMA write (WQE + doorbell record + doorbell); soft NIC off",
	"ibgda_rate":      "8 B inline RDMA write issue rate (WQEs/s) against threads, QPs, CTAs, batch; soft NIC off, rings never recycle",
	"ibgda_put_quiet": "one thread: signaled 8 B inline write on QP 0 + quiet (ctx: QP 0 only; pe: every QP); soft NIC on (emulation)",
}

func (t *ibgdaTable) Write(r Row) {
	if r.Name != t.last {
		t.last = r.Name
		fmt.Fprintf(t.w, "#\n# %s (%s): %s\n", r.Name, r.Transport, ibgdaDescriptions[r.Name])
		if r.Name == "ibgda_rate" {
			fmt.Fprintf(t.w, "%-44s %9s %12s  %s\n", "config", "WQEs", "M WQE/s", "timing")
		} else {
			fmt.Fprintf(t.w, "%-60s %-5s %7s %12s %10s  %s\n", "config", "scope", "iters", "latency(us)", "p99(us)", "timing")
		}
	}
	if r.Name == "ibgda_rate" {
		fmt.Fprintf(t.w, "%-44s %9d %12.2f  %s\n", r.Config, r.Iters, r.MMsgS, r.Timing)
		return
	}
	fmt.Fprintf(t.w, "%-60s %-5s %7d %12.3f %10.3f  %s\n", r.Config, r.Scope, r.Iters, r.MedianUS, r.P99US, r.Timing)
}

// targets prints issue 4's H200 targets against this run's rows (the
// targets are published figures of a real ConnectX-7 path; these rows are
// the GPU side with the NIC emulated or off).
func (b *ibbed) targets() {
	find := func(name, variant, scope, cfgPrefix string) (Row, bool) {
		for _, r := range b.rows {
			if r.Name == name && (variant == "" || r.Variant == variant) && (scope == "" || r.Scope == scope) &&
				strings.HasPrefix(r.Config, cfgPrefix) {
				return r, true
			}
		}
		return Row{}, false
	}
	type tgt struct {
		what  string
		row   Row
		ok    bool
		value float64
		unit  string
		goal  string
		met   bool
	}
	var ts []tgt
	lat := func(what, variant, cfg string, limit float64) {
		r, ok := find("ibgda_issue", variant, "", cfg)
		ts = append(ts, tgt{what, r, ok, r.MedianUS, "us", fmt.Sprintf("<= %.2f us", limit), ok && r.MedianUS <= limit})
	}
	lat("issue, GPU-scope release, exclusive QP", "gpu", "GPU-scope release (default), exclusive QP, queues in gpu", 0.70)
	lat("issue, GPU-scope release, shared QP", "gpu", "GPU-scope release (default), shared QP, queues in gpu", 0.70)
	lat("issue, unordered, exclusive QP", "none", "unordered (opt-in, unsafe), exclusive QP, queues in gpu", 0.25)
	lat("issue, unordered, shared QP", "none", "unordered (opt-in, unsafe), shared QP, queues in gpu", 0.25)
	rate := func(what, cfg string, limit float64) {
		r, ok := find("ibgda_rate", "", "", cfg)
		ts = append(ts, tgt{what, r, ok, r.MMsgS, "M WQE/s", fmt.Sprintf(">= %.1f M/s", limit), ok && r.MMsgS >= limit})
	}
	rate("one warp cooperative, one QP", "thr=32 qps=1 ctas=1 batch=32 warp-coop q=gpu", 21.6)
	rate("64 QPs x 64 CTAs (SMs), batch 16, excl", "thr=64 qps=64 ctas=64 batch=16 excl q=gpu", 260)
	rate("64 QPs x 64 CTAs (SMs), batch 16, shared", "thr=64 qps=64 ctas=64 batch=16 shared q=gpu", 260)
	for _, scope := range []string{"ctx", "pe"} {
		r1, ok1 := find("ibgda_put_quiet", "", scope, "qps=1")
		rn, okn := find("ibgda_put_quiet", "", scope, fmt.Sprintf("qps=%d", b.o.maxQP))
		ratio := 0.0
		if ok1 && okn && r1.MedianUS > 0 {
			ratio = rn.MedianUS / r1.MedianUS
		}
		goal, met := "flat (<= 1.15x)", ratio > 0 && ratio <= 1.15
		if scope == "pe" {
			goal, met = "grows (> ctx's ratio)", ratio > 0
		}
		ts = append(ts, tgt{fmt.Sprintf("put+quiet %s, %d QPs / 1 QP", scope, b.o.maxQP), rn, ok1 && okn, ratio, "x", goal, met})
	}
	if len(ts) >= 2 {
		ctx, pe := ts[len(ts)-2], ts[len(ts)-1]
		ts[len(ts)-1].met = pe.ok && ctx.ok && pe.value > ctx.value
	}
	fmt.Fprintf(b.w, "#\n# targets (issue 4; GPU side real, NIC emulated or off):\n")
	for _, t := range ts {
		state := "MET"
		switch {
		case !t.ok:
			state = "not measured"
		case !t.met:
			state = "MISSED"
		}
		fmt.Fprintf(b.w, "#   %-48s %10.3f %-8s %-22s %s\n", t.what, t.value, t.unit, t.goal, state)
	}
}
