package cuda

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/testutil"
)

// buildFake compiles testdata/fakecuda.c into a shared library and returns
// its path (testutil.FakeCUDA, which the runtime's tests share).
func buildFake(t *testing.T) string { return testutil.FakeCUDA(t) }

// loadFake loads the fake through GOSHMEM_LIBCUDA, as a user would.
func loadFake(t *testing.T, lib string) {
	t.Helper()
	unload()
	t.Cleanup(unload)
	t.Setenv(LibraryEnv, lib)
	require.NoError(t, Load())
	require.NoError(t, Load(), "Load is idempotent")
	require.True(t, Loaded())
}

func TestFakeLoadFailures(t *testing.T) {
	lib := buildFake(t)
	for _, tc := range []struct {
		name, devices, init string
		want                error
		contains            string
	}{
		{"no device from cuInit", "2", "100", ErrNoDevice, "CUDA_ERROR_NO_DEVICE (100): no CUDA-capable device is detected"},
		{"zero devices", "0", "0", ErrNoDevice, "cuDeviceGetCount found 0 devices"},
		{"stub library", "2", "34", ErrNoDriver, "CUDA_ERROR_STUB_LIBRARY (34)"},
		{"driver mismatch", "2", "803", ErrNoDriver, "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH (803)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			unload()
			t.Cleanup(unload)
			t.Setenv("FAKECUDA_DEVICES", tc.devices)
			t.Setenv("FAKECUDA_INIT", tc.init)
			err := LoadLibrary(lib)
			require.Error(t, err)
			assert.True(t, errors.Is(err, tc.want), "%+v", err)
			assert.Contains(t, err.Error(), tc.contains)
			assert.NotEmpty(t, errors.FlattenHints(err))
			assert.False(t, Loaded())
			_, err = DeviceCount()
			assert.True(t, errors.Is(err, tc.want), "later calls carry the Load failure: %v", err)
		})
	}
	unload()
	require.NoError(t, LoadLibrary(lib), "a failed Load can be retried")
	assert.Error(t, LoadLibrary("libother.so"), "a second library is refused")
}

