// Package mlx5prm encodes the few mlx5 firmware (PRM) command mailboxes
// goshmem sends through devx (mlx5dv_devx_obj_create / _modify) to create a
// CQ and an RC QP whose rings and doorbell records live in a devx umem (GPU
// memory registered by dma-buf), and to move the QP RESET -> INIT -> RTR ->
// RTS; and decodes their outputs (status, syndrome, CQN, QPN). It is pure
// Go, so the byte and bit positions are unit-tested without a NIC.
//
// Convention (the PRM's, and rdma-core's DEVX_SET): a mailbox is a
// sequence of big-endian 32-bit words; a field is named by its bit offset
// from the start of its structure, counted from the most significant bit
// of the first word, and its width; a field of at most 32 bits never
// crosses a word; 64-bit fields are big-endian at a 64-bit aligned offset.
//
// Ref: rdma-core providers/mlx5/mlx5_ifc.h and the Linux kernel's
// include/linux/mlx5/mlx5_ifc.h (mlx5_ifc_create_cq_in_bits,
// mlx5_ifc_cqc_bits, mlx5_ifc_create_qp_in_bits, mlx5_ifc_qpc_bits,
// mlx5_ifc_ads_bits, mlx5_ifc_rst2init_qp_in_bits and siblings); the qpc's
// dbr_umem_id (bit 0x720) and the cqc's 32-bit c_eqn_or_apu_element (bit
// 0xa0, whose low byte is the older c_eqn[0x8] at 0xb8) as in DPDK's
// drivers/common/mlx5/mlx5_prm.h. Written from those layouts, never run
// against firmware.
package mlx5prm

import (
	"encoding/binary"
	"fmt"
)

// Command opcodes. Ref: mlx5_ifc.h MLX5_CMD_OP_*.
const (
	OpCreateCQ   = 0x400
	OpCreateQP   = 0x500
	OpRST2INITQP = 0x502
	OpINIT2RTRQP = 0x503
	OpRTR2RTSQP  = 0x504
)

// Mailbox sizes in bytes (without the trailing page-address arrays, which
// a umem replaces).
const (
	CreateCQInBytes  = 0x880 / 8 // mlx5_ifc_create_cq_in_bits
	CreateQPInBytes  = 0x880 / 8 // mlx5_ifc_create_qp_in_bits
	ModifyQPInBytes  = 0x880 / 8 // rst2init / init2rtr / rtr2rts _qp_in_bits
	CreateOutBytes   = 0x80 / 8  // create_cq_out / create_qp_out
	ModifyQPOutBytes = 0x80 / 8
)

// Set writes the low width bits of v at bit offset off of the mailbox b
// (width 1..32, not crossing a 32-bit word; width 64 at a 64-bit aligned
// offset). It panics on a misplaced field: offsets are constants here.
func Set(b []byte, off, width int, v uint64) {
	if width == 64 {
		if off%64 != 0 {
			panic(fmt.Sprintf("mlx5prm: 64-bit field at bit %#x not aligned", off))
		}
		binary.BigEndian.PutUint64(b[off/8:], v)
		return
	}
	if width < 1 || width > 32 || off%32+width > 32 {
		panic(fmt.Sprintf("mlx5prm: field of %d bits at bit %#x crosses a word", width, off))
	}
	w := off / 32 * 4
	shift := uint(32 - off%32 - width)
	mask := uint32(1<<uint(width)-1) << shift
	cur := binary.BigEndian.Uint32(b[w:])
	binary.BigEndian.PutUint32(b[w:], cur&^mask|uint32(v)<<shift&mask)
}

// Get reads the field Set writes.
func Get(b []byte, off, width int) uint64 {
	if width == 64 {
		return binary.BigEndian.Uint64(b[off/8:])
	}
	w := off / 32 * 4
	shift := uint(32 - off%32 - width)
	return uint64(binary.BigEndian.Uint32(b[w:]) >> shift & uint32(1<<uint(width)-1))
}

