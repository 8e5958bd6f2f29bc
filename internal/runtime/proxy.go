package runtime

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/logx"
	"github.com/goshmem/goshmem/internal/transport"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
	"github.com/goshmem/goshmem/internal/transport/proxy"
)

// proxyBackend chooses, per peer, how kernels reach its GPU heap
// (GOSHMEM_GPU_TRANSPORT): p2p = load/store through the CUDA IPC mapping;
// proxy = descriptors to this PE's CPU proxy workers (heap_base[pe] = 0 in
// the device state; this PE's own stays); auto = p2p where CUDA IPC maps
// the peer, proxy otherwise. Every PE decides the same way from the agreed
// settings and node map.
//
// The proxy's workers reach a peer's GPU heap through the CUDA backend
// where CUDA IPC maps it (this node), and through the ofi backend where
// the host transport to the peer is ofi (another node): requests staged in
// host memory, applied by the peer's own proxy (internal/transport/proxy,
// ofi.go). GOSHMEM_PROXY_BACKEND=ofi sends every peer through the ofi
// backend (with GOSHMEM_TRANSPORT=ofi: the whole inter-node path on one
// machine); cuda never uses it.
type proxyBackend struct {
	r      *Runtime
	remote []bool
	far    []bool
	copt   proxy.CUDAOptions
	cfg    proxy.Config
	p      *proxy.Proxy
	mem    *proxy.CUDAMemory
	area   uint64 // the ofi link's area in the host heap (HeapOff-based), 0: none
	layout proxy.OFILayout
}

func (b *proxyBackend) Name() string { return "GPU proxy" }

