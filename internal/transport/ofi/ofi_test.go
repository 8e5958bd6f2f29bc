package ofi

import (
	"encoding/binary"
	"fmt"
	"sync"
	"testing"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/bootstrap/local"
	"github.com/goshmem/goshmem/internal/cgo/fabric"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/internal/transport"
)

const regionLen = 4 << 20

// job opens n transports in one process (one per PE, a goroutine each, as
// the bootstrap's Allgather needs) on provider prov.
func job(t *testing.T, n int, prov string) ([]*Transport, [][]byte) {
	t.Helper()
	trs, regions, errsOut := jobCfg(t, n, prov, regionLen, nil)
	for pe, err := range errsOut {
		require.NoError(t, err, "PE %d", pe)
	}
	return trs, regions
}

// jobCfg is job with a region size and a hook that edits each PE's Config;
// it returns every PE's New error instead of failing on them.
func jobCfg(t *testing.T, n int, prov string, rlen int, edit func(pe int, c *Config)) ([]*Transport, [][]byte, []error) {
	t.Helper()
	boots, err := local.NewJob(n)
	require.NoError(t, err)
	trs := make([]*Transport, n)
	regions := make([][]byte, n)
	errsOut := make([]error, n)
	for pe := range regions {
		regions[pe], err = unix.Mmap(-1, 0, rlen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
		require.NoError(t, err)
	}
	var wg sync.WaitGroup
	for pe := 0; pe < n; pe++ {
		wg.Add(1)
		go func(pe int) {
			defer wg.Done()
			c := Config{
				Provider: prov, Me: pe, NPEs: n, OneNode: true,
				Region: unsafe.Pointer(&regions[pe][0]), RegionLen: uint64(rlen),
				Local: make([]unsafe.Pointer, n), Allgather: boots[pe].Allgather,
			}
			if edit != nil {
				edit(pe, &c)
			}
			trs[pe], errsOut[pe] = New(c)
		}(pe)
	}
	wg.Wait()
	t.Cleanup(func() {
		for pe := range trs {
			if trs[pe] != nil {
				assert.NoError(t, trs[pe].Close())
			}
			_ = unix.Munmap(regions[pe])
		}
	})
	return trs, regions, errsOut
}

func quietQ(t *testing.T, tr *Transport, q *quiet.Queue) {
	t.Helper()
	s := quiet.NewScope("test")
	s.Add(q)
	require.NoError(t, s.Quiet(tr.testPolicy(), nil))
}

func TestUnknownProvider(t *testing.T) {
	_, err := fabric.Open("no-such-provider")
	require.Error(t, err)
	assert.True(t, errors.Is(err, fabric.ErrNoProvider))
	assert.Contains(t, errors.FlattenHints(err), "tcp;ofi_rxm", "the hint lists what fi_getinfo offers")

	boots, err := local.NewJob(1)
	require.NoError(t, err)
	_, err = New(Config{Provider: "no-such-provider", NPEs: 1, Allgather: boots[0].Allgather})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrNotSupported))
	assert.Contains(t, err.Error(), "PE 0")
}

// TestIface: GOSHMEM_OFI_IFACE binds the endpoint to that interface's
// address, and a bad one fails every PE's Init naming the PE, the
// variable and the interfaces there are.
func TestIface(t *testing.T) {
	trs, regions, errsOut := jobCfg(t, 2, "tcp;ofi_rxm", 1<<16, func(_ int, c *Config) { c.Iface = "lo" })
	for pe, err := range errsOut {
		require.NoError(t, err, "PE %d", pe)
	}
	for pe, tr := range trs {
		assert.Contains(t, tr.Name(), "on lo, 127.0.0.1", "PE %d", pe)
	}
	q := quiet.NewQueue("iface", trs[0].Progress)
	require.NoError(t, trs[0].Put(q, 1, 8, []byte{7}))
	quietQ(t, trs[0], q)
	assert.Equal(t, byte(7), regions[1][8], "the peers reach each other over lo")

	tests := []struct {
		name string
		edit func(pe int, c *Config)
		is   error
		want []string
	}{
		{"no such interface", func(_ int, c *Config) { c.Iface = "goshmem-no-if" }, errs.ErrInvalidArgument,
			[]string{"GOSHMEM_OFI_IFACE=goshmem-no-if", `interface "goshmem-no-if" does not exist`, "lo (127.0.0.1"}},
		{"loopback with a peer on another node", func(_ int, c *Config) { c.Iface, c.OneNode = "lo", false }, errs.ErrInvalidArgument,
			[]string{"GOSHMEM_OFI_IFACE=lo", "loopback, and some peer is on another node"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, errsOut := jobCfg(t, 2, "tcp;ofi_rxm", 1<<16, tc.edit)
			for pe, err := range errsOut {
				require.Error(t, err, "PE %d", pe)
				assert.True(t, errors.Is(err, tc.is), "PE %d: %v", pe, err)
				assert.Contains(t, err.Error(), fmt.Sprintf("goshmem: PE %d: Init: ofi: ", pe))
				for _, s := range tc.want {
					assert.Contains(t, err.Error(), s, "PE %d", pe)
				}
				assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_OFI_IFACE")
			}
		})
	}
}

