package symmetric

import (
	"encoding/binary"
	"fmt"
	"slices"
	"testing"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	kib = 1 << 10
	mib = 1 << 20
	gib = 1 << 30
)

func newAlloc(t testing.TB, size, minAlign uint64) *Allocator {
	t.Helper()
	a, err := NewAllocator(size, minAlign)
	require.NoError(t, err)
	require.NoError(t, a.Check())
	return a
}

func TestNewAllocator(t *testing.T) {
	tests := []struct {
		name      string
		size      uint64
		minAlign  uint64
		wantErr   error
		wantTotal uint64
		wantAlign uint64
	}{
		{"default align", mib, 0, nil, mib, DefaultMinAlign},
		{"explicit align", mib, 4096, nil, mib, 4096},
		{"align 1", 1000, 1, nil, 1000, 1},
		{"size rounded down", 1000, 64, nil, 960, 64},
		{"size below align", 63, 64, ErrInvalidSize, 0, 0},
		{"size zero", 0, 0, ErrInvalidSize, 0, 0},
		{"align not pow2", mib, 48, ErrInvalidAlign, 0, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a, err := NewAllocator(tc.size, tc.minAlign)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Nil(t, a)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantTotal, a.Total())
			assert.Equal(t, tc.wantAlign, a.MinAlign())
			assert.Equal(t, Stats{Total: tc.wantTotal, Free: tc.wantTotal, LargestFree: tc.wantTotal, FreeBlocks: 1}, a.Stats())
			assert.NoError(t, a.Check())
		})
	}
}

func TestAllocAlignment(t *testing.T) {
	tests := []struct {
		align, wantAlign uint64
	}{
		{0, 64}, {1, 64}, {8, 64}, {64, 64}, {128, 128}, {4096, 4096}, {64 * kib, 64 * kib}, {2 * mib, 2 * mib},
	}
	for _, tc := range tests {
		a := newAlloc(t, 16*mib, 64)
		// Misalign the free space: a 64-byte block first.
		first, err := a.Alloc(1, 0)
		require.NoError(t, err)
		require.Equal(t, uint64(0), first)
		for _, n := range []uint64{1, 100, 4096, 5000} {
			off, err := a.Alloc(n, tc.align)
			require.NoError(t, err, "align %d n %d", tc.align, n)
			assert.Zero(t, off%tc.wantAlign, "align %d n %d: offset %d", tc.align, n, off)
			sz, ok := a.Size(off)
			require.True(t, ok)
			assert.Equal(t, (n+63)&^63, sz, "size is rounded up to minAlign")
			require.NoError(t, a.Check())
		}
	}
}

func TestAllocInvalid(t *testing.T) {
	a := newAlloc(t, mib, 64)
	tests := []struct {
		name    string
		n       uint64
		align   uint64
		wantErr error
	}{
		{"zero size", 0, 64, ErrInvalidSize},
		{"align 3", 8, 3, ErrInvalidAlign},
		{"align 96", 8, 96, ErrInvalidAlign},
		{"align max", 8, ^uint64(0), ErrInvalidAlign},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := a.Alloc(tc.n, tc.align)
			require.ErrorIs(t, err, tc.wantErr)
			assert.Contains(t, err.Error(), "symmetric: ")
		})
	}
	assert.Equal(t, 0, a.Stats().Blocks)
	assert.NoError(t, a.Check())
}

func TestAllocFirstFitAndCarving(t *testing.T) {
	a := newAlloc(t, 4096, 64)
	var offs []uint64
	for range 4 {
		off, err := a.Alloc(100, 0) // rounds to 128
		require.NoError(t, err)
		offs = append(offs, off)
	}
	assert.Equal(t, []uint64{0, 128, 256, 384}, offs)
	// An aligned request leaves the gap before it free.
	off, err := a.Alloc(64, 1024)
	require.NoError(t, err)
	assert.Equal(t, uint64(1024), off)
	assert.Equal(t, Stats{Total: 4096, Used: 4*128 + 64, Free: 4096 - 4*128 - 64,
		LargestFree: 4096 - 1088, Blocks: 5, FreeBlocks: 2}, a.Stats())
	// The gap [512, 1024) is then used first.
	off, err = a.Alloc(64, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(512), off)
	require.NoError(t, a.Check())
}

