//go:build !nostream

package main

// GPU memory that goshmem did not allocate (shmem.RegisterDevice) and the
// GPU heap that grows (CUDA VMM). The registered buffers are cuMemAlloc'd
// in this PE's primary context through the driver, as a framework's
// cudaMalloc would be, and filled and read back with the driver's copies,
// never through goshmem. No test here needs a kernel of the suite's
// fatbins: they run in -part p2p and -part stream alike. Value mismatches
// are collected and printed at once while the test goes on, so a PE that
// sees one still makes every collective call the others wait for.

import (
	"errors"
	"flag"
	"fmt"
	"os"
	goruntime "runtime"
	"strings"
	"unsafe"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/shmem"
)

var (
	heapGrow = flag.Bool("heap-grow", false, "also run the GPU heap growth test (with -part all, p2p, coll or stream): start the heap small and let it grow by what each allocation needs (GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_CHUNK=2M); it fails unless the heap grows (CUDA VMM)")
	regLarge = flag.Int("reg-large", 0, "elements (int32, 4099 to 999000) of the large RegisterDevice RMA case; 0: 786433 (3 MiB + 4 bytes), 65537 with GOSHMEM_GPU_TRANSPORT=proxy or ibgda")
)

// interopTests are the RegisterDevice tests and, with -heap-grow, the
// heap growth test.
func interopTests() []test {
	ts := []test{
		{"RegisterDevice: PutOnStream/PutSignalOnStream/GetOnStream", registerRMA},
		{"RegisterDevice: stream calls in a CUDA graph, replayed", registerGraph},
	}
	if *heapGrow {
		ts = append(ts, test{"GPU heap growth (CUDA VMM): stream RMA and collectives in new chunks, Free, regrow", heapGrowth})
	}
	// last: a refusal the library missed could have written somewhere
	return append(ts, test{"RegisterDevice: refusals, Free leaves the memory to its owner", registerRefusals})
}

// ---- helpers ----------------------------------------------------------------

// primaryCtx is this PE's device's primary context, retained once; goshmem
// uses it (devtest makes no context current before Init).
func primaryCtx() (*cuda.Context, error) {
	if foreignCtx != nil {
		return foreignCtx, nil
	}
	info, err := shmem.DeviceInfo()
	if err != nil {
		return nil, err
	}
	if foreignCtx, err = cuda.Device(info.Device).RetainPrimary(); err != nil {
		return nil, err
	}
	return foreignCtx, nil
}

// ownerBuf is GPU memory this PE allocated outside goshmem (cuMemAlloc).
type ownerBuf struct {
	ctx   *cuda.Context
	p     cuda.DevicePtr
	bytes int
}

func newOwnerBuf(bytes int) (*ownerBuf, error) {
	ctx, err := primaryCtx()
	if err != nil {
		return nil, err
	}
	p, err := ctx.MemAlloc(bytes)
	if err != nil {
		return nil, fmt.Errorf("cuMemAlloc of %d bytes outside goshmem: %w", bytes, err)
	}
	return &ownerBuf{ctx: ctx, p: p, bytes: bytes}, nil
}

func (o *ownerBuf) free() error { return o.ctx.MemFree(o.p) }

// ownerWrite copies v into element idx onwards of o and waits until the
// copy is done on the GPU: a copy from pageable memory may return before
// it lands, and goshmem's non-blocking streams do not wait for it. A copy
// back of the last element, behind it on the same (legacy) stream,
// returns only when both are done; cuCtxSynchronize would also wait for
// goshmem's own streams.
func ownerWrite[T any](o *ownerBuf, idx int, v []T) error {
	var z T
	sz := int(unsafe.Sizeof(z))
	if len(v) == 0 {
		return nil
	}
	if (idx+len(v))*sz > o.bytes {
		return fmt.Errorf("ownerWrite: elements [%d, %d) of %d bytes are past the %d-byte buffer", idx, idx+len(v), sz, o.bytes)
	}
	if err := o.ctx.MemcpyHtoD(o.p+cuda.DevicePtr(idx*sz), unsafe.Pointer(&v[0]), len(v)*sz); err != nil {
		return err
	}
	var last T
	return o.ctx.MemcpyDtoH(unsafe.Pointer(&last), o.p+cuda.DevicePtr((idx+len(v)-1)*sz), sz)
}

// ownerRead copies n elements from element idx of o.
func ownerRead[T any](o *ownerBuf, idx, n int) ([]T, error) {
	out := make([]T, n)
	var z T
	sz := int(unsafe.Sizeof(z))
	if n == 0 {
		return out, nil
	}
	if (idx+n)*sz > o.bytes {
		return nil, fmt.Errorf("ownerRead: elements [%d, %d) of %d bytes are past the %d-byte buffer", idx, idx+n, sz, o.bytes)
	}
	return out, o.ctx.MemcpyDtoH(unsafe.Pointer(&out[0]), o.p+cuda.DevicePtr(idx*sz), n*sz)
}

// expectVals compares got, elements [from, from+len(got)) of what, with
// want(i) at each absolute index i, and names the first and last wrong
// element and how many there are.
func expectVals[T comparable](what string, got []T, from int, want func(i int) T) error {
	bad, first, last := 0, -1, -1
	for j, v := range got {
		if v != want(from+j) {
			if first < 0 {
				first = j
			}
			last, bad = j, bad+1
		}
	}
	if bad == 0 {
		return nil
	}
	return fmt.Errorf("%s: %d of the %d elements [%d, %d) are wrong: [%d] = %v (want %v), last wrong [%d] = %v (want %v)",
		what, bad, len(got), from, from+len(got), from+first, got[first], want(from+first), from+last, got[last], want(from+last))
}

