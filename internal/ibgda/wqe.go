// Package ibgda holds the host side of goshmem's IBGDA path: the mlx5 send
// WQE and CQE formats as Go decoders/encoders, and SoftNIC, an emulated
// mlx5 NIC that consumes the exact bytes GPU (or, in tests, host) threads
// write with include/goshmem/ibgda/. The runtime (internal/runtime) drives
// it when GOSHMEM_GPU_TRANSPORT=ibgda.
//
// Ref: rdma-core 44 <infiniband/mlx5dv.h> (struct mlx5_wqe_ctrl_seg,
// mlx5_wqe_raddr_seg, mlx5_wqe_data_seg, mlx5_wqe_inl_data_seg,
// mlx5_wqe_atomic_seg, mlx5_cqe64, mlx5_err_cqe); mlx5 PRM "Send WQE
// Construction" and "Completion Queue Entry Format".
package ibgda

import (
	"encoding/binary"
	"fmt"
)

// mlx5 constants, values as in mlx5dv.h (tests/ibgda/wqe_vs_rdma_core.c
// checks the C mirror of each against rdma-core).
const (
	RcvDBR = 0 // MLX5_RCV_DBR: doorbell record index of the receive counter
	SndDBR = 1 // MLX5_SND_DBR: doorbell record index of the send counter

	OpcodeNOP       = 0x00 // MLX5_OPCODE_NOP
	OpcodeRDMAWrite = 0x08 // MLX5_OPCODE_RDMA_WRITE
	OpcodeRDMARead  = 0x10 // MLX5_OPCODE_RDMA_READ
	OpcodeAtomicCS  = 0x11 // MLX5_OPCODE_ATOMIC_CS
	OpcodeAtomicFA  = 0x12 // MLX5_OPCODE_ATOMIC_FA

	CtrlCQUpdate  = 2 << 2 // MLX5_WQE_CTRL_CQ_UPDATE (CE = 2: always a CQE)
	CtrlSolicited = 1 << 1 // MLX5_WQE_CTRL_SOLICITED
	CtrlFence     = 4 << 5 // MLX5_WQE_CTRL_FENCE

	SendWQEBB = 64         // MLX5_SEND_WQE_BB
	SegSize   = 16         // one WQE segment (a DS unit)
	InlineSeg = 0x80000000 // MLX5_INLINE_SEG
	CQESize   = 64         // struct mlx5_cqe64
	MaxWQEBBs = 32768      // largest SQ goshmem accepts (16-bit WQE index)
	maxSGELen = 0x80000000 // byte_count 0 in a data segment means 2 GiB
	maxDS     = 255        // qpn_ds carries DS in 8 bits

	CQEReq     = 0  // MLX5_CQE_REQ
	CQEReqErr  = 13 // MLX5_CQE_REQ_ERR
	CQERespErr = 14 // MLX5_CQE_RESP_ERR
	CQEInvalid = 15 // MLX5_CQE_INVALID

	SyndromeLocalLengthErr    = 0x01 // MLX5_CQE_SYNDROME_LOCAL_LENGTH_ERR
	SyndromeLocalQPOpErr      = 0x02 // MLX5_CQE_SYNDROME_LOCAL_QP_OP_ERR
	SyndromeLocalProtErr      = 0x04 // MLX5_CQE_SYNDROME_LOCAL_PROT_ERR
	SyndromeWRFlushErr        = 0x05 // MLX5_CQE_SYNDROME_WR_FLUSH_ERR
	SyndromeRemoteInvalReqErr = 0x12 // MLX5_CQE_SYNDROME_REMOTE_INVAL_REQ_ERR
	SyndromeRemoteAccessErr   = 0x13 // MLX5_CQE_SYNDROME_REMOTE_ACCESS_ERR
)

// DataSeg is struct mlx5_wqe_data_seg: one gather (write) or scatter (read,
// atomic result) pointer.
type DataSeg struct {
	ByteCount uint32 // 0 means 2 GiB (as on mlx5)
	LKey      uint32
	Addr      uint64
}

// Len is the segment's length in bytes.
func (d DataSeg) Len() uint64 {
	if d.ByteCount == 0 {
		return maxSGELen
	}
	return uint64(d.ByteCount)
}

