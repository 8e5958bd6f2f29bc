// Command devtest is the device test suite of goshmem: an SPMD program
// (mpirun -np N, N >= 1; run by tests/gpu/run.sh on the GPU machine) that
// loads tests/gpu/kernels/{devtest,compat}.cu fatbins, launches a kernel for
// every group of device calls of include/goshmem.h and checks the values
// they produced (each kernel counts failed checks on the device; the host
// checks the data too), then checks the host API on device arrays
// (Put/Get/P/G/atomics/WaitUntil/PutSignal) and bad input (non-module file,
// missing kernel, Go int argument, host array argument, oversized
// collective grid), and GPU memory allocated outside goshmem as the local
// side of the stream calls (RegisterDevice; interop.go). PE 0 prints
// "devtest: N passed, M failed"; the exit status is non-zero on any
// failure on any PE.
//
// -heap-grow adds the test of the GPU heap that grows (CUDA VMM): start
// the heap small, growing by what each allocation needs
// (GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_CHUNK=2M); it fails when the heap
// does not grow.
//
// -fault: PE 0 launches a kernel that writes to an illegal address and the
// other PEs wait in a barrier; Synchronize on PE 0 must return an error
// naming the kernel, PE 0 exits 1, and mpirun must end every PE.
package main

import (
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"time"

	// the kernels of the stream tests and the host collectives on GPU arrays
	_ "github.com/goshmem/goshmem/gpulib"
	"github.com/goshmem/goshmem/shmem"
)

var (
	fatbin   = flag.String("fatbin", "bin/gpu/devtest.fatbin", "devtest kernels (tests/gpu/kernels/devtest.cu)")
	compat   = flag.String("compat", "bin/gpu/compat.fatbin", "NVSHMEM-names kernels (tests/gpu/kernels/compat.cu)")
	rounds   = flag.Int("rounds", 200, "rounds of the barrier/signal/team loops (keep small without MPS: each round trip is a GPU time slice)")
	fault    = flag.Bool("fault", false, "fault mode: PE 0 runs a kernel that writes to an illegal address")
	watchdog = flag.Duration("watchdog", 90*time.Second, "per-test limit; a test over it ends the process with status 3")
	only     = flag.String("run", "", "run only tests whose name contains this")
	part     = flag.String("part", "all", "all, p2p (the point-to-point suite and the RegisterDevice tests), coll (the collective, stream and RegisterDevice tests; needs -coll), devcoll (device collectives only) or stream (stream, host-GPU collective and RegisterDevice tests)")
)

var (
	me, npes       int
	right, left    int
	mod, cmod      *shmem.Module
	buf            shmem.Array[uint8] // symmetric scratch for kernels
	res            shmem.Array[int32] // per-PE result words of the last kernel
	passed, failed int
	le             = binary.LittleEndian
)

const bufBytes = 4 << 20

