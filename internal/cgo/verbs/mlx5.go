package verbs

/*
#include <stdlib.h>
#include "mlx5.h"
*/
import "C"

import (
	"fmt"
	"syscall"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// Context is an opened mlx5 device for IBGDA: its protection domain, the
// port's address and a devx UAR. Close releases it (after every QP and MR
// made from it).
//
// Written against rdma-core 44's libibverbs/libmlx5 and compiled on every
// build; it has never run on a ConnectX (none was available to goshmem's
// development): what is exercised without one is Open's failure.
type Context struct {
	c *C.gv_ctx_t
	// Name is the device ("mlx5_0"), Port the port number in use.
	Name string
	Port int
	// Eth is true on RoCE (peers addressed by GID), false on InfiniBand
	// (by LID).
	Eth      bool
	LID      uint16
	GID      [16]byte
	GIDIndex int
	MTU      uint8 // the port's active MTU (IBV_MTU_*)
	MaxQPWR  int
	MaxCQE   int
	// UAR is the devx UAR's doorbell register (0 when allocation failed:
	// UARErr says why); UARNonCached whether it is the NC kind.
	UAR          uintptr
	UARNonCached bool
	UARErr       error
	// DevX is true when the context was opened for devx (OpenDevX:
	// mlx5dv_open_device with MLX5DV_CONTEXT_FLAGS_DEVX); DevXErr says
	// why not when it was asked for. PDN is the PD's number, EQN an event
	// queue for devx CQs (EQNErr: mlx5dv_devx_query_eqn failed),
	// UARPageID the devx UAR's page (the uar_page of devx CQs and QPs).
	DevX      bool
	DevXErr   error
	PDN       uint32
	EQN       uint32
	EQNErr    error
	UARPageID uint32
}

// fail is the error of a failed rdma-core call: the call, the device and
// errno, wrapping ErrNotSupported for what means "this machine cannot run
// IBGDA" (no device, no permission, no support).
func fail(call, dev, what string, rc C.int) error {
	e := syscall.Errno(rc)
	msg := fmt.Sprintf("verbs: %s(%s%s): %v", call, dev, what, e)
	switch e {
	case syscall.ENODEV, syscall.ENOSYS, syscall.EOPNOTSUPP, syscall.EPERM, syscall.EACCES, syscall.EPROTONOSUPPORT:
		return errors.Wrap(errs.ErrNotSupported, msg)
	}
	return errors.Newf("%s", msg)
}

// Open opens the mlx5 device named dev (the first one rdma-core lists when
// dev is ""), port port (1-based), GID table entry gidIndex (RoCE), and
// allocates a PD and a devx UAR (non-cached, else BlueFlame; a failure is
// kept in UARErr, not returned: QPs from CreateQP use the UAR rdma-core
// assigns them). Without such a device the error matches
// errs.ErrNotSupported and carries a hint.
func Open(dev string, port, gidIndex int) (*Context, error) { return open(dev, port, gidIndex, false) }

// OpenDevX is Open with the device opened for devx (mlx5dv_open_device,
// MLX5DV_CONTEXT_FLAGS_DEVX), as CreateDevXQP needs. A device that refuses
// devx is still opened the plain way, with the refusal in DevXErr, so
// that the caller decides (GPUQueuesUsable).
func OpenDevX(dev string, port, gidIndex int) (*Context, error) {
	return open(dev, port, gidIndex, true)
}

func open(dev string, port, gidIndex int, devx bool) (*Context, error) {
	if err := load(); err != nil {
		return nil, err
	}
	c := (*C.gv_ctx_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gv_ctx_t{}))))
	if c == nil {
		return nil, errors.New("verbs: out of memory")
	}
	cdev := C.CString(dev)
	defer C.free(unsafe.Pointer(cdev))
	var call *C.char
	if rc := C.gv_open(cdev, C.int(port), C.int(gidIndex), C.int(b2i(devx)), c, &call); rc != 0 {
		C.free(unsafe.Pointer(c))
		name := dev
		if name == "" {
			name = "first mlx5 device"
		}
		err := fail(C.GoString(call), name, fmt.Sprintf(", port %d", port), rc)
		named := ""
		if dev != "" {
			named = " named " + dev
		}
		switch {
		case C.GoString(call) == "ibv_get_device_list":
			return nil, errors.WithHint(errors.Wrapf(errs.ErrNotSupported,
				"verbs: no mlx5 device%s: ibv_get_device_list: %v (no RDMA device or kernel support)", named, syscall.Errno(rc)),
				noDeviceHint)
		case syscall.Errno(rc) == syscall.ENODEV:
			return nil, errors.WithHint(errors.Wrapf(errs.ErrNotSupported,
				"verbs: no mlx5 device%s (no RDMA device that mlx5dv_is_supported accepts)", named), noDeviceHint)
		}
		switch syscall.Errno(rc) {
		case syscall.EPERM, syscall.EACCES:
			return nil, errors.WithHint(err, "check the permissions of /dev/infiniband/uverbs* and the memlock limit (ulimit -l)")
		case syscall.ENETDOWN:
			return nil, errors.WithHint(err, "the port is not ACTIVE: check the link (ibstat) or pick another port")
		}
		return nil, err
	}
	ctx := &Context{c: c, Name: C.GoString(&c.name[0]), Port: port, Eth: c.eth != 0, LID: uint16(c.lid),
		GIDIndex: gidIndex, MTU: uint8(c.active_mtu), MaxQPWR: int(c.max_qp_wr), MaxCQE: int(c.max_cqe)}
	for i := range ctx.GID {
		ctx.GID[i] = byte(c.gid[i])
	}
	if c.uar != nil {
		ctx.UAR = uintptr(c.uar.reg_addr)
		ctx.UARNonCached = c.uar_nc != 0
	} else {
		ctx.UARErr = fail("mlx5dv_devx_alloc_uar", ctx.Name, ", NC then BF", C.int(c.uar_errno))
	}
	ctx.UARPageID = uint32(c.uar_page_id)
	if devx {
		ctx.DevX = c.devx != 0
		if !ctx.DevX {
			ctx.DevXErr = fail("mlx5dv_open_device", ctx.Name, ", MLX5DV_CONTEXT_FLAGS_DEVX", C.int(c.devx_errno))
		} else {
			ctx.PDN, ctx.EQN = uint32(c.pdn), uint32(c.eqn)
			if c.eqn_errno != 0 {
				ctx.EQNErr = fail("mlx5dv_devx_query_eqn", ctx.Name, ", vector 0", C.int(c.eqn_errno))
			}
		}
	}
	return ctx, nil
}

