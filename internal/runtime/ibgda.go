package runtime

import (
	"fmt"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/cgo/verbs"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/ibgda"
)

// ibgdaBackend is GOSHMEM_GPU_TRANSPORT=ibgda's NIC (GOSHMEM_IBGDA_NIC):
// mlx5 needs a ConnectX that rdma-core finds (else Init fails with
// ErrNotSupported and a hint) and, with a GPU heap, sets it up for the
// device API (never run on a ConnectX); soft selects the soft NIC, an
// EMULATION, only when asked for by name, and says so in GOSHMEM_INFO.
// With a GPU heap, soft also starts the emulated NIC and routes the device
// API's accesses to the other PEs through it (startSoftIBGDA).
type ibgdaBackend struct {
	r      *Runtime
	nic    string
	s      mlx5Settings
	m      *mlx5IBGDA // mlx5, until connected
	remote []int
}

func (b *ibgdaBackend) Name() string { return "IBGDA" }

func (b *ibgdaBackend) Setup() ([]byte, error) {
	r := b.r
	b.nic = r.Settings.String("GOSHMEM_IBGDA_NIC")
	switch b.nic {
	case "soft":
		s, err := r.mlx5Settings() // GOSHMEM_IBGDA_DOORBELL applies to the soft NIC too
		if err != nil {
			return nil, err
		}
		if s.gpuQueues {
			return nil, errs.Hint(errs.ErrInvalidArgument, "unset GOSHMEM_IBGDA_QUEUES (or set it to host) with the soft NIC",
				r.Me, "Init", "GOSHMEM_IBGDA_QUEUES=gpu with GOSHMEM_IBGDA_NIC=soft: the soft NIC (emulation) "+
					"is a host thread that reads its queues from host-pinned memory")
		}
		r.ibgda = "soft NIC (EMULATION: no NIC; a host thread executes the GPU-built mlx5 WQEs)"
		if r.GPU == nil {
			return nil, nil // no GPU heap: nothing for device code to reach
		}
		// Local only: the soft NIC serves the GPU heaps CUDA IPC mapped.
		if err := r.startSoftIBGDA(s.cpuBell); err != nil {
			return nil, err
		}
		r.ibgda += "; device API to other PEs over IBGDA, queues in host-pinned memory"
		if s.cpuBell {
			r.ibgda += "; CPU-assisted doorbells (a host thread rings the emulated NIC's doorbell word, which alone drives it)"
		}
		return nil, nil
	case "mlx5", "auto", "":
		s, err := r.mlx5Settings()
		if err != nil {
			return nil, err
		}
		d, err := verbs.Probe()
		if err != nil {
			return nil, errs.Wrap(err, r.Me, "Init", "GOSHMEM_GPU_TRANSPORT=ibgda GOSHMEM_IBGDA_NIC=%s", b.nic)
		}
		r.ibgda = fmt.Sprintf("mlx5 device %s (max %d QPs)", d.Name, d.MaxQP)
		if r.GPU == nil {
			return nil, nil
		}
		b.s = s
		var rec []byte
		if b.m, b.remote, rec, err = r.startMLX5Local(s); err != nil {
			return nil, err
		}
		return rec, nil
	default:
		return nil, errs.Hint(errs.ErrInvalidArgument, "set GOSHMEM_IBGDA_NIC to mlx5 or soft", r.Me, "Init",
			"GOSHMEM_IBGDA_NIC=%q; want mlx5 (a ConnectX) or soft (the emulation)", b.nic)
	}
}

// Connect connects the mlx5 QPs to every peer's (nothing to do for the
// soft NIC or without a GPU heap).
func (b *ibgdaBackend) Connect(_ int, recs [][]byte) ([]byte, bool, error) {
	r := b.r
	if b.m == nil {
		return nil, true, nil
	}
	n := len(recs[r.Me])
	all := make([]byte, 0, n*r.NPEs)
	for pe, rec := range recs {
		if len(rec) != n {
			return nil, false, errs.New(errs.ErrNotSymmetric, r.Me, "Init", "GOSHMEM_IBGDA_NIC=mlx5: PE %d sent a %d-byte connection record, this PE %d", pe, len(rec), n)
		}
		all = append(all, rec...)
	}
	if err := r.mlx5Connect(b.m, b.s, b.remote, all, n); err != nil {
		return nil, false, err
	}
	r.mlx5, b.m = b.m, nil
	bell := "GPU threads ring the UAR"
	if b.s.cpuBell {
		bell = "CPU-assisted doorbells (a host thread rings the UAR)"
	}
	queues := "queues in host memory (rdma-core)"
	if b.s.gpuQueues {
		queues = "queues in GPU memory (devx umem by dma-buf)"
	}
	r.ibgda += fmt.Sprintf("; %d RC QPs, %s, %s", len(r.mlx5.qps), queues, bell)
	return nil, true, nil
}

// Drain: after a kernel ended, the WQEs it posted may still be in the
// soft NIC's queues (the device API does not wait for completion without
// a quiet; the kernel's end is no quiet). Synchronize waits for the NIC
// to execute them, so a host barrier after it covers what the kernels
// did (as their stores do over load/store).
func (b *ibgdaBackend) Drain(op string, timeout time.Duration) error {
	r := b.r
	if r.softNIC == nil {
		return nil
	}
	err := r.softNIC.nic.Drain(timeout)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ibgda.ErrNotDrained):
		return errs.Mark(errs.Wrap(err, r.Me, op, "soft NIC (EMULATION)"), errs.ErrTimeout)
	default:
		return errs.Wrap(err, r.Me, op, "soft NIC (EMULATION)")
	}
}

// Diagnose is what the soft NIC and the device's IBGDA report word say
// after a failed or timed-out GPU wait; with a ConnectX, the report word.
func (b *ibgdaBackend) Diagnose() string {
	r := b.r
	if r.mlx5 != nil && r.mlx5.report != nil {
		if msg := reportMessage(r.mlx5.report, r.mlx5.names); msg != "" {
			return fmt.Sprintf("mlx5 %s: %s", r.mlx5.v.Name, msg)
		}
	}
	if r.softNIC != nil {
		return r.softNIC.diagnose()
	}
	return ""
}

func (b *ibgdaBackend) Info() []string {
	return []string{fmt.Sprintf("PE %d: GPU transport ibgda: %s", b.r.Me, b.r.ibgda)}
}

// Close stops the soft NIC (before the GPU transport it copies through)
// or releases the ConnectX setup (before the GPU context its queue and
// UAR pages are registered with).
func (b *ibgdaBackend) Close() error {
	r := b.r
	var list []error
	if b.m != nil {
		list = append(list, b.m.close())
		b.m = nil
	}
	if r.softNIC != nil {
		list = append(list, r.softNIC.close())
		r.softNIC = nil
	}
	if r.mlx5 != nil {
		list = append(list, r.mlx5.close())
		r.mlx5 = nil
	}
	return errors.Join(list...)
}
