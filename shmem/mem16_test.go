package shmem_test

import (
	stderrors "errors"
	"math"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// TestAllocZero: zero-size allocations return the zero Array without a
// heap collective (OpenSHMEM 1.6 §9.3.1: a zero-size shmem_malloc,
// shmem_calloc or shmem_align performs no action and returns a null
// pointer); Free of the zero Array does nothing; Realloc(a, 0) frees a.
func TestAllocZero(t *testing.T) {
	start(t)
	calls := shmem.HeapCalls()
	allocs := []struct {
		name string
		call func() (shmem.Array[int64], error)
	}{
		{"Alloc", func() (shmem.Array[int64], error) { return shmem.Alloc[int64](0) }},
		{"AllocAligned", func() (shmem.Array[int64], error) { return shmem.AllocAligned[int64](0, 256) }},
		{"AllocWithHints", func() (shmem.Array[int64], error) {
			return shmem.AllocWithHints[int64](0, shmem.AllocAtomicsRemote)
		}},
		{"AllocDevice (no GPU here)", func() (shmem.Array[int64], error) { return shmem.AllocDevice[int64](0) }},
		{"Realloc of the zero Array", func() (shmem.Array[int64], error) { return shmem.Realloc(shmem.Array[int64]{}, 0) }},
	}
	for _, tc := range allocs {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.call()
			require.NoError(t, err)
			assert.Equal(t, shmem.Array[int64]{}, a, "the zero Array")
			assert.Equal(t, 0, a.Len())
			assert.Nil(t, a.Local())
			assert.Zero(t, a.DevicePtr())
			assert.False(t, a.OnDevice())
			// Accesses of no elements pass; any element is out of bounds.
			assert.NoError(t, shmem.Put(a, 0, []int64{}, 0))
			assert.NoError(t, shmem.PutNBI(a, 0, nil, 0))
			assert.NoError(t, shmem.Get([]int64{}, a, 0, 0))
			assert.NoError(t, shmem.GetNBI(nil, a, 0, 0))
			assert.NoError(t, shmem.IPut(a, 0, 1, nil, 1, 0, 0))
			err = shmem.P(a, 0, 1, 0)
			require.ErrorIs(t, err, shmem.ErrOutOfBounds)
			assert.Contains(t, err.Error(), "PE 0: P: index 0, length 1 on PE 0: the zero Array has no elements")
			assert.ErrorIs(t, shmem.Put(a, 0, []int64{1}, 0), shmem.ErrOutOfBounds)
			assert.ErrorIs(t, shmem.Put(a, 1, nil, 0), shmem.ErrOutOfBounds)
			_, err = shmem.G(a, 0, 0)
			assert.ErrorIs(t, err, shmem.ErrOutOfBounds)
			_, err = shmem.AtomicFetchAdd(a, 0, 1, 0)
			assert.ErrorIs(t, err, shmem.ErrOutOfBounds)
			assert.ErrorIs(t, shmem.WaitUntil(a, 0, shmem.CmpEQ, 0), shmem.ErrOutOfBounds)
			assert.NoError(t, shmem.WaitUntilAll(a, 0, 0, nil, shmem.CmpEQ, 1), "an empty set holds")
			assert.ErrorIs(t, shmem.Put(a, 0, nil, 1), shmem.ErrPEOutOfRange, "the PE is still checked")
			require.NoError(t, a.Free(), "Free of the zero Array does nothing")
			require.NoError(t, a.Free())
			assert.Equal(t, calls, shmem.HeapCalls(), "no heap collective")
		})
	}
	_, err := shmem.AllocAligned[int64](0, 3)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument, "a bad align is an error at any size")
	assert.Equal(t, calls, shmem.HeapCalls(), "found without communicating")

	// Realloc(a, 0) frees a (collectively, as Free) and returns the zero Array.
	a := alloc[int64](t, 4)
	z, err := shmem.Realloc(a, 0)
	require.NoError(t, err)
	assert.Equal(t, shmem.Array[int64]{}, z)
	assert.Nil(t, a.Local(), "a was freed")
	err = a.Free()
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "already freed")
	usable(t)
}