// WQE is a decoded mlx5 send WQE.
type WQE struct {
	Index     uint16 // ctrl.opmod_idx_opcode[23:8]: WQEBB index
	Opcode    uint8
	Opmod     uint8
	QPN       uint32 // ctrl.qpn_ds[31:8]
	DS        uint8  // 16-byte segments, ctrl included
	Signature uint8
	FmCeSe    uint8
	Imm       uint32 // raw (as stored)

	RAddr uint64 // raddr segment (all opcodes but NOP)
	RKey  uint32

	Inline  []byte    // RDMA write with an inline segment (non-nil, maybe empty)
	SGEs    []DataSeg // data segments
	SwapAdd uint64    // atomic segment
	Compare uint64
}

// Signaled reports whether the WQE asks for a CQE (CE = CQ_UPDATE).
func (w *WQE) Signaled() bool { return w.FmCeSe&CtrlCQUpdate != 0 }

// WQEBBs is the number of 64-byte basic blocks the WQE occupies.
func (w *WQE) WQEBBs() uint32 { return dsToWQEBB(uint32(w.DS)) }

func dsToWQEBB(ds uint32) uint32 { return (ds + 3) / 4 }

func inlDS(n uint32) uint32 { return (4 + n + 15) / 16 }

// DecodeError is a WQE the NIC refuses; Syndrome is the CQE syndrome the
// NIC reports for it.
type DecodeError struct {
	Syndrome uint8
	Index    uint16
	Reason   string
}

func (e *DecodeError) Error() string {
	return fmt.Sprintf("ibgda: malformed WQE at index %#x: %s (syndrome %#x)", e.Index, e.Reason, e.Syndrome)
}

// SQ is a send-queue ring of WQEBBs basic blocks (a power of two).
type SQ struct {
	Buf    []byte
	WQEBBs uint32
}

// seg copies segment `seg` of the WQE at WQEBB index idx (wrapping).
func (q SQ) seg(idx uint16, seg uint32) []byte {
	mask := q.WQEBBs*SendWQEBB - 1
	off := (uint32(idx)*SendWQEBB + seg*SegSize) & mask
	return q.Buf[off : off+SegSize]
}

func (q SQ) valid() error {
	if q.WQEBBs == 0 || q.WQEBBs&(q.WQEBBs-1) != 0 || q.WQEBBs > MaxWQEBBs {
		return fmt.Errorf("ibgda: SQ of %d WQEBBs: want a power of 2 in [1, %d]", q.WQEBBs, MaxWQEBBs)
	}
	if uint64(len(q.Buf)) != uint64(q.WQEBBs)*SendWQEBB {
		return fmt.Errorf("ibgda: SQ buffer of %d bytes for %d WQEBBs: want %d", len(q.Buf), q.WQEBBs, q.WQEBBs*SendWQEBB)
	}
	return nil
}

// CtrlDS reads the DS count of the WQE at idx without validating it.
func (q SQ) CtrlDS(idx uint16) uint8 { return q.seg(idx, 0)[7] }

