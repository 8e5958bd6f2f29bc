package ibgda

import (
	"encoding/binary"
	"fmt"
)

// ConnInfo is what one PE publishes over the bootstrap so that every other
// PE can connect its RC QPs to it and address its heap (the real-mlx5 setup,
// GOSHMEM_IBGDA_NIC=mlx5): its port's address (LID for InfiniBand, GID for
// RoCE), its heap's rkey and base address, and, for every (ctx, target PE),
// the QPN of its own QP that connects to that PE in that context (NoQP for
// itself and for PEs it does not reach over IBGDA).
//
// Every PE's record has the same size for the same (NCtx, NPEs), as an
// allgather needs (ConnInfoSize).
type ConnInfo struct {
	PE       int32
	NCtx     uint32
	NPEs     uint32
	LID      uint16   // InfiniBand port LID (0 on RoCE)
	Eth      bool     // the port's link layer is Ethernet (RoCE: address by GID)
	GIDIndex uint8    // the GID table index the PE uses (RoCE)
	MTU      uint8    // the port's active MTU (an IBV_MTU_* value)
	GID      [16]byte // the GID at GIDIndex
	HeapRKey uint32
	HeapBase uint64 // the heap's address as the PE's MR names it (its iova)
	HeapSize uint64
	// QPN[c*NPEs+pe] is the QPN of this PE's QP of context c that connects
	// to PE pe, or NoQP.
	QPN []uint32
}

const (
	connMagic   = 0x474f4942 // "GOIB"
	connVersion = 1
	connHeader  = 64
)

// ConnInfoSize is the encoded size of a ConnInfo with nctx contexts and
// npes PEs.
func ConnInfoSize(nctx, npes int) int { return connHeader + 4*nctx*npes }

// QPNFor returns the QPN of the record's QP of context c that connects to
// PE pe (NoQP when there is none).
func (ci *ConnInfo) QPNFor(c, pe int) uint32 { return ci.QPN[c*int(ci.NPEs)+pe] }

// Encode returns the record's bytes (little-endian, ConnInfoSize long).
func (ci *ConnInfo) Encode() ([]byte, error) {
	if want := int(ci.NCtx) * int(ci.NPEs); len(ci.QPN) != want {
		return nil, fmt.Errorf("ibgda: ConnInfo of PE %d: %d QPNs for %d contexts x %d PEs (want %d)",
			ci.PE, len(ci.QPN), ci.NCtx, ci.NPEs, want)
	}
	b := make([]byte, ConnInfoSize(int(ci.NCtx), int(ci.NPEs)))
	le := binary.LittleEndian
	le.PutUint32(b[0:], connMagic)
	le.PutUint16(b[4:], connVersion)
	le.PutUint16(b[6:], connHeader)
	le.PutUint32(b[8:], uint32(ci.PE))
	le.PutUint32(b[12:], ci.NCtx)
	le.PutUint32(b[16:], ci.NPEs)
	le.PutUint16(b[20:], ci.LID)
	if ci.Eth {
		b[22] = 1
	}
	b[23] = ci.GIDIndex
	copy(b[24:40], ci.GID[:])
	le.PutUint32(b[40:], ci.HeapRKey)
	le.PutUint64(b[44:], ci.HeapBase)
	le.PutUint64(b[52:], ci.HeapSize)
	b[60] = ci.MTU
	for i, q := range ci.QPN {
		le.PutUint32(b[connHeader+4*i:], q)
	}
	return b, nil
}

// DecodeConnInfo decodes the record PE pe published, checking that it is
// one (magic, version), that it comes from pe and that it describes the
// same nctx contexts and npes PEs as this PE's.
func DecodeConnInfo(b []byte, pe, nctx, npes int) (ConnInfo, error) {
	le := binary.LittleEndian
	if len(b) != ConnInfoSize(nctx, npes) {
		return ConnInfo{}, fmt.Errorf("ibgda: connection record of PE %d is %d bytes, want %d (%d contexts x %d PEs)",
			pe, len(b), ConnInfoSize(nctx, npes), nctx, npes)
	}
	if m, v := le.Uint32(b[0:]), le.Uint16(b[4:]); m != connMagic || v != connVersion || le.Uint16(b[6:]) != connHeader {
		return ConnInfo{}, fmt.Errorf("ibgda: connection record of PE %d: magic %#x version %d, want %#x version %d "+
			"(a different goshmem build on that PE?)", pe, m, v, connMagic, connVersion)
	}
	ci := ConnInfo{
		PE: int32(le.Uint32(b[8:])), NCtx: le.Uint32(b[12:]), NPEs: le.Uint32(b[16:]),
		LID: le.Uint16(b[20:]), Eth: b[22] != 0, GIDIndex: b[23],
		HeapRKey: le.Uint32(b[40:]), HeapBase: le.Uint64(b[44:]), HeapSize: le.Uint64(b[52:]), MTU: b[60],
	}
	copy(ci.GID[:], b[24:40])
	if int(ci.PE) != pe || int(ci.NCtx) != nctx || int(ci.NPEs) != npes {
		return ConnInfo{}, fmt.Errorf("ibgda: connection record in PE %d's place says PE %d, %d contexts x %d PEs; want PE %d, %d x %d",
			pe, ci.PE, ci.NCtx, ci.NPEs, pe, nctx, npes)
	}
	ci.QPN = make([]uint32, nctx*npes)
	for i := range ci.QPN {
		ci.QPN[i] = le.Uint32(b[connHeader+4*i:])
	}
	return ci, nil
}
