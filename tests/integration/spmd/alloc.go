package main

import (
	"fmt"
	"os"
	"unsafe"

	"github.com/goshmem/goshmem/shmem"
)

func debugOn() bool {
	v := os.Getenv("GOSHMEM_DEBUG")
	return v == "1" || v == "true" || v == "on" || v == "yes"
}

func addr[V shmem.Elem](a shmem.Array[V]) uintptr {
	l := a.Local()
	if len(l) == 0 {
		return 0
	}
	return uintptr(unsafe.Pointer(&l[0]))
}

// allocOne allocates n elements, checks length, alignment and zeroing,
// writes a pattern, and checks a peer sees it. It returns the array.
func allocOne[V shmem.Elem](t *T, n int) (shmem.Array[V], bool) {
	what := fmt.Sprintf("Alloc[%s](%d)", typeName[V](), n)
	a, err := shmem.Alloc[V](n)
	if !t.OK(what, err) {
		return a, false
	}
	Eq(t, what+": Len", a.Len(), n)
	l := a.Local()
	Eq(t, what+": len(Local())", len(l), n)
	Eq(t, what+": address of Local()[0] % 64", addr(a)%64, uintptr(0))
	for i, v := range l {
		if v != 0 {
			t.Errorf("%s: not zeroed: [%d] = %v", what, i, v)
			break
		}
	}
	for i := range l {
		l[i] = val[V](t.me, 0, i)
	}
	t.Must("BarrierAll", shmem.BarrierAll())
	peer := (t.me + 1) % t.n
	for _, i := range []int{0, n / 2, n - 1} {
		got, err := shmem.G(a, i, peer)
		t.OK("G", err)
		Eq(t, fmt.Sprintf("%s: G [%d] on PE %d", what, i, peer), got, val[V](peer, 0, i))
	}
	t.Must("BarrierAll", shmem.BarrierAll()) // peers are done reading before the caller writes
	return a, true
}

func allocSizes(t *T) {
	sizes := []int{1, 2, 3, 7, 8, 63, 64, 65, 1000, 4097, 1 << 16}
	var i8 []shmem.Array[int8]
	var f64 []shmem.Array[float64]
	for _, n := range sizes {
		a, ok := allocOne[int8](t, n)
		if ok {
			i8 = append(i8, a)
		}
		b, ok := allocOne[float64](t, n)
		if ok {
			f64 = append(f64, b)
		}
	}
	// Arrays do not overlap: every one still holds its own pattern.
	t.Must("BarrierAll", shmem.BarrierAll())
	for _, a := range i8 {
		EqSlice(t, fmt.Sprintf("int8 array of %d after all allocations", a.Len()), a.Local(), vals[int8](t.me, 0, 0, a.Len()))
	}
	for _, a := range f64 {
		EqSlice(t, fmt.Sprintf("float64 array of %d after all allocations", a.Len()), a.Local(), vals[float64](t.me, 0, 0, a.Len()))
	}
	// Free in an interleaved order (odd indices first, then even ones).
	for pass := 1; pass >= 0; pass-- {
		for i := range i8 {
			if i%2 == pass {
				t.OK("Free", i8[i].Free())
				t.OK("Free", f64[i].Free())
			}
		}
	}
	for _, a := range i8 {
		t.True("Local() of a freed array is nil", a.Local() == nil)
	}
}

// allocReuse: freed memory comes back (same address without debug
// quarantine) and is zeroed again on reuse.
func allocReuse(t *T) {
	for _, n := range []int{1, 100, 5000} {
		a, ok := allocOne[int32](t, n)
		if !ok {
			return
		}
		first := addr(a)
		t.OK("Free", a.Free())
		b, ok := allocOne[int32](t, n) // checks zeroing after the old pattern
		if !ok {
			return
		}
		if !debugOn() {
			Eq(t, fmt.Sprintf("Alloc after Free of %d int32: same address (first fit)", n), addr(b), first)
		} else if addr(b) == first {
			t.Errorf("GOSHMEM_DEBUG=1: a freed block was reused at once (quarantine off?)")
		}
		t.OK("Free", b.Free())
	}
}

// alloc1MiB: 1 MiB arrays of bytes and of float64, written end to end.
func alloc1MiB(t *T) {
	a, ok := allocOne[uint8](t, 1<<20)
	if ok {
		loc := a.Local()
		for i := range loc {
			loc[i] = byte(i*7 + t.me)
		}
		t.Must("BarrierAll", shmem.BarrierAll())
		got := make([]uint8, 1<<20)
		peer := (t.me + 1) % t.n
		t.OK("Get 1 MiB", shmem.Get(got, a, 0, peer))
		for i := range got {
			if got[i] != byte(i*7+peer) {
				t.Errorf("Get 1 MiB from PE %d: [%d] = %d, want %d", peer, i, got[i], byte(i*7+peer))
				break
			}
		}
		t.Must("BarrierAll", shmem.BarrierAll())
		t.OK("Free 1 MiB", a.Free())
	}
	b, ok := allocOne[float64](t, 1<<17)
	if ok {
		t.OK("Free 1 MiB of float64", b.Free())
	}
}

// allocMany: many small live arrays, freed in reverse; the heap then has
// room for a large one again.
func allocMany(t *T) {
	var as []shmem.Array[uint16]
	for i := 0; i < 150; i++ {
		a, err := shmem.Alloc[uint16](1 + i%37)
		if !t.OK("Alloc", err) {
			break
		}
		a.Local()[0] = uint16(i)
		as = append(as, a)
	}
	for i, a := range as {
		Eq(t, "first element of small array", a.Local()[0], uint16(i))
	}
	for i := len(as) - 1; i >= 0; i-- {
		t.OK("Free", as[i].Free())
	}
	big, err := shmem.Alloc[int64](1 << 18) // 2 MiB
	if t.OK("Alloc 2 MiB after freeing the small arrays", err) {
		t.OK("Free", big.Free())
	}
}

// allocExhaust: the heap (-heap, 32 MiB by default) fills up with
// ErrHeapExhausted on every PE, never a crash, and is usable after Free.
// Registered last: under GOSHMEM_DEBUG=1 freed blocks stay quarantined.
func allocExhaust(t *T) {
	var as []shmem.Array[byte]
	var last error
	for i := 0; i < 1000; i++ {
		a, err := shmem.Alloc[byte](4 << 20)
		if err != nil {
			last = err
			break
		}
		as = append(as, a)
	}
	t.Is("Alloc of 4 MiB blocks until the heap is full", last, shmem.ErrHeapExhausted,
		fmt.Sprintf("PE %d", t.me), "Alloc")
	t.True(fmt.Sprintf("at least one 4 MiB block fitted (got %d)", len(as)), len(as) > 0)
	for _, a := range as {
		t.OK("Free", a.Free())
	}
	if !debugOn() {
		again, err := shmem.Alloc[byte](4 << 20)
		if t.OK("Alloc of 4 MiB after freeing", err) {
			t.OK("Free", again.Free())
		}
	}
	usable(t, "heap exhaustion")
}
