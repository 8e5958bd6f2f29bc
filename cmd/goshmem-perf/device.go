package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// Device mode: device-initiated RMA, signals and barriers from CUDA kernels
// over the cuda transport, NVSHMEM-perftest-shaped. The kernels are
// bench/gpu/kernels.cuh (NVSHMEM names) compiled against goshmem's device
// API (bench/gpu/perf.cu -> a fatbin loaded with shmem.LoadModuleFile);
// bench/gpu/nvshmem_perf.cu runs the same kernels against NVSHMEM.
//
// Timing: latency kernels read clock64 around every operation and record
// %globaltimer and clock64 around the whole loop; the host converts cycles
// to ns at that kernel's own rate and reports median and p99 of the
// per-iteration samples (timing "clock64/iter @x GHz"). put_bw: %globaltimer
// per CTA, bytes / (last end - first start). launch: host clock.

type deviceOpts struct {
	module           string
	iters, warmup    int
	minSize, maxSize int
	maxSizeThread    int
	bwMin, bwMax     int
	bwTarget         int64
	ctas, bwThreads  int
	diag             bool
	blockThreads     int
	launches         int
	concurrent       bool
	only             *regexp.Regexp
	json             bool
	plot, md         string
	peers            []string
	variant          string
	// collective and on-stream rows (devcoll.go, devstream.go)
	collModule            string
	collMax, collThreads  int
	collIters, collWarmup int
	streamIters           int
	coll                  bool
	// alloc and register rows (devalloc.go, devregister.go)
	mem                           bool
	allocMin, allocMax, allocReps int
	allocSettle                   time.Duration
	regMin, regMax                int
}

