package runtime

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/ibgda"
)

// The device-side IBGDA state every NIC backend fills the same way (the
// soft NIC, ibgda_soft.go, and a real ConnectX, ibgda_mlx5.go): the
// goshmemi_ibgda_state_t, one goshmemi_ibgda_qp_t per (context, remote PE),
// the (ctx, PE) -> QP index table, the key and remote-base tables, the
// bounce/result slots and the per-QP scratch words. Only the rings (where
// the SQ, CQ and doorbell records live, which doorbell the GPU stores to)
// and the keys differ between backends.
const (
	ibgdaSlots  = 64  // bounce / result slots
	ibgdaInline = 128 // inline limit (bytes)
)

// ibgdaSpec is what a backend gives layoutIBGDA.
type ibgdaSpec struct {
	nctx       int
	remote     []int    // PEs reached over IBGDA; QP i = ctx*len(remote) + k is (ctx, remote[k])
	heapLKey   uint32   // this PE's heap
	rkey       []uint32 // per PE: the key WQEs name for its heap
	remoteBase []uint64 // per PE: the address WQEs name for its heap's first byte
	slotLKey   uint32   // the host block holding slots and scratch words
	flags      uint32   // ibgda.StateHostQueues, ...
	sqMax      uint32   // the largest SQ (WQEBBs) rings will report
	heapBase   uint64   // this PE's heap (device address) and size
	heapSize   uint64
	// rings fills QP i's ring fields (QPN, SQBuf, SQWQEBBs, CQEs, DBRec,
	// DB, CQBuf, CQDBRec) for context c and PE pe.
	rings func(i, c, pe int, d *ibgda.QPDesc) error
}

// ibgdaLayout is where layoutIBGDA put things.
type ibgdaLayout struct {
	stateAddr uint64
	report    *uint64 // the host-pinned report word
	qps       []ibgda.QPDesc
	names     map[uint32]string // QPN -> "ctx c -> PE pe"
	// the key tables (the QPs' one-entry lkey table, the rkey table of
	// every PE) and the registered-buffer table: what ibgdaMem rewrites
	lkeyTab, rkeyTab, regs uint64
}

// ibgdaDevBytes is the GPU block layoutIBGDA needs for nq QPs.
func ibgdaDevBytes(nq, npes, nctx int, sqMax uint32) uint64 {
	return uint64(ibgda.StateStructSize) + uint64(nq)*(ibgda.QPStructSize+uint64(sqMax)+4) +
		uint64(nctx*npes)*4 + uint64(npes)*12 + ibgdaSlots*4 + ibgda.RegsSize + 17*64
}

// mem is the ibgdaMem of this layout, registering through nic.
func (l ibgdaLayout) mem(r *Runtime, nic ibgdaNIC, remote []int) *ibgdaMem {
	return &ibgdaMem{r: r, ctx: r.GPU.Ctx, nic: nic, state: l.stateAddr, lkeyTab: l.lkeyTab, rkeyTab: l.rkeyTab,
		regs: l.regs, remote: remote, size: r.GPU.Size()}
}

// ibgdaHostBytes is the host-pinned part layoutIBGDA takes: slots, scratch
// words, the report word.
func ibgdaHostBytes(nq int) uint64 { return ibgdaSlots*ibgda.SlotBytes + uint64(nq)*8 + 64 + 3*64 }

// bump hands out 64-byte aligned pieces of a block at base.
type bump struct {
	base uint64
	off  uint64
}

func (b *bump) take(n uint64) uint64 {
	o := (b.off + 63) &^ 63
	b.off = o + n
	return b.base + o
}