// Command header (every *_in mailbox) and output header (every *_out).
const (
	hdrOpcode   = 0x00 // [0x10]
	outStatus   = 0x00 // [0x08]
	outSyndrome = 0x20 // [0x20]
	outObjNum   = 0x48 // [0x18]: create_cq_out.cqn, create_qp_out.qpn
)

// create_cq_in and its cqc (offsets relative to the cqc).
const (
	cqInCtx        = 0x80
	cqInUmemOffset = 0x280 // [0x40]
	cqInUmemID     = 0x2c0 // [0x20]
	cqInUmemValid  = 0x2e0 // [0x1]

	cqcDbrUmemValid = 0x06  // [0x1]
	cqcCQESz        = 0x08  // [0x3] 0: 64-byte CQEs
	cqcCC           = 0x0b  // [0x1] collapsed CQ
	cqcOI           = 0x0e  // [0x1] overrun ignore
	cqcDbrUmemID    = 0x20  // [0x20]
	cqcLogCQSize    = 0x63  // [0x5]
	cqcUARPage      = 0x68  // [0x18]
	cqcCEqn         = 0xa0  // [0x20] c_eqn_or_apu_element
	cqcLogPageSize  = 0xc3  // [0x5] log2(page) - 12
	cqcDbrAddr      = 0x1c0 // [0x40] with dbr_umem_valid: offset in the dbr umem
)

// create_qp_in, the modify commands and the qpc (offsets relative to it).
const (
	qpInOptMask   = 0x80 // [0x20]
	qpInCtx       = 0xc0
	qpInUmemOff   = 0x800 // [0x40] wq_umem_offset
	qpInUmemID    = 0x840 // [0x20] wq_umem_id
	qpInUmemValid = 0x860 // [0x1]  wq_umem_valid
	modQPN        = 0x48  // [0x18] qpn of rst2init/init2rtr/rtr2rts

	qpcSt          = 0x08  // [0x8] 0: RC
	qpcPMState     = 0x13  // [0x2] 3: migrated
	qpcPD          = 0x28  // [0x18]
	qpcMTU         = 0x40  // [0x3] IBV_MTU_* values
	qpcLogMsgMax   = 0x43  // [0x5]
	qpcLogRQSize   = 0x49  // [0x4]
	qpcLogRQStride = 0x4d  // [0x3]
	qpcNoSQ        = 0x50  // [0x1]
	qpcLogSQSize   = 0x51  // [0x4] log2(WQEBBs)
	qpcTSFormat    = 0x58  // [0x2]
	qpcUARPage     = 0x68  // [0x18]
	qpcLogPageSize = 0xa3  // [0x5]
	qpcRemoteQPN   = 0xa8  // [0x18]
	qpcPath        = 0xc0  // primary_address_path (mlx5_ifc_ads_bits)
	qpcLogSRAMax   = 0x388 // [0x3]
	qpcRetryCount  = 0x38d // [0x3]
	qpcRNRRetry    = 0x390 // [0x3]
	qpcNextSendPSN = 0x3c8 // [0x18]
	qpcCQNSnd      = 0x3e8 // [0x18]
	qpcLogRRAMax   = 0x488 // [0x3]
	qpcAtomicMode  = 0x48c // [0x4]
	qpcRRE         = 0x490 // [0x1]
	qpcRWE         = 0x491 // [0x1]
	qpcRAE         = 0x492 // [0x1]
	qpcMinRNRNak   = 0x4a3 // [0x5]
	qpcNextRcvPSN  = 0x4a8 // [0x18]
	qpcCQNRcv      = 0x4e8 // [0x18]
	qpcDbrAddr     = 0x500 // [0x40] with dbr_umem_valid: offset in the dbr umem
	qpcRQType      = 0x565 // [0x3] 3: zero-size RQ
	qpcDbrUmemVal  = 0x683 // [0x1]
	qpcDbrUmemID   = 0x720 // [0x20]

	// mlx5_ifc_ads_bits, relative to the path
	adsPKeyIndex    = 0x10  // [0x10]
	adsGRH          = 0x28  // [0x1]
	adsRLID         = 0x30  // [0x10]
	adsAckTimeout   = 0x40  // [0x5]
	adsSrcAddrIndex = 0x48  // [0x8] the sgid index
	adsHopLimit     = 0x58  // [0x8]
	adsRGID         = 0x80  // 16 bytes
	adsUDPSport     = 0x110 // [0x10]
	adsSL           = 0x124 // [0x4]
	adsVHCAPort     = 0x128 // [0x8]
	adsRMAC4732     = 0x130 // [0x10]
	adsRMAC310      = 0x140 // [0x20]
)