func parseDeviceFlags(args []string, stderr io.Writer) (deviceOpts, error) {
	var o deviceOpts
	fs := flag.NewFlagSet("device", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.module, "module", "bin/gpu/perf.fatbin", "fatbin of bench/gpu/perf.cu (nvcc -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -fatbin)")
	fs.IntVar(&o.iters, "iters", 10000, "timed iterations per latency row (sizes > 4 KiB: scaled down by size, at least 20)")
	fs.IntVar(&o.warmup, "warmup", 1000, "untimed iterations at the start of each latency kernel")
	fs.IntVar(&o.minSize, "minsize", 8, "smallest put_lat/get_lat size")
	fs.IntVar(&o.maxSize, "maxsize", 1<<20, "largest put_lat/get_lat size for warp and block scope")
	fs.IntVar(&o.maxSizeThread, "maxsize-thread", 64<<10, "largest put_lat/get_lat size for thread scope (one thread copies)")
	fs.IntVar(&o.bwMin, "bw-minsize", 4096, "smallest put_bw size")
	fs.IntVar(&o.bwMax, "bw-maxsize", 256<<20, "largest put_bw size")
	fs.Int64Var(&o.bwTarget, "bw-bytes", 4<<30, "bytes moved per put_bw size (puts = bytes/size, in [10, 10000])")
	fs.IntVar(&o.ctas, "ctas", 32, "CTAs of put_bw (each puts its slice)")
	fs.IntVar(&o.bwThreads, "bw-threads", 1024, "threads per CTA of put_bw")
	fs.IntVar(&o.blockThreads, "block-threads", 1024, "threads of the block-scope latency and barrier kernels")
	fs.IntVar(&o.launches, "launches", 10000, "empty-kernel launches of the launch rows")
	fs.BoolVar(&o.concurrent, "concurrent", true, "run the rows that need both PEs' kernels at once (ping-pong, barrier): needs MPS when the PEs share a GPU, else they hang")
	fs.BoolVar(&o.diag, "diag", true, "also run the goshmem-only diag_* rows (where put + quiet and put_bw spend their time)")
	only := fs.String("only", "", "run only the rows whose name matches this `regexp`")
	fs.BoolVar(&o.json, "json", false, "JSON lines on stdout (the header goes to stderr)")
	fs.StringVar(&o.plot, "plot", "", "write a PNG plot to `file` (with the -peer series overlaid)")
	fs.StringVar(&o.md, "md", "", "write the ratio report as Markdown to `file` (needs -peer)")
	fs.Var((*multiFlag)(&o.peers), "peer", "peer JSON-lines `file` (bench/gpu/nvshmem_perf output); repeatable")
	fs.StringVar(&o.variant, "variant", "", "label the rows as series goshmem/`name`")
	fs.BoolVar(&o.coll, "coll", false, "also run the coll and onstream rows (on when -only names them)")
	fs.StringVar(&o.collModule, "coll-module", "bin/gpu/perf_coll.fatbin", "fatbin of bench/gpu/perf_coll.cu (the coll rows; skipped when missing or empty)")
	fs.IntVar(&o.collMax, "coll-maxsize", 64<<20, "largest collective size (bytes of the call's n elements) of the coll and on-stream rows")
	fs.IntVar(&o.collThreads, "coll-threads", 1024, "threads of the coll rows' one block")
	fs.IntVar(&o.collIters, "coll-iters", 100, "calls per coll / sum_reduce_on_stream row up to 1 MiB (then scaled down by size, at least 10)")
	fs.IntVar(&o.collWarmup, "coll-warmup", 10, "untimed calls before each coll row (at most 2 above 1 MiB)")
	fs.IntVar(&o.streamIters, "stream-iters", 1000, "BarrierAllOnStream calls of the barrier_on_stream row")
	fs.BoolVar(&o.mem, "mem", false, "also run the alloc and register rows (on when -only names them)")
	fs.IntVar(&o.allocMin, "alloc-minsize", allocMinSize, "smallest size of the alloc rows (at least 2 MiB; sizes double from it). The heap never shrinks and each size grows it several times: at 4 PEs or more on one GPU, one size per job keeps the rows within its memory")
	fs.IntVar(&o.allocMax, "alloc-maxsize", 1<<30, "largest size of the alloc rows (at least -alloc-minsize)")
	fs.DurationVar(&o.allocSettle, "alloc-settle", 0, "pause before every AllocDevice sample of the alloc rows, so that a growth prepared in the background after the last one has finished (a program that allocates now and then); 0: back to back")
	fs.IntVar(&o.allocReps, "alloc-reps", 5, "samples per alloc row and size (fewer where the growth samples would map over 8 GiB on every PE: each maps that much more)")
	fs.IntVar(&o.regMin, "reg-minsize", 8<<10, "smallest size of the register rows")
	fs.IntVar(&o.regMax, "reg-maxsize", 64<<20, "largest size of the register rows")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: mpirun --bind-to none -np 2 goshmem-perf device [flags]   (MPS on when both PEs share one GPU)\n"+
			"Rows: put_lat get_lat (thread, warp, block) p_lat g_lat pingpong_p pingpong_putsignal barrier (thread, block) put_bw launch launch_sync\n"+
			"  coll: reduce_sum_float reduce_sum_int64 broadcast fcollect alltoall reducescatter_sum_float (thread, warp, block); onstream: barrier_on_stream sum_reduce_on_stream broadcast_on_stream fcollect_on_stream alltoall_on_stream host_reduce_gpu\n"+
			"  alloc: alloc_grow alloc_fit alloc_series cumemalloc stream_settled stream_in_prep; register: put_on_stream_reg put_on_stream_heap memcpy_dtod|memcpy_peer (with -mem or -only)\n")
		fs.PrintDefaults()
	}
	re, err := parseFlags(fs, args, only)
	if err != nil {
		return o, err
	}
	o.only = re
	o.iters = max(o.iters, 1)
	o.warmup = max(o.warmup, 0)
	o.minSize = max(o.minSize, 8)
	o.maxSize = max(o.maxSize, o.minSize)
	o.bwMin = max(o.bwMin, 8*o.ctas)
	o.bwMax = max(o.bwMax, o.bwMin)
	o.ctas = max(o.ctas, 1)
	o.launches = max(o.launches, 1)
	o.collMax = max(o.collMax, 8)
	o.collThreads = max(o.collThreads, 32)
	o.collIters = max(o.collIters, 1)
	o.collWarmup = max(o.collWarmup, 0)
	o.streamIters = max(o.streamIters, 1)
	o.allocMin = max(o.allocMin, allocMinSize)
	o.allocMax = max(o.allocMax, o.allocMin)
	o.allocReps = max(o.allocReps, 1)
	o.regMin = max(o.regMin, 8)
	o.regMax = max(o.regMax, o.regMin)
	return o, nil
}