func TestAllocAligned(t *testing.T) {
	start(t)
	max := shmem.MaxAllocAlign()
	require.GreaterOrEqual(t, max, 4096)
	var held []shmem.Array[int64]
	for align := 8; align <= max; align *= 2 {
		pad := alloc[byte](t, 8) // moves the next first-fit block off any lucky boundary
		a, err := shmem.AllocAligned[int64](3, align)
		require.NoError(t, err, "align %d", align)
		require.Equal(t, 3, a.Len())
		addr := uintptr(unsafe.Pointer(&a.Local()[0]))
		assert.Zero(t, addr%uintptr(align), "align %d: Local() at %#x", align, addr)
		assert.Equal(t, []int64{0, 0, 0}, a.Local(), "zeroed")
		require.NoError(t, shmem.P(a, 2, 7, 0))
		assert.Equal(t, int64(7), a.Local()[2])
		require.NoError(t, pad.Free())
		held = append(held, a)
	}
	z, err := shmem.AllocAligned[uint32](0, 64)
	require.NoError(t, err)
	assert.Equal(t, shmem.Array[uint32]{}, z, "the zero Array")
	require.NoError(t, z.Free())
	for _, align := range []int{0, -8, 3, 4, 12, 2 * max} {
		_, err := shmem.AllocAligned[int64](1, align)
		require.ErrorIs(t, err, shmem.ErrInvalidArgument, "align %d", align)
		assert.Contains(t, err.Error(), "must be a power of two in [8, ")
		assert.False(t, stderrors.Is(err, shmem.ErrNotSymmetric))
	}
	_, err = shmem.AllocAligned[int64](-1, 64)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	_, err = shmem.AllocAligned[int64](testHeap, 64)
	require.ErrorIs(t, err, shmem.ErrHeapExhausted)
	b, err := shmem.AllocAligned[byte](5, 1) // byte elements: align 1 is valid
	require.NoError(t, err)
	require.NoError(t, b.Free())
	for _, a := range held {
		require.NoError(t, a.Free())
	}
	usable(t)
}

func TestAllocWithHints(t *testing.T) {
	start(t)
	for _, h := range []shmem.AllocHint{0, shmem.AllocAtomicsRemote, shmem.AllocSignalRemote,
		shmem.AllocAtomicsRemote | shmem.AllocSignalRemote, 1 << 40} {
		a, err := shmem.AllocWithHints[uint64](4, h)
		require.NoError(t, err, "hints %#x", uint64(h))
		assert.Equal(t, []uint64{0, 0, 0, 0}, a.Local())
		_, err = shmem.AtomicFetchAdd(a, 1, 5, 0)
		require.NoError(t, err)
		assert.Equal(t, uint64(5), a.Local()[1])
		require.NoError(t, a.Free())
	}
	assert.Equal(t, shmem.AllocHint(1), shmem.AllocAtomicsRemote, "OpenSHMEM's SHMEM_MALLOC_ATOMICS_REMOTE")
	assert.Equal(t, shmem.AllocHint(2), shmem.AllocSignalRemote, "OpenSHMEM's SHMEM_MALLOC_SIGNAL_REMOTE")
	z, err := shmem.AllocWithHints[int8](0, shmem.AllocSignalRemote)
	require.NoError(t, err)
	require.NoError(t, z.Free())
	_, err = shmem.AllocWithHints[int8](-3, 0)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	usable(t)
}

func fill(a shmem.Array[int32]) {
	for i := range a.Local() {
		a.Local()[i] = int32(i + 1)
	}
}

func iota32(n int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(i + 1)
	}
	return v
}

// addrOf is the address of a's first local element (testify compares
// pointers by their targets' values, so tests compare addresses).
func addrOf[T shmem.Elem](a shmem.Array[T]) uintptr { return uintptr(unsafe.Pointer(&a.Local()[0])) }

