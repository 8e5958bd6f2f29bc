package main

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/goshmem/goshmem/internal/gpulib"
	"github.com/goshmem/goshmem/shmem"
)

// gpuStream is -mode gpu-stream (tests/integration/gpu_stream_test.go):
// every stream-ordered call and every host collective on GPU arrays, with
// values, on the fake CUDA driver (whose streams run work inside the call
// that queues it). Each step prints "gpu-stream: PE k: <step>: ok" or a
// FAIL line; the exit code is 1 after a failure.
func gpuStream() int {
	// What importing the gpulib module does, with the fake driver's image
	// (testutil.FakeLibImage: the fatbin magic, on which the fake runs
	// lib.cu's host build).
	gpulib.Register(gpulib.ABI, []byte{0x50, 0xed, 0x55, 0xba, 0, 0, 0, 0})
	if err := shmem.Init(initOpts()...); err != nil {
		fmt.Printf("gpu-stream: Init failed: %v\n", err)
		return 1
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	code := 0
	step := func(name string, err error) {
		if err != nil {
			fmt.Printf("gpu-stream: PE %d: %s: FAIL: %v\n", me, name, err)
			code = 1
			return
		}
		fmt.Printf("gpu-stream: PE %d: %s: ok\n", me, name)
	}
	for _, s := range streamSteps {
		step(s.name, s.run(me, n))
	}
	step("Finalize", shmem.Finalize())
	return code
}

var streamSteps = []struct {
	name string
	run  func(me, n int) error
}{
	{"PutOnStream", stPut},
	{"GetOnStream", stGet},
	{"PutSignalOnStream", stPutSignal},
	{"RegisterDevice", stRegister},
	{"nvshmemx_buffer_register", stRegisterC},
	{"StreamFromHandle", stHandle},
	{"ReduceOnStream", stReduce},
	{"ReduceScatterOnStream", stReduceScatter},
	{"BroadcastOnStream", stBroadcast},
	{"FCollectOnStream", stFCollect},
	{"AllToAllOnStream", stAllToAll},
	{"team on stream", stTeam},
	{"barriers on stream", stBarriers},
	{"host collectives on GPU arrays", stHost},
	{"errors", stErrors},
}

// fill writes v(i) into this PE's a[0:len] (a host put to a GPU array).
func fill[T shmem.Elem](a shmem.Array[T], count int, v func(i int) T) error {
	b := make([]T, count)
	for i := range b {
		b[i] = v(i)
	}
	return shmem.Put(a, 0, b, shmem.MyPE())
}

// expect compares this PE's a[0:count] with v(i).
func expect[T shmem.Elem](what string, a shmem.Array[T], count int, v func(i int) T) error {
	got := make([]T, count)
	if err := shmem.Get(got, a, 0, shmem.MyPE()); err != nil {
		return err
	}
	for i := range got {
		if w := v(i); got[i] != w {
			return fmt.Errorf("%s[%d] = %v, want %v", what, i, got[i], w)
		}
	}
	return nil
}

func all(errs ...error) error { return errors.Join(errs...) }

// odd lengths: not a multiple of any block or warp width.
const stN = 1001

func stPut(me, n int) error {
	src, err1 := shmem.AllocDevice[int64](stN)
	dst, err2 := shmem.AllocDevice[int64](stN + 8)
	if err := all(err1, err2); err != nil {
		return err
	}
	next, prev := (me+1)%n, (me+n-1)%n
	if err := fill(src, stN, func(i int) int64 { return int64(me*100000 + i) }); err != nil {
		return err
	}
	// a put at an offset, a zero-length one, quiet and an on-stream barrier
	if err := all(shmem.PutOnStream(nil, dst, 3, src, 0, stN-3, next), shmem.PutOnStream(nil, dst, 0, src, 0, 0, next),
		shmem.QuietOnStream(nil), shmem.BarrierAllOnStream(nil), shmem.Synchronize()); err != nil {
		return err
	}
	if err := expect("dst", dst, stN, func(i int) int64 {
		if i < 3 {
			return 0
		}
		return int64(prev*100000 + i - 3)
	}); err != nil {
		return err
	}
	return all(shmem.SyncAllOnStream(nil), shmem.Synchronize(), src.Free(), dst.Free())
}

func stGet(me, n int) error {
	src, err1 := shmem.AllocDevice[float32](stN)
	dst, err2 := shmem.AllocDevice[float32](stN)
	if err := all(err1, err2); err != nil {
		return err
	}
	prev := (me + n - 1) % n
	if err := all(fill(src, stN, func(i int) float32 { return float32(me) + float32(i)/4 }), shmem.BarrierAll()); err != nil {
		return err
	}
	s, err := shmem.NewStream()
	if err != nil {
		return err
	}
	if err := all(shmem.GetOnStream(s, dst, 1, src, 2, stN-2, prev), s.Synchronize()); err != nil {
		return err
	}
	if err := expect("dst", dst, stN-1, func(i int) float32 {
		if i == 0 {
			return 0
		}
		return float32(prev) + float32(i+1)/4
	}); err != nil {
		return err
	}
	return all(s.Destroy(), shmem.BarrierAll(), src.Free(), dst.Free())
}

func stPutSignal(me, n int) error {
	src, err1 := shmem.AllocDevice[uint16](stN)
	dst, err2 := shmem.AllocDevice[uint16](stN)
	sig, err3 := shmem.AllocDevice[uint64](2)
	if err := all(err1, err2, err3); err != nil {
		return err
	}
	next, prev := (me+1)%n, (me+n-1)%n
	if err := all(fill(src, stN, func(i int) uint16 { return uint16(me*7 + i) }), shmem.BarrierAll()); err != nil {
		return err
	}
	// SET to word 0, then ADD 5 to word 1 twice; the waits on this PE's
	// words run in stream order before the copy-back is read.
	err := all(shmem.PutSignalOnStream(nil, dst, 0, src, 0, stN, sig, 0, 41, shmem.SignalSet, next),
		shmem.PutSignalOnStream(nil, dst, 0, src, 0, 0, sig, 1, 5, shmem.SignalAdd, next),
		shmem.PutSignalOnStream(nil, dst, 0, src, 0, 0, sig, 1, 5, shmem.SignalAdd, next),
		shmem.SignalWaitUntilOnStream(nil, sig, 0, shmem.CmpEQ, 41),
		shmem.SignalWaitUntilOnStream(nil, sig, 1, shmem.CmpGE, 10),
		shmem.SignalWaitUntilOnStream(nil, sig, 1, shmem.CmpGT, 9),
		shmem.SignalWaitUntilOnStream(nil, sig, 1, shmem.CmpLE, 10),
		shmem.SignalWaitUntilOnStream(nil, sig, 1, shmem.CmpLT, 11),
		shmem.SignalWaitUntilOnStream(nil, sig, 1, shmem.CmpNE, 0),
		shmem.Synchronize())
	if err != nil {
		return err
	}
	if err := all(expect("dst", dst, stN, func(i int) uint16 { return uint16(prev*7 + i) }),
		expect("sig", sig, 2, func(i int) uint64 { return []uint64{41, 10}[i] })); err != nil {
		return err
	}
	return all(shmem.BarrierAll(), src.Free(), dst.Free(), sig.Free())
}

// A stream made elsewhere (here: NewStream's handle, wrapped again).
func stHandle(me, n int) error {
	own, err := shmem.NewStream()
	if err != nil {
		return err
	}
	s := shmem.StreamFromHandle(own.Handle())
	if s.Handle() != own.Handle() {
		return fmt.Errorf("StreamFromHandle(%#x).Handle() = %#x", own.Handle(), s.Handle())
	}
	a, err := shmem.AllocDevice[int32](4)
	if err != nil {
		return err
	}
	if err := all(fill(a, 4, func(i int) int32 { return int32(me + i) }), shmem.BarrierAll(),
		shmem.ReduceOnStream(s, shmem.TeamWorld, shmem.OpSum, a, a, 4), s.Synchronize()); err != nil {
		return err
	}
	if err := expect("a", a, 4, func(i int) int32 { return int32(n*(n-1)/2 + n*i) }); err != nil {
		return err
	}
	// Destroy retires the wrapper only: the owner's stream still works.
	if err := all(s.Destroy(), shmem.BarrierAllOnStream(own), own.Synchronize()); err != nil {
		return err
	}
	if err := shmem.QuietOnStream(s); err == nil {
		return fmt.Errorf("QuietOnStream on a destroyed stream: no error")
	}
	return all(own.Destroy(), a.Free())
}

// reduceCase runs one all-reduce with values: src[i] = v(pe, i); want(i)
// combines them. Count 0 runs on arrays of one element: AllocDevice(0)
// is the zero Array, which no collective takes.
func reduceCase[T shmem.Elem](me, n, count int, op shmem.Op, inPlace bool, v func(pe, i int) T, comb func(x, y T) T) error {
	src, err1 := shmem.AllocDevice[T](max(count, 1))
	dst, err2 := shmem.AllocDevice[T](max(count, 1))
	if err := all(err1, err2); err != nil {
		return err
	}
	if err := fill(src, count, func(i int) T { return v(me, i) }); err != nil {
		return err
	}
	out := dst
	if inPlace {
		out = src
	}
	if err := all(shmem.ReduceOnStream(nil, shmem.TeamWorld, op, out, src, count), shmem.Synchronize()); err != nil {
		return err
	}
	err := expect(fmt.Sprintf("%v (%d elements, in place %v)", op, count, inPlace), out, count, func(i int) T {
		acc := v(0, i)
		for pe := 1; pe < n; pe++ {
			acc = comb(acc, v(pe, i))
		}
		return acc
	})
	return all(err, src.Free(), dst.Free())
}

func stReduce(me, n int) error {
	const big = 70001 // more than one chunk of the library's scratch for 8-byte types
	return all(
		reduceCase(me, n, stN, shmem.OpSum, false, func(pe, i int) int64 { return int64((pe + 1) * (i + 1)) }, func(x, y int64) int64 { return x + y }),
		reduceCase(me, n, big, shmem.OpSum, true, func(pe, i int) float64 { return float64(pe) + float64(i%97)/8 }, func(x, y float64) float64 { return x + y }),
		reduceCase(me, n, stN, shmem.OpMax, false, func(pe, i int) float32 { return float32((pe*31 + i) % 17) }, func(x, y float32) float32 { return float32(math.Max(float64(x), float64(y))) }),
		reduceCase(me, n, stN, shmem.OpMin, true, func(pe, i int) int16 { return int16((pe*13+i)%50 - 25) }, func(x, y int16) int16 { return min(x, y) }),
		reduceCase(me, n, 7, shmem.OpProd, false, func(pe, i int) uint8 { return uint8(pe + i + 1) }, func(x, y uint8) uint8 { return x * y }),
		reduceCase(me, n, stN, shmem.OpAnd, false, func(pe, i int) uint32 { return ^uint32(1<<(pe%32)) ^ uint32(i) }, func(x, y uint32) uint32 { return x & y }),
		reduceCase(me, n, stN, shmem.OpOr, false, func(pe, i int) int8 { return int8(1<<(pe%7)) | int8(i%3) }, func(x, y int8) int8 { return x | y }),
		reduceCase(me, n, stN, shmem.OpXor, true, func(pe, i int) uint64 { return uint64(pe*0x9e3779b9 + i) }, func(x, y uint64) uint64 { return x ^ y }),
		reduceCase(me, n, 0, shmem.OpSum, false, func(pe, i int) int32 { return 1 }, func(x, y int32) int32 { return x + y }),
		// large enough for the grid kernel to take several blocks per PE (over load/store)
		reduceCase(me, n, 600001, shmem.OpSum, true, func(pe, i int) int32 { return int32(pe*7 + i%1009) }, func(x, y int32) int32 { return x + y }),
		reduceCase(me, n, 300001, shmem.OpMax, false, func(pe, i int) float32 { return float32((pe*31 + i) % 1013) }, func(x, y float32) float32 { return float32(math.Max(float64(x), float64(y))) }),
	)
}

func stReduceScatter(me, n int) error {
	// one-block scratch path, then the grid kernel with several blocks (over load/store)
	return all(reduceScatterCase(me, n, 333), reduceScatterCase(me, n, 300001))
}

func reduceScatterCase(me, n, per int) error {
	src, err1 := shmem.AllocDevice[int32](per * n)
	dst, err2 := shmem.AllocDevice[int32](per)
	if err := all(err1, err2); err != nil {
		return err
	}
	v := func(pe, i int) int32 { return int32(pe*1000 + i) }
	if err := all(fill(src, per*n, func(i int) int32 { return v(me, i) }),
		shmem.ReduceScatterOnStream(nil, shmem.TeamWorld, shmem.OpSum, dst, src, per), shmem.Synchronize()); err != nil {
		return err
	}
	want := func(i int) int32 {
		var s int32
		for pe := 0; pe < n; pe++ {
			s += v(pe, me*per+i)
		}
		return s
	}
	if err := expect("dst", dst, per, want); err != nil {
		return err
	}
	// another operator into a second destination; in place is an error
	// (reduce-scatter's dst and src must be disjoint)
	dst2, err := shmem.AllocDevice[int32](per)
	if err != nil {
		return err
	}
	if err := all(shmem.ReduceScatterOnStream(nil, shmem.TeamWorld, shmem.OpMax, dst2, src, per), shmem.Synchronize()); err != nil {
		return err
	}
	if err := expect("dst2", dst2, per, func(i int) int32 { return v(n-1, me*per+i) }); err != nil {
		return err
	}
	if err := shmem.ReduceScatterOnStream(nil, shmem.TeamWorld, shmem.OpSum, src, src, per); !errors.Is(err, shmem.ErrInvalidArgument) {
		return fmt.Errorf("in-place ReduceScatterOnStream: %v, want ErrInvalidArgument", err)
	}
	if err := dst2.Free(); err != nil {
		return err
	}
	return all(src.Free(), dst.Free())
}

func stBroadcast(me, n int) error {
	// one-block kernel, then the grid kernel (over load/store: 1.6 MB, odd count)
	return all(broadcastCase(me, n, stN), broadcastCase(me, n, 200003))
}

func broadcastCase(me, n, cnt int) error {
	src, err1 := shmem.AllocDevice[float64](cnt)
	dst, err2 := shmem.AllocDevice[float64](cnt)
	if err := all(err1, err2); err != nil {
		return err
	}
	root := n - 1
	if err := all(fill(src, cnt, func(i int) float64 { return float64(me) + float64(i)/2 }),
		shmem.BroadcastOnStream(nil, shmem.TeamWorld, dst, src, cnt, root), shmem.Synchronize()); err != nil {
		return err
	}
	if err := expect(fmt.Sprintf("dst (%d elements)", cnt), dst, cnt, func(i int) float64 { return float64(root) + float64(i)/2 }); err != nil {
		return err
	}
	// in place from root 0
	k := min(cnt, 5)
	if cnt > stN {
		k = cnt
	}
	if err := all(shmem.BroadcastOnStream(nil, shmem.TeamWorld, src, src, k, 0), shmem.Synchronize()); err != nil {
		return err
	}
	return all(expect(fmt.Sprintf("src (in place, %d elements)", k), src, k, func(i int) float64 { return float64(i) / 2 }), src.Free(), dst.Free())
}

func stFCollect(me, n int) error {
	// one-block kernel, then the grid kernel (blocks of an odd byte count)
	return all(fcollectCase(me, n, 77), fcollectCase(me, n, 600007))
}

func fcollectCase(me, n, per int) error {
	src, err1 := shmem.AllocDevice[uint8](per)
	dst, err2 := shmem.AllocDevice[uint8](per * n)
	if err := all(err1, err2); err != nil {
		return err
	}
	v := func(pe, i int) uint8 { return uint8(pe*per + i + i>>9) }
	if err := all(fill(src, per, func(i int) uint8 { return v(me, i) }),
		shmem.FCollectOnStream(nil, shmem.TeamWorld, dst, src, per), shmem.Synchronize()); err != nil {
		return err
	}
	return all(expect(fmt.Sprintf("dst (%d per PE)", per), dst, per*n, func(i int) uint8 { return v(i/per, i%per) }), src.Free(), dst.Free())
}

func stAllToAll(me, n int) error {
	// one-block kernel, then the grid kernel
	return all(alltoallCase(me, n, 19), alltoallCase(me, n, 70001))
}

func alltoallCase(me, n, per int) error {
	src, err1 := shmem.AllocDevice[int64](per * n)
	dst, err2 := shmem.AllocDevice[int64](per * n)
	if err := all(err1, err2); err != nil {
		return err
	}
	// block j of PE p: p*1e9 + j*1e6 + k
	if err := all(fill(src, per*n, func(i int) int64 { return int64(me*1e9 + (i/per)*1e6 + i%per) }),
		shmem.AllToAllOnStream(nil, shmem.TeamWorld, dst, src, per), shmem.Synchronize()); err != nil {
		return err
	}
	// block j of dst here: PE j's block me
	return all(expect(fmt.Sprintf("dst (%d per block)", per), dst, per*n, func(i int) int64 { return int64((i/per)*1e9 + me*1e6 + i%per) }), src.Free(), dst.Free())
}

// A split team (the even PEs; with 2 PEs just PE 0): its barrier and a
// reduction over its members on a stream.
func stTeam(me, n int) error {
	size := (n + 1) / 2
	t, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 2, size)
	if err != nil {
		return err
	}
	a, err := shmem.AllocDevice[int64](stN)
	if err != nil {
		return err
	}
	if me%2 == 0 {
		if t.DeviceID() < 0 {
			return fmt.Errorf("split team has no device id")
		}
		if err := all(fill(a, stN, func(i int) int64 { return int64(me + i) }), t.BarrierOnStream(nil),
			shmem.ReduceOnStream(nil, t, shmem.OpSum, a, a, stN), shmem.Synchronize()); err != nil {
			return err
		}
		sumPE := 0
		for pe := 0; pe < n; pe += 2 {
			sumPE += pe
		}
		if err := expect("a", a, stN, func(i int) int64 { return int64(sumPE + size*i) }); err != nil {
			return err
		}
		if err := t.Destroy(); err != nil {
			return err
		}
	}
	return all(shmem.BarrierAll(), a.Free())
}