type dev struct {
	o        deviceOpts
	me, npes int
	peer     int
	out      RowWriter
	flush    func()
	rows     []Row
	title    string

	mod                     *shmem.Module
	k                       map[string]*shmem.Kernel
	sbuf, dbuf              shmem.Array[byte]
	flagP, flagS            shmem.Array[uint64]
	samples                 shmem.Array[int64]
	meta                    shmem.Array[uint64]
	host                    []int64
	basePP, basePS, baseBar uint64
	sameDevice              bool
	gpuName                 string
}

func runDevice(args []string, stdout, stderr io.Writer) int {
	o, err := parseDeviceFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "goshmem-perf device:", err)
		return 2
	}
	var peers [][]Row
	for _, p := range o.peers {
		rows, err := ReadRowsFile(p)
		if err != nil {
			fmt.Fprintln(stderr, "goshmem-perf device:", err)
			return 2
		}
		peers = append(peers, rows)
	}
	image, err := os.ReadFile(o.module)
	if err != nil {
		fmt.Fprintf(stderr, "goshmem-perf device: %v (build it: nvcc -std=c++17 -O3 -I include -gencode arch=compute_90,code=sm_90 -gencode arch=compute_90,code=compute_90 -fatbin -o %s bench/gpu/perf.cu)\n", err, o.module)
		return 2
	}
	// The device heap must hold put_bw's source and destination and the
	// on-stream rows' two float arrays of -coll-maxsize per PE (an
	// alltoall's source and an fcollect's destination hold a block per PE).
	need := uint64(2*max(o.bwMax, o.maxSize, o.maxSizeThread)) + uint64(2*o.collMax)*uint64(launcherSize()) + 64<<20
	if os.Getenv("GOSHMEM_DEVICE_HEAP_SIZE") == "" && need > 1<<30 {
		os.Setenv("GOSHMEM_DEVICE_HEAP_SIZE", fmt.Sprint(need))
	}
	if os.Getenv("GOSHMEM_GPU") == "" {
		os.Setenv("GOSHMEM_GPU", "on")
	}
	if err := shmem.Init(shmem.WithSymmetricSize(16 << 20)); err != nil {
		fmt.Fprintln(stderr, "goshmem-perf device: Init:", err)
		return 1
	}
	bw := bufio.NewWriter(stdout)
	d := &dev{o: o, me: shmem.MyPE(), npes: shmem.NPEs(), k: map[string]*shmem.Kernel{}}
	if d.me == 0 {
		if o.json {
			d.out = JSONWriter{w: bw}
		} else {
			d.out = NewTableWriter(bw)
		}
	}
	d.flush = func() { _ = bw.Flush() }
	err = d.run(image, stdout, stderr)
	d.flush()
	if err != nil {
		msg := fmt.Sprintf("goshmem-perf device: PE %d: %v", d.me, err)
		if d.npes > 1 {
			shmem.GlobalExit(1, msg)
		}
		fmt.Fprintln(stderr, msg)
		return 1
	}
	if err := shmem.Finalize(); err != nil {
		fmt.Fprintf(stderr, "goshmem-perf device: PE %d: Finalize: %v\n", d.me, err)
		return 1
	}
	if d.me == 0 && (len(peers) > 0 || o.plot != "" || o.md != "") {
		rep := stdout
		if o.json {
			rep = stderr
		}
		ds := NewDataset(d.rows, peers...)
		if err := writeOutputs(rep, ds, o.md, o.plot, d.title); err != nil {
			fmt.Fprintln(stderr, "goshmem-perf device:", err)
			return 1
		}
	}
	return 0
}

func (d *dev) want(name string) bool { return d.o.only == nil || d.o.only.MatchString(name) }

var deviceKernels = []string{
	"perf_put_thread", "perf_put_warp", "perf_put_block",
	"perf_get_thread", "perf_get_warp", "perf_get_block",
	"perf_p_thread", "perf_g_thread",
	"perf_pingpong_p", "perf_pingpong_putsignal",
	"perf_barrier_thread", "perf_barrier_block",
	"perf_put_bw", "perf_empty",
}