// noDeviceHint is the hint of every "no mlx5 device" error.
const noDeviceHint = "IBGDA needs a ConnectX (mlx5) NIC visible to rdma-core (ibv_devices lists it); " +
	"without one use GOSHMEM_GPU_TRANSPORT=proxy, or GOSHMEM_IBGDA_NIC=soft for the emulation"

// Close releases the UAR, the PD and the device (ibv_close_device).
func (c *Context) Close() error {
	if c == nil || c.c == nil {
		return nil
	}
	C.gv_close(c.c)
	C.free(unsafe.Pointer(c.c))
	c.c = nil
	return nil
}

// QP is one RC QP with its own CQ, both in host memory that rdma-core
// allocated, as mlx5dv_init_obj exposes them: what the device header's
// goshmemi_ibgda_qp_t needs. Addresses are host virtual addresses (the
// caller makes them GPU-visible, e.g. cuMemHostRegister).
type QP struct {
	q   *C.gv_qp_t
	ctx *Context
	// GPU is true for a devx QP (CreateDevXQP): the ring and record
	// fields below are then device addresses in a umem, not host memory.
	GPU     bool
	QPN     uint32
	SQBuf   uintptr
	SQWQEBB uint32 // SQ size in 64-byte WQEBBs (a power of two)
	DBRec   uintptr
	BFReg   uintptr // the BlueFlame (doorbell) register of the QP's UAR page
	BFSize  uint32
	CQBuf   uintptr
	CQEs    uint32
	CQDBRec uintptr
	CQN     uint32
}

