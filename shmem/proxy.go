package shmem

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/errors"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/transport"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
	"github.com/goshmem/goshmem/internal/transport/proxy"
)

// setupGPURemote chooses, per peer, how kernels reach its GPU heap
// (GOSHMEM_GPU_TRANSPORT): p2p = load/store through the CUDA IPC mapping;
// proxy = descriptors to this PE's CPU proxy workers (heap_base[pe] = 0 in
// the device state; this PE's own stays); auto = p2p where CUDA IPC maps
// the peer, proxy otherwise. Every PE decides the same way from the same
// settings.
//
// The proxy's workers reach a peer's GPU heap through the CUDA backend
// where CUDA IPC maps it (this node), and through the ofi backend where
// the host transport to the peer is ofi (another node): requests staged in
// host memory, applied by the peer's own proxy (internal/transport/proxy,
// ofi.go). GOSHMEM_PROXY_BACKEND=ofi sends every peer through the ofi
// backend (with GOSHMEM_TRANSPORT=ofi: the whole inter-node path on one
// machine); cuda never uses it.
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
	var far []bool
	if r.ofi != nil && mode != "p2p" {
		// Every PE of a job with ofi peers decides together whether the
		// ofi backend's link runs: openProxyLink's allgather and its area
		// in the symmetric heap need every PE or none, so one PE that
		// needs it while another does not (or cannot) fails Init on all,
		// naming them, instead of hanging there or leaving the heaps
		// asymmetric.
		var ferr error
		if n > 0 {
			far, ferr = r.proxyFar(remote)
		}
		st := proxyLinkNone
		switch {
		case ferr != nil:
			st = proxyLinkErr
		case far != nil:
			st = proxyLinkWanted
		}
		all, err := r.boot.Allgather([]byte{st})
		if err != nil {
			return errors.Wrapf(err, "goshmem: PE %d: Init: agreeing on the GPU proxy's ofi backend", r.me)
		}
		if ferr != nil {
			return ferr
		}
		if err := agreeProxyLink(r.me, all); err != nil {
			return err
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
	if far != nil { // the ofi backend reaches the far PEs
		cfg.Reachable = func(pe int) bool { return far[pe] || r.gpu.Reachable(pe) }
	}
	copt, err := r.proxyCUDAOptions()
	if err != nil {
		return err
	}
	mem := &proxy.CUDAMemory{Ctx: r.gpu.Ctx}
	p, err := proxy.New(cfg, mem)
	if err != nil {
		_ = mem.Close()
		return err
	}
	var link *proxy.OFILink
	if far != nil {
		if link, err = r.openProxyLink(p, cfg.Workers, copt); err != nil {
			_ = p.Close()
			return err
		}
	}
	start := func(int) (proxy.Backend, error) {
		return proxy.NewCUDABackend(r.gpu, copt)
	}
	if link != nil {
		start = func(w int) (proxy.Backend, error) {
			cb, err := proxy.NewCUDABackend(r.gpu, copt)
			if err != nil {
				return nil, err
			}
			if err := cb.PrepareHeap(); err != nil {
				return nil, errors.Join(err, cb.Close())
			}
			return link.Backend(w, cb, cb, func(pe int) bool { return far[pe] })
		}
	}
	if err := p.Start(start); err != nil {
		return errors.Wrapf(err, "goshmem: PE %d: Init: starting the GPU proxy", r.me)
	}
	r.proxyFarPEs = far
	r.proxyCUDA = copt
	if err := r.gpu.ConfigureRemote(remote, cudatr.RemoteProxy, p.StateAddr()); err != nil {
		_ = p.Close()
		return errors.Wrapf(err, "goshmem: PE %d: Init: device state for the GPU proxy", r.me)
	}
	r.proxy = p
	return nil
}

// proxyCUDAOptions: the CUDA backend's settings (GOSHMEM_TIMEOUT,
// GOSHMEM_PROXY_INFLIGHT, GOSHMEM_PROXY_THROTTLE).
func (r *runtime) proxyCUDAOptions() (proxy.CUDAOptions, error) {
	return cudaOptions(r.me, r.policy.Timeout, r.settings.String("GOSHMEM_PROXY_INFLIGHT"),
		r.settings.String("GOSHMEM_PROXY_THROTTLE"), r.gpu.SharesDevice())
}

// cudaOptions validates the CUDA backend's settings (sharesGPU: another
// PE of this node uses this GPU).
func cudaOptions(me int, timeout time.Duration, inflight, throttle string, sharesGPU bool) (proxy.CUDAOptions, error) {
	const maxInflight = 1 << 20
	o := proxy.CUDAOptions{Stall: timeout}
	if inflight != "auto" {
		n, err := strconv.Atoi(inflight)
		if err != nil || n < 1 || n > maxInflight {
			return proxy.CUDAOptions{}, errs.New(errs.ErrInvalidArgument, me, "Init",
				"GOSHMEM_PROXY_INFLIGHT=%q; must be auto or a number of chains in [1, %d]", inflight, maxInflight)
		}
		o.MaxInFlight = n
	}
	switch throttle {
	case "auto":
		o.DrainAll = sharesGPU
	case "drain":
		o.DrainAll = true
	case "keep":
	default:
		return proxy.CUDAOptions{}, errs.Hint(errs.ErrInvalidArgument, "use GOSHMEM_PROXY_THROTTLE=auto, drain or keep", me, "Init",
			"GOSHMEM_PROXY_THROTTLE=%q is not a throttle (valid: auto, drain, keep)", throttle)
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = proxy.DefaultMaxInFlight
		if o.DrainAll {
			o.MaxInFlight = proxy.DefaultDrainInFlight
		}
	}
	return o, nil
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
		var viaCUDA, viaOFI []int
		for _, pe := range rem {
			if r.proxyFarPEs != nil && r.proxyFarPEs[pe] {
				viaOFI = append(viaOFI, pe)
			} else {
				viaCUDA = append(viaCUDA, pe)
			}
		}
		th := "keep"
		if r.proxyCUDA.DrainAll {
			th = "drain (another PE uses this GPU, or GOSHMEM_PROXY_THROTTLE=drain)"
		}
		be := fmt.Sprintf("cuda (stream bound %d chains, throttle %s)", r.proxyCUDA.MaxInFlight, th)
		if len(viaOFI) > 0 {
			be = fmt.Sprintf("ofi for PEs %v (staged through host memory over %s, applied by their proxies), %s for PEs %v",
				viaOFI, r.ofi.Name(), be, viaCUDA)
		}
		fmt.Fprintf(&b, ", PEs %v through the %s", rem, r.proxy.Describe(be))
	}
	b.WriteString("\n")
	return b.String()
}

