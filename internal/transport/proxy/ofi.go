package proxy

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/internal/transport"
)

// The ofi backend: the proxy path to GPU heaps on other nodes.
//
// A GPU heap on another node cannot be the target of an RMA here (the
// libfabric build has no FI_HMEM), so requests travel as active messages
// over RMA on the host transport's registered region, and the TARGET PE's
// proxy applies them to its own heap:
//
//   - every PE reserves, at the same offset of its registered host region
//     (OFILayout), an inbox per (source PE, source worker) lane: a head word
//     the source advances and Slots request slots of {32-byte header,
//     Payload bytes}; and an outbox per (target PE, worker) lane: the ack
//     word and rejection record the target writes back, and Slots reply
//     slots of Payload bytes;
//   - the origin worker (OFIBackend) writes each request (header and
//     payload, staged from its GPU heap into host memory) into the
//     target's inbox slot, and at the end of a chain, or before it waits,
//     fences and sets the head word (one 8-byte atomic write);
//   - the target's server (OFILink.Serve, a thread of the proxy) polls its
//     inboxes, applies each request to its own heap (Heap: the CUDA
//     backend's stream, host memory in tests), writes replies (gets,
//     fetching atomics) and rejection records into the origin's outbox,
//     fences, then sets the origin's ack word to the head it consumed;
//   - the origin never reuses a slot the ack word does not cover (credits),
//     and WriteWord (the completion words) waits until the ack covers every
//     request submitted before it: what the device's quiet promises is
//     remote visibility, and it holds only once the target applied them.
//
// A request the target cannot apply (offset outside its heap, bad size or
// op) is skipped and recorded in the outbox; the origin's next wait reports
// it as a RemoteRejection and the worker fails the chain's completion with
// DoneErr (the device's next quiet of that context traps). A target that
// does not answer within the timeout fails the origin's worker with an
// error naming it (the device then traps with GOSHMEMI_ERR_PROXY_DEAD).

// OFILayout is the ofi backend's area in every PE's registered region
// (identical on every PE: each computes the others' offsets from it).
type OFILayout struct {
	NPEs    int
	Lanes   int // per source PE: one per proxy worker
	Slots   int // request slots per lane (credits)
	Payload int // bytes of data per slot (a multiple of 64)
}

const (
	ofiHdr  = 32 // request header: {op|amo|width|len, offset, operand, compare}
	ofiLine = 64 // control line of an inbox (head) or outbox (ack, rejection)

	// request ops
	reqPut    = 1
	reqGet    = 2
	reqAtomic = 3

	// outbox control line words
	oboxAck      = 0
	oboxErrCount = 8
	oboxErrSeq   = 16
	oboxErrInfo  = 24 // op | reason<<8 | width<<16 | amo<<24 | len<<32
	oboxErrOff   = 32

	// rejection reasons
	whyOutside = 1
	whySize    = 2
	whyOp      = 3
	whyAtomic  = 4
)

// DefaultOFILayout is the layout the runtime uses: 32 slots of 8 KiB per
// lane (256 KiB in flight per worker and target; the area takes about
// 512 KiB of the host symmetric heap per PE and worker: 4 MiB for 2 PEs
// with 4 workers, within goshmem-perf's 16 MiB heap).
func DefaultOFILayout(npes, lanes int) OFILayout {
	return OFILayout{NPEs: npes, Lanes: lanes, Slots: 32, Payload: 8 << 10}
}

// Validate checks the layout's fields.
func (l OFILayout) Validate() error {
	switch {
	case l.NPEs < 1 || l.Lanes < 1:
		return errs.New(errs.ErrInvalidArgument, -1, "proxy", "ofi layout: %d PEs, %d lanes; both must be >= 1", l.NPEs, l.Lanes)
	case l.Slots < 2 || l.Slots > 1<<16:
		return errs.New(errs.ErrInvalidArgument, -1, "proxy", "ofi layout: %d slots per lane; must be in [2, 65536]", l.Slots)
	case l.Payload < 64 || l.Payload > 1<<20 || l.Payload%64 != 0:
		return errs.New(errs.ErrInvalidArgument, -1, "proxy", "ofi layout: payload %d bytes; must be a multiple of 64 in [64, 1 MiB]", l.Payload)
	}
	return nil
}

