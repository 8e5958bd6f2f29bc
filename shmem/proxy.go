package shmem

import (
	"fmt"
	"strings"

	"github.com/cockroachdb/errors"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/errs"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
	"github.com/goshmem/goshmem/internal/transport/proxy"
)

// setupGPURemote chooses, per peer, how kernels reach its GPU heap
// (GOSHMEM_GPU_TRANSPORT): p2p = load/store through the CUDA IPC mapping;
// proxy = descriptors to this PE's CPU proxy workers (heap_base[pe] = 0 in
// the device state; this PE's own stays); auto = p2p where CUDA IPC maps
// the peer, proxy otherwise. Every PE decides the same way from the same
// settings, so nothing is exchanged.
func (r *runtime) setupGPURemote() error {
	mode := r.settings.String("GOSHMEM_GPU_TRANSPORT")
	switch mode {
	case "auto", "p2p", "proxy":
	case "ibgda":
		return nil // openIBGDA (ibgda.go) owns the remote path
	default:
		return errs.Hint(errs.ErrInvalidArgument, "use GOSHMEM_GPU_TRANSPORT=auto, p2p, proxy or ibgda", r.me, "Init",
			"GOSHMEM_GPU_TRANSPORT=%q is not a GPU transport", mode)
	}
	remote := make([]bool, r.npes)
	n := 0
	for pe := range remote {
		if pe != r.me && (mode == "proxy" || (mode == "auto" && !r.gpu.Reachable(pe))) {
			remote[pe] = true
			n++
		}
	}
	if n == 0 {
		return nil
	}
	s := r.settings
	workers := int(s.Size("GOSHMEM_PROXY_WORKERS"))
	lr, _ := bootstrap.LocalRank(r.boot)
	cfg := proxy.Config{
		Me: r.me, NPEs: r.npes, HeapSize: r.gpu.Size(), Reachable: r.gpu.Reachable,
		Workers: workers, Rings: int(s.Size("GOSHMEM_PROXY_RINGS")), Contexts: int(s.Size("GOSHMEM_PROXY_CONTEXTS")),
		Slots: int(s.Size("GOSHMEM_PROXY_SLOTS")), Batch: int(s.Size("GOSHMEM_PROXY_BATCH")),
		Mode: s.String("GOSHMEM_PROXY_MODE"), Timeout: r.policy.Timeout,
		CPUs: proxy.CPUsNear(r.gpu.BusID, lr*workers),
	}
	mem := &proxy.CUDAMemory{Ctx: r.gpu.Ctx}
	p, err := proxy.New(cfg, mem)
	if err != nil {
		_ = mem.Close()
		return err
	}
	if err := p.Start(func(int) (proxy.Backend, error) { return proxy.NewCUDABackend(r.gpu) }); err != nil {
		return errors.Wrapf(err, "goshmem: PE %d: Init: starting the GPU proxy", r.me)
	}
	if err := r.gpu.ConfigureRemote(remote, cudatr.RemoteProxy, p.StateAddr()); err != nil {
		_ = p.Close()
		return errors.Wrapf(err, "goshmem: PE %d: Init: device state for the GPU proxy", r.me)
	}
	r.proxy = p
	return nil
}

// proxyErr is the GPU proxy's first rejected request or the reason a
// worker stopped (nil without a proxy or a problem).
func (r *runtime) proxyErr(op string) error {
	if r.proxy == nil {
		return nil
	}
	if err := r.proxy.Err(); err != nil {
		return errors.WithHint(errors.Wrapf(err, "goshmem: PE %d: %s: GPU proxy", r.me, op),
			"a device call named a PE or offset the proxy cannot serve, or a proxy worker stopped: the kernels that used it trapped (GOSHMEMI_ERR_PROXY_*)")
	}
	return nil
}

// gpuInfo is GOSHMEM_INFO's line on how kernels reach the other PEs.
func (r *runtime) gpuInfo() string {
	if r.gpu == nil {
		return ""
	}
	rem := r.gpu.RemotePEs()
	var p2p []int
	isRem := map[int]bool{}
	for _, pe := range rem {
		isRem[pe] = true
	}
	for pe := 0; pe < r.npes; pe++ {
		if !isRem[pe] {
			p2p = append(p2p, pe)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "goshmem: info: PE %d: GPU %d (%s, PCI %s); kernels reach PEs %v by load/store (%s)",
		r.me, int(r.gpu.Dev), r.gpu.DevName, r.gpu.BusID, p2p, r.gpu.Name())
	if r.proxy != nil {
		fmt.Fprintf(&b, ", PEs %v through the %s", rem, r.proxy.Describe("cuda"))
	}
	b.WriteString("\n")
	return b.String()
}
