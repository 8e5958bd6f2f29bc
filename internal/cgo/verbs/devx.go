package verbs

/*
#include <stdlib.h>
#include "mlx5.h"

// A devx QP rings the context's devx UAR: its doorbell register is the
// QP's BlueFlame register, whose page UARPage maps into the GPU.
static void gv_qp_use_uar(gv_qp_t *q, const gv_ctx_t *c) { q->bf_reg = c->uar ? c->uar->reg_addr : NULL; }
*/
import "C"

import (
	"fmt"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/mlx5prm"
)

// Queues in GPU memory (GOSHMEM_IBGDA_QUEUES=gpu), NVSHMEM's
// nic_buf_on_gpumem: the SQ ring, the CQ ring and both doorbell records of
// every QP lie in one block of GPU memory that the caller allocated and
// exported as a dma-buf; it is registered once as a devx umem, and the CQ
// and the RC QP are devx objects created from PRM mailboxes
// (internal/mlx5prm) naming offsets in that umem, with the Context's devx
// UAR page as their uar_page (the doorbell register GPU threads store to,
// mapped into the GPU as for host queues). Written against rdma-core 44 and
// the PRM layouts; never run on a ConnectX.

// HaveUmemDmabuf reports whether the loaded libmlx5 takes dma-buf umems
// (MLX5DV_UMEM_MASK_DMABUF, rdma-core >= 43), loading rdma-core if needed:
// false when it cannot be loaded or its file name says an older release;
// true when the name carries no release (RegDmabufUmem then reports
// libmlx5's refusal).
func HaveUmemDmabuf() bool {
	r, err := loaded()
	return err == nil && (r < 0 || r >= umemDmabufRelease)
}

// Umem is a registered devx umem.
type Umem struct {
	u   *C.struct_gv_mlx5dv_devx_umem
	ctx *Context
	ID  uint32
}

// RegDmabufUmem registers length bytes at offset of the dma-buf fd as a
// devx umem with 4 KiB pages (mlx5dv_devx_umem_reg_ex with
// MLX5DV_UMEM_MASK_DMABUF), local write access (the NIC writes CQEs). The
// context must be a devx one (OpenDevX).
func (c *Context) RegDmabufUmem(fd int, offset, length uint64) (*Umem, error) {
	if !c.DevX {
		return nil, errors.Wrapf(errs.ErrNotSupported, "verbs: mlx5dv_devx_umem_reg_ex(%s): the context was not opened for devx", c.Name)
	}
	var u *C.struct_gv_mlx5dv_devx_umem
	var call *C.char
	if rc := C.gv_umem_reg_dmabuf(c.c, C.int(fd), C.uint64_t(offset), C.uint64_t(length), &u, &call); rc != 0 {
		return nil, fail(C.GoString(call), c.Name, fmt.Sprintf(", dma-buf fd %d, %d bytes at offset %#x", fd, length, offset), rc)
	}
	return &Umem{u: u, ctx: c, ID: uint32(u.umem_id)}, nil
}

// Close deregisters the umem (after every object using it is destroyed).
func (u *Umem) Close() error {
	if u == nil || u.u == nil {
		return nil
	}
	rc := C.gv_umem_dereg(u.u)
	u.u = nil
	if rc != 0 {
		return fail("mlx5dv_devx_umem_dereg", u.ctx.Name, fmt.Sprintf(", umem %#x", u.ID), rc)
	}
	return nil
}

// DevXQPSpec places one QP's queues in a umem: byte offsets of the rings
// and records in it (mlx5prm.Layout), and the device addresses they have
// for GPU threads (the umem's block base + offset).
type DevXQPSpec struct {
	Umem     *Umem
	SQWQEBBs uint32 // a power of two <= 32768
	CQEs     uint32 // a power of two
	Rings    mlx5prm.Rings
	DeviceVA uint64 // device address of the umem's first byte
}

// devxCall runs one devx create (obj == nil) or modify and turns a failure
// into an error naming the command, errno and the firmware's status and
// syndrome.
func (c *Context) devxCall(what string, obj *C.struct_gv_mlx5dv_devx_obj, in []byte, outLen int) (*C.struct_gv_mlx5dv_devx_obj, []byte, error) {
	cin := C.CBytes(in)
	defer C.free(cin)
	cout := C.calloc(1, C.size_t(outLen))
	defer C.free(cout)
	var rc C.int
	var call *C.char
	created := obj
	if obj == nil {
		rc = C.gv_devx_create(c.c, cin, C.size_t(len(in)), cout, C.size_t(outLen), &created, &call)
	} else {
		rc = C.gv_devx_modify(obj, cin, C.size_t(len(in)), cout, C.size_t(outLen))
		call = nil
	}
	out := C.GoBytes(cout, C.int(outLen))
	if rc != 0 {
		name := "mlx5dv_devx_obj_modify"
		if call != nil {
			name = C.GoString(call)
		}
		err := fail(name, c.Name, ", "+what, rc)
		if o := mlx5prm.Decode(out); o.Status != 0 {
			err = errors.Wrapf(err, "firmware %s", o)
		}
		return nil, out, err
	}
	return created, out, nil
}

