package runtime

import (
	"fmt"
	"sort"
	"strconv"
	"syscall"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/cgo/verbs"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/ibgda"
	"github.com/goshmem/goshmem/internal/mlx5prm"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
)

// The real-ConnectX IBGDA setup (GOSHMEM_GPU_TRANSPORT=ibgda,
// GOSHMEM_IBGDA_NIC=mlx5): RC QPs per (context, other PE) with their SQ, CQ
// and doorbell records in host memory rdma-core allocated, made visible to
// the GPU with cuMemHostRegister; the GPU heap registered by dma-buf
// (ibv_reg_dmabuf_mr on cuMemGetHandleForAddressRange's fd; ibv_reg_mr
// through nvidia-peermem as the fallback); QPNs, port addresses and heap
// keys exchanged in one bootstrap allgather (ibgda.ConnInfo); the QPs moved
// to RTS; the device state laid out by layoutIBGDA as for the soft NIC.
// Doorbells (GOSHMEM_IBGDA_DOORBELL): gpu maps each QP's UAR page into the
// GPU (cuMemHostRegister IOMEMORY: the NVIDIA driver allows it only with
// PeerMappingOverride=1) and GPU threads store the doorbell; cpu points the
// GPU's doorbell stores at a host-pinned stand-in and an ibgda.Ringer
// rings the UAR from the doorbell records (CPU-assisted).
//
// Queues (GOSHMEM_IBGDA_QUEUES): host as above; gpu places every QP's SQ
// ring, CQ ring and both doorbell records in one block of GPU memory
// (cuMemAlloc, 64 KiB aligned, laid out by mlx5prm.Layout, CQEs marked
// invalid), exported as a dma-buf (cuMemGetHandleForAddressRange, as for
// the heap) and registered as one devx umem (mlx5dv_devx_umem_reg_ex with
// MLX5DV_UMEM_MASK_DMABUF); the CQs and QPs are then devx objects created
// and connected with PRM commands (verbs.CreateDevXQP, QP.Connect) on the
// context's devx UAR page, and the device state names GPU addresses, with
// no host-queue flag (GPU-scope doorbell ordering allowed), as NVSHMEM's
// nic_buf_on_gpumem. The pieces this needs are checked first
// (verbs.GPUQueuesUsable: rdma-core's dma-buf umems, a devx context, the
// devx UAR, an event queue, the GPU's dma-buf export).
//
// Written against the real APIs and compiled here; never run on a
// ConnectX.
const (
	mlx5IBGDACtx  = 4   // QP sets (device contexts map onto ctx % mlx5IBGDACtx)
	mlx5IBGDASQ   = 256 // send WRs requested per QP (rdma-core rounds the SQ up to a power of two)
	mlx5IBGDACQEs = 64
	mlx5IBGDAPort = 1
)

// mlx5IBGDA is this PE's ConnectX setup; close releases it in reverse.
type mlx5IBGDA struct {
	v      *verbs.Context
	gctx   *cuda.Context
	host   unsafe.Pointer // pinned block: slots, scratch, report, stand-in doorbells
	dev    cuda.DevicePtr // GPU block: state, QP structs, tables
	hostMR *verbs.MR
	heapMR *verbs.MR
	qps    []*verbs.QP
	// GOSHMEM_IBGDA_QUEUES=gpu: the queue block (qraw as allocated, qbase
	// 64 KiB aligned in it) and its umem
	qraw  cuda.DevicePtr
	qbase uint64
	umem  *verbs.Umem
	// registered host ranges (rdma-core's queue pages, UAR pages), in order
	registered []unsafe.Pointer
	ringer     *ibgda.Ringer
	report     *uint64
	names      map[uint32]string
	// mem: registered buffers and the grown heap's keys (ibgda_mem.go);
	// gpu, me: what regBuffer and regHeap register
	mem *ibgdaMem
	gpu *cudatr.Transport
	me  int
}

