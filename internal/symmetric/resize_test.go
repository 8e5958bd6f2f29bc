package symmetric

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestResize(t *testing.T) {
	a := newAlloc(t, 4*kib, 64)
	x, err := a.Alloc(256, 0)
	require.NoError(t, err)
	y, err := a.Alloc(256, 0)
	require.NoError(t, err)
	require.Equal(t, uint64(256), y)

	// Shrink: the tail coalesces with nothing (y follows), so it is a free
	// block of its own that the next small Alloc takes.
	ok, err := a.Resize(x, 100) // rounds to 128
	require.NoError(t, err)
	require.True(t, ok)
	sz, _ := a.Size(x)
	assert.Equal(t, uint64(128), sz)
	require.NoError(t, a.Check())
	z, err := a.Alloc(64, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(128), z, "the freed tail is reused first-fit")
	_, err = a.Free(z)
	require.NoError(t, err)

	// Same rounded size: nothing to do.
	ok, err = a.Resize(x, 120)
	require.NoError(t, err)
	assert.True(t, ok)

	// Grow into the freed tail (adjacent), but not past y.
	ok, err = a.Resize(x, 256)
	require.NoError(t, err)
	require.True(t, ok)
	ok, err = a.Resize(x, 257)
	require.NoError(t, err)
	assert.False(t, ok, "y is in the way")
	sz, _ = a.Size(x)
	assert.Equal(t, uint64(256), sz, "a failed grow changes nothing")

	// y grows into the free space after it, up to the heap's end.
	ok, err = a.Resize(y, 4*kib-256)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, uint64(0), a.Stats().Free)
	ok, err = a.Resize(y, 4*kib)
	require.NoError(t, err)
	assert.False(t, ok)
	ok, err = a.Resize(y, 1<<63)
	require.NoError(t, err)
	assert.False(t, ok, "larger than the heap")
	require.NoError(t, a.Check())

	_, err = a.Resize(x, 0)
	require.ErrorIs(t, err, ErrInvalidSize)
	_, err = a.Resize(64, 64)
	require.ErrorIs(t, err, ErrNotAllocated)
}

func TestResizeQuarantine(t *testing.T) {
	a := newAlloc(t, 4*kib, 64)
	a.SetQuarantine(true)
	x, err := a.Alloc(1024, 0)
	require.NoError(t, err)
	ok, err := a.Resize(x, 512)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, []Block{{Off: 512, Size: 512}}, a.Quarantined(), "the tail waits in quarantine")
	require.NoError(t, a.Check())
	ok, err = a.Resize(x, 1024)
	require.NoError(t, err)
	assert.False(t, ok, "quarantined space is not reused")
	assert.Equal(t, uint64(512), a.Release())
	ok, err = a.Resize(x, 1024)
	require.NoError(t, err)
	assert.True(t, ok)
	require.NoError(t, a.Check())
}