// QPC constants.
const (
	QPCStRC           = 0x0
	QPCPMMigrated     = 0x3
	QPCRQZeroSize     = 0x3
	QPCAtomicIBComp   = 0x1 // IB-spec 8-byte compare-swap / fetch-add
	MaxLogMsg         = 30  // 1 GiB messages
	UmemValid         = 1
	AdapterPageShift  = 12 // log_page_size is log2(page) - AdapterPageShift
	CQESize64         = 0
	TSFormatFreeRun   = 0x0
	MinRNRTimer       = 12 // as ibv_modify_qp's min_rnr_timer in the verbs path
	DefaultAckTimeout = 14
	DefaultRetry      = 7
)

// CQ describes a CQ whose CQE ring and doorbell record are in umems.
type CQ struct {
	LogSize     uint8  // log2(CQEs)
	UARPage     uint32 // the devx UAR's page_id
	EQN         uint32 // mlx5dv_devx_query_eqn
	UmemID      uint32 // the CQE ring's umem
	UmemOffset  uint64 // ring offset in it
	DBRUmemID   uint32 // the doorbell record's umem
	DBROffset   uint64 // record offset in it (8-byte aligned)
	LogPageSize uint8  // log2(umem page) - 12
}

// CreateCQ is the CREATE_CQ mailbox for c: 64-byte CQEs, not collapsed, no
// overrun ignore (the consumer index is kept in the doorbell record).
func CreateCQ(c CQ) []byte {
	b := make([]byte, CreateCQInBytes)
	Set(b, hdrOpcode, 16, OpCreateCQ)
	x := cqInCtx
	Set(b, x+cqcDbrUmemValid, 1, UmemValid)
	Set(b, x+cqcCQESz, 3, CQESize64)
	Set(b, x+cqcCC, 1, 0)
	Set(b, x+cqcOI, 1, 0)
	Set(b, x+cqcDbrUmemID, 32, uint64(c.DBRUmemID))
	Set(b, x+cqcLogCQSize, 5, uint64(c.LogSize))
	Set(b, x+cqcUARPage, 24, uint64(c.UARPage))
	Set(b, x+cqcCEqn, 32, uint64(c.EQN))
	Set(b, x+cqcLogPageSize, 5, uint64(c.LogPageSize))
	Set(b, x+cqcDbrAddr, 64, c.DBROffset)
	Set(b, cqInUmemOffset, 64, c.UmemOffset)
	Set(b, cqInUmemID, 32, uint64(c.UmemID))
	Set(b, cqInUmemValid, 1, UmemValid)
	return b
}

// QP describes an RC QP with a send queue only, whose WQE ring and
// doorbell record are in umems.
type QP struct {
	PD          uint32 // mlx5dv_pd.pdn
	UARPage     uint32
	CQN         uint32 // send and receive CQ
	LogSQSize   uint8  // log2(WQEBBs)
	UmemID      uint32 // the SQ ring's umem
	UmemOffset  uint64
	DBRUmemID   uint32
	DBROffset   uint64
	LogPageSize uint8
}

