package runtime

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/cgo/verbs"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/ibgda"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
)

// The soft NIC's queues (GOSHMEM_GPU_TRANSPORT=ibgda, GOSHMEM_IBGDA_NIC=soft
// on a GPU): an EMULATION. The GPU threads build real mlx5 WQEs (the device
// API's IBGDA backend, include/goshmem/ibgda/backend.h) into queues in
// host-pinned mapped memory; a host goroutine (ibgda.SoftNIC) executes them
// on the GPU heaps through the cuda transport (cudatr.HeapRegion).
const (
	softIBGDACtx   = 4   // QP sets (device contexts map onto ctx % softIBGDACtx)
	softIBGDASQ    = 256 // WQEBBs per SQ
	softIBGDACQEs  = 64  // CQEs per CQ
	softIBGDAQPN0  = 0x1000
	softIBGDASlotK = 0x2000_0000 // lkey of the pinned block (slots, scratch words)
	softIBGDARegK  = 0x3000_0000 // + slot: the lkey of a registered buffer
	// softIBGDAHeapGens is how many key sets the heaps can have: the one
	// of Init, then one per growth (softIBGDAHeapKey)
	softIBGDAHeapGens = 0x1000
)

// softIBGDAHeapKey is the key of PE pe's heap in key set gen (0: Init's;
// each growth registers the heaps again, under the next set).
func softIBGDAHeapKey(gen, pe int) uint32 { return 0x1000_0000 + uint32(gen)<<16 + uint32(pe) }

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
	// ringer: GOSHMEM_IBGDA_DOORBELL=cpu, the CPU-assisted ringer (the
	// NIC is then doorbell-driven); nil otherwise.
	ringer *ibgda.Ringer
	// mem: registered buffers and the grown heap's keys (ibgda_mem.go);
	// gpu, me, remote, gen: what regHeap registers, and its last key set
	mem    *ibgdaMem
	gpu    *cudatr.Transport
	me     int
	remote []int
	gen    int
}

// regBuffer implements ibgdaNIC: a local region of the emulated NIC,
// reached by copies (cudatr.DeviceRegion), under its own key.
func (s *softIBGDA) regBuffer(addr, bytes uint64, slot int) (uint32, func() error, error) {
	key := softIBGDARegK + uint32(slot)
	if err := s.nic.RegisterRegion(key, addr, bytes, s.gpu.DeviceRegion(cuda.DevicePtr(addr)),
		ibgda.AccessLocalRead|ibgda.AccessLocalWrite); err != nil {
		return 0, nil, errs.Wrap(err, s.me, "RegisterDevice", "soft NIC (EMULATION): registering [%#x, +%d bytes)", addr, bytes)
	}
	return key, func() error { return s.nic.DeregisterMR(key) }, nil
}

// regHeap implements ibgdaNIC: this PE's heap and every peer's (their
// regions in this process: the soft NIC's keys are all local) under the
// next key set, up to size.
func (s *softIBGDA) regHeap(size uint64) (heapKeys, error) {
	gen := s.gen + 1
	if gen >= softIBGDAHeapGens {
		return heapKeys{}, errs.New(errs.ErrNotSupported, s.me, "AllocDevice",
			"soft NIC (EMULATION): the GPU heap grew %d times, the most the emulation has keys for", softIBGDAHeapGens-1)
	}
	var keys []uint32
	release := func() error {
		var list []error
		for _, k := range keys {
			list = append(list, s.nic.DeregisterMR(k))
		}
		return errors.Join(list...)
	}
	for _, pe := range append([]int{s.me}, s.remote...) {
		hr, err := s.gpu.HeapRegion(pe)
		if err == nil {
			err = s.nic.RegisterRegion(softIBGDAHeapKey(gen, pe), uint64(s.gpu.PeerAddr(pe)), size, hr, ibgda.AccessAll)
		}
		if err != nil {
			return heapKeys{}, errors.Join(errs.Wrap(err, s.me, "AllocDevice", "soft NIC (EMULATION): the grown GPU heap of PE %d", pe), release())
		}
		keys = append(keys, softIBGDAHeapKey(gen, pe))
	}
	s.gen = gen
	return heapKeys{lkey: softIBGDAHeapKey(gen, s.me), rkey: func(pe int, _ uint32) uint32 { return softIBGDAHeapKey(gen, pe) },
		release: release}, nil
}