// checks collects a test's value mismatches: each is printed when seen,
// and the test goes on with its collective calls.
type checks struct {
	name string
	errs []error
}

func (c *checks) add(err error) {
	if err == nil {
		return
	}
	fmt.Printf("devtest: PE %d: %s: %v\n", me, c.name, err)
	if len(c.errs) < 8 {
		c.errs = append(c.errs, err)
	}
}

func (c *checks) err() error { return errors.Join(c.errs...) }

// fillDev writes n copies of v into a[idx:idx+n] on this PE (host Put).
func fillDev[T shmem.Elem](a shmem.Array[T], idx, n int, v T) error {
	s := make([]T, n)
	for i := range s {
		s[i] = v
	}
	return shmem.Put(a, idx, s, me)
}

// getDev reads a[idx:idx+n] on pe (host Get).
func getDev[T shmem.Elem](a shmem.Array[T], idx, n, pe int) ([]T, error) {
	s := make([]T, n)
	return s, shmem.Get(s, a, idx, pe)
}

// ---- RegisterDevice: stream RMA ----------------------------------------------

const (
	regSrcIdx  = 3 // source index of the puts and gets: not the buffer's start
	regDstIdx  = 2 // destination index; the element before and after is a guard
	sentinel32 = int32(-7)
)

// remoteGPU reports whether GOSHMEM_GPU_TRANSPORT sends every device
// access to a peer through the proxy or IBGDA: there CPU workers or the
// emulated NIC move the data, far slower than a copy engine, so the tests
// move less.
func remoteGPU() bool {
	t := strings.ToLower(os.Getenv("GOSHMEM_GPU_TRANSPORT"))
	return t == "proxy" || t == "ibgda"
}

// regSizes: one element, odd, and -reg-large (default 3 MiB + 4 bytes,
// 256 KiB + 4 bytes over a remote transport).
func regSizes() []int {
	large := *regLarge
	if large == 0 {
		large = 3<<20/4 + 1
		if remoteGPU() {
			large = 256<<10/4 + 1
		}
	}
	return []int{1, 4099, min(max(large, 4099), 999_000)}
}

// regPat is what pe writes in round at index i (i < 1e6).
func regPat(pe, round, i int) int32 { return int32(pe*100_000_000 + round*1_000_000 + i) }

// regRig is a registered buffer (the local side) and the symmetric arrays
// of the RMA test.
type regRig struct {
	o    *ownerBuf
	reg  shmem.Array[int32]
	dst  shmem.Array[int32]
	sig  shmem.Array[uint64]
	span int
	c    *checks
}

// window checks got = a[regDstIdx-1 : regDstIdx+n+1] on this PE: a guard,
// src's values from regSrcIdx on, a guard.
func windowCheck(what string, got []int32, n int, src func(i int) int32) error {
	return expectVals(what, got, regDstIdx-1, func(i int) int32 {
		if i < regDstIdx || i >= regDstIdx+n {
			return sentinel32
		}
		return src(i - regDstIdx + regSrcIdx)
	})
}

func registerRMA() error {
	sizes := regSizes()
	maxN := sizes[len(sizes)-1]
	g := &regRig{span: regSrcIdx + maxN + 1, c: &checks{name: "RegisterDevice RMA"}}
	var err error
	if g.o, err = newOwnerBuf(g.span * 4); err != nil {
		return err
	}
	defer g.o.free()
	if g.reg, err = shmem.RegisterDevice[int32](uintptr(g.o.p), g.span); err != nil {
		return fmt.Errorf("RegisterDevice(%#x, %d) of cuMemAlloc'd memory: %w", uint64(g.o.p), g.span, err)
	}
	if !g.reg.OnDevice() || g.reg.DevicePtr() != uintptr(g.o.p) {
		_ = g.reg.Free()
		return fmt.Errorf("registered array: OnDevice = %v, DevicePtr = %#x, want true and the cuMemAlloc address %#x",
			g.reg.OnDevice(), g.reg.DevicePtr(), uint64(g.o.p))
	}
	if g.dst, err = shmem.AllocDevice[int32](g.span); err != nil {
		return err
	}
	defer g.dst.Free()
	if g.sig, err = shmem.AllocDevice[uint64](1); err != nil {
		return err
	}
	defer g.sig.Free()
	round := 0
	err = eachStream(func(k streamKind, s *shmem.Stream) error {
		for _, n := range sizes {
			for _, st := range []struct {
				name string
				fn   func(*shmem.Stream, int, int) error
			}{{"PutOnStream", g.put}, {"PutSignalOnStream", g.putSignal}, {"GetOnStream", g.get}} {
				round++
				g.c.name = fmt.Sprintf("RegisterDevice RMA, %s, %s of %d int32", k.name, st.name, n)
				if err := st.fn(s, n, round); err != nil {
					return fmt.Errorf("%s of %d int32 (round %d): %w", st.name, n, round, err)
				}
			}
		}
		return nil
	})
	if ferr := g.reg.Free(); ferr != nil && err == nil {
		err = fmt.Errorf("freeing the registered array: %w", ferr)
	}
	if err != nil {
		return err
	}
	return g.c.err()
}

