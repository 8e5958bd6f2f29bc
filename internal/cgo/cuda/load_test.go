package cuda

import (
	"os"
	"testing"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// hasNVIDIAGPU reports whether the NVIDIA kernel driver lists a GPU: then
// the system-driver test fails instead of accepting ErrNoDriver/ErrNoDevice.
// (/dev/nvidiactl is no evidence: libcuda creates it when run as root.)
func hasNVIDIAGPU() bool {
	ents, err := os.ReadDir("/proc/driver/nvidia/gpus")
	return err == nil && len(ents) > 0
}

// TestLoadSystemDriver loads the real libcuda.so.1. Without a driver library
// that is ErrNoDriver; with the user-space library but no kernel module or
// GPU (this CI machine has Debian's libcuda1 and no GPU) it is ErrNoDevice
// from cuInit, after every symbol was resolved from the real library.
func TestLoadSystemDriver(t *testing.T) {
	unload()
	t.Cleanup(unload)
	t.Setenv(LibraryEnv, "")
	err := Load()
	if hasNVIDIAGPU() {
		require.NoError(t, err, "/proc/driver/nvidia/gpus lists a GPU, so libcuda.so.1 should load")
		n, err := DeviceCount()
		require.NoError(t, err)
		assert.Positive(t, n)
		return
	}
	require.Error(t, err)
	assert.False(t, Loaded())
	t.Logf("Load on this machine: %v\nhint: %s", err, errors.FlattenHints(err))
	hint := errors.FlattenHints(err)
	if errors.Is(err, ErrNoDriver) {
		assert.False(t, errors.Is(err, ErrNoDevice))
		assert.Contains(t, hint, "GPU features are unavailable")
		return
	}
	require.True(t, errors.Is(err, ErrNoDevice), "want ErrNoDriver or ErrNoDevice, got %+v", err)
	assert.Contains(t, err.Error(), "cuInit")
	assert.Contains(t, hint, "GPU features are unavailable")
	var ce *Error
	if errors.As(err, &ce) {
		assert.Equal(t, CodeNoDevice, ce.Code)
		assert.Equal(t, "CUDA_ERROR_NO_DEVICE", ce.Name)
		assert.NotEmpty(t, ce.Msg)
	}
}

func TestLoadMissingLibrary(t *testing.T) {
	unload()
	t.Cleanup(unload)
	err := LoadLibrary("libgoshmem-no-such-cuda.so.1")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoDriver))
	assert.False(t, errors.Is(err, ErrNoDevice))
	assert.Contains(t, err.Error(), `cannot dlopen "libgoshmem-no-such-cuda.so.1"`)
	assert.Contains(t, errors.FlattenHints(err), "no NVIDIA driver on this machine; GPU features are unavailable")
	assert.Contains(t, errors.FlattenDetails(err), "libgoshmem-no-such-cuda.so.1")
	// Retrying is allowed and fails the same way.
	assert.True(t, errors.Is(LoadLibrary("libgoshmem-no-such-cuda.so.1"), ErrNoDriver))
}

func TestLoadLibraryWithoutCUDASymbols(t *testing.T) {
	unload()
	t.Cleanup(unload)
	err := LoadLibrary("libc.so.6") // loads fine, has no cuInit
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoDriver))
	assert.Contains(t, err.Error(), "lacks the driver entry point cuInit")
	assert.Contains(t, errors.FlattenHints(err), "too old")
	assert.False(t, Loaded())
	assert.Empty(t, ResolvedSymbols())
}