// startSoftIBGDA sets up QPs per (ctx, peer) for every other PE whose GPU
// heap this GPU reaches, makes the device reach those PEs through IBGDA
// (heap_base 0, remote_transport IBGDA) and starts the soft NIC. The
// device state is laid out by layoutIBGDA, as for a real ConnectX. With
// cpuBell (GOSHMEM_IBGDA_DOORBELL=cpu) the GPU's doorbell stores go to a
// stand-in nobody reads, an ibgda.Ringer rings a second word with
// verbs.Ring (the store a ConnectX's UAR gets) and the NIC is
// doorbell-driven: it executes only what that word announces (the
// CPU-assisted mode, exercised on a GPU with the NIC emulated).
func (r *Runtime) startSoftIBGDA(cpuBell bool) error {
	g := r.GPU
	var remote []int
	for pe := 0; pe < r.NPEs; pe++ {
		if pe != r.Me && g.Reachable(pe) {
			remote = append(remote, pe)
		}
	}
	nq := softIBGDACtx * len(remote)
	// pinned: per QP SQ + CQ + 4 records; slots, scratch words, report
	hostN := uint64(nq)*(softIBGDASQ*ibgda.SendWQEBB+softIBGDACQEs*ibgda.CQESize+5*64) + ibgdaHostBytes(nq) + 4096
	hostN = (hostN + 4095) &^ 4095
	devN := ibgdaDevBytes(nq, r.NPEs, softIBGDACtx, softIBGDASQ)
	host, err := g.Ctx.MemHostAlloc(int(hostN), cuda.HostAllocPortable|cuda.HostAllocDeviceMap)
	if err != nil {
		return errs.Wrap(err, r.Me, "Init", "soft NIC queues in pinned memory")
	}
	s := &softIBGDA{nic: ibgda.NewSoftNIC(), ctx: g.Ctx, host: host, gpu: g, me: r.Me, remote: remote}
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
		return fail(errs.New(errs.ErrNotSupported, r.Me, "Init", "the soft NIC needs unified addressing (pinned memory at host %p is device %#x)",
			host, uint64(hostD)))
	}
	if s.dev, err = g.Ctx.MemAlloc(int(devN)); err != nil {
		return fail(errs.Wrap(err, r.Me, "Init", "soft NIC device state"))
	}
	mem := unsafe.Slice((*byte)(host), hostN)
	clear(mem)
	hb := &bump{base: uint64(uintptr(host))}
	hat := func(addr, n uint64) []byte { return mem[addr-hb.base : addr-hb.base+n] }
	img := make([]byte, devN) // the GPU block, built here, copied once
	var rqs []ibgda.RingQP
	rkeys, bases := make([]uint32, r.NPEs), make([]uint64, r.NPEs)
	for pe := range rkeys {
		rkeys[pe], bases[pe] = softIBGDAHeapKey(0, pe), uint64(g.PeerAddr(pe))
	}
	lay, err := r.layoutIBGDA(ibgdaSpec{
		nctx: softIBGDACtx, remote: remote, heapLKey: softIBGDAHeapKey(0, r.Me), rkey: rkeys, remoteBase: bases,
		slotLKey: softIBGDASlotK, sqMax: softIBGDASQ, heapBase: uint64(g.PeerAddr(r.Me)), heapSize: g.Size(),
		// the queues are host-pinned: kernels need system-scope doorbell
		// ordering (backend.h's default), else they trap at the first call
		flags: ibgda.StateHostQueues,
		rings: func(i, c, pe int, d *ibgda.QPDesc) error {
			d.QPN, d.SQWQEBBs, d.CQEs = softIBGDAQPN0+uint32(i), softIBGDASQ, softIBGDACQEs
			d.SQBuf, d.CQBuf = hb.take(softIBGDASQ*ibgda.SendWQEBB), hb.take(softIBGDACQEs*ibgda.CQESize)
			d.DBRec, d.DB, d.CQDBRec = hb.take(8), hb.take(8), hb.take(8)
			ibgda.InitCQ(hat(d.CQBuf, softIBGDACQEs*ibgda.CQESize))
			nicDB := d.DB // the word the NIC watches: the GPU's doorbell, or the ringer's
			if cpuBell {
				nicDB = hb.take(8)
				uar := uintptr(nicDB)
				rqs = append(rqs, ibgda.RingQP{Name: fmt.Sprintf("ctx %d -> PE %d", c, pe), QPN: d.QPN,
					DBRec: hat(d.DBRec, 8), Ring: func(v uint64) { verbs.Ring(uar, v) }})
			}
			return s.nic.AddQP(ibgda.QPConfig{
				Name:           fmt.Sprintf("ctx %d -> PE %d", c, pe),
				QPN:            d.QPN,
				SQ:             ibgda.SQ{Buf: hat(d.SQBuf, softIBGDASQ*ibgda.SendWQEBB), WQEBBs: softIBGDASQ},
				DBRec:          hat(d.DBRec, 8),
				DB:             hat(nicDB, 8),
				CQ:             hat(d.CQBuf, softIBGDACQEs*ibgda.CQESize),
				CQEs:           softIBGDACQEs,
				CQDBRec:        hat(d.CQDBRec, 4),
				DoorbellDriven: cpuBell,
			})
		},
	}, &bump{base: uint64(s.dev)}, img, hb, mem)
	if err != nil {
		return fail(err)
	}
	s.report, s.names = lay.report, lay.names
	if err := g.Ctx.MemcpyHtoD(s.dev, unsafe.Pointer(&img[0]), len(img)); err != nil {
		return fail(err)
	}

	// Memory regions: the pinned block (slots, scratch words) and the GPU
	// heaps (this PE's: local key; the peers': remote keys).
	if err := s.nic.RegisterMR(softIBGDASlotK, mem, ibgda.AccessLocalRead|ibgda.AccessLocalWrite); err != nil {
		return fail(err)
	}
	for _, pe := range append([]int{r.Me}, remote...) {
		hr, err := g.HeapRegion(pe)
		if err != nil {
			return fail(err)
		}
		if err := s.nic.RegisterRegion(softIBGDAHeapKey(0, pe), uint64(g.PeerAddr(pe)), g.Size(), hr, ibgda.AccessAll); err != nil {
			return fail(err)
		}
	}
	s.nic.SetAtomicHostEndian(true) // backend.h's signal / AMO word representation
	s.nic.SetTimeout(r.Policy.Timeout)
	if err := g.PrimeSoftNIC(); err != nil { // no module loads while user kernels run
		return fail(err)
	}
	if cpuBell && len(rqs) > 0 {
		if s.ringer, err = ibgda.NewRinger(rqs); err != nil {
			return fail(err)
		}
	}
	s.nic.Start()
	if s.ringer != nil {
		s.ringer.Start()
	}
	isRemote := make([]bool, r.NPEs)
	for _, pe := range remote {
		isRemote[pe] = true
	}
	if err := g.ConfigureRemote(isRemote, cudatr.RemoteIBGDA, lay.stateAddr); err != nil {
		if s.ringer != nil {
			s.ringer.Stop()
		}
		s.nic.Stop()
		return fail(errs.Wrap(err, r.Me, "Init", "device state for IBGDA"))
	}
	s.mem = lay.mem(r, s, remote)
	g.OnGrow(s.mem.grow)
	g.Preload(true) // the soft NIC's copy kernel runs while kernels wait for it
	r.preloadLib()
	r.softNIC = s
	return nil
}

