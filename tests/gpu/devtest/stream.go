//go:build !nostream

package main

// Stream-ordered communication from Go (PutOnStream ... AllToAllOnStream,
// StreamFromHandle, Team.BarrierOnStream) and the host collectives on GPU
// arrays, checked with exact values. Stream order is tested by a kernel that
// spins before writing the data a later on-stream call must see (devcoll.cu
// s_fill), and by a kernel that checks, on the same stream, what an earlier
// call delivered (s_check). Build with -tags nostream to leave these out
// (stream_none.go).

import (
	"fmt"
	"unsafe"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/shmem"
)

const (
	streamN   = 100003      // elements of the stream RMA tests (odd)
	spinNS    = uint64(2e6) // s_fill's spin before it writes
	collMaxN  = 65537       // largest n of the collective cases
	sentinelV = 99          // dst fill before a collective
)

// launchOn launches a devcoll.cu helper kernel on s (nil: the default stream).
func launchOn(s *shmem.Stream, name string, args ...any) error {
	k, err := cmodColl.Kernel(name)
	if err != nil {
		return err
	}
	return shmem.Launch(k, shmem.LaunchConfig{Grid: shmem.Dim(64), Block: shmem.Dim(256), Stream: s}, args...)
}

func syncStream(s *shmem.Stream) error {
	if s == nil {
		return shmem.Synchronize()
	}
	return s.Synchronize()
}

func zeroRes() error { return shmem.Put(res, 0, make([]int32, 64), me) }

// resCheck reads s_check's words: mismatches and the first bad index.
func resCheck(what string, base int) error {
	r := make([]int32, 2)
	if err := shmem.Get(r, res, 0, me); err != nil {
		return err
	}
	if r[0] != 0 {
		return fmt.Errorf("%s: %d words differ from base %d + i (first at i = %d)", what, r[0], base, r[1]-1)
	}
	return nil
}

type streamKind struct {
	name string
	mk   func() (*shmem.Stream, error)
}

var streamKinds = []streamKind{
	{"NewStream", shmem.NewStream},
	{"nil (default) stream", func() (*shmem.Stream, error) { return nil, nil }},
	{"StreamFromHandle", foreignStream},
}

var foreignCtx *cuda.Context

// foreignLive is the driver stream behind the StreamFromHandle stream in
// use: its owner (this test) destroys it after shmem's Destroy, which
// leaves a wrapped stream to its owner.
var foreignLive cuda.Stream

// foreignStream makes a CUstream outside goshmem's shmem API (the driver's
// cuStreamCreate in this PE's primary context, as cuBLAS or a framework
// would) and wraps its raw handle with StreamFromHandle.
func foreignStream() (*shmem.Stream, error) {
	info, err := shmem.DeviceInfo()
	if err != nil {
		return nil, err
	}
	if foreignCtx == nil {
		if foreignCtx, err = cuda.Device(info.Device).RetainPrimary(); err != nil {
			return nil, err
		}
	}
	st, err := foreignCtx.StreamCreate(cuda.StreamNonBlocking)
	if err != nil {
		return nil, err
	}
	h := st.Handle()
	if h == 0 {
		return nil, fmt.Errorf("cuStreamCreate returned a NULL stream")
	}
	foreignLive = st
	return shmem.StreamFromHandle(h), nil
}

