// Package ofi is the inter-node host transport: the symmetric heap is
// registered with libfabric at Init (keys and addresses exchanged through
// the bootstrap's Allgather) and every put, get and atomic is an RMA or
// atomic operation on one RDM endpoint (provider chosen by
// GOSHMEM_OFI_PROVIDER; tcp;ofi_rxm by default).
//
// Completion model (Ref: OpenSHMEM 1.6 §9.8.2; fi_cq(3)): every operation
// posted for a quiet.Queue is counted there with Issue before it is posted,
// and carries an integer context naming its slot in an operation table. When
// its completion entry is read (by whoever drives progress: a quiet's
// progress callback, a blocking call, or the progress thread) the slot is
// retired and the queue's Complete (or Fail, for an error entry) is called.
// Writes and non-fetching atomics are posted with FI_DELIVERY_COMPLETE, so a
// completion means the data is at the target, not merely sent: tcp;ofi_rxm
// otherwise completes a write as soon as it left this process.
//
// Buffers: C never keeps a Go pointer. Data of at most the provider's
// inject size is posted with FI_INJECT (copied before the call returns);
// larger puts are copied into a registered staging arena and segmented into
// chunks (no larger than the provider's max message size); gets read into
// the arena and are copied out when they complete.
//
// Progress (Ref: fi_domain(3) FI_PROGRESS_MANUAL): software providers move
// data only when the process calls into libfabric, at the target too. A
// goroutine locked to its own thread reads the completion queue, blocking
// in fi_cq_sread when the queue has a wait object, so incoming RMA lands
// while the application computes or waits in a load loop.
package ofi

import (
	"encoding/binary"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/cgo/fabric"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/transport"
	"github.com/goshmem/goshmem/quiet"
)

// Config is what the runtime gives New.
type Config struct {
	// Provider is the libfabric provider ("tcp;ofi_rxm", "shm", "sockets").
	Provider string
	Me, NPEs int
	// Region is this PE's symmetric region (mmap'd, not the Go heap).
	Region    unsafe.Pointer
	RegionLen uint64
	// Local are load/store bases per PE (nil where not mapped), for Ptr.
	Local []unsafe.Pointer
	// Allgather is the bootstrap's, used once to exchange addresses and keys.
	Allgather func([]byte) ([]byte, error)
	// Timeout bounds a blocking wait inside the transport (0 = none).
	Timeout time.Duration
}

const (
	maxOps     = 4096      // operations in flight per PE
	slotSize   = 64        // per-operation scratch: AMO operands and results, small gets
	chunkSize  = 256 << 10 // staging chunk: the largest segment of a put or get
	numChunks  = 64        // 16 MiB of staging
	addrMax    = 96        // bytes of endpoint address in the exchange
	recordSize = 8 + 8 + 8 + addrMax
	// eagainBound is how many -FI_EAGAIN answers a post may get (driving
	// progress between them) before it fails naming the peer.
	eagainBound = 1 << 20
)

// op is one slot of the operation table.
type op struct {
	q     *quiet.Queue // nil: a blocking operation (the caller waits on done)
	pe    int
	chunk int32  // staging chunk, or -1
	dst   []byte // a non-blocking get: copy the staging bytes here on completion
	src   unsafe.Pointer
	what  string
	done  atomic.Bool
	err   error
}

// Transport is the ofi transport of one PE.
type Transport struct {
	cfg   Config
	ep    *fabric.Endpoint
	heap  *fabric.MR
	stage *fabric.MR
	arena []byte // mmap'd: slots then chunks

	addr  []uint64 // fi_addr per PE
	raddr []uint64 // remote address of each PE's region start (0 when offsets are relative)
	key   []uint64

	inject   uint64
	seg      uint64 // largest staged segment
	zseg     uint64 // largest zero-copy segment (the provider's max message size, capped)
	flags    uint64 // FI_DELIVERY_COMPLETE for writes and non-fetching atomics
	amo      [3][8][9]bool
	name     string
	manual   bool
	fenceRAW bool // reads must wait for earlier writes (provider lacks FI_ORDER_RAW)

	mu     sync.Mutex // the op table and the chunk list
	ops    []op
	free   []uint32
	chunks []int32

	progMu  sync.Mutex
	progBuf [64]fabric.Completion

	closed atomic.Bool
}

