package ibgda

import (
	"encoding/binary"
	"fmt"
)

// QPStructSize and QPVersion mirror GOSHMEMI_IBGDA_QP_SIZE and
// GOSHMEMI_IBGDA_QP_VERSION (include/goshmem/ibgda/qp.h); tests/ibgda/e2e
// checks EncodeQP against the C struct field by field.
const (
	QPStructSize = 168
	QPVersion    = 1<<16 + QPStructSize
)

// QPDesc is the host-written descriptor part of goshmemi_ibgda_qp_t: every
// address is the one the posting threads use (a device address on the GPU).
type QPDesc struct {
	QPN          uint32
	SQBuf        uint64 // SQWQEBBs * 64 bytes
	SQWQEBBs     uint32 // power of 2, <= MaxWQEBBs
	CQEs         uint32 // power of 2
	DBRec        uint64 // 8 bytes: [RcvDBR], [SndDBR]
	DB           uint64 // the 8-byte doorbell word (UAR, or its stand-in)
	CQBuf        uint64
	CQDBRec      uint64
	ErrWord      uint64 // PE-wide first error word, or 0
	LKeyTab      uint64
	RKeyTab      uint64
	NLKeys       uint32
	NRKeys       uint32
	ScratchLAddr uint64
	ScratchLKey  uint32
	SQNBB        uint64 // SQWQEBBs bytes (GPU memory), or 0
	TimeoutNS    uint64 // a device wait on the QP longer than this traps (GOSHMEM_TIMEOUT); 0: never
}

// EncodeQP returns the goshmemi_ibgda_qp_t bytes for d with every state
// field zero (a fresh QP): write them to the QP's memory before the first
// post.
func EncodeQP(d QPDesc) []byte {
	b := make([]byte, QPStructSize)
	le := binary.LittleEndian
	le.PutUint32(b[0x00:], QPVersion)
	le.PutUint32(b[0x04:], d.QPN)
	le.PutUint64(b[0x08:], d.SQBuf)
	le.PutUint32(b[0x10:], d.SQWQEBBs)
	le.PutUint32(b[0x14:], d.CQEs)
	le.PutUint64(b[0x18:], d.DBRec)
	le.PutUint64(b[0x20:], d.DB)
	le.PutUint64(b[0x28:], d.CQBuf)
	le.PutUint64(b[0x30:], d.CQDBRec)
	le.PutUint64(b[0x38:], d.ErrWord)
	le.PutUint64(b[0x40:], d.LKeyTab)
	le.PutUint64(b[0x48:], d.RKeyTab)
	le.PutUint32(b[0x50:], d.NLKeys)
	le.PutUint32(b[0x54:], d.NRKeys)
	le.PutUint64(b[0x58:], d.ScratchLAddr)
	le.PutUint32(b[0x60:], d.ScratchLKey)
	// 0x64 cq_lock, 0x68..0x97 state: zero
	le.PutUint64(b[0x98:], d.SQNBB)
	le.PutUint64(b[0xa0:], d.TimeoutNS)
	return b
}

// InitCQ marks every CQE of cq invalid (opcode INVALID, owner 0), as
// goshmemi_ibgda_cq_init and the mlx5 driver do at CQ creation.
func InitCQ(cq []byte) {
	for i := CQESize - 1; i < len(cq); i += CQESize {
		cq[i] = CQEInvalid << 4
	}
}

// StateStructSize and StateVersion mirror GOSHMEMI_IBGDA_STATE_SIZE and
// GOSHMEMI_IBGDA_STATE_VERSION (include/goshmem/ibgda/backend.h): the IBGDA
// device state that the device state's ibgda_state names; tests/ibgda/e2e
// checks EncodeState against the C struct field by field.
const (
	StateStructSize = 144
	StateVersion    = 1<<16 + StateStructSize
	// NoQP marks a (ctx, PE) without a QP in StateDesc.QPIndex tables
	// (GOSHMEMI_IBGDA_NO_QP).
	NoQP = 0xffffffff
	// SlotBytes is GOSHMEMI_IBGDA_SLOT_BYTES, one bounce / result slot.
	SlotBytes = 256
)

// The registered-buffer table (goshmemi_ibgda_regs_t, GPU memory, named by
// StateDesc.Regs): a count of slots in use, then MaxRegs slots {base,
// end, lkey} of RegSize bytes from RegsOffReg; end 0 is a free slot.
// tests/ibgda/e2e checks these against the C structs.
const (
	MaxRegs          = 256 // GOSHMEMI_IBGDA_MAX_REGS
	RegsOffN         = 0
	RegsOffReg       = 16
	RegSize          = 24
	RegOffBase       = 0
	RegOffEnd        = 8
	RegOffLKey       = 16
	RegsSize         = RegsOffReg + RegSize*MaxRegs
	StateOffLKey     = 0x1c // heap_lkey, which a growing heap's new key replaces
	StateOffHeapSize = 0x28 // heap_size
)

// StateDesc is the host-written part of goshmemi_ibgda_state_t. Addresses
// are the posting threads' (device addresses on the GPU).
type StateDesc struct {
	MyPE, NPEs   int32
	NCtx, NQPs   uint32
	InlineMax    uint32
	HeapLKey     uint32
	HeapBase     uint64
	HeapSize     uint64
	QPs          uint64 // NQPs goshmemi_ibgda_qp_t, QPStructSize bytes each
	QPIndex      uint64 // NCtx*NPEs uint32: QP index of (ctx, pe), or NoQP
	RKey         uint64 // NPEs uint32
	RemoteBase   uint64 // NPEs uint64
	Slots        uint64 // NSlots*SlotBytes bytes
	SlotBusy     uint64 // NSlots uint32, zeroed
	NSlots       uint32
	SlotLKey     uint32
	FencePending uint64 // NQPs uint32, zeroed
	Flags        uint32 // StateHostQueues, ...
	TimeoutNS    uint64 // GOSHMEM_TIMEOUT for the backend's slot waits; 0: none
	Report       uint64 // host-readable 8-byte report word (ReportWord), zeroed; 0: none
	Regs         uint64 // the registered-buffer table (RegsSize bytes, zeroed); 0: none
}