func TestFakeDriver(t *testing.T) {
	loadFake(t, buildFake(t))

	t.Run("symbols", func(t *testing.T) {
		syms := ResolvedSymbols()
		assert.Contains(t, syms, "cuMemAlloc_v2")
		assert.NotContains(t, syms, "cuMemAlloc", "the legacy ABI symbol must not be used")
		assert.Contains(t, syms, "cuIpcOpenMemHandle_v2")
		assert.Contains(t, syms, "cuDevicePrimaryCtxRelease_v2")
		v, err := DriverVersion()
		require.NoError(t, err)
		assert.Equal(t, 12040, v)
	})

	t.Run("devices", func(t *testing.T) {
		n, err := DeviceCount()
		require.NoError(t, err)
		require.Equal(t, 2, n)
		name, err := Device(1).Name()
		require.NoError(t, err)
		assert.Equal(t, "Fake H200 #1", name)
		major, minor, err := Device(0).ComputeCapability()
		require.NoError(t, err)
		assert.Equal(t, [2]int{9, 0}, [2]int{major, minor})
		sms, err := Device(0).Attribute(AttrMultiprocessorCount)
		require.NoError(t, err)
		assert.Equal(t, 132, sms)
		bus, err := Device(1).PCIBusID()
		require.NoError(t, err)
		assert.Equal(t, "0000:19:00.0", bus)
		mem, err := Device(0).TotalMem()
		require.NoError(t, err)
		assert.Equal(t, uint64(150754820096), mem)
		can, err := Device(0).CanAccessPeer(1)
		require.NoError(t, err)
		assert.True(t, can)
		can, err = Device(0).CanAccessPeer(0)
		require.NoError(t, err)
		assert.False(t, can)

		_, err = Device(2).Name()
		assert.True(t, errors.Is(err, errs.ErrInvalidArgument))
		assert.ErrorContains(t, err, "device 2 out of range [0, 2)")

		_, err = Device(0).Attribute(DeviceAttribute(9999))
		var ce *Error
		require.True(t, errors.As(err, &ce), "%v", err)
		assert.Equal(t, CodeInvalidValue, ce.Code)
		assert.Equal(t, "CUDA_ERROR_INVALID_VALUE", ce.Name)
		assert.Equal(t, "invalid argument", ce.Msg)
		assert.Equal(t, "cuDeviceGetAttribute", ce.Call)
		assert.True(t, errors.Is(err, &Error{Code: CodeInvalidValue}))
	})

	c0, err := Device(0).RetainPrimary()
	require.NoError(t, err)
	c1, err := Device(1).RetainPrimary()
	require.NoError(t, err)
	defer c1.Release()

	t.Run("memory", func(t *testing.T) {
		const n = 1 << 20
		a, err := c0.MemAlloc(n)
		require.NoError(t, err)
		b, err := c0.MemAlloc(n)
		require.NoError(t, err)
		assert.Zero(t, uint64(a)%256)
		require.NoError(t, c0.MemsetD8(a, 0xab, n))
		host := make([]byte, n)
		require.NoError(t, c0.MemcpyDtoH(unsafe.Pointer(&host[0]), a, n))
		assert.Equal(t, byte(0xab), host[0])
		assert.Equal(t, byte(0xab), host[n-1])
		for i := range host {
			host[i] = byte(i * 7)
		}
		require.NoError(t, c0.MemcpyHtoD(a, unsafe.Pointer(&host[0]), n))
		require.NoError(t, c0.MemcpyDtoD(b, a, n))
		back := make([]byte, n)
		require.NoError(t, c0.MemcpyDtoH(unsafe.Pointer(&back[0]), b, n))
		assert.Equal(t, host, back)

		mt, err := c0.PointerGetAttribute(PointerAttrMemoryType, a)
		require.NoError(t, err)
		assert.Equal(t, uint64(MemoryTypeDevice), mt)
		_, err = c0.PointerGetAttribute(PointerAttribute(5), a) // P2P_TOKENS: a struct, refused
		assert.True(t, errors.Is(err, errs.ErrInvalidArgument))

		free, total, err := c0.MemGetInfo()
		require.NoError(t, err)
		assert.Less(t, free, total)

		hd, err := c0.IpcGetMemHandle(a)
		require.NoError(t, err)
		assert.Equal(t, "FAKEIPC", string(hd[:7]))
		p, err := c1.IpcOpenMemHandle(hd, IpcMemLazyEnablePeerAccess)
		require.NoError(t, err)
		assert.Equal(t, a, p)
		require.NoError(t, c1.IpcCloseMemHandle(p))

		hp, err := c0.MemHostAlloc(4096, HostAllocPortable|HostAllocDeviceMap)
		require.NoError(t, err)
		dp, err := c0.MemHostGetDevicePointer(hp)
		require.NoError(t, err)
		assert.NotZero(t, dp)
		require.NoError(t, c0.MemHostRegister(hp, 4096, HostRegisterPortable))
		require.NoError(t, c0.MemHostUnregister(hp))
		_, err = c0.MemGetDmabufFD(a, 4096)
		assert.True(t, errors.Is(err, &Error{Code: CodeNotSupported}), "%v", err)
		assert.ErrorContains(t, err, "cuMemGetHandleForAddressRange")
		require.NoError(t, c0.MemFreeHost(hp))

		require.NoError(t, c0.EnablePeerAccess(c1))
		require.NoError(t, c0.EnablePeerAccess(c1), "enabling twice is not an error")
		require.NoError(t, c0.MemcpyPeer(b, c1, a, c0, 64))

		_, err = c0.MemAlloc(0)
		assert.True(t, errors.Is(err, errs.ErrInvalidArgument))
		_, err = c0.MemAlloc(1 << 50)
		assert.True(t, errors.Is(err, &Error{Code: CodeOutOfMemory}), "%v", err)
		assert.ErrorContains(t, err, "cuMemAlloc_v2")

		require.NoError(t, c0.MemFree(a))
		require.NoError(t, c0.MemFree(b))
	})

	// Every call sets its own context on whatever thread it lands on:
	// hammer both contexts from many goroutines (the fake fails memory
	// calls on a thread with no current context, and PointerGetAttribute
	// answers the current context's device).
	t.Run("goroutines", func(t *testing.T) {
		var wg sync.WaitGroup
		for g := 0; g < 16; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c := []*Context{c0, c1}[g%2]
				for i := 0; i < 200; i++ {
					p, err := c.MemAlloc(64)
					if !assert.NoError(t, err) {
						return
					}
					runtime.Gosched()
					dev, err := c.PointerGetAttribute(PointerAttrDeviceOrdinal, p)
					assert.NoError(t, err)
					assert.Equal(t, uint64(c.Device()), dev)
					assert.NoError(t, c.MemFree(p))
				}
			}()
		}
		wg.Wait()
	})

	t.Run("do", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			err := c1.Do(func() error {
				cur, err := c1.IsCurrent()
				if err != nil {
					return err
				}
				if !cur {
					return errors.New("c1 not current inside Do")
				}
				return nil
			})
			require.NoError(t, err)
		}
		want := errors.New("from fn")
		assert.Equal(t, want, c1.Do(func() error { return want }))
		assert.PanicsWithValue(t, "boom", func() { _ = c1.Do(func() error { panic("boom") }) })
		require.NoError(t, c1.Do(func() error { return nil }), "the worker survives a panic")
	})

	t.Run("module and launch", func(t *testing.T) {
		_, err := c0.ModuleLoadData([]byte("not a module"))
		assert.True(t, errors.Is(err, &Error{Code: CodeInvalidImage}), "%v", err)
		_, err = c0.ModuleLoad(filepath.Join(t.TempDir(), "missing.cubin"))
		assert.True(t, errors.Is(err, &Error{Code: CodeFileNotFound}), "%v", err)

		img := []byte("FAKEMODULE") // no NUL: ModuleLoadData adds one
		m, err := c0.ModuleLoadData(img)
		require.NoError(t, err)
		defer func() { require.NoError(t, m.Unload()); require.NoError(t, m.Unload()) }()

		_, err = m.Function("nope")
		require.Error(t, err)
		assert.Contains(t, err.Error(), `kernel "nope" is not in the module`)
		assert.Contains(t, err.Error(), "CUDA_ERROR_NOT_FOUND")
		assert.Contains(t, errors.FlattenHints(err), `extern "C"`)

		g, size, err := m.Global("goshmemi_device_state")
		require.NoError(t, err)
		assert.NotZero(t, g)
		assert.Equal(t, 8, size)
		_, _, err = m.Global("nope")
		assert.ErrorContains(t, err, `global "nope" is not in the module`)

		pack, err := m.Function("fake_pack")
		require.NoError(t, err)
		assert.Equal(t, "fake_pack", pack.Name())
		out, err := c0.MemAlloc(17 * 8)
		require.NoError(t, err)
		defer c0.MemFree(out)
		st := make([]byte, 12)
		binary.LittleEndian.PutUint32(st[0:], 11)
		binary.LittleEndian.PutUint32(st[4:], math.MaxUint32) // -1
		binary.LittleEndian.PutUint32(st[8:], 33)
		var a Args
		a.Ptr(out).U8(0xfe).U16(0xbeef).I32(-5).U64(1<<40+3).F32(1.5).F64(-2.25).Struct(st, 4)
		require.NoError(t, a.Err())
		s, err := c0.StreamCreate(StreamNonBlocking)
		require.NoError(t, err)
		require.NoError(t, pack.Launch([3]uint32{2, 3, 4}, [3]uint32{32, 1, 1}, 128, s, &a))
		require.NoError(t, s.Synchronize())
		require.NoError(t, s.Destroy())
		var got [17]uint64
		require.NoError(t, c0.MemcpyDtoH(unsafe.Pointer(&got[0]), out, len(got)*8))
		assert.Equal(t, [17]uint64{
			0xfe, 0xbeef, uint64(math.MaxUint64 - 4), 1<<40 + 3,
			uint64(math.Float32bits(1.5)), math.Float64bits(-2.25),
			11, math.MaxUint64, 33,
			2, 3, 4, 32, 1, 1, 128,
			0, // every parameter naturally aligned in the C copy
		}, got)

		// The same launch through cuLaunchKernelEx (programmatic stream
		// serialization): same parameters, same grid and block.
		got = [17]uint64{}
		require.NoError(t, c0.MemcpyHtoD(out, unsafe.Pointer(&got[0]), len(got)*8))
		require.NoError(t, pack.LaunchOverlapped([3]uint32{2, 3, 4}, [3]uint32{32, 1, 1}, 128, Stream{}, &a))
		require.NoError(t, c0.Synchronize())
		require.NoError(t, c0.MemcpyDtoH(unsafe.Pointer(&got[0]), out, len(got)*8))
		assert.Equal(t, [6]uint64{11, math.MaxUint64, 33, 2, 3, 4}, [6]uint64(got[6:12]))
		assert.Equal(t, uint64(128), got[15])
		err = pack.LaunchOverlapped([3]uint32{0, 1, 1}, [3]uint32{1, 1, 1}, 0, Stream{}, &a)
		assert.ErrorContains(t, err, "cuLaunchKernelEx: CUDA_ERROR_INVALID_VALUE")

		require.NoError(t, pack.LaunchCooperative([3]uint32{4, 1, 1}, [3]uint32{32, 1, 1}, 0, Stream{}, &a))
		err = pack.LaunchCooperative([3]uint32{1000, 1, 1}, [3]uint32{32, 1, 1}, 0, Stream{}, &a)
		assert.True(t, errors.Is(err, &Error{Code: CodeCooperativeLaunchTooLarge}), "%v", err)
		assert.ErrorContains(t, err, "kernel fake_pack grid [1000 1 1]")

		err = pack.Launch([3]uint32{0, 1, 1}, [3]uint32{1, 1, 1}, 0, Stream{}, &a)
		assert.ErrorContains(t, err, "cuLaunchKernel: CUDA_ERROR_INVALID_VALUE")

		var bad Args
		bad.Struct([]byte{1}, 3)
		assert.True(t, errors.Is(pack.Launch([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, Stream{}, &bad), errs.ErrInvalidArgument))

		nb, err := pack.MaxActiveBlocksPerMultiprocessor(256, 0)
		require.NoError(t, err)
		assert.Equal(t, 8, nb)

		empty, err := m.Function("empty")
		require.NoError(t, err)
		var ea Args
		ea.Ptr(out).U32(7).F64(1)
		allocs := testing.AllocsPerRun(200, func() {
			_ = empty.Launch([3]uint32{1, 1, 1}, [3]uint32{128, 1, 1}, 0, Stream{}, &ea)
		})
		assert.Zero(t, allocs, "Launch must not allocate")
		require.NoError(t, empty.Launch([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, Stream{}, nil))

		// A kernel's registers bound its block (fake_heavy: 96 per thread,
		// so 21 warps in 64K registers).
		heavy, err := m.Function("fake_heavy")
		require.NoError(t, err)
		for attr, want := range map[FuncAttribute]int{FuncMaxThreadsPerBlock: 672, FuncNumRegs: 96, FuncLocalSizeBytes: 0} {
			v, err := heavy.Attribute(attr)
			require.NoError(t, err)
			assert.Equal(t, want, v, "attribute %d", attr)
		}
		v, err := empty.Attribute(FuncMaxThreadsPerBlock)
		require.NoError(t, err)
		assert.Equal(t, 1024, v)
		require.NoError(t, heavy.Launch([3]uint32{1, 1, 1}, [3]uint32{672, 1, 1}, 0, Stream{}, nil))
		err = heavy.Launch([3]uint32{1, 1, 1}, [3]uint32{1024, 1, 1}, 0, Stream{}, nil)
		assert.True(t, errors.Is(err, &Error{Code: CodeLaunchOutOfResources}), "%v", err)
		nb, err = heavy.MaxActiveBlocksPerMultiprocessor(1024, 0)
		require.NoError(t, err)
		assert.Zero(t, nb)

		// A kernel fault is reported by the next synchronizing call.
		fault, err := m.Function("fake_fault")
		require.NoError(t, err)
		require.NoError(t, fault.Launch([3]uint32{1, 1, 1}, [3]uint32{1, 1, 1}, 0, Stream{}, nil))
		err = c0.Synchronize()
		require.Error(t, err)
		assert.True(t, IsStickyFault(err))
		var ce *Error
		require.True(t, errors.As(err, &ce))
		assert.Equal(t, Error{Code: 700, Name: "CUDA_ERROR_ILLEGAL_ADDRESS",
			Msg: "an illegal memory access was encountered", Call: "cuCtxSynchronize"}, *ce)
		assert.Equal(t, "cuda: cuCtxSynchronize: CUDA_ERROR_ILLEGAL_ADDRESS (700): an illegal memory access was encountered", err.Error())
		assert.False(t, IsStickyFault(c0.Synchronize()), "(the fake clears it; the real driver would not)")
	})

	t.Run("stream writes", func(t *testing.T) {
		s, err := c0.StreamCreateWithPriority(StreamNonBlocking, StreamPriorityHighest)
		require.NoError(t, err)
		defer s.Destroy()
		buf, err := c0.MemAlloc(8 * 4)
		require.NoError(t, err)
		defer c0.MemFree(buf)
		require.NoError(t, s.WriteValue64(buf, 7))
		addr := []DevicePtr{buf + 8, buf + 16, buf + 24, buf + 8} // the last write to a word wins: in order
		require.NoError(t, s.WriteValues64(addr, []uint64{1, 2, 3, 4}, 0))
		require.NoError(t, s.Synchronize())
		var got [4]uint64
		require.NoError(t, c0.MemcpyDtoH(unsafe.Pointer(&got[0]), buf, len(got)*8))
		assert.Equal(t, [4]uint64{7, 4, 2, 3}, got)
		assert.True(t, errors.Is(s.WriteValues64(addr, []uint64{1}, 0), errs.ErrInvalidArgument), "count mismatch")
		assert.True(t, errors.Is(s.WriteValues64(nil, nil, 0), errs.ErrInvalidArgument), "empty batch")
		big := make([]DevicePtr, MaxBatchWrites+1)
		err = s.WriteValues64(big, make([]uint64, len(big)), 0)
		assert.ErrorContains(t, err, "want the same count in [1, 255]")
	})

	t.Run("stream waits", func(t *testing.T) {
		s, err := c0.StreamCreate(StreamNonBlocking)
		require.NoError(t, err)
		defer s.Destroy()
		buf, err := c0.MemAlloc(8 * 2)
		require.NoError(t, err)
		defer c0.MemFree(buf)
		// every condition already holds, so the fake (synchronous) returns;
		// the write after a wait lands after it, the cyclic >= passes across
		// the wrap
		require.NoError(t, s.MemOps([]MemOp{
			{Op: MemOpWrite64, Addr: buf, Value: 5},
			{Op: MemOpWait64, Flags: WaitGEQ, Addr: buf, Value: 5},
			{Op: MemOpWait64, Flags: WaitEQ, Addr: buf, Value: 5},
			{Op: MemOpWait64, Flags: WaitAND, Addr: buf, Value: 4},
			{Op: MemOpWait64, Flags: WaitNOR, Addr: buf, Value: 2},
			{Op: MemOpWrite64, Addr: buf + 8, Value: 1<<64 - 1},
			{Op: MemOpWait64, Flags: WaitGEQ, Addr: buf + 8, Value: 1<<64 - 2},
			{Op: MemOpWrite64, Flags: WriteValueNoMemoryBarrier, Addr: buf + 8, Value: 1},
			{Op: MemOpWait64, Flags: WaitGEQ, Addr: buf + 8, Value: 1<<64 - 2},
		}))
		require.NoError(t, s.Synchronize())
		var got [2]uint64
		require.NoError(t, c0.MemcpyDtoH(unsafe.Pointer(&got[0]), buf, 16))
		assert.Equal(t, [2]uint64{5, 1}, got)
		// a wait releases once another thread writes the word
		done := make(chan error, 1)
		go func() { done <- s.MemOps([]MemOp{{Op: MemOpWait64, Flags: WaitGEQ, Addr: buf, Value: 9}}) }()
		select {
		case err := <-done:
			t.Fatalf("the wait for 9 returned before the word held it: %v", err)
		case <-time.After(50 * time.Millisecond):
		}
		s2, err := c0.StreamCreate(StreamNonBlocking)
		require.NoError(t, err)
		defer s2.Destroy()
		require.NoError(t, s2.MemOps([]MemOp{{Op: MemOpWrite64, Addr: buf, Value: 9}}))
		require.NoError(t, <-done)
		assert.ErrorIs(t, s.MemOps(nil), errs.ErrInvalidArgument)
		assert.ErrorContains(t, s.MemOps(make([]MemOp, MaxBatchWrites+1)), "want [1, 255]")
		var ce *Error
		require.True(t, errors.As(s.MemOps([]MemOp{{Op: 99, Addr: buf}}), &ce), "an unknown operation")
		assert.Equal(t, CodeInvalidValue, ce.Code)
	})

	t.Run("events", func(t *testing.T) {
		s, err := c0.StreamCreate(StreamDefault)
		require.NoError(t, err)
		defer s.Destroy()
		e0, err := c0.EventCreate(EventDefault)
		require.NoError(t, err)
		e1, err := c0.EventCreate(EventBlockingSync)
		require.NoError(t, err)
		_, err = EventElapsedTime(e0, e1)
		assert.True(t, errors.Is(err, &Error{Code: CodeNotReady}), "%v", err)
		require.NoError(t, e0.Record(s))
		require.NoError(t, e1.Record(s))
		require.NoError(t, e1.Synchronize())
		d, err := EventElapsedTime(e0, e1)
		require.NoError(t, err)
		assert.Equal(t, 1500*time.Microsecond, d)
		require.NoError(t, e0.Destroy())
		require.NoError(t, e1.Destroy())
		assert.ErrorIs(t, Stream{}.Synchronize(), errs.ErrInvalidArgument)
	})

	t.Run("release", func(t *testing.T) {
		c, err := Device(0).RetainPrimary()
		require.NoError(t, err)
		require.NoError(t, c.Do(func() error { return nil })) // start the worker
		require.NoError(t, c.Release())
		require.NoError(t, c.Release(), "twice is a no-op")
		_, err = c.MemAlloc(8)
		assert.True(t, errors.Is(err, ErrReleased), "%v", err)
		assert.True(t, errors.Is(c.Do(func() error { return nil }), ErrReleased))
		require.NoError(t, c0.Release())
	})
}

func TestSetContextFailureNamesCall(t *testing.T) {
	err := checkSlow(201|0x40000000, "cuMemAlloc_v2")
	var ce *Error
	require.True(t, errors.As(err, &ce))
	assert.Equal(t, "cuCtxSetCurrent (before cuMemAlloc_v2)", ce.Call)
	assert.Equal(t, CodeInvalidContext, ce.Code)
}
