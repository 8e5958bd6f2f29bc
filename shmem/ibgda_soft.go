package shmem

import (
	"unsafe"

	"github.com/cockroachdb/errors"

	"github.com/goshmem/goshmem/ibgda"
	"github.com/goshmem/goshmem/internal/cgo/cuda"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
)

// The soft NIC's queues (GOSHMEM_GPU_TRANSPORT=ibgda, GOSHMEM_IBGDA_NIC=soft
// on a GPU): an EMULATION. The GPU threads build real mlx5 WQEs (the device
// API's IBGDA backend, include/goshmem/ibgda/backend.h) into queues in
// host-pinned mapped memory; a host goroutine (ibgda.SoftNIC) executes them
// on the GPU heaps through the cuda transport (cudatr.HeapRegion).
const (
	softIBGDACtx    = 4   // QP sets (device contexts map onto ctx % softIBGDACtx)
	softIBGDASQ     = 256 // WQEBBs per SQ
	softIBGDACQEs   = 64  // CQEs per CQ
	softIBGDASlots  = 64  // bounce / result slots
	softIBGDAInline = 128 // inline limit (bytes)
	softIBGDAQPN0   = 0x1000
	softIBGDASlotK  = 0x2000_0000 // lkey of the pinned block (slots, scratch words)
)

func softIBGDAHeapKey(pe int) uint32 { return 0x1000_0000 + uint32(pe) }

// softIBGDA is this PE's emulated NIC and the pinned block its queues live in.
type softIBGDA struct {
	nic  *ibgda.SoftNIC
	ctx  *cuda.Context
	host unsafe.Pointer
}

// bump hands out 64-byte aligned pieces of the pinned block.
type bump struct {
	base uint64
	off  uint64
}

func (b *bump) take(n uint64) uint64 {
	o := (b.off + 63) &^ 63
	b.off = o + n
	return b.base + o
}