func (m *mlx5IBGDA) close() error {
	if m.ringer != nil {
		m.ringer.Stop()
	}
	var errList []error
	if m.mem != nil {
		errList = append(errList, m.mem.close()) // before the protection domain goes
	}
	for i := len(m.registered) - 1; i >= 0; i-- {
		errList = append(errList, m.gctx.MemHostUnregister(m.registered[i]))
	}
	for i := len(m.qps) - 1; i >= 0; i-- {
		errList = append(errList, m.qps[i].Close())
	}
	errList = append(errList, m.umem.Close())
	if m.qraw != 0 {
		errList = append(errList, m.gctx.MemFree(m.qraw))
	}
	errList = append(errList, m.heapMR.Close(), m.hostMR.Close())
	if m.dev != 0 {
		errList = append(errList, m.gctx.MemFree(m.dev))
	}
	if m.host != nil {
		errList = append(errList, m.gctx.MemFreeHost(m.host))
	}
	errList = append(errList, m.v.Close())
	return errors.Join(errList...)
}

// mlx5Settings are the GOSHMEM_IBGDA_* settings of the mlx5 NIC, checked
// before anything is opened.
type mlx5Settings struct {
	device    string // "" = the first mlx5 device
	gidIndex  int
	cpuBell   bool
	gpuQueues bool // GOSHMEM_IBGDA_QUEUES=gpu
}

func (r *Runtime) mlx5Settings() (mlx5Settings, error) {
	var s mlx5Settings
	if d := r.Settings.String("GOSHMEM_IBGDA_DEVICE"); d != "auto" {
		s.device = d
	}
	gi := r.Settings.String("GOSHMEM_IBGDA_GID_INDEX")
	n, err := strconv.Atoi(gi)
	if err != nil || n < 0 || n > 255 {
		return s, errs.Hint(errs.ErrInvalidArgument, "show_gids lists a port's GID table", r.Me, "Init",
			"GOSHMEM_IBGDA_GID_INDEX=%q; want a GID table index in [0, 255]", gi)
	}
	s.gidIndex = n
	switch b := r.Settings.String("GOSHMEM_IBGDA_DOORBELL"); b {
	case "gpu":
	case "cpu":
		s.cpuBell = true
	default:
		return s, errs.Hint(errs.ErrInvalidArgument, "set GOSHMEM_IBGDA_DOORBELL to gpu or cpu", r.Me, "Init",
			"GOSHMEM_IBGDA_DOORBELL=%q; want gpu (GPU threads ring the UAR) or cpu (a host thread rings it)", b)
	}
	switch q := r.Settings.String("GOSHMEM_IBGDA_QUEUES"); q {
	case "host":
	case "gpu":
		s.gpuQueues = true
		if s.cpuBell {
			return s, errs.Hint(errs.ErrInvalidArgument,
				"use GOSHMEM_IBGDA_QUEUES=host with GOSHMEM_IBGDA_DOORBELL=cpu, or GOSHMEM_IBGDA_DOORBELL=gpu with GPU queues",
				r.Me, "Init", "GOSHMEM_IBGDA_QUEUES=gpu with GOSHMEM_IBGDA_DOORBELL=cpu: the CPU-assisted ringer "+
					"reads the doorbell records, which GPU queues keep in GPU memory")
		}
	default:
		return s, errs.Hint(errs.ErrInvalidArgument, "set GOSHMEM_IBGDA_QUEUES to host or gpu", r.Me, "Init",
			"GOSHMEM_IBGDA_QUEUES=%q; want host (rdma-core's queues in host memory) or gpu (queues in GPU memory, devx)", q)
	}
	return s, nil
}

// peerMappingHint is the hint of a UAR page the GPU may not map.
const peerMappingHint = "the NVIDIA driver maps another device's BAR (the NIC's UAR) into the GPU only with " +
	"PeerMappingOverride=1 (options nvidia NVreg_RegistryDwords=\"PeerMappingOverride=1;\", then reload the module); " +
	"without it use GOSHMEM_IBGDA_DOORBELL=cpu (a host thread rings the doorbells) or GOSHMEM_GPU_TRANSPORT=proxy"