// New opens the provider, registers the region and exchanges addresses and
// keys with every PE (collective: every PE calls it).
func New(cfg Config) (*Transport, error) {
	ep, err := fabric.Open(cfg.Provider)
	if err != nil {
		if errors.Is(err, fabric.ErrNoProvider) {
			// The sentinel in the chain (stdlib errors.Is finds it too),
			// the provider list as the hint.
			return nil, errors.WithHint(errs.New(errs.ErrNotSupported, cfg.Me, "Init", "ofi: %v", err), errors.FlattenHints(err))
		}
		return nil, errors.Wrapf(err, "ofi: PE %d", cfg.Me)
	}
	t := &Transport{cfg: cfg, ep: ep}
	ok := false
	defer func() {
		if !ok {
			t.release()
		}
	}()
	a := ep.Attr
	t.name = fmt.Sprintf("ofi (%s on %s)", a.Provider, a.Domain)
	t.inject = a.InjectSize
	if t.inject > slotSize {
		t.inject = slotSize
	}
	t.seg = chunkSize
	if a.MaxMsgSize != 0 && a.MaxMsgSize < t.seg {
		t.seg = a.MaxMsgSize
	}
	t.zseg = 64 << 20
	if a.MaxMsgSize != 0 && a.MaxMsgSize < t.zseg {
		t.zseg = a.MaxMsgSize
	}
	t.flags = fabric.FlagDelivery
	t.manual = a.DataProgress == fabric.ProgressManual
	t.fenceRAW = a.MsgOrder&fabric.OrderRAW == 0
	if a.MRKeySize > 8 {
		return nil, errs.New(errs.ErrNotSupported, cfg.Me, "Init", "ofi: provider %s needs %d-byte memory keys; goshmem exchanges 8", a.Provider, a.MRKeySize)
	}

	// Staging arena: mmap'd so it never lives on the Go heap.
	t.arena, err = unix.Mmap(-1, 0, maxOps*slotSize+numChunks*chunkSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, errors.Wrapf(err, "ofi: PE %d: staging arena", cfg.Me)
	}
	if t.stage, err = ep.Register(unsafe.Pointer(&t.arena[0]), uint64(len(t.arena)), fabric.AccessLocal, 2); err != nil {
		return nil, errors.Wrapf(err, "ofi: PE %d: registering the staging arena", cfg.Me)
	}
	if t.heap, err = ep.Register(cfg.Region, cfg.RegionLen, fabric.AccessRemote|fabric.AccessLocal, 1); err != nil {
		return nil, errors.WithHint(errors.Wrapf(err, "ofi: PE %d: registering the symmetric heap (%d bytes)", cfg.Me, cfg.RegionLen),
			"lower GOSHMEM_SYMMETRIC_SIZE or raise the locked-memory limit (ulimit -l)")
	}
	t.ops = make([]op, maxOps)
	t.free = make([]uint32, 0, maxOps)
	for i := maxOps - 1; i >= 0; i-- {
		t.free = append(t.free, uint32(i))
	}
	for c := numChunks - 1; c >= 0; c-- {
		t.chunks = append(t.chunks, int32(c))
	}
	t.probeAtomics()

	// Exchange: [key][region address][address length][address].
	name, err := ep.Name()
	if err != nil {
		return nil, errors.Wrapf(err, "ofi: PE %d", cfg.Me)
	}
	if len(name) > addrMax {
		return nil, errs.New(errs.ErrNotSupported, cfg.Me, "Init", "ofi: %s endpoint address is %d bytes; at most %d are exchanged", a.Provider, len(name), addrMax)
	}
	var rec [recordSize]byte
	binary.LittleEndian.PutUint64(rec[0:], t.heap.Key)
	binary.LittleEndian.PutUint64(rec[8:], uint64(uintptr(cfg.Region)))
	binary.LittleEndian.PutUint64(rec[16:], uint64(len(name)))
	copy(rec[24:], name)
	all, err := cfg.Allgather(rec[:])
	if err != nil {
		return nil, errors.Wrapf(err, "ofi: PE %d: exchanging addresses and keys", cfg.Me)
	}
	t.key = make([]uint64, cfg.NPEs)
	t.raddr = make([]uint64, cfg.NPEs)
	addrs := make([]byte, 0, cfg.NPEs*len(name))
	for pe := 0; pe < cfg.NPEs; pe++ {
		r := all[pe*recordSize : (pe+1)*recordSize]
		t.key[pe] = binary.LittleEndian.Uint64(r[0:])
		if a.MRMode&fabric.MRVirtAddr != 0 {
			t.raddr[pe] = binary.LittleEndian.Uint64(r[8:])
		}
		if n := binary.LittleEndian.Uint64(r[16:]); n != uint64(len(name)) {
			return nil, errs.New(errs.ErrNotSymmetric, cfg.Me, "Init", "ofi: PE %d's endpoint address is %d bytes, this PE's %d: every PE must use the same provider (GOSHMEM_OFI_PROVIDER)", pe, n, len(name))
		}
		addrs = append(addrs, r[24:24+len(name)]...)
	}
	if t.addr, err = ep.InsertAddrs(addrs, cfg.NPEs); err != nil {
		return nil, errors.Wrapf(err, "ofi: PE %d", cfg.Me)
	}
	if err := ep.StartProgress(); err != nil {
		return nil, errors.Wrapf(err, "ofi: PE %d", cfg.Me)
	}
	ok = true
	return t, nil
}

