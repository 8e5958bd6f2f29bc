package proxy

import (
	"fmt"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/internal/transport"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
)

// CUDAMemory is Memory on a GPU: rings, replies and status in pinned host
// memory mapped for the device (cuMemHostAlloc portable|devicemap), the
// proxy state in GPU memory.
type CUDAMemory struct {
	Ctx    *cuda.Context
	pinned []unsafe.Pointer
	dev    []cuda.DevicePtr
}

// Pinned implements Memory.
func (m *CUDAMemory) Pinned(n int) (Ptr, error) {
	h, err := m.Ctx.MemHostAlloc(n, cuda.HostAllocPortable|cuda.HostAllocDeviceMap)
	if err != nil {
		return Ptr{}, err
	}
	m.pinned = append(m.pinned, h)
	clear(unsafe.Slice((*byte)(h), n))
	d, err := m.Ctx.MemHostGetDevicePointer(h)
	if err != nil {
		return Ptr{}, err
	}
	return Ptr{Host: h, Dev: uint64(d)}, nil
}

// Device implements Memory.
func (m *CUDAMemory) Device(n int) (Ptr, error) {
	d, err := m.Ctx.MemAlloc(n)
	if err != nil {
		return Ptr{}, err
	}
	m.dev = append(m.dev, d)
	if err := m.Ctx.MemsetD8(d, 0, n); err != nil {
		return Ptr{}, err
	}
	return Ptr{Dev: uint64(d)}, nil
}

// Write implements Memory.
func (m *CUDAMemory) Write(dev uint64, b []byte) error {
	return m.Ctx.MemcpyHtoD(cuda.DevicePtr(dev), unsafe.Pointer(unsafe.SliceData(b)), len(b))
}

// Close implements Memory.
func (m *CUDAMemory) Close() error {
	var errList []error
	for _, p := range m.pinned {
		errList = append(errList, m.Ctx.MemFreeHost(p))
	}
	for _, d := range m.dev {
		errList = append(errList, m.Ctx.MemFree(d))
	}
	m.pinned, m.dev = nil, nil
	return errors.Join(errList...)
}

// CUDABackend submits one worker's requests on its own CUDA stream: copies
// (cuMemcpy*Async) between the GPU heaps this process mapped with CUDA IPC,
// aligned 8-byte inline puts and completion words as stream memory writes,
// atomics as the host API's one-thread atomic kernels, all in stream order.
//
// The stream has the device's highest priority, and consecutive memory
// writes (a chain's inline puts and its completion word) go to the driver
// as one batch (cuStreamBatchMemOp) at the next other operation or at
// Flush, the end of the chain: while many CTAs of the user's kernel wait
// on the proxy every driver submission is slow, so a chain pays for one,
// and the priority shortens each (docs/proxy.md has the driver times).
type CUDABackend struct {
	gpu     *cudatr.Transport
	s       cuda.Stream
	scratch Ptr // out word of atomics without a result
	mem     *CUDAMemory
	// copyInline: 8-byte inline puts go as copies too (set once the
	// driver refused a stream write to a peer heap; see PutInline);
	// inlineOK: a stream write to a peer heap was accepted once (after
	// that, inline puts join the batch)
	copyInline, inlineOK bool
	// the pending batch of stream writes (addr[i] = val[i], in order)
	addr []cuda.DevicePtr
	val  []uint64
	// timers: driver time per kind of call (the worker's thread only;
	// read by Timings after the worker stopped)
	timers [nCallKinds]callTimer
	writes uint64 // stream writes submitted in batches
	// in-flight bound: every executedEvery-th Flush (the end of a chain)
	// also has the stream write its chain number into executed (pinned); the
	// worker submits no further chain while more than
	// maxInFlight of its chains wait in the stream (throttle)
	executed Ptr
	chains   uint64
	waits    uint64        // Flushes that waited for the stream
	waited   time.Duration // time they waited
	// stage: pinned host memory mapped for the GPU, for the Heap methods
	// (the ofi backend); allocated by PrepareHeap
	stage  Ptr
	nstage int
	// stall: how long throttle gives the GPU (see streamStall)
	stall time.Duration
	// maxInFlight, drainAll: see CUDAOptions
	maxInFlight uint64
	drainAll    bool
}