func TestRealloc(t *testing.T) {
	start(t)
	// The zero Array: Realloc allocates.
	var zero shmem.Array[int32]
	a, err := shmem.Realloc(zero, 10)
	require.NoError(t, err)
	require.Equal(t, 10, a.Len())
	fill(a)
	base := addrOf(a)

	// Grow in place: the heap after a is free.
	b, err := shmem.Realloc(a, 100)
	require.NoError(t, err)
	require.Equal(t, 100, b.Len())
	assert.Equal(t, base, addrOf(b), "grew in place")
	assert.Equal(t, iota32(10), b.Local()[:10], "kept the old elements")
	assert.Equal(t, make([]int32, 90), b.Local()[10:], "zeroed the new ones")
	assert.Nil(t, a.Local(), "the old handle is invalid")
	err = shmem.Put(a, 0, []int32{1}, 0)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "use after Free")

	// Shrink in place; the freed tail is reused.
	fill(b)
	c, err := shmem.Realloc(b, 7)
	require.NoError(t, err)
	assert.Equal(t, base, addrOf(c), "shrank in place")
	assert.Equal(t, iota32(7), c.Local())
	blocker := alloc[int32](t, 16) // lands right after c's 64-byte block
	assert.Equal(t, base+64, addrOf(blocker))

	// Grow with the space after it taken: the array moves.
	d, err := shmem.Realloc(c, 40)
	require.NoError(t, err)
	assert.NotEqual(t, base, addrOf(d), "moved")
	assert.Equal(t, iota32(7), d.Local()[:7])
	assert.Equal(t, make([]int32, 33), d.Local()[7:])

	// Failures leave the array as it was.
	_, err = shmem.Realloc(d, -1)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "n = -1")
	_, err = shmem.Realloc(d, testHeap)
	require.ErrorIs(t, err, shmem.ErrHeapExhausted)
	_, err = shmem.Realloc(d, math.MaxInt)
	require.ErrorIs(t, err, shmem.ErrHeapExhausted)
	assert.Equal(t, iota32(7), d.Local()[:7], "unchanged after failed Reallocs")
	_, err = shmem.Realloc(c, 3)
	require.ErrorIs(t, err, shmem.ErrInvalidArgument, "an array already reallocated")

	// To zero length (the zero Array) and back.
	e, err := shmem.Realloc(d, 0)
	require.NoError(t, err)
	assert.Equal(t, shmem.Array[int32]{}, e)
	require.ErrorIs(t, d.Free(), shmem.ErrInvalidArgument, "Realloc to 0 freed d")
	f, err := shmem.Realloc(e, 3)
	require.NoError(t, err)
	assert.Equal(t, []int32{0, 0, 0}, f.Local())
	require.NoError(t, e.Free(), "the zero Array")
	require.NoError(t, f.Free())
	require.NoError(t, blocker.Free())
	usable(t)
}

func TestReallocDebug(t *testing.T) {
	start(t, shmem.WithDebug(true))
	a := alloc[uint32](t, 32)
	for i := range a.Local() {
		a.Local()[i] = uint32(i)
	}
	b, err := shmem.Realloc(a, 8)
	require.NoError(t, err)
	assert.Equal(t, []uint32{0, 1, 2, 3, 4, 5, 6, 7}, b.Local())
	c, err := shmem.Realloc(b, 64)
	require.NoError(t, err)
	assert.Equal(t, []uint32{0, 1, 2, 3, 4, 5, 6, 7}, c.Local()[:8])
	assert.Equal(t, make([]uint32, 56), c.Local()[8:])
	require.NoError(t, c.Free())
	usable(t)
}