// probeAtomics records which (kind, op, width) the provider implements
// (Ref: fi_atomic(3) fi_query_atomic). Missing ones are emulated (atomic).
func (t *Transport) probeAtomics() {
	if !t.ep.Attr.Atomic {
		return
	}
	for kind := 0; kind < 3; kind++ {
		for _, w := range []int{1, 2, 4, 8} {
			for _, o := range []transport.AMO{transport.AMOFetch, transport.AMOSet, transport.AMOSwap, transport.AMOCompareSwap,
				transport.AMOAdd, transport.AMOAnd, transport.AMOOr, transport.AMOXor} {
				k, fop := amoOp(o)
				if k != kind {
					continue
				}
				t.amo[kind][o][w] = t.ep.QueryAtomic(kind, dtype(w), fop)
			}
		}
	}
	// AMOSet is also posted non-fetching.
	for _, w := range []int{1, 2, 4, 8} {
		t.amo[fabric.KindAtomic][transport.AMOSet][w] = t.ep.QueryAtomic(fabric.KindAtomic, dtype(w), fabric.OpWrite)
	}
}

func dtype(w int) int {
	switch w {
	case 1:
		return fabric.Uint8
	case 2:
		return fabric.Uint16
	case 4:
		return fabric.Uint32
	}
	return fabric.Uint64
}

// amoOp maps a goshmem AMO to the fetching libfabric call that returns the
// old value.
func amoOp(o transport.AMO) (kind, fop int) {
	switch o {
	case transport.AMOFetch:
		return fabric.KindFetch, fabric.OpRead
	case transport.AMOSet, transport.AMOSwap:
		return fabric.KindFetch, fabric.OpWrite
	case transport.AMOCompareSwap:
		return fabric.KindCompare, fabric.OpCswap
	case transport.AMOAdd:
		return fabric.KindFetch, fabric.OpSum
	case transport.AMOAnd:
		return fabric.KindFetch, fabric.OpBand
	case transport.AMOOr:
		return fabric.KindFetch, fabric.OpBor
	}
	return fabric.KindFetch, fabric.OpBxor
}

// Name implements transport.Transport.
func (t *Transport) Name() string { return t.name }

// Provider is the opened provider's name.
func (t *Transport) Provider() string { return t.ep.Attr.Provider }

// Progress drives the provider and retires completed operations; it is the
// progress callback of every queue that carries ofi operations.
func (t *Transport) Progress() {
	if !t.progMu.TryLock() {
		goruntime.Gosched()
		return
	}
	n := t.ep.Poll(t.progBuf[:])
	for i := range t.progBuf[:n] {
		c := &t.progBuf[i]
		t.retire(fabric.Ctx(c), fabric.Failed(c))
	}
	t.progMu.Unlock()
}

// retire completes the operation whose context is c (id+1).
func (t *Transport) retire(c uint64, cerr *fabric.CQError) {
	if c == 0 || c > maxOps {
		return
	}
	o := &t.ops[c-1]
	var err error
	if cerr != nil {
		err = errors.Wrapf(cerr, "ofi: PE %d: %s to PE %d", t.cfg.Me, o.what, o.pe)
	}
	if o.q == nil {
		o.err = err
		o.done.Store(true) // the waiter releases the slot
		return
	}
	q := o.q
	if o.dst != nil && err == nil {
		copy(o.dst, unsafe.Slice((*byte)(o.src), len(o.dst)))
	}
	t.release1(c - 1)
	if err != nil {
		q.Fail(err)
	} else {
		q.Complete(1)
	}
}

