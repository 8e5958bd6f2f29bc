package e2e

import (
	"encoding/binary"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ibgda"
)

// Two PEs as threads of one process call the IBGDA backend's six functions
// (put, get, amo, put_signal, fence, quiet: what the device API's remote
// dispatch calls for a PE with heap_base == 0) against one SoftNIC in
// host-endian atomic mode. The C side (backend.c) asserts every returned
// value and the target memory; here the final words are checked again.
func TestBackendTwoPEs(t *testing.T) {
	require.Equal(t, uintptr(ibgda.StateStructSize), bkStateSize(), "goshmemi_ibgda_state_t size")
	for _, tc := range []struct {
		name    string
		sq, cq  uint32
		regions bool
	}{
		{"rings-64-16", 64, 16, false},
		{"tiny-rings-16-4", 16, 4, false},
		// the heaps reached through ibgda.Region (copies and word atomics),
		// as the GPU soft NIC reaches GPU heaps through the cuda transport
		{"heaps-as-regions", 64, 16, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := newBkEnv(tc.sq, tc.cq)
			require.NoError(t, err)
			defer e.free()
			nic := ibgda.NewSoftNIC()
			nic.SetAtomicHostEndian(true)
			for pe := 0; pe < bkPEs; pe++ {
				if tc.regions {
					h := e.heap(pe)
					require.NoError(t, nic.RegisterRegion(bkHeapKey(pe), uint64(uintptr(unsafe.Pointer(&h[0]))),
						uint64(len(h)), byteRegion(h), ibgda.AccessAll))
				} else {
					require.NoError(t, nic.RegisterMR(bkHeapKey(pe), e.heap(pe), ibgda.AccessAll))
				}
				require.NoError(t, nic.RegisterMR(bkSlotKey(pe), e.slots(pe),
					ibgda.AccessLocalRead|ibgda.AccessLocalWrite))
				for c := 0; c < bkCtx; c++ {
					require.NoError(t, nic.AddQP(e.qpConfig(pe, c)))
				}
			}
			nic.Start()
			runErr := e.run()
			nic.Stop()
			require.NoError(t, runErr)
			for pe := 0; pe < bkPEs; pe++ {
				h := e.heap(pe)
				le := binary.LittleEndian
				assert.Equal(t, uint64(8), le.Uint64(h[bkSig:]), "PE %d: signal word (host order) after SET 5, ADD 3", pe)
				assert.Equal(t, uint64(0x55+1-pe), le.Uint64(h[bkW8:]), "PE %d: 8-byte AMO word", pe)
				assert.Equal(t, uint64(9<<32|3), le.Uint64(h[bkW4:]), "PE %d: 4-byte AMO words", pe)
			}
			assert.Zero(t, nic.Stats().ErrCQEs.Load(), "error CQEs")
			assert.NotZero(t, nic.Stats().WQEs.Load())
		})
	}
}

// The device API itself (goshmem_putmem/_getmem/_p/_g/atomics/
// putmem_signal/signal_wait_until/fence/quiet/ctx_quiet) with the peer's
// heap_base 0 and remote_transport IBGDA: remote.h routes every call to the
// backend, the SoftNIC executes the WQEs.
func TestDeviceAPIOverIBGDA(t *testing.T) {
	e, err := newBkEnv(64, 16)
	require.NoError(t, err)
	defer e.free()
	nic := ibgda.NewSoftNIC()
	nic.SetAtomicHostEndian(true)
	for pe := 0; pe < bkPEs; pe++ {
		require.NoError(t, nic.RegisterMR(bkHeapKey(pe), e.heap(pe), ibgda.AccessAll))
		require.NoError(t, nic.RegisterMR(bkSlotKey(pe), e.slots(pe), ibgda.AccessLocalRead|ibgda.AccessLocalWrite))
		for c := 0; c < bkCtx; c++ {
			require.NoError(t, nic.AddQP(e.qpConfig(pe, c)))
		}
	}
	nic.Start()
	runErr := e.runDevAPI()
	nic.Stop()
	require.NoError(t, runErr)
	for pe := 0; pe < bkPEs; pe++ {
		assert.Equal(t, uint64(8), binary.LittleEndian.Uint64(e.heap(pe)[bkSig:]), "PE %d: signal word", pe)
		assert.Equal(t, uint64(1000+1-pe), binary.LittleEndian.Uint64(e.heap(pe)[bkW8:]), "PE %d: long AMO word", pe)
	}
	assert.Zero(t, nic.Stats().ErrCQEs.Load(), "error CQEs")
	assert.NotZero(t, nic.Stats().WQEs.Load(), "WQEs executed by the soft NIC")
}