// startMLX5Local does this PE's part of the ConnectX path for every
// other PE: device, memory, QPs; it returns the record (a status byte,
// then the encoded ibgda.ConnInfo) that startMLX5Connect consumes.
func (r *Runtime) startMLX5Local(s mlx5Settings) (*mlx5IBGDA, []int, []byte, error) {
	var remote []int
	for pe := 0; pe < r.NPEs; pe++ {
		if pe != r.Me {
			remote = append(remote, pe)
		}
	}
	m := &mlx5IBGDA{gctx: r.GPU.Ctx, gpu: r.GPU, me: r.Me}
	me, err := r.mlx5Local(m, s, remote)
	if err == nil {
		var b []byte
		if b, err = me.Encode(); err == nil {
			rec := make([]byte, 1+ibgda.ConnInfoSize(mlx5IBGDACtx, r.NPEs))
			rec[0] = 1
			copy(rec[1:], b)
			return m, remote, rec, nil
		}
	}
	_ = m.close()
	return nil, nil, nil, err
}

// mlx5Local does this PE's part: device, memory, QPs; returns its record.
func (r *Runtime) mlx5Local(m *mlx5IBGDA, s mlx5Settings, remote []int) (ibgda.ConnInfo, error) {
	g := r.GPU
	op := func(err error, what string) error {
		return errs.Wrap(err, r.Me, "Init", "GOSHMEM_IBGDA_NIC=mlx5: %s", what)
	}
	var err error
	open := verbs.Open
	if s.gpuQueues {
		open = verbs.OpenDevX
	}
	if m.v, err = open(s.device, mlx5IBGDAPort, s.gidIndex); err != nil {
		return ibgda.ConnInfo{}, op(err, "open the device")
	}
	if s.gpuQueues {
		caps := m.v.Caps()
		if a, err := g.Ctx.Device().Attribute(cuda.AttrDMABufSupported); err == nil {
			caps.GPUChecked, caps.GPUDmabuf = true, a != 0
		}
		if err := verbs.GPUQueuesUsable(caps); err != nil {
			return ibgda.ConnInfo{}, op(err, "GOSHMEM_IBGDA_QUEUES=gpu")
		}
	}
	nq := mlx5IBGDACtx * len(remote)
	hostN := (ibgdaHostBytes(nq) + uint64(nq)*64 + 4095) &^ 4095
	if m.host, err = g.Ctx.MemHostAlloc(int(hostN), cuda.HostAllocPortable|cuda.HostAllocDeviceMap); err != nil {
		return ibgda.ConnInfo{}, op(err, "pinned block for slots and scratch words")
	}
	if hd, err := g.Ctx.MemHostGetDevicePointer(m.host); err != nil || uint64(hd) != uint64(uintptr(m.host)) {
		return ibgda.ConnInfo{}, op(errors.Newf("pinned memory at %p is device %#x (%v)", m.host, uint64(hd), err),
			"IBGDA needs unified addressing")
	}
	if m.hostMR, err = m.v.RegMR(uintptr(m.host), hostN); err != nil {
		return ibgda.ConnInfo{}, op(err, "register the pinned block")
	}
	if m.heapMR, err = r.mlx5RegHeap(m.v); err != nil {
		return ibgda.ConnInfo{}, err
	}
	me := ibgda.ConnInfo{PE: int32(r.Me), NCtx: mlx5IBGDACtx, NPEs: uint32(r.NPEs), LID: m.v.LID, Eth: m.v.Eth,
		GIDIndex: uint8(s.gidIndex), MTU: m.v.MTU, GID: m.v.GID, HeapRKey: m.heapMR.RKey,
		HeapBase: uint64(g.Base()), HeapSize: g.Size(), QPN: make([]uint32, mlx5IBGDACtx*r.NPEs)}
	for i := range me.QPN {
		me.QPN[i] = ibgda.NoQP
	}
	var blk mlx5prm.Block
	if s.gpuQueues && nq > 0 {
		if blk, err = r.mlx5GPUQueues(m, nq); err != nil {
			return me, err
		}
	}
	for c := 0; c < mlx5IBGDACtx; c++ {
		for _, pe := range remote {
			var q *verbs.QP
			var err error
			if s.gpuQueues {
				q, err = m.v.CreateDevXQP(verbs.DevXQPSpec{Umem: m.umem, SQWQEBBs: blk.SQWQEBBs, CQEs: blk.CQEs,
					Rings: blk.QPs[len(m.qps)], DeviceVA: m.qbase})
			} else {
				q, err = m.v.CreateQP(mlx5IBGDASQ, mlx5IBGDACQEs, ibgdaInline)
			}
			if err != nil {
				return me, op(err, fmt.Sprintf("QP of ctx %d -> PE %d", c, pe))
			}
			m.qps = append(m.qps, q)
			me.QPN[c*r.NPEs+pe] = q.QPN
		}
	}
	return me, nil
}

