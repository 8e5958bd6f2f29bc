package shmem_test

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/testutil"
	"github.com/goshmem/goshmem/shmem"
)

// RegisterDevice before Init says so; without a GPU it says why.
func TestRegisterDeviceNoGPU(t *testing.T) {
	_, err := shmem.RegisterDevice[float32](4096, 4)
	assert.ErrorIs(t, err, shmem.ErrNotInitialized)
	start(t)
	_, err = shmem.RegisterDevice[float32](4096, 4)
	assert.ErrorIs(t, err, shmem.ErrNotSupported)
}

const registerCaseEnv = "GOSHMEM_TEST_REGISTER_GPU"

// TestRegisterDeviceFake: RegisterDevice in a 1-PE job on the fake CUDA
// driver, in a process of its own (the driver loads once per process).
func TestRegisterDeviceFake(t *testing.T) {
	runFakeGPUCase(t, registerCaseEnv, "TestRegisterDeviceFakeCase")
}

// foreign is device memory that goshmem did not allocate: cuMemAlloc'd
// in the primary context of device dev, as a framework's cudaMalloc is.
func foreign(t *testing.T, dev, bytes int) (*cuda.Context, cuda.DevicePtr) {
	t.Helper()
	c, err := cuda.Device(dev).RetainPrimary()
	require.NoError(t, err)
	p, err := c.MemAlloc(bytes)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, c.MemFree(p), "the owner frees its memory after Free")
		assert.NoError(t, c.Release())
	})
	return c, p
}