func (l OFILayout) nLanes() uint64    { return uint64(l.NPEs * l.Lanes) }
func (l OFILayout) slotBytes() uint64 { return uint64(ofiHdr + l.Payload) }
func (l OFILayout) inboxBytes() uint64 {
	return ofiLine + uint64(l.Slots)*l.slotBytes()
}
func (l OFILayout) outboxBytes() uint64 { return ofiLine + uint64(l.Slots)*uint64(l.Payload) }

// Size is the bytes of the area on every PE.
func (l OFILayout) Size() uint64 { return l.nLanes() * (l.inboxBytes() + l.outboxBytes()) }

// inbox is the offset of the inbox, on a target, of src's worker w.
func (l OFILayout) inbox(src, w int) uint64 { return uint64(src*l.Lanes+w) * l.inboxBytes() }

// inSlot is the offset of slot s of that inbox.
func (l OFILayout) inSlot(src, w int, s uint64) uint64 {
	return l.inbox(src, w) + ofiLine + (s%uint64(l.Slots))*l.slotBytes()
}

// outbox is the offset of the outbox, on an origin, of target dst and worker w.
func (l OFILayout) outbox(dst, w int) uint64 {
	return l.nLanes()*l.inboxBytes() + uint64(dst*l.Lanes+w)*l.outboxBytes()
}

// reply is the offset of reply slot s of that outbox.
func (l OFILayout) reply(dst, w int, s uint64) uint64 {
	return l.outbox(dst, w) + ofiLine + (s%uint64(l.Slots))*uint64(l.Payload)
}

// Heap is this PE's own symmetric heap as the ofi backend reaches it: the
// origin stages puts out of it and gets into it, the target applies
// requests to it. Offsets are byte offsets; host pointers are host memory.
type Heap interface {
	// Size is the heap's size in bytes.
	Size() uint64
	// Load copies n bytes at off into dst; complete on return, ordered
	// after everything submitted before it on this heap.
	Load(dst unsafe.Pointer, off uint64, n int) error
	// Store queues a copy of n bytes from src to off; src must stay
	// unchanged until Sync returns.
	Store(off uint64, src unsafe.Pointer, n int) error
	// LoadAddr and StoreAddr are Load and Store at address addr of a
	// registered buffer of this PE (Proxy.Register) instead of an offset.
	LoadAddr(dst unsafe.Pointer, addr uint64, n int) error
	StoreAddr(addr uint64, src unsafe.Pointer, n int) error
	// AtomicAt applies op to the width-byte word at off and returns the old
	// value; complete on return.
	AtomicAt(off uint64, op transport.AMO, width int, v, cmp uint64) (uint64, error)
	// Sync returns once every Store is visible to the heap's users.
	Sync() error
}

// HostHeap is a Heap in host memory (host mode: the tests' "GPU heap").
type HostHeap struct {
	Base unsafe.Pointer
	N    uint64
}

// Size implements Heap.
func (h *HostHeap) Size() uint64 { return h.N }

// Load implements Heap.
func (h *HostHeap) Load(dst unsafe.Pointer, off uint64, n int) error {
	copy(unsafe.Slice((*byte)(dst), n), unsafe.Slice((*byte)(unsafe.Add(h.Base, off)), n))
	return nil
}

// Store implements Heap (complete on return).
func (h *HostHeap) Store(off uint64, src unsafe.Pointer, n int) error {
	copy(unsafe.Slice((*byte)(unsafe.Add(h.Base, off)), n), unsafe.Slice((*byte)(src), n))
	return nil
}

// LoadAddr implements Heap: addr is a host address.
func (h *HostHeap) LoadAddr(dst unsafe.Pointer, addr uint64, n int) error {
	copy(unsafe.Slice((*byte)(dst), n), hostBytes(addr, n))
	return nil
}