// stBarriers: rounds in which every member puts a value into slot me of
// every member's array, then a barrier (BarrierAllOnStream,
// Team.BarrierOnStream; SyncAllOnStream / Team.SyncOnStream after a
// QuietOnStream), then checks every slot. One member enters each round
// late: a barrier that let a member through early would show it the
// previous round's value (the fake's streams run inside the call, so the
// check runs when the member's barrier returned). Then the split team is
// destroyed and made again, whose slot restarts its epochs, and the rounds
// run once more, mixed with a kernel collective on the team.
func stBarriers(me, n int) error {
	a, err1 := shmem.AllocDevice[int64](n)
	src, err2 := shmem.AllocDevice[int64](1)
	if err := all(err1, err2); err != nil {
		return err
	}
	s, err := shmem.NewStream()
	if err != nil {
		return err
	}
	rounds := func(t shmem.Team, idx, size int, tag int64, barrier, sync func() error) error {
		for r := int64(1); r <= 6; r++ {
			if int(r)%size == idx {
				time.Sleep(30 * time.Millisecond)
			}
			v := tag + r*1000 + int64(idx)
			if err := fill(src, 1, func(int) int64 { return v }); err != nil {
				return err
			}
			for j := 0; j < size; j++ {
				pe := j
				if t != shmem.TeamWorld {
					pe = 2 * j
				}
				if err := shmem.PutOnStream(s, a, idx, src, 0, 1, pe); err != nil {
					return err
				}
			}
			enter := barrier
			if r%2 == 0 {
				enter = func() error { return all(shmem.QuietOnStream(s), sync()) }
			}
			if err := all(enter(), s.Synchronize()); err != nil {
				return err
			}
			if err := expect(fmt.Sprintf("round %d: a", r), a, size, func(j int) int64 { return tag + r*1000 + int64(j) }); err != nil {
				return err
			}
			// nobody writes a again before every member checked it
			if err := all(sync(), s.Synchronize()); err != nil {
				return err
			}
		}
		return nil
	}
	if err := rounds(shmem.TeamWorld, me, n, 0, func() error { return shmem.BarrierAllOnStream(s) },
		func() error { return shmem.SyncAllOnStream(s) }); err != nil {
		return fmt.Errorf("world: %w", err)
	}
	if err := all(shmem.TeamWorld.BarrierOnStream(s), shmem.TeamWorld.SyncOnStream(s), s.Synchronize()); err != nil {
		return err
	}
	size := (n + 1) / 2
	for pass := int64(1); pass <= 2; pass++ {
		t, err := shmem.TeamSplitStrided(shmem.TeamWorld, 0, 2, size)
		if err != nil {
			return err
		}
		if me%2 == 0 {
			if err := rounds(t, me/2, size, pass*100000, func() error { return t.BarrierOnStream(s) },
				func() error { return t.SyncOnStream(s) }); err != nil {
				return fmt.Errorf("split team, pass %d: %w", pass, err)
			}
			// a kernel collective on the team between its memory-operation syncs
			if err := all(fill(src, 1, func(int) int64 { return int64(me) }), shmem.ReduceOnStream(s, t, shmem.OpSum, src, src, 1),
				t.BarrierOnStream(s), s.Synchronize()); err != nil {
				return err
			}
			if err := expect("reduce", src, 1, func(int) int64 { return int64(size * (size - 1)) }); err != nil {
				return err
			}
			if err := t.Destroy(); err != nil {
				return err
			}
		}
		if err := shmem.BarrierAll(); err != nil {
			return err
		}
	}
	return all(s.Destroy(), a.Free(), src.Free())
}