// fillOwn writes this PE's pattern of round into the owner's buffer and
// sentinels into its dst.
func (g *regRig) fillOwn(round int) error {
	src := make([]int32, g.span)
	for i := range src {
		src[i] = regPat(me, round, i)
	}
	if err := ownerWrite(g.o, 0, src); err != nil {
		return err
	}
	if err := fillDev(g.dst, 0, g.span, sentinel32); err != nil {
		return err
	}
	return shmem.BarrierAll()
}

// checkPut checks, after a put of n elements from every PE's registered
// buffer to its right neighbour: this PE's dst holds the left PE's values
// and its guards; the right PE's dst (read from here) holds this PE's; the
// owner's buffer still holds what was written into it.
func (g *regRig) checkPut(n, round int) error {
	got, err := getDev(g.dst, regDstIdx-1, n+2, me)
	if err != nil {
		return err
	}
	g.c.add(windowCheck(fmt.Sprintf("dst here, put by PE %d", left), got, n, func(i int) int32 { return regPat(left, round, i) }))
	tail := min(n, 16)
	far, err := getDev(g.dst, regDstIdx+n-tail, tail, right)
	if err != nil {
		return err
	}
	g.c.add(expectVals(fmt.Sprintf("dst on PE %d, put from here", right), far, regDstIdx+n-tail, func(i int) int32 {
		return regPat(me, round, i-regDstIdx+regSrcIdx)
	}))
	own, err := ownerRead[int32](g.o, 0, g.span)
	if err != nil {
		return err
	}
	g.c.add(expectVals("the registered source after the put", own, 0, func(i int) int32 { return regPat(me, round, i) }))
	return nil
}

func (g *regRig) put(s *shmem.Stream, n, round int) error {
	if err := g.fillOwn(round); err != nil {
		return err
	}
	if err := shmem.PutOnStream(s, g.dst, regDstIdx, g.reg, regSrcIdx, n, right); err != nil {
		return err
	}
	if err := shmem.QuietOnStream(s); err != nil {
		return err
	}
	if err := shmem.BarrierAllOnStream(s); err != nil {
		return err
	}
	if err := syncStream(s); err != nil {
		return err
	}
	if err := g.checkPut(n, round); err != nil {
		return err
	}
	return shmem.BarrierAll()
}