func main() {
	flag.Parse()
	if err := shmem.Init(); err != nil {
		fmt.Fprintf(os.Stderr, "devtest: Init: %v\n", err)
		os.Exit(1)
	}
	me, npes = shmem.MyPE(), shmem.NPEs()
	right, left = (me+1)%npes, (me+npes-1)%npes
	gpu, err := shmem.DeviceInfo()
	if err != nil {
		fmt.Fprintf(os.Stderr, "devtest: PE %d: no GPU: %v\n", me, err)
		os.Exit(1)
	}
	fmt.Printf("devtest: PE %d/%d: GPU %d %s (PCI %s), device heap %d MiB, all peers same GPU: %v\n",
		me, npes, gpu.Device, gpu.Name, gpu.PCIBusID, gpu.HeapBytes>>20, gpu.SameDevice)
	// -part coll -fatbin "": no point-to-point module (the host-only
	// collective cases run without any kernel of ours, e.g. under the fake driver)
	if *part == "all" || *part == "p2p" || *fatbin != "" {
		if mod, err = shmem.LoadModuleFile(*fatbin); err != nil {
			die("LoadModuleFile(%s): %v", *fatbin, err)
		}
		if !mod.HasDeviceAPI {
			die("%s: module has no goshmemi_device_state", *fatbin)
		}
	}
	if buf, err = shmem.AllocDevice[uint8](bufBytes); err != nil {
		die("AllocDevice buf: %v", err)
	}
	if res, err = shmem.AllocDevice[int32](64); err != nil {
		die("AllocDevice res: %v", err)
	}
	if *fault {
		faultMode()
		return
	}
	if *part == "all" || *part == "p2p" {
		if cmod, err = shmem.LoadModuleFile(*compat); err != nil {
			die("LoadModuleFile(%s): %v", *compat, err)
		}
	}
	var all []test
	switch *part {
	case "all":
		all = append(append(append(tests[:len(tests):len(tests)], collTests()...), streamTests()...), interopTests()...)
	case "p2p":
		all = append(tests[:len(tests):len(tests)], interopTests()...)
	case "coll", "devcoll", "stream":
		if *part != "stream" {
			all = collTests()
		}
		if *part != "devcoll" {
			all = append(all, streamTests()...)
		}
		if len(all) == 0 {
			die("-part %s: no collective tests (give -coll FATBIN)", *part)
		}
		if *part != "devcoll" {
			all = append(all, interopTests()...)
		}
	default:
		die("-part %q: want all, p2p, coll, devcoll or stream", *part)
	}
	for _, t := range all {
		if *only != "" && !strings.Contains(t.name, *only) {
			continue
		}
		run(t)
	}
	// every PE reports; PE 0 sums
	// run agrees every outcome across PEs, so the counts are the same everywhere
	nfail := failed
	if me == 0 {
		fmt.Printf("devtest: %d passed, %d failed (tests, each on all %d PEs; rounds=%d)\n", passed, failed, npes, *rounds)
	}
	check(shmem.BarrierAll())
	if err := shmem.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "devtest: PE %d: Finalize: %v\n", me, err)
		os.Exit(1)
	}
	if nfail != 0 {
		os.Exit(1)
	}
}

type test struct {
	name string
	fn   func() error
}

// run runs one test collectively: every PE runs it, the outcome is agreed
// (a failure on any PE fails the test everywhere) and PE 0 prints it.
func run(t test) {
	check(shmem.BarrierAll())
	done := make(chan struct{})
	go func() {
		select {
		case <-done:
		case <-time.After(*watchdog):
			fmt.Printf("devtest: PE %d: FAIL %s: still running after %v (hang?)\n", me, t.name, *watchdog)
			os.Exit(3)
		}
	}()
	start := time.Now()
	err := t.fn()
	close(done)
	d := time.Since(start)
	if err != nil {
		fmt.Printf("devtest: PE %d: FAIL %s: %v\n", me, t.name, err)
	}
	if errors.Is(err, shmem.ErrTimeout) {
		// GOSHMEM_TIMEOUT ended a wait: a kernel may still be running, and
		// every later test would wait for it too
		fmt.Printf("devtest: PE %d: exiting after a timeout in %s\n", me, t.name)
		os.Exit(3)
	}
	// agree (a test that left the PEs out of step fails these collectives:
	// then the run cannot go on)
	flags, ferr := shmem.Alloc[int32](1)
	all, aerr := shmem.Alloc[int32](1)
	if err := errors.Join(ferr, aerr); err != nil {
		check(fmt.Errorf("after %s the PEs no longer agree: %w", t.name, err))
	}
	if err != nil {
		flags.Local()[0] = 1
	}
	check(shmem.Reduce(shmem.TeamWorld, shmem.OpSum, all, flags, 1))
	bad := all.Local()[0]
	_ = flags.Free()
	_ = all.Free()
	if bad == 0 {
		passed++
		if me == 0 {
			fmt.Printf("devtest: ok   %-28s %8.1f ms\n", t.name, float64(d.Microseconds())/1000)
		}
	} else {
		failed++
		if me == 0 {
			fmt.Printf("devtest: FAIL %-28s %8.1f ms (%d PEs failed)\n", t.name, float64(d.Microseconds())/1000, bad)
		}
	}
}

func die(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "devtest: PE %d: "+format+"\n", append([]any{me}, a...)...)
	os.Exit(1)
}

func check(err error) {
	if err != nil {
		die("%v", err)
	}
}