func TestConfigRemote(t *testing.T) {
	mapped := unsafe.Pointer(new(byte))
	tests := []struct {
		name string
		c    Config
		want bool
	}{
		{"every peer mapped", Config{Me: 0, NPEs: 3, Local: []unsafe.Pointer{mapped, mapped, mapped}}, false},
		{"one peer not mapped", Config{Me: 0, NPEs: 3, Local: []unsafe.Pointer{mapped, nil, mapped}}, true},
		{"only this PE unmapped", Config{Me: 1, NPEs: 2, Local: []unsafe.Pointer{mapped, nil}}, false},
		{"the unmapped peer is not reached", Config{Me: 0, NPEs: 3, Local: []unsafe.Pointer{mapped, nil, mapped},
			Reach: []bool{false, false, true}}, false},
		{"no Local", Config{Me: 0, NPEs: 2}, true},
		{"OneNode", Config{Me: 0, NPEs: 2, OneNode: true}, false},
		{"alone", Config{Me: 0, NPEs: 1}, false},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, tc.c.remote(), tc.name)
	}
}

func TestRMA(t *testing.T) {
	trs, regions := job(t, 2, "tcp;ofi_rxm")
	a, b := trs[0], trs[1]
	q := quiet.NewQueue("ctx 0 -> ofi", a.Progress)

	// Sizes around the inject size, the staging chunk and the segment.
	for _, n := range []int{1, 8, 64, 65, 4096, chunkSize - 1, chunkSize, chunkSize + 3, 3*chunkSize + 17} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := make([]byte, n)
			for i := range src {
				src[i] = byte(i*7 + n)
			}
			off := uint64(128)
			require.NoError(t, a.Put(q, 1, off, src))
			quietQ(t, a, q)
			assert.Equal(t, src, regions[1][off:off+uint64(n)], "put landed at the target after quiet")

			got := make([]byte, n)
			require.NoError(t, a.Get(q, got, 1, off))
			assert.Equal(t, src, got, "blocking get")
			got2 := make([]byte, n)
			require.NoError(t, a.GetNBI(q, got2, 1, off))
			quietQ(t, a, q)
			assert.Equal(t, src, got2, "get_nbi after quiet")
		})
	}

	// PutNBI from inside the registered region is zero-copy.
	copy(regions[0][1<<20:], []byte("zero-copy source bytes, more than the inject size of sixty-four bytes"))
	src := regions[0][1<<20 : 1<<20+70]
	require.NoError(t, a.PutNBI(q, 1, 4096, src))
	quietQ(t, a, q)
	assert.Equal(t, src, regions[1][4096:4096+70])
	_ = b
}