// StateHostQueues (StateDesc.Flags, GOSHMEMI_IBGDA_STATE_HOST_QUEUES): the
// SQs, doorbell records, doorbells and CQs are in host memory. The device
// backend then requires system-scope doorbell ordering (its default) and
// traps (GOSHMEMI_ERR_IBGDA_ORDER) in a kernel built with
// GOSHMEM_IBGDA_ORDER_GPU or _NONE, whose stores a host-side NIC may never
// see.
const StateHostQueues = 1

// EncodeState returns the goshmemi_ibgda_state_t bytes for d, with the
// device-written words zero.
func EncodeState(d StateDesc) []byte {
	b := make([]byte, StateStructSize)
	le := binary.LittleEndian
	le.PutUint32(b[0x00:], StateVersion)
	le.PutUint32(b[0x04:], StateStructSize)
	le.PutUint32(b[0x08:], uint32(d.MyPE))
	le.PutUint32(b[0x0c:], uint32(d.NPEs))
	le.PutUint32(b[0x10:], d.NCtx)
	le.PutUint32(b[0x14:], d.NQPs)
	le.PutUint32(b[0x18:], d.InlineMax)
	le.PutUint32(b[0x1c:], d.HeapLKey)
	le.PutUint64(b[0x20:], d.HeapBase)
	le.PutUint64(b[0x28:], d.HeapSize)
	le.PutUint64(b[0x30:], d.QPs)
	le.PutUint64(b[0x38:], d.QPIndex)
	le.PutUint64(b[0x40:], d.RKey)
	le.PutUint64(b[0x48:], d.RemoteBase)
	le.PutUint64(b[0x50:], d.Slots)
	le.PutUint64(b[0x58:], d.SlotBusy)
	le.PutUint32(b[0x60:], d.NSlots)
	le.PutUint32(b[0x64:], d.SlotLKey)
	le.PutUint64(b[0x68:], d.FencePending)
	// 0x70 slot_cursor: zero
	le.PutUint32(b[0x74:], d.Flags)
	le.PutUint64(b[0x78:], d.TimeoutNS)
	le.PutUint64(b[0x80:], d.Report)
	le.PutUint64(b[0x88:], d.Regs)
	return b
}

// What a report word (Report.What) says the device waited for, or failed
// on (GOSHMEMI_IBGDA_WAIT_* in include/goshmem/ibgda/backend.h).
const (
	WaitPost  = 1 // posting: ring space (completions) or an earlier poster's publication
	WaitQuiet = 2 // quiet or a blocking call: completions of published WQEs
	WaitSlot  = 3 // a free bounce / result slot
	WaitCQE   = 4 // not a wait: an error CQE
	WaitOrder = 5 // not a wait: a kernel without system-scope ordering on host-memory queues
)

// Report is the word the device backend writes to StateDesc.Report before
// it traps (GOSHMEMI_IBGDA_REPORT): host memory, so the host can read it
// after the trap has made the GPU context unusable.
type Report struct {
	What   uint8  // Wait*
	QPN    uint32 // 0: no QP (slots, ordering)
	Detail uint32 // waits: sq_ready_idx[15:0]<<16 | sq_done_idx[15:0]; CQE: error word bits 31:0; order: flags
}

// DecodeReport decodes a report word; ok is false for 0 (nothing reported).
func DecodeReport(w uint64) (r Report, ok bool) {
	if w>>63 == 0 {
		return Report{}, false
	}
	return Report{What: uint8(w>>56) & 0x7f, QPN: uint32(w>>32) & 0xffffff, Detail: uint32(w)}, true
}

// String says what the device reported, in words.
func (r Report) String() string {
	ready, done := r.Detail>>16, r.Detail&0xffff
	switch r.What {
	case WaitPost:
		return fmt.Sprintf("QP %#x: posting waited longer than GOSHMEM_TIMEOUT for ring space or for an earlier "+
			"poster (published %d WQEBBs, completed %d, mod 2^16)", r.QPN, ready, done)
	case WaitQuiet:
		return fmt.Sprintf("QP %#x: waited longer than GOSHMEM_TIMEOUT for completions (published %d WQEBBs, "+
			"completed %d, mod 2^16): the NIC never saw the doorbell, or never completed", r.QPN, ready, done)
	case WaitSlot:
		return fmt.Sprintf("waited longer than GOSHMEM_TIMEOUT for one of %d bounce/result slots", r.Detail)
	case WaitCQE:
		return fmt.Sprintf("QP %#x: error CQE (syndrome %#x, vendor syndrome %#x, wqe_counter %d)",
			r.QPN, uint8(r.Detail>>24), uint8(r.Detail>>16), uint16(r.Detail))
	case WaitOrder:
		return "a kernel built with GPU-scope (or no) IBGDA doorbell ordering ran against queues in host " +
			"memory: rebuild it without -DGOSHMEM_IBGDA_ORDER_GPU/_NONE"
	}
	return fmt.Sprintf("report %d (QPN %#x, detail %#x)", r.What, r.QPN, r.Detail)
}
