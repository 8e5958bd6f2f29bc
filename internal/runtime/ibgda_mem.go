package runtime

import (
	"encoding/binary"
	"sync"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/ibgda"
)

// What an IBGDA NIC (the soft NIC, ibgda_soft.go; a ConnectX,
// ibgda_mlx5.go) does with memory after Init, the same way for both: a
// buffer registered with RegisterDevice gets an lkey and a slot in the
// device's table (goshmemi_ibgda_regs_t), so the device API reads from and
// writes into it in place; a heap that grows gets keys that cover the new
// chunks before any kernel may address them (the GrowHook).

// ibgdaNIC is how an IBGDA backend registers memory with its NIC.
type ibgdaNIC interface {
	// regBuffer registers [addr, addr+bytes), GPU memory of this PE outside
	// the heap, as the local side of WQEs (table slot slot): its lkey, and
	// how to deregister it.
	regBuffer(addr, bytes uint64, slot int) (uint32, func() error, error)
	// regHeap registers this PE's heap up to size bytes, and whatever else
	// the NIC needs to reach every peer's heap up to size.
	regHeap(size uint64) (heapKeys, error)
}

// heapKeys are the keys of a heap registered up to some size (regHeap).
type heapKeys struct {
	lkey uint32 // this PE's heap as the local side
	// publish is the key this PE sends its peers for its heap (a
	// ConnectX's rkey; 0 for the soft NIC, whose keys are all local)
	publish uint32
	// rkey is the key this PE's WQEs name for pe's heap, which published
	// for it
	rkey    func(pe int, published uint32) uint32
	release func() error
}

// ibgdaMem is one PE's IBGDA memory state after Init.
type ibgdaMem struct {
	r   *Runtime
	ctx *cuda.Context
	nic ibgdaNIC
	// device addresses: the IBGDA state, the QPs' lkey table (one entry)
	// and the rkey table (one per PE, the state's too), the buffer table
	state, lkeyTab, rkeyTab, regs uint64
	remote                        []int // PEs with QPs

	mu    sync.Mutex
	slots [ibgda.MaxRegs]func() error // release of each slot's buffer; nil: free
	n     int                         // slots [0, n) may be in use (the table's n)
	// grown: releases of the keys made for the grown heap (newest last);
	// size: the heap size the current keys cover
	grown []func() error
	size  uint64
}

// register enters [addr, addr+bytes) in the NIC and the device's table;
// it returns the slot for unregister.
func (m *ibgdaMem) register(addr, bytes uint64) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	slot := -1
	for i, rel := range m.slots {
		if rel == nil {
			slot = i
			break
		}
	}
	if slot < 0 {
		return -1, errs.Hint(errs.ErrNotSupported, "Free registered arrays that are no longer used", m.r.Me, "RegisterDevice",
			"the IBGDA table of registered buffers is full (%d buffers)", ibgda.MaxRegs)
	}
	lkey, release, err := m.nic.regBuffer(addr, bytes, slot)
	if err != nil {
		return -1, err
	}
	// lkey, base, then end, then the scan bound: the device reads end,
	// base, lkey and end again (goshmemi_ibgdab_reg_lkey), so a base it
	// reads comes with its lkey, and a buffer that stays registered is
	// found with its own lkey while another slot is refilled once (more
	// refills within one lookup are not covered yet: docs/gpu.md)
	e := m.regs + ibgda.RegsOffReg + uint64(slot)*ibgda.RegSize
	var b [ibgda.RegSize]byte
	binary.LittleEndian.PutUint64(b[ibgda.RegOffBase:], addr)
	binary.LittleEndian.PutUint32(b[ibgda.RegOffLKey:], lkey)
	err = m.write(e+ibgda.RegOffLKey, b[ibgda.RegOffLKey:ibgda.RegOffLKey+4])
	if err == nil {
		err = m.write(e+ibgda.RegOffBase, b[ibgda.RegOffBase:ibgda.RegOffBase+8])
	}
	if err == nil {
		err = m.write(e+ibgda.RegOffEnd, binary.LittleEndian.AppendUint64(nil, addr+bytes))
	}
	if err == nil && slot >= m.n {
		if err = m.write(m.regs+ibgda.RegsOffN, binary.LittleEndian.AppendUint32(nil, uint32(slot+1))); err == nil {
			m.n = slot + 1
		}
	}
	if err != nil {
		_ = m.write(e+ibgda.RegOffEnd, make([]byte, 8))
		return -1, errors.Join(errs.Wrap(err, m.r.Me, "RegisterDevice", "the IBGDA table of registered buffers"), release())
	}
	m.slots[slot] = release
	return slot, nil
}

// unregister clears slot in the device's table (end first: no lookup
// matches it from then on), then deregisters the buffer from the NIC.
func (m *ibgdaMem) unregister(slot int) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if slot < 0 || slot >= len(m.slots) || m.slots[slot] == nil {
		return errs.New(errs.ErrInvalidArgument, m.r.Me, "Free", "IBGDA registered-buffer slot %d is not in use", slot)
	}
	release := m.slots[slot]
	m.slots[slot] = nil
	err := m.write(m.regs+ibgda.RegsOffReg+uint64(slot)*ibgda.RegSize+ibgda.RegOffEnd, make([]byte, 8))
	return errors.Join(err, release())
}

