package cudatr

import (
	"unsafe"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/transport"
)

// copyPTX is one kernel, goshmemi_host_copy(dst, src, n): the threads of
// one block copy n bytes from src to dst (device, peer-mapped or mapped
// pinned host addresses), then membar.sys. The soft NIC's accesses to GPU
// heaps use it on the non-blocking Stream: a cuMemcpy on the legacy stream
// would wait for the very kernel that is waiting for the NIC.
// Ref: PTX ISA 7.0 (ld/st.global, membar).
const copyPTX = `.version 7.0
.target sm_70
.address_size 64

.visible .entry goshmemi_host_copy(.param .u64 pd, .param .u64 ps, .param .u64 pn)
{
	.reg .b64 %rd<8>;
	.reg .b32 %r<3>;
	.reg .b16 %h;
	.reg .pred %p;
	ld.param.u64 %rd0, [pd];
	ld.param.u64 %rd1, [ps];
	ld.param.u64 %rd2, [pn];
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, %ntid.x;
	cvt.u64.u32 %rd3, %r0;
	cvt.u64.u32 %rd4, %r1;
LOOP:
	setp.ge.u64 %p, %rd3, %rd2;
	@%p bra DONE;
	add.u64 %rd5, %rd1, %rd3;
	ld.volatile.global.u8 %h, [%rd5];
	add.u64 %rd6, %rd0, %rd3;
	st.volatile.global.u8 [%rd6], %h;
	add.u64 %rd3, %rd3, %rd4;
	bra LOOP;
DONE:
	membar.sys;
	ret;
}
`

const nicStageBytes = 1 << 20

// HeapRegion is PE pe's GPU heap as the soft NIC's memory region
// (ibgda.Region): copies through a mapped pinned staging buffer by a copy
// kernel, and 8-byte atomics by the host-atomics kernels, all on the
// non-blocking Stream. The NIC is an EMULATION (GOSHMEM_IBGDA_NIC=soft).
type HeapRegion struct {
	t  *Transport
	pe int
}

// HeapRegion returns PE pe's heap (reachable from this GPU) as a region.
func (t *Transport) HeapRegion(pe int) (HeapRegion, error) {
	if pe < 0 || pe >= t.npes {
		return HeapRegion{}, errs.New(errs.ErrPEOutOfRange, t.me, "soft NIC", "PE %d not in [0, %d)", pe, t.npes)
	}
	if t.peers[pe] == 0 {
		return HeapRegion{}, errs.New(errs.ErrNotSupported, t.me, "soft NIC", "the GPU heap of PE %d is not reachable from this GPU", pe)
	}
	return HeapRegion{t: t, pe: pe}, nil
}

func (t *Transport) ensureCopy() error {
	if t.copyFn != nil {
		return nil
	}
	m, err := t.Ctx.ModuleLoadData([]byte(copyPTX))
	if err != nil {
		return errs.Wrap(err, t.me, "soft NIC", "loading the copy PTX module")
	}
	f, err := m.Function("goshmemi_host_copy")
	if err != nil {
		return err
	}
	if t.nicStage, err = t.Ctx.MemHostAlloc(nicStageBytes, cuda.HostAllocPortable|cuda.HostAllocDeviceMap); err != nil {
		return err
	}
	if t.nicStageD, err = t.Ctx.MemHostGetDevicePointer(t.nicStage); err != nil {
		return err
	}
	t.copyMod, t.copyFn = m, f
	return nil
}

// copyDev copies n bytes src -> dst (device addresses) with the copy kernel
// and waits for it. Caller holds t.mu.
func (t *Transport) copyDev(dst, src cuda.DevicePtr, n int) error {
	t.args.Reset().Ptr(dst).Ptr(src).U64(uint64(n))
	if err := t.copyFn.Launch([3]uint32{1, 1, 1}, [3]uint32{256, 1, 1}, 0, t.Stream, &t.args); err != nil {
		return err
	}
	return t.Stream.Synchronize()
}

// ReadAt implements ibgda.Region.
func (h HeapRegion) ReadAt(dst []byte, off uint64) error {
	t := h.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ensureCopy(); err != nil {
		return err
	}
	stage := unsafe.Slice((*byte)(t.nicStage), nicStageBytes)
	for done := 0; done < len(dst); {
		n := min(len(dst)-done, nicStageBytes)
		if err := t.copyDev(t.nicStageD, t.peers[h.pe]+cuda.DevicePtr(off)+cuda.DevicePtr(done), n); err != nil {
			return errs.Wrap(err, t.me, "soft NIC", "read from the GPU heap of PE %d", h.pe)
		}
		copy(dst[done:done+n], stage)
		done += n
	}
	return nil
}