func (d *dev) run(image []byte, stdout, stderr io.Writer) (err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	info, err := shmem.DeviceInfo()
	if err != nil {
		return err
	}
	d.sameDevice = info.SameDevice
	d.gpuName = info.Name
	if d.mod, err = shmem.LoadModule(image); err != nil {
		return err
	}
	if !d.mod.HasDeviceAPI {
		return fmt.Errorf("%s does not include goshmem.h (no goshmemi_device_state)", d.o.module)
	}
	for _, n := range deviceKernels {
		if d.k[n], err = d.mod.Kernel(n); err != nil {
			return err
		}
	}
	for _, n := range []string{"diag_put", "diag_put_bw_unroll4", "diag_pingpong", "diag_barrier"} {
		if k, err := d.mod.Kernel(n); err == nil {
			d.k[n] = k
		}
	}
	d.peer = 1
	if d.me != 0 || d.npes == 1 {
		d.peer = 0
	}
	bufN := max(d.o.bwMax, d.o.maxSize, d.o.maxSizeThread)
	if d.sbuf, err = shmem.AllocDevice[byte](bufN); err != nil {
		return err
	}
	if d.dbuf, err = shmem.AllocDevice[byte](bufN); err != nil {
		return err
	}
	if d.flagP, err = shmem.AllocDevice[uint64](256); err != nil {
		return err
	}
	if d.flagS, err = shmem.AllocDevice[uint64](256); err != nil {
		return err
	}
	if d.samples, err = shmem.AllocDevice[int64](d.o.iters); err != nil {
		return err
	}
	if d.meta, err = shmem.AllocDevice[uint64](8 + 2*d.o.ctas); err != nil {
		return err
	}
	d.host = make([]int64, d.o.iters)
	// sbuf holds me+1 in every byte (as nvshmem_perf's cudaMemset).
	fill := make([]byte, 1<<20)
	for i := range fill {
		fill[i] = byte(d.me + 1)
	}
	for off := 0; off < bufN; off += len(fill) {
		n := min(len(fill), bufN-off)
		if err := shmem.Put(d.sbuf, off, fill[:n], d.me); err != nil {
			return err
		}
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if d.me == 0 {
		d.header(stdout, stderr)
	}
	steps := []struct {
		name       string
		concurrent bool
		fn         func() error
	}{
		{"put_lat", false, func() error { return d.latSizes("put_lat", "perf_put_", false) }},
		{"get_lat", false, func() error { return d.latSizes("get_lat", "perf_get_", true) }},
		{"p_lat", false, func() error { return d.lat("p_lat", "perf_p_thread", "thread", 1, 8, false) }},
		{"g_lat", false, func() error { return d.lat("g_lat", "perf_g_thread", "thread", 1, 8, true) }},
		{"pingpong_p", true, func() error { return d.pingpong("pingpong_p", "perf_pingpong_p", d.flagP, &d.basePP) }},
		{"pingpong_putsignal", true, func() error {
			return d.pingpong("pingpong_putsignal", "perf_pingpong_putsignal", d.flagS, &d.basePS)
		}},
		{"barrier", true, d.barriers},
		{"put_bw", false, func() error { return d.putBW("put_bw", "perf_put_bw") }},
		{"launch", false, d.launch},
		{"diag_put", false, d.diagPut},
		{"diag_put_bw_unroll4", false, func() error { return d.putBW("diag_put_bw_unroll4", "diag_put_bw_unroll4") }},
		{"diag_pingpong", true, d.diagPingpong},
		{"diag_barrier", true, d.diagBarrier},
		{"coll", true, d.collRows},
		{"onstream", true, d.streamRows},
		{"alloc", false, d.allocRows},
		{"register", false, d.registerRows},
	}
	for _, s := range steps {
		if !d.want(s.name) || (strings.HasPrefix(s.name, "diag_") && !d.o.diag) {
			continue
		}
		if (s.name == "coll" || s.name == "onstream") && !d.o.coll && d.o.only == nil {
			continue // opt-in: -coll or -only
		}
		if (s.name == "alloc" || s.name == "register") && !d.o.mem && d.o.only == nil {
			continue // opt-in: -mem or -only
		}
		if s.concurrent && (!d.o.concurrent || d.npes < 2) {
			if d.me == 0 {
				fmt.Fprintf(stderr, "# %s skipped: needs 2 PEs whose kernels run at once (-concurrent, MPS)\n", s.name)
			}
			continue
		}
		if err := s.fn(); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return shmem.BarrierAll()
}

func (d *dev) header(stdout, stderr io.Writer) {
	w := stdout
	if d.o.json {
		w = stderr
	}
	host, _ := os.Hostname()
	scope := "system scope (peers on other GPUs)"
	if d.sameDevice {
		scope = "GPU scope (all PEs on this GPU)"
	}
	d.title = fmt.Sprintf("goshmem %s, device mode, transport cuda, %d PEs on %s, ordering %s, %s",
		versionString(), d.npes, d.gpuName, scope, time.Now().Format("2006-01-02 15:04"))
	fmt.Fprintf(w, "# %s\n", d.title)
	fmt.Fprintf(w, "# host %s, %s; module %s; iters=%d warmup=%d sizes %d..%d (thread scope ..%d); put_bw %d..%d, %d CTAs x %d threads\n",
		host, runtime.Version(), d.o.module, d.o.iters, d.o.warmup, d.o.minSize, d.o.maxSize, d.o.maxSizeThread,
		d.o.bwMin, d.o.bwMax, d.o.ctas, d.o.bwThreads)
	if !d.o.json {
		d.flush()
	}
}

func (d *dev) emit(r Row) {
	if d.me != 0 {
		return
	}
	r.Lib, r.Transport, r.Variant = "goshmem", "cuda", d.o.variant
	d.rows = append(d.rows, r)
	d.out.Write(r)
	d.flush()
}

// itersForDevice: the full count up to 4 KiB, then iters*4 KiB bytes per
// size, at least 20 (as nvshmem_perf's iters_for).
func itersForDevice(iters, size int) int {
	if size <= 4096 {
		return iters
	}
	n := int(int64(iters) * 4096 / int64(size))
	return max(min(n, iters), min(20, iters))
}

// warmupForDevice: the full warm-up up to 4 KiB, then n/5 (at least 5).
func warmupForDevice(warmup, n, size int) int {
	if size <= 4096 {
		return warmup
	}
	return min(warmup, max(n/5, 5))
}

// cycleSamples reads n cycle samples and the loop's meta words and returns
// the summary in ns and the kernel's clock rate in GHz (cycles per ns).
func (d *dev) cycleSamples(n int) (Summary, float64, error) {
	var meta [5]uint64
	if err := shmem.Get(meta[:], d.meta, 0, d.me); err != nil {
		return Summary{}, 0, err
	}
	s := d.host[:n]
	if err := shmem.Get(s, d.samples, 0, d.me); err != nil {
		return Summary{}, 0, err
	}
	ghz := float64(meta[3]-meta[2]) / float64(meta[1]-meta[0])
	if !(ghz > 0) || meta[1] <= meta[0] {
		ghz = 1.98
	}
	ns := make([]int64, n)
	for i, c := range s {
		ns[i] = int64(float64(c)/ghz*16 + 0.5) // 1/16 ns resolution, undone below
	}
	sum := Summarize(ns)
	sum.Median /= 16
	sum.P99 /= 16
	return sum, ghz, nil
}

func clockTiming(ghz float64) string { return fmt.Sprintf("clock64/iter @%.3f GHz", ghz) }

var scopeThreads = map[string]int{"thread": 1, "warp": 32}

func (d *dev) latSizes(name, prefix string, get bool) error {
	for _, scope := range []string{"thread", "warp", "block"} {
		top := d.o.maxSize
		if scope == "thread" {
			top = d.o.maxSizeThread
		}
		threads := scopeThreads[scope]
		if scope == "block" {
			threads = d.o.blockThreads
		}
		for _, size := range sizes(d.o.minSize, top) {
			if err := d.lat(name, prefix+scope, scope, threads, size, get); err != nil {
				return fmt.Errorf("%s size %d: %w", scope, size, err)
			}
		}
	}
	return nil
}

// lat runs one latency kernel on PE 0 (put/p: PE 0's sbuf -> PE 1's dbuf;
// get/g: PE 1's dbuf -> PE 0's sbuf) while the other PEs wait.
func (d *dev) lat(name, kernel, scope string, threads, size int, get bool) error {
	n := itersForDevice(d.o.iters, size)
	w := warmupForDevice(d.o.warmup, n, size)
	if d.me == 0 {
		dst, src := d.dbuf.DevicePtr(), d.sbuf.DevicePtr()
		if get {
			dst, src = d.sbuf.DevicePtr(), d.dbuf.DevicePtr()
		}
		cfg := shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(uint32(threads))}
		if err := shmem.Launch(d.k[kernel], cfg, dst, src, uint64(size), int32(d.peer), int32(n), int32(w),
			d.samples, d.meta); err != nil {
			return err
		}
		if err := shmem.Synchronize(); err != nil {
			return err
		}
		s, ghz, err := d.cycleSamples(n)
		if err != nil {
			return err
		}
		if !get && name == "put_lat" {
			// PE 0's sbuf holds 1s: the last byte must be at PE 1.
			var b [1]byte
			if err := shmem.Get(b[:], d.dbuf, size-1, d.peer); err != nil {
				return err
			}
			if b[0] != 1 {
				return fmt.Errorf("put_lat %s %d: data did not arrive at PE %d (byte %d = %d, want 1)", scope, size, d.peer, size-1, b[0])
			}
		}
		d.emit(Row{Name: name, Size: int64(size), Iters: int64(n), MedianUS: s.Median / 1000, P99US: s.P99 / 1000,
			Scope: scope, Timing: clockTiming(ghz)})
	}
	return shmem.BarrierAll()
}

// pingpong runs the two-sided round trip: both PEs' kernels at once
// (LaunchCollective, as nvshmem_perf's nvshmemx_collective_launch).
func (d *dev) pingpong(name, kernel string, flag shmem.Array[uint64], base *uint64) error {
	n := d.o.iters
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	cfg := shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(1)}
	if err := shmem.LaunchCollective(d.k[kernel], cfg, d.dbuf.DevicePtr(), d.sbuf.DevicePtr(), flag.DevicePtr(),
		int32(d.me), int32(d.peer), *base, int32(n), int32(d.o.warmup), d.samples, d.meta); err != nil {
		return err
	}
	if err := shmem.Synchronize(); err != nil {
		return err
	}
	*base += uint64(n + d.o.warmup)
	if d.me == 0 {
		s, ghz, err := d.cycleSamples(n)
		if err != nil {
			return err
		}
		d.emit(Row{Name: name, Size: 8, Iters: int64(n), MedianUS: s.Median / 1000, P99US: s.P99 / 1000,
			Scope: "thread", Timing: clockTiming(ghz)})
	}
	return shmem.BarrierAll()
}