// CreateQP creates a CQ of at least cqes entries and an RC QP whose SQ
// holds at least sqWQEBBs WQEBBs and maxInline bytes of inline data
// (ibv_create_cq, ibv_create_qp_ex, mlx5dv_init_obj). The rings must have
// the shapes the device header assumes: 64-byte WQEBBs and CQEs, power-of-
// two sizes; anything else is an error naming what rdma-core returned.
func (c *Context) CreateQP(sqWQEBBs, cqes, maxInline uint32) (*QP, error) {
	q := (*C.gv_qp_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gv_qp_t{}))))
	if q == nil {
		return nil, errors.New("verbs: out of memory")
	}
	var call *C.char
	if rc := C.gv_create_qp(c.c, C.uint32_t(sqWQEBBs), C.uint32_t(cqes), C.uint32_t(maxInline), q, &call); rc != 0 {
		C.free(unsafe.Pointer(q))
		return nil, fail(C.GoString(call), c.Name, fmt.Sprintf(", RC QP of %d send WRs, CQ of %d", sqWQEBBs, cqes), rc)
	}
	qp := &QP{q: q, ctx: c, QPN: uint32(q.qpn), SQBuf: uintptr(q.sq_buf), SQWQEBB: uint32(q.sq_wqe_cnt),
		DBRec: uintptr(q.dbrec), BFReg: uintptr(q.bf_reg), BFSize: uint32(q.bf_size), CQBuf: uintptr(q.cq_buf),
		CQEs: uint32(q.cqe_cnt), CQDBRec: uintptr(q.cq_dbrec), CQN: uint32(q.cqn)}
	pow2 := func(n uint32) bool { return n != 0 && n&(n-1) == 0 }
	switch {
	case q.sq_stride != 64 || !pow2(qp.SQWQEBB) || qp.SQWQEBB > 32768:
		err := errors.Newf("verbs: mlx5dv_init_obj(%s): QP %#x has an SQ of %d WQEs of stride %d; "+
			"IBGDA needs 64-byte WQEBBs, a power of two, at most 32768", c.Name, qp.QPN, qp.SQWQEBB, int(q.sq_stride))
		_ = qp.Close()
		return nil, err
	case q.cqe_size != 64 || !pow2(qp.CQEs):
		err := errors.Newf("verbs: mlx5dv_init_obj(%s): CQ %#x has %d CQEs of %d bytes; IBGDA needs 64-byte CQEs "+
			"(unset MLX5_CQE_SIZE) and a power-of-two count", c.Name, qp.CQN, qp.CQEs, int(q.cqe_size))
		_ = qp.Close()
		return nil, err
	case qp.BFReg == 0:
		err := errors.Newf("verbs: mlx5dv_init_obj(%s): QP %#x has no BlueFlame/doorbell register", c.Name, qp.QPN)
		_ = qp.Close()
		return nil, err
	}
	return qp, nil
}

// Remote is the peer QP a QP connects to (from the peer's ibgda.ConnInfo).
type Remote struct {
	QPN uint32
	LID uint16   // InfiniBand
	GID [16]byte // RoCE
	MTU uint8    // the peer port's active MTU (0: ours)
}

// Connect moves the QP RESET -> INIT -> RTR -> RTS toward r (ibv_modify_qp):
// remote write, read and atomic access, PSNs 0, the smaller active MTU,
// addressed by GID on RoCE and by LID on InfiniBand.
func (q *QP) Connect(r Remote) error {
	if q.GPU {
		return q.connectDevX(r)
	}
	var cr C.gv_remote_t
	cr.qpn = C.uint32_t(r.QPN)
	cr.lid = C.uint16_t(r.LID)
	cr.mtu = C.uint8_t(r.MTU)
	for i, b := range r.GID {
		cr.gid[i] = C.uint8_t(b)
	}
	var call *C.char
	if rc := C.gv_connect(q.ctx.c, q.q, &cr, &call); rc != 0 {
		return fail(C.GoString(call), q.ctx.Name, fmt.Sprintf(", QP %#x -> remote QP %#x", q.QPN, r.QPN), rc)
	}
	return nil
}

// Close destroys the QP and its CQ.
func (q *QP) Close() error {
	if q == nil || q.q == nil {
		return nil
	}
	C.gv_destroy_qp(q.q)
	C.free(unsafe.Pointer(q.q))
	q.q = nil
	return nil
}

// MR is a registered memory region.
type MR struct {
	mr   *C.struct_gv_ibv_mr
	ctx  *Context
	LKey uint32
	RKey uint32
}