// CreateDevXQP creates a CQ and an RC QP (send queue only) whose rings and
// doorbell records are in s.Umem at s.Rings (mlx5dv_devx_obj_create with
// CREATE_CQ and CREATE_QP mailboxes), on the devx UAR page. The QP's ring
// and record fields are device addresses (s.DeviceVA + offset); BFReg is
// the devx UAR's doorbell register, so UARPage covers it as for host
// queues.
func (c *Context) CreateDevXQP(s DevXQPSpec) (*QP, error) {
	if err := GPUQueuesUsable(c.caps()); err != nil {
		return nil, err
	}
	lsq, lcq := mlx5prm.Log2(s.SQWQEBBs), mlx5prm.Log2(s.CQEs)
	if lsq < 0 || s.SQWQEBBs > 32768 || lcq < 0 {
		return nil, errors.Wrapf(errs.ErrInvalidArgument, "verbs: devx QP on %s: SQ of %d WQEBBs, CQ of %d CQEs; want powers of two, SQ <= 32768",
			c.Name, s.SQWQEBBs, s.CQEs)
	}
	q := (*C.gv_qp_t)(C.calloc(1, C.size_t(unsafe.Sizeof(C.gv_qp_t{}))))
	if q == nil {
		return nil, errors.New("verbs: out of memory")
	}
	qp := &QP{q: q, ctx: c, GPU: true, SQWQEBB: s.SQWQEBBs, CQEs: s.CQEs, BFReg: c.UAR, BFSize: 0,
		SQBuf: uintptr(s.DeviceVA + s.Rings.SQ), DBRec: uintptr(s.DeviceVA + s.Rings.DBR),
		CQBuf: uintptr(s.DeviceVA + s.Rings.CQ), CQDBRec: uintptr(s.DeviceVA + s.Rings.CQDBR)}
	C.gv_qp_use_uar(q, c.c)
	cq, out, err := c.devxCall(fmt.Sprintf("CREATE_CQ of %d CQEs in umem %#x", s.CQEs, s.Umem.ID), nil,
		mlx5prm.CreateCQ(mlx5prm.CQ{LogSize: uint8(lcq), UARPage: c.UARPageID, EQN: c.EQN,
			UmemID: s.Umem.ID, UmemOffset: s.Rings.CQ, DBRUmemID: s.Umem.ID, DBROffset: s.Rings.CQDBR}),
		mlx5prm.CreateOutBytes)
	if err != nil {
		_ = qp.Close()
		return nil, err
	}
	q.dcq = cq
	qp.CQN = mlx5prm.ObjNum(out)
	dq, out, err := c.devxCall(fmt.Sprintf("CREATE_QP RC, SQ of %d WQEBBs in umem %#x, CQ %#x", s.SQWQEBBs, s.Umem.ID, qp.CQN), nil,
		mlx5prm.CreateQP(mlx5prm.QP{PD: c.PDN, UARPage: c.UARPageID, CQN: qp.CQN, LogSQSize: uint8(lsq),
			UmemID: s.Umem.ID, UmemOffset: s.Rings.SQ, DBRUmemID: s.Umem.ID, DBROffset: s.Rings.DBR}),
		mlx5prm.CreateOutBytes)
	if err != nil {
		_ = qp.Close()
		return nil, err
	}
	q.dqp = dq
	qp.QPN = mlx5prm.ObjNum(out)
	return qp, nil
}