func (t *Transport) release1(id uint64) {
	o := &t.ops[id]
	t.mu.Lock()
	if o.chunk >= 0 {
		t.chunks = append(t.chunks, o.chunk)
	}
	*o = op{chunk: -1}
	t.free = append(t.free, uint32(id))
	t.mu.Unlock()
}

func (t *Transport) slot(id uint32) unsafe.Pointer {
	return unsafe.Pointer(&t.arena[int(id)*slotSize])
}

func (t *Transport) chunkPtr(c int32) unsafe.Pointer {
	return unsafe.Pointer(&t.arena[maxOps*slotSize+int(c)*chunkSize])
}

// alloc takes an op slot (and a staging chunk when wantChunk), driving
// progress while none is free.
func (t *Transport) alloc(q *quiet.Queue, pe int, what string, wantChunk bool) (uint32, error) {
	start := time.Time{}
	for i := 0; ; i++ {
		t.mu.Lock()
		if len(t.free) > 0 && (!wantChunk || len(t.chunks) > 0) {
			id := t.free[len(t.free)-1]
			t.free = t.free[:len(t.free)-1]
			o := &t.ops[id]
			o.q, o.pe, o.what, o.chunk = q, pe, what, -1
			if wantChunk {
				o.chunk = t.chunks[len(t.chunks)-1]
				t.chunks = t.chunks[:len(t.chunks)-1]
			}
			t.mu.Unlock()
			return id, nil
		}
		t.mu.Unlock()
		if err := t.backoff(i, &start, pe, what+": waiting for a free operation slot"); err != nil {
			return 0, err
		}
	}
}

// backoff drives progress and, past the first spins, yields or sleeps; it
// fails once the configured timeout has passed.
func (t *Transport) backoff(i int, start *time.Time, pe int, what string) error {
	t.Progress()
	switch {
	case i < 64:
	case i < 1024:
		goruntime.Gosched()
	default:
		if start.IsZero() {
			*start = time.Now()
		} else if t.cfg.Timeout > 0 && time.Since(*start) > t.cfg.Timeout {
			return errs.New(errs.ErrTimeout, t.cfg.Me, what, "PE %d did not answer within GOSHMEM_TIMEOUT=%v", pe, t.cfg.Timeout)
		}
		time.Sleep(20 * time.Microsecond)
	}
	return nil
}

// post runs a posting call, retrying -FI_EAGAIN a bounded number of times
// with progress between tries (Ref: fi_rma(3) "-FI_EAGAIN").
func (t *Transport) post(pe int, what string, call func() error) error {
	for i := 0; ; i++ {
		err := call()
		if err == nil {
			return nil
		}
		if !errors.Is(err, fabric.EAGAIN) {
			return errors.Wrapf(err, "ofi: PE %d: %s to PE %d", t.cfg.Me, what, pe)
		}
		if i >= eagainBound {
			return errs.New(errs.ErrTimeout, t.cfg.Me, what, "ofi: the provider answered -FI_EAGAIN %d times for PE %d; the peer is not draining its endpoint", i, pe)
		}
		t.Progress()
		if i > 64 {
			goruntime.Gosched()
		}
	}
}

// Put implements transport.Transport: src is copied (FI_INJECT or staging)
// before Put returns; completion at the target is counted on q.
func (t *Transport) Put(q *quiet.Queue, pe int, off uint64, src []byte) error {
	if dst := t.self(q, pe, off, len(src)); dst != nil {
		copy(dst, src)
		return nil
	}
	for len(src) > 0 {
		n := uint64(len(src))
		if n <= t.inject {
			id, err := t.alloc(q, pe, "put", false)
			if err != nil {
				return err
			}
			q.Issue(1)
			if err := t.postWrite(pe, "put", unsafe.Pointer(unsafe.SliceData(src)), n, nil, off, id, t.flags|fabric.FlagInject); err != nil {
				t.release1(uint64(id))
				q.Complete(1)
				return err
			}
			return nil
		}
		if n > t.seg {
			n = t.seg
		}
		id, err := t.alloc(q, pe, "put", true)
		if err != nil {
			return err
		}
		buf := t.chunkPtr(t.ops[id].chunk)
		copy(unsafe.Slice((*byte)(buf), n), src[:n])
		q.Issue(1)
		if err := t.postWrite(pe, "put", buf, n, t.stage.Desc, off, id, t.flags); err != nil {
			t.release1(uint64(id))
			q.Complete(1)
			return err
		}
		src = src[n:]
		off += n
	}
	return nil
}