// ---- helpers ----------------------------------------------------------------

// reset zeroes this PE's buf and res (host Put into GPU memory) and syncs.
func reset() error {
	z := make([]uint8, 256<<10)
	if err := shmem.Put(buf, 0, z, me); err != nil {
		return err
	}
	if err := shmem.Put(res, 0, make([]int32, 64), me); err != nil {
		return err
	}
	return shmem.BarrierAll()
}

// kernel launches name from m on every PE with args and waits for it;
// returns this PE's res words.
func kernel(m *shmem.Module, name string, coll bool, grid, block uint32, args ...any) ([]int32, error) {
	k, err := m.Kernel(name)
	if err != nil {
		return nil, err
	}
	cfg := shmem.LaunchConfig{Grid: shmem.Dim(grid), Block: shmem.Dim(block)}
	var collErr error
	if coll {
		if collErr = shmem.LaunchCollective(k, cfg, args...); collErr != nil {
			// report it, but still run the kernel so the rest is checked
			fmt.Printf("devtest: PE %d: LaunchCollective(%s) failed: %v; retrying with Launch\n", me, name, collErr)
			err = shmem.Launch(k, cfg, args...)
		}
	} else {
		err = shmem.Launch(k, cfg, args...)
	}
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", name, err)
	}
	if err := shmem.Synchronize(); err != nil {
		return nil, err
	}
	if err := shmem.BarrierAll(); err != nil {
		return nil, err
	}
	r := make([]int32, 64)
	if err := shmem.Get(r, res, 0, me); err != nil {
		return nil, err
	}
	if collErr != nil {
		if r[0] == 0 {
			r[0], r[1] = 1, -1
		}
		return r, fmt.Errorf("LaunchCollective %s: %w (device checks with Launch: %d failed)", name, collErr, r[0])
	}
	return r, nil
}

// devFail turns the device's failure count into an error.
func devFail(name string, r []int32) error {
	if r[0] != 0 {
		return fmt.Errorf("%s: %d device checks failed (first at devtest.cu/compat.cu line %d)", name, r[0], r[1])
	}
	return nil
}

func bytesAt(pe, off, n int) ([]byte, error) {
	b := make([]byte, n)
	return b, shmem.Get(b, buf, off, pe)
}

func u64At(pe, off int) (uint64, error) {
	b, err := bytesAt(pe, off, 8)
	if err != nil {
		return 0, err
	}
	return le.Uint64(b), nil
}

func u32At(pe, off int) (uint32, error) {
	b, err := bytesAt(pe, off, 4)
	if err != nil {
		return 0, err
	}
	return le.Uint32(b), nil
}

// ---- device tests -------------------------------------------------------------