// putSignal: the receiver waits on the signal alone, then checks the data
// before any barrier.
func (g *regRig) putSignal(s *shmem.Stream, n, round int) error {
	if err := g.fillOwn(round); err != nil {
		return err
	}
	if err := shmem.PutSignalOnStream(s, g.dst, regDstIdx, g.reg, regSrcIdx, n, g.sig, 0, uint64(round), shmem.SignalSet, right); err != nil {
		return err
	}
	if err := shmem.SignalWaitUntilOnStream(s, g.sig, 0, shmem.CmpEQ, uint64(round)); err != nil {
		return err
	}
	if err := syncStream(s); err != nil {
		return err
	}
	got, err := getDev(g.dst, regDstIdx-1, n+2, me)
	if err != nil {
		return err
	}
	g.c.add(windowCheck(fmt.Sprintf("dst here after SignalWaitUntilOnStream, put by PE %d", left), got, n,
		func(i int) int32 { return regPat(left, round, i) }))
	if v, err := shmem.G(g.sig, 0, me); err != nil {
		return err
	} else if v != uint64(round) {
		g.c.add(fmt.Errorf("signal word = %d after SignalSet %d from PE %d", v, round, left))
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if err := g.checkPut(n, round); err != nil {
		return err
	}
	return shmem.BarrierAll() // the right PE's dst was read before it is refilled
}

// get: every PE's dst holds its pattern, the owner's buffer sentinels;
// GetOnStream from the right PE into the registered buffer.
func (g *regRig) get(s *shmem.Stream, n, round int) error {
	src := make([]int32, g.span)
	for i := range src {
		src[i] = regPat(me, round, i)
	}
	if err := shmem.Put(g.dst, 0, src, me); err != nil {
		return err
	}
	for i := range src {
		src[i] = sentinel32
	}
	if err := ownerWrite(g.o, 0, src); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if err := shmem.GetOnStream(s, g.reg, regDstIdx, g.dst, regSrcIdx, n, right); err != nil {
		return err
	}
	if err := syncStream(s); err != nil {
		return err
	}
	got, err := ownerRead[int32](g.o, regDstIdx-1, n+2)
	if err != nil {
		return err
	}
	g.c.add(windowCheck(fmt.Sprintf("the registered buffer after GetOnStream from PE %d", right), got, n,
		func(i int) int32 { return regPat(right, round, i) }))
	return shmem.BarrierAll() // the right PE's dst was read before anyone refills it
}

// ---- RegisterDevice: CUDA graph -------------------------------------------------

// registerGraph captures PutOnStream from a registered buffer, QuietOnStream,
// BarrierAllOnStream and GetOnStream into it, in global and relaxed capture
// (graph.go), and replays the graph: before each replay the owner rewrites
// the source and clears the destination, so a replay must move what the
// buffer holds then.
func registerGraph() error {
	if err := graphAPIErr(); err != nil {
		return fmt.Errorf("the driver's graph API: %w", err)
	}
	n := streamN
	if remoteGPU() {
		n = 8191
	}
	getIdx := n + 1 // the get's destination [n+1, 2n+1), guards at n and 2n+1
	c := &checks{name: "RegisterDevice in a CUDA graph"}
	o, err := newOwnerBuf((2*n + 2) * 4)
	if err != nil {
		return err
	}
	defer o.free()
	reg, err := shmem.RegisterDevice[int32](uintptr(o.p), 2*n+2)
	if err != nil {
		return fmt.Errorf("RegisterDevice(%#x, %d): %w", uint64(o.p), 2*n+2, err)
	}
	defer reg.Free()
	dst, err := shmem.AllocDevice[int32](n)
	if err != nil {
		return err
	}
	defer dst.Free()
	src, err := shmem.AllocDevice[int32](n)
	if err != nil {
		return err
	}
	defer src.Free()
	zeros := make([]int32, n)
	buf := make([]int32, n+2)
	for mi, gm := range graphModes {
		rep := 0
		round := func() int { return (mi+1)*10 + rep }
		s, err := shmem.NewStream()
		if err != nil {
			return err
		}
		c.name = "RegisterDevice in a CUDA graph, " + gm.name
		err = captureAndReplay(s, gm.mode, func() error {
			if err := shmem.PutOnStream(s, dst, 0, reg, 0, n, right); err != nil {
				return err
			}
			if err := shmem.QuietOnStream(s); err != nil {
				return err
			}
			if err := shmem.BarrierAllOnStream(s); err != nil {
				return err
			}
			return shmem.GetOnStream(s, reg, getIdx, src, 0, n, right)
		}, func() error { // before each replay
			rep++
			for i := range buf[:n] {
				buf[i] = regPat(me, round(), i)
			}
			if err := ownerWrite(o, 0, buf[:n]); err != nil {
				return err
			}
			for i := range buf {
				buf[i] = sentinel32
			}
			if err := ownerWrite(o, n, buf); err != nil {
				return err
			}
			if err := shmem.Put(dst, 0, zeros, me); err != nil {
				return err
			}
			for i := range buf[:n] {
				buf[i] = regPat(me, round(), 500_000+i)
			}
			if err := shmem.Put(src, 0, buf[:n], me); err != nil {
				return err
			}
			return shmem.BarrierAll()
		}, func(r int) error { // after each replay (this PE's stream is synchronized)
			if err := shmem.BarrierAll(); err != nil {
				return err
			}
			got, err := getDev(dst, 0, n, me)
			if err != nil {
				return err
			}
			c.add(expectVals(fmt.Sprintf("replay %d: dst here, put from PE %d's registered buffer", r, left), got, 0,
				func(i int) int32 { return regPat(left, round(), i) }))
			back, err := ownerRead[int32](o, n, n+2)
			if err != nil {
				return err
			}
			c.add(expectVals(fmt.Sprintf("replay %d: the registered buffer after GetOnStream from PE %d", r, right), back, n,
				func(i int) int32 {
					if i == n || i == 2*n+1 {
						return sentinel32
					}
					return regPat(right, round(), 500_000+i-getIdx)
				}))
			return shmem.BarrierAll()
		})
		_ = s.Destroy()
		if err != nil {
			return fmt.Errorf("%s: %w", gm.name, err)
		}
	}
	return c.err()
}

// ---- RegisterDevice: refusals and Free --------------------------------------------

func registerRefusals() error {
	const n = 1024
	const bufBytes = 64 << 10
	c := &checks{name: "RegisterDevice refusals"}
	o, err := newOwnerBuf(bufBytes)
	if err != nil {
		return err
	}
	defer o.free()
	pat := make([]int64, n)
	for i := range pat {
		pat[i] = int64(me*1_000_000 + i)
	}
	if err := ownerWrite(o, 0, pat); err != nil {
		return err
	}
	reg, err := shmem.RegisterDevice[int64](uintptr(o.p), n)
	if err != nil {
		return fmt.Errorf("RegisterDevice(%#x, %d): %w", uint64(o.p), n, err)
	}
	sreg, err := shmem.RegisterDevice[uint64](uintptr(o.p)+32<<10, 8) // a signal word array
	if err != nil {
		_ = reg.Free()
		return fmt.Errorf("RegisterDevice(%#x, 8) of uint64: %w", uint64(o.p)+32<<10, err)
	}
	dst, err := shmem.AllocDevice[int64](n)
	if err != nil {
		return err
	}
	defer dst.Free()
	sig, err := shmem.AllocDevice[uint64](1)
	if err != nil {
		return err
	}
	defer sig.Free()
	refused := func(what, call string, err, want error) {
		switch {
		case err == nil:
			c.add(fmt.Errorf("%s: no error, want %v naming %s", what, want, call))
		case !errors.Is(err, want) || !strings.Contains(err.Error(), call):
			c.add(fmt.Errorf("%s: %v; want %v naming %s", what, err, want, call))
		}
	}
	inval := shmem.ErrInvalidArgument

	// registrations the library must refuse
	_, err = shmem.RegisterDevice[int64](0, 1)
	refused("RegisterDevice(0, 1)", "RegisterDevice", err, inval)
	_, err = shmem.RegisterDevice[int64](uintptr(o.p)+4, 1)
	refused("RegisterDevice of an address not aligned to int64", "RegisterDevice", err, inval)
	_, err = shmem.RegisterDevice[int64](uintptr(o.p)+40<<10, -1)
	refused("RegisterDevice with n = -1", "RegisterDevice", err, inval)
	_, err = shmem.RegisterDevice[int64](uintptr(o.p)+8, 4)
	refused("RegisterDevice overlapping a registered buffer", "RegisterDevice", err, inval)
	_, err = shmem.RegisterDevice[int64](dst.DevicePtr(), 4)
	refused("RegisterDevice of an AllocDevice array's memory", "RegisterDevice", err, inval)
	host := make([]int64, 4)
	_, err = shmem.RegisterDevice[int64](uintptr(unsafe.Pointer(&host[0])), 4)
	goruntime.KeepAlive(host)
	refused("RegisterDevice of Go heap memory", "RegisterDevice", err, inval)
	past := (bufBytes - 48<<10 + 8<<20) / 8
	_, err = shmem.RegisterDevice[int64](uintptr(o.p)+48<<10, past)
	refused(fmt.Sprintf("RegisterDevice of %d int64 from 48 KiB into a %d-byte cuMemAlloc", past, bufBytes), "RegisterDevice", err, inval)
	if z, err := shmem.RegisterDevice[int64](uintptr(o.p)+48<<10, 0); err != nil || z.OnDevice() {
		c.add(fmt.Errorf("RegisterDevice(ptr, 0) = (OnDevice %v, %v), want the zero Array and nil", z.OnDevice(), err))
	}

	// a registered array as the remote side: refused before anything is enqueued
	refused("PutOnStream into a registered dst", "PutOnStream", shmem.PutOnStream(nil, reg, 0, dst, 0, 1, right), inval)
	refused("GetOnStream from a registered src", "GetOnStream", shmem.GetOnStream(nil, dst, 0, reg, 0, 1, right), inval)
	refused("PutSignalOnStream into a registered dst", "PutSignalOnStream",
		shmem.PutSignalOnStream(nil, reg, 0, dst, 0, 1, sig, 0, 1, shmem.SignalSet, right), inval)
	refused("PutSignalOnStream with a registered signal word", "PutSignalOnStream",
		shmem.PutSignalOnStream(nil, dst, 0, reg, 0, 1, sreg, 0, 1, shmem.SignalSet, right), inval)
	refused("SignalWaitUntilOnStream on a registered signal word", "SignalWaitUntilOnStream",
		shmem.SignalWaitUntilOnStream(nil, sreg, 0, shmem.CmpEQ, 1), inval)
	refused("ReduceOnStream from a registered src", "ReduceOnStream", shmem.ReduceOnStream(nil, shmem.TeamWorld, shmem.OpSum, dst, reg, 1), inval)
	refused("ReduceOnStream into a registered dst", "ReduceOnStream", shmem.ReduceOnStream(nil, shmem.TeamWorld, shmem.OpSum, reg, dst, 1), inval)
	refused("BroadcastOnStream into a registered dst", "BroadcastOnStream", shmem.BroadcastOnStream(nil, shmem.TeamWorld, reg, dst, 1, 0), inval)
	refused("FCollectOnStream from a registered src", "FCollectOnStream", shmem.FCollectOnStream(nil, shmem.TeamWorld, dst, reg, 1), inval)
	refused("Reduce (host) from a registered src", "Reduce", shmem.Reduce(shmem.TeamWorld, shmem.OpSum, dst, reg, 1), inval)
	refused("Put into a registered array", "Put", shmem.Put(reg, 0, []int64{1}, right), inval)
	refused("Get from a registered array", "Get", shmem.Get(make([]int64, 1), reg, 0, right), inval)
	refused("P into a registered array", "P", shmem.P(reg, 0, 1, right), inval)
	_, err = shmem.G(reg, 0, right)
	refused("G from a registered array", "G", err, inval)
	_, err = shmem.AtomicFetchAdd(reg, 0, 1, right)
	refused("AtomicFetchAdd on a registered array", "AtomicFetchAdd", err, inval)
	_, err = shmem.TestCmp(reg, 0, shmem.CmpEQ, 0)
	refused("TestCmp on a registered array", "TestCmp", err, inval)
	refused("PutOnStream past the registered length", "PutOnStream", shmem.PutOnStream(nil, dst, 0, reg, n-1, 2, right), shmem.ErrOutOfBounds)
	refused("GetOnStream past the registered length", "GetOnStream", shmem.GetOnStream(nil, reg, n-1, dst, 0, 2, right), shmem.ErrOutOfBounds)
	if err := shmem.Synchronize(); err != nil {
		return fmt.Errorf("after the refused calls, Synchronize: %w", err)
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}

	// the allowed use still works after the refusals
	if err := fillDev(dst, 0, n, int64(-7)); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if err := shmem.PutOnStream(nil, dst, 0, reg, 0, n, right); err != nil {
		return fmt.Errorf("PutOnStream from the registered array after the refusals: %w", err)
	}
	if err := shmem.QuietOnStream(nil); err != nil {
		return err
	}
	if err := shmem.BarrierAllOnStream(nil); err != nil {
		return err
	}
	if err := shmem.Synchronize(); err != nil {
		return err
	}
	got, err := getDev(dst, 0, n, me)
	if err != nil {
		return err
	}
	c.add(expectVals(fmt.Sprintf("dst after PutOnStream from PE %d's registered array", left), got, 0,
		func(i int) int64 { return int64(left*1_000_000 + i) }))

	// Free unregisters and leaves the memory to its owner
	if err := reg.Free(); err != nil {
		return fmt.Errorf("freeing the registered array: %w", err)
	}
	if p := reg.DevicePtr(); p != 0 {
		c.add(fmt.Errorf("DevicePtr after Free = %#x, want 0", p))
	}
	back, err := ownerRead[int64](o, 0, n)
	if err != nil {
		return fmt.Errorf("the owner's cuMemcpyDtoH after Free: %w", err)
	}
	c.add(expectVals("the owner's memory after Free", back, 0, func(i int) int64 { return int64(me*1_000_000 + i) }))
	refused("a second Free", "Free", reg.Free(), inval)
	refused("PutOnStream from a freed registered array", "PutOnStream", shmem.PutOnStream(nil, dst, 0, reg, 0, 1, right), inval)
	again, err := shmem.RegisterDevice[int64](uintptr(o.p), n)
	if err != nil {
		c.add(fmt.Errorf("RegisterDevice of the same memory after Free: %w", err))
	} else if err := again.Free(); err != nil {
		c.add(fmt.Errorf("freeing the second registration: %w", err))
	}
	if err := sreg.Free(); err != nil {
		c.add(fmt.Errorf("freeing the registered signal array: %w", err))
	}
	if err := shmem.Synchronize(); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	return c.err()
}

// ---- the GPU heap that grows ------------------------------------------------------

const (
	heapGrowTail = 4 << 20   // a growth array is this much larger than the heap it outgrows
	heapGrowMax  = 512 << 20 // -heap-grow refuses to start above this mapped size
	heapWin      = 200003    // elements of the stream RMA windows (odd, 1.6 MB of int64)
	sentinel64   = int64(-7)
)

// heapBytes is DeviceInfo's mapped heap size, the same on every PE.
func heapBytes() (uint64, error) {
	g, err := shmem.DeviceInfo()
	return g.HeapBytes, err
}

// heapVal is what pe writes at index i (i < 1e9) in step k.
func heapVal(pe, k, i int) int64 {
	return int64(pe)*1_000_000_000_000 + int64(k)*1_000_000_000 + int64(i)
}

// heapGrowth (-heap-grow; start the heap small, growing by what each
// allocation needs: GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_CHUNK=2M):
// three AllocDevice calls, each larger than the whole mapped heap, so each
// maps a new chunk on every PE and lies after every array before it (it
// cannot fit below); DeviceInfo's HeapBytes must grow each time, which is
// the check that the heap is CUDA VMM. Then stream puts and gets, host
// collectives and *OnStream collectives on those arrays, values checked;
// Free, allocate again (zeroed), grow once more; and, when
// GOSHMEM_DEVICE_HEAP_MAX is set, an allocation past it is ErrHeapExhausted
// naming it and the heap still works.
func heapGrowth() error {
	c := &checks{name: "GPU heap growth"}
	h0, err := heapBytes()
	if err != nil {
		return err
	}
	if h0 > heapGrowMax {
		return fmt.Errorf("-heap-grow: the GPU heap already maps %d bytes (more than %d): start it small and let it grow by what each allocation needs (GOSHMEM_DEVICE_HEAP_SIZE=32M GOSHMEM_DEVICE_HEAP_CHUNK=2M; the tests before this one may have grown it by a whole chunk)", h0, heapGrowMax)
	}
	trace := []string{fmt.Sprint(h0)}
	vmm := "unknown"
	if ctx, err := primaryCtx(); err == nil {
		vmm = fmt.Sprint(ctx.VMMSupported())
	}
	var live []shmem.Array[int64]
	defer func() {
		for i := len(live) - 1; i >= 0; i-- {
			_ = live[i].Free()
		}
	}()
	grow := func(what string) (shmem.Array[int64], error) {
		before, err := heapBytes()
		if err != nil {
			return shmem.Array[int64]{}, err
		}
		n := int(before/8) + heapGrowTail/8 + 1
		a, err := shmem.AllocDevice[int64](n)
		if err != nil {
			return a, fmt.Errorf("%s: AllocDevice of %d int64 (%d bytes) past the heap's %d mapped bytes: %w; "+
				"the GPU heap grows only with CUDA VMM (GOSHMEM_INFO=1 prints \"GPU heap: CUDA VMM\" "+
				"or \"legacy CUDA IPC\"; the driver reports VMM with file descriptors on this GPU: %s)", what, n, n*8, before, err, vmm)
		}
		after, err := heapBytes()
		if err != nil {
			return a, err
		}
		if after <= before || after < uint64(n)*8 {
			_ = a.Free()
			return shmem.Array[int64]{}, fmt.Errorf("%s: DeviceInfo says the heap maps %d bytes after AllocDevice of %d bytes (before: %d): it did not grow",
				what, after, n*8, before)
		}
		trace = append(trace, fmt.Sprint(after))
		live = append(live, a)
		return a, nil
	}
	g1, err := grow("first growth")
	if err != nil {
		return err
	}
	csrc, err := grow("second growth")
	if err != nil {
		return err
	}
	cdst, err := grow("third growth")
	if err != nil {
		return err
	}
	l1, ls, ld := g1.Len(), csrc.Len(), cdst.Len()
	if p, end := csrc.DevicePtr(), g1.DevicePtr()+uintptr(l1)*8; p < end {
		c.add(fmt.Errorf("an array larger than the whole heap starts at %#x, inside the one before it (ends at %#x)", p, end))
	}
	s, err := shmem.NewStream()
	if err != nil {
		return err
	}
	defer s.Destroy()

	// 1. PutOnStream of all of g1 (from wherever it starts into its new
	// chunk) from csrc, to the right PE
	vals := make([]int64, l1)
	for i := range vals {
		vals[i] = heapVal(me, 1, i)
	}
	if err := shmem.Put(csrc, 0, vals, me); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if err := shmem.PutOnStream(s, g1, 0, csrc, 0, l1, right); err != nil {
		return fmt.Errorf("PutOnStream of %d int64 into the grown array: %w", l1, err)
	}
	if err := shmem.QuietOnStream(s); err != nil {
		return err
	}
	if err := shmem.BarrierAllOnStream(s); err != nil {
		return err
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	if err := shmem.Get(vals, g1, 0, me); err != nil {
		return err
	}
	c.add(expectVals(fmt.Sprintf("first grown array (%d int64) after PutOnStream from PE %d", l1, left), vals, 0,
		func(i int) int64 { return heapVal(left, 1, i) }))
	if err := shmem.BarrierAll(); err != nil {
		return err
	}

	// 2. GetOnStream of the right PE's last heapWin elements of cdst into
	// the end of csrc, and of its last element into csrc[0]
	win := make([]int64, heapWin)
	for i := range win {
		win[i] = heapVal(me, 2, ld-heapWin+i)
	}
	if err := shmem.Put(cdst, ld-heapWin, win, me); err != nil {
		return err
	}
	if err := fillDev(csrc, ls-heapWin-1, heapWin+1, sentinel64); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if err := shmem.GetOnStream(s, csrc, ls-heapWin, cdst, ld-heapWin, heapWin, right); err != nil {
		return err
	}
	if err := shmem.GetOnStream(s, csrc, 0, cdst, ld-1, 1, right); err != nil {
		return err
	}
	if err := s.Synchronize(); err != nil {
		return err
	}
	got, err := getDev(csrc, ls-heapWin-1, heapWin+1, me)
	if err != nil {
		return err
	}
	c.add(expectVals(fmt.Sprintf("end of the second grown array after GetOnStream from PE %d", right), got, ls-heapWin-1, func(i int) int64 {
		if i < ls-heapWin {
			return sentinel64
		}
		return heapVal(right, 2, i-ls+ld)
	}))
	if v, err := shmem.G(csrc, 0, me); err != nil {
		return err
	} else if want := heapVal(right, 2, ld-1); v != want {
		c.add(fmt.Errorf("GetOnStream of PE %d's last element of the third grown array: %d, want %d", right, v, want))
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}

	// 3. collectives on csrc and cdst (both wholly in grown chunks)
	for _, n := range []int{1, 1001, min(300001, ls/npes-16, ld/npes-16)} {
		for _, cs := range heapCollCases(s) {
			if err := heapColl(c, cs, csrc, cdst, n); err != nil {
				return fmt.Errorf("%s of %d int64: %w", cs.name, n, err)
			}
		}
	}

	// 4. Free, allocate the largest again (zeroed, usable from the right
	// PE), then grow past the heap once more
	for i := len(live) - 1; i >= 0; i-- {
		if err := live[i].Free(); err != nil {
			live = live[:i]
			return fmt.Errorf("freeing grown array %d: %w", i, err)
		}
	}
	live = nil
	afterFree, err := heapBytes()
	if err != nil {
		return err
	}
	trace = append(trace, fmt.Sprintf("(Free) %d", afterFree))
	a2, err := shmem.AllocDevice[int64](ld)
	if err != nil {
		return fmt.Errorf("AllocDevice of %d int64 after Free of arrays that size: %w", ld, err)
	}
	live = append(live, a2)
	for _, at := range []int{0, ld - heapWin} {
		z, err := getDev(a2, at, heapWin, me)
		if err != nil {
			return err
		}
		c.add(expectVals("AllocDevice after Free (must be zeroed)", z, at, func(int) int64 { return 0 }))
	}
	g2, err := grow("growth after Free")
	if err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil { // everyone read a2's zeros before it is written
		return err
	}
	for _, t := range []struct {
		name string
		a    shmem.Array[int64]
		k    int
	}{{"the array allocated after Free", a2, 5}, {"the array grown after Free", g2, 6}} {
		l := t.a.Len()
		part := make([]int64, 1001)
		for i := range part {
			part[i] = heapVal(me, t.k, l-1001+i)
		}
		if err := shmem.Put(t.a, l-1001, part, right); err != nil {
			return fmt.Errorf("host Put into the end of %s on PE %d: %w", t.name, right, err)
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
		if err := shmem.Get(part, t.a, l-1001, me); err != nil {
			return err
		}
		c.add(expectVals(fmt.Sprintf("end of %s after host Put from PE %d", t.name, left), part, l-1001,
			func(i int) int64 { return heapVal(left, t.k, i) }))
	}

	// 5. past GOSHMEM_DEVICE_HEAP_MAX: refused, and the heap still works
	if v := os.Getenv("GOSHMEM_DEVICE_HEAP_MAX"); v != "" && !strings.EqualFold(v, "auto") {
		if limit, err := env.ParseSize(v); err == nil {
			_, err := shmem.AllocDevice[int64](int(limit/8) + 1)
			switch {
			case err == nil:
				c.add(fmt.Errorf("AllocDevice of %d bytes succeeded past GOSHMEM_DEVICE_HEAP_MAX=%s", limit+8, v))
			case !errors.Is(err, shmem.ErrHeapExhausted):
				c.add(fmt.Errorf("AllocDevice past GOSHMEM_DEVICE_HEAP_MAX=%s: %v, want ErrHeapExhausted", v, err))
			case !strings.Contains(fmt.Sprintf("%v %+v", err, err), "GOSHMEM_DEVICE_HEAP_MAX"):
				c.add(fmt.Errorf("AllocDevice past GOSHMEM_DEVICE_HEAP_MAX=%s: %q does not name GOSHMEM_DEVICE_HEAP_MAX", v, err))
			}
			one, err := shmem.AllocDevice[int64](1001)
			if err != nil {
				return fmt.Errorf("AllocDevice after the refused one: %w", err)
			}
			live = append(live, one)
			if err := shmem.Put(one, 0, []int64{heapVal(me, 7, 0)}, right); err != nil {
				return err
			}
			if err := shmem.BarrierAll(); err != nil {
				return err
			}
			if v, err := shmem.G(one, 0, me); err != nil {
				return err
			} else if v != heapVal(left, 7, 0) {
				c.add(fmt.Errorf("P/G on an array allocated after the refused AllocDevice: %d, want %d", v, heapVal(left, 7, 0)))
			}
			trace = append(trace, fmt.Sprintf("(past %s refused)", v))
		}
	}
	if me == 0 {
		fmt.Printf("devtest:      heap growth: mapped bytes %s (driver VMM support: %s)\n", strings.Join(trace, " -> "), vmm)
	}
	return c.err()
}

// heapCollCase is one collective on the grown arrays: run moves n
// elements per member; nsrc and ndst are the elements src holds and dst
// receives; want is dst[i] on this PE when every PE's src[j] is
// heapVal(pe, k, j).
type heapCollCase struct {
	name       string
	k          int
	run        func(dst, src shmem.Array[int64], n int) error
	nsrc, ndst func(n int) int
	want       func(k, n, i int) int64
}

func heapCollCases(s *shmem.Stream) []heapCollCase {
	one := func(n int) int { return n }
	all := func(n int) int { return n * npes }
	sum := func(k, i int) int64 {
		var w int64
		for p := 0; p < npes; p++ {
			w += heapVal(p, k, i)
		}
		return w
	}
	reduce := func(k, n, i int) int64 { return sum(k, i) }
	bcast := func(k, n, i int) int64 { return heapVal(npes-1, k, i) }
	fcollect := func(k, n, i int) int64 { return heapVal(i/n, k, i%n) }
	alltoall := func(k, n, i int) int64 { return heapVal(i/n, k, me*n+i%n) }
	scatter := func(k, n, i int) int64 { return sum(k, me*n+i) }
	w := shmem.TeamWorld
	onStream := func(f func() error) error {
		if err := f(); err != nil {
			return err
		}
		return s.Synchronize()
	}
	return []heapCollCase{
		{"Reduce (host, OpSum)", 10, func(d, x shmem.Array[int64], n int) error { return shmem.Reduce(w, shmem.OpSum, d, x, n) }, one, one, reduce},
		{"Broadcast (host, root last)", 11, func(d, x shmem.Array[int64], n int) error { return shmem.Broadcast(w, d, x, n, npes-1) }, one, one, bcast},
		{"FCollect (host)", 12, func(d, x shmem.Array[int64], n int) error { return shmem.FCollect(w, d, x, n) }, one, all, fcollect},
		{"AllToAll (host)", 13, func(d, x shmem.Array[int64], n int) error { return shmem.AllToAll(w, d, x, n) }, all, all, alltoall},
		{"ReduceOnStream (OpSum)", 14, func(d, x shmem.Array[int64], n int) error {
			return onStream(func() error { return shmem.ReduceOnStream(s, w, shmem.OpSum, d, x, n) })
		}, one, one, reduce},
		{"ReduceScatterOnStream (OpSum)", 15, func(d, x shmem.Array[int64], n int) error {
			return onStream(func() error { return shmem.ReduceScatterOnStream(s, w, shmem.OpSum, d, x, n) })
		}, all, one, scatter},
		{"BroadcastOnStream (root last)", 16, func(d, x shmem.Array[int64], n int) error {
			return onStream(func() error { return shmem.BroadcastOnStream(s, w, d, x, n, npes-1) })
		}, one, one, bcast},
		{"FCollectOnStream", 17, func(d, x shmem.Array[int64], n int) error {
			return onStream(func() error { return shmem.FCollectOnStream(s, w, d, x, n) })
		}, one, all, fcollect},
		{"AllToAllOnStream", 18, func(d, x shmem.Array[int64], n int) error {
			return onStream(func() error { return shmem.AllToAllOnStream(s, w, d, x, n) })
		}, all, all, alltoall},
	}
}

// heapColl runs one case: src = this PE's values and 8 sentinels after
// them, dst = sentinels; then every element of the result and the 8 after
// it are checked.
func heapColl(c *checks, cs heapCollCase, src, dst shmem.Array[int64], n int) error {
	nsrc, ndst := cs.nsrc(n), cs.ndst(n)
	v := make([]int64, max(nsrc, ndst)+8)
	for i := range v[:nsrc] {
		v[i] = heapVal(me, cs.k, i)
	}
	for i := nsrc; i < nsrc+8; i++ {
		v[i] = sentinel64
	}
	if err := shmem.Put(src, 0, v[:nsrc+8], me); err != nil {
		return err
	}
	if err := fillDev(dst, 0, ndst+8, sentinel64); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if err := cs.run(dst, src, n); err != nil {
		return err
	}
	got, err := getDev(dst, 0, ndst+8, me)
	if err != nil {
		return err
	}
	c.add(expectVals(fmt.Sprintf("%s of %d int64 on grown arrays", cs.name, n), got, 0, func(i int) int64 {
		if i >= ndst {
			return sentinel64
		}
		return cs.want(cs.k, n, i)
	}))
	return shmem.BarrierAll() // every member is done reading src
}