// connectDevX moves a devx QP RESET -> INIT -> RTR -> RTS with the
// RST2INIT_QP, INIT2RTR_QP and RTR2RTS_QP commands, carrying what the
// verbs path's ibv_modify_qp calls carry (gv_connect): remote write, read
// and atomic access; the smaller active MTU; PSNs 0; max_dest_rd_atomic
// and max_rd_atomic min(device, 16); min RNR timer 12; timeout 14, retry
// and RNR retry 7; InfiniBand by LID, RoCE by GID with the next hop's MAC
// and UDP source port that rdma-core resolves for an AH.
func (q *QP) connectDevX(r Remote) error {
	c := q.ctx
	what := func(cmd string) string { return fmt.Sprintf("%s of QP %#x -> remote QP %#x", cmd, q.QPN, r.QPN) }
	if _, _, err := c.devxCall(what("RST2INIT_QP"), q.q.dqp, mlx5prm.RST2INIT(q.QPN, uint8(c.Port)), mlx5prm.ModifyQPOutBytes); err != nil {
		return err
	}
	path := mlx5prm.Path{Port: uint8(c.Port), Eth: c.Eth, RLID: r.LID}
	if c.Eth {
		path.RGID, path.SGIDIndex, path.HopLimit = r.GID, uint8(c.GIDIndex), 64
		var mac [6]C.uint8_t
		var sport C.uint16_t
		var call *C.char
		cg := C.CBytes(r.GID[:])
		rc := C.gv_roce_next_hop(c.c, (*C.uint8_t)(cg), 64, &mac[0], &sport, &call)
		C.free(cg)
		if rc != 0 {
			return fail(C.GoString(call), c.Name, fmt.Sprintf(", GID index %d toward QP %#x", c.GIDIndex, r.QPN), rc)
		}
		for i := range mac {
			path.RMAC[i] = byte(mac[i])
		}
		path.UDPSport = uint16(sport)
	}
	mtu := c.MTU
	if r.MTU != 0 && r.MTU < mtu {
		mtu = r.MTU
	}
	rd, initRD := int(c.c.max_qp_rd_atom), int(c.c.max_qp_init_rd_atom)
	rtr := mlx5prm.RTR{MTU: mtu, RemoteQPN: r.QPN, LogRRAMax: mlx5prm.FloorLog2(min(rd, 16)),
		MinRNRNak: mlx5prm.MinRNRTimer, LogMsgMax: mlx5prm.MaxLogMsg, Path: path}
	if _, _, err := c.devxCall(what("INIT2RTR_QP"), q.q.dqp, mlx5prm.INIT2RTR(q.QPN, rtr), mlx5prm.ModifyQPOutBytes); err != nil {
		return err
	}
	rts := mlx5prm.RTS{LogSRAMax: mlx5prm.FloorLog2(min(initRD, 16)), Retry: mlx5prm.DefaultRetry,
		RNRRetry: mlx5prm.DefaultRetry, AckTimeout: mlx5prm.DefaultAckTimeout}
	if _, _, err := c.devxCall(what("RTR2RTS_QP"), q.q.dqp, mlx5prm.RTR2RTS(q.QPN, rts), mlx5prm.ModifyQPOutBytes); err != nil {
		return err
	}
	return nil
}

// Caps is what GOSHMEM_IBGDA_QUEUES=gpu needs of the build, the NIC and
// the GPU; GPUQueuesUsable decides from it (without hardware in tests).
type Caps struct {
	Device     string
	HeaderDma  bool  // HaveUmemDmabuf: the loaded libmlx5 takes dma-buf umems
	DevX       bool  // the context was opened for devx
	DevXErr    error // why not
	UAR        bool  // a devx UAR was allocated (its page is the queues' uar_page)
	UARErr     error
	EQNErr     error // mlx5dv_devx_query_eqn failed
	GPUDmabuf  bool  // the GPU exports dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)
	GPUChecked bool  // GPUDmabuf was asked (false: not known yet)
}

func (c *Context) caps() Caps {
	return Caps{Device: c.Name, HeaderDma: HaveUmemDmabuf(), DevX: c.DevX, DevXErr: c.DevXErr,
		UAR: c.UAR != 0, UARErr: c.UARErr, EQNErr: c.EQNErr}
}

// Caps returns the context's part of Caps (the GPU's is the caller's).
func (c *Context) Caps() Caps { return c.caps() }

// gpuQueuesHint is the hint of every refusal of GPU-resident queues.
const gpuQueuesHint = "GOSHMEM_IBGDA_QUEUES=host keeps the queues in host memory (rdma-core's verbs objects)"

// GPUQueuesUsable says whether queues can be placed in GPU memory: nil,
// or an error matching errs.ErrNotSupported that names the first missing
// piece (the rdma-core feature, devx, the devx UAR, an event queue, the
// GPU's dma-buf export), with a hint.
func GPUQueuesUsable(k Caps) error {
	miss := func(format string, args ...any) error {
		return errors.WithHint(errors.Wrapf(errs.ErrNotSupported, "verbs: GPU-resident queues on %s: "+format,
			append([]any{k.Device}, args...)...), gpuQueuesHint)
	}
	switch {
	case !k.HeaderDma:
		return miss("the loaded libmlx5 lacks dma-buf umems (mlx5dv_devx_umem_reg_ex with " +
			"MLX5DV_UMEM_MASK_DMABUF: rdma-core >= 43)")
	case !k.DevX:
		if k.DevXErr != nil {
			return miss("no devx context: %v", k.DevXErr)
		}
		return miss("the context was not opened for devx")
	case !k.UAR:
		return miss("no devx UAR for the queues' doorbells: %v", k.UARErr)
	case k.EQNErr != nil:
		return miss("no event queue for the CQs: %v", k.EQNErr)
	case k.GPUChecked && !k.GPUDmabuf:
		return miss("the GPU does not export dma-bufs (CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED is 0: " +
			"needs CUDA 11.7+, the open GPU kernel modules and Linux 5.12+)")
	}
	return nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