// ibgda.EncodeState (the Go host's encoding) read back through the C struct.
func TestStateLayout(t *testing.T) {
	d := ibgda.StateDesc{MyPE: 3, NPEs: 7, NCtx: 2, NQPs: 12, InlineMax: 128, HeapLKey: 0xabc,
		HeapBase: 0x7f0000001000, HeapSize: 1 << 30, QPs: 0x1110, QPIndex: 0x2220, RKey: 0x3330,
		RemoteBase: 0x4440, Slots: 0x5550, SlotBusy: 0x6660, NSlots: 64, SlotLKey: 0xdef, FencePending: 0x7770,
		Flags: ibgda.StateHostQueues, TimeoutNS: 5e9, Report: 0x8880, Regs: 0x9990}
	got := stateFieldsByC(ibgda.EncodeState(d))
	assert.Equal(t, map[string]uint64{
		"version": ibgda.StateVersion, "size": ibgda.StateStructSize, "my_pe": 3, "n_pes": 7, "n_ctx": 2,
		"n_qps": 12, "inline_max": 128, "heap_lkey": 0xabc, "heap_base": 0x7f0000001000, "heap_size": 1 << 30,
		"qps": 0x1110, "qp_index": 0x2220, "rkey": 0x3330, "remote_base": 0x4440, "slots": 0x5550,
		"slot_busy": 0x6660, "n_slots": 64, "slot_lkey": 0xdef, "fence_pending": 0x7770, "slot_cursor": 0,
		"flags": 1, "timeout_ns": 5e9, "report": 0x8880, "regs": 0x9990,
	}, got)
	assert.Equal(t, stateHostQueues, uint32(ibgda.StateHostQueues))
	assert.Equal(t, map[string]uint64{
		"state.heap_lkey": ibgda.StateOffLKey, "state.heap_size": ibgda.StateOffHeapSize,
		"max": ibgda.MaxRegs, "size": ibgda.RegsSize, "n": ibgda.RegsOffN, "reg": ibgda.RegsOffReg,
		"reg.size": ibgda.RegSize, "reg.base": ibgda.RegOffBase, "reg.end": ibgda.RegOffEnd, "reg.lkey": ibgda.RegOffLKey,
	}, regsLayoutByC(), "the registered-buffer table")
}

// byteRegion is an ibgda.Region over process memory: copies, and 8-byte
// atomics on the host-order word.
type byteRegion []byte

func (b byteRegion) ReadAt(dst []byte, off uint64) error {
	copy(dst, b[off:])
	return nil
}

func (b byteRegion) WriteAt(src []byte, off uint64) error {
	copy(b[off:], src)
	return nil
}

func (b byteRegion) Atomic8(off uint64, cas bool, swapAdd, compare uint64) (uint64, error) {
	p := (*uint64)(unsafe.Pointer(&b[off]))
	if !cas {
		return atomic.AddUint64(p, swapAdd) - swapAdd, nil
	}
	for {
		old := atomic.LoadUint64(p)
		if old != compare || atomic.CompareAndSwapUint64(p, old, swapAdd) {
			return old, nil
		}
	}
}

// The NIC never sees the doorbell record (no NIC runs here; on the GPU the
// same happens when the record's store is not visible to the host, or the
// NIC is stuck): with a timeout, the backend's quiet ends with a trap
// (GOSHMEMI_ERR_IBGDA_TIMEOUT) instead of spinning forever, and leaves the
// host a report naming the QP and its indices.
func TestBackendTimeoutWithoutNIC(t *testing.T) {
	e, err := newBkEnv(64, 16)
	require.NoError(t, err)
	defer e.free()
	code, w := e.timeoutRun(uint64(20 * time.Millisecond))
	require.Equal(t, errIBGDATimeout, code, "trap code")
	r, ok := ibgda.DecodeReport(w)
	require.True(t, ok, "report word %#x", w)
	assert.Equal(t, uint8(ibgda.WaitQuiet), r.What)
	assert.Equal(t, e.qpn(0, 0), r.QPN, "the report names PE 0's ctx-0 QP")
	// Detail is published<<16 | completed: the inline put (1 WQEBB) and
	// quiet's signaled NOP (1) published, nothing completed.
	published, completed := uint32(2), uint32(0)
	assert.Equal(t, published<<16|completed, r.Detail)
	assert.Contains(t, r.String(), "never saw the doorbell")
}

// The backend defaults to system-scope doorbell ordering; a kernel built
// with GPU-scope ordering refuses a state whose queues are in host memory
// (the soft NIC's) with GOSHMEMI_ERR_IBGDA_ORDER and a report, instead of
// posting WQEs a host-side NIC may never see; with queues not marked as in
// host memory it posts.
func TestBackendOrderingVsHostQueues(t *testing.T) {
	dflt, gpu := orderOfBuilds()
	assert.Equal(t, 2, dflt, "backend.h's default GOSHMEMI_IBGDA_ORDER (2 = system scope)")
	assert.Equal(t, 1, gpu, "order_gpu.c: GOSHMEM_IBGDA_ORDER_GPU")
	for _, tc := range []struct {
		name     string
		gpuScope bool
		flags    uint32
		code     uint64
	}{
		{"default ordering, host queues", false, stateHostQueues, 0},
		{"GPU-scope ordering, GPU queues", true, 0, 0},
		{"GPU-scope ordering, host queues", true, stateHostQueues, errIBGDAOrder},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := newBkEnv(64, 16)
			require.NoError(t, err)
			defer e.free()
			code, w := e.orderRun(tc.gpuScope, tc.flags)
			assert.Equal(t, tc.code, code)
			r, ok := ibgda.DecodeReport(w)
			if tc.code == 0 {
				assert.False(t, ok, "no report without a trap")
				return
			}
			require.True(t, ok)
			assert.Equal(t, uint8(ibgda.WaitOrder), r.What)
			assert.Contains(t, r.String(), "GOSHMEM_IBGDA_ORDER_GPU")
		})
	}
}