func (d *dev) barriers() error {
	for _, scope := range []string{"thread", "block"} {
		threads, kernel := 1, "perf_barrier_thread"
		if scope == "block" {
			threads, kernel = d.o.blockThreads, "perf_barrier_block"
		}
		n := d.o.iters
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
		cfg := shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(uint32(threads))}
		if err := shmem.LaunchCollective(d.k[kernel], cfg, int32(n), int32(d.o.warmup), d.samples, d.meta); err != nil {
			return err
		}
		if err := shmem.Synchronize(); err != nil {
			return err
		}
		if d.me == 0 {
			s, ghz, err := d.cycleSamples(n)
			if err != nil {
				return err
			}
			d.emit(Row{Name: "barrier", Size: 0, Iters: int64(n), MedianUS: s.Median / 1000, P99US: s.P99 / 1000,
				Scope: scope, Timing: clockTiming(ghz)})
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
	}
	return nil
}

func (d *dev) bwIters(size int) int {
	return int(max(10, min(d.o.bwTarget/int64(size), 10000)))
}

func (d *dev) putBW(name, kernel string) error {
	if d.k[kernel] == nil {
		return nil
	}
	meta := make([]uint64, 8+2*d.o.ctas)
	for _, size := range sizes(d.o.bwMin, d.o.bwMax) {
		n := d.bwIters(size)
		if d.me == 0 {
			cfg := shmem.LaunchConfig{Grid: shmem.Dim(uint32(d.o.ctas)), Block: shmem.Dim(uint32(d.o.bwThreads))}
			for _, reps := range []int{2, n} { // warm-up launch, then the timed one
				if err := shmem.Launch(d.k[kernel], cfg, d.dbuf.DevicePtr(), d.sbuf.DevicePtr(), uint64(size),
					int32(d.peer), int32(reps), d.meta); err != nil {
					return err
				}
				if err := shmem.Synchronize(); err != nil {
					return err
				}
			}
			if err := shmem.Get(meta, d.meta, 0, d.me); err != nil {
				return err
			}
			lo, hi := ^uint64(0), uint64(0)
			for b := 0; b < d.o.ctas; b++ {
				lo, hi = min(lo, meta[8+2*b]), max(hi, meta[9+2*b])
			}
			ns := float64(hi - lo)
			per := ns / float64(n) / 1000
			d.emit(Row{Name: name, Size: int64(size), Iters: int64(n), MedianUS: per, P99US: per,
				BWGBs: float64(size) * float64(n) / ns, Scope: "block",
				Timing: fmt.Sprintf("globaltimer, %d CTAs x %d threads, %d puts", d.o.ctas, d.o.bwThreads, n)})
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
	}
	return nil
}

const launchBurst = 128

// launch: the Go host's cost of shmem.Launch of an empty kernel (mean of
// -launches back-to-back launches, p99 of the per-call times), and of
// Launch + Synchronize (median and p99 per pair).
func (d *dev) launch() error {
	if d.me == 0 {
		k := d.k["perf_empty"]
		cfg := shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(1)}
		for i := 0; i < 100; i++ {
			if err := shmem.Launch(k, cfg); err != nil {
				return err
			}
		}
		if err := shmem.Synchronize(); err != nil {
			return err
		}
		n := d.o.launches
		per := make([]int64, n)
		// launch: bursts of launchBurst launches, Synchronize (untimed)
		// between bursts, so the stream's queue never fills and each call
		// is the host's cost alone.
		var total int64
		for i := 0; i < n; i++ {
			if i%launchBurst == 0 && i > 0 {
				if err := shmem.Synchronize(); err != nil {
					return err
				}
			}
			a := nanotime()
			if err := shmem.Launch(k, cfg); err != nil {
				return err
			}
			per[i] = nanotime() - a
			total += per[i]
		}
		if err := shmem.Synchronize(); err != nil {
			return err
		}
		s := Summarize(per)
		d.emit(Row{Name: "launch", Iters: int64(n), MedianUS: float64(total) / float64(n) / 1000, P99US: s.P99 / 1000, Scope: "-",
			Timing: fmt.Sprintf("mean per Launch call, bursts of %d with untimed Synchronize between (p99 per call); per-call median %.3f us", launchBurst, s.Median/1000)})
		// launch_b2b: n back-to-back launches (the queue fills, so this is
		// bounded by how fast the GPU retires empty kernels).
		t0 := nanotime()
		for i := range per {
			a := nanotime()
			if err := shmem.Launch(k, cfg); err != nil {
				return err
			}
			per[i] = nanotime() - a
		}
		tot := nanotime() - t0
		if err := shmem.Synchronize(); err != nil {
			return err
		}
		s = Summarize(per)
		d.emit(Row{Name: "launch_b2b", Iters: int64(n), MedianUS: float64(tot) / float64(n) / 1000, P99US: s.P99 / 1000, Scope: "-",
			Timing: fmt.Sprintf("mean of %d back-to-back async Launch (p99 per call); per-call median %.3f us", n, s.Median/1000)})
		for i := range per {
			a := nanotime()
			if err := shmem.Launch(k, cfg); err != nil {
				return err
			}
			if err := shmem.Synchronize(); err != nil {
				return err
			}
			per[i] = nanotime() - a
		}
		s = Summarize(per)
		d.emit(Row{Name: "launch_sync", Iters: int64(n), MedianUS: s.Median / 1000, P99US: s.P99 / 1000, Scope: "-",
			Timing: "per Launch+Synchronize, host nanotime"})
	}
	return shmem.BarrierAll()
}