// mlx5GPUQueues allocates the GPU block holding nq QPs' rings and
// doorbell records (mlx5prm.Layout), writes its initial image (CQEs
// invalid, the rest zero), exports it as a dma-buf and registers it as one
// devx umem.
func (r *Runtime) mlx5GPUQueues(m *mlx5IBGDA, nq int) (mlx5prm.Block, error) {
	g := r.GPU
	op := func(err error, what string) error {
		return errs.Wrap(err, r.Me, "Init", "GOSHMEM_IBGDA_QUEUES=gpu: %s", what)
	}
	blk, err := mlx5prm.Layout(nq, mlx5IBGDASQ, mlx5IBGDACQEs)
	if err != nil {
		return blk, op(err, "queue layout")
	}
	if m.qraw, err = g.Ctx.MemAlloc(int(blk.Size + mlx5prm.BlockAlign)); err != nil {
		return blk, op(err, fmt.Sprintf("%d bytes of GPU memory for %d QPs' queues", blk.Size, nq))
	}
	m.qbase = (uint64(m.qraw) + mlx5prm.BlockAlign - 1) &^ (mlx5prm.BlockAlign - 1)
	img := blk.Image()
	if err := g.Ctx.MemcpyHtoD(cuda.DevicePtr(m.qbase), unsafe.Pointer(&img[0]), len(img)); err != nil {
		return blk, op(err, "initialize the queues")
	}
	fd, err := g.Ctx.MemGetDmabufFD(cuda.DevicePtr(m.qbase), int(blk.Size))
	if err != nil {
		return blk, errors.WithHint(op(errs.Mark(err, errs.ErrNotSupported), "export the queue block as a dma-buf"),
			"dma-buf needs CUDA 11.7+ with the open GPU kernel modules and Linux 5.12+; or use GOSHMEM_IBGDA_QUEUES=host")
	}
	m.umem, err = m.v.RegDmabufUmem(fd, 0, blk.Size)
	_ = syscall.Close(fd) // the umem holds its own reference
	if err != nil {
		return blk, errors.WithHint(op(err, "register the queue block with the NIC"),
			"the kernel's mlx5_ib needs dma-buf umems (Linux 5.15+); or use GOSHMEM_IBGDA_QUEUES=host")
	}
	return blk, nil
}

// mlx5RegHeap registers this PE's GPU heap as it is at Init.
func (r *Runtime) mlx5RegHeap(v *verbs.Context) (*verbs.MR, error) {
	g := r.GPU
	return mlx5RegGPU(v, g.Ctx, r.Me, "Init", "the GPU heap", uint64(g.Base()), g.Size())
}

// mlx5PageSize is the alignment of a dma-buf export's range
// (cuMemGetHandleForAddressRange: the host page size).
const mlx5PageSize = 4096