// RegDmabufMR registers length bytes at offset of the dma-buf fd (a GPU
// heap exported with cuMemGetHandleForAddressRange) so that WQEs name them
// at iova (ibv_reg_dmabuf_mr), with local write and remote read, write and
// atomic access.
func (c *Context) RegDmabufMR(fd int, offset, length, iova uint64) (*MR, error) {
	var mr *C.struct_gv_ibv_mr
	var call *C.char
	if rc := C.gv_reg_dmabuf(c.c, C.int(fd), C.uint64_t(offset), C.uint64_t(length), C.uint64_t(iova), &mr, &call); rc != 0 {
		return nil, fail(C.GoString(call), c.Name, fmt.Sprintf(", dma-buf fd %d, %d bytes at iova %#x", fd, length, iova), rc)
	}
	return &MR{mr: mr, ctx: c, LKey: uint32(mr.lkey), RKey: uint32(mr.rkey)}, nil
}

// RegMR registers length bytes at addr (ibv_reg_mr). For GPU memory this
// works only with the nvidia-peermem kernel module loaded (peer memory);
// the error then says so.
func (c *Context) RegMR(addr uintptr, length uint64) (*MR, error) {
	var mr *C.struct_gv_ibv_mr
	var call *C.char
	if rc := C.gv_reg_mr(c.c, C.uintptr_t(addr), C.uint64_t(length), &mr, &call); rc != 0 {
		return nil, fail(C.GoString(call), c.Name, fmt.Sprintf(", %d bytes at %#x", length, addr), rc)
	}
	return &MR{mr: mr, ctx: c, LKey: uint32(mr.lkey), RKey: uint32(mr.rkey)}, nil
}

// Close deregisters the region (ibv_dereg_mr).
func (m *MR) Close() error {
	if m == nil || m.mr == nil {
		return nil
	}
	rc := C.gv_dereg_mr(m.mr)
	m.mr = nil
	if rc != 0 {
		return fail("ibv_dereg_mr", m.ctx.Name, "", rc)
	}
	return nil
}

// Ring performs the CPU-assisted doorbell: a fence, the 8-byte store of v
// (the doorbell's bytes in memory order) to the doorbell register reg, and
// a write-combining flush. reg is a BFReg or a Context's UAR.
func Ring(reg uintptr, v uint64) {
	C.gv_ring(C.uintptr_t(reg), C.uint64_t(v))
}

// HostRange is host memory rdma-core allocated for a QP (page-aligned),
// for the caller to make GPU-visible (cuMemHostRegister).
type HostRange struct {
	P unsafe.Pointer
	N int
}

// pageRange is the page-aligned range covering n bytes at p.
func pageRange(p unsafe.Pointer, n int) HostRange {
	off := int(uintptr(p) & 4095)
	return HostRange{P: unsafe.Add(p, -off), N: (off + n + 4095) &^ 4095}
}

// Ranges returns the pages holding the QP's SQ, doorbell record, CQ and CQ
// doorbell record (several QPs may share a doorbell-record page); none for
// a devx QP, whose queues are GPU memory already.
func (q *QP) Ranges() []HostRange {
	if q.GPU {
		return nil
	}
	return []HostRange{
		pageRange(q.q.sq_buf, int(q.SQWQEBB)*64),
		pageRange(q.q.dbrec, 8),
		pageRange(q.q.cq_buf, int(q.CQEs)*64),
		pageRange(q.q.cq_dbrec, 4),
	}
}

// UARPage is the UAR page (4 KiB of the NIC's BAR, mmap'd by rdma-core)
// holding the QP's doorbell register BFReg.
func (q *QP) UARPage() HostRange { return pageRange(q.q.bf_reg, 8) }

// DBRecBytes is the QP's 8-byte doorbell record, for the CPU-assisted
// ringer to watch; nil for a devx QP (the record is in GPU memory, which
// the ringer cannot read: GOSHMEM_IBGDA_QUEUES=gpu refuses
// GOSHMEM_IBGDA_DOORBELL=cpu).
func (q *QP) DBRecBytes() []byte {
	if q.GPU {
		return nil
	}
	return unsafe.Slice((*byte)(q.q.dbrec), 8)
}