func eachStream(fn func(k streamKind, s *shmem.Stream) error) error {
	for _, k := range streamKinds {
		s, err := k.mk()
		if err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
		err = fn(k, s)
		if s != nil {
			_ = s.Destroy()
		}
		if derr := foreignLive.Destroy(); err == nil {
			err = derr // the zero Stream's Destroy is a no-op
		}
		foreignLive = cuda.Stream{}
		if err != nil {
			return fmt.Errorf("%s: %w", k.name, err)
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
	}
	return nil
}

// streamPair allocates the two streamN-element GPU arrays of the stream
// RMA tests; free releases both.
func streamPair() (a, b shmem.Array[int32], free func(), err error) {
	if a, err = shmem.AllocDevice[int32](streamN); err != nil {
		return a, b, nil, err
	}
	if b, err = shmem.AllocDevice[int32](streamN); err != nil {
		_ = a.Free()
		return a, b, nil, err
	}
	return a, b, func() { _ = b.Free(); _ = a.Free() }, nil
}

func streamRMA() error {
	if err := collSetup(); err != nil {
		return err
	}
	a, b, free, err := streamPair()
	if err != nil {
		return err
	}
	defer free()
	round := 0
	return eachStream(func(k streamKind, s *shmem.Stream) error {
		round++
		base := func(pe, v int) int { return pe*1_000_000 + round*1000 + v }
		// Put: fill (slow) -> put to the right -> quiet -> barrier -> check what the left put
		if err := zeroRes(); err != nil {
			return err
		}
		if err := launchOn(s, "s_fill", a, int32(streamN), int32(base(me, 0)), spinNS); err != nil {
			return err
		}
		if err := shmem.PutOnStream(s, b, 0, a, 0, streamN, right); err != nil {
			return err
		}
		if err := shmem.QuietOnStream(s); err != nil {
			return err
		}
		if err := shmem.BarrierAllOnStream(s); err != nil {
			return err
		}
		if err := launchOn(s, "s_check", b, int32(streamN), int32(base(left, 0)), res); err != nil {
			return err
		}
		if err := syncStream(s); err != nil {
			return err
		}
		if err := resCheck("PutOnStream after s_fill", base(left, 0)); err != nil {
			return err
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
		// Get: fill (slow) -> barrier -> get from the right -> check
		if err := zeroRes(); err != nil {
			return err
		}
		if err := launchOn(s, "s_fill", a, int32(streamN), int32(base(me, 7)), spinNS); err != nil {
			return err
		}
		if err := shmem.BarrierAllOnStream(s); err != nil {
			return err
		}
		if err := shmem.GetOnStream(s, b, 0, a, 0, streamN, right); err != nil {
			return err
		}
		if err := launchOn(s, "s_check", b, int32(streamN), int32(base(right, 7)), res); err != nil {
			return err
		}
		if err := syncStream(s); err != nil {
			return err
		}
		if err := resCheck("GetOnStream after a barrier", base(right, 7)); err != nil {
			return err
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
		// offsets, n = 1, 17, 0
		if err := shmem.PutOnStream(s, b, 1, a, 2, 17, right); err != nil {
			return err
		}
		if err := shmem.PutOnStream(s, b, 40, a, 0, 0, right); err != nil {
			return err
		}
		if err := shmem.GetOnStream(s, b, 100, a, 5, 1, right); err != nil {
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
		got := make([]int32, 101)
		if err := shmem.Get(got, b, 0, me); err != nil {
			return err
		}
		for i := 1; i < 18; i++ {
			if want := int32(base(left, 7) + i + 1); got[i] != want {
				return fmt.Errorf("PutOnStream(dstIdx 1, srcIdx 2, n 17): b[%d] = %d, want %d", i, got[i], want)
			}
		}
		if want := int32(base(right, 7) + 18); got[18] != want { // b[18] from the GetOnStream above
			return fmt.Errorf("PutOnStream wrote past n: b[18] = %d, want %d", got[18], want)
		}
		if want := int32(base(right, 7) + 5); got[100] != want {
			return fmt.Errorf("GetOnStream(dstIdx 100, srcIdx 5, n 1): b[100] = %d, want %d", got[100], want)
		}
		return nil
	})
}

func streamSignal() error {
	if err := collSetup(); err != nil {
		return err
	}
	a, b, free, err := streamPair()
	if err != nil {
		return err
	}
	defer free()
	round := 0
	return eachStream(func(k streamKind, s *shmem.Stream) error {
		sig, err := shmem.AllocDevice[uint64](2)
		if err != nil {
			return err
		}
		defer sig.Free()
		// rounds: ADD 1 (sig 1), SET 20 (sig 20), ADD 1 (sig 21)
		steps := []struct {
			op   shmem.SignalOp
			val  uint64
			cmp  shmem.Cmp
			wait uint64
		}{{shmem.SignalAdd, 1, shmem.CmpGE, 1}, {shmem.SignalSet, 20, shmem.CmpEQ, 20}, {shmem.SignalAdd, 1, shmem.CmpGT, 20}}
		for i, st := range steps {
			round++
			base := func(pe int) int { return pe*1_000_000 + round*1000 }
			if err := zeroRes(); err != nil {
				return err
			}
			if err := launchOn(s, "s_fill", a, int32(streamN), int32(base(me)), spinNS); err != nil {
				return err
			}
			if err := shmem.PutSignalOnStream(s, b, 0, a, 0, streamN, sig, 1, st.val, st.op, right); err != nil {
				return err
			}
			if err := shmem.SignalWaitUntilOnStream(s, sig, 1, st.cmp, st.wait); err != nil {
				return err
			}
			if err := launchOn(s, "s_check", b, int32(streamN), int32(base(left)), res); err != nil {
				return err
			}
			if err := shmem.BarrierAllOnStream(s); err != nil { // nobody overwrites b before it is checked
				return err
			}
			if err := syncStream(s); err != nil {
				return err
			}
			if err := resCheck(fmt.Sprintf("round %d: data after SignalWaitUntilOnStream", i+1), base(left)); err != nil {
				return err
			}
		}
		v, err := shmem.G(sig, 1, me)
		if err != nil {
			return err
		}
		if v != 21 {
			return fmt.Errorf("signal word after ADD 1, SET 20, ADD 1 = %d, want 21", v)
		}
		if v, _ := shmem.G(sig, 0, me); v != 0 {
			return fmt.Errorf("signal word 0 = %d: PutSignalOnStream wrote the wrong index", v)
		}
		return nil
	})
}

// streamBarriers: a kernel's device put (nbi, not quieted) on the stream,
// then the on-stream barrier that must complete it; then a check kernel on
// the same stream.
func streamBarriers() error {
	if err := collSetup(); err != nil {
		return err
	}
	const n = 1001
	a, err := shmem.AllocDevice[int32](n)
	if err != nil {
		return err
	}
	defer a.Free()
	b, err := shmem.AllocDevice[int32](n)
	if err != nil {
		return err
	}
	defer b.Free()
	var split shmem.Team
	for _, ct := range teamsList {
		if ct.name == "halves" {
			split = ct.t
		}
	}
	type form struct {
		name string
		team shmem.Team
		bar  func(s *shmem.Stream) error
	}
	forms := []form{
		{"BarrierAllOnStream", shmem.TeamWorld, shmem.BarrierAllOnStream},
		{"QuietOnStream+SyncAllOnStream", shmem.TeamWorld, func(s *shmem.Stream) error {
			if err := shmem.QuietOnStream(s); err != nil {
				return err
			}
			return shmem.SyncAllOnStream(s)
		}},
		{"TeamWorld.BarrierOnStream", shmem.TeamWorld, shmem.TeamWorld.BarrierOnStream},
		{"QuietOnStream+TeamShared.SyncOnStream", shmem.TeamShared, func(s *shmem.Stream) error {
			if err := shmem.QuietOnStream(s); err != nil {
				return err
			}
			return shmem.TeamShared.SyncOnStream(s)
		}},
		{"TeamShared.BarrierOnStream", shmem.TeamShared, shmem.TeamShared.BarrierOnStream},
	}
	if split.Valid() {
		forms = append(forms, form{"split team (halves).BarrierOnStream", split, split.BarrierOnStream})
	}
	round := 0
	return eachStream(func(k streamKind, s *shmem.Stream) error {
		for _, f := range forms {
			for rep := 0; rep < 3; rep++ {
				round++
				tn, tme := f.team.NPEs(), f.team.MyPE()
				to := f.team.TranslatePE((tme+1)%tn, shmem.TeamWorld)
				from := f.team.TranslatePE((tme+tn-1)%tn, shmem.TeamWorld)
				base := func(pe int) int { return pe*1_000_000 + round*1000 }
				if err := zeroRes(); err != nil {
					return err
				}
				if err := launchOn(s, "s_fill", a, int32(n), int32(base(me)), uint64(0)); err != nil {
					return err
				}
				if err := launchOn(s, "s_put", b, a, int32(n), int32(to)); err != nil {
					return err
				}
				if err := f.bar(s); err != nil {
					return err
				}
				if err := launchOn(s, "s_check", b, int32(n), int32(base(from)), res); err != nil {
					return err
				}
				if err := f.bar(s); err != nil {
					return err
				}
				if err := syncStream(s); err != nil {
					return err
				}
				if err := resCheck(fmt.Sprintf("%s round %d: PE %d's device put", f.name, rep, from), base(from)); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// ---- collectives on streams and host collectives on GPU arrays ----

type num interface {
	~int8 | ~int32 | ~int64 | ~uint8 | ~uint64 | ~float32 | ~float64
}

func isFloatT[T num]() bool  { var one T = 1; return one/2 != 0 }
func isSignedT[T num]() bool { var z T; return z-1 < z }
func sizeT[T num]() int      { var z T; return int(unsafe.Sizeof(z)) }

var allOps = []shmem.Op{shmem.OpSum, shmem.OpProd, shmem.OpMin, shmem.OpMax, shmem.OpAnd, shmem.OpOr, shmem.OpXor}

// aval/bval: the same value patterns as devcoll.cu (exact in every floating type).
func avalG(op shmem.Op, p, i int, sgn bool) int64 {
	switch op {
	case shmem.OpSum:
		return int64(p+1)*3 + int64(i%7)
	case shmem.OpProd:
		switch (p + i) % 3 {
		case 0:
			return 1
		case 1:
			return 2
		}
		if sgn {
			return -1
		}
		return 3
	}
	v := int64((p*7 + i*3) % 11)
	if sgn {
		v -= 5
	}
	return v
}

func bvalG(op shmem.Op, p, i, bytes int) uint64 {
	nb := 8 * bytes
	m := ^uint64(0)
	if bytes < 8 {
		m = 1<<nb - 1
	}
	switch op {
	case shmem.OpAnd:
		return ^(uint64(1) << ((p + i*3) % nb)) & m
	case shmem.OpOr:
		return (uint64(1) << ((p*3 + i) % nb)) & m
	}
	return (0x9e3779b97f4a7c15*uint64(p+1) ^ uint64(i)*0x12345677) & m
}

func srcVal[T num](op shmem.Op, p, i int) T {
	if op >= shmem.OpAnd {
		return T(bvalG(op, p, i, sizeT[T]()))
	}
	return T(avalG(op, p, i, isSignedT[T]()))
}

func reduceWant[T num](op shmem.Op, members []int, e int) T {
	if op >= shmem.OpAnd {
		w := bvalG(op, members[0], e, sizeT[T]())
		for _, p := range members[1:] {
			v := bvalG(op, p, e, sizeT[T]())
			switch op {
			case shmem.OpAnd:
				w &= v
			case shmem.OpOr:
				w |= v
			default:
				w ^= v
			}
		}
		return T(w)
	}
	// In T, as the library computes: an integer sum or product wraps as T
	// does (an int8 sum at 8 PEs); the floating types hold these small
	// integers exactly.
	w := srcVal[T](op, members[0], e)
	for _, p := range members[1:] {
		v := srcVal[T](op, p, e)
		switch op {
		case shmem.OpSum:
			w += v
		case shmem.OpProd:
			w *= v
		case shmem.OpMin:
			w = min(w, v)
		default:
			w = max(w, v)
		}
	}
	return w
}

func mvalG(p, k int) int64 { return int64((p*31 + k*7 + 3) % 251) }

func membersOf(t shmem.Team) []int {
	ms := make([]int, t.NPEs())
	for j := range ms {
		ms[j] = t.TranslatePE(j, shmem.TeamWorld)
	}
	return ms
}

// collMode: how a collective case runs.
type collMode struct {
	name   string
	stream func() (*shmem.Stream, error) // nil: the host's blocking call
}

var collModes = []collMode{
	{"OnStream(NewStream)", shmem.NewStream},
	{"OnStream(nil)", func() (*shmem.Stream, error) { return nil, nil }},
	{"host blocking", nil},
}

// the n of the collective cases: 0, 1, odd, 1000 and -coll-large
func collNs() []int { return []int{0, 1, 7, 1000, *collLarge} }

// runCollCases runs family fam ("reduce", "reducescatter", "broadcast",
// "fcollect", "alltoall") for element type T in mode m on every team of
// the list and checks every element and a guard after the result.
func runCollCases[T num](fam string, m collMode) error {
	maxN := *collLarge*npes + 16
	src, err := shmem.AllocDevice[T](maxN)
	if err != nil {
		return err
	}
	defer src.Free()
	dst, err := shmem.AllocDevice[T](maxN)
	if err != nil {
		return err
	}
	defer dst.Free()
	var s *shmem.Stream
	if m.stream != nil {
		if s, err = m.stream(); err != nil {
			return err
		}
		if s != nil {
			defer s.Destroy()
		}
	}
	hostSrc := make([]T, maxN)
	hostDst := make([]T, maxN)
	fill := make([]T, maxN)
	for i := range fill {
		fill[i] = T(sentinelV)
	}
	ops := []shmem.Op{shmem.OpSum}
	if fam == "reduce" || fam == "reducescatter" {
		ops = nil
		for _, op := range allOps {
			if op >= shmem.OpAnd && isFloatT[T]() {
				continue
			}
			ops = append(ops, op)
		}
	}
	for _, ct := range teamsList {
		mem := membersOf(ct.t)
		tn, tme := len(mem), ct.t.MyPE()
		for _, n := range collNs() {
			for _, op := range ops {
				variants := []string{"copy"}
				switch fam {
				case "reduce":
					variants = []string{"copy", "in place"}
				case "broadcast":
					variants = []string{"root 0", "root last"}
				}
				for _, v := range variants {
					nsrc, ndst := n, n
					switch fam {
					case "reducescatter", "alltoall":
						nsrc = n * tn
					}
					if fam == "fcollect" || fam == "alltoall" {
						ndst = n * tn
					}
					root := 0
					if v == "root last" {
						root = tn - 1
					}
					for i := 0; i < nsrc; i++ {
						if fam == "reduce" || fam == "reducescatter" {
							hostSrc[i] = srcVal[T](op, me, i)
						} else {
							hostSrc[i] = T(mvalG(me, i))
						}
					}
					copy(hostSrc[nsrc:nsrc+8], fill)
					if err := shmem.Put(src, 0, hostSrc[:nsrc+8], me); err != nil {
						return err
					}
					if err := shmem.Put(dst, 0, fill[:ndst+8], me); err != nil {
						return err
					}
					if err := shmem.BarrierAll(); err != nil {
						return err
					}
					d := dst
					if v == "in place" {
						d = src
					}
					if err := runOne(fam, m, s, ct.t, op, d, src, n, root); err != nil {
						return fmt.Errorf("team %s %s n=%d op %v %s: %w", ct.name, fam, n, op, v, err)
					}
					if err := shmem.Get(hostDst[:ndst+8], d, 0, me); err != nil {
						return err
					}
					for i := 0; i < ndst; i++ {
						var want T
						switch fam {
						case "reduce":
							want = reduceWant[T](op, mem, i)
						case "reducescatter":
							want = reduceWant[T](op, mem, tme*n+i)
						case "broadcast":
							want = T(mvalG(mem[root], i))
						case "fcollect":
							want = T(mvalG(mem[i/n], i%n))
						default:
							want = T(mvalG(mem[i/n], tme*n+i%n))
						}
						if hostDst[i] != want {
							return fmt.Errorf("team %s %s %s n=%d op %v %s: dst[%d] = %v, want %v",
								ct.name, m.name, fam, n, op, v, i, hostDst[i], want)
						}
					}
					for i := ndst; i < ndst+8; i++ {
						want := T(sentinelV)
						if v == "in place" {
							want = hostSrc[i]
						}
						if hostDst[i] != want {
							return fmt.Errorf("team %s %s %s n=%d op %v %s: wrote past the result: dst[%d] = %v, want %v",
								ct.name, m.name, fam, n, op, v, i, hostDst[i], want)
						}
					}
					if err := shmem.BarrierAll(); err != nil { // everyone done reading src
						return err
					}
				}
			}
		}
	}
	return nil
}

func runOne[T num](fam string, m collMode, s *shmem.Stream, t shmem.Team, op shmem.Op, dst, src shmem.Array[T], n, root int) error {
	var err error
	if m.stream == nil {
		switch fam {
		case "reduce":
			err = shmem.Reduce(t, op, dst, src, n)
		case "broadcast":
			err = shmem.Broadcast(t, dst, src, n, root)
		case "fcollect":
			err = shmem.FCollect(t, dst, src, n)
		case "alltoall":
			err = shmem.AllToAll(t, dst, src, n)
		default:
			return fmt.Errorf("no host blocking form of %s in this test", fam)
		}
		return err
	}
	switch fam {
	case "reduce":
		err = shmem.ReduceOnStream(s, t, op, dst, src, n)
	case "reducescatter":
		err = shmem.ReduceScatterOnStream(s, t, op, dst, src, n)
	case "broadcast":
		err = shmem.BroadcastOnStream(s, t, dst, src, n, root)
	case "fcollect":
		err = shmem.FCollectOnStream(s, t, dst, src, n)
	default:
		err = shmem.AllToAllOnStream(s, t, dst, src, n)
	}
	if err != nil {
		return err
	}
	return syncStream(s)
}

func streamCollTest(fam string, m collMode) test {
	return test{fmt.Sprintf("%s %s", fam, m.name), func() error {
		if err := teamSetup(); err != nil {
			return err
		}
		for _, f := range []func() error{
			func() error { return runCollCases[int32](fam, m) },
			func() error { return runCollCases[float32](fam, m) },
			func() error { return runCollCases[int64](fam, m) },
			func() error { return runCollCases[float64](fam, m) },
			func() error { return runCollCases[uint8](fam, m) },
		} {
			if err := f(); err != nil {
				return err
			}
		}
		return nil
	}}
}

// streamCollOrder: a kernel writes src (after a spin) and the on-stream
// collective right behind it on the same stream must reduce / gather what
// it wrote.
func streamCollOrder() error {
	if err := collSetup(); err != nil {
		return err
	}
	const n = 50001
	src, err := shmem.AllocDevice[int32](n * npes)
	if err != nil {
		return err
	}
	defer src.Free()
	dst, err := shmem.AllocDevice[int32](n * npes)
	if err != nil {
		return err
	}
	defer dst.Free()
	got := make([]int32, n*npes)
	return eachStream(func(k streamKind, s *shmem.Stream) error {
		for round, fam := range []string{"reduce", "fcollect", "broadcast", "alltoall"} {
			base := func(pe int) int32 { return int32(pe*100_000 + round*10) }
			nsrc := n
			if fam == "alltoall" {
				nsrc = n * npes
			}
			if err := launchOn(s, "s_fill", src, int32(nsrc), base(me), spinNS); err != nil {
				return err
			}
			switch fam {
			case "reduce":
				err = shmem.ReduceOnStream(s, shmem.TeamWorld, shmem.OpSum, dst, src, n)
			case "fcollect":
				err = shmem.FCollectOnStream(s, shmem.TeamWorld, dst, src, n)
			case "broadcast":
				err = shmem.BroadcastOnStream(s, shmem.TeamWorld, dst, src, n, npes-1)
			default:
				err = shmem.AllToAllOnStream(s, shmem.TeamWorld, dst, src, n)
			}
			if err != nil {
				return fmt.Errorf("%sOnStream: %w", fam, err)
			}
			if err := syncStream(s); err != nil {
				return err
			}
			nd := n
			if fam == "fcollect" || fam == "alltoall" {
				nd = n * npes
			}
			if err := shmem.Get(got[:nd], dst, 0, me); err != nil {
				return err
			}
			for i := 0; i < nd; i++ {
				var want int32
				switch fam {
				case "reduce":
					for p := 0; p < npes; p++ {
						want += base(p) + int32(i)
					}
				case "fcollect":
					want = base(i/n) + int32(i%n)
				case "broadcast":
					want = base(npes-1) + int32(i)
				default:
					want = base(i/n) + int32(me*n+i%n)
				}
				if got[i] != want {
					return fmt.Errorf("%sOnStream after s_fill on the same stream: dst[%d] = %d, want %d (stale source?)", fam, i, got[i], want)
				}
			}
			if err := shmem.BarrierAll(); err != nil {
				return err
			}
		}
		return nil
	})
}

// streamSteps runs the library's point-to-point and barrier kernels one
// at a time on a new stream, synchronizing after each, so a failure names
// the first call that does not complete (each kernel's first use comes
// before any kernel that depends on it).
func streamSteps() error {
	a, b, free, err := streamPair()
	if err != nil {
		return err
	}
	defer free()
	s, err := shmem.NewStream()
	if err != nil {
		return err
	}
	defer s.Destroy()
	steps := []struct {
		name string
		call func() error
	}{
		{"QuietOnStream (nothing outstanding)", func() error { return shmem.QuietOnStream(s) }},
		{"SyncAllOnStream", func() error { return shmem.SyncAllOnStream(s) }},
		{"BarrierAllOnStream", func() error { return shmem.BarrierAllOnStream(s) }},
		{"PutOnStream of 1 element", func() error { return shmem.PutOnStream(s, b, 0, a, 0, 1, right) }},
		{"QuietOnStream after a put", func() error { return shmem.QuietOnStream(s) }},
		{"BarrierAllOnStream after a put", func() error { return shmem.BarrierAllOnStream(s) }},
		{"GetOnStream of 1 element", func() error { return shmem.GetOnStream(s, b, 1, a, 1, 1, right) }},
		{"PutOnStream of streamN elements", func() error { return shmem.PutOnStream(s, b, 0, a, 0, streamN, right) }},
		{"BarrierAllOnStream after a large put", func() error { return shmem.BarrierAllOnStream(s) }},
	}
	for _, st := range steps {
		if err := st.call(); err != nil {
			return fmt.Errorf("%s: %w", st.name, err)
		}
		if err := s.Synchronize(); err != nil {
			return fmt.Errorf("%s, then Stream.Synchronize: %w", st.name, err)
		}
	}
	return shmem.BarrierAll()
}

func streamTests() []test {
	if *collFatbin == "" {
		return nil
	}
	collResolve()
	ts := []test{
		{"stream calls one at a time", streamSteps},
		{"PutOnStream/GetOnStream/QuietOnStream", streamRMA},
		{"PutSignalOnStream/SignalWaitUntilOnStream", streamSignal},
		{"on-stream barriers (all/sync/team)", streamBarriers},
		{"collective OnStream after a kernel", streamCollOrder},
		{"stream calls in a CUDA graph (global and relaxed capture), replayed", streamGraph},
	}
	for _, fam := range []string{"reduce", "reducescatter", "broadcast", "fcollect", "alltoall"} {
		for _, m := range collModes {
			if m.stream == nil && fam == "reducescatter" {
				continue // no blocking ReduceScatter in shmem
			}
			ts = append(ts, streamCollTest(fam, m))
		}
	}
	return ts
}