func TestPeerAccess(t *testing.T) {
	assert.Nil(t, shmem.Ptr(shmem.Array[int64]{}, 0), "before Init")
	assert.False(t, shmem.PEAccessible(0), "before Init")
	start(t)
	a := alloc[int64](t, 4)
	p := shmem.Ptr(a, 0)
	require.NotNil(t, p, "this PE's own copy")
	assert.Equal(t, addrOf(a), uintptr(unsafe.Pointer(&p[0])))
	assert.Len(t, p, 4)
	p[1] = 42
	v, err := shmem.G(a, 1, 0)
	require.NoError(t, err)
	assert.Equal(t, int64(42), v)
	assert.Nil(t, shmem.Ptr(a, 1), "pe out of range")
	assert.Nil(t, shmem.Ptr(a, -1))
	assert.Nil(t, shmem.Ptr(shmem.Array[int64]{}, 0), "zero Array")
	assert.True(t, shmem.PEAccessible(0))
	assert.False(t, shmem.PEAccessible(1))
	assert.False(t, shmem.PEAccessible(-1))
	assert.True(t, shmem.AddrAccessible(a, 0))
	assert.False(t, shmem.AddrAccessible(a, 1))
	assert.False(t, shmem.AddrAccessible(shmem.Array[int64]{}, 0))
	z := alloc[int64](t, 0)
	assert.Nil(t, shmem.Ptr(z, 0), "Alloc(0): the zero Array")
	require.NoError(t, z.Free())
	require.NoError(t, a.Free())
	assert.Nil(t, shmem.Ptr(a, 0), "freed")
	assert.False(t, shmem.AddrAccessible(a, 0))
}

func TestQuery(t *testing.T) {
	assert.Equal(t, shmem.ThreadMultiple, shmem.QueryThread())
	assert.Less(t, shmem.ThreadSingle, shmem.ThreadFunneled)
	assert.Less(t, shmem.ThreadFunneled, shmem.ThreadSerialized)
	assert.Less(t, shmem.ThreadSerialized, shmem.ThreadMultiple)
	assert.Equal(t, []int{0, 1, 2, 3}, []int{int(shmem.ThreadSingle), int(shmem.ThreadFunneled),
		int(shmem.ThreadSerialized), int(shmem.ThreadMultiple)}, "OpenSHMEM's SHMEM_THREAD_* values")
	assert.Equal(t, "ThreadMultiple", shmem.ThreadMultiple.String())
	assert.Equal(t, "ThreadLevel(9)", shmem.ThreadLevel(9).String())
	major, minor := shmem.InfoVersion()
	assert.Equal(t, [2]int{1, 6}, [2]int{major, minor})
	assert.Equal(t, "goshmem", shmem.InfoName())

	shmem.PControl(0) // before Init: ignored
	assert.Equal(t, -1, shmem.PControlLevel())
	start(t)
	assert.Equal(t, 1, shmem.PControlLevel(), "the default level")
	shmem.PControl(0)
	assert.Equal(t, 0, shmem.PControlLevel())
	shmem.PControl(2)
	assert.Equal(t, 2, shmem.PControlLevel())
	assert.Equal(t, shmem.ThreadMultiple, shmem.QueryThread())
	usable(t)
}

