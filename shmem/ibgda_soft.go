package shmem

import (
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
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

// softIBGDA is this PE's emulated NIC, the pinned block the NIC reads and
// writes (SQs, doorbell records, CQs, slots) and the GPU block only device
// threads use (QP structs with their state words, tables, the IBGDA state):
// as in goshmem-perf ibgda, device-written words and device atomics stay in
// GPU memory.
type softIBGDA struct {
	nic  *ibgda.SoftNIC
	ctx  *cuda.Context
	host unsafe.Pointer
	dev  cuda.DevicePtr
	// report is the device backend's report word (host-pinned: readable
	// after a trap has made the context unusable); names maps QPNs to
	// "ctx c -> PE pe".
	report *uint64
	names  map[uint32]string
}

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
	// pinned: per QP SQ + CQ + 3 records; slots and scratch words
	hostN := uint64(nq)*(softIBGDASQ*ibgda.SendWQEBB+softIBGDACQEs*ibgda.CQESize+4*64) +
		softIBGDASlots*ibgda.SlotBytes + uint64(nq)*8 + 64 + 4096
	hostN = (hostN + 4095) &^ 4095
	// GPU: state, QP structs, sq_nbb, tables, slot_busy, fence flags, error word
	devN := uint64(ibgda.StateStructSize) + uint64(nq)*(ibgda.QPStructSize+softIBGDASQ+4) +
		uint64(softIBGDACtx*r.npes)*4 + uint64(r.npes)*12 + softIBGDASlots*4 + 16*64
	host, err := g.Ctx.MemHostAlloc(int(hostN), cuda.HostAllocPortable|cuda.HostAllocDeviceMap)
	if err != nil {
		return errors.Wrapf(err, "goshmem: PE %d: Init: soft NIC queues in pinned memory", r.me)
	}
	s := &softIBGDA{nic: ibgda.NewSoftNIC(), ctx: g.Ctx, host: host, names: map[uint32]string{}}
	fail := func(err error) error {
		if s.dev != 0 {
			_ = g.Ctx.MemFree(s.dev)
		}
		_ = g.Ctx.MemFreeHost(host)
		return err
	}
	hostD, err := g.Ctx.MemHostGetDevicePointer(host)
	if err != nil {
		return fail(err)
	}
	if uint64(hostD) != uint64(uintptr(host)) {
		return fail(errors.Newf("goshmem: PE %d: Init: the soft NIC needs unified addressing (pinned memory at host %p is device %#x)",
			r.me, host, uint64(hostD)))
	}
	if s.dev, err = g.Ctx.MemAlloc(int(devN)); err != nil {
		return fail(errors.Wrapf(err, "goshmem: PE %d: Init: soft NIC device state", r.me))
	}
	mem := unsafe.Slice((*byte)(host), hostN)
	clear(mem)
	hb := &bump{base: uint64(uintptr(host))}
	hat := func(addr, n uint64) []byte { return mem[addr-hb.base : addr-hb.base+n] }
	img := make([]byte, devN) // the GPU block, built here, copied once
	db := &bump{base: uint64(s.dev)}
	dat := func(addr, n uint64) []byte { return img[addr-db.base : addr-db.base+n] }
	le := binary.LittleEndian

	stateAddr := db.take(ibgda.StateStructSize)
	errWord := db.take(8)
	lkeyTab := db.take(4)
	le.PutUint32(dat(lkeyTab, 4), softIBGDAHeapKey(r.me))
	rkeyTab := db.take(uint64(r.npes) * 4)
	remoteBase := db.take(uint64(r.npes) * 8)
	for pe := 0; pe < r.npes; pe++ {
		le.PutUint32(dat(rkeyTab+4*uint64(pe), 4), softIBGDAHeapKey(pe))
		le.PutUint64(dat(remoteBase+8*uint64(pe), 8), uint64(g.PeerAddr(pe)))
	}
	qpIndex := db.take(uint64(softIBGDACtx*r.npes) * 4)
	for i := 0; i < softIBGDACtx*r.npes; i++ {
		le.PutUint32(dat(qpIndex+4*uint64(i), 4), ibgda.NoQP)
	}
	slotBusy := db.take(softIBGDASlots * 4)
	fence := db.take(uint64(nq) * 4)
	qps := db.take(uint64(nq) * ibgda.QPStructSize)
	slots := hb.take(softIBGDASlots * ibgda.SlotBytes)
	scratch := hb.take(uint64(nq) * 8)
	report := hb.take(8)
	s.report = (*uint64)(unsafe.Pointer(&hat(report, 8)[0]))
	timeoutNS := uint64(r.policy.Timeout.Nanoseconds())
	for c := 0; c < softIBGDACtx; c++ {
		for k, pe := range remote {
			i := c*len(remote) + k
			le.PutUint32(dat(qpIndex+4*uint64(c*r.npes+pe), 4), uint32(i))
			d := ibgda.QPDesc{
				QPN: softIBGDAQPN0 + uint32(i), SQWQEBBs: softIBGDASQ, CQEs: softIBGDACQEs,
				SQBuf: hb.take(softIBGDASQ * ibgda.SendWQEBB), CQBuf: hb.take(softIBGDACQEs * ibgda.CQESize),
				DBRec: hb.take(8), DB: hb.take(8), CQDBRec: hb.take(8), ErrWord: errWord,
				LKeyTab: lkeyTab, RKeyTab: rkeyTab, NLKeys: 1, NRKeys: uint32(r.npes),
				ScratchLAddr: scratch + 8*uint64(i), ScratchLKey: softIBGDASlotK,
				SQNBB: db.take(softIBGDASQ), TimeoutNS: timeoutNS,
			}
			name := fmt.Sprintf("ctx %d -> PE %d", c, pe)
			s.names[d.QPN] = name
			copy(dat(qps+uint64(i)*ibgda.QPStructSize, ibgda.QPStructSize), ibgda.EncodeQP(d))
			ibgda.InitCQ(hat(d.CQBuf, softIBGDACQEs*ibgda.CQESize))
			if err := s.nic.AddQP(ibgda.QPConfig{
				Name:    name,
				QPN:     d.QPN,
				SQ:      ibgda.SQ{Buf: hat(d.SQBuf, softIBGDASQ*ibgda.SendWQEBB), WQEBBs: softIBGDASQ},
				DBRec:   hat(d.DBRec, 8),
				DB:      hat(d.DB, 8),
				CQ:      hat(d.CQBuf, softIBGDACQEs*ibgda.CQESize),
				CQEs:    softIBGDACQEs,
				CQDBRec: hat(d.CQDBRec, 4),
			}); err != nil {
				return fail(err)
			}
		}
	}
	if hb.off > hostN || db.off > devN {
		return fail(errors.AssertionFailedf("soft NIC layout needs %d+%d bytes, allocated %d+%d", hb.off, db.off, hostN, devN))
	}
	copy(dat(stateAddr, ibgda.StateStructSize), ibgda.EncodeState(ibgda.StateDesc{
		MyPE: int32(r.me), NPEs: int32(r.npes), NCtx: softIBGDACtx, NQPs: uint32(nq),
		InlineMax: softIBGDAInline, HeapLKey: softIBGDAHeapKey(r.me),
		HeapBase: uint64(g.PeerAddr(r.me)), HeapSize: g.Size(),
		QPs: qps, QPIndex: qpIndex, RKey: rkeyTab, RemoteBase: remoteBase,
		Slots: slots, SlotBusy: slotBusy, NSlots: softIBGDASlots, SlotLKey: softIBGDASlotK, FencePending: fence,
		// the queues are host-pinned: kernels need system-scope doorbell
		// ordering (backend.h's default), else they trap at the first call
		Flags: ibgda.StateHostQueues, TimeoutNS: timeoutNS, Report: report,
	}))
	if err := g.Ctx.MemcpyHtoD(s.dev, unsafe.Pointer(&img[0]), len(img)); err != nil {
		return fail(err)
	}

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
	s.nic.SetTimeout(r.policy.Timeout)
	if err := g.PrimeSoftNIC(); err != nil { // no module loads while user kernels run
		return fail(err)
	}
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

// diagnose says what the device reported before a trap (report word), the
// NIC's own error, and every QP that was used, as its NIC sees it: from
// the doorbell record the kernel published to the CQEs it consumed. ""
// when there is nothing to say.
func (s *softIBGDA) diagnose() string {
	var parts []string
	if r, ok := ibgda.DecodeReport(atomic.LoadUint64(s.report)); ok {
		msg := "device: " + r.String()
		if n, ok := s.names[r.QPN]; ok && r.QPN != 0 {
			msg += " [QP " + fmt.Sprintf("%#x", r.QPN) + " is " + n + "]"
		}
		parts = append(parts, msg)
	}
	if err := s.nic.Err(); err != nil {
		parts = append(parts, err.Error())
	}
	var used []string
	for _, st := range s.nic.Status() {
		if !st.Idle() {
			used = append(used, st.String())
		}
	}
	if len(parts) == 0 && len(used) == 0 {
		return ""
	}
	if len(used) == 0 {
		used = append(used, "no QP was ever rung: no doorbell record moved (if the kernel posted, its stores did not reach host memory)")
	}
	return "soft NIC (EMULATION): " + strings.Join(append(parts, used...), "; ")
}

// close stops the NIC goroutine and frees its queues (before the GPU
// transport closes: the NIC copies through it).
func (s *softIBGDA) close() error {
	s.nic.Stop()
	return errors.Join(s.ctx.MemFree(s.dev), s.ctx.MemFreeHost(s.host))
}
