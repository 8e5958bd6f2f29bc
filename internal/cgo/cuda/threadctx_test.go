package cuda

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A context destroyed while current on a thread (its owner released it)
// is no context: SaveThreadContext records none, and Restore of a
// context destroyed after it was saved leaves the thread with none
// instead of failing. Another context current on the thread survives a
// wrapper call made for a different one.
func TestThreadContextDestroyed(t *testing.T) {
	loadFake(t, buildFake(t))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	c0, err := Device(0).RetainPrimary()
	require.NoError(t, err)
	t.Cleanup(func() { _ = c0.Release() })

	c1, err := Device(1).RetainPrimary()
	require.NoError(t, err)
	require.NoError(t, c1.SetCurrent())
	p, err := c0.MemAlloc(4096) // a call for c0 on c1's thread
	require.NoError(t, err)
	require.NoError(t, c0.MemFree(p))
	ok, err := c1.IsCurrent()
	require.NoError(t, err)
	assert.True(t, ok, "c1 is current again after calls made for c0")

	saved, err := SaveThreadContext()
	require.NoError(t, err)
	require.NoError(t, c1.Release()) // destroyed while current
	require.NoError(t, saved.Restore(), "Restore of a context destroyed since it was saved")
	cur, err := CurrentContext()
	require.NoError(t, err)
	assert.Nil(t, cur, "no context current after restoring a destroyed one")

	c1, err = Device(1).RetainPrimary()
	require.NoError(t, err)
	require.NoError(t, c1.SetCurrent())
	require.NoError(t, c1.Release())
	saved, err = SaveThreadContext()
	require.NoError(t, err)
	assert.Equal(t, ThreadContext{}, saved, "a destroyed current context is saved as none")
	require.NoError(t, saved.Restore())
}
