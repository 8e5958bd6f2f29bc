package proxy

import (
	"encoding/binary"
	"fmt"

	"github.com/goshmem/goshmem/internal/transport"
)

// Go mirror of include/goshmem/proxy.h. layout_test.go compiles the header
// with gcc and checks every offset, size and constant against these, so the
// two cannot drift apart. Ref: include/goshmem/proxy.h.
const (
	MaxRings = 64  // GOSHMEMI_PROXY_MAX_RINGS
	MaxCtx   = 32  // GOSHMEMI_PROXY_MAX_CTX
	MaxRegs  = 255 // GOSHMEMI_PROXY_MAX_REGS

	ringSize   = 192 // sizeof(goshmemi_proxy_ring_t)
	replySize  = 32  // sizeof(goshmemi_proxy_reply_t)
	slotSize   = 16
	headerSize = 128 // version .. ctx_count

	offVersion  = 0
	offSize     = 4
	offNRings   = 8
	offNCtx     = 12
	offStatus   = 16
	offTimeout  = 24
	offRegs     = 32
	offCtxFirst = 64
	offCtxCount = offCtxFirst + MaxCtx
	offRings    = headerSize

	// goshmemi_proxy_ring_t
	ringOffSlots      = 0
	ringOffReplies    = 8
	ringOffTail       = 16
	ringOffLog2       = 24
	ringOffMode       = 28
	ringOffCtx        = 32
	ringOffWorker     = 36
	ringOffHead       = 64
	ringOffCachedTail = 72
	ringOffDone       = 128

	// goshmemi_proxy_reply_t
	replyOffValue  = 0
	replyOffTicket = 8
	replyOffAck    = 16

	// goshmemi_proxy_status_t
	statusOffDead     = 0
	statusOffDeadInfo = 8
	statusOffRingErr  = 64
	statusSize        = statusOffRingErr + 16*MaxRings

	// goshmemi_proxy_regs_t and its goshmemi_proxy_reg_t
	regsOffN    = 0
	regsOffReg  = 16
	regSize     = 16
	regOffBase  = 0
	regOffEnd   = 8
	regsSize    = regsOffReg + regSize*MaxRegs
	regMaxBytes = offMask // a registered buffer's offsets fit a descriptor's loff

	// StateSize is sizeof(goshmemi_proxy_state_t).
	StateSize = headerSize + ringSize*MaxRings
	// StateVersion is GOSHMEMI_PROXY_STATE_VERSION.
	StateVersion = 1<<16 + StateSize

	offBits = 40
	offMask = 1<<offBits - 1
	// Chunk is GOSHMEMI_PROXY_CHUNK, the largest payload of one descriptor.
	Chunk = 8 << 20
	// DoneErr is GOSHMEMI_PROXY_DONE_ERR: set in a ring's completion counter
	// (and in a reply's ticket) once the worker rejected a request.
	DoneErr = uint64(1) << 63
)

// Producer protocols (GOSHMEMI_PROXY_SPSC/MPSC/BASELINE).
const (
	ModeSPSC     uint32 = 0
	ModeMPSC     uint32 = 1
	ModeBaseline uint32 = 2
)

// Descriptor ops (GOSHMEMI_PROXY_OP_*).
const (
	OpNOP       = 0
	OpPut       = 1
	OpPutInline = 2
	OpGet       = 3
	OpGetReply  = 4
	OpAMO       = 5
)

// AMO arg bits (GOSHMEMI_PROXY_AMO_*); the low 3 bits are GOSHMEMI_AMO_*.
const (
	amo8B    = 1 << 3
	amoReply = 1 << 4
	amoExt   = 1 << 5
)

// Device AMO codes (GOSHMEMI_AMO_* in ordering.h) to the transport's.
var deviceAMO = [8]transport.AMO{
	0: transport.AMOFetch, 1: transport.AMOSet, 2: transport.AMOSwap, 3: transport.AMOCompareSwap,
	4: transport.AMOAdd, 5: transport.AMOAnd, 6: transport.AMOOr, 7: transport.AMOXor,
}

// Desc is one decoded descriptor.
type Desc struct {
	Phase uint64
	Op    int
	PE    int
	Arg   uint32
	ROff  uint64 // symmetric offset on PE
	W1    uint64
}