// The blocking host collectives on GPU arrays (the library's kernels on
// the default stream).
func stHost(me, n int) error {
	const per = 129
	a, err1 := shmem.AllocDevice[float32](per * n)
	b, err2 := shmem.AllocDevice[float32](per * n)
	if err := all(err1, err2); err != nil {
		return err
	}
	v := func(pe, i int) float32 { return float32(pe*per + i) }
	if err := all(fill(a, per*n, func(i int) float32 { return v(me, i) }), shmem.Reduce(shmem.TeamWorld, shmem.OpSum, b, a, per*n)); err != nil {
		return err
	}
	if err := expect("Reduce", b, per*n, func(i int) float32 {
		var s float32
		for pe := 0; pe < n; pe++ {
			s += v(pe, i)
		}
		return s
	}); err != nil {
		return err
	}
	if err := all(shmem.Broadcast(shmem.TeamWorld, b, a, per, 1%n)); err != nil {
		return err
	}
	if err := expect("Broadcast", b, per, func(i int) float32 { return v(1%n, i) }); err != nil {
		return err
	}
	if err := shmem.FCollect(shmem.TeamWorld, b, a, per); err != nil {
		return err
	}
	if err := expect("FCollect", b, per*n, func(i int) float32 { return v(i/per, i%per) }); err != nil {
		return err
	}
	if err := shmem.AllToAll(shmem.TeamWorld, b, a, per); err != nil {
		return err
	}
	if err := expect("AllToAll", b, per*n, func(i int) float32 { return v(i/per, me*per+i%per) }); err != nil {
		return err
	}
	return all(a.Free(), b.Free())
}