// CreateQP is the CREATE_QP mailbox for q: RC, migrated, no RQ (zero-size
// RQ type, so the WQ buffer is the SQ alone), free-running timestamps.
func CreateQP(q QP) []byte {
	b := make([]byte, CreateQPInBytes)
	Set(b, hdrOpcode, 16, OpCreateQP)
	x := qpInCtx
	Set(b, x+qpcSt, 8, QPCStRC)
	Set(b, x+qpcPMState, 2, QPCPMMigrated)
	Set(b, x+qpcPD, 24, uint64(q.PD))
	Set(b, x+qpcLogRQSize, 4, 0)
	Set(b, x+qpcLogRQStride, 3, 0)
	Set(b, x+qpcNoSQ, 1, 0)
	Set(b, x+qpcLogSQSize, 4, uint64(q.LogSQSize))
	Set(b, x+qpcTSFormat, 2, TSFormatFreeRun)
	Set(b, x+qpcUARPage, 24, uint64(q.UARPage))
	Set(b, x+qpcLogPageSize, 5, uint64(q.LogPageSize))
	Set(b, x+qpcCQNSnd, 24, uint64(q.CQN))
	Set(b, x+qpcCQNRcv, 24, uint64(q.CQN))
	Set(b, x+qpcDbrAddr, 64, q.DBROffset)
	Set(b, x+qpcRQType, 3, QPCRQZeroSize)
	Set(b, x+qpcDbrUmemVal, 1, UmemValid)
	Set(b, x+qpcDbrUmemID, 32, uint64(q.DBRUmemID))
	Set(b, qpInUmemOff, 64, q.UmemOffset)
	Set(b, qpInUmemID, 32, uint64(q.UmemID))
	Set(b, qpInUmemValid, 1, UmemValid)
	return b
}

func modify(op, qpn uint32) []byte {
	b := make([]byte, ModifyQPInBytes)
	Set(b, hdrOpcode, 16, uint64(op))
	Set(b, modQPN, 24, uint64(qpn))
	Set(b, qpInOptMask, 32, 0)
	return b
}

// RST2INIT is the RST2INIT_QP mailbox: port, P_Key index 0, remote write,
// read and (IB-compatible 8-byte) atomic access.
func RST2INIT(qpn uint32, port uint8) []byte {
	b := modify(OpRST2INITQP, qpn)
	x := qpInCtx
	Set(b, x+qpcPMState, 2, QPCPMMigrated)
	Set(b, x+qpcRRE, 1, 1)
	Set(b, x+qpcRWE, 1, 1)
	Set(b, x+qpcRAE, 1, 1)
	Set(b, x+qpcAtomicMode, 4, QPCAtomicIBComp)
	Set(b, x+qpcPath+adsPKeyIndex, 16, 0)
	Set(b, x+qpcPath+adsVHCAPort, 8, uint64(port))
	return b
}

// Path addresses the peer: by LID on InfiniBand, by GID (with the next
// hop's MAC and the UDP source port rdma-core resolved for an AH) on RoCE.
type Path struct {
	Port      uint8
	Eth       bool
	RLID      uint16   // InfiniBand
	RGID      [16]byte // RoCE
	SGIDIndex uint8    // RoCE: our GID table index
	HopLimit  uint8    // RoCE
	RMAC      [6]byte  // RoCE
	UDPSport  uint16   // RoCE v2
	SL        uint8
}

// RTR are the INIT2RTR parameters.
type RTR struct {
	MTU       uint8 // IBV_MTU_* (1 = 256 ... 5 = 4096)
	RemoteQPN uint32
	RcvPSN    uint32
	LogRRAMax uint8 // log2(max_dest_rd_atomic)
	MinRNRNak uint8
	Path      Path
	LogMsgMax uint8 // log2 of the largest message (MaxLogMsg)
}