// WriteAt implements ibgda.Region.
func (h HeapRegion) WriteAt(src []byte, off uint64) error {
	t := h.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ensureCopy(); err != nil {
		return err
	}
	stage := unsafe.Slice((*byte)(t.nicStage), nicStageBytes)
	for done := 0; done < len(src); {
		n := copy(stage, src[done:])
		if err := t.copyDev(t.peers[h.pe]+cuda.DevicePtr(off)+cuda.DevicePtr(done), t.nicStageD, n); err != nil {
			return errs.Wrap(err, t.me, "soft NIC", "write to the GPU heap of PE %d", h.pe)
		}
		done += n
	}
	return nil
}

// Atomic8 implements ibgda.Region: atom.global.sys on the host-order word.
func (h HeapRegion) Atomic8(off uint64, cas bool, swapAdd, compare uint64) (uint64, error) {
	if cas {
		return h.t.Atomic(nil, transport.AMOCompareSwap, 8, h.pe, off, swapAdd, compare)
	}
	return h.t.Atomic(nil, transport.AMOAdd, 8, h.pe, off, swapAdd, 0)
}

// DeviceRegion is device memory of this PE's context outside the heap (a
// buffer registered with shmem.RegisterDevice) as the soft NIC's memory
// region: copies as HeapRegion's, through the staging buffer by the copy
// kernel on the non-blocking Stream. Offsets are from base. It is a local
// region only: its Atomic8 fails (the NIC's atomics target heaps).
type DeviceRegion struct {
	t    *Transport
	base cuda.DevicePtr
}

// DeviceRegion returns the device memory at base as a region.
func (t *Transport) DeviceRegion(base cuda.DevicePtr) DeviceRegion {
	return DeviceRegion{t: t, base: base}
}

// ReadAt implements ibgda.Region.
func (d DeviceRegion) ReadAt(dst []byte, off uint64) error {
	t := d.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ensureCopy(); err != nil {
		return err
	}
	stage := unsafe.Slice((*byte)(t.nicStage), nicStageBytes)
	for done := 0; done < len(dst); {
		n := min(len(dst)-done, nicStageBytes)
		if err := t.copyDev(t.nicStageD, d.base+cuda.DevicePtr(off)+cuda.DevicePtr(done), n); err != nil {
			return errs.Wrap(err, t.me, "soft NIC", "read from the registered GPU buffer at %#x", uint64(d.base))
		}
		copy(dst[done:done+n], stage)
		done += n
	}
	return nil
}

// WriteAt implements ibgda.Region.
func (d DeviceRegion) WriteAt(src []byte, off uint64) error {
	t := d.t
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ensureCopy(); err != nil {
		return err
	}
	stage := unsafe.Slice((*byte)(t.nicStage), nicStageBytes)
	for done := 0; done < len(src); {
		n := copy(stage, src[done:])
		if err := t.copyDev(d.base+cuda.DevicePtr(off)+cuda.DevicePtr(done), t.nicStageD, n); err != nil {
			return errs.Wrap(err, t.me, "soft NIC", "write to the registered GPU buffer at %#x", uint64(d.base))
		}
		done += n
	}
	return nil
}

// Atomic8 implements ibgda.Region: refused (a local region).
func (d DeviceRegion) Atomic8(uint64, bool, uint64, uint64) (uint64, error) {
	return 0, errs.New(errs.ErrNotSupported, d.t.me, "soft NIC", "an atomic on the registered GPU buffer at %#x (a local region)", uint64(d.base))
}

// PrimeSoftNIC loads the soft NIC's copy kernel and the atomic kernels it
// uses (8-byte compare-swap and fetch-add) and launches each once, at Init,
// before any user kernel runs. Loading a module or lazily loading a kernel
// (CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2) may wait for the
// GPU to go idle, which never happens while a user kernel spins waiting for
// the NIC: the first NIC operation would deadlock (the device suite over
// ibgda hangs in its first put without this). The launches change
// nothing: a copy of the staging buffer onto itself, a compare-swap 0 -> 0
// and an add of 0 on this PE's first control word.
func (t *Transport) PrimeSoftNIC() error {
	t.mu.Lock()
	err := t.ensureCopy()
	if err == nil {
		err = t.copyDev(t.nicStageD, t.nicStageD, 8)
	}
	t.mu.Unlock()
	if err != nil {
		return errs.Wrap(err, t.me, "Init", "priming the soft NIC's copy kernel")
	}
	if _, err := t.Atomic(nil, transport.AMOCompareSwap, 8, t.me, 0, 0, 0); err != nil {
		return errs.Wrap(err, t.me, "Init", "priming the soft NIC's compare-swap kernel")
	}
	if _, err := t.Atomic(nil, transport.AMOAdd, 8, t.me, 0, 0, 0); err != nil {
		return errs.Wrap(err, t.me, "Init", "priming the soft NIC's fetch-add kernel")
	}
	return nil
}