// PutNBI implements transport.Transport. A source inside this PE's
// symmetric region (registered) is written from where it lies, without a
// copy: it may be reused only after quiet, which PutNBI's contract says
// anyway. Other sources are copied, as in Put.
func (t *Transport) PutNBI(q *quiet.Queue, pe int, off uint64, src []byte) error {
	base := uintptr(t.cfg.Region)
	p := uintptr(unsafe.Pointer(unsafe.SliceData(src)))
	if pe == t.cfg.Me || uint64(len(src)) <= t.inject || p < base || p+uintptr(len(src)) > base+uintptr(t.cfg.RegionLen) {
		return t.Put(q, pe, off, src)
	}
	// Region memory is mmap'd, not Go memory: the provider may keep it.
	buf := unsafe.Pointer(&t.regionBytes()[p-base])
	for n := uint64(len(src)); n > 0; {
		seg := min(n, t.zseg)
		id, err := t.alloc(q, pe, "put_nbi", false)
		if err != nil {
			return err
		}
		q.Issue(1)
		if err := t.postWrite(pe, "put_nbi", buf, seg, t.heap.Desc, off, id, t.flags); err != nil {
			t.release1(uint64(id))
			q.Complete(1)
			return err
		}
		buf = unsafe.Add(buf, seg)
		off += seg
		n -= seg
	}
	return nil
}

func (t *Transport) regionBytes() []byte {
	return unsafe.Slice((*byte)(t.cfg.Region), t.cfg.RegionLen)
}

// postWrite posts one write, retrying -FI_EAGAIN (bounded, driving progress).
func (t *Transport) postWrite(pe int, what string, buf unsafe.Pointer, n uint64, desc unsafe.Pointer, off uint64, id uint32, flags uint64) error {
	for i := 0; ; i++ {
		err := t.ep.Write(buf, n, desc, t.addr[pe], t.raddr[pe]+off, t.key[pe], uint64(id)+1, flags)
		if err == nil {
			return nil
		}
		if err := t.retry(err, i, pe, what); err != nil {
			return err
		}
	}
}

// retry decides after a failed post: -FI_EAGAIN drives progress and tries
// again up to eagainBound times (Ref: fi_rma(3)); anything else fails.
func (t *Transport) retry(err error, i int, pe int, what string) error {
	if !errors.Is(err, fabric.EAGAIN) {
		return errors.Wrapf(err, "ofi: PE %d: %s to PE %d", t.cfg.Me, what, pe)
	}
	if i >= eagainBound {
		return errs.New(errs.ErrTimeout, t.cfg.Me, what, "ofi: the provider answered -FI_EAGAIN %d times for PE %d; the peer is not draining its endpoint", i, pe)
	}
	t.Progress()
	if i > 64 {
		goruntime.Gosched()
	}
	return nil
}

// Get implements transport.Transport: it returns once dst holds the data.
func (t *Transport) Get(q *quiet.Queue, dst []byte, pe int, off uint64) error {
	if src := t.self(q, pe, off, len(dst)); src != nil {
		copy(dst, src)
		return nil
	}
	if err := t.readAfterWrite(q, pe); err != nil {
		return err
	}
	for len(dst) > 0 {
		n := uint64(len(dst))
		small := n <= slotSize
		if !small && n > t.seg {
			n = t.seg
		}
		id, err := t.alloc(nil, pe, "get", !small)
		if err != nil {
			return err
		}
		buf := t.slot(id)
		if !small {
			buf = t.chunkPtr(t.ops[id].chunk)
		}
		if err := t.post(pe, "get", func() error {
			return t.ep.Read(buf, n, t.stage.Desc, t.addr[pe], t.raddr[pe]+off, t.key[pe], uint64(id)+1)
		}); err != nil {
			t.release1(uint64(id))
			return err
		}
		if err := t.wait(id, pe, "get"); err != nil {
			return err
		}
		copy(dst[:n], unsafe.Slice((*byte)(buf), n))
		t.release1(uint64(id))
		dst = dst[n:]
		off += n
	}
	return nil
}