// What each PE reports about the GPU proxy's ofi link (agreeProxyLink).
const (
	proxyLinkNone   byte = 0 // no peer through the ofi backend
	proxyLinkWanted byte = 1 // some peers through it
	proxyLinkErr    byte = 2 // its settings failed (it reports why itself)
)

// agreeProxyLink checks the PEs' proxyLink* reports (one byte each, in PE
// order): every PE wants the ofi link or none does; a PE whose settings
// failed fails the others too.
func agreeProxyLink(me int, all []byte) error {
	first := -1
	for pe, st := range all {
		if st == proxyLinkErr && pe != me {
			return errs.Hint(errs.ErrInvalidArgument, "see PE "+strconv.Itoa(pe)+"'s error", me, "Init",
				"PE %d could not set up the GPU proxy's ofi backend (GOSHMEM_PROXY_BACKEND)", pe)
		}
		if first < 0 && st != all[0] {
			first = pe
		}
	}
	if first >= 0 {
		want, not := 0, first
		if all[0] != proxyLinkWanted {
			want, not = first, 0
		}
		return errs.Hint(errs.ErrNotSymmetric, "set the same GOSHMEM_GPU_TRANSPORT, GOSHMEM_PROXY_BACKEND and GOSHMEM_TRANSPORT on every PE",
			me, "Init", "PE %d reaches GPU heaps through the proxy's ofi backend and PE %d does not: it needs every PE or none", want, not)
	}
	return nil
}