// INIT2RTR is the INIT2RTR_QP mailbox for r.
func INIT2RTR(qpn uint32, r RTR) []byte {
	b := modify(OpINIT2RTRQP, qpn)
	x := qpInCtx
	Set(b, x+qpcMTU, 3, uint64(r.MTU))
	Set(b, x+qpcLogMsgMax, 5, uint64(r.LogMsgMax))
	Set(b, x+qpcRemoteQPN, 24, uint64(r.RemoteQPN))
	Set(b, x+qpcNextRcvPSN, 24, uint64(r.RcvPSN))
	Set(b, x+qpcLogRRAMax, 3, uint64(r.LogRRAMax))
	Set(b, x+qpcMinRNRNak, 5, uint64(r.MinRNRNak))
	p := x + qpcPath
	Set(b, p+adsVHCAPort, 8, uint64(r.Path.Port))
	Set(b, p+adsSL, 4, uint64(r.Path.SL))
	if r.Path.Eth {
		copy(b[(p+adsRGID)/8:], r.Path.RGID[:])
		Set(b, p+adsSrcAddrIndex, 8, uint64(r.Path.SGIDIndex))
		Set(b, p+adsHopLimit, 8, uint64(r.Path.HopLimit))
		Set(b, p+adsUDPSport, 16, uint64(r.Path.UDPSport))
		m := r.Path.RMAC
		Set(b, p+adsRMAC4732, 16, uint64(m[0])<<8|uint64(m[1]))
		Set(b, p+adsRMAC310, 32, uint64(m[2])<<24|uint64(m[3])<<16|uint64(m[4])<<8|uint64(m[5]))
	} else {
		Set(b, p+adsRLID, 16, uint64(r.Path.RLID))
		Set(b, p+adsGRH, 1, 0)
	}
	return b
}

// RTS are the RTR2RTS parameters.
type RTS struct {
	SendPSN    uint32
	LogSRAMax  uint8 // log2(max_rd_atomic)
	Retry      uint8
	RNRRetry   uint8
	AckTimeout uint8
}

// RTR2RTS is the RTR2RTS_QP mailbox for s.
func RTR2RTS(qpn uint32, s RTS) []byte {
	b := modify(OpRTR2RTSQP, qpn)
	x := qpInCtx
	Set(b, x+qpcNextSendPSN, 24, uint64(s.SendPSN))
	Set(b, x+qpcLogSRAMax, 3, uint64(s.LogSRAMax))
	Set(b, x+qpcRetryCount, 3, uint64(s.Retry))
	Set(b, x+qpcRNRRetry, 3, uint64(s.RNRRetry))
	Set(b, x+qpcPath+adsAckTimeout, 5, uint64(s.AckTimeout))
	return b
}

// Out is a command's output header.
type Out struct {
	Status   uint8
	Syndrome uint32
}

// Decode reads the status and syndrome of an output mailbox.
func Decode(out []byte) Out {
	return Out{Status: uint8(Get(out, outStatus, 8)), Syndrome: uint32(Get(out, outSyndrome, 32))}
}

// ObjNum is create_cq_out's cqn or create_qp_out's qpn.
func ObjNum(out []byte) uint32 { return uint32(Get(out, outObjNum, 24)) }

// statusNames are the command status codes. Ref: Linux
// drivers/net/ethernet/mellanox/mlx5/core/cmd.c, MLX5_CMD_STAT_*.
var statusNames = map[uint8]string{0x0: "OK", 0x1: "INTERNAL_ERR", 0x2: "BAD_OP", 0x3: "BAD_PARAM",
	0x4: "BAD_SYS_STATE", 0x5: "BAD_RESOURCE", 0x6: "RESOURCE_BUSY", 0x8: "EXCEED_LIM", 0x9: "BAD_RES_STATE",
	0xa: "BAD_INDEX", 0xf: "NO_RESOURCES", 0x10: "BAD_RESOURCE_STATE", 0x30: "BAD_PKT", 0x40: "BAD_SIZE",
	0x50: "BAD_INPUT_LEN", 0x51: "BAD_OUTPUT_LEN"}

// String names the status and gives the syndrome (the firmware's reason,
// which mlx5 firmware tools decode).
func (o Out) String() string {
	name := statusNames[o.Status]
	if name == "" {
		name = "unknown"
	}
	return fmt.Sprintf("status %#x (%s), syndrome %#x", o.Status, name, o.Syndrome)
}

// Log2 returns log2(n) for a power of two n, else -1.
func Log2(n uint32) int {
	if n == 0 || n&(n-1) != 0 {
		return -1
	}
	l := 0
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}

// FloorLog2 is the largest l with 1<<l <= n (0 for n <= 1), for the
// rd_atomic counts the PRM takes as logarithms.
func FloorLog2(n int) uint8 {
	var l uint8
	for n > 1 {
		n >>= 1
		l++
	}
	return l
}
