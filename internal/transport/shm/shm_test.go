package shm_test

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/transport"
	"github.com/goshmem/goshmem/internal/transport/shm"
)

const regionSize = 4096

// mapped returns a transport over two "PEs" whose regions are the two
// halves of one anonymous shared mapping (symmetric memory never lives on
// the Go heap), plus the two regions as byte slices.
func mapped(t *testing.T) (*shm.Transport, [2][]byte) {
	t.Helper()
	mem, err := unix.Mmap(-1, 0, 2*regionSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, unix.Munmap(mem)) })
	regs := [2][]byte{mem[:regionSize:regionSize], mem[regionSize:]}
	tr := shm.New([]unsafe.Pointer{unsafe.Pointer(&regs[0][0]), unsafe.Pointer(&regs[1][0])})
	return tr, regs
}

var q = quiet.NewQueue("test", nil)

func le(b []byte, width int) uint64 {
	var buf [8]byte
	copy(buf[:], b[:width])
	return binary.LittleEndian.Uint64(buf[:])
}

func putLE(b []byte, width int, v uint64) {
	var buf [8]byte
	binary.LittleEndian.PutUint64(buf[:], v)
	copy(b[:width], buf[:width])
}

// model is the expected new value of op at width (values masked).
func model(op transport.AMO, width int, old, v, cmp uint64) uint64 {
	mask := ^uint64(0)
	if width < 8 {
		mask = 1<<(8*width) - 1
	}
	v &= mask
	switch op {
	case transport.AMOFetch:
		return old
	case transport.AMOSet, transport.AMOSwap:
		return v
	case transport.AMOCompareSwap:
		if old == cmp&mask {
			return v
		}
		return old
	case transport.AMOAdd:
		return (old + v) & mask
	case transport.AMOAnd:
		return old & v
	case transport.AMOOr:
		return old | v
	case transport.AMOXor:
		return old ^ v
	}
	panic("unknown op")
}

func TestAtomicAllWidths(t *testing.T) {
	type operands struct {
		name        string
		old, v, cmp uint64 // old and v as bit patterns, masked to the width by the test
	}
	cases := []operands{
		{"small", 5, 3, 5},
		{"carry out of the field", ^uint64(0), 1, 0},
		{"add minus one", 0, ^uint64(0), 1},
		{"high bits", 0x8081828384858687, 0x7f7e7d7c7b7a7978, 0x8081828384858687},
		{"cmp mismatch", 0x1234567890abcdef, 0x42, 0x1234567890abcdee},
	}
	ops := []transport.AMO{
		transport.AMOFetch, transport.AMOSet, transport.AMOSwap, transport.AMOCompareSwap,
		transport.AMOAdd, transport.AMOAnd, transport.AMOOr, transport.AMOXor,
	}
	offsetsFor := map[int][]uint64{
		1: {64, 65, 66, 67},
		2: {64, 66},
		4: {64, 68},
		8: {64, 72},
	}
	tr, regs := mapped(t)
	for _, width := range []int{1, 2, 4, 8} {
		mask := ^uint64(0)
		if width < 8 {
			mask = 1<<(8*width) - 1
		}
		for _, off := range offsetsFor[width] {
			for _, op := range ops {
				for _, c := range cases {
					name := fmt.Sprintf("w%d/off%d/%v/%s", width, off, op, c.name)
					t.Run(name, func(t *testing.T) {
						r := regs[1]
						// Surround the field with a recognisable pattern.
						for i := 56; i < 88; i++ {
							r[i] = 0xa5
						}
						old := c.old & mask
						cmp := c.cmp
						if op == transport.AMOCompareSwap && c.name == "small" {
							cmp = old // the success case
						}
						putLE(r[off:], width, old)
						got, err := tr.Atomic(q, op, width, 1, off, c.v, cmp)
						require.NoError(t, err)
						if op != transport.AMOSet { // Set's return value is unspecified (non-fetching)
							assert.Equal(t, old, got, "old value")
						}
						assert.Equal(t, model(op, width, old, c.v, cmp), le(r[off:], width), "new value")
						for i := 56; i < 88; i++ {
							if uint64(i) < off || uint64(i) >= off+uint64(width) {
								require.Equal(t, byte(0xa5), r[i], "neighbour byte %d disturbed", i)
							}
						}
						for i := 56; i < 88; i++ {
							require.Equal(t, byte(0), regs[0][i], "PE 0's region touched")
						}
					})
				}
			}
		}
	}
}