// DefaultMaxInFlight bounds the chains a worker's stream may hold that the
// GPU has not executed yet (CUDAOptions.MaxInFlight). Without a bound, a
// worker that reads requests faster than the GPU executes its stream
// writes (many CTAs posting on the default context) queues thousands of
// chains in the GPU's queues. With the bound, the backlog stays in the descriptor rings
// (back-pressure to the producers) and a worker's stream holds at most
// this many chains.
const DefaultMaxInFlight = 32

// DefaultDrainInFlight is the bound where the worker drains its stream
// (CUDAOptions.DrainAll): the other processes' streams wait for a drain,
// so a smaller bound serves them sooner; 8 was the better of the bounds
// tried for both the waiting probe and the posting CTAs on a shared GPU
// (docs/proxy.md, "One GPU shared under MPS").
const DefaultDrainInFlight = 8

// executedEvery: every this many chains one carries the executed write (a
// write per chain adds a third more stream writes to one-request chains
// and lowers their message rate; docs/proxy.md). The
// bound still holds: the newest marker is at most executedEvery-1 chains
// old, well inside the bound.
const executedEvery = 8

// streamStall is how long Flush waits for the GPU to execute the worker's
// stream before it reports the stream stuck (the worker then stops and
// the kernels waiting on it trap with GOSHMEMI_ERR_PROXY_DEAD), unless
// GOSHMEM_TIMEOUT is set (CUDAOptions.Stall).
const streamStall = 30 * time.Second

// CUDAOptions configures NewCUDABackend.
type CUDAOptions struct {
	// Stall bounds how long the worker waits for the GPU to execute its
	// stream (GOSHMEM_TIMEOUT; 0: streamStall).
	Stall time.Duration
	// MaxInFlight: chains the stream may hold unexecuted before the
	// worker waits (0: DefaultMaxInFlight).
	MaxInFlight int
	// DrainAll: a worker that reached MaxInFlight waits until its stream
	// is empty, not only below the bound. Needed where other processes
	// submit to the same GPU (several PEs on one GPU under MPS): the GPU
	// may keep serving a stream that never runs empty and starve the
	// other process's streams for good (docs/proxy.md, "One GPU shared
	// under MPS").
	DrainAll bool
	// NormalPriority gives the worker's stream the default priority
	// instead of the device's highest (GOSHMEM_PROXY_STREAM_PRIORITY=normal,
	// a diagnostic).
	NormalPriority bool
	// CopyInline sends 8-byte inline puts as host-to-device copies (the
	// copy engine) instead of stream memory writes
	// (GOSHMEM_PROXY_INLINE=copy, a diagnostic).
	CopyInline bool
}

// The kinds of backend call Timings reports.
const (
	callPut = iota
	callPutInline
	callGet
	callGetReply
	callAtomic
	callWriteBatch
	nCallKinds
)

var callNames = [nCallKinds]string{"put", "put_inline (copy)", "get", "get_reply", "atomic", "write batch"}

// callTimer is the time spent in one kind of backend call.
type callTimer struct {
	n          uint64
	total, max time.Duration
}

func (b *CUDABackend) timed(k int, t0 time.Time) {
	d := time.Since(t0)
	t := &b.timers[k]
	t.n++
	t.total += d
	if d > t.max {
		t.max = d
	}
}

