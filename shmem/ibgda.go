package shmem

import (
	"fmt"

	"github.com/cockroachdb/errors"

	"github.com/goshmem/goshmem/internal/cgo/verbs"
	"github.com/goshmem/goshmem/internal/errs"
)

// openIBGDA checks GOSHMEM_GPU_TRANSPORT=ibgda's NIC (GOSHMEM_IBGDA_NIC):
// mlx5 needs a ConnectX that rdma-core finds (else Init fails with
// ErrNotSupported and a hint) and, with a GPU heap, sets it up for the
// device API (startMLX5IBGDA, never run on a ConnectX); soft selects the soft NIC, an EMULATION,
// only when asked for by name, and says so in GOSHMEM_INFO. With a GPU heap,
// soft also starts the emulated NIC and routes the device API's accesses to
// the other PEs through it (startSoftIBGDA).
func (r *runtime) openIBGDA() error {
	if r.settings.String("GOSHMEM_GPU_TRANSPORT") != "ibgda" {
		return nil
	}
	switch nic := r.settings.String("GOSHMEM_IBGDA_NIC"); nic {
	case "soft":
		s, err := r.mlx5Settings() // GOSHMEM_IBGDA_DOORBELL applies to the soft NIC too
		if err != nil {
			return err
		}
		if s.gpuQueues {
			return errs.Hint(errs.ErrInvalidArgument, "unset GOSHMEM_IBGDA_QUEUES (or set it to host) with the soft NIC",
				r.me, "Init", "GOSHMEM_IBGDA_QUEUES=gpu with GOSHMEM_IBGDA_NIC=soft: the soft NIC (emulation) "+
					"is a host thread that reads its queues from host-pinned memory")
		}
		r.ibgda = "soft NIC (EMULATION: no NIC; a host thread executes the GPU-built mlx5 WQEs)"
		if r.gpu == nil {
			return nil // no GPU heap: nothing for device code to reach
		}
		if err := r.startSoftIBGDA(s.cpuBell); err != nil {
			return err
		}
		r.ibgda += "; device API to other PEs over IBGDA, queues in host-pinned memory"
		if s.cpuBell {
			r.ibgda += "; CPU-assisted doorbells (a host thread rings the emulated NIC's doorbell word, which alone drives it)"
		}
		return nil
	case "mlx5", "auto", "":
		s, err := r.mlx5Settings()
		if err != nil {
			return err
		}
		// Probe is local: without a device every PE fails here on its own
		// (no collective has started); past it, startMLX5IBGDA makes one
		// PE's failure every PE's.
		d, err := verbs.Probe()
		if err != nil {
			return errors.Wrapf(err, "goshmem: PE %d: Init: GOSHMEM_GPU_TRANSPORT=ibgda GOSHMEM_IBGDA_NIC=%s", r.me, nic)
		}
		r.ibgda = fmt.Sprintf("mlx5 device %s (max %d QPs)", d.Name, d.MaxQP)
		if r.gpu == nil {
			return nil // no GPU heap: nothing for device code to reach
		}
		if err := r.startMLX5IBGDA(s); err != nil {
			return err
		}
		bell := "GPU threads ring the UAR"
		if s.cpuBell {
			bell = "CPU-assisted doorbells (a host thread rings the UAR)"
		}
		queues := "queues in host memory (rdma-core)"
		if s.gpuQueues {
			queues = "queues in GPU memory (devx umem by dma-buf)"
		}
		r.ibgda += fmt.Sprintf("; %d RC QPs, %s, %s", len(r.mlx5.qps), queues, bell)
		return nil
	default:
		return errs.Hint(errs.ErrInvalidArgument, "set GOSHMEM_IBGDA_NIC to mlx5 or soft", r.me, "Init",
			"GOSHMEM_IBGDA_NIC=%q; want mlx5 (a ConnectX) or soft (the emulation)", nic)
	}
}