func TestLock(t *testing.T) {
	start(t)
	l, err := shmem.NewLock()
	require.NoError(t, err)
	ok, err := l.Test()
	require.NoError(t, err)
	require.True(t, ok, "a new lock is free")
	ok, err = l.Test()
	require.NoError(t, err)
	assert.False(t, ok, "held by this PE")
	require.NoError(t, l.Clear())
	err = l.Clear()
	require.ErrorIs(t, err, shmem.ErrInvalidArgument, "Clear of a lock not held")
	assert.Contains(t, err.Error(), "not held by this PE")

	require.NoError(t, l.Set())
	require.ErrorIs(t, l.Free(), shmem.ErrInvalidArgument, "Free while held")
	// Held by the PE, not the goroutine: another goroutine clears it.
	done := make(chan error)
	go func() { done <- l.Clear() }()
	require.NoError(t, <-done)
	ok, err = l.Test()
	require.NoError(t, err)
	require.True(t, ok)
	require.NoError(t, l.Clear())

	// Goroutines of this PE contend: a plain counter under the lock is exact.
	c := alloc[int64](t, 1)
	const g, k = 8, 500
	var wg sync.WaitGroup
	errc := make(chan error, g)
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := 0; j < k; j++ {
				if err := l.Set(); err != nil {
					errc <- err
					return
				}
				v, err := shmem.G(c, 0, 0)
				if err == nil {
					err = shmem.P(c, 0, v+1, 0)
				}
				if err != nil {
					errc <- err
					return
				}
				if err := l.Clear(); err != nil {
					errc <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	assert.Equal(t, int64(g*k), c.Local()[0])

	require.NoError(t, l.Free())
	require.ErrorIs(t, l.Set(), shmem.ErrInvalidArgument, "use after Free")
	_, err = l.Test()
	require.ErrorIs(t, err, shmem.ErrInvalidArgument)
	require.ErrorIs(t, l.Free(), shmem.ErrInvalidArgument, "Free twice")
	var nilLock *shmem.Lock
	require.ErrorIs(t, nilLock.Set(), shmem.ErrInvalidArgument)
	require.ErrorIs(t, nilLock.Free(), shmem.ErrInvalidArgument)
	require.NoError(t, c.Free())
	usable(t)
}

func TestLockTimeout(t *testing.T) {
	start(t, shmem.WithTimeout(50*time.Millisecond))
	l, err := shmem.NewLock()
	require.NoError(t, err)
	require.NoError(t, l.Set())
	done := make(chan error)
	go func() { done <- l.Set() }() // this PE holds it: waits for a Clear
	err = <-done
	require.ErrorIs(t, err, shmem.ErrTimeout)
	assert.Contains(t, err.Error(), "held by this PE")
	require.NoError(t, l.Clear())
	require.NoError(t, l.Set(), "usable after the timeout")
	require.NoError(t, l.Clear())
	require.NoError(t, l.Free())
}

// TestGoroutines: every call family from several goroutines at once (run
// with -race): RMA, atomics, signals, waits, contexts, Quiet and Fence,
// locks, peer access and queries; heap calls and collectives from several
// goroutines are serialized by the PE (one PE: any order is every PE's).
func TestGoroutines(t *testing.T) {
	start(t)
	const g, k = 6, 200
	a := alloc[int64](t, g)
	cnt := alloc[int64](t, 1)
	sig := alloc[uint64](t, g)
	l, err := shmem.NewLock()
	require.NoError(t, err)
	var wg sync.WaitGroup
	errc := make(chan error, 4*g)
	for i := 0; i < g; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, err := shmem.NewCtx()
			if err != nil {
				errc <- err
				return
			}
			buf := make([]int64, 1)
			for j := 0; j < k; j++ {
				steps := []error{
					shmem.PutCtx(ctx, a, i, []int64{int64(j)}, 0),
					ctx.Quiet(),
					shmem.Get(buf, a, i, 0),
					shmem.AtomicAdd(cnt, 0, 1, 0),
					shmem.PutSignal(a, i, []int64{int64(j)}, sig, i, uint64(j+1), shmem.SignalSet, 0),
					shmem.WaitUntil(sig, i, shmem.CmpGE, uint64(j+1)),
					shmem.Fence(),
					shmem.Quiet(),
				}
				if j%50 == 0 {
					x, err := shmem.Alloc[byte](64)
					steps = append(steps, err, shmem.BarrierAll(), x.Free())
					r, err := shmem.Realloc(x, 8) // x was freed: an error, never a crash
					steps = append(steps, ignoreInvalid(err), ignoreInvalid(r.Free()))
				}
				steps = append(steps, l.Set(), l.Clear())
				_ = shmem.Ptr(a, 0)
				_ = shmem.QueryThread()
				shmem.PControl(j)
				for _, err := range steps {
					if err != nil {
						errc <- err
						return
					}
				}
				if buf[0] > int64(j) {
					errc <- stderrors.New("read a value not yet written")
					return
				}
			}
			errc <- ctx.Destroy()
		}()
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		require.NoError(t, err)
	}
	assert.Equal(t, int64(g*k), cnt.Local()[0])
	require.NoError(t, l.Free())
	require.NoError(t, sig.Free())
	require.NoError(t, cnt.Free())
	require.NoError(t, a.Free())
	usable(t)
}

func ignoreInvalid(err error) error {
	if stderrors.Is(err, shmem.ErrInvalidArgument) {
		return nil
	}
	return err
}