// Timings says how long each kind of call took in the driver (count, mean,
// max): the proxy worker's statistics print it with GOSHMEM_INFO=1.
func (b *CUDABackend) Timings() string {
	var parts []string
	for k, t := range b.timers {
		if t.n == 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s %d x %.2f us (max %.1f us)", callNames[k], t.n,
			float64(t.total.Nanoseconds())/float64(t.n)/1e3, float64(t.max.Nanoseconds())/1e3))
	}
	if len(parts) == 0 {
		return ""
	}
	if n := b.timers[callWriteBatch].n; n > 0 {
		parts = append(parts, fmt.Sprintf("%.1f stream writes per batch", float64(b.writes)/float64(n)))
	}
	s := "driver time per call: " + strings.Join(parts, ", ")
	if b.waits > 0 {
		s += fmt.Sprintf("; %d chain ends waited for the GPU (more than %d chains in the stream), %v in all",
			b.waits, b.maxInFlight, b.waited.Round(time.Microsecond))
	}
	return s
}

// NewCUDABackend makes a backend with a new non-blocking stream, and loads
// and runs every atomic kernel once (primeAtomics) before it returns.
//
// Rule: nothing on the worker's submission path may wait for the GPU to go
// idle, because the user's kernel is running and spins until the worker
// has served it. Loading code is such a wait: with lazy loading (the
// default since CUDA 12.2) the atomics' PTX module, or each of its kernels,
// is loaded at first use, and that load may need a context
// synchronization, which never finishes while a kernel spins on the
// proxy. So the first device AMO or signal (put_signal, signal_op) would
// hang both PEs; the one-time work is done here, during Init,
// before any user kernel runs.
// Ref: CUDA C++ Programming Guide, "Lazy Loading", Potential Hazards
// (concurrent execution: loading kernels might require context synchronization).
func NewCUDABackend(gpu *cudatr.Transport, o CUDAOptions) (*CUDABackend, error) {
	var s cuda.Stream
	var err error
	if o.NormalPriority {
		s, err = gpu.Ctx.StreamCreate(cuda.StreamNonBlocking)
	} else {
		s, err = gpu.Ctx.StreamCreateWithPriority(cuda.StreamNonBlocking, cuda.StreamPriorityHighest)
	}
	if err != nil {
		return nil, err
	}
	b := &CUDABackend{gpu: gpu, s: s, mem: &CUDAMemory{Ctx: gpu.Ctx}, stall: o.Stall,
		maxInFlight: uint64(o.MaxInFlight), drainAll: o.DrainAll,
		addr: make([]cuda.DevicePtr, 0, cuda.MaxBatchWrites), val: make([]uint64, 0, cuda.MaxBatchWrites)}
	if b.stall <= 0 {
		b.stall = streamStall
	}
	if b.maxInFlight == 0 {
		b.maxInFlight = DefaultMaxInFlight
		if b.drainAll {
			b.maxInFlight = DefaultDrainInFlight
		}
	}
	b.copyInline = o.CopyInline
	if b.scratch, err = b.mem.Device(64); err != nil {
		_ = s.Destroy()
		return nil, err
	}
	if b.executed, err = b.mem.Pinned(64); err != nil {
		return nil, errors.Join(err, b.Close())
	}
	if err := primeAtomics(gpu, s, b.scratch.Dev); err != nil {
		return nil, errors.Join(err, b.Close())
	}
	if err := s.Synchronize(); err != nil {
		return nil, errors.Join(errs.Wrap(err, -1, "proxy", "warming up the atomic kernels"), b.Close())
	}
	return b, nil
}

// atomicLauncher is what primeAtomics needs of the GPU transport.
type atomicLauncher interface {
	AtomicAsync(s cuda.Stream, op transport.AMO, width int, addr cuda.DevicePtr, v, cmp uint64, out cuda.DevicePtr) error
}