var tests = []test{
	{"device info", func() error {
		if err := reset(); err != nil {
			return err
		}
		r, err := kernel(mod, "t_info", false, 1, 32, res)
		if err != nil {
			return err
		}
		if int(r[2]) != me || int(r[3]) != npes || r[4] != 1 {
			return fmt.Errorf("device says my_pe=%d n_pes=%d state_ok=%d; host says %d, %d", r[2], r[3], r[4], me, npes)
		}
		return nil
	}},
	{"putmem/getmem (+nbi,warp,block)", func() error {
		for _, n := range []int32{1, 37, 1037, 40000} {
			if err := reset(); err != nil {
				return err
			}
			r, err := kernel(mod, "t_rma", false, 1, 256, buf, res, n)
			if err != nil {
				return err
			}
			if err := devFail(fmt.Sprintf("n=%d", n), r); err != nil {
				return err
			}
			if r[2] != 36 {
				return fmt.Errorf("n=%d: %d phases ran, want 36", n, r[2])
			}
		}
		// host check of the last put phase's data: dst holds the left PE's pattern of phase 36 (get from right)
		b, err := bytesAt(me, 65536+6, 40000)
		if err != nil {
			return err
		}
		for i := range b {
			if want := byte(right*37 + 36*101 + i*13 + 1); b[i] != want {
				return fmt.Errorf("host check: dst[%d] = %d, want %d", i, b[i], want)
			}
		}
		return nil
	}},
	{"typed put/get/p/g + sized", func() error {
		if err := reset(); err != nil {
			return err
		}
		r, err := kernel(mod, "t_typed", false, 1, 128, buf, res)
		if err != nil {
			return err
		}
		if err := devFail("typed", r); err != nil {
			return err
		}
		if r[2] != 23 || r[3] != 5 {
			return fmt.Errorf("%d types and %d sizes ran, want 23 and 5", r[2], r[3])
		}
		return nil
	}},
	{"fence/quiet/ctx_quiet order", func() error {
		if err := reset(); err != nil {
			return err
		}
		n := int32(*rounds * 10)
		r, err := kernel(mod, "t_order", false, 1, 64, buf, res, n)
		if err != nil {
			return err
		}
		if err := devFail("order", r); err != nil {
			return err
		}
		if r[2] < 1 {
			return fmt.Errorf("receiver saw %d flag updates", r[2])
		}
		v, err := u64At(me, 256)
		if err != nil {
			return err
		}
		if v != uint64(n) {
			return fmt.Errorf("host check: flag = %d, want %d", v, n)
		}
		return nil
	}},
	{"put_signal/signal_op/wait", func() error {
		for _, n := range []int32{8, 1001, 32768} {
			if err := reset(); err != nil {
				return err
			}
			r, err := kernel(mod, "t_signal", false, 1, 128, buf, res, n, int32(*rounds))
			if err != nil {
				return err
			}
			if err := devFail(fmt.Sprintf("n=%d", n), r); err != nil {
				return err
			}
			if want := min(*rounds, 10); int(r[2]) != want || int(r[3]) != *rounds {
				return fmt.Errorf("n=%d: %d variants ran (want %d), final signal %d (want %d)", n, r[2], want, r[3], *rounds)
			}
			s, err := u64At(me, 131072)
			if err != nil {
				return err
			}
			if s != uint64(*rounds) {
				return fmt.Errorf("host check: signal word = %d, want %d", s, *rounds)
			}
		}
		return nil
	}},
	{"wait_until/test (all/any/some)", func() error {
		if err := reset(); err != nil {
			return err
		}
		r, err := kernel(mod, "t_wait", false, 1, 32, buf, res)
		if err != nil {
			return err
		}
		if err := devFail("wait", r); err != nil {
			return err
		}
		if r[2] != 28 {
			return fmt.Errorf("%d checks ran, want 28", r[2])
		}
		b, err := bytesAt(me, 0, 128)
		if err != nil {
			return err
		}
		for i := 1; i <= 8; i++ {
			if v := int64(le.Uint64(b[8*i:])); v != int64(10+i) {
				return fmt.Errorf("host check: ivar[%d] = %d, want %d", i, v, 10+i)
			}
		}
		return nil
	}},
	{"atomics", func() error {
		const grid, block, iters, locks = 4, 128, 8, 4
		nhits := npes * grid * block * iters
		if err := reset(); err != nil {
			return err
		}
		if me == 0 { // and-words start all ones
			if err := shmem.Put(buf, 260, []uint8{0xff, 0xff, 0xff, 0xff}, 0); err != nil {
				return err
			}
			if err := shmem.Put(buf, 280, []uint8{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, 0); err != nil {
				return err
			}
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
		r, err := kernel(mod, "t_amo", false, grid, block, buf, res, int32(iters), int32(locks), int32(nhits))
		if err != nil {
			return err
		}
		if err := devFail("amo", r); err != nil {
			return err
		}
		var errs []string
		expect := func(what string, got, want uint64) {
			if got != want {
				errs = append(errs, fmt.Sprintf("%s = %#x, want %#x", what, got, want))
			}
		}
		ctr, _ := u64At(0, 0)
		expect("fetch_add counter on PE 0", ctr, uint64(nhits))
		hb, err := bytesAt(0, 65536, 4*nhits)
		if err != nil {
			return err
		}
		bad := 0
		for i := 0; i < nhits; i++ {
			if le.Uint32(hb[4*i:]) != 1 {
				bad++
			}
		}
		if bad != 0 {
			errs = append(errs, fmt.Sprintf("fetch_add results are not a permutation of [0,%d): %d values seen != once", nhits, bad))
		}
		i32, _ := u32At(npes-1, 64)
		expect("inc/fetch_inc/add counter on last PE", uint64(i32), uint64(4*nhits))
		lv, _ := u64At(0, 192)
		expect("cas-lock protected counter", lv, uint64(npes*grid*locks))
		lk, _ := u64At(0, 128)
		expect("lock word", lk, 0)
		all := uint64(1)<<npes - 1
		or32, _ := u32At(0, 256)
		and32, _ := u32At(0, 260)
		xor32, _ := u32At(0, 264)
		expect("fetch_or32", uint64(or32), all)
		expect("and32", uint64(and32), uint64(^uint32(all)))
		expect("fetch_xor32", uint64(xor32), all)
		or64, _ := u64At(0, 272)
		and64, _ := u64At(0, 280)
		xor64, _ := u64At(0, 288)
		expect("or64", or64, all<<32)
		expect("fetch_and64", and64, ^(all << 32))
		var x uint64
		for p := 0; p < npes; p++ {
			x ^= 3 << (2 * p)
		}
		expect("xor64", xor64, x)
		ior, _ := u32At(0, 296)
		expect("int32 fetch_or", uint64(ior), all)
		// swap chain: old values plus the final value are {0..npes}
		sw, _ := u32At(0, 320)
		seen := map[uint32]int{sw: 1}
		for p := 0; p < npes; p++ {
			o, _ := u32At(0, 384+4*p)
			seen[o]++
		}
		for v := 0; v <= npes; v++ {
			if seen[uint32(v)] != 1 {
				errs = append(errs, fmt.Sprintf("swap chain: value %d seen %d times (%v)", v, seen[uint32(v)], seen))
				break
			}
		}
		d, _ := u64At(me, 1024+8*left)
		if f := math.Float64frombits(d); f != 0.5+float64(left) {
			errs = append(errs, fmt.Sprintf("double atomic_set from PE %d = %v, want %v", left, f, 0.5+float64(left)))
		}
		fs, _ := u32At(0, 2048)
		if f := math.Float32frombits(fs); f != 1.25 {
			errs = append(errs, fmt.Sprintf("float atomic_swap = %v, want 1.25", f))
		}
		if len(errs) > 0 {
			return errors.New(strings.Join(errs, "; "))
		}
		return nil
	}},
	barrierTest("barrier_all thread", 0, 0),
	barrierTest("barrier_all warp", 1, 0),
	barrierTest("barrier_all block", 2, 0),
	barrierTest("sync_all thread", 0, 1),
	barrierTest("sync_all warp", 1, 1),
	barrierTest("sync_all block", 2, 1),
	{"team barrier (split teams)", func() error {
		// A: every PE (stride 1); B: the last PE alone
		ta, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 1, npes)
		if err != nil {
			return err
		}
		tb, err := shmem.TeamSplitStrided(shmem.TeamWorld, npes-1, 1, 1)
		if err != nil {
			return err
		}
		ida, idb := ta.DeviceID(), tb.DeviceID()
		if ida < 1 {
			return fmt.Errorf("team A DeviceID = %d, want a slot >= 1", ida)
		}
		if (me == npes-1) != (idb >= 1) {
			return fmt.Errorf("team B DeviceID = %d on PE %d", idb, me)
		}
		if err := reset(); err != nil {
			return err
		}
		r, err := kernel(mod, "t_team", true, 1, 64, buf, res, int32(ida), int32(ta.MyPE()), int32(ta.NPEs()),
			int32(0), int32(1), int32(idb), int32(tb.MyPE()), int32(tb.NPEs()), int32(*rounds))
		if err != nil {
			return err
		}
		return devFail("team", r)
	}},
	{"goshmem_ptr", func() error {
		if err := reset(); err != nil {
			return err
		}
		r, err := kernel(mod, "t_ptr", false, 1, 32, buf, res)
		if err != nil {
			return err
		}
		if err := devFail("ptr", r); err != nil {
			return err
		}
		v, err := u32At(me, 1024+4*left)
		if err == nil && v != uint32(1000+left) {
			err = fmt.Errorf("host check: a[%d] = %d, want %d", left, v, 1000+left)
		}
		return err
	}},
	{"nvshmem_compat names", func() error {
		if err := reset(); err != nil {
			return err
		}
		r, err := kernel(cmod, "c_compat", true, 1, 64, buf, res, int32(me), int32(npes), int32(max(*rounds/4, 1)))
		if err != nil {
			return err
		}
		return devFail("compat", r)
	}},
	// ---- host API on device arrays ----
	{"host Put/Get/P/G on GPU arrays", hostRMA},
	{"host atomics on GPU arrays", hostAtomics},
	{"host WaitUntil/PutSignal on GPU", hostSignal},
	// ---- bad input ----
	{"bad input errors", badInput},
}

func barrierTest(name string, form, sync int32) test {
	return test{name, func() error {
		if err := reset(); err != nil {
			return err
		}
		r, err := kernel(mod, "t_barrier", true, 1, 64, buf, res, int32(*rounds), form, sync)
		if err != nil {
			return err
		}
		if err := devFail(name, r); err != nil {
			return err
		}
		if me == 0 {
			fmt.Printf("devtest:      %s: %d rounds, %.2f us per barrier (device globaltimer)\n", name, r[3], float64(r[2])/float64(max(r[3], 1)))
		}
		tot, err := u64At(0, 4096)
		if err == nil && tot != uint64(npes**rounds) {
			err = fmt.Errorf("host check: %d barrier rounds counted on PE 0, want %d", tot, npes**rounds)
		}
		return err
	}}
}

func hostRMA() error {
	a, err := shmem.AllocDevice[int64](1000)
	if err != nil {
		return err
	}
	defer a.Free()
	f, err := shmem.AllocDevice[float64](16)
	if err != nil {
		return err
	}
	defer f.Free()
	if !a.OnDevice() || a.DevicePtr() == 0 {
		return fmt.Errorf("AllocDevice array: OnDevice=%v DevicePtr=%#x", a.OnDevice(), a.DevicePtr())
	}
	src := make([]int64, 1000)
	for i := range src {
		src[i] = int64(me*1_000_000 + i)
	}
	if err := shmem.Put(a, 0, src, right); err != nil {
		return err
	}
	if err := shmem.P(f, 3, 0.5+float64(me), right); err != nil {
		return err
	}
	if err := shmem.Quiet(); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	got := make([]int64, 1000)
	if err := shmem.Get(got, a, 0, me); err != nil {
		return err
	}
	for i, v := range got {
		if v != int64(left*1_000_000+i) {
			return fmt.Errorf("local a[%d] = %d after Put from PE %d, want %d", i, v, left, left*1_000_000+i)
		}
	}
	// Get from the right PE's copy (what I did not write)
	part := make([]int64, 10)
	if err := shmem.Get(part, a, 500, right); err != nil {
		return err
	}
	for i, v := range part {
		if v != int64(me*1_000_000+500+i) {
			return fmt.Errorf("from PE %d by Get: a[%d] = %d, want %d", right, 500+i, v, me*1_000_000+500+i)
		}
	}
	g, err := shmem.G(f, 3, me)
	if err != nil {
		return err
	}
	if g != 0.5+float64(left) {
		return fmt.Errorf("G(f[3]) = %v, want %v", g, 0.5+float64(left))
	}
	g, err = shmem.G(f, 3, right)
	if err != nil {
		return err
	}
	if g != 0.5+float64(me) {
		return fmt.Errorf("G(f[3]) on PE %d = %v, want %v", right, g, 0.5+float64(me))
	}
	return shmem.BarrierAll()
}

func hostAtomics() error {
	c, err := shmem.AllocDevice[int64](8)
	if err != nil {
		return err
	}
	defer c.Free()
	w, err := shmem.AllocDevice[uint32](8)
	if err != nil {
		return err
	}
	defer w.Free()
	const n = 50
	olds := map[int64]bool{}
	for i := 0; i < n; i++ {
		o, err := shmem.AtomicFetchAdd(c, 0, 1, 0)
		if err != nil {
			return err
		}
		if o < 0 || o >= int64(n*npes) || olds[o] {
			return fmt.Errorf("AtomicFetchAdd returned %d (range [0,%d), seen before: %v)", o, n*npes, olds[o])
		}
		olds[o] = true
		if err := shmem.AtomicAdd(w, 1, 2, right); err != nil {
			return err
		}
	}
	// CAS: exactly one PE wins slot 2 on PE 0
	old, err := shmem.AtomicCompareSwap(c, 2, 0, int64(me+1), 0)
	if err != nil {
		return err
	}
	if old == 0 {
		if err := shmem.AtomicInc(c, 3, 0); err != nil { // count winners
			return err
		}
	}
	if _, err := shmem.AtomicFetchOr(w, 3, uint32(1)<<me, 0); err != nil {
		return err
	}
	if _, err := shmem.AtomicFetchXor(w, 4, uint32(1)<<me, 0); err != nil {
		return err
	}
	if err := shmem.AtomicSet(w, 5, uint32(0xffff), me); err != nil {
		return err
	}
	if _, err := shmem.AtomicFetchAnd(w, 5, uint32(0x0ff0), me); err != nil {
		return err
	}
	sw, err := shmem.AtomicSwap(w, 6, uint32(77+me), me)
	if err != nil {
		return err
	}
	if sw != 0 {
		return fmt.Errorf("AtomicSwap old = %d, want 0", sw)
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	tot, err := shmem.AtomicFetch(c, 0, 0)
	if err != nil {
		return err
	}
	if tot != int64(n*npes) {
		return fmt.Errorf("AtomicFetchAdd total on PE 0 = %d, want %d", tot, n*npes)
	}
	if v, _ := shmem.G(w, 1, me); v != 2*n {
		return fmt.Errorf("AtomicAdd from PE %d: %d, want %d", left, v, 2*n)
	}
	winners, _ := shmem.G(c, 3, 0)
	winner, _ := shmem.G(c, 2, 0)
	if winners != 1 || winner < 1 || winner > int64(npes) {
		return fmt.Errorf("CompareSwap: %d winners, slot = %d", winners, winner)
	}
	all := uint32(1)<<npes - 1
	if v, _ := shmem.G(w, 3, 0); v != all {
		return fmt.Errorf("AtomicFetchOr result %#x, want %#x", v, all)
	}
	if v, _ := shmem.G(w, 4, 0); v != all {
		return fmt.Errorf("AtomicFetchXor result %#x, want %#x", v, all)
	}
	if v, _ := shmem.AtomicFetch(w, 5, me); v != 0x0ff0 {
		return fmt.Errorf("AtomicSet+FetchAnd = %#x, want 0xff0", v)
	}
	if v, _ := shmem.G(w, 6, me); v != uint32(77+me) {
		return fmt.Errorf("AtomicSwap stored %d, want %d", v, 77+me)
	}
	return shmem.BarrierAll()
}

func hostSignal() error {
	d, err := shmem.AllocDevice[int32](65) // payload [0,64), P target 64
	if err != nil {
		return err
	}
	defer d.Free()
	sig, err := shmem.AllocDevice[uint64](2)
	if err != nil {
		return err
	}
	defer sig.Free()
	payload := make([]int32, 64)
	for i := range payload {
		payload[i] = int32(me*100 + i)
	}
	if err := shmem.PutSignal(d, 0, payload, sig, 0, 9, shmem.SignalSet, right); err != nil {
		return err
	}
	v, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpEQ, 9)
	if err != nil {
		return err
	}
	if v != 9 {
		return fmt.Errorf("SignalWaitUntil = %d", v)
	}
	got := make([]int32, 64)
	if err := shmem.Get(got, d, 0, me); err != nil {
		return err
	}
	for i, x := range got {
		if x != int32(left*100+i) {
			return fmt.Errorf("PutSignal payload[%d] = %d, want %d", i, x, left*100+i)
		}
	}
	if err := shmem.P(d, 64, int32(-5), right); err != nil {
		return err
	}
	if err := shmem.WaitUntil(d, 64, shmem.CmpLT, 0); err != nil {
		return err
	}
	ok, err := shmem.TestCmp(d, 64, shmem.CmpEQ, -5)
	if err != nil || !ok {
		return fmt.Errorf("TestCmp after WaitUntil: %v, %v", ok, err)
	}
	return shmem.BarrierAll()
}

func badInput() error {
	var errs []string
	expect := func(what string, err error, want ...string) {
		if err == nil {
			errs = append(errs, what+": no error")
			return
		}
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				errs = append(errs, fmt.Sprintf("%s: error %q does not mention %q", what, err, w))
			}
		}
	}
	self, _ := os.Executable()
	_, err := shmem.LoadModuleFile(self)
	expect("LoadModuleFile(non-module)", err, self)
	junk := os.TempDir() + fmt.Sprintf("/devtest-junk-%d.fatbin", me)
	if err := os.WriteFile(junk, []byte("this is not a CUDA module\n"), 0o644); err != nil {
		return err
	}
	defer os.Remove(junk)
	_, err = shmem.LoadModuleFile(junk)
	expect("LoadModuleFile(text file)", err, junk)
	_, err = shmem.LoadModuleFile("/nonexistent/x.fatbin")
	expect("LoadModuleFile(missing file)", err, "/nonexistent/x.fatbin")
	_, err = mod.Kernel("no_such_kernel")
	expect("Kernel(missing)", err, "no_such_kernel")
	k, err := mod.Kernel("t_info")
	if err != nil {
		return err
	}
	cfg := shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(32)}
	err = shmem.Launch(k, cfg, 5)
	expect("Launch(Go int)", err, "t_info", "Go int")
	if err != nil && !errors.Is(err, shmem.ErrInvalidArgument) {
		errs = append(errs, "Launch(Go int): not ErrInvalidArgument")
	}
	h, err := shmem.Alloc[int32](4)
	if err != nil {
		return err
	}
	err = shmem.Launch(k, cfg, h)
	expect("Launch(host array)", err, "t_info", "not a live GPU array")
	_ = h.Free()
	kb, err := mod.Kernel("t_barrier")
	if err != nil {
		return err
	}
	// One warp per block: every kernel fits 32 threads whatever registers
	// its compiler gave it, so the refusal is the grid's residency (a block
	// of 1024 may be refused first for its registers, by another nvcc).
	err = shmem.LaunchCollective(kb, shmem.LaunchConfig{Grid: shmem.Dim(1 << 20), Block: shmem.Dim(32)}, buf, res, int32(1), int32(0), int32(0))
	expect("LaunchCollective(huge grid)", err, "t_barrier", "resident")
	if err := shmem.Synchronize(); err != nil {
		errs = append(errs, "Synchronize after refused launches: "+err.Error())
	}
	if len(errs) > 0 {
		return errors.New(strings.Join(errs, "; "))
	}
	return nil
}

