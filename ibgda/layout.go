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