// diagPut splits put 8 B + quiet (thread) into its parts, on PE 0:
// diag_put_ptr: peer address hoisted out of the loop (goshmem_ptr once),
// 8 B load + store + goshmem_quiet; diag_put_ptr_imm: no source load;
// diag_put_ptr_imm_fence: a bare fence.sc.gpu instead of goshmem_quiet;
// diag_put_translate: goshmemi_peer every put; diag_put_ptr_copy: the
// header's copy routine from a hoisted address.
func (d *dev) diagPut() error {
	k := d.k["diag_put"]
	if k == nil {
		return nil
	}
	for mode, name := range []string{"diag_put_ptr", "diag_put_ptr_imm", "diag_put_ptr_imm_fence", "diag_put_translate",
		"diag_put_ptr_copy", "diag_put_ptr_ldg", "diag_put_const8", "diag_put_ptr_acqrel"} {
		n := d.o.iters
		if d.me == 0 {
			cfg := shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(1)}
			if err := shmem.Launch(k, cfg, d.dbuf.DevicePtr(), d.sbuf.DevicePtr(), int32(d.peer), int32(mode), int32(n),
				int32(d.o.warmup), d.samples, d.meta); err != nil {
				return err
			}
			if err := shmem.Synchronize(); err != nil {
				return err
			}
			s, ghz, err := d.cycleSamples(n)
			if err != nil {
				return err
			}
			d.emit(Row{Name: name, Size: 8, Iters: int64(n), MedianUS: s.Median / 1000, P99US: s.P99 / 1000,
				Scope: "thread", Timing: clockTiming(ghz)})
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
	}
	return nil
}