// Bad input is an error at the call, with the right sentinel, and
// enqueues nothing (the PEs stay in step: a barrier follows).
func stErrors(me, n int) error {
	d, err1 := shmem.AllocDevice[int64](8)
	h, err2 := shmem.Alloc[int64](8)
	sig, err3 := shmem.AllocDevice[uint64](1)
	if err := all(err1, err2, err3); err != nil {
		return err
	}
	dead, err := shmem.NewStream()
	if err != nil {
		return err
	}
	if err := dead.Destroy(); err != nil {
		return err
	}
	cases := []struct {
		what string
		err  error
		is   error
	}{
		{"host dst", shmem.PutOnStream(nil, h, 0, d, 0, 1, 0), shmem.ErrInvalidArgument},
		{"host src", shmem.GetOnStream(nil, d, 0, h, 0, 1, 0), shmem.ErrInvalidArgument},
		{"bad pe", shmem.PutOnStream(nil, d, 0, d, 0, 1, n), shmem.ErrPEOutOfRange},
		{"negative pe", shmem.GetOnStream(nil, d, 0, d, 0, 1, -1), shmem.ErrPEOutOfRange},
		{"past the end", shmem.PutOnStream(nil, d, 4, d, 0, 5, 0), shmem.ErrOutOfBounds},
		{"negative index", shmem.GetOnStream(nil, d, -1, d, 0, 1, 0), shmem.ErrOutOfBounds},
		{"signal index", shmem.PutSignalOnStream(nil, d, 0, d, 0, 1, sig, 1, 1, shmem.SignalSet, 0), shmem.ErrOutOfBounds},
		{"signal op", shmem.PutSignalOnStream(nil, d, 0, d, 0, 1, sig, 0, 1, shmem.SignalOp(7), 0), shmem.ErrInvalidArgument},
		{"cmp", shmem.SignalWaitUntilOnStream(nil, sig, 0, shmem.Cmp(9), 1), shmem.ErrInvalidArgument},
		{"destroyed stream", shmem.PutOnStream(dead, d, 0, d, 0, 1, 0), shmem.ErrInvalidArgument},
		{"destroyed stream barrier", shmem.BarrierAllOnStream(dead), shmem.ErrInvalidArgument},
		{"bitwise float", shmem.ReduceOnStream[float64](nil, shmem.TeamWorld, shmem.OpXor, shmem.Array[float64]{}, shmem.Array[float64]{}, 1), shmem.ErrInvalidArgument},
		{"reduce host array", shmem.ReduceOnStream(nil, shmem.TeamWorld, shmem.OpSum, h, h, 1), shmem.ErrInvalidArgument},
		{"reduce too long", shmem.ReduceOnStream(nil, shmem.TeamWorld, shmem.OpSum, d, d, 9), shmem.ErrOutOfBounds},
		{"broadcast root", shmem.BroadcastOnStream(nil, shmem.TeamWorld, d, d, 1, n), shmem.ErrPEOutOfRange},
		{"fcollect too long", shmem.FCollectOnStream(nil, shmem.TeamWorld, d, d, 8), shmem.ErrOutOfBounds},
		{"invalid team", shmem.ReduceOnStream(nil, shmem.TeamInvalid, shmem.OpSum, d, d, 1), shmem.ErrInvalidArgument},
		{"mixed host collective", shmem.Reduce(shmem.TeamWorld, shmem.OpSum, d, h, 1), shmem.ErrInvalidArgument},
	}
	// n x members past the int range: n*n wraps to 0 or a small count at
	// 4 (or 3) PEs, which the arrays hold; the call must still refuse n
	if wrap := overflowN(n); wrap != 0 {
		cases = append(cases,
			struct {
				what string
				err  error
				is   error
			}{"alltoall n*npes overflows", shmem.AllToAllOnStream(nil, shmem.TeamWorld, d, d, wrap), shmem.ErrInvalidArgument},
			struct {
				what string
				err  error
				is   error
			}{"host alltoall on GPU arrays, n*npes overflows", shmem.AllToAll(shmem.TeamWorld, d, d, wrap), shmem.ErrInvalidArgument},
			struct {
				what string
				err  error
				is   error
			}{"host alltoall, n*npes overflows", shmem.AllToAll(shmem.TeamWorld, h, h, wrap), shmem.ErrInvalidArgument})
	}
	var bad []error
	for _, c := range cases {
		switch {
		case c.err == nil:
			bad = append(bad, fmt.Errorf("%s: no error", c.what))
		case !errors.Is(c.err, c.is):
			bad = append(bad, fmt.Errorf("%s: %v, want %v", c.what, c.err, c.is))
		default:
			fmt.Printf("gpu-stream: PE %d: error %s: %v\n", me, c.what, c.err)
		}
	}
	return all(append(bad, shmem.BarrierAll(), d.Free(), h.Free(), sig.Free())...)
}

// overflowN is the smallest n > 0 whose product with npes wraps past the
// int range to a count in [0, npes) (0 when none does: npes of 1 or 2).
func overflowN(npes int) int {
	if npes < 3 {
		return 0
	}
	n := uint64(math.MaxUint64)/uint64(npes) + 1 // n*npes = 2^64 + (small)
	if n > math.MaxInt64 {
		return 0
	}
	return int(n)
}