// primeAtomics queues every atomic kernel a worker can launch (each op of
// a device AMO descriptor, 4 and 8 bytes) once on s, with operands that
// leave the scratch word zero: the module and every kernel are loaded now
// (see NewCUDABackend), not under a running user kernel. scratch is 64
// bytes of device memory: the target is its first word, the old value
// goes to the second.
func primeAtomics(l atomicLauncher, s cuda.Stream, scratch uint64) error {
	for _, width := range []int{4, 8} {
		for _, op := range deviceAMO {
			if err := l.AtomicAsync(s, op, width, cuda.DevicePtr(scratch), 0, 0, cuda.DevicePtr(scratch+8)); err != nil {
				return errs.Wrap(err, -1, "proxy", "loading the %d-byte %v atomic kernel", width, op)
			}
		}
	}
	return nil
}

// queue adds the stream write addr = v to the pending batch.
func (b *CUDABackend) queue(addr cuda.DevicePtr, v uint64) error {
	b.addr = append(b.addr, addr)
	b.val = append(b.val, v)
	if len(b.addr) == cuda.MaxBatchWrites {
		return b.flushWrites()
	}
	return nil
}

// flushWrites submits the pending stream writes (one driver call).
func (b *CUDABackend) flushWrites() error {
	if len(b.addr) == 0 {
		return nil
	}
	defer b.timed(callWriteBatch, time.Now())
	err := b.s.WriteValues64(b.addr, b.val, 0)
	b.writes += uint64(len(b.addr))
	b.addr, b.val = b.addr[:0], b.val[:0]
	return err
}

func (b *CUDABackend) peer(pe int, off uint64) (cuda.DevicePtr, error) {
	base := b.gpu.PeerAddr(pe)
	if base == 0 {
		return 0, errs.New(errs.ErrNotSupported, -1, "proxy", "PE %d's GPU heap is not mapped in this process (another node): no inter-node GPU transport in the proxy yet", pe)
	}
	return base + cuda.DevicePtr(off), nil
}

// Name implements Backend.
func (b *CUDABackend) Name() string { return "cuda (IPC-mapped heaps, stream-ordered copies)" }

// Put implements Backend.
func (b *CUDABackend) Put(pe int, dst, src uint64, n int) error {
	if err := b.flushWrites(); err != nil {
		return err
	}
	defer b.timed(callPut, time.Now())
	d, err := b.peer(pe, dst)
	if err != nil {
		return err
	}
	return b.s.MemcpyDtoDAsync(d, b.gpu.Base()+cuda.DevicePtr(src), n)
}

// PutAddr implements Backend: a copy from a registered buffer of this
// context, in place.
func (b *CUDABackend) PutAddr(pe int, dst, src uint64, n int) error {
	if err := b.flushWrites(); err != nil {
		return err
	}
	defer b.timed(callPut, time.Now())
	d, err := b.peer(pe, dst)
	if err != nil {
		return err
	}
	return b.s.MemcpyDtoDAsync(d, cuda.DevicePtr(src), n)
}

// PutInline implements Backend. An aligned 8-byte payload (p, barrier
// arrivals, the 8-byte puts of the message-rate rows) is a stream write of
// its value to the peer's mapped heap (each with the memory barrier before
// it, in stream order like the copies), queued into the pending batch: no
// copy-engine launch and no DMA read of the ring slot. The value is read
// from the slot now (the descriptor is valid; the slot is not reused before
// the ring's counter passes it). Other sizes are copies from the slot. The
// first such write is submitted alone: should the driver refuse a stream
// write to a peer heap, the backend falls back to copies for good.
func (b *CUDABackend) PutInline(pe int, dst uint64, data Ptr, n int) error {
	d, err := b.peer(pe, dst)
	if err != nil {
		return err
	}
	if n == 8 && d%8 == 0 && !b.copyInline {
		v := atomic.LoadUint64((*uint64)(data.Host))
		if b.inlineOK {
			return b.queue(d, v)
		}
		if err := b.flushWrites(); err != nil {
			return err
		}
		if err := b.s.WriteValue64(d, v); err == nil {
			b.inlineOK = true
			return nil
		}
		b.copyInline = true
	}
	if err := b.flushWrites(); err != nil {
		return err
	}
	defer b.timed(callPutInline, time.Now())
	return b.s.MemcpyHtoDAsync(d, data.Host, n)
}