// layoutIBGDA builds the device state into img, the image of the GPU block
// at db (copied to the GPU by the caller), taking slots, scratch and the
// report word from the host-pinned block at hb (host memory mem, whose
// device address is hb's base: unified addressing).
func (r *Runtime) layoutIBGDA(sp ibgdaSpec, db *bump, img []byte, hb *bump, mem []byte) (ibgdaLayout, error) {
	le := binary.LittleEndian
	dat := func(addr, n uint64) []byte { return img[addr-db.base : addr-db.base+n] }
	nq := sp.nctx * len(sp.remote)
	out := ibgdaLayout{names: map[uint32]string{}}

	out.stateAddr = db.take(ibgda.StateStructSize)
	errWord := db.take(8)
	lkeyTab := db.take(4)
	le.PutUint32(dat(lkeyTab, 4), sp.heapLKey)
	rkeyTab := db.take(uint64(r.NPEs) * 4)
	remoteBase := db.take(uint64(r.NPEs) * 8)
	for pe := 0; pe < r.NPEs; pe++ {
		le.PutUint32(dat(rkeyTab+4*uint64(pe), 4), sp.rkey[pe])
		le.PutUint64(dat(remoteBase+8*uint64(pe), 8), sp.remoteBase[pe])
	}
	qpIndex := db.take(uint64(sp.nctx*r.NPEs) * 4)
	for i := 0; i < sp.nctx*r.NPEs; i++ {
		le.PutUint32(dat(qpIndex+4*uint64(i), 4), ibgda.NoQP)
	}
	slotBusy := db.take(ibgdaSlots * 4)
	fence := db.take(uint64(nq) * 4)
	qps := db.take(uint64(nq) * ibgda.QPStructSize)
	out.regs = db.take(ibgda.RegsSize) // zero: no registered buffer
	out.lkeyTab, out.rkeyTab = lkeyTab, rkeyTab
	slots := hb.take(ibgdaSlots * ibgda.SlotBytes)
	scratch := hb.take(uint64(nq) * 8)
	report := hb.take(8)
	out.report = (*uint64)(unsafe.Pointer(&mem[report-hb.base]))
	timeoutNS := uint64(r.Policy.Timeout.Nanoseconds())
	for c := 0; c < sp.nctx; c++ {
		for k, pe := range sp.remote {
			i := c*len(sp.remote) + k
			le.PutUint32(dat(qpIndex+4*uint64(c*r.NPEs+pe), 4), uint32(i))
			d := ibgda.QPDesc{ErrWord: errWord, LKeyTab: lkeyTab, RKeyTab: rkeyTab, NLKeys: 1, NRKeys: uint32(r.NPEs),
				ScratchLAddr: scratch + 8*uint64(i), ScratchLKey: sp.slotLKey, TimeoutNS: timeoutNS}
			if err := sp.rings(i, c, pe, &d); err != nil {
				return out, err
			}
			if d.SQWQEBBs > sp.sqMax {
				return out, errors.AssertionFailedf("QP %#x: SQ of %d WQEBBs, layout sized for %d", d.QPN, d.SQWQEBBs, sp.sqMax)
			}
			d.SQNBB = db.take(uint64(d.SQWQEBBs))
			out.names[d.QPN] = fmt.Sprintf("ctx %d -> PE %d", c, pe)
			copy(dat(qps+uint64(i)*ibgda.QPStructSize, ibgda.QPStructSize), ibgda.EncodeQP(d))
			out.qps = append(out.qps, d)
		}
	}
	if db.off > uint64(len(img)) || hb.off > uint64(len(mem)) {
		return out, errors.AssertionFailedf("IBGDA layout needs %d+%d bytes, allocated %d+%d", hb.off, db.off, len(mem), len(img))
	}
	copy(dat(out.stateAddr, ibgda.StateStructSize), ibgda.EncodeState(ibgda.StateDesc{
		MyPE: int32(r.Me), NPEs: int32(r.NPEs), NCtx: uint32(sp.nctx), NQPs: uint32(nq),
		InlineMax: ibgdaInline, HeapLKey: sp.heapLKey,
		HeapBase: sp.heapBase, HeapSize: sp.heapSize,
		QPs: qps, QPIndex: qpIndex, RKey: rkeyTab, RemoteBase: remoteBase,
		Slots: slots, SlotBusy: slotBusy, NSlots: ibgdaSlots, SlotLKey: sp.slotLKey, FencePending: fence,
		Flags: sp.flags, TimeoutNS: timeoutNS, Report: report, Regs: out.regs,
	}))
	return out, nil
}
