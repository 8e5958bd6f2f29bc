package e2e

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/cgo/verbs"
	"github.com/goshmem/goshmem/internal/ibgda"
)

// cpuAssisted wires bkEnv's QPs for the CPU-assisted doorbell mode
// (GOSHMEM_IBGDA_DOORBELL=cpu): the posting threads' doorbell stores still
// go to their own doorbell words, which nothing reads; an ibgda.Ringer
// watches each QP's doorbell record and stores the doorbell into a separate
// UAR stand-in with verbs.Ring (the store a ConnectX's UAR gets), and the
// soft NIC is doorbell-driven: it executes only what that stand-in
// announces. fault, when set, wraps the Ringer's store.
func cpuAssisted(t *testing.T, e *bkEnv, fault func(store func(uint64), v uint64)) (*ibgda.SoftNIC, *ibgda.Ringer) {
	nic := ibgda.NewSoftNIC()
	nic.SetAtomicHostEndian(true)
	var rqs []ibgda.RingQP
	for pe := 0; pe < bkPEs; pe++ {
		require.NoError(t, nic.RegisterMR(bkHeapKey(pe), e.heap(pe), ibgda.AccessAll))
		require.NoError(t, nic.RegisterMR(bkSlotKey(pe), e.slots(pe), ibgda.AccessLocalRead|ibgda.AccessLocalWrite))
		for c := 0; c < bkCtx; c++ {
			cfg := e.qpConfig(pe, c)
			posterDB := cfg.DB
			uarWords := make([]uint64, 1) // the UAR stand-in (Go memory never moves)
			cfg.DB = unsafe.Slice((*byte)(unsafe.Pointer(&uarWords[0])), 8)
			require.NotEqual(t, uintptr(unsafe.Pointer(&posterDB[0])), uintptr(unsafe.Pointer(&cfg.DB[0])))
			cfg.DoorbellDriven = true
			require.NoError(t, nic.AddQP(cfg))
			// the store a ConnectX gets (fence, 8-byte store, WC flush)
			store := func(v uint64) { verbs.Ring(uintptr(unsafe.Pointer(&uarWords[0])), v) }
			ring := store
			if fault != nil {
				ring = func(v uint64) { fault(store, v) }
			}
			rqs = append(rqs, ibgda.RingQP{QPN: cfg.QPN, DBRec: cfg.DBRec, Ring: ring})
		}
	}
	ringer, err := ibgda.NewRinger(rqs)
	require.NoError(t, err)
	nic.Start()
	ringer.Start()
	t.Cleanup(func() { ringer.Stop(); nic.Stop() })
	return nic, ringer
}

// The device API (2 PEs as threads, every call of the IBGDA backend) with
// CPU-assisted doorbells: same results as with thread-rung doorbells, and
// the NIC saw only good doorbells, all from the ringer.
func TestDeviceAPIOverIBGDACPUAssisted(t *testing.T) {
	e, err := newBkEnv(64, 16)
	require.NoError(t, err)
	defer e.free()
	nic, ringer := cpuAssisted(t, e, nil)
	require.NoError(t, e.runDevAPI())
	for pe := 0; pe < bkPEs; pe++ {
		assert.Equal(t, uint64(8), binary.LittleEndian.Uint64(e.heap(pe)[bkSig:]), "PE %d: signal word", pe)
		assert.Equal(t, uint64(1000+1-pe), binary.LittleEndian.Uint64(e.heap(pe)[bkW8:]), "PE %d: long AMO word", pe)
	}
	require.NoError(t, nic.Err())
	assert.Zero(t, nic.Stats().ErrCQEs.Load(), "error CQEs")
	assert.Zero(t, nic.Stats().BadDoorbells.Load(), "bad doorbells")
	assert.NotZero(t, ringer.Rings())
	assert.LessOrEqual(t, nic.Stats().Doorbells.Load(), ringer.Rings(), "the NIC saw only the ringer's doorbells")
}

// A ringer that stops ringing is caught: the put's quiet times out
// (GOSHMEMI_ERR_IBGDA_TIMEOUT) with the report naming the QP.
func TestCPUAssistedSilentRingerTimesOut(t *testing.T) {
	e, err := newBkEnv(64, 16)
	require.NoError(t, err)
	defer e.free()
	nic, ringer := cpuAssisted(t, e, func(func(uint64), uint64) {})
	code, w := e.timeoutRun(uint64(50 * time.Millisecond))
	require.Equal(t, errIBGDATimeout, code, "trap code")
	r, ok := ibgda.DecodeReport(w)
	require.True(t, ok)
	assert.Equal(t, e.qpn(0, 0), r.QPN)
	assert.NotZero(t, ringer.Rings(), "the ringer was asked to ring")
	assert.Zero(t, nic.Stats().WQEs.Load(), "nothing executes without a doorbell")
}