// Get implements Backend.
func (b *CUDABackend) Get(pe int, src, dst uint64, n int) error {
	if err := b.flushWrites(); err != nil {
		return err
	}
	defer b.timed(callGet, time.Now())
	s, err := b.peer(pe, src)
	if err != nil {
		return err
	}
	return b.s.MemcpyDtoDAsync(b.gpu.Base()+cuda.DevicePtr(dst), s, n)
}

// GetAddr implements Backend: a copy into a registered buffer of this
// context, in place.
func (b *CUDABackend) GetAddr(pe int, src, dst uint64, n int) error {
	if err := b.flushWrites(); err != nil {
		return err
	}
	defer b.timed(callGet, time.Now())
	s, err := b.peer(pe, src)
	if err != nil {
		return err
	}
	return b.s.MemcpyDtoDAsync(cuda.DevicePtr(dst), s, n)
}

// GetReply implements Backend.
func (b *CUDABackend) GetReply(pe int, src uint64, n int, out Ptr) error {
	if err := b.flushWrites(); err != nil {
		return err
	}
	defer b.timed(callGetReply, time.Now())
	s, err := b.peer(pe, src)
	if err != nil {
		return err
	}
	return b.s.MemcpyDtoDAsync(cuda.DevicePtr(out.Dev), s, n)
}

// Atomic implements Backend.
func (b *CUDABackend) Atomic(pe int, off uint64, op transport.AMO, width int, v, cmp uint64, out Ptr) error {
	if err := b.flushWrites(); err != nil {
		return err
	}
	defer b.timed(callAtomic, time.Now())
	a, err := b.peer(pe, off)
	if err != nil {
		return err
	}
	o := out.Dev
	if o == 0 {
		o = b.scratch.Dev
	}
	return b.gpu.AtomicAsync(b.s, op, width, a, v, cmp, cuda.DevicePtr(o))
}

// WriteWord implements Backend: a stream write of the pending batch (it
// reaches the GPU at the next other operation or Flush).
func (b *CUDABackend) WriteWord(p Ptr, v uint64) error {
	return b.queue(cuda.DevicePtr(p.Dev), v)
}

// Flush implements Backend: the pending stream writes go to the driver,
// every executedEvery-th chain with its number for executed last (with
// DrainAll also a chain after which the worker waits); then it waits
// while more than maxInFlight chains are not executed yet.
func (b *CUDABackend) Flush() error {
	b.chains++
	full := b.chains-atomic.LoadUint64((*uint64)(b.executed.Host)) > b.maxInFlight
	if b.chains%executedEvery == 0 || (full && b.drainAll) {
		if err := b.queue(cuda.DevicePtr(b.executed.Dev), b.chains); err != nil {
			return err
		}
	}
	if err := b.flushWrites(); err != nil {
		return err
	}
	return b.throttle()
}

// throttle, once more than maxInFlight of the submitted chains are not
// executed by the GPU, waits until at most maxInFlight are (with
// drainAll: none is) (spin.Policy: spinning first, then yielding, then
// sleeping up to 20 us at a time), or fails after stall.
func (b *CUDABackend) throttle() error {
	done := (*uint64)(b.executed.Host)
	if b.chains-atomic.LoadUint64(done) <= b.maxInFlight {
		return nil
	}
	target := b.maxInFlight
	if b.drainAll {
		target = 0
	}
	inFlight := func() bool { return b.chains-atomic.LoadUint64(done) <= target }
	t0 := time.Now()
	defer func() { b.waits++; b.waited += time.Since(t0) }()
	ok, _ := spin.Policy{Spins: 256, Yields: 3840, MaxSleep: 20 * time.Microsecond, Timeout: b.stall}.Until(inFlight, nil)
	if !ok {
		return errs.New(errs.ErrTimeout, -1, "proxy", "the GPU executed none of the worker's last %d chains in %v (chain %d submitted, %d executed; %d stream writes in %d batches)",
			b.maxInFlight, b.stall, b.chains, atomic.LoadUint64(done), b.writes, b.timers[callWriteBatch].n)
	}
	return nil
}