// proxyFar decides which proxy peers the ofi backend serves
// (GOSHMEM_PROXY_BACKEND); nil: none.
func (r *runtime) proxyFar(remote []bool) ([]bool, error) {
	want := r.settings.String("GOSHMEM_PROXY_BACKEND")
	switch want {
	case "auto", "cuda", "ofi":
	default:
		return nil, errs.Hint(errs.ErrInvalidArgument, "use GOSHMEM_PROXY_BACKEND=auto, cuda or ofi", r.me, "Init",
			"GOSHMEM_PROXY_BACKEND=%q is not a proxy backend", want)
	}
	if want == "cuda" {
		return nil, nil
	}
	far := make([]bool, r.npes)
	n := 0
	for pe, rem := range remote {
		if !rem {
			continue
		}
		viaOFI := r.ofi != nil && r.tr[pe] == transport.Transport(r.ofi)
		switch {
		case want == "ofi" && !viaOFI:
			return nil, errs.Hint(errs.ErrInvalidArgument, "set GOSHMEM_TRANSPORT=ofi with GOSHMEM_PROXY_BACKEND=ofi on one node",
				r.me, "Init", "GOSHMEM_PROXY_BACKEND=ofi, but the host transport to PE %d is %s, not ofi", pe, r.tr[pe].Name())
		case want == "ofi" || (viaOFI && !r.gpu.Reachable(pe)):
			far[pe] = true
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	return far, nil
}

// openProxyLink reserves the ofi backend's area in the host symmetric heap
// (the same offset on every PE: every PE allocates it at the same point
// of Init; checked here) and starts the server that applies the requests
// of the other PEs' proxies to this PE's GPU heap.
func (r *runtime) openProxyLink(p *proxy.Proxy, workers int, copt proxy.CUDAOptions) (*proxy.OFILink, error) {
	ly := proxy.DefaultOFILayout(r.npes, workers)
	if err := ly.Validate(); err != nil {
		return nil, errors.Wrapf(err, "goshmem: PE %d: Init", r.me)
	}
	off, err := r.alloc.Alloc(ly.Size(), 4096)
	if err != nil {
		return nil, errors.WithHint(errors.Wrapf(markErr(err, errs.ErrHeapExhausted),
			"goshmem: PE %d: Init: the GPU proxy's ofi area (%d bytes of the host symmetric heap: %d PEs x %d workers x %d slots of %d bytes, twice)",
			r.me, ly.Size(), ly.NPEs, ly.Lanes, ly.Slots, ly.Payload), "raise GOSHMEM_SYMMETRIC_SIZE or lower GOSHMEM_PROXY_WORKERS")
	}
	off += heapOff
	var rec [24]byte
	binary.LittleEndian.PutUint64(rec[0:], off)
	binary.LittleEndian.PutUint64(rec[8:], uint64(workers))
	binary.LittleEndian.PutUint64(rec[16:], ly.Size())
	all, err := r.boot.Allgather(rec[:])
	if err != nil {
		return nil, errors.Wrapf(err, "goshmem: PE %d: Init: exchanging the GPU proxy's ofi area", r.me)
	}
	for pe := 0; pe < r.npes; pe++ {
		if o, w := binary.LittleEndian.Uint64(all[24*pe:]), binary.LittleEndian.Uint64(all[24*pe+8:]); o != off || w != uint64(workers) {
			return nil, errs.Hint(errs.ErrNotSymmetric, "set the same GOSHMEM_PROXY_WORKERS and GOSHMEM_PROXY_BACKEND on every PE",
				r.me, "Init", "GPU proxy ofi area at offset %d with %d workers here, at %d with %d workers on PE %d", off, workers, o, w, pe)
		}
	}
	link, err := proxy.NewOFILink(proxy.OFIConfig{Me: r.me, Tr: r.ofi, Area: r.localPtr(off), Off: off,
		Layout: ly, Timeout: r.policy.Timeout})
	if err != nil {
		return nil, errors.Wrapf(err, "goshmem: PE %d: Init", r.me)
	}
	srv, err := proxy.NewCUDABackend(r.gpu, copt)
	if err != nil {
		return nil, errors.Wrapf(err, "goshmem: PE %d: Init: the GPU proxy's ofi server", r.me)
	}
	if err := srv.PrepareHeap(); err != nil {
		return nil, errors.Join(err, srv.Close())
	}
	link.Serve(srv, p.Fail, srv.Close)
	p.OnClose(link.Close)
	return link, nil
}