// StoreAddr implements Heap (complete on return): addr is a host address.
func (h *HostHeap) StoreAddr(addr uint64, src unsafe.Pointer, n int) error {
	copy(hostBytes(addr, n), unsafe.Slice((*byte)(src), n))
	return nil
}

// AtomicAt implements Heap: 4- and 8-byte words, atomic with respect to
// the host-mode device code's atomics on the same words.
func (h *HostHeap) AtomicAt(off uint64, op transport.AMO, width int, v, cmp uint64) (uint64, error) {
	p := unsafe.Add(h.Base, off)
	switch width {
	case 8:
		w := (*uint64)(p)
		for {
			old := atomic.LoadUint64(w)
			nv, store := op.Apply(old, v, cmp)
			if !store || atomic.CompareAndSwapUint64(w, old, nv) {
				return old, nil
			}
		}
	case 4:
		w := (*uint32)(p)
		for {
			old := atomic.LoadUint32(w)
			nv, store := op.Apply(uint64(old), v, cmp)
			if !store || atomic.CompareAndSwapUint32(w, old, uint32(nv)) {
				return uint64(old), nil
			}
		}
	}
	return 0, errs.New(errs.ErrNotSupported, -1, "proxy atomic", "%d-byte atomic; 4 or 8 bytes", width)
}

// Sync implements Heap.
func (h *HostHeap) Sync() error { return nil }

// OFIConfig configures an OFILink.
type OFIConfig struct {
	Me int
	// Tr is the host transport that reaches every far PE's registered
	// region (the ofi transport; Put, Atomic and Fence are used).
	Tr transport.Transport
	// Area is the host address of this PE's area; Off its offset in the
	// transport's region (the same on every PE).
	Area   unsafe.Pointer
	Off    uint64
	Layout OFILayout
	// Timeout bounds every wait for a target (0: 60 s).
	Timeout time.Duration
	// Idle is how long the server spins without requests before it sleeps
	// between polls (0: 1 ms).
	Idle time.Duration
}

// OFILink is one PE's end of the ofi backend: its area, the server that
// applies the requests other PEs send it, and the backends of its workers.
type OFILink struct {
	cfg      OFIConfig
	progress func()
	stop     atomic.Bool
	wg       sync.WaitGroup
	closers  []func() error
	served   atomic.Uint64
}