// TestCallsWithoutDriver: every entry point returns an error, never
// crashes, when Load failed (the error keeps ErrNoDriver) or never ran.
func TestCallsWithoutDriver(t *testing.T) {
	for _, tc := range []struct {
		name string
		load func() error
		want error
	}{
		{"never loaded", func() error { return nil }, ErrNotLoaded},
		{"load failed", func() error { return LoadLibrary("libgoshmem-no-such-cuda.so.1") }, ErrNoDriver},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unload()
			t.Cleanup(unload)
			_ = tc.load()
			c := &Context{} // what a caller holding a stale value would have
			var buf [8]byte
			p := unsafe.Pointer(&buf[0])
			var a Args
			a.U32(1)
			f := &Function{ctx: c, name: "k"}
			m := &Module{ctx: c}
			calls := map[string]func() error{
				"DriverVersion":     func() error { _, err := DriverVersion(); return err },
				"DeviceCount":       func() error { _, err := DeviceCount(); return err },
				"Name":              func() error { _, err := Device(0).Name(); return err },
				"Attribute":         func() error { _, err := Device(0).Attribute(AttrWarpSize); return err },
				"ComputeCapability": func() error { _, _, err := Device(0).ComputeCapability(); return err },
				"PCIBusID":          func() error { _, err := Device(0).PCIBusID(); return err },
				"TotalMem":          func() error { _, err := Device(0).TotalMem(); return err },
				"CanAccessPeer":     func() error { _, err := Device(0).CanAccessPeer(1); return err },
				"RetainPrimary":     func() error { _, err := Device(0).RetainPrimary(); return err },
				"SetCurrent":        c.SetCurrent,
				"IsCurrent":         func() error { _, err := c.IsCurrent(); return err },
				"Do":                func() error { return c.Do(func() error { return nil }) },
				"Synchronize":       c.Synchronize,
				"EnablePeerAccess":  func() error { return c.EnablePeerAccess(c) },
				"MemAlloc":          func() error { _, err := c.MemAlloc(1); return err },
				"MemFree":           func() error { return c.MemFree(1) },
				"MemsetD8":          func() error { return c.MemsetD8(1, 0, 1) },
				"MemcpyHtoD":        func() error { return c.MemcpyHtoD(1, p, 8) },
				"MemcpyDtoH":        func() error { return c.MemcpyDtoH(p, 1, 8) },
				"MemcpyDtoD":        func() error { return c.MemcpyDtoD(1, 2, 8) },
				"MemcpyPeer":        func() error { return c.MemcpyPeer(1, c, 2, c, 8) },
				"MemGetInfo":        func() error { _, _, err := c.MemGetInfo(); return err },
				"MemHostAlloc":      func() error { _, err := c.MemHostAlloc(8, 0); return err },
				"MemFreeHost":       func() error { return c.MemFreeHost(p) },
				"MemHostGetDevPtr":  func() error { _, err := c.MemHostGetDevicePointer(p); return err },
				"MemHostRegister":   func() error { return c.MemHostRegister(p, 8, 0) },
				"MemHostUnregister": func() error { return c.MemHostUnregister(p) },
				"PointerGetAttr":    func() error { _, err := c.PointerGetAttribute(PointerAttrMemoryType, 1); return err },
				"IpcGetMemHandle":   func() error { _, err := c.IpcGetMemHandle(1); return err },
				"IpcOpenMemHandle":  func() error { _, err := c.IpcOpenMemHandle(IpcMemHandle{}, 1); return err },
				"IpcCloseMemHandle": func() error { return c.IpcCloseMemHandle(1) },
				"ModuleLoadData":    func() error { _, err := c.ModuleLoadData([]byte("x")); return err },
				"ModuleLoad":        func() error { _, err := c.ModuleLoad("/nonexistent"); return err },
				"Function":          func() error { _, err := m.Function("k"); return err },
				"Global":            func() error { _, _, err := m.Global("g"); return err },
				"Unload":            m.Unload,
				"Launch":            func() error { return f.Launch([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, Stream{}, &a) },
				"LaunchCooperative": func() error { return f.LaunchCooperative([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, Stream{}, nil) },
				"MaxActiveBlocks":   func() error { _, err := f.MaxActiveBlocksPerMultiprocessor(128, 0); return err },
				"FuncAttribute":     func() error { _, err := f.Attribute(FuncNumRegs); return err },
				"StreamCreate":      func() error { _, err := c.StreamCreate(0); return err },
				"StreamSynchronize": Stream{ctx: c}.Synchronize,
				"StreamDestroy":     Stream{ctx: c}.Destroy,
				"MemsetD8Async":     func() error { return Stream{ctx: c}.MemsetD8Async(1, 0, 1) },
				"StreamCapturing":   func() error { _, err := Stream{ctx: c}.Capturing(); return err },
				"EventCreate":       func() error { _, err := c.EventCreate(0); return err },
				"EventRecord":       func() error { return Event{ctx: c}.Record(Stream{}) },
				"EventSynchronize":  Event{ctx: c}.Synchronize,
				"EventDestroy":      Event{ctx: c}.Destroy,
				"EventElapsedTime":  func() error { _, err := EventElapsedTime(Event{ctx: c}, Event{ctx: c}); return err },
			}
			for name, call := range calls {
				err := call()
				if assert.Error(t, err, name) {
					assert.True(t, errors.Is(err, tc.want), "%s: %v", name, err)
					assert.Contains(t, err.Error(), "driver not loaded", name)
				}
			}
			// Release of a context that never was is a no-op, not a crash.
			assert.NotPanics(t, func() { _ = c.Release() })
		})
	}
}