// cudaStageBytes is the Heap methods' staging buffer (plus 64 bytes for
// an atomic's old value).
const cudaStageBytes = 1 << 20

// PrepareHeap makes b usable as a Heap (the ofi backend's view of this
// PE's GPU heap): it allocates the pinned staging buffer now, during Init,
// not under a running kernel.
func (b *CUDABackend) PrepareHeap() error {
	if b.nstage > 0 {
		return nil
	}
	st, err := b.mem.Pinned(cudaStageBytes + 64)
	if err != nil {
		return errs.Wrap(err, -1, "proxy", "staging buffer of the ofi backend")
	}
	b.stage, b.nstage = st, cudaStageBytes
	return nil
}

// Size implements Heap: this PE's GPU heap.
func (b *CUDABackend) Size() uint64 { return b.gpu.Size() }

// Load implements Heap: copies through the staging buffer on the stream
// (DtoD into mapped pinned memory), each waited for on the stream only.
func (b *CUDABackend) Load(dst unsafe.Pointer, off uint64, n int) error {
	return b.LoadAddr(dst, uint64(b.gpu.Base())+off, n)
}

// LoadAddr implements Heap: Load from device address addr.
func (b *CUDABackend) LoadAddr(dst unsafe.Pointer, addr uint64, n int) error {
	if err := b.flushWrites(); err != nil {
		return err
	}
	for o := 0; o < n; o += b.nstage {
		c := min(b.nstage, n-o)
		if err := b.s.MemcpyDtoDAsync(cuda.DevicePtr(b.stage.Dev), cuda.DevicePtr(addr)+cuda.DevicePtr(o), c); err != nil {
			return err
		}
		if err := b.s.Synchronize(); err != nil {
			return err
		}
		copy(unsafe.Slice((*byte)(unsafe.Add(dst, o)), c), unsafe.Slice((*byte)(b.stage.Host), c))
	}
	return nil
}

// Store implements Heap: a host-to-device copy queued on the stream.
func (b *CUDABackend) Store(off uint64, src unsafe.Pointer, n int) error {
	return b.StoreAddr(uint64(b.gpu.Base())+off, src, n)
}

// StoreAddr implements Heap: Store to device address addr.
func (b *CUDABackend) StoreAddr(addr uint64, src unsafe.Pointer, n int) error {
	if err := b.flushWrites(); err != nil {
		return err
	}
	return b.s.MemcpyHtoDAsync(cuda.DevicePtr(addr), src, n)
}

// AtomicAt implements Heap: the atomic kernel on the stream, its old value
// written to the mapped staging buffer and read once the stream reached it.
func (b *CUDABackend) AtomicAt(off uint64, op transport.AMO, width int, v, cmp uint64) (uint64, error) {
	if err := b.flushWrites(); err != nil {
		return 0, err
	}
	out := b.stage.Add(uintptr(b.nstage))
	if err := b.gpu.AtomicAsync(b.s, op, width, b.gpu.Base()+cuda.DevicePtr(off), v, cmp, cuda.DevicePtr(out.Dev)); err != nil {
		return 0, err
	}
	if err := b.s.Synchronize(); err != nil {
		return 0, err
	}
	old := atomic.LoadUint64((*uint64)(out.Host))
	if width < 8 {
		old &= 1<<(8*uint(width)) - 1
	}
	return old, nil
}

// Sync implements Heap: waits for the stream (not the device).
func (b *CUDABackend) Sync() error {
	if err := b.flushWrites(); err != nil {
		return err
	}
	return b.s.Synchronize()
}

// Close implements Backend.
func (b *CUDABackend) Close() error {
	err := b.flushWrites()
	return errors.Join(err, b.s.Synchronize(), b.s.Destroy(), b.mem.Close())
}