// DecodeWQE parses the WQE that starts at WQEBB index idx of q, of which
// `avail` WQEBBs (counting from idx) are published. Segments wrap around the
// ring. A WQE the NIC would refuse returns a *DecodeError naming the
// syndrome; the WQEBB count to skip is then max(1, ds-derived, capped).
func DecodeWQE(q SQ, idx uint16, avail uint32) (WQE, error) {
	var w WQE
	if err := q.valid(); err != nil {
		return w, err
	}
	bad := func(s uint8, f string, a ...any) (WQE, error) {
		return w, &DecodeError{Syndrome: s, Index: idx, Reason: fmt.Sprintf(f, a...)}
	}
	c := q.seg(idx, 0)
	oio := binary.BigEndian.Uint32(c[0:])
	qd := binary.BigEndian.Uint32(c[4:])
	w.Opmod, w.Index, w.Opcode = uint8(oio>>24), uint16(oio>>8), uint8(oio)
	w.QPN, w.DS = qd>>8, uint8(qd)
	w.Signature, w.FmCeSe = c[8], c[11]
	w.Imm = binary.LittleEndian.Uint32(c[12:])
	if w.Index != idx {
		return bad(SyndromeLocalQPOpErr, "ctrl wqe_index %#x", w.Index)
	}
	if w.DS == 0 {
		return bad(SyndromeLocalLengthErr, "ds 0")
	}
	nbb := w.WQEBBs()
	if nbb > avail {
		return bad(SyndromeLocalLengthErr, "ds %d (%d WQEBBs) past the doorbell record (%d published)", w.DS, nbb, avail)
	}
	if nbb > q.WQEBBs {
		return bad(SyndromeLocalLengthErr, "ds %d larger than the ring", w.DS)
	}
	ds := uint32(w.DS)
	raddr := func() {
		r := q.seg(idx, 1)
		w.RAddr = binary.BigEndian.Uint64(r[0:])
		w.RKey = binary.BigEndian.Uint32(r[8:])
	}
	dataSegs := func(from uint32) {
		for s := from; s < ds; s++ {
			d := q.seg(idx, s)
			w.SGEs = append(w.SGEs, DataSeg{
				ByteCount: binary.BigEndian.Uint32(d[0:]),
				LKey:      binary.BigEndian.Uint32(d[4:]),
				Addr:      binary.BigEndian.Uint64(d[8:]),
			})
		}
	}
	switch w.Opcode {
	case OpcodeNOP:
		return w, nil
	case OpcodeRDMAWrite:
		if ds < 3 {
			return bad(SyndromeLocalLengthErr, "RDMA write with ds %d", ds)
		}
		raddr()
		bc := binary.BigEndian.Uint32(q.seg(idx, 2)[0:])
		if bc&InlineSeg != 0 {
			n := bc &^ InlineSeg
			if 2+inlDS(n) != ds {
				return bad(SyndromeLocalLengthErr, "inline %d bytes needs ds %d, ctrl says %d", n, 2+inlDS(n), ds)
			}
			w.Inline = make([]byte, 0, n)
			for u := uint32(0); uint32(len(w.Inline)) < n; u++ {
				s := q.seg(idx, 2+u)
				if u == 0 {
					s = s[4:]
				}
				take := min(uint32(len(s)), n-uint32(len(w.Inline)))
				w.Inline = append(w.Inline, s[:take]...)
			}
			return w, nil
		}
		dataSegs(2)
		return w, nil
	case OpcodeRDMARead:
		if ds < 3 {
			return bad(SyndromeLocalLengthErr, "RDMA read with ds %d", ds)
		}
		raddr()
		dataSegs(2)
		for _, d := range w.SGEs {
			if d.ByteCount&InlineSeg != 0 && d.ByteCount != InlineSeg {
				return bad(SyndromeLocalQPOpErr, "inline segment in an RDMA read")
			}
		}
		return w, nil
	case OpcodeAtomicCS, OpcodeAtomicFA:
		if ds != 4 {
			return bad(SyndromeLocalLengthErr, "atomic with ds %d, want 4", ds)
		}
		raddr()
		a := q.seg(idx, 2)
		w.SwapAdd = binary.BigEndian.Uint64(a[0:])
		w.Compare = binary.BigEndian.Uint64(a[8:])
		dataSegs(3)
		if w.SGEs[0].ByteCount != 8 {
			return bad(SyndromeLocalLengthErr, "atomic result segment of %d bytes, want 8", w.SGEs[0].ByteCount)
		}
		return w, nil
	default:
		return bad(SyndromeLocalQPOpErr, "opcode %#x not supported", w.Opcode)
	}
}