// mlx5RegGPU registers [addr, addr+bytes) of the GPU memory of ctx (what
// names the memory in errors) with the NIC: by dma-buf first (the export
// covers the range's host pages; the MR starts at addr's offset in it, so
// WQEs name the memory at addr), then ibv_reg_mr through peer memory
// (nvidia-peermem). Without either the error says what each one needs.
func mlx5RegGPU(v *verbs.Context, ctx *cuda.Context, me int, op, what string, addr, bytes uint64) (*verbs.MR, error) {
	if v == nil {
		return nil, errs.Hint(errs.ErrNotSupported, "GOSHMEM_IBGDA_NIC=mlx5 needs a ConnectX that rdma-core finds", me, op,
			"GOSHMEM_IBGDA_NIC=mlx5: no open mlx5 device to register %s (%d bytes at %#x) with", what, bytes, addr)
	}
	start := addr &^ (mlx5PageSize - 1)
	span := (addr+bytes+mlx5PageSize-1)&^(mlx5PageSize-1) - start
	fd, dmaErr := ctx.MemGetDmabufFD(cuda.DevicePtr(start), int(span))
	if dmaErr == nil {
		mr, err := v.RegDmabufMR(fd, addr-start, bytes, addr)
		_ = syscall.Close(fd) // the MR holds its own reference
		if err == nil {
			return mr, nil
		}
		dmaErr = err
	}
	mr, err := v.RegMR(uintptr(addr), bytes)
	if err == nil {
		return mr, nil
	}
	return nil, errs.Hint(errs.ErrNotSupported,
		"dma-buf needs CUDA 11.7+ with the open GPU kernel modules and Linux 5.12+; the fallback needs the "+
			"nvidia-peermem module loaded; or use GOSHMEM_GPU_TRANSPORT=proxy", me, op,
		"GOSHMEM_IBGDA_NIC=mlx5: the NIC cannot register %s (%d bytes at %#x): dma-buf: %v; peer memory: %v",
		what, bytes, addr, dmaErr, err)
}

// regBuffer implements ibgdaNIC: a memory region of the ConnectX.
func (m *mlx5IBGDA) regBuffer(addr, bytes uint64, _ int) (uint32, func() error, error) {
	mr, err := mlx5RegGPU(m.v, m.gctx, m.me, "RegisterDevice", "the registered GPU buffer", addr, bytes)
	if err != nil {
		return 0, nil, err
	}
	return mr.LKey, mr.Close, nil
}

// regHeap implements ibgdaNIC: one memory region over this PE's heap up to
// size (every chunk mapped so far), whose rkey the peers name.
func (m *mlx5IBGDA) regHeap(size uint64) (heapKeys, error) {
	mr, err := mlx5RegGPU(m.v, m.gctx, m.me, "AllocDevice", "the grown GPU heap", uint64(m.gpu.Base()), size)
	if err != nil {
		return heapKeys{}, err
	}
	return heapKeys{lkey: mr.LKey, publish: mr.RKey, rkey: func(_ int, published uint32) uint32 { return published },
		release: mr.Close}, nil
}