func TestAtomics(t *testing.T) {
	trs, regions := job(t, 2, "tcp;ofi_rxm")
	a := trs[0]
	q := quiet.NewQueue("amo", a.Progress)
	for _, w := range []int{1, 2, 4, 8} {
		t.Run(fmt.Sprintf("width%d", w), func(t *testing.T) {
			off := uint64(256 + 8*w + 1*(w&1)) // odd offset for width 1
			mask := uint64(1)<<(8*uint(w)) - 1
			if w == 8 {
				mask = ^uint64(0)
			}
			rd := func() uint64 {
				var buf [8]byte
				copy(buf[:], regions[1][off:off+uint64(w)])
				return binary.LittleEndian.Uint64(buf[:])
			}
			do := func(op transport.AMO, v, cmp uint64) uint64 {
				old, err := a.Atomic(q, op, w, 1, off, v, cmp)
				require.NoError(t, err, op.String())
				return old
			}
			_, err := a.Atomic(q, transport.AMOSet, w, 1, off, 5, 0)
			require.NoError(t, err)
			quietQ(t, a, q)
			assert.Equal(t, uint64(5), rd())
			assert.Equal(t, uint64(5), do(transport.AMOFetch, 0, 0))
			assert.Equal(t, uint64(5), do(transport.AMOAdd, 3, 0))
			assert.Equal(t, uint64(8), do(transport.AMOSwap, 0xf0, 0))
			assert.Equal(t, uint64(0xf0), do(transport.AMOCompareSwap, 1, 0xf1), "failed compare leaves the value")
			assert.Equal(t, uint64(0xf0), do(transport.AMOCompareSwap, 0x3c, 0xf0))
			assert.Equal(t, uint64(0x3c), do(transport.AMOAnd, 0x0f, 0))
			assert.Equal(t, uint64(0x0c), do(transport.AMOOr, 0x30, 0))
			assert.Equal(t, uint64(0x3c), do(transport.AMOXor, 0xff, 0))
			assert.Equal(t, uint64(0xc3)&mask, rd())
			assert.Equal(t, mask&^uint64(0)&0xc3, do(transport.AMOAdd, mask, 0), "add of -1 wraps at the width")
			assert.Equal(t, uint64(0xc2)&mask, rd())
		})
	}
}

// TestEmulatedAtomics forces the compare-and-swap fallback for every op.
func TestEmulatedAtomics(t *testing.T) {
	trs, regions := job(t, 2, "tcp;ofi_rxm")
	a := trs[0]
	cas := a.amo[fabric.KindCompare][transport.AMOCompareSwap]
	a.amo = [3][8][9]bool{}
	a.amo[fabric.KindCompare][transport.AMOCompareSwap] = cas
	q := quiet.NewQueue("amo", a.Progress)
	regions[1][1001] = 0x11
	regions[1][1002] = 0x22
	old, err := a.Atomic(q, transport.AMOAdd, 1, 1, 1001, 0xff, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x11), old)
	assert.Equal(t, byte(0x10), regions[1][1001], "narrow add wrapped")
	assert.Equal(t, byte(0x22), regions[1][1002], "neighbour untouched")
	_, err = a.Atomic(q, transport.AMOSet, 2, 1, 1002, 0xbeef, 0)
	require.NoError(t, err)
	assert.Equal(t, []byte{0xef, 0xbe}, regions[1][1002:1004])
}

// TestConcurrent: goroutines of both PEs add to one word on PE 1 through
// the provider (PE 1 to itself too), and put to their own slots.
func TestConcurrent(t *testing.T) {
	trs, regions := job(t, 2, "tcp;ofi_rxm")
	const G, N = 4, 200
	var wg sync.WaitGroup
	for pe := 0; pe < 2; pe++ {
		for g := 0; g < G; g++ {
			wg.Add(1)
			go func(pe, g int) {
				defer wg.Done()
				tr := trs[pe]
				q := quiet.NewQueue(fmt.Sprintf("PE %d g %d", pe, g), tr.Progress)
				for i := 0; i < N; i++ {
					_, err := tr.Atomic(q, transport.AMOAdd, 8, 1, 0, 1, 0)
					assert.NoError(t, err)
					var v [8]byte
					binary.LittleEndian.PutUint64(v[:], uint64(i))
					assert.NoError(t, tr.PutNBI(q, 1, uint64(64+8*(pe*G+g)), v[:]))
				}
				for q.Pending() > 0 {
					tr.Progress()
				}
			}(pe, g)
		}
	}
	wg.Wait()
	assert.Equal(t, uint64(2*G*N), binary.LittleEndian.Uint64(regions[1][0:]))
	for s := 0; s < 2*G; s++ {
		assert.Equal(t, uint64(N-1), binary.LittleEndian.Uint64(regions[1][64+8*s:]), "slot %d", s)
	}
}

func (t *Transport) testPolicy() spin.Policy { return spin.For(1, 2, 20*time.Second) }