// diagPingpong times the building blocks of p + wait_until's round trip
// (bench/gpu/perf.cu, diag_pingpong): the no-ordering floor, today's
// relaxed poll + acq_rel fence, acquire polls, and the library call itself
// in the same kernel, so the difference between them is the ordering's cost.
func (d *dev) diagPingpong() error {
	k := d.k["diag_pingpong"]
	if k == nil {
		return nil
	}
	for mode, name := range []string{"diag_pp_volatile", "diag_pp_relaxed_fence", "diag_pp_acquire_poll",
		"diag_pp_relaxed_reread", "diag_pp_release_acquire", "diag_pp_library"} {
		n := d.o.iters
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
		cfg := shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(1)}
		if err := shmem.LaunchCollective(k, cfg, d.flagP.DevicePtr(), int32(d.me), int32(d.peer), int32(mode), d.basePP,
			int32(n), int32(d.o.warmup), d.samples, d.meta); err != nil {
			return err
		}
		if err := shmem.Synchronize(); err != nil {
			return err
		}
		d.basePP += uint64(n + d.o.warmup)
		if d.me == 0 {
			s, ghz, err := d.cycleSamples(n)
			if err != nil {
				return err
			}
			d.emit(Row{Name: name, Size: 8, Iters: int64(n), MedianUS: s.Median / 1000, P99US: s.P99 / 1000,
				Scope: "thread", Timing: clockTiming(ghz)})
		}
	}
	return shmem.BarrierAll()
}

