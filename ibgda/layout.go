package ibgda

import "encoding/binary"

// QPStructSize and QPVersion mirror GOSHMEMI_IBGDA_QP_SIZE and
// GOSHMEMI_IBGDA_QP_VERSION (include/goshmem/ibgda/qp.h); tests/ibgda/e2e
// checks EncodeQP against the C struct field by field.
const (
	QPStructSize = 160
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
	StateStructSize = 128
	StateVersion    = 1<<16 + StateStructSize
	// NoQP marks a (ctx, PE) without a QP in StateDesc.QPIndex tables
	// (GOSHMEMI_IBGDA_NO_QP).
	NoQP = 0xffffffff
	// SlotBytes is GOSHMEMI_IBGDA_SLOT_BYTES, one bounce / result slot.
	SlotBytes = 256
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
}

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
	// 0x70 slot_cursor, 0x74 pad, 0x78 reserved: zero
	return b
}