func TestFreeCoalesce(t *testing.T) {
	tests := []struct {
		name  string
		order []int // indexes of the three middle blocks to free, in order
	}{
		{"middle then left then right", []int{1, 0, 2}},
		{"middle then right then left", []int{1, 2, 0}},
		{"left then right then middle", []int{0, 2, 1}},
		{"right then left then middle", []int{2, 0, 1}},
		{"left to right", []int{0, 1, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := newAlloc(t, 64*kib, 64)
			var offs []uint64
			for range 5 { // guard, three, guard
				off, err := a.Alloc(kib, 0)
				require.NoError(t, err)
				offs = append(offs, off)
			}
			mid := offs[1:4]
			for _, i := range tc.order {
				sz, err := a.Free(mid[i])
				require.NoError(t, err)
				assert.Equal(t, uint64(kib), sz)
				require.NoError(t, a.Check())
			}
			st := a.Stats()
			assert.Equal(t, 2, st.FreeBlocks, "the freed middle is one block, plus the tail")
			assert.Equal(t, 2, st.Blocks)
			// The coalesced hole takes exactly a 3 KiB request, at its start.
			off, err := a.Alloc(3*kib, 0)
			require.NoError(t, err)
			assert.Equal(t, mid[0], off)
			assert.Equal(t, 1, a.Stats().FreeBlocks)
			// Free everything: one block again.
			for _, o := range []uint64{offs[0], off, offs[4]} {
				_, err := a.Free(o)
				require.NoError(t, err)
			}
			assert.Equal(t, Stats{Total: 64 * kib, Free: 64 * kib, LargestFree: 64 * kib, FreeBlocks: 1}, a.Stats())
			require.NoError(t, a.Check())
		})
	}
}

func TestHeapExhausted(t *testing.T) {
	a := newAlloc(t, 64*kib, 64)
	var offs []uint64
	for range 16 {
		off, err := a.Alloc(4*kib, 0)
		require.NoError(t, err)
		offs = append(offs, off)
	}
	_, err := a.Alloc(1, 0)
	require.ErrorIs(t, err, ErrHeapExhausted)

	// Fragment: free every other block; 32 KiB free, largest 4 KiB.
	for i := 0; i < len(offs); i += 2 {
		_, err := a.Free(offs[i])
		require.NoError(t, err)
	}
	_, err = a.Alloc(5000, 0)
	require.ErrorIs(t, err, ErrHeapExhausted)
	assert.True(t, errors.Is(err, ErrHeapExhausted), "the errors package's Is works too")
	msg := err.Error()
	for _, want := range []string{"5000 bytes", "largest free block is 4096", "32768 of 65536 bytes free", "symmetric: heap exhausted"} {
		assert.Contains(t, msg, want)
	}
	assert.Contains(t, errors.FlattenHints(err), "raise GOSHMEM_SYMMETRIC_SIZE")

	// A request larger than the heap (no overflow in rounding).
	_, err = a.Alloc(^uint64(0), 0)
	require.ErrorIs(t, err, ErrHeapExhausted)
	// A huge alignment fits only at offset 0 (free again), then nowhere.
	off, err := a.Alloc(64, 1<<63)
	require.NoError(t, err)
	assert.Zero(t, off)
	_, err = a.Alloc(64, 1<<63)
	require.ErrorIs(t, err, ErrHeapExhausted)
	require.NoError(t, a.Check())
}