// grow is the GrowHook: keys that cover the heap up to size on every PE.
// Each PE registers its part (regHeap) and sends the key its peers name;
// once every PE succeeded, the device's rkey table, lkey and heap size
// (in that order: a kernel that sees the new size finds keys that cover
// it) take the new keys. The old keys stay registered until Close: WQEs
// posted before may still name them, within the range they cover.
func (m *ibgdaMem) grow(size uint64, exchange func([]byte) ([][]byte, error)) error {
	r := m.r
	if size <= m.size {
		return nil // every PE's keys cover it (they follow the same sizes)
	}
	k, lerr := m.nic.regHeap(size)
	var rec [8]byte
	if lerr == nil {
		rec[0] = 1
		binary.LittleEndian.PutUint32(rec[4:], k.publish)
	}
	all, bad, err := everyOK(exchange, rec[:])
	if err == nil && lerr == nil && bad >= 0 {
		err = errs.New(errs.ErrNotSupported, r.Me, "AllocDevice",
			"PE %d could not register its grown GPU heap (%d bytes) with its IBGDA NIC (its own error says why)", bad, size)
	}
	if lerr != nil || err != nil {
		if lerr == nil {
			err = errors.Join(err, k.release())
		}
		return errors.Join(lerr, err)
	}
	// the device state, then every PE's outcome of it: a PE that could not
	// update its state fails the growth on every PE (the GrowHook's
	// contract), so that every PE's AllocDevice fails and its heap keeps
	// its size
	wrote, werr := m.setKeys(k, all, size)
	var st [8]byte
	if werr == nil {
		st[0] = 1
	}
	_, bad, xerr := everyOK(exchange, st[:])
	if werr == nil && xerr == nil && bad >= 0 {
		xerr = errs.New(nil, r.Me, "AllocDevice",
			"PE %d could not update its IBGDA device state for the grown GPU heap (%d bytes) (its own error says why)", bad, size)
	}
	if werr != nil || xerr != nil {
		if !wrote {
			return errors.Join(werr, xerr, k.release())
		}
		// the device may hold the new keys already: keep them registered
		m.grown = append(m.grown, k.release)
		return errors.Join(werr, xerr)
	}
	m.grown = append(m.grown, k.release)
	m.size = size
	return nil
}

// everyOK exchanges rec, whose first byte is 1 where this PE's step
// succeeded, and returns every PE's record and the first PE whose step
// failed (-1: none).
func everyOK(exchange func([]byte) ([][]byte, error), rec []byte) ([][]byte, int, error) {
	all, err := exchange(rec)
	if err != nil {
		return nil, -1, err
	}
	for pe, got := range all {
		if len(got) != len(rec) || got[0] != 1 {
			return all, pe, nil
		}
	}
	return all, -1, nil
}

// setKeys writes the grown heap's keys k (all: every PE's published
// record) and size to the device state: the rkey table, the lkey, the
// heap size, in that order. wrote: whether anything was written.
func (m *ibgdaMem) setKeys(k heapKeys, all [][]byte, size uint64) (wrote bool, err error) {
	r := m.r
	rkeys := make([]byte, 4*r.NPEs)
	if err := m.read(m.rkeyTab, rkeys); err != nil {
		return false, errs.Wrap(err, r.Me, "AllocDevice", "the IBGDA rkey table")
	}
	for _, pe := range m.remote {
		binary.LittleEndian.PutUint32(rkeys[4*pe:], k.rkey(pe, binary.LittleEndian.Uint32(all[pe][4:])))
	}
	lkey := binary.LittleEndian.AppendUint32(nil, k.lkey)
	err = m.write(m.rkeyTab, rkeys)
	if err == nil {
		err = m.write(m.lkeyTab, lkey)
	}
	if err == nil {
		err = m.write(m.state+ibgda.StateOffLKey, lkey)
	}
	if err == nil {
		err = m.write(m.state+ibgda.StateOffHeapSize, binary.LittleEndian.AppendUint64(nil, size))
	}
	if err != nil {
		return true, errs.Wrap(err, r.Me, "AllocDevice", "the IBGDA device state of the grown GPU heap")
	}
	return true, nil
}

// close deregisters every registered buffer and grown-heap key (before
// the NIC closes).
func (m *ibgdaMem) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var list []error
	for i, rel := range m.slots {
		if rel != nil {
			list = append(list, rel())
			m.slots[i] = nil
		}
	}
	for i := len(m.grown) - 1; i >= 0; i-- {
		list = append(list, m.grown[i]())
	}
	m.grown = nil
	return errors.Join(list...)
}

func (m *ibgdaMem) write(dev uint64, b []byte) error {
	return m.ctx.MemcpyHtoD(cuda.DevicePtr(dev), unsafe.Pointer(&b[0]), len(b))
}

func (m *ibgdaMem) read(dev uint64, b []byte) error {
	return m.ctx.MemcpyDtoH(unsafe.Pointer(&b[0]), cuda.DevicePtr(dev), len(b))
}