// mlx5Connect connects every QP to its peer's, maps the queues (and, with
// GPU doorbells, the UAR pages) into the GPU, lays out the device state
// and routes the other PEs through it.
func (r *Runtime) mlx5Connect(m *mlx5IBGDA, s mlx5Settings, remote []int, all []byte, recLen int) error {
	g := r.GPU
	infos, err := r.mlx5Peers(all, recLen, mlx5IBGDACtx)
	if err != nil {
		return err
	}
	for c := 0; c < mlx5IBGDACtx; c++ {
		for k, pe := range remote {
			q := m.qps[c*len(remote)+k]
			peer := infos[pe]
			rq := peer.QPNFor(c, r.Me)
			if rq == ibgda.NoQP {
				return errs.New(errs.ErrInvalidArgument, r.Me, "Init", "PE %d has no QP of ctx %d toward PE %d", pe, c, r.Me)
			}
			if peer.Eth != m.v.Eth {
				return errs.New(errs.ErrNotSupported, r.Me, "Init", "PE %d's port is %s, ours %s", pe,
					linkName(peer.Eth), linkName(m.v.Eth))
			}
			if err := q.Connect(verbs.Remote{QPN: rq, LID: peer.LID, GID: peer.GID, MTU: peer.MTU}); err != nil {
				return errs.Wrap(err, r.Me, "Init", "connect ctx %d -> PE %d", c, pe)
			}
		}
	}

	// The queues into the GPU: every page of rdma-core's rings, merged
	// (none with GPU queues).
	var ranges []verbs.HostRange
	for _, q := range m.qps {
		ranges = append(ranges, q.Ranges()...)
	}
	toDev, err := r.mlx5MapHost(m, mergeRanges(ranges), cuda.HostRegisterPortable|cuda.HostRegisterDeviceMap, "")
	if err != nil {
		return err
	}
	var bells func(q *verbs.QP) uint64
	hb := &bump{base: uint64(uintptr(m.host))}
	mem := unsafe.Slice((*byte)(m.host), ibgdaHostBytes(len(m.qps))+uint64(len(m.qps))*64)
	if s.cpuBell {
		var rqs []ibgda.RingQP
		stand := map[*verbs.QP]uint64{}
		for _, q := range m.qps {
			reg := q.BFReg
			stand[q] = hb.take(8)
			rqs = append(rqs, ibgda.RingQP{QPN: q.QPN, DBRec: q.DBRecBytes(), Ring: func(v uint64) { verbs.Ring(reg, v) }})
		}
		if m.ringer, err = ibgda.NewRinger(rqs); err != nil {
			return err
		}
		bells = func(q *verbs.QP) uint64 { return stand[q] }
	} else {
		var pages []verbs.HostRange
		for _, q := range m.qps {
			pages = append(pages, q.UARPage())
		}
		uarDev, err := r.mlx5MapHost(m, mergeRanges(pages),
			cuda.HostRegisterPortable|cuda.HostRegisterDeviceMap|cuda.HostRegisterIOMemory, m.v.Name)
		if err != nil {
			return err
		}
		bells = func(q *verbs.QP) uint64 { return uarDev(uint64(q.BFReg)) }
	}

	nq := len(m.qps)
	devN := ibgdaDevBytes(nq, r.NPEs, mlx5IBGDACtx, ibgda.MaxWQEBBs)
	if m.dev, err = g.Ctx.MemAlloc(int(devN)); err != nil {
		return errs.Wrap(err, r.Me, "Init", "IBGDA device state")
	}
	rkeys, bases := make([]uint32, r.NPEs), make([]uint64, r.NPEs)
	for pe, ci := range infos {
		rkeys[pe], bases[pe] = ci.HeapRKey, ci.HeapBase
	}
	img := make([]byte, devN)
	lay, err := r.layoutIBGDA(ibgdaSpec{
		nctx: mlx5IBGDACtx, remote: remote, heapLKey: m.heapMR.LKey, rkey: rkeys, remoteBase: bases,
		slotLKey: m.hostMR.LKey, sqMax: ibgda.MaxWQEBBs, heapBase: uint64(g.Base()), heapSize: g.Size(),
		flags: mlx5StateFlags(s.gpuQueues),
		rings: func(i, c, pe int, d *ibgda.QPDesc) error {
			q := m.qps[i]
			mlx5Rings(q, toDev, d)
			d.DB = bells(q)
			return nil
		},
	}, &bump{base: uint64(m.dev)}, img, hb, mem)
	if err != nil {
		return err
	}
	m.report, m.names = lay.report, lay.names
	if err := g.Ctx.MemcpyHtoD(m.dev, unsafe.Pointer(&img[0]), len(img)); err != nil {
		return err
	}
	if m.ringer != nil {
		m.ringer.Start()
	}
	isRemote := make([]bool, r.NPEs)
	for _, pe := range remote {
		isRemote[pe] = true
	}
	if err := g.ConfigureRemote(isRemote, cudatr.RemoteIBGDA, lay.stateAddr); err != nil {
		return errs.Wrap(err, r.Me, "Init", "device state for IBGDA")
	}
	m.mem = lay.mem(r, m, remote)
	g.OnGrow(m.mem.grow)
	r.preloadLib()
	return nil
}

// mlx5Rings fills d's ring fields from q: host queues translated to the
// device addresses of their GPU mapping (toDev), GPU queues (a devx QP)
// taken as they are.
func mlx5Rings(q *verbs.QP, toDev func(uint64) uint64, d *ibgda.QPDesc) {
	ring := toDev
	if q.GPU {
		ring = func(a uint64) uint64 { return a }
	}
	d.QPN, d.SQWQEBBs, d.CQEs = q.QPN, q.SQWQEBB, q.CQEs
	d.SQBuf, d.DBRec, d.CQBuf, d.CQDBRec = ring(uint64(q.SQBuf)), ring(uint64(q.DBRec)), ring(uint64(q.CQBuf)), ring(uint64(q.CQDBRec))
}