func TestFreeNotAllocated(t *testing.T) {
	a := newAlloc(t, 64*kib, 64)
	x, err := a.Alloc(kib, 0)
	require.NoError(t, err)
	y, err := a.Alloc(kib, 0)
	require.NoError(t, err)
	_, err = a.Free(x)
	require.NoError(t, err)

	tests := []struct {
		name string
		off  uint64
		want string
	}{
		{"double free", x, "double free"},
		{"inside live block", y + 64, "inside the live block [1024, 2048)"},
		{"in free space", 10 * kib, "lies in free space"},
		{"beyond heap", 1 << 40, "beyond the heap"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sz, err := a.Free(tc.off)
			require.ErrorIs(t, err, ErrNotAllocated)
			assert.Zero(t, sz)
			assert.Contains(t, err.Error(), tc.want)
			assert.Contains(t, err.Error(), "symmetric: offset not allocated")
			_, ok := a.Size(tc.off)
			assert.False(t, ok)
		})
	}
	sz, ok := a.Size(y)
	assert.True(t, ok)
	assert.Equal(t, uint64(kib), sz)
	require.NoError(t, a.Check())
}

func TestQuarantine(t *testing.T) {
	a := newAlloc(t, 8*kib, 64)
	a.SetQuarantine(true)
	x, err := a.Alloc(kib, 0)
	require.NoError(t, err)
	_, err = a.Free(x)
	require.NoError(t, err)
	require.NoError(t, a.Check())

	// The freed block is not handed out again.
	y, err := a.Alloc(kib, 0)
	require.NoError(t, err)
	assert.NotEqual(t, x, y)
	assert.Equal(t, []Block{{Off: x, Size: kib}}, a.Quarantined())
	assert.Equal(t, uint64(kib), a.Stats().Quarantined)

	// A second free is diagnosed as such; an access inside it as use after free.
	_, err = a.Free(x)
	require.ErrorIs(t, err, ErrNotAllocated)
	assert.Contains(t, err.Error(), "quarantine")
	_, err = a.Free(x + 64)
	require.ErrorIs(t, err, ErrNotAllocated)
	assert.Contains(t, err.Error(), "use after free")

	// Exhaustion mentions the quarantine in its details.
	_, err = a.Alloc(7*kib, 0)
	require.ErrorIs(t, err, ErrHeapExhausted)
	assert.Contains(t, errors.FlattenDetails(err), "quarantine")

	a.SetQuarantine(false)
	assert.Equal(t, uint64(kib), a.Release())
	assert.Empty(t, a.Quarantined())
	require.NoError(t, a.Check())
	z, err := a.Alloc(kib, 0)
	require.NoError(t, err)
	assert.Equal(t, x, z, "released block is reused")
	require.NoError(t, a.Check())
}

func TestDeterminism(t *testing.T) {
	// Two allocators (two "PEs") fed the same operations return the same
	// offsets, including after frees, fragmentation and failures.
	run := func() []uint64 {
		a := newAlloc(t, 4*mib, 64)
		var out, live []uint64
		x := uint64(12345)
		for i := range 2000 {
			x = x*6364136223846793005 + 1442695040888963407 // fixed LCG: same on both
			if len(live) > 0 && x>>60 < 6 {
				j := int(x>>32) % len(live)
				sz, err := a.Free(live[j])
				require.NoError(t, err)
				out = append(out, sz)
				live = slices.Delete(live, j, j+1)
				continue
			}
			n := 1 + (x>>20)%(64*kib)
			align := uint64(1) << ((x >> 8) % 14)
			off, err := a.Alloc(n, align)
			if errors.Is(err, ErrHeapExhausted) {
				out = append(out, ^uint64(0))
				continue
			}
			require.NoError(t, err, "op %d", i)
			out = append(out, off)
			live = append(live, off)
		}
		require.NoError(t, a.Check())
		return out
	}
	assert.Equal(t, run(), run())
}

func TestConcurrentUse(t *testing.T) {
	a := newAlloc(t, 64*mib, 64)
	done := make(chan struct{})
	for g := range 4 {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := range 500 {
				off, err := a.Alloc(uint64(64*(1+(g+i)%32)), 0)
				if !assert.NoError(t, err) {
					return
				}
				_, err = a.Free(off)
				assert.NoError(t, err)
			}
		}()
	}
	for range 4 {
		<-done
	}
	assert.Equal(t, 1, a.Stats().FreeBlocks)
	assert.NoError(t, a.Check())
}