// Decode splits the two words of a descriptor.
func Decode(w0, w1 uint64) Desc {
	return Desc{
		Phase: w0 & 1,
		Op:    int(w0>>1) & 0x1f,
		PE:    int(w0>>6) & 0x3ff,
		Arg:   uint32(w0>>16) & 0xff,
		ROff:  w0 >> 24,
		W1:    w1,
	}
}

// Encode builds w0 of a descriptor without the phase bit (the producer
// adds it), as goshmemi_proxy_w0 does.
func Encode(op, pe int, arg uint32, roff uint64) uint64 {
	return uint64(op)<<1 | uint64(pe&0x3ff)<<6 | uint64(arg&0xff)<<16 | (roff&offMask)<<24
}

// Span builds w1 of a PUT or GET (goshmemi_proxy_w1_span).
func Span(loff, size uint64) uint64 { return loff&offMask | size<<offBits }

// LOff and Size split a PUT/GET w1.
func (d Desc) LOff() uint64 { return d.W1 & offMask }

// Reg is the registered buffer a PUT or GET names for its local side: its
// slot + 1 (the descriptor's arg), 0 for the symmetric heap.
func (d Desc) Reg() int {
	if d.Op == OpPut || d.Op == OpGet {
		return int(d.Arg)
	}
	return 0
}

// Size is the payload size of a PUT/GET (from w1) or inline/reply request (from arg).
func (d Desc) Size() uint64 {
	switch d.Op {
	case OpPut, OpGet:
		return d.W1 >> offBits
	case OpAMO:
		if d.Arg&amo8B != 0 {
			return 8
		}
		return 4
	default:
		return uint64(d.Arg)
	}
}

// Slots is how many ring slots the request takes (2 for compare-swap).
func (d Desc) Slots() uint64 {
	if d.Op == OpAMO && d.Arg&amoExt != 0 {
		return 2
	}
	return 1
}

// WantsReply reports whether the request answers in its reply slot.
func (d Desc) WantsReply() bool {
	return d.Op == OpGetReply || (d.Op == OpAMO && d.Arg&amoReply != 0)
}

func (d Desc) String() string {
	names := [...]string{"nop", "put", "put_inline", "get", "get_reply", "amo"}
	n := fmt.Sprintf("op%d", d.Op)
	if d.Op < len(names) {
		n = names[d.Op]
	}
	if r := d.Reg(); r != 0 {
		return fmt.Sprintf("%s pe %d offset %#x size %d, local side registered buffer %d at offset %#x", n, d.PE, d.ROff, d.Size(), r-1, d.LOff())
	}
	return fmt.Sprintf("%s pe %d offset %#x size %d", n, d.PE, d.ROff, d.Size())
}

// expectedPhase is the phase bit of a valid descriptor of ticket t.
func expectedPhase(t uint64, log2 uint) uint64 { return (t>>log2)&1 ^ 1 }

// ringConfig is what the host writes into line 0 of a ring.
type ringConfig struct {
	slots, replies, tail uint64
	log2, mode, ctx      uint32
	worker               uint32
}

// stateImage encodes the device-side proxy state (regs: the device
// address of the registered-buffer table).
func stateImage(status, timeoutNS, regs uint64, rings []ringConfig, ctxFirst, ctxCount []uint8) []byte {
	b := make([]byte, StateSize)
	le := binary.LittleEndian
	le.PutUint32(b[offVersion:], StateVersion)
	le.PutUint32(b[offSize:], StateSize)
	le.PutUint32(b[offNRings:], uint32(len(rings)))
	le.PutUint32(b[offNCtx:], uint32(len(ctxFirst)))
	le.PutUint64(b[offStatus:], status)
	le.PutUint64(b[offTimeout:], timeoutNS)
	le.PutUint64(b[offRegs:], regs)
	copy(b[offCtxFirst:], ctxFirst)
	copy(b[offCtxCount:], ctxCount)
	for i, r := range rings {
		o := offRings + ringSize*i
		le.PutUint64(b[o+ringOffSlots:], r.slots)
		le.PutUint64(b[o+ringOffReplies:], r.replies)
		le.PutUint64(b[o+ringOffTail:], r.tail)
		le.PutUint32(b[o+ringOffLog2:], r.log2)
		le.PutUint32(b[o+ringOffMode:], r.mode)
		le.PutUint32(b[o+ringOffCtx:], r.ctx)
		le.PutUint32(b[o+ringOffWorker:], r.worker)
	}
	return b
}