// GetNBI implements transport.Transport: dst is filled by the completion,
// before q's count says so.
func (t *Transport) GetNBI(q *quiet.Queue, dst []byte, pe int, off uint64) error {
	if src := t.self(q, pe, off, len(dst)); src != nil {
		copy(dst, src)
		return nil
	}
	if err := t.readAfterWrite(q, pe); err != nil {
		return err
	}
	for len(dst) > 0 {
		n := uint64(len(dst))
		if n > t.seg {
			n = t.seg
		}
		id, err := t.alloc(q, pe, "get_nbi", true)
		if err != nil {
			return err
		}
		o := &t.ops[id]
		buf := t.chunkPtr(o.chunk)
		o.dst, o.src = dst[:n], buf
		q.Issue(1)
		if err := t.post(pe, "get_nbi", func() error {
			return t.ep.Read(buf, n, t.stage.Desc, t.addr[pe], t.raddr[pe]+off, t.key[pe], uint64(id)+1)
		}); err != nil {
			t.release1(uint64(id))
			q.Complete(1)
			return err
		}
		dst = dst[n:]
		off += n
	}
	return nil
}

// self returns this PE's own region at off when pe is this PE: puts and
// gets to oneself are memory copies, visible at once (as on shm), after the
// queue's earlier operations (which may target the same bytes) completed.
// Atomics to oneself still go through the provider, so they stay atomic
// with respect to the peers' (the provider applies those).
func (t *Transport) self(q *quiet.Queue, pe int, off uint64, n int) []byte {
	if pe != t.cfg.Me || n == 0 {
		return nil
	}
	if q != nil && q.Pending() > 0 {
		if err := t.Fence(q); err != nil {
			return nil // the provider path reports the failure
		}
	}
	return unsafe.Slice((*byte)(unsafe.Add(t.cfg.Region, off)), n)
}

// readAfterWrite makes a read see this queue's earlier writes when the
// provider does not order reads after writes (FI_ORDER_RAW).
func (t *Transport) readAfterWrite(q *quiet.Queue, pe int) error {
	if !t.fenceRAW || q == nil {
		return nil
	}
	return t.Fence(q)
}

// wait drives progress until the blocking operation id completes, and
// returns its error (the caller releases the slot).
func (t *Transport) wait(id uint32, pe int, what string) error {
	o := &t.ops[id]
	var start time.Time
	for i := 0; !o.done.Load(); i++ {
		if err := t.backoff(i, &start, pe, what); err != nil {
			return err // the slot stays taken: the operation may still complete
		}
	}
	if o.err != nil {
		err := o.err
		t.release1(uint64(id))
		return err
	}
	return nil
}

// Atomic implements transport.Transport. AMOSet is posted without a result
// and counted on q (completion = delivered); the others wait for the old
// value. Operations the provider lacks are emulated with compare-and-swap
// on the same word (or, for 1- and 2-byte fields, on the aligned 4-byte
// word that holds them), so they stay atomic with respect to the native ones.
func (t *Transport) Atomic(q *quiet.Queue, o transport.AMO, width int, pe int, off uint64, v, cmp uint64) (uint64, error) {
	if o == transport.AMOSet && t.amo[fabric.KindAtomic][o][width] {
		id, err := t.alloc(q, pe, "atomic set", false)
		if err != nil {
			return 0, err
		}
		s := t.slot(id)
		*(*uint64)(s) = v
		q.Issue(1)
		if err := t.post(pe, "atomic set", func() error {
			return t.ep.Atomic(fabric.KindAtomic, s, nil, nil, t.stage.Desc, dtype(width), fabric.OpWrite,
				t.addr[pe], t.raddr[pe]+off, t.key[pe], uint64(id)+1, t.flags)
		}); err != nil {
			t.release1(uint64(id))
			q.Complete(1)
			return 0, err
		}
		return 0, nil
	}
	if err := t.readAfterWrite(q, pe); err != nil {
		return 0, err
	}
	kind, fop := amoOp(o)
	if t.amo[kind][o][width] {
		return t.fetchAtomic(kind, fop, width, pe, off, v, cmp, o.String())
	}
	return t.emulate(o, width, pe, off, v, cmp)
}