// NewOFILink checks cfg and clears the area.
func NewOFILink(cfg OFIConfig) (*OFILink, error) {
	if err := cfg.Layout.Validate(); err != nil {
		return nil, err
	}
	if cfg.Me < 0 || cfg.Me >= cfg.Layout.NPEs || cfg.Tr == nil || cfg.Area == nil {
		return nil, errs.New(errs.ErrInvalidArgument, -1, "proxy", "ofi link: PE %d of %d, transport %v, area %p", cfg.Me, cfg.Layout.NPEs, cfg.Tr, cfg.Area)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.Idle == 0 {
		cfg.Idle = time.Millisecond
	}
	clear(unsafe.Slice((*byte)(cfg.Area), cfg.Layout.Size()))
	l := &OFILink{cfg: cfg, progress: func() {}}
	if p, ok := cfg.Tr.(interface{ Progress() }); ok {
		l.progress = p.Progress
	}
	return l, nil
}

// Layout is the link's layout.
func (l *OFILink) Layout() OFILayout { return l.cfg.Layout }

// Served is the requests the server applied (or rejected).
func (l *OFILink) Served() uint64 { return l.served.Load() }

func (l *OFILink) word(off uint64) *uint64 { return (*uint64)(unsafe.Add(l.cfg.Area, off)) }

// Serve starts the server: a thread that applies the requests of every
// other PE's workers to heap until Close. fail is called (once) when it
// stops on an error (a heap or transport failure), after which it serves
// nothing. closeHeap, when not nil, runs after the server stopped.
func (l *OFILink) Serve(heap Heap, fail func(error), closeHeap func() error) {
	if closeHeap != nil {
		l.closers = append(l.closers, closeHeap)
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		if err := l.serve(heap); err != nil && fail != nil {
			fail(err)
		}
	}()
}

// Close stops the server and releases its heap.
func (l *OFILink) Close() error {
	l.stop.Store(true)
	l.wg.Wait()
	var errList []error
	for _, c := range l.closers {
		errList = append(errList, c())
	}
	l.closers = nil
	return errors.Join(errList...)
}

type inLane struct {
	src, w   int
	consumed uint64
	errs     uint64
}

func (l *OFILink) serve(heap Heap) error {
	c := &l.cfg
	ly := c.Layout
	q := quiet.NewQueue(fmt.Sprintf("PE %d proxy ofi server", c.Me), l.progress)
	var lanes []*inLane
	for src := 0; src < ly.NPEs; src++ {
		for w := 0; w < ly.Lanes && src != c.Me; w++ {
			lanes = append(lanes, &inLane{src: src, w: w})
		}
	}
	buf := make([]byte, ly.Payload)
	var idleSince time.Time
	for !l.stop.Load() {
		n := 0
		for _, ln := range lanes {
			head := atomic.LoadUint64(l.word(ly.inbox(ln.src, ln.w)))
			if head == ln.consumed {
				continue
			}
			if head-ln.consumed > uint64(ly.Slots) {
				return errs.New(errs.ErrInvalidArgument, c.Me, "proxy ofi server",
					"PE %d worker %d published head %d with %d requests consumed: more than the %d slots of a lane (corrupt inbox or mismatched layouts)",
					ln.src, ln.w, head, ln.consumed, ly.Slots)
			}
			if err := l.apply(q, heap, ln, head, buf); err != nil {
				return err
			}
			n++
		}
		if n > 0 {
			idleSince = time.Time{}
			continue
		}
		now := time.Now()
		if idleSince.IsZero() {
			idleSince = now
		} else if now.Sub(idleSince) > c.Idle {
			time.Sleep(20 * time.Microsecond)
		}
	}
	return nil
}

// apply serves requests [ln.consumed, head) of one lane, then acknowledges them.
func (l *OFILink) apply(q *quiet.Queue, heap Heap, ln *inLane, head uint64, buf []byte) error {
	c := &l.cfg
	ly := c.Layout
	stored, replied := false, false
	for s := ln.consumed; s < head; s++ {
		slot := unsafe.Add(c.Area, ly.inSlot(ln.src, ln.w, s))
		h0 := atomic.LoadUint64((*uint64)(slot))
		off := *(*uint64)(unsafe.Add(slot, 8))
		v := *(*uint64)(unsafe.Add(slot, 16))
		cmp := *(*uint64)(unsafe.Add(slot, 24))
		op, amo, width, n := int(h0&0xff), transport.AMO(h0>>8&0xff), int(h0>>16&0xff), int(h0>>32)
		why := 0
		switch {
		case op != reqPut && op != reqGet && op != reqAtomic:
			why = whyOp
		case op == reqAtomic && (width != 4 && width != 8 || off%uint64(width) != 0 || amo > transport.AMOXor):
			why = whyAtomic
		case op == reqAtomic:
			n = width
		case n < 1 || n > ly.Payload:
			why = whySize
		}
		if why == 0 && (off > heap.Size() || uint64(n) > heap.Size()-off) {
			why = whyOutside
		}
		remote := c.Off + ly.reply(c.Me, ln.w, s)
		var err error
		switch {
		case why != 0:
			ln.errs++
			var rec [40]byte
			le64(rec[0:], ln.errs)
			le64(rec[8:], s)
			le64(rec[16:], uint64(op)|uint64(why)<<8|uint64(width)<<16|uint64(amo)<<24|uint64(n)<<32)
			le64(rec[24:], off)
			le64(rec[32:], heap.Size())
			err = c.Tr.Put(q, ln.src, c.Off+ly.outbox(c.Me, ln.w)+oboxErrCount, rec[:])
			replied = true
		case op == reqPut:
			err = heap.Store(off, unsafe.Add(slot, ofiHdr), n)
			stored = true
		case op == reqGet:
			if err = heap.Load(unsafe.Pointer(unsafe.SliceData(buf)), off, n); err == nil {
				err = c.Tr.Put(q, ln.src, remote, buf[:n])
			}
			replied = true
		case op == reqAtomic:
			var old uint64
			if old, err = heap.AtomicAt(off, amo, width, v, cmp); err == nil {
				le64(buf, old)
				err = c.Tr.Put(q, ln.src, remote, buf[:8])
			}
			replied = true
		}
		if err != nil {
			return errs.Wrap(err, c.Me, "proxy ofi server", "request %d of PE %d worker %d", s, ln.src, ln.w)
		}
		l.served.Add(1)
	}
	if stored {
		if err := heap.Sync(); err != nil {
			return errs.Wrap(err, c.Me, "proxy ofi server", "applying PE %d's puts", ln.src)
		}
	}
	if replied {
		if err := c.Tr.Fence(q); err != nil {
			return errs.Wrap(err, c.Me, "proxy ofi server", "replies to PE %d", ln.src)
		}
	}
	if _, err := c.Tr.Atomic(q, transport.AMOSet, 8, ln.src, c.Off+ly.outbox(c.Me, ln.w)+oboxAck, head, 0); err != nil {
		return errs.Wrap(err, c.Me, "proxy ofi server", "acknowledging PE %d's requests", ln.src)
	}
	ln.consumed = head
	return nil
}

func le64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

// RemoteRejection is a request the target PE's proxy rejected (ofi
// backend). WriteWord returns it without writing; the worker then marks the
// chain failed (DoneErr) and writes the word again.
type RemoteRejection struct {
	Me, PE, Worker int
	Seq            uint64
	Op, Why        int
	Width, Len     int
	AMO            transport.AMO
	Off, HeapSize  uint64
	Count          uint64 // rejections on this lane so far
}

func (e *RemoteRejection) Error() string {
	ops := map[int]string{reqPut: "put", reqGet: "get", reqAtomic: "atomic"}
	what := ops[e.Op]
	if what == "" {
		what = fmt.Sprintf("op %d", e.Op)
	}
	var why string
	switch e.Why {
	case whyOutside:
		why = fmt.Sprintf("offset %#x + %d bytes is outside PE %d's heap (%d bytes)", e.Off, e.Len, e.PE, e.HeapSize)
	case whySize:
		why = fmt.Sprintf("size %d out of range", e.Len)
	case whyOp:
		why = "unknown op"
	case whyAtomic:
		why = fmt.Sprintf("%d-byte %v at %#x: want a 4- or 8-byte aligned word", e.Width, e.AMO, e.Off)
	default:
		why = fmt.Sprintf("reason %d", e.Why)
	}
	return fmt.Sprintf("goshmem: PE %d: %s request %d of proxy worker %d rejected by PE %d's proxy (%d on this lane so far): %s",
		e.Me, what, e.Seq, e.Worker, e.PE, e.Count, why)
}

// Is makes errors.Is(err, errs.ErrInvalidArgument) hold.
func (e *RemoteRejection) Is(target error) bool { return target == errs.ErrInvalidArgument }

// deviceOp is the device op of the request (for the ring's error word).
func (e *RemoteRejection) deviceOp() uint8 {
	switch e.Op {
	case reqGet:
		return OpGet
	case reqAtomic:
		return OpAMO
	}
	return OpPut
}

type outLane struct {
	seq, pub, acked, errSeen uint64
	listed                   bool // in dirty
}

// OFIBackend is a worker's Backend for the PEs far reports (their heaps
// are reached through the target's proxy over ofi); the others, and the
// completion words, go to near.
type OFIBackend struct {
	l     *OFILink
	w     int
	heap  Heap
	near  Backend
	far   func(pe int) bool
	q     *quiet.Queue
	lanes []outLane
	dirty []int
	buf   []byte // header + payload of one request
}

// Backend returns worker w's backend: heap is this PE's heap (its stream
// must be near's when both are GPU code, so that near's words follow the
// heap copies), near serves the other PEs and every completion word (its
// Close is the backend's), far selects the PEs served here (nil: all).
func (l *OFILink) Backend(w int, heap Heap, near Backend, far func(pe int) bool) (*OFIBackend, error) {
	if w < 0 || w >= l.cfg.Layout.Lanes {
		return nil, errs.New(errs.ErrInvalidArgument, l.cfg.Me, "proxy", "worker %d has no ofi lane (the layout has %d lanes per PE)", w, l.cfg.Layout.Lanes)
	}
	if far == nil {
		far = func(int) bool { return true }
	}
	return &OFIBackend{l: l, w: w, heap: heap, near: near, far: far,
		q:     quiet.NewQueue(fmt.Sprintf("PE %d proxy worker %d ofi", l.cfg.Me, w), l.progress),
		lanes: make([]outLane, l.cfg.Layout.NPEs), buf: make([]byte, ofiHdr+l.cfg.Layout.Payload)}, nil
}

// Name implements Backend.
func (b *OFIBackend) Name() string {
	return "ofi (requests staged in host memory, applied by the target's proxy) + " + b.near.Name()
}

// reserve returns the sequence number of pe's next slot, waiting for a
// credit when the target has not consumed the slot's previous use.
func (b *OFIBackend) reserve(pe int) (uint64, error) {
	ln := &b.lanes[pe]
	slots := uint64(b.l.cfg.Layout.Slots)
	if ln.seq-ln.acked >= slots {
		if err := b.publish(pe); err != nil {
			return 0, err
		}
		if err := b.waitAck(pe, ln.seq-slots+1); err != nil {
			return 0, err
		}
	}
	return ln.seq, nil
}

// post writes request seq (header and n payload bytes already in b.buf) to pe.
func (b *OFIBackend) post(pe int, seq uint64, op int, amo transport.AMO, width, n int, off, v, cmp uint64, payload int) error {
	le64(b.buf[0:], uint64(op)|uint64(amo)<<8|uint64(width)<<16|uint64(n)<<32)
	le64(b.buf[8:], off)
	le64(b.buf[16:], v)
	le64(b.buf[24:], cmp)
	ly := b.l.cfg.Layout
	if err := b.l.cfg.Tr.Put(b.q, pe, b.l.cfg.Off+ly.inSlot(b.l.cfg.Me, b.w, seq), b.buf[:ofiHdr+payload]); err != nil {
		return err
	}
	ln := &b.lanes[pe]
	if !ln.listed {
		ln.listed = true
		b.dirty = append(b.dirty, pe)
	}
	ln.seq = seq + 1
	return nil
}

// publish makes pe's posted requests visible: fence, then the head word.
func (b *OFIBackend) publish(pe int) error {
	ln := &b.lanes[pe]
	if ln.pub == ln.seq {
		return nil
	}
	c := &b.l.cfg
	if err := c.Tr.Fence(b.q); err != nil {
		return err
	}
	if _, err := c.Tr.Atomic(b.q, transport.AMOSet, 8, pe, c.Off+c.Layout.inbox(c.Me, b.w), ln.seq, 0); err != nil {
		return err
	}
	ln.pub = ln.seq
	return nil
}

func (b *OFIBackend) publishAll() error {
	for _, pe := range b.dirty {
		if err := b.publish(pe); err != nil {
			return err
		}
	}
	return nil
}

// waitAck waits until pe acknowledged requests below seq (bounded by the
// timeout), then reports a rejection the target recorded meanwhile.
func (b *OFIBackend) waitAck(pe int, seq uint64) error {
	ln := &b.lanes[pe]
	c := &b.l.cfg
	obox := c.Layout.outbox(pe, b.w)
	if ln.acked < seq {
		ack := b.l.word(obox + oboxAck)
		ok, _ := spin.Policy{Spins: 256, Yields: 1792, MaxSleep: 20 * time.Microsecond, Timeout: c.Timeout}.Until(func() bool {
			if a := atomic.LoadUint64(ack); a >= seq {
				ln.acked = a
				return true
			}
			b.l.progress()
			return false
		}, nil)
		if !ok {
			return errs.Hint(errs.ErrTimeout, "the target PE stopped, or its GPU proxy does not run (every PE must use GOSHMEM_PROXY_BACKEND alike)",
				c.Me, "proxy", "PE %d's proxy did not apply requests %d..%d of worker %d within %v (it acknowledged %d)",
				pe, ln.acked, seq-1, b.w, c.Timeout, atomic.LoadUint64(ack))
		}
	}
	if n := atomic.LoadUint64(b.l.word(obox + oboxErrCount)); n != ln.errSeen {
		ln.errSeen = n
		info := atomic.LoadUint64(b.l.word(obox + oboxErrInfo))
		return &RemoteRejection{Me: c.Me, PE: pe, Worker: b.w, Count: n,
			Seq: atomic.LoadUint64(b.l.word(obox + oboxErrSeq)), Op: int(info & 0xff), Why: int(info >> 8 & 0xff),
			Width: int(info >> 16 & 0xff), AMO: transport.AMO(info >> 24 & 0xff), Len: int(info >> 32),
			Off: atomic.LoadUint64(b.l.word(obox + oboxErrOff)), HeapSize: atomic.LoadUint64(b.l.word(obox + oboxErrOff + 8))}
	}
	return nil
}

// settle publishes pe's requests and waits until pe applied them all.
func (b *OFIBackend) settle(pe int) error {
	if err := b.publish(pe); err != nil {
		return err
	}
	return b.waitAck(pe, b.lanes[pe].seq)
}

func (b *OFIBackend) replyWord(pe int, seq uint64) uint64 {
	return atomic.LoadUint64(b.l.word(b.l.cfg.Layout.reply(pe, b.w, seq)))
}

// Put implements Backend: n bytes of this PE's heap at src, in slots.
func (b *OFIBackend) Put(pe int, dst, src uint64, n int) error {
	if !b.far(pe) {
		return b.near.Put(pe, dst, src, n)
	}
	return b.put(pe, dst, src, n, b.heap.Load)
}

// PutAddr implements Backend: n bytes of a registered buffer at src.
func (b *OFIBackend) PutAddr(pe int, dst, src uint64, n int) error {
	if !b.far(pe) {
		return b.near.PutAddr(pe, dst, src, n)
	}
	return b.put(pe, dst, src, n, b.heap.LoadAddr)
}

// put sends n bytes at src (an offset or an address, as load takes it)
// to pe's heap at dst, in slots.
func (b *OFIBackend) put(pe int, dst, src uint64, n int, load func(unsafe.Pointer, uint64, int) error) error {
	p := b.l.cfg.Layout.Payload
	for o := 0; o < n; o += p {
		seg := min(p, n-o)
		seq, err := b.reserve(pe)
		if err != nil {
			return err
		}
		if err := load(unsafe.Pointer(&b.buf[ofiHdr]), src+uint64(o), seg); err != nil {
			return err
		}
		if err := b.post(pe, seq, reqPut, 0, 0, seg, dst+uint64(o), 0, 0, seg); err != nil {
			return err
		}
	}
	return nil
}

// PutInline implements Backend.
func (b *OFIBackend) PutInline(pe int, dst uint64, data Ptr, n int) error {
	if !b.far(pe) {
		return b.near.PutInline(pe, dst, data, n)
	}
	seq, err := b.reserve(pe)
	if err != nil {
		return err
	}
	copy(b.buf[ofiHdr:], unsafe.Slice((*byte)(data.Host), n))
	return b.post(pe, seq, reqPut, 0, 0, n, dst, 0, 0, n)
}

// Get implements Backend: requests of up to Payload bytes, a window of at
// most Slots at a time, each reply stored into this PE's heap.
func (b *OFIBackend) Get(pe int, src, dst uint64, n int) error {
	if !b.far(pe) {
		return b.near.Get(pe, src, dst, n)
	}
	return b.get(pe, src, dst, n, b.heap.Store)
}

// GetAddr implements Backend: as Get, into a registered buffer at dst.
func (b *OFIBackend) GetAddr(pe int, src, dst uint64, n int) error {
	if !b.far(pe) {
		return b.near.GetAddr(pe, src, dst, n)
	}
	return b.get(pe, src, dst, n, b.heap.StoreAddr)
}

// get fetches n bytes of pe's heap at src into dst (an offset or an
// address, as store takes it).
func (b *OFIBackend) get(pe int, src, dst uint64, n int, store func(uint64, unsafe.Pointer, int) error) error {
	ly := b.l.cfg.Layout
	type seg struct {
		seq uint64
		o   uint64
		n   int
	}
	var win []seg
	for o := 0; o < n; {
		s := min(ly.Payload, n-o)
		seq, err := b.reserve(pe)
		if err != nil {
			return err
		}
		if err := b.post(pe, seq, reqGet, 0, 0, s, src+uint64(o), 0, 0, 0); err != nil {
			return err
		}
		win = append(win, seg{seq, uint64(o), s})
		o += s
		if len(win) < ly.Slots && o < n {
			continue
		}
		if err := b.settle(pe); err != nil {
			return err
		}
		for _, g := range win {
			if err := store(dst+g.o, unsafe.Add(b.l.cfg.Area, ly.reply(pe, b.w, g.seq)), g.n); err != nil {
				return err
			}
		}
		if err := b.heap.Sync(); err != nil {
			return err
		}
		win = win[:0]
	}
	return nil
}

// GetReply implements Backend (out gets the value zero-extended to 8 bytes).
func (b *OFIBackend) GetReply(pe int, src uint64, n int, out Ptr) error {
	if !b.far(pe) {
		return b.near.GetReply(pe, src, n, out)
	}
	seq, err := b.reserve(pe)
	if err != nil {
		return err
	}
	if err := b.post(pe, seq, reqGet, 0, 0, n, src, 0, 0, 0); err != nil {
		return err
	}
	if err := b.settle(pe); err != nil {
		return err
	}
	v := b.replyWord(pe, seq)
	if n < 8 {
		v &= 1<<(8*uint(n)) - 1
	}
	return b.near.WriteWord(out, v)
}

// Atomic implements Backend: executed by the target on its heap; a
// fetching one waits for the old value.
func (b *OFIBackend) Atomic(pe int, off uint64, op transport.AMO, width int, v, cmp uint64, out Ptr) error {
	if !b.far(pe) {
		return b.near.Atomic(pe, off, op, width, v, cmp, out)
	}
	seq, err := b.reserve(pe)
	if err != nil {
		return err
	}
	if err := b.post(pe, seq, reqAtomic, op, width, width, off, v, cmp, 0); err != nil {
		return err
	}
	if out.Host == nil && out.Dev == 0 {
		return nil
	}
	if err := b.settle(pe); err != nil {
		return err
	}
	return b.near.WriteWord(out, b.replyWord(pe, seq))
}

// WriteWord implements Backend: once every far PE applied what this worker
// sent it, near writes the word. A rejection found meanwhile is returned
// (a *RemoteRejection) and nothing is written.
func (b *OFIBackend) WriteWord(p Ptr, v uint64) error {
	if err := b.publishAll(); err != nil {
		return err
	}
	var rej error
	for _, pe := range b.dirty {
		b.lanes[pe].listed = false
		if err := b.waitAck(pe, b.lanes[pe].seq); err != nil {
			var rj *RemoteRejection
			if !errors.As(err, &rj) {
				return err
			}
			if rej == nil {
				rej = err
			}
		}
	}
	b.dirty = b.dirty[:0]
	if rej != nil {
		return rej
	}
	return b.near.WriteWord(p, v)
}

// Flush implements Backend.
func (b *OFIBackend) Flush() error {
	if err := b.publishAll(); err != nil {
		return err
	}
	return b.near.Flush()
}

// Close implements Backend.
func (b *OFIBackend) Close() error { return b.near.Close() }

// Sync waits for the near backend's submitted work (Proxy.Drain); the far
// PEs' requests are applied once the chain's WriteWord returned.
func (b *OFIBackend) Sync() error {
	if s, ok := b.near.(interface{ Sync() error }); ok {
		return s.Sync()
	}
	return nil
}