// TestNarrowAtomicsConcurrentNeighbours: goroutines update neighbouring
// bytes and halfwords of one 32-bit word at once; the compare-and-swap loop
// on the containing word must lose no update and never touch a neighbour.
func TestNarrowAtomicsConcurrentNeighbours(t *testing.T) {
	tr, regs := mapped(t)
	const iters = 2000
	type job struct {
		width int
		off   uint64
		op    transport.AMO
		v     uint64
	}
	jobs := []job{
		// bytes 128..131: one word, four writers
		{1, 128, transport.AMOAdd, 1},
		{1, 129, transport.AMOAdd, 3},
		{1, 130, transport.AMOXor, 0xff},
		{1, 131, transport.AMOAdd, 0xff}, // -1 per iteration: borrows must stay inside the byte
		// halfwords 132..135: one word, two writers
		{2, 132, transport.AMOAdd, 7},
		{2, 134, transport.AMOAdd, 0xffff},
		// 136..139: a byte, a halfword, a byte
		{1, 136, transport.AMOAdd, 1},
		{2, 138, transport.AMOAdd, 1},
		{1, 137, transport.AMOOr, 0x80},
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		for range 2 { // two goroutines per field: contention on the field too
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range iters {
					_, err := tr.Atomic(q, j.op, j.width, 1, j.off, j.v, 0)
					if err != nil {
						panic(err)
					}
				}
			}()
		}
	}
	wg.Wait()
	r := regs[1]
	const n = 2 * iters
	assert.Equal(t, byte(n*1%256), r[128])
	assert.Equal(t, byte(n*3%256), r[129])
	assert.Equal(t, byte(0), r[130], "an even number of xors with 0xff")
	assert.Equal(t, byte((256-n%256)%256), r[131])
	assert.Equal(t, uint16(n*7), binary.LittleEndian.Uint16(r[132:]))
	assert.Equal(t, uint16(65536-n), binary.LittleEndian.Uint16(r[134:]))
	assert.Equal(t, byte(n%256), r[136])
	assert.Equal(t, byte(0x80), r[137])
	assert.Equal(t, uint16(n), binary.LittleEndian.Uint16(r[138:]))
	assert.Equal(t, byte(0), r[140], "the next word is untouched")
	assert.Equal(t, byte(0), r[127], "the previous word is untouched")
}

// TestWideAtomicsConcurrent: 4- and 8-byte fetch-adds from several goroutines
// return distinct old values and sum exactly.
func TestWideAtomicsConcurrent(t *testing.T) {
	tr, regs := mapped(t)
	const g, iters = 4, 1000
	for _, width := range []int{4, 8} {
		t.Run(fmt.Sprint(width), func(t *testing.T) {
			off := uint64(256 + 8*width)
			olds := make([][]uint64, g)
			var wg sync.WaitGroup
			for i := range g {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for range iters {
						o, _ := tr.Atomic(q, transport.AMOAdd, width, 1, off, 1, 0)
						olds[i] = append(olds[i], o)
					}
				}()
			}
			wg.Wait()
			seen := make(map[uint64]bool, g*iters)
			for _, os := range olds {
				for _, o := range os {
					require.False(t, seen[o], "old value %d returned twice", o)
					seen[o] = true
				}
			}
			assert.Len(t, seen, g*iters)
			assert.Equal(t, uint64(g*iters), le(regs[1][off:], width))
		})
	}
}

func TestPutGet(t *testing.T) {
	tr, regs := mapped(t)
	tests := []struct {
		name string
		pe   int
		off  uint64
		n    int
		nbi  bool
	}{
		{"to self", 0, 100, 17, false},
		{"to peer", 1, 0, 64, false},
		{"to peer NBI", 1, 1000, 3000, true},
		{"empty", 1, 10, 0, false},
		{"last byte", 1, regionSize - 1, 1, true},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := make([]byte, tc.n)
			for j := range src {
				src[j] = byte(i*31 + j)
			}
			put, get := tr.Put, tr.Get
			if tc.nbi {
				put, get = tr.PutNBI, tr.GetNBI
			}
			require.NoError(t, put(q, tc.pe, tc.off, src))
			assert.Equal(t, src, regs[tc.pe][tc.off:tc.off+uint64(tc.n)], "the put landed in PE %d's region", tc.pe)
			dst := make([]byte, tc.n)
			require.NoError(t, get(q, dst, tc.pe, tc.off))
			assert.Equal(t, src, dst)
			require.NoError(t, tr.Fence(q))
			tr.Quiet()
			assert.Equal(t, uint64(0), q.Pending(), "shm operations complete on return")
		})
	}
}

func TestPtr(t *testing.T) {
	tr, regs := mapped(t)
	assert.Equal(t, "shm", tr.Name())
	assert.Equal(t, unsafe.Pointer(&regs[0][0]), tr.Ptr(0, 0))
	assert.Equal(t, unsafe.Pointer(&regs[1][123]), tr.Ptr(1, 123))
	for _, pe := range []int{-1, 2, 100} {
		assert.Nil(t, tr.Ptr(pe, 0), "PE %d is not mapped", pe)
	}
	partial := shm.New([]unsafe.Pointer{unsafe.Pointer(&regs[0][0]), nil})
	assert.NotNil(t, partial.Ptr(0, 8))
	assert.Nil(t, partial.Ptr(1, 8), "a PE on another node has no base")
	assert.NoError(t, tr.Close())
}

func TestAMOString(t *testing.T) {
	want := map[transport.AMO]string{
		transport.AMOFetch: "fetch", transport.AMOSet: "set", transport.AMOSwap: "swap",
		transport.AMOCompareSwap: "compare_swap", transport.AMOAdd: "fetch_add",
		transport.AMOAnd: "fetch_and", transport.AMOOr: "fetch_or", transport.AMOXor: "fetch_xor",
	}
	for op, s := range want {
		assert.Equal(t, s, op.String())
	}
}

var _ transport.Transport = (*shm.Transport)(nil)
