package runtime

import (
	"fmt"
	"sync"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
)

// devRegistry holds this PE's registered GPU buffers: device memory that
// another library allocated (a framework's tensor, a cuBLAS workspace),
// usable as the local side of the GPU calls. Registration is local to the
// PE (Ref: NVSHMEM nvshmemx_buffer_register): no peer learns of it, so a
// registered buffer is never the remote side of an operation. The remote
// GPU transport of this PE learns of it, so that its device paths use the
// buffer in place: the GPU proxy enters it in its table (its workers copy
// from and to it), IBGDA registers it with the NIC (an lkey) and enters it
// in the device's table.
type devRegistry struct {
	mu   sync.Mutex
	regs map[uint64]devReg // start address -> registration
}

// devReg is one registered buffer: its length and its slots in the remote
// GPU transport's tables (-1: none).
type devReg struct {
	bytes              uint64
	proxySlot, nicSlot int
}

// ibgdaMem is this PE's IBGDA memory state, nil without IBGDA.
func (r *Runtime) ibgdaMem() *ibgdaMem {
	switch {
	case r.softNIC != nil:
		return r.softNIC.mem
	case r.mlx5 != nil:
		return r.mlx5.mem
	}
	return nil
}

// registerHint is what a caller of RegisterDevice can fix.
const registerHint = "register GPU memory of this PE's device that another library allocated (cudaMalloc, cuMemAlloc); AllocDevice arrays need no registration"

// RegisterDevice records [addr, addr+bytes) as a registered GPU buffer of
// this PE. It checks that the range is device memory of this PE's GPU
// context, inside one allocation, outside the symmetric GPU heap and
// outside every buffer registered before, then enters it with the remote
// GPU transport (the proxy's table; IBGDA's NIC and table), whose errors
// it returns. op names the call in errors.
func (r *Runtime) RegisterDevice(addr, bytes uint64, op string) error {
	if err := r.NeedGPU(op); err != nil {
		return err
	}
	g := r.GPU
	end := addr + bytes
	if end < addr {
		return errs.New(errs.ErrInvalidArgument, r.Me, op, "range [%#x, +%d bytes) wraps around the address space", addr, bytes)
	}
	// every heap mapped here is symmetric memory: this PE's (with CUDA VMM
	// its whole reservation, where chunks are mapped ahead of need) and
	// each node peer's view (device memory of this context to the driver)
	for pe := 0; pe < r.NPEs; pe++ {
		b, n := g.HeapView(pe)
		if base := uint64(b); n != 0 && addr < base+n && base < end {
			whose := "this PE's symmetric GPU heap"
			if pe != r.Me {
				whose = fmt.Sprintf("the symmetric GPU heap of PE %d, mapped here", pe)
			}
			return errs.Hint(errs.ErrInvalidArgument, registerHint, r.Me, op,
				"range [%#x, %#x) overlaps %s [%#x, %#x)", addr, end, whose, base, base+n)
		}
	}
	a, err := g.Ctx.AllocationOf(cuda.DevicePtr(addr))
	if err != nil {
		return errors.WithHint(errs.Wrap(errs.Mark(err, errs.ErrInvalidArgument), r.Me, op,
			"address %#x is not GPU memory the CUDA driver knows", addr), registerHint)
	}
	switch {
	case a.Type != cuda.MemoryTypeDevice:
		return errs.Hint(errs.ErrInvalidArgument, registerHint, r.Me, op,
			"address %#x is not device memory (CUDA memory type %d)", addr, int(a.Type))
	case !a.Mine:
		return errs.Hint(errs.ErrInvalidArgument, registerHint, r.Me, op,
			"address %#x belongs to another GPU context than this PE's (device %d)", addr, int(g.Dev))
	case end > uint64(a.Start)+a.Size:
		return errs.Hint(errs.ErrInvalidArgument, registerHint, r.Me, op,
			"range [%#x, %#x) runs past its allocation [%#x, %#x)", addr, end, uint64(a.Start), uint64(a.Start)+a.Size)
	}
	reg := &r.gpuState.regs
	reg.mu.Lock()
	defer reg.mu.Unlock()
	for s, d := range reg.regs {
		if addr < s+d.bytes && s < end {
			return errs.Hint(errs.ErrInvalidArgument, "free the earlier registration first, or use its array", r.Me, op,
				"range [%#x, %#x) overlaps the registered buffer [%#x, %#x)", addr, end, s, s+d.bytes)
		}
	}
	d := devReg{bytes: bytes, proxySlot: -1, nicSlot: -1}
	if r.proxy != nil {
		if d.proxySlot, err = r.proxy.Register(addr, bytes); err != nil {
			return err
		}
	}
	if m := r.ibgdaMem(); m != nil {
		if d.nicSlot, err = m.register(addr, bytes); err != nil {
			return errors.Join(err, r.unregisterRemote(devReg{bytes: bytes, proxySlot: d.proxySlot, nicSlot: -1}))
		}
	}
	if reg.regs == nil {
		reg.regs = map[uint64]devReg{}
	}
	reg.regs[addr] = d
	return nil
}

// UnregisterDevice forgets the registered buffer that starts at addr and
// takes it out of the remote GPU transport's tables. No call using it may
// be in flight (its stream work done). The memory stays its owner's.
func (r *Runtime) UnregisterDevice(addr uint64, op string) error {
	reg := &r.gpuState.regs
	reg.mu.Lock()
	defer reg.mu.Unlock()
	d, ok := reg.regs[addr]
	if !ok {
		return errs.Hint(errs.ErrInvalidArgument, "unregister each buffer once", r.Me, op,
			"no registered GPU buffer starts at %#x", addr)
	}
	delete(reg.regs, addr)
	return errs.Wrap(r.unregisterRemote(d), r.Me, op, "the registered GPU buffer at %#x", addr)
}

// unregisterRemote takes d out of the proxy's and IBGDA's tables.
func (r *Runtime) unregisterRemote(d devReg) error {
	var list []error
	if d.nicSlot >= 0 {
		if m := r.ibgdaMem(); m != nil {
			list = append(list, m.unregister(d.nicSlot))
		}
	}
	if d.proxySlot >= 0 && r.proxy != nil {
		list = append(list, r.proxy.Unregister(d.proxySlot))
	}
	return errors.Join(list...)
}

// RegisteredDevice is the length of the registered buffer that starts at
// addr, and whether there is one.
func (r *Runtime) RegisteredDevice(addr uint64) (uint64, bool) {
	reg := &r.gpuState.regs
	reg.mu.Lock()
	defer reg.mu.Unlock()
	d, ok := reg.regs[addr]
	return d.bytes, ok
}