// FuzzAllocator drives a random sequence of operations, decoded from the
// fuzz input, against two allocators in lockstep and checks the invariants
// after every operation.
func FuzzAllocator(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 8, 0, 0, 0, 16, 1, 0, 0, 0})
	f.Add([]byte{3, 0, 1, 0, 1, 2, 0, 0, 1, 5, 1, 0, 0, 2, 0, 0, 0, 4, 2, 1, 2, 0})
	f.Add([]byte("alloc free alloc free quarantine release \x00\x01\x02\x03\x04\x05\x06\x07"))
	f.Add(func() []byte {
		b := make([]byte, 128)
		for i := range b {
			b[i] = byte(i*7 + i>>3)
		}
		return b
	}())
	f.Fuzz(fuzzAllocator)
}

// fuzzAllocator is FuzzAllocator's body. It checks with plain ifs, not
// testify: the fuzzer (and its minimizer) runs it many thousands of times.
func fuzzAllocator(t *testing.T, data []byte) {
	if len(data) == 0 {
		data = []byte{0}
	}
	// Bound an input to ~40 operations: the fuzzer's minimizer tries
	// O(len²) candidates, so long inputs stall fuzzing for a minute each.
	if len(data) > 128 {
		data = data[:128]
	}
	minAlign := uint64(1) << (data[0] % 8) // 1..128
	size := uint64(16*kib) + uint64(data[0])*17
	data = data[1:]
	a, err := NewAllocator(size, minAlign)
	require.NoError(t, err)
	b, err := NewAllocator(size, minAlign)
	require.NoError(t, err)
	live := map[uint64]uint64{} // offset -> requested n
	roundUp := func(n uint64) uint64 { return (n + minAlign - 1) &^ (minAlign - 1) }
	next := func(k int) uint64 { // k bytes, little endian, zero-padded
		var buf [8]byte
		m := copy(buf[:k], data)
		data = data[m:]
		return binary.LittleEndian.Uint64(buf[:])
	}
	wantIs := func(err, target error, what string) {
		if !errors.Is(err, target) {
			t.Fatalf("%s: got %v, want %v", what, err, target)
		}
	}

	for step := 0; len(data) > 0; step++ {
		switch op := next(1); op % 8 {
		case 0, 1, 2: // alloc
			n := next(2) % (2 * kib)
			var align uint64
			if c := next(1); c%16 == 15 {
				align = c | 1<<8 // never a power of two
			} else {
				align = 1 << (c % 16)
			}
			offA, errA := a.Alloc(n, align)
			offB, errB := b.Alloc(n, align)
			if offA != offB || (errA == nil) != (errB == nil) {
				t.Fatalf("step %d: not deterministic: Alloc(%d, %d) = %d, %v and %d, %v", step, n, align, offA, errA, offB, errB)
			}
			if errA != nil {
				switch {
				case n == 0:
					wantIs(errA, ErrInvalidSize, "Alloc(0)")
				case !isPow2(align):
					wantIs(errA, ErrInvalidAlign, "Alloc with bad align")
				default:
					wantIs(errA, ErrHeapExhausted, "Alloc")
					// First fit never misses a block that fits.
					if lf := a.Stats().LargestFree; align <= minAlign && lf >= roundUp(n) {
						t.Fatalf("step %d: Alloc(%d) exhausted with a free block of %d", step, n, lf)
					}
				}
				break
			}
			if offA%max(align, minAlign) != 0 {
				t.Fatalf("step %d: Alloc(%d, %d) = %d: misaligned", step, n, align, offA)
			}
			if _, dup := live[offA]; dup {
				t.Fatalf("step %d: offset %d handed out twice", step, offA)
			}
			live[offA] = n
		case 3, 4: // free a live block
			if len(live) == 0 {
				break
			}
			keys := sortedKeys(live)
			off := keys[next(2)%uint64(len(keys))]
			szA, errA := a.Free(off)
			szB, errB := b.Free(off)
			if errA != nil || errB != nil || szA != szB || szA != roundUp(live[off]) {
				t.Fatalf("step %d: Free(%d) = %d, %v and %d, %v; want %d", step, off, szA, errA, szB, errB, roundUp(live[off]))
			}
			delete(live, off)
		case 5: // free an arbitrary offset
			off := next(3) % (size + 4*kib)
			_, errA := a.Free(off)
			_, errB := b.Free(off)
			if _, ok := live[off]; ok {
				if errA != nil || errB != nil {
					t.Fatalf("step %d: Free(%d) of a live block: %v, %v", step, off, errA, errB)
				}
				delete(live, off)
			} else {
				wantIs(errA, ErrNotAllocated, "Free of a non-block")
				wantIs(errB, ErrNotAllocated, "Free of a non-block")
			}
		case 6: // toggle quarantine
			on := next(1)%2 == 1
			a.SetQuarantine(on)
			b.SetQuarantine(on)
		case 7:
			if ra, rb := a.Release(), b.Release(); ra != rb {
				t.Fatalf("step %d: Release = %d and %d", step, ra, rb)
			}
		}

		if err := a.Check(); err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		st := a.Stats()
		if sb := b.Stats(); st != sb {
			t.Fatalf("step %d: stats differ: %+v and %+v", step, st, sb)
		}
		// Live blocks neither overlap nor leave the heap.
		var end, used uint64
		for _, off := range sortedKeys(live) {
			sz, ok := a.Size(off)
			if !ok || off < end {
				t.Fatalf("step %d: live block at %d: size %d, %v; previous ends at %d", step, off, sz, ok, end)
			}
			end = off + sz
			used += sz
		}
		if end > st.Total || used != st.Used || len(live) != st.Blocks {
			t.Fatalf("step %d: live blocks end at %d, use %d in %d blocks; stats %+v", step, end, used, len(live), st)
		}
	}
}