// EncodeWQE writes w at WQEBB index w.Index of q (segments wrap), with the
// DS count computed from its segments (w.DS is ignored). It mirrors the C
// encoders in include/goshmem/ibgda/ and is used by tests to inject WQEs.
func EncodeWQE(q SQ, w WQE) (ds uint8, err error) {
	if err := q.valid(); err != nil {
		return 0, err
	}
	n := uint32(1)
	switch w.Opcode {
	case OpcodeNOP:
	case OpcodeRDMAWrite:
		if w.Inline != nil {
			n = 2 + inlDS(uint32(len(w.Inline)))
		} else {
			n = 2 + uint32(len(w.SGEs))
		}
	case OpcodeRDMARead:
		n = 2 + uint32(len(w.SGEs))
	case OpcodeAtomicCS, OpcodeAtomicFA:
		n = 3 + uint32(len(w.SGEs))
	default:
		n = 1 + uint32(len(w.SGEs))
	}
	if n > maxDS || dsToWQEBB(n) > q.WQEBBs {
		return 0, fmt.Errorf("ibgda: WQE of %d segments does not fit", n)
	}
	put := func(s uint32, b [16]byte) { copy(q.seg(w.Index, s), b[:]) }
	var c [16]byte
	binary.BigEndian.PutUint32(c[0:], uint32(w.Opmod)<<24|uint32(w.Index)<<8|uint32(w.Opcode))
	binary.BigEndian.PutUint32(c[4:], w.QPN<<8|n)
	c[8], c[11] = w.Signature, w.FmCeSe
	binary.LittleEndian.PutUint32(c[12:], w.Imm)
	put(0, c)
	if w.Opcode == OpcodeNOP {
		return uint8(n), nil
	}
	var r [16]byte
	binary.BigEndian.PutUint64(r[0:], w.RAddr)
	binary.BigEndian.PutUint32(r[8:], w.RKey)
	put(1, r)
	s := uint32(2)
	if w.Opcode == OpcodeAtomicCS || w.Opcode == OpcodeAtomicFA {
		var a [16]byte
		binary.BigEndian.PutUint64(a[0:], w.SwapAdd)
		binary.BigEndian.PutUint64(a[8:], w.Compare)
		put(2, a)
		s = 3
	}
	if w.Opcode == OpcodeRDMAWrite && w.Inline != nil {
		buf := make([]byte, inlDS(uint32(len(w.Inline)))*SegSize)
		binary.BigEndian.PutUint32(buf, uint32(len(w.Inline))|InlineSeg)
		copy(buf[4:], w.Inline)
		for u := uint32(0); u*SegSize < uint32(len(buf)); u++ {
			copy(q.seg(w.Index, s+u), buf[u*SegSize:(u+1)*SegSize])
		}
		return uint8(n), nil
	}
	for _, d := range w.SGEs {
		var b [16]byte
		binary.BigEndian.PutUint32(b[0:], d.ByteCount)
		binary.BigEndian.PutUint32(b[4:], d.LKey)
		binary.BigEndian.PutUint64(b[8:], d.Addr)
		put(s, b)
		s++
	}
	return uint8(n), nil
}

// CQE is a decoded struct mlx5_cqe64 (requester fields) or mlx5_err_cqe.
type CQE struct {
	Opcode        uint8  // op_own[7:4]: CQEReq, CQEReqErr, CQERespErr
	Owner         uint8  // op_own[0]
	WQECounter    uint16 // WQEBB index of the completed WQE
	QPN           uint32 // sop_drop_qpn / s_wqe_opcode_qpn [23:0]
	WQEOpcode     uint8  // sop_drop_qpn / s_wqe_opcode_qpn [31:24]
	ByteCnt       uint32 // requester: bytes read / fetched
	Syndrome      uint8  // error CQEs
	VendorErrSynd uint8  // error CQEs
}

// IsError reports an error CQE.
func (c CQE) IsError() bool { return c.Opcode == CQEReqErr || c.Opcode == CQERespErr }

// EncodeCQE fills the 64 bytes of dst with c (all other bytes zero).
func EncodeCQE(dst []byte, c CQE) {
	_ = dst[CQESize-1]
	clear(dst[:CQESize])
	if c.IsError() {
		dst[0x36] = c.VendorErrSynd
		dst[0x37] = c.Syndrome
	} else {
		binary.BigEndian.PutUint32(dst[0x2c:], c.ByteCnt)
	}
	binary.BigEndian.PutUint32(dst[0x38:], uint32(c.WQEOpcode)<<24|c.QPN&0xffffff)
	binary.BigEndian.PutUint16(dst[0x3c:], c.WQECounter)
	dst[0x3f] = c.Opcode<<4 | c.Owner&1
}

// ParseCQE decodes a 64-byte CQE. Opcodes other than REQ, REQ_ERR and
// RESP_ERR (including INVALID: not yet written) are errors.
func ParseCQE(b []byte) (CQE, error) {
	var c CQE
	if len(b) != CQESize {
		return c, fmt.Errorf("ibgda: CQE of %d bytes, want %d", len(b), CQESize)
	}
	opOwn := b[0x3f]
	c.Opcode, c.Owner = opOwn>>4, opOwn&1
	switch c.Opcode {
	case CQEReq:
		c.ByteCnt = binary.BigEndian.Uint32(b[0x2c:])
	case CQEReqErr, CQERespErr:
		c.VendorErrSynd, c.Syndrome = b[0x36], b[0x37]
	default:
		return c, fmt.Errorf("ibgda: CQE opcode %d is not a requester completion", c.Opcode)
	}
	q := binary.BigEndian.Uint32(b[0x38:])
	c.WQEOpcode, c.QPN = uint8(q>>24), q&0xffffff
	c.WQECounter = binary.BigEndian.Uint16(b[0x3c:])
	return c, nil
}
