package cuda

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// AllocationOf finds the allocation around an interior address, tells a
// context's own memory from another device's, and fails on memory the
// driver does not know.
func TestAllocationOf(t *testing.T) {
	loadFake(t, buildFake(t))
	c0, err := Device(0).RetainPrimary()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c0.Release() })
	c1, err := Device(1).RetainPrimary()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c1.Release() })

	p, err := c0.MemAlloc(1 << 16)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c0.MemFree(p) })
	q, err := c1.MemAlloc(4096)
	require.NoError(t, err)
	t.Cleanup(func() { _ = c1.MemFree(q) })

	a, err := c0.AllocationOf(p + 100)
	require.NoError(t, err)
	assert.Equal(t, Allocation{Type: MemoryTypeDevice, Start: p, Size: 1 << 16, Mine: true}, a)

	b, err := c0.AllocationOf(q)
	require.NoError(t, err)
	assert.False(t, b.Mine, "device 1's memory is not context 0's")
	assert.Equal(t, MemoryTypeDevice, b.Type)

	var host [64]byte
	_, err = c0.AllocationOf(DevicePtr(uintptr(unsafeAddr(&host[0]))))
	assert.Error(t, err, "plain host memory is unknown to the driver")
}

func unsafeAddr(p *byte) uintptr { return uintptr(unsafe.Pointer(p)) }