// faultMode: PE 0 faults; the others wait in a barrier that never completes.
func faultMode() {
	check(shmem.BarrierAll())
	if me != 0 {
		k, err := mod.Kernel("t_nop")
		check(err)
		check(shmem.Launch(k, shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(32)}, res))
		check(shmem.Synchronize())
		fmt.Printf("devtest: PE %d: waiting in BarrierAll for PE 0 (which faults)\n", me)
		err = shmem.BarrierAll()
		if err == nil {
			fmt.Printf("devtest: PE %d: FAIL fault: BarrierAll returned nil although PE 0 died\n", me)
			os.Exit(4)
		}
		// goshmem's host barrier notices the dead peer: an error, then exit non-zero
		fmt.Printf("devtest: PE %d: BarrierAll failed as it should: %v; exiting 1\n", me, err)
		os.Exit(1)
	}
	k, err := mod.Kernel("t_fault")
	check(err)
	check(shmem.Launch(k, shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(32)}, res))
	err = shmem.Synchronize()
	if err == nil {
		fmt.Printf("devtest: PE 0: FAIL fault: Synchronize returned nil after t_fault\n")
		os.Exit(5)
	}
	fmt.Printf("devtest: PE 0: fault reported: %v\n", err)
	if !strings.Contains(err.Error(), `"t_fault"`) {
		fmt.Printf("devtest: PE 0: FAIL fault: the error does not name the kernel t_fault\n")
		os.Exit(6)
	}
	fmt.Printf("devtest: PE 0: fault ok: exiting 1\n")
	os.Exit(1)
}