// mlx5StateFlags are the device state's flags for the queue placement:
// rdma-core's rings are host memory (system-scope doorbell ordering);
// GPU queues allow GPU-scope builds (the doorbell itself is MMIO).
func mlx5StateFlags(gpuQueues bool) uint32 {
	if gpuQueues {
		return 0
	}
	return ibgda.StateHostQueues
}

// mlx5Peers decodes the allgathered records (a status byte, then the
// ibgda.ConnInfo of nctx contexts): a PE whose local setup failed makes
// this one fail too, naming it.
func (r *Runtime) mlx5Peers(all []byte, recLen, nctx int) ([]ibgda.ConnInfo, error) {
	if len(all) != recLen*r.NPEs {
		return nil, errors.AssertionFailedf("allgather of %d bytes for %d PEs of %d", len(all), r.NPEs, recLen)
	}
	infos := make([]ibgda.ConnInfo, r.NPEs)
	for pe := 0; pe < r.NPEs; pe++ {
		b := all[pe*recLen : (pe+1)*recLen]
		if b[0] != 1 {
			return nil, errs.New(errs.ErrNotSupported, r.Me, "Init",
				"GOSHMEM_IBGDA_NIC=mlx5: PE %d failed its IBGDA setup (its own Init error says why)", pe)
		}
		ci, err := ibgda.DecodeConnInfo(b[1:], pe, nctx, r.NPEs)
		if err != nil {
			return nil, errs.Wrap(err, r.Me, "Init", "")
		}
		infos[pe] = ci
	}
	return infos, nil
}

func linkName(eth bool) string {
	if eth {
		return "Ethernet (RoCE)"
	}
	return "InfiniBand"
}

// mergeRanges sorts page ranges and merges those that overlap or touch, so
// that no page is registered twice.
func mergeRanges(rs []verbs.HostRange) []verbs.HostRange {
	sort.Slice(rs, func(i, j int) bool { return uintptr(rs[i].P) < uintptr(rs[j].P) })
	var out []verbs.HostRange
	for _, x := range rs {
		if n := len(out); n > 0 {
			last := &out[n-1]
			if end := uintptr(last.P) + uintptr(last.N); uintptr(x.P) <= end {
				if xe := uintptr(x.P) + uintptr(x.N); xe > end {
					last.N += int(xe - end)
				}
				continue
			}
		}
		out = append(out, x)
	}
	return out
}

// mlx5MapHost registers host ranges with the GPU (cuMemHostRegister with
// flags) and returns the host -> device address translation. uarDev names
// the device when the ranges are UAR pages: a failure there is the
// peer-mapping permission's, with its hint.
func (r *Runtime) mlx5MapHost(m *mlx5IBGDA, rs []verbs.HostRange, flags uint, uarDev string) (func(uint64) uint64, error) {
	type mapped struct{ host, dev, n uint64 }
	var ms []mapped
	for _, x := range rs {
		if err := m.gctx.MemHostRegister(x.P, x.N, flags); err != nil {
			if uarDev != "" {
				return nil, errors.WithHint(errs.Wrap(errs.Mark(err, errs.ErrNotSupported), r.Me, "Init",
					"GOSHMEM_IBGDA_DOORBELL=gpu: cuMemHostRegister(IOMEMORY) of %s's UAR page at %p "+
						"(the GPU may not map the NIC's doorbell page)", uarDev, x.P), peerMappingHint)
			}
			return nil, errs.Wrap(err, r.Me, "Init", "map rdma-core's queue pages at %p (%d bytes) into the GPU", x.P, x.N)
		}
		m.registered = append(m.registered, x.P)
		d, err := m.gctx.MemHostGetDevicePointer(x.P)
		if err != nil {
			return nil, err
		}
		ms = append(ms, mapped{uint64(uintptr(x.P)), uint64(d), uint64(x.N)})
	}
	return func(a uint64) uint64 {
		for _, x := range ms {
			if a >= x.host && a < x.host+x.n {
				return x.dev + (a - x.host)
			}
		}
		return 0 // not reached: every address comes from a range registered above
	}, nil
}