// diagBarrier times barrier_all against sync_all (no quiet) and a
// hand-written release/acquire dissemination (bench/gpu/perf.cu,
// diag_barrier). Its words are the upper half of flagS (rounds 64 B apart).
func (d *dev) diagBarrier() error {
	k := d.k["diag_barrier"]
	if k == nil {
		return nil
	}
	words := d.flagS.DevicePtr() + 128*8
	for mode, name := range []string{"diag_bar_library", "diag_bar_sync_all", "diag_bar_release_arrive"} {
		n := d.o.iters
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
		cfg := shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(1)}
		if err := shmem.LaunchCollective(k, cfg, int32(mode), int32(n), int32(d.o.warmup), d.samples, d.meta, words,
			d.baseBar); err != nil {
			return err
		}
		if err := shmem.Synchronize(); err != nil {
			return err
		}
		d.baseBar += uint64(n + d.o.warmup)
		if d.me == 0 {
			s, ghz, err := d.cycleSamples(n)
			if err != nil {
				return err
			}
			d.emit(Row{Name: name, Size: 0, Iters: int64(n), MedianUS: s.Median / 1000, P99US: s.P99 / 1000,
				Scope: "thread", Timing: clockTiming(ghz)})
		}
	}
	return shmem.BarrierAll()
}