// TestRegisterDeviceFakeCase is TestRegisterDeviceFake's case.
func TestRegisterDeviceFakeCase(t *testing.T) {
	inFakeGPUCase(t, registerCaseEnv, "TestRegisterDeviceFake")
	testutil.FakeLib(t)
	start(t)
	c, p := foreign(t, 0, 64<<10)
	want := []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	require.NoError(t, c.MemcpyHtoD(p, unsafe.Pointer(&want[0]), len(want)*8))
	reg, err := shmem.RegisterDevice[float64](uintptr(p), 16)
	require.NoError(t, err)
	assert.Equal(t, 16, reg.Len())
	assert.True(t, reg.OnDevice())
	assert.Equal(t, uintptr(p), reg.DevicePtr())
	assert.Nil(t, reg.Local())

	y, err := shmem.AllocDevice[float64](9)
	require.NoError(t, err)
	sig, err := shmem.AllocDevice[uint64](1)
	require.NoError(t, err)
	s, err := shmem.NewStream()
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, s.Destroy()) })

	// the local side of every stream RMA
	require.NoError(t, shmem.PutOnStream(s, y, 1, reg, 0, 8, 0))
	require.NoError(t, shmem.PutSignalOnStream(s, y, 0, reg, 8, 1, sig, 0, 5, shmem.SignalSet, 0))
	require.NoError(t, shmem.SignalWaitUntilOnStream(s, sig, 0, shmem.CmpEQ, 5))
	require.NoError(t, shmem.GetOnStream(s, reg, 9, y, 0, 7, 0))
	require.NoError(t, s.Synchronize())
	got := make([]float64, 9)
	require.NoError(t, shmem.Get(got, y, 0, 0))
	assert.Equal(t, []float64{9, 1, 2, 3, 4, 5, 6, 7, 8}, got)
	back := make([]float64, 16)
	require.NoError(t, c.MemcpyDtoH(unsafe.Pointer(&back[0]), p, len(back)*8))
	assert.Equal(t, []float64{1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 1, 2, 3, 4, 5, 6}, back)
	assert.ErrorIs(t, shmem.PutOnStream(s, y, 0, reg, 10, 7, 0), shmem.ErrOutOfBounds)

	// every remote side refused, naming the call
	one := []float64{1}
	u, err := shmem.RegisterDevice[uint64](uintptr(p)+32<<10, 4)
	require.NoError(t, err)
	for call, err := range map[string]error{
		"PutOnStream":             shmem.PutOnStream(s, reg, 0, y, 0, 1, 0),
		"GetOnStream":             shmem.GetOnStream(s, y, 0, reg, 0, 1, 0),
		"PutSignalOnStream":       shmem.PutSignalOnStream(s, y, 0, y, 0, 1, u, 0, 1, shmem.SignalSet, 0),
		"SignalWaitUntilOnStream": shmem.SignalWaitUntilOnStream(s, u, 0, shmem.CmpEQ, 1),
		"ReduceOnStream":          shmem.ReduceOnStream(s, shmem.TeamWorld, shmem.OpSum, reg, y, 1),
		"BroadcastOnStream":       shmem.BroadcastOnStream(s, shmem.TeamWorld, y, reg, 1, 0),
		"FCollectOnStream":        shmem.FCollectOnStream(s, shmem.TeamWorld, reg, y, 1),
		"Reduce":                  shmem.Reduce(shmem.TeamWorld, shmem.OpSum, y, reg, 1),
		"Collect":                 shmem.Collect(shmem.TeamWorld, reg, y, 1),
		"AllToAllStrided":         shmem.AllToAllStrided(shmem.TeamWorld, y, reg, 1, 1, 1),
		"SumInScan":               shmem.SumInScan(shmem.TeamWorld, reg, y, 1),
		"Put":                     shmem.Put(reg, 0, one, 0),
		"Get":                     shmem.Get(one, reg, 0, 0),
		"P":                       shmem.P(reg, 0, 1, 0),
		"AtomicAdd":               shmem.AtomicAdd(u, 0, 1, 0),
		"WaitUntil":               shmem.WaitUntil(u, 0, shmem.CmpEQ, 0),
	} {
		assert.ErrorIs(t, err, shmem.ErrInvalidArgument, call)
		if assert.Error(t, err, call) {
			assert.Contains(t, err.Error(), call, "the error names the call")
			assert.Contains(t, err.Error(), "RegisterDevice", call)
		}
	}
	_, err = shmem.G(reg, 0, 0)
	assert.ErrorIs(t, err, shmem.ErrInvalidArgument, "G")
	assert.False(t, shmem.AddrAccessible(reg, 0), "no PE reaches a registered buffer")

	// registration errors
	c1, p1 := foreign(t, 1, 4096)
	_ = c1
	for name, tc := range map[string]struct {
		ptr uintptr
		n   int
	}{
		"null":                  {0, 1},
		"misaligned":            {uintptr(p) + 4, 1},
		"negative n":            {uintptr(p), -1},
		"overlaps registration": {uintptr(p) + 8*15, 2},
		"past the allocation":   {uintptr(p) + 64<<10 - 8, 2},
		"symmetric heap":        {y.DevicePtr(), 1},
		"another context":       {uintptr(p1), 1},
		"host memory":           {uintptr(unsafe.Pointer(&one[0])), 1},
	} {
		_, err := shmem.RegisterDevice[float64](tc.ptr, tc.n)
		assert.ErrorIs(t, err, shmem.ErrInvalidArgument, name)
		if err != nil {
			assert.Contains(t, err.Error(), "RegisterDevice", name)
		}
	}
	z, err := shmem.RegisterDevice[float64](uintptr(p)+40<<10, 0)
	require.NoError(t, err)
	assert.Zero(t, z.Len(), "n = 0: the zero Array")

	// Free unregisters and leaves the memory; the range registers again
	require.NoError(t, reg.Free())
	assert.ErrorIs(t, reg.Free(), shmem.ErrInvalidArgument, "freed twice")
	assert.ErrorIs(t, shmem.PutOnStream(s, y, 0, reg, 0, 1, 0), shmem.ErrInvalidArgument, "use after Free")
	assert.Zero(t, reg.DevicePtr())
	require.NoError(t, c.MemcpyDtoH(unsafe.Pointer(&back[0]), p, len(back)*8))
	assert.Equal(t, 9.0, back[8], "the memory is its owner's, untouched")
	again, err := shmem.RegisterDevice[float64](uintptr(p), 16)
	require.NoError(t, err)
	require.NoError(t, again.Free())
	require.NoError(t, u.Free())
}