func sortedKeys(m map[uint64]uint64) []uint64 {
	ks := make([]uint64, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// BenchmarkAllocFree measures one Alloc + Free of 1 MiB in a 1 GiB heap
// with a fragmented free list of the given length ahead of the fit.
func BenchmarkAllocFree(b *testing.B) {
	for _, holes := range []int{0, 16, 256} {
		b.Run(fmt.Sprintf("holes=%d", holes), func(b *testing.B) {
			a := newAlloc(b, gib, 64)
			// Fragment the front: holes free 64 KiB blocks too small for 1 MiB.
			var offs []uint64
			for range 2 * holes {
				off, err := a.Alloc(64*kib, 0)
				require.NoError(b, err)
				offs = append(offs, off)
			}
			for i := 0; i < len(offs); i += 2 {
				_, err := a.Free(offs[i])
				require.NoError(b, err)
			}
			b.ReportAllocs()
			for b.Loop() {
				off, err := a.Alloc(mib, 0)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := a.Free(off); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestSentinelsSurviveWrapping(t *testing.T) {
	a := newAlloc(t, 4*kib, 64)
	_, errExh := a.Alloc(8*kib, 0)
	_, errFree := a.Free(64)
	_, errSize := a.Alloc(0, 0)
	_, errAlign := a.Alloc(1, 3)
	tests := []struct {
		err, want error
		msg       string
	}{
		{errExh, ErrHeapExhausted, "symmetric: heap exhausted"},
		{errFree, ErrNotAllocated, "symmetric: offset not allocated"},
		{errSize, ErrInvalidSize, "symmetric: invalid size"},
		{errAlign, ErrInvalidAlign, "symmetric: invalid alignment"},
	}
	for _, tc := range tests {
		wrapped := errors.Wrapf(tc.err, "PE %d: shmem.Alloc", 3)
		assert.ErrorIs(t, wrapped, tc.want, "stdlib errors.Is")
		assert.True(t, errors.Is(wrapped, tc.want), "errors package Is")
		assert.Contains(t, wrapped.Error(), tc.msg)
		assert.Contains(t, wrapped.Error(), "PE 3")
		for _, other := range tests {
			if other.want != tc.want {
				assert.NotErrorIs(t, tc.err, other.want)
			}
		}
	}
}