// Setup decides the proxy peers, makes the proxy (rings, no workers yet)
// and, for an ofi link, reserves its area in the host heap: every PE
// allocates it at the same point of Init, so at the same offset (checked
// by Connect from the records).
func (b *proxyBackend) Setup() ([]byte, error) {
	r := b.r
	mode := r.Settings.String("GOSHMEM_GPU_TRANSPORT")
	switch mode {
	case "auto", "p2p", "proxy":
	default:
		return nil, errs.Hint(errs.ErrInvalidArgument, "use GOSHMEM_GPU_TRANSPORT=auto, p2p, proxy or ibgda", r.Me, "Init",
			"GOSHMEM_GPU_TRANSPORT=%q is not a GPU transport", mode)
	}
	b.remote = make([]bool, r.NPEs)
	n := 0
	for pe := range b.remote {
		if pe != r.Me && (mode == "proxy" || (mode == "auto" && !r.GPU.Reachable(pe))) {
			b.remote[pe] = true
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	if r.ofi != nil {
		var err error
		if b.far, err = r.proxyFar(b.remote); err != nil {
			return nil, err
		}
	}
	s := r.Settings
	workers := int(s.Size("GOSHMEM_PROXY_WORKERS"))
	lr, _ := bootstrap.LocalRank(r.Boot)
	b.cfg = proxy.Config{
		Me: r.Me, NPEs: r.NPEs, HeapSize: r.GPU.Size(), Reachable: r.GPU.Reachable,
		Workers: workers, Rings: int(s.Size("GOSHMEM_PROXY_RINGS")), Contexts: int(s.Size("GOSHMEM_PROXY_CONTEXTS")),
		Slots: int(s.Size("GOSHMEM_PROXY_SLOTS")), Batch: int(s.Size("GOSHMEM_PROXY_BATCH")),
		Mode: s.String("GOSHMEM_PROXY_MODE"), Timeout: r.Policy.Timeout,
		CPUs: proxy.CPUsNear(r.GPU.BusID, lr*workers),
	}
	if far := b.far; far != nil { // the ofi backend reaches the far PEs
		b.cfg.Reachable = func(pe int) bool { return far[pe] || r.GPU.Reachable(pe) }
	}
	var err error
	if b.copt, err = r.proxyCUDAOptions(); err != nil {
		return nil, err
	}
	b.mem = &proxy.CUDAMemory{Ctx: r.GPU.Ctx}
	if b.p, err = proxy.New(b.cfg, b.mem); err != nil {
		_ = b.mem.Close()
		b.mem = nil
		return nil, err
	}
	if b.far == nil {
		return nil, nil
	}
	b.layout = proxy.DefaultOFILayout(r.NPEs, workers)
	if err := b.layout.Validate(); err != nil {
		return nil, errs.Wrap(err, r.Me, "Init", "the GPU proxy's ofi area")
	}
	off, err := r.Alloc.Alloc(b.layout.Size(), 4096)
	if err != nil {
		ly := b.layout
		return nil, errors.WithHint(errs.Wrap(errs.Mark(err, errs.ErrHeapExhausted), r.Me, "Init",
			"the GPU proxy's ofi area (%d bytes of the host symmetric heap: %d PEs x %d workers x %d slots of %d bytes, twice)",
			ly.Size(), ly.NPEs, ly.Lanes, ly.Slots, ly.Payload), "raise GOSHMEM_SYMMETRIC_SIZE or lower GOSHMEM_PROXY_WORKERS")
	}
	b.area = off + HeapOff
	var rec [24]byte
	binary.LittleEndian.PutUint64(rec[0:], b.area)
	binary.LittleEndian.PutUint64(rec[8:], uint64(workers))
	binary.LittleEndian.PutUint64(rec[16:], b.layout.Size())
	return rec[:], nil
}

// Connect checks the ofi areas agree, starts the link's server and the
// workers, and points the device state's remote PEs at the proxy.
func (b *proxyBackend) Connect(_ int, recs [][]byte) ([]byte, bool, error) {
	r := b.r
	if b.p == nil {
		return nil, true, nil
	}
	var link *proxy.OFILink
	if b.far != nil {
		for pe, rec := range recs {
			if len(rec) != 24 {
				return nil, false, errs.Hint(errs.ErrNotSymmetric, "set the same GOSHMEM_GPU_TRANSPORT, GOSHMEM_PROXY_BACKEND and GOSHMEM_TRANSPORT on every PE",
					r.Me, "Init", "this PE reaches GPU heaps through the proxy's ofi backend and PE %d does not: it needs every PE or none", pe)
			}
			if o, w := binary.LittleEndian.Uint64(rec[0:]), binary.LittleEndian.Uint64(rec[8:]); o != b.area || w != uint64(b.cfg.Workers) {
				return nil, false, errs.Hint(errs.ErrNotSymmetric, "set the same GOSHMEM_PROXY_WORKERS and GOSHMEM_PROXY_BACKEND on every PE",
					r.Me, "Init", "GPU proxy ofi area at offset %d with %d workers here, at %d with %d workers on PE %d", b.area, b.cfg.Workers, o, w, pe)
			}
		}
		var err error
		if link, err = r.openProxyLink(b.p, b.area, b.layout, b.copt); err != nil {
			return nil, false, err
		}
	}
	copt, far := b.copt, b.far
	start := func(int) (proxy.Backend, error) {
		return proxy.NewCUDABackend(r.GPU, copt)
	}
	if link != nil {
		start = func(w int) (proxy.Backend, error) {
			cb, err := proxy.NewCUDABackend(r.GPU, copt)
			if err != nil {
				return nil, err
			}
			if err := cb.PrepareHeap(); err != nil {
				return nil, errors.Join(err, cb.Close())
			}
			return link.Backend(w, cb, cb, func(pe int) bool { return far[pe] })
		}
	}
	if err := b.p.Start(start); err != nil {
		return nil, false, errs.Wrap(err, r.Me, "Init", "starting the GPU proxy")
	}
	if err := r.GPU.ConfigureRemote(b.remote, cudatr.RemoteProxy, b.p.StateAddr()); err != nil {
		return nil, false, errs.Wrap(err, r.Me, "Init", "device state for the GPU proxy")
	}
	// A heap that grows: the workers accept the new chunks' offsets before
	// the device state's size lets kernels address them. The new size is
	// every PE's, so the check inside fails on every PE alike.
	p := b.p
	r.GPU.OnGrow(func(size uint64, _ func([]byte) ([][]byte, error)) error { return p.SetHeapSize(size) })
	r.preloadLib()
	r.proxy, r.proxyFarPEs, r.proxyCUDA = b.p, b.far, b.copt
	return nil, true, nil
}

// Drain: after the kernels ended, requests they posted to the GPU proxy
// may still be in its rings or in flight to another PE (the device API
// does not wait for completion without a quiet; a kernel's end is no
// quiet). Synchronize waits for the workers to serve them (Proxy.Drain),
// so a host barrier after it covers what the kernels did, as their stores
// do over load/store.
func (b *proxyBackend) Drain(op string, timeout time.Duration) error {
	if b.p == nil {
		return nil
	}
	if err := b.p.Drain(timeout); err != nil {
		return errs.Wrap(err, b.r.Me, op, "GPU proxy")
	}
	return b.r.ProxyErr(op)
}

// Diagnose is the proxy's first rejected request or why a worker stopped.
func (b *proxyBackend) Diagnose() string {
	if b.p == nil {
		return ""
	}
	if err := b.p.Err(); err != nil {
		return "GPU proxy: " + err.Error()
	}
	return ""
}

func (b *proxyBackend) Info() []string {
	if b.p == nil {
		return nil
	}
	r := b.r
	var viaCUDA, viaOFI, rem []int
	for pe, isRem := range b.remote {
		if !isRem {
			continue
		}
		rem = append(rem, pe)
		if b.far != nil && b.far[pe] {
			viaOFI = append(viaOFI, pe)
		} else {
			viaCUDA = append(viaCUDA, pe)
		}
	}
	th := "keep"
	if b.copt.DrainAll {
		th = "drain (another PE uses this GPU, or GOSHMEM_PROXY_THROTTLE=drain)"
	}
	be := fmt.Sprintf("cuda (stream bound %d chains, throttle %s)", b.copt.MaxInFlight, th)
	if len(viaOFI) > 0 {
		be = fmt.Sprintf("ofi for PEs %v (staged through host memory over %s, applied by their proxies), %s for PEs %v",
			viaOFI, r.ofi.Name(), be, viaCUDA)
	}
	return []string{fmt.Sprintf("PE %d: GPU proxy: kernels reach PEs %v through the %s", r.Me, rem, b.p.Describe(be))}
}

// Close stops the workers (before the GPU context their streams belong
// to, and the ofi transport the ofi backend uses: the runtime closes in
// reverse order). With GOSHMEM_INFO it prints the proxy's statistics.
func (b *proxyBackend) Close() error {
	r := b.r
	if b.p == nil {
		return nil
	}
	p := b.p
	b.p = nil
	err := p.Close()
	if r.Settings.Bool("GOSHMEM_INFO") && r.proxy == p {
		for _, l := range strings.Split(strings.TrimSpace(p.Stats()), "\n") {
			r.Log.Info(fmt.Sprintf("goshmem: info: PE %d: %s\n", r.Me, l), l, logx.PE(r.Me), slog.String("backend", "proxy"))
		}
	}
	r.proxy = nil
	return err
}

// proxyCUDAOptions: the CUDA backend's settings (GOSHMEM_TIMEOUT,
// GOSHMEM_PROXY_INFLIGHT, GOSHMEM_PROXY_THROTTLE, and the diagnostics
// GOSHMEM_PROXY_STREAM_PRIORITY and GOSHMEM_PROXY_INLINE).
func (r *Runtime) proxyCUDAOptions() (proxy.CUDAOptions, error) {
	o, err := cudaOptions(r.Me, r.Policy.Timeout, r.Settings.String("GOSHMEM_PROXY_INFLIGHT"),
		r.Settings.String("GOSHMEM_PROXY_THROTTLE"), r.GPU.SharesDevice())
	if err != nil {
		return o, err
	}
	if o.NormalPriority, err = r.twoWay("GOSHMEM_PROXY_STREAM_PRIORITY", "high", "normal"); err != nil {
		return proxy.CUDAOptions{}, err
	}
	if o.CopyInline, err = r.twoWay("GOSHMEM_PROXY_INLINE", "write", "copy"); err != nil {
		return proxy.CUDAOptions{}, err
	}
	return o, nil
}

// twoWay reads a setting with two values: false for off, true for on.
func (r *Runtime) twoWay(name, off, on string) (bool, error) {
	switch v := r.Settings.String(name); v {
	case off:
		return false, nil
	case on:
		return true, nil
	default:
		return false, errs.Hint(errs.ErrInvalidArgument, fmt.Sprintf("use %s=%s or %s", name, off, on), r.Me, "Init",
			"%s=%q (valid: %s, %s)", name, v, off, on)
	}
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

// proxyFar decides which proxy peers the ofi backend serves
// (GOSHMEM_PROXY_BACKEND); nil: none.
func (r *Runtime) proxyFar(remote []bool) ([]bool, error) {
	want := r.Settings.String("GOSHMEM_PROXY_BACKEND")
	switch want {
	case "auto", "cuda", "ofi":
	default:
		return nil, errs.Hint(errs.ErrInvalidArgument, "use GOSHMEM_PROXY_BACKEND=auto, cuda or ofi", r.Me, "Init",
			"GOSHMEM_PROXY_BACKEND=%q is not a proxy backend", want)
	}
	if want == "cuda" {
		return nil, nil
	}
	far := make([]bool, r.NPEs)
	n := 0
	for pe, rem := range remote {
		if !rem {
			continue
		}
		viaOFI := r.ofi != nil && r.Tr[pe] == transport.Transport(r.ofi)
		switch {
		case want == "ofi" && !viaOFI:
			return nil, errs.Hint(errs.ErrInvalidArgument, "set GOSHMEM_TRANSPORT=ofi with GOSHMEM_PROXY_BACKEND=ofi on one node",
				r.Me, "Init", "GOSHMEM_PROXY_BACKEND=ofi, but the host transport to PE %d is %s, not ofi", pe, r.Tr[pe].Name())
		case want == "ofi" || (viaOFI && !r.GPU.Reachable(pe)):
			far[pe] = true
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	return far, nil
}

// openProxyLink starts the ofi link over the agreed area: the server
// that applies the other PEs' proxies' requests to this PE's GPU heap.
func (r *Runtime) openProxyLink(p *proxy.Proxy, off uint64, ly proxy.OFILayout, copt proxy.CUDAOptions) (*proxy.OFILink, error) {
	link, err := proxy.NewOFILink(proxy.OFIConfig{Me: r.Me, Tr: r.ofi, Area: r.LocalPtr(off), Off: off,
		Layout: ly, Timeout: r.Policy.Timeout})
	if err != nil {
		return nil, errs.Wrap(err, r.Me, "Init", "the GPU proxy's ofi link")
	}
	srv, err := proxy.NewCUDABackend(r.GPU, copt)
	if err != nil {
		return nil, errs.Wrap(err, r.Me, "Init", "the GPU proxy's ofi server")
	}
	if err := srv.PrepareHeap(); err != nil {
		return nil, errors.Join(err, srv.Close())
	}
	link.Serve(srv, p.Fail, srv.Close)
	p.OnClose(link.Close)
	return link, nil
}
