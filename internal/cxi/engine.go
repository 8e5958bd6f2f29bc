package cxi

import (
	"os"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/cgo/fabric"
	"github.com/goshmem/goshmem/internal/errs"
)

// counter is a trigger or completion counter: a libfabric counter (fabric
// engine) or the software engine's own.
type counter interface {
	Add(v uint64) error
	Set(v uint64) error
	Read() uint64
	ReadErr() uint64
	Close() error
}

// engine runs deferred writes between ranks' regions. Every method is
// called from the rank's monitor goroutine only (and setup/close).
type engine interface {
	name() string
	deferred() bool // real libfabric deferred work (FI_QUEUE_WORK)
	newCounter() (counter, error)
	// newSet builds the records of one slot once: op i is "when trig >=
	// base + ops[i].thr, write ops[i].n bytes at local offset src to the
	// peer's offset dst; then comp += 1 (trig += 1 for a chain op)". The
	// set is re-armed per instance (recordSet.arm) and owns its records:
	// nothing is allocated per instance.
	newSet(trig, comp counter, ops []op) (recordSet, error)
	// hostWrite writes now and returns once the write is delivered at the
	// target (FI_DELIVERY_COMPLETE): the fallback and credit path.
	hostWrite(src uintptr, n uint64, peer int, dst uintptr) error
	progress()
	close()
}

// link is one rank's endpoint, its registered region and its peers'.
type link struct {
	ep      *fabric.Endpoint
	mr      *fabric.MR
	base    unsafe.Pointer // this rank's region
	size    int
	addrs   []uint64 // fi_addr per peer
	keys    []uint64
	rbase   []uint64 // raddr of each peer's region start (0 in offset mode)
	nextCtx uint64
	pending map[uint64]func(err error) // write completions by context
	comps   []fabric.Completion
}

func (l *link) localDesc() unsafe.Pointer { return l.mr.Desc }

// postWrite posts an ordinary RMA write with a completion callback.
func (l *link) postWrite(src uintptr, n uint64, peer int, dst uintptr, flags uint64, done func(error)) error {
	l.nextCtx++
	ctx := l.nextCtx
	for {
		err := l.ep.Write(unsafe.Add(l.base, src), n, l.localDesc(), l.addrs[peer], l.rbase[peer]+uint64(dst), l.keys[peer], ctx, flags)
		if err == nil {
			break
		}
		if !errors.Is(err, fabric.EAGAIN) {
			return errors.Wrapf(err, "cxi: fi_writemsg of %d B to rank %d", n, peer)
		}
		l.poll()
	}
	l.pending[ctx] = done
	return nil
}

// poll reaps completions and runs their callbacks.
func (l *link) poll() int {
	n := l.ep.Poll(l.comps)
	for i := 0; i < n; i++ {
		c := &l.comps[i]
		ctx := fabric.Ctx(c)
		done, ok := l.pending[ctx]
		if !ok {
			continue // a deferred record's own entry, if the provider writes one
		}
		delete(l.pending, ctx)
		var err error
		if f := fabric.Failed(c); f != nil {
			err = f
		}
		done(err)
	}
	return n
}

func (l *link) hostWrite(src uintptr, n uint64, peer int, dst uintptr) error {
	finished := false
	var werr error
	if err := l.postWrite(src, n, peer, dst, fabric.FlagDelivery, func(err error) { finished, werr = true, err }); err != nil {
		return err
	}
	deadline := time.Now().Add(10 * time.Second)
	for !finished {
		if l.poll() == 0 && time.Now().After(deadline) {
			return errs.New(errs.ErrTimeout, -1, "cxi: host write", "%d B to rank %d not delivered within 10s", n, peer)
		}
	}
	return werr
}

// recordSet is one slot's prebuilt deferred-work records.
type recordSet interface {
	// arm queues every record at thresholds base + thr, resetting both
	// counters to 0 first when reset (base is then 0). provider, when not
	// nil, receives the time spent in the provider's calls.
	arm(base uint64, reset bool, provider *time.Duration) error
	free()
}

// fabricEngine: real libfabric deferred work (cxi on Slingshot, sockets here).
type fabricEngine struct {
	*link
}

func (e *fabricEngine) name() string   { return "fabric:" + e.ep.Attr.Provider }
func (e *fabricEngine) deferred() bool { return true }
func (e *fabricEngine) progress()      { e.poll() }
func (e *fabricEngine) close()         {}

func (e *fabricEngine) newCounter() (counter, error) { return e.ep.OpenCounter() }

// fabricSet re-arms a slot's records with one cgo call
// (fabric.WorkSet.Arm: fi_cntr_set x2 only when reset, then
// fi_control(FI_QUEUE_WORK) per record).
type fabricSet struct{ ws *fabric.WorkSet }