func (t *Transport) fetchAtomic(kind, fop, width, pe int, off uint64, v, cmp uint64, what string) (uint64, error) {
	id, err := t.alloc(nil, pe, "atomic "+what, false)
	if err != nil {
		return 0, err
	}
	s := t.slot(id)
	operand, compare, result := s, unsafe.Add(s, 8), unsafe.Add(s, 16)
	*(*uint64)(operand), *(*uint64)(compare), *(*uint64)(result) = v, cmp, 0
	if err := t.post(pe, "atomic "+what, func() error {
		return t.ep.Atomic(kind, operand, compare, result, t.stage.Desc, dtype(width), fop,
			t.addr[pe], t.raddr[pe]+off, t.key[pe], uint64(id)+1, 0)
	}); err != nil {
		t.release1(uint64(id))
		return 0, err
	}
	if err := t.wait(id, pe, "atomic "+what); err != nil {
		return 0, err
	}
	mask := ^uint64(0)
	if width < 8 {
		mask = 1<<(8*uint(width)) - 1
	}
	old := *(*uint64)(result) & mask
	t.release1(uint64(id))
	return old, nil
}

// emulate runs op as a compare-and-swap loop on the containing word of the
// widest width the provider can compare-and-swap (little-endian layout).
func (t *Transport) emulate(o transport.AMO, width int, pe int, off uint64, v, cmp uint64) (uint64, error) {
	w := width
	if w < 4 {
		w = 4
	}
	if !t.amo[fabric.KindCompare][transport.AMOCompareSwap][w] {
		return 0, errs.Hint(errs.ErrNotSupported, "choose a provider with atomics (GOSHMEM_OFI_PROVIDER=tcp;ofi_rxm)",
			t.cfg.Me, "atomic "+o.String(), "ofi provider %s has no %d-byte compare-and-swap to PE %d", t.ep.Attr.Provider, w, pe)
	}
	word := off &^ uint64(w-1)
	shift := (off - word) * 8
	mask := ^uint64(0)
	if width < 8 {
		mask = (1<<(8*uint(width)) - 1)
	}
	v &= mask
	cmp &= mask
	cur, err := t.fetchAtomic(fabric.KindCompare, fabric.OpCswap, w, pe, word, 0, 0, "compare_swap (emulation)")
	if err != nil {
		return 0, err
	}
	for {
		old := (cur >> shift) & mask
		var nv uint64
		switch o {
		case transport.AMOFetch:
			return old, nil
		case transport.AMOSet, transport.AMOSwap:
			nv = v
		case transport.AMOCompareSwap:
			if old != cmp {
				return old, nil
			}
			nv = v
		case transport.AMOAdd:
			nv = old + v
		case transport.AMOAnd:
			nv = old & v
		case transport.AMOOr:
			nv = old | v
		case transport.AMOXor:
			nv = old ^ v
		}
		neww := (cur &^ (mask << shift)) | ((nv & mask) << shift)
		got, err := t.fetchAtomic(fabric.KindCompare, fabric.OpCswap, w, pe, word, neww, cur, "compare_swap (emulation)")
		if err != nil {
			return 0, err
		}
		if got == cur {
			return old, nil
		}
		cur = got
	}
}

// Fence implements transport.Transport: the writes and atomics q issued
// before it are delivered (FI_DELIVERY_COMPLETE) before any issued after
// it is posted. Waiting is the portable form: tcp;ofi_rxm reports msg_order
// WAW but says nothing of placement order across a write and an emulated
// atomic. Ref: OpenSHMEM 1.6 §9.8.1.
func (t *Transport) Fence(q *quiet.Queue) error {
	if q == nil {
		return nil
	}
	issued, _ := q.Counts()
	var start time.Time
	for i := 0; ; i++ {
		if _, c := q.Counts(); c >= issued {
			return nil
		}
		if err := t.backoff(i, &start, -1, "fence"); err != nil {
			return err
		}
	}
}

// Ptr implements transport.Transport: a peer mapped on this node stays
// load/store reachable even when ofi carries its RMA.
func (t *Transport) Ptr(pe int, off uint64) unsafe.Pointer {
	if pe < 0 || pe >= len(t.cfg.Local) || t.cfg.Local[pe] == nil {
		return nil
	}
	return unsafe.Add(t.cfg.Local[pe], off)
}

// Close stops the progress thread and releases the endpoint, the
// registrations and the staging arena.
func (t *Transport) Close() error {
	if t.closed.Swap(true) {
		return nil
	}
	t.release() // stops the progress thread first
	return nil
}

func (t *Transport) release() {
	t.ep.StopProgress() // before the registrations it may still use go
	_ = t.heap.Close()
	_ = t.stage.Close()
	if t.ep != nil {
		t.ep.Close()
	}
	if t.arena != nil {
		_ = unix.Munmap(t.arena)
		t.arena = nil
	}
}