// diagnose says what the device reported before a trap (report word), the
// NIC's own error, and every QP that was used, as its NIC sees it: from
// the doorbell record the kernel published to the CQEs it consumed. ""
// when there is nothing to say.
func (s *softIBGDA) diagnose() string {
	var parts []string
	if msg := reportMessage(s.report, s.names); msg != "" {
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

// reportMessage decodes the device backend's report word (host-pinned),
// naming the QP's context and PE; "" when nothing was reported.
func reportMessage(report *uint64, names map[uint32]string) string {
	r, ok := ibgda.DecodeReport(atomic.LoadUint64(report))
	if !ok {
		return ""
	}
	msg := "device: " + r.String()
	if n, ok := names[r.QPN]; ok && r.QPN != 0 {
		msg += " [QP " + fmt.Sprintf("%#x", r.QPN) + " is " + n + "]"
	}
	return msg
}

// close stops the NIC goroutine and frees its queues (before the GPU
// transport closes: the NIC copies through it).
func (s *softIBGDA) close() error {
	if s.ringer != nil {
		s.ringer.Stop() // before the NIC: it rings the NIC's word
	}
	s.nic.Stop()
	var err error
	if s.mem != nil {
		err = s.mem.close()
	}
	return errors.Join(err, s.ctx.MemFree(s.dev), s.ctx.MemFreeHost(s.host))
}
