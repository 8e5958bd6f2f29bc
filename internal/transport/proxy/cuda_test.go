package proxy

import (
	"testing"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/transport"
)

type launch struct {
	op        transport.AMO
	width     int
	addr, out cuda.DevicePtr
	v, cmp    uint64
}

type fakeLauncher struct {
	got    []launch
	failAt int // 1-based launch that fails (0: none)
}

func (f *fakeLauncher) AtomicAsync(_ cuda.Stream, op transport.AMO, width int, addr cuda.DevicePtr, v, cmp uint64, out cuda.DevicePtr) error {
	f.got = append(f.got, launch{op, width, addr, out, v, cmp})
	if len(f.got) == f.failAt {
		return errors.New("launch failed")
	}
	return nil
}

// TestPrimeAtomicsLoadsEveryKernel: the CUDA backend must launch, during
// Init, every atomic kernel a descriptor can select (each device AMO op,
// 4 and 8 bytes), so no kernel is loaded on the worker's path under a
// running user kernel (lazy loading may synchronize the context, which
// never finishes under a spinning kernel). The warm-up must not change memory
// other than its scratch words.
func TestPrimeAtomicsLoadsEveryKernel(t *testing.T) {
	const scratch = 0x7f0000001000
	f := &fakeLauncher{}
	require.NoError(t, primeAtomics(f, cuda.Stream{}, scratch))
	want := map[launch]bool{}
	for _, w := range []int{4, 8} {
		for _, op := range deviceAMO {
			want[launch{op: op, width: w}] = true
		}
	}
	seen := map[launch]bool{}
	for _, l := range f.got {
		assert.Equal(t, cuda.DevicePtr(scratch), l.addr, "%v/%d targets the scratch word", l.op, l.width)
		assert.Equal(t, cuda.DevicePtr(scratch+8), l.out, "%v/%d returns into the scratch's second word", l.op, l.width)
		assert.Zero(t, l.v, "%v/%d operand leaves the scratch word zero", l.op, l.width)
		assert.Zero(t, l.cmp, "%v/%d compare value", l.op, l.width)
		seen[launch{op: l.op, width: l.width}] = true
	}
	assert.Equal(t, want, seen, "every (op, width) a descriptor can select is launched")
	assert.Len(t, f.got, len(want), "each kernel once")
	assert.Len(t, want, 16)
}

// TestPrimeAtomicsReportsFailure: a failed warm-up launch fails backend
// creation (Init), naming the kernel, and stops there.
func TestPrimeAtomicsReportsFailure(t *testing.T) {
	f := &fakeLauncher{failAt: 3}
	err := primeAtomics(f, cuda.Stream{}, 0x1000)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "4-byte swap atomic kernel")
	assert.Contains(t, err.Error(), "launch failed")
	assert.Len(t, f.got, 3)
}
