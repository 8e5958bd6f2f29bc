// Package verbs is goshmem's binding to rdma-core (libibverbs + libmlx5), the
// only package that calls them: it finds an mlx5 device for the IBGDA path.
//
// What is here: Probe, which lists the RDMA devices (ibv_get_device_list),
// keeps those mlx5dv_is_supported accepts, opens the first one and reads its
// attributes (ibv_query_device, ibv_query_port); and the real-ConnectX IBGDA
// setup (mlx5.go, mlx5.c): Open (device, port, GID, PD, devx UAR), CreateQP
// (CQ + RC QP in host memory, read back through mlx5dv_init_obj), Connect
// (RESET->INIT->RTR->RTS, IB by LID or RoCE by GID), RegDmabufMR / RegMR,
// and Ring (the CPU-assisted mode's doorbell store); for queues in GPU
// memory (devx.go): OpenDevX, RegDmabufUmem, CreateDevXQP (devx CQ + RC QP
// from internal/mlx5prm's PRM mailboxes, connected by devx MODIFY_QP
// commands) and GPUQueuesUsable. Without a device Probe
// and Open return an error matching errs.ErrNotSupported with a hint. The
// setup is compiled and its error paths run here; it has never run on a
// ConnectX.
//
// rdma-core is not linked: libibverbs.so.1 and libmlx5.so.1 are opened
// with dlopen on the first Probe, Open or OpenDevX (load.go, shim.c), and
// the layouts used are declared in abi.h, checked against rdma-core's
// headers by abi_test.go. A missing or too old library fails those calls
// with an error matching errs.ErrNotSupported that names the library and
// dlerror's text, with a hint.
//
// Ref: rdma-core 44 <infiniband/verbs.h>, <infiniband/mlx5dv.h>.
package verbs

/*
#cgo LDFLAGS: -ldl
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "shim.h"

typedef struct goshmemi_verbs_probe {
	int n_devices;   // ibv_get_device_list's count (-1: the call failed)
	int list_errno;  // errno of a failed ibv_get_device_list
	int n_mlx5;      // devices mlx5dv_is_supported accepts
	char name[64];   // the first mlx5 device
	int open_errno;  // ibv_open_device failure, 0 when opened
	int query_rc;    // ibv_query_device / ibv_query_port result
	int max_qp, max_cqe, max_qp_wr, phys_port_cnt;
	int link_layer;  // IBV_LINK_LAYER_* of port 1
	unsigned short lid;
} goshmemi_verbs_probe_t;

static void goshmemi_verbs_probe(goshmemi_verbs_probe_t *p)
{
	struct gv_ibv_device **list;
	int i, n = 0;
	memset(p, 0, sizeof *p);
	errno = 0;
	list = gv_lib.ibv_get_device_list(&n);
	if (!list) {
		p->n_devices = -1;
		p->list_errno = errno;
		return;
	}
	p->n_devices = n;
	for (i = 0; i < n; i++) {
		struct gv_ibv_context *ctx;
		struct gv_ibv_device_attr attr;
		struct gv_ibv_port_attr port;
		if (!gv_lib.mlx5dv_is_supported(list[i]))
			continue;
		if (p->n_mlx5++ > 0)
			continue;
		strncpy(p->name, gv_lib.ibv_get_device_name(list[i]), sizeof p->name - 1);
		ctx = gv_lib.ibv_open_device(list[i]);
		if (!ctx) {
			p->open_errno = errno ? errno : EIO;
			continue;
		}
		p->query_rc = gv_lib.ibv_query_device(ctx, &attr);
		if (p->query_rc == 0) {
			p->max_qp = attr.max_qp;
			p->max_cqe = attr.max_cqe;
			p->max_qp_wr = attr.max_qp_wr;
			p->phys_port_cnt = attr.phys_port_cnt;
			p->query_rc = gv_ibv_query_port(ctx, 1, &port);
			if (p->query_rc == 0) {
				p->link_layer = port.link_layer;
				p->lid = port.lid;
			}
		}
		gv_lib.ibv_close_device(ctx);
	}
	gv_lib.ibv_free_device_list(list);
}
*/
import "C"

import (
	"syscall"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// Device is the mlx5 device Probe found.
type Device struct {
	Name         string // e.g. "mlx5_0"
	MaxQP        int
	MaxCQE       int
	MaxQPWR      int
	Ports        int
	LinkLayerEth bool   // RoCE (Ethernet) rather than InfiniBand
	LID          uint16 // port 1's LID (InfiniBand)
}

// Probe finds the first RDMA device the mlx5 direct-verbs provider accepts
// and reads its attributes. Errors match errs.ErrNotSupported when there is
// no such device (or the device cannot be opened), with a hint.
func Probe() (Device, error) {
	if err := load(); err != nil {
		return Device{}, err
	}
	var p C.goshmemi_verbs_probe_t
	C.goshmemi_verbs_probe(&p)
	const hint = noDeviceHint
	switch {
	case p.n_devices < 0:
		return Device{}, errors.WithHint(errors.Wrapf(errs.ErrNotSupported,
			"verbs: no mlx5 device: ibv_get_device_list failed: %v (no RDMA device or kernel support)", syscall.Errno(p.list_errno)), hint)
	case p.n_mlx5 == 0:
		return Device{}, errors.WithHint(errors.Wrapf(errs.ErrNotSupported,
			"verbs: no mlx5 device (%d RDMA devices, none accepted by mlx5dv_is_supported)", int(p.n_devices)), hint)
	case p.open_errno != 0:
		return Device{}, errors.WithHint(errors.Wrapf(errs.ErrNotSupported,
			"verbs: ibv_open_device(%s): %v", C.GoString(&p.name[0]), syscall.Errno(p.open_errno)),
			"check the permissions of /dev/infiniband/uverbs*")
	case p.query_rc != 0:
		return Device{}, errors.Wrapf(errs.ErrNotSupported, "verbs: ibv_query_device/port(%s): %v",
			C.GoString(&p.name[0]), syscall.Errno(p.query_rc))
	}
	return Device{Name: C.GoString(&p.name[0]), MaxQP: int(p.max_qp), MaxCQE: int(p.max_cqe),
		MaxQPWR: int(p.max_qp_wr), Ports: int(p.phys_port_cnt),
		LinkLayerEth: p.link_layer == C.GV_IBV_LINK_LAYER_ETHERNET, LID: uint16(p.lid)}, nil
}