// startSoftIBGDA sets up QPs per (ctx, peer) for every other PE whose GPU
// heap this GPU reaches, makes the device reach those PEs through IBGDA
// (heap_base 0, remote_transport IBGDA) and starts the soft NIC.
func (r *runtime) startSoftIBGDA() error {
	g := r.gpu
	var remote []int
	for pe := 0; pe < r.npes; pe++ {
		if pe != r.me && g.Reachable(pe) {
			remote = append(remote, pe)
		}
	}
	nq := softIBGDACtx * len(remote)
	qpBytes := uint64(ibgda.QPStructSize + softIBGDASQ*ibgda.SendWQEBB + softIBGDACQEs*ibgda.CQESize + 3*64 + 64)
	total := 64*uint64(8+nq) + uint64(nq)*qpBytes + uint64(softIBGDASlots)*(ibgda.SlotBytes+4) +
		uint64(softIBGDACtx*r.npes)*4 + uint64(r.npes)*12 + uint64(nq)*12 + 4096
	total = (total + 4095) &^ 4095
	host, err := g.Ctx.MemHostAlloc(int(total), cuda.HostAllocPortable|cuda.HostAllocDeviceMap)
	if err != nil {
		return errors.Wrapf(err, "goshmem: PE %d: Init: soft NIC queues in pinned memory", r.me)
	}
	s := &softIBGDA{nic: ibgda.NewSoftNIC(), ctx: g.Ctx, host: host}
	fail := func(err error) error {
		_ = g.Ctx.MemFreeHost(host)
		return err
	}
	dev, err := g.Ctx.MemHostGetDevicePointer(host)
	if err != nil {
		return fail(err)
	}
	if uint64(dev) != uint64(uintptr(host)) {
		return fail(errors.Newf("goshmem: PE %d: Init: the soft NIC needs unified addressing (pinned memory at host %p is device %#x)",
			r.me, host, uint64(dev)))
	}
	mem := unsafe.Slice((*byte)(host), total)
	clear(mem)
	base := uint64(uintptr(host))
	at := func(addr, n uint64) []byte { return mem[addr-base : addr-base+n] }
	put32 := func(addr uint64, v uint32) { *(*uint32)(unsafe.Pointer(&mem[addr-base])) = v }
	put64 := func(addr uint64, v uint64) { *(*uint64)(unsafe.Pointer(&mem[addr-base])) = v }
	b := &bump{base: base}

	stateAddr := b.take(ibgda.StateStructSize)
	errWord := b.take(8)
	lkeyTab := b.take(4)
	put32(lkeyTab, softIBGDAHeapKey(r.me))
	rkeyTab := b.take(uint64(r.npes) * 4)
	remoteBase := b.take(uint64(r.npes) * 8)
	for pe := 0; pe < r.npes; pe++ {
		put32(rkeyTab+4*uint64(pe), softIBGDAHeapKey(pe))
		put64(remoteBase+8*uint64(pe), uint64(g.PeerAddr(pe)))
	}
	qpIndex := b.take(uint64(softIBGDACtx*r.npes) * 4)
	for i := 0; i < softIBGDACtx*r.npes; i++ {
		put32(qpIndex+4*uint64(i), ibgda.NoQP)
	}
	slots := b.take(uint64(softIBGDASlots) * ibgda.SlotBytes)
	slotBusy := b.take(uint64(softIBGDASlots) * 4)
	fence := b.take(uint64(nq) * 4)
	scratch := b.take(uint64(nq) * 8)
	qps := b.take(uint64(nq) * ibgda.QPStructSize)
	for c := 0; c < softIBGDACtx; c++ {
		for k, pe := range remote {
			i := c*len(remote) + k
			put32(qpIndex+4*uint64(c*r.npes+pe), uint32(i))
			d := ibgda.QPDesc{
				QPN: softIBGDAQPN0 + uint32(i), SQWQEBBs: softIBGDASQ, CQEs: softIBGDACQEs,
				SQBuf: b.take(softIBGDASQ * ibgda.SendWQEBB), CQBuf: b.take(softIBGDACQEs * ibgda.CQESize),
				DBRec: b.take(8), DB: b.take(8), CQDBRec: b.take(8), ErrWord: errWord,
				LKeyTab: lkeyTab, RKeyTab: rkeyTab, NLKeys: 1, NRKeys: uint32(r.npes),
				ScratchLAddr: scratch + 8*uint64(i), ScratchLKey: softIBGDASlotK,
			}
			copy(at(qps+uint64(i)*ibgda.QPStructSize, ibgda.QPStructSize), ibgda.EncodeQP(d))
			ibgda.InitCQ(at(d.CQBuf, softIBGDACQEs*ibgda.CQESize))
			if err := s.nic.AddQP(ibgda.QPConfig{
				QPN:     d.QPN,
				SQ:      ibgda.SQ{Buf: at(d.SQBuf, softIBGDASQ*ibgda.SendWQEBB), WQEBBs: softIBGDASQ},
				DBRec:   at(d.DBRec, 8),
				DB:      at(d.DB, 8),
				CQ:      at(d.CQBuf, softIBGDACQEs*ibgda.CQESize),
				CQEs:    softIBGDACQEs,
				CQDBRec: at(d.CQDBRec, 4),
			}); err != nil {
				return fail(err)
			}
		}
	}
	if b.off > total {
		return fail(errors.AssertionFailedf("soft NIC layout needs %d bytes, allocated %d", b.off, total))
	}
	copy(at(stateAddr, ibgda.StateStructSize), ibgda.EncodeState(ibgda.StateDesc{
		MyPE: int32(r.me), NPEs: int32(r.npes), NCtx: softIBGDACtx, NQPs: uint32(nq),
		InlineMax: softIBGDAInline, HeapLKey: softIBGDAHeapKey(r.me),
		HeapBase: uint64(g.PeerAddr(r.me)), HeapSize: g.Size(),
		QPs: qps, QPIndex: qpIndex, RKey: rkeyTab, RemoteBase: remoteBase,
		Slots: slots, SlotBusy: slotBusy, NSlots: softIBGDASlots, SlotLKey: softIBGDASlotK, FencePending: fence,
	}))

	// Memory regions: the pinned block (slots, scratch words) and the GPU
	// heaps (this PE's: local key; the peers': remote keys).
	if err := s.nic.RegisterMR(softIBGDASlotK, mem, ibgda.AccessLocalRead|ibgda.AccessLocalWrite); err != nil {
		return fail(err)
	}
	for _, pe := range append([]int{r.me}, remote...) {
		hr, err := g.HeapRegion(pe)
		if err != nil {
			return fail(err)
		}
		if err := s.nic.RegisterRegion(softIBGDAHeapKey(pe), uint64(g.PeerAddr(pe)), g.Size(), hr, ibgda.AccessAll); err != nil {
			return fail(err)
		}
	}
	s.nic.SetAtomicHostEndian(true) // backend.h's signal / AMO word representation
	s.nic.Start()
	isRemote := make([]bool, r.npes)
	for _, pe := range remote {
		isRemote[pe] = true
	}
	if err := g.ConfigureRemote(isRemote, cudatr.RemoteIBGDA, stateAddr); err != nil {
		s.nic.Stop()
		return fail(errors.Wrapf(err, "goshmem: PE %d: Init: device state for IBGDA", r.me))
	}
	r.softNIC = s
	return nil
}

// close stops the NIC goroutine and frees its queues (before the GPU
// transport closes: the NIC copies through it).
func (s *softIBGDA) close() error {
	s.nic.Stop()
	return s.ctx.MemFreeHost(s.host)
}
