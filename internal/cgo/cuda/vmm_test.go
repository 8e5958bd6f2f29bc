package cuda

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// The VMM calls on the fake driver: a reservation, a chunk created, mapped
// and made accessible, exported as a descriptor and imported again into a
// second reservation (another "GPU" sharing it), bytes written through one
// mapping read through the other, then everything undone.
func TestFakeVMM(t *testing.T) {
	loadFake(t, buildFake(t))
	ctx, err := Device(0).RetainPrimary()
	require.NoError(t, err)
	defer func() { assert.NoError(t, ctx.Release()) }()

	require.True(t, ctx.VMMSupported())
	g, err := ctx.MemGranularity()
	require.NoError(t, err)
	assert.Equal(t, uint64(2<<20), g)

	const res = 8 << 20
	a, err := ctx.MemAddressReserve(res, g)
	require.NoError(t, err)
	b, err := ctx.MemAddressReserve(res, g)
	require.NoError(t, err)
	assert.Zero(t, uint64(a)%g, "reservation aligned to the granularity")

	h, err := ctx.MemCreate(2 * g)
	require.NoError(t, err)
	require.NoError(t, ctx.MemMap(a+DevicePtr(g), 2*g, h))
	require.NoError(t, ctx.MemSetAccess(a+DevicePtr(g), 2*g))
	fd, err := ctx.MemExportFD(h)
	require.NoError(t, err)
	h2, err := ctx.MemImportFD(fd)
	require.NoError(t, err)
	require.NoError(t, unix.Close(fd), "the importer's descriptor stays its own")
	require.NoError(t, ctx.MemMap(b+DevicePtr(g), 2*g, h2))
	require.NoError(t, ctx.MemSetAccess(b+DevicePtr(g), 2*g))

	v := uint64(0x0123456789abcdef)
	require.NoError(t, ctx.MemcpyHtoD(a+DevicePtr(3*g-8), unsafe.Pointer(&v), 8))
	var got uint64
	require.NoError(t, ctx.MemcpyDtoH(unsafe.Pointer(&got), b+DevicePtr(3*g-8), 8))
	assert.Equal(t, v, got, "the imported chunk is the exported one's memory")

	// as CUDA: no mapping over a mapped range or outside a reservation,
	// no unmapping or access change of a range that is not whole mappings
	h3, err := ctx.MemCreate(2 * g)
	require.NoError(t, err)
	assert.Error(t, ctx.MemMap(a+DevicePtr(2*g), 2*g, h3), "a mapping over a mapped range")
	assert.Error(t, ctx.MemMap(a+DevicePtr(res-g), 2*g, h3), "a mapping past the reservation")
	assert.Error(t, ctx.MemUnmap(a+DevicePtr(g), g), "part of a mapping")
	assert.Error(t, ctx.MemUnmap(a+DevicePtr(3*g), 2*g), "an unmapped range")
	assert.Error(t, ctx.MemSetAccess(a+DevicePtr(3*g), g), "access to an unmapped range")
	require.NoError(t, ctx.MemRelease(h3))

	_, err = ctx.MemCreate(g + 1)
	assert.Error(t, err, "a size that is not a multiple of the granularity")
	_, err = ctx.MemImportFD(-1)
	assert.Error(t, err)

	for _, m := range []struct {
		p DevicePtr
		h MemHandle
	}{{a, h}, {b, h2}} {
		require.NoError(t, ctx.MemUnmap(m.p+DevicePtr(g), 2*g))
		require.NoError(t, ctx.MemRelease(m.h))
		require.NoError(t, ctx.MemAddressFree(m.p, res))
	}
}

// FAKECUDA_VMM=0: the device says it has no VMM, so the GPU heap falls
// back to legacy IPC.
func TestFakeNoVMM(t *testing.T) {
	loadFake(t, buildFake(t))
	t.Setenv("FAKECUDA_VMM", "0")
	ctx, err := Device(0).RetainPrimary()
	require.NoError(t, err)
	defer func() { assert.NoError(t, ctx.Release()) }()
	assert.False(t, ctx.VMMSupported())
}