func (e *fabricEngine) newSet(trig, comp counter, ops []op) (recordSet, error) {
	ws, err := e.ep.NewWorkSet(trig.(*fabric.Counter), comp.(*fabric.Counter), len(ops))
	if err != nil {
		return nil, err
	}
	for i, o := range ops {
		ws.SetWrite(i, o.thr, o.chain, unsafe.Add(e.base, o.src), o.n, e.localDesc(), e.addrs[o.peer],
			e.rbase[o.peer]+uint64(o.dst), e.keys[o.peer], 0)
	}
	return fabricSet{ws}, nil
}

func (s fabricSet) arm(base uint64, reset bool, provider *time.Duration) error {
	if provider != nil {
		return s.ws.ArmTimed(base, reset, provider)
	}
	return s.ws.Arm(base, reset)
}

func (s fabricSet) free() { s.ws.Free() }

// softEngine: counters and the deferred queue live in the monitor; a
// record whose threshold is reached is posted as an ordinary RMA write on
// any provider. Selected only with GOSHMEM_CXI_ENGINE=software.
type softEngine struct {
	*link
}

type softWork struct {
	thr      uint64
	comp     *softCounter
	src      uintptr
	n        uint64
	peer     int
	dst      uintptr
	released bool
}

type softCounter struct {
	e     *softEngine
	v     uint64
	errs  uint64
	queue []*softWork
}

func (c *softCounter) Read() uint64    { return c.v }
func (c *softCounter) ReadErr() uint64 { return c.errs }
func (c *softCounter) Close() error    { return nil }
func (c *softCounter) Set(v uint64) error {
	c.v = v
	c.queue = c.queue[:0]
	return nil
}

func (c *softCounter) Add(v uint64) error {
	c.v += v
	for _, w := range c.queue {
		if w.released || c.v < w.thr {
			continue
		}
		w.released = true
		w := w
		if err := c.e.postWrite(w.src, w.n, w.peer, w.dst, 0, func(err error) {
			if err != nil {
				w.comp.errs++
				return
			}
			w.comp.Add(1)
		}); err != nil {
			return err
		}
	}
	return nil
}

func (e *softEngine) name() string   { return "software:" + e.ep.Attr.Provider }
func (e *softEngine) deferred() bool { return false }
func (e *softEngine) progress()      { e.poll() }
func (e *softEngine) close()         {}

func (e *softEngine) newCounter() (counter, error) { return &softCounter{e: e}, nil }

// softSet: the software engine's records of one slot.
type softSet struct {
	trig *softCounter
	comp *softCounter
	ws   []*softWork
	rel  []uint64
}

func (e *softEngine) newSet(trig, comp counter, ops []op) (recordSet, error) {
	s := &softSet{trig: trig.(*softCounter), comp: comp.(*softCounter)}
	for _, o := range ops {
		c := s.comp
		if o.chain {
			c = s.trig
		}
		s.ws = append(s.ws, &softWork{comp: c, src: o.src, n: o.n, peer: o.peer, dst: o.dst})
		s.rel = append(s.rel, o.thr)
	}
	return s, nil
}

func (s *softSet) arm(base uint64, reset bool, provider *time.Duration) error {
	if reset {
		s.trig.Set(0)
		s.comp.Set(0)
	}
	// The slot's previous records all ran (it was retired): drop them.
	s.trig.queue = s.trig.queue[:0]
	for i, w := range s.ws {
		w.thr, w.released = base+s.rel[i], false
		s.trig.queue = append(s.trig.queue, w)
	}
	return s.trig.Add(0) // like FI_QUEUE_WORK: a reached threshold runs at once
}

func (s *softSet) free() {}

// openEndpoint opens the endpoint for the engine kind.
func openEndpoint(pe int, kind, prov string) (*fabric.Endpoint, string, error) {
	switch kind {
	case EngineAuto, EngineFabric, "":
		if prov == "" || prov == "auto" {
			// The cxi provider where it exists (Slingshot), else sockets,
			// the provider of libfabric 1.17 that runs FI_QUEUE_WORK.
			if ep, err := fabric.OpenTriggered("cxi"); err == nil {
				return ep, EngineFabric, nil
			}
			prov = "sockets"
		}
		if prov == "sockets" && os.Getenv("FI_SOCKETS_PE_WAITTIME") == "" {
			// Without it the sockets progress thread sleeps between polls
			// and a two-process round trip takes milliseconds instead of
			// tens of microseconds (docs/cxi.md).
			// Read by libfabric when the provider initializes.
			os.Setenv("FI_SOCKETS_PE_WAITTIME", "0")
		}
		ep, err := fabric.OpenTriggered(prov)
		if err != nil {
			return nil, "", errs.Wrap(err, pe, "cxi: engine", "%q", kind)
		}
		return ep, EngineFabric, nil
	case EngineSoftware:
		if prov == "" || prov == "auto" {
			prov = "tcp;ofi_rxm"
		}
		ep, err := fabric.Open(prov)
		if err != nil {
			return nil, "", errs.Wrap(err, pe, "cxi: engine", "software")
		}
		return ep, EngineSoftware, nil
	}
	return nil, "", errs.Hint(errs.ErrInvalidArgument, "GOSHMEM_CXI_ENGINE is auto, fabric or software", pe,
		"cxi: engine", "%q is not an engine", kind)
}
