package cudatr

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
)

// The next growth, prepared ahead (CUDA VMM). A growth's cost is in the
// driver: creating, mapping and exporting this PE's chunk, then importing
// and mapping every node peer's. So once an AllocDevice leaves the heap
// less than one preparation's size past the block it returned (the step,
// GOSHMEM_DEVICE_HEAP_CHUNK, or the largest block so far up to
// aheadMaxSteps steps), every PE starts a goroutine that does that work
// for the next part of the heap, beyond its usable size where no kernel
// addresses it: it creates the chunk, maps it behind the mapped heap,
// exports it and sends the descriptor to every node peer (fdpost.go),
// starts zeroing it on a stream of its own, and meanwhile maps every node
// peer's chunk into that peer's view, in the order the peers' messages
// arrive. The growth that needs it waits for that goroutine,
// exchanges one record (whether every PE's preparation succeeded), and
// adopts the chunks: the usable size grows, the growth hooks run, and the
// device state learns the size. If any PE's preparation failed, every PE
// drops its prepared chunks, grows by need as before, and prepares no
// more. The decision to prepare depends only on the allocator's symmetric
// state, so every PE prepares the same generation at the same call.
//
// The memory mapped ahead is at most one preparation per PE beyond the
// usable heap. Because the prepared chunk is zeroed and never handed out
// before it is adopted, blocks placed in it need no zeroing (ZeroBlock).

// aheadWait bounds a growth's wait for the preparation it adopts. The
// goroutine waits for a peer's message without a bound (the peer may
// reach the call that starts its preparation much later; a peer that
// exits ends the wait), but once every PE is in the growth, every peer
// has started, and sends within its own driver calls' time: a message
// still missing then ends the wait, and the growth falls back. It bounds
// Init's wait for a peer's first chunk too.
const aheadWait = 60 * time.Second

// ahead is one generation's preparation: the goroutine's result, read
// after done is closed.
type ahead struct {
	gen       uint64
	off, size uint64
	done      chan struct{}
	stop      chan struct{}
	stopped   bool    // stop is closed (by the caller's goroutine)
	own       chunk   // this PE's chunk (size 0: none)
	peers     []chunk // per PE: the chunk mapped into its view here (size 0: none)
	err       error   // nil: own chunk and every node peer's mapped
	// when the goroutine started, and its time from then to done
	start time.Time
	took  time.Duration
}

// aheadMaxSteps bounds a preparation sized by the largest block: a
// program's one large allocation (a model's weights) should not make
// every PE hold as much again ahead of need.
const aheadMaxSteps = 4

// aheadSize is the size of the next prepared chunk: the step, or the
// largest block allocated so far where that is larger (a program
// that allocates blocks of that size finds the next one prepared), up to
// aheadMaxSteps steps; doubled burst times while allocations outrun the
// preparation (burstAfter), again up to aheadMaxSteps steps; at least one
// granule.
func (t *Transport) aheadSize() uint64 {
	v := &t.vmm
	top := t.aheadTop()
	n := max(v.step, min(v.largest, top))
	return roundUp(max(n, min(n<<v.burst, top), v.gran), v.gran)
}

// aheadTop is the largest preparation: aheadMaxSteps steps, at least one
// granule.
func (t *Transport) aheadTop() uint64 {
	return roundUp(max(aheadMaxSteps*t.vmm.step, t.vmm.gran), t.vmm.gran)
}

// burstAfter sets the next preparations' doubling from every PE's
// adoption record (symmetric, so every PE decides alike). A growth
// that had to wait for its preparation on any PE means the allocations
// outran it: the next preparation doubles (fewer growths, each one's
// fixed driver cost spread over more memory), up to aheadMaxSteps
// steps. Once every PE's preparation had finished at least as long
// before the growth as it took, half of it would have been ready too
// (the allocations come at half the pace or less), and it halves again.
func (t *Transport) burstAfter(all [][]byte) {
	v := &t.vmm
	if v.noBurst {
		return
	}
	le := binary.LittleEndian
	waited, idle := false, true
	for _, r := range all {
		took, slack := int64(le.Uint64(r[8:])), int64(le.Uint64(r[16:]))
		waited = waited || slack < 0
		idle = idle && slack >= took
	}
	switch {
	case waited && t.aheadSize() < t.aheadTop():
		v.burst++
	case idle && v.burst > 0:
		v.burst--
	}
}

// maybePrepare starts preparing the next growth when the block ending at
// need leaves less than one preparation (aheadSize) of the usable heap,
// none is in flight or waiting, preparation was not turned off, and the
// heap can still grow. Every PE makes the same decision (need, the
// largest block and the usable size are symmetric).
func (t *Transport) maybePrepare(need uint64) {
	v := &t.vmm
	if !v.on || v.noAhead || v.next != nil || t.size+v.gran > t.Limit() {
		return
	}
	prep := t.aheadSize()
	if need+prep <= t.size {
		return
	}
	v.gen++
	off, lim := v.mapped[t.me], min(v.reserved[t.me], t.Limit())
	size := min(prep, lim-min(off, lim))
	a := &ahead{gen: v.gen, off: off, size: size, done: make(chan struct{}), stop: make(chan struct{}),
		peers: make([]chunk, t.npes), start: time.Now()}
	mapped := append([]uint64(nil), v.mapped...)
	v.next = a
	go t.prepare(a, mapped)
}

// prepare is the preparing goroutine (see the top of the file). mapped
// is every PE's mapped length when it started. The chunk is published as
// soon as it is exported, and cleared while the peers map it.
func (t *Transport) prepare(a *ahead, mapped []uint64) {
	defer func() {
		a.took = time.Since(a.start)
		close(a.done)
	}()
	var c chunk
	var zs cuda.Stream // clearing the chunk, when a.size > 0
	seq := t.vmm.post.nextSeq()
	if a.size > 0 {
		var err error
		if c, err = t.newChunk(a.off, a.size); err == nil {
			a.own = c // dropAhead releases it from here on
			zs, err = t.startZero(t.own+cuda.DevicePtr(a.off), a.size)
		}
		if err != nil {
			a.err = errs.Wrap(err, t.me, "AllocDevice", "preparing %d bytes of the GPU heap at offset %d ahead of need", a.size, a.off)
			_ = t.sendChunk(chunk{fd: -1}, seq, a.gen, postFailed)
			return
		}
	}
	// the peers learn of the chunk as soon as it is exported, and map it
	// while it is cleared
	serr := t.sendChunk(c, seq, a.gen, postChunk)
	err := t.mapPeersAhead(a, mapped)
	if a.size > 0 {
		if zerr := finishZero(zs); zerr != nil && err == nil {
			err = errs.Wrap(zerr, t.me, "AllocDevice", "clearing the %d bytes of the GPU heap prepared at offset %d", a.size, a.off)
		}
	}
	if serr != nil {
		err = serr
	}
	a.err = err
}

// mapPeersAhead maps every node peer's chunk of a's generation into that
// peer's view here (a.peers), in the order the peers' messages arrive,
// and returns the first failure. mapped is every PE's mapped length when
// the preparation started. It ends early when a peer's process is gone or
// a.stop closes.
func (t *Transport) mapPeersAhead(a *ahead, mapped []uint64) error {
	v := &t.vmm
	var left []int
	for pe := range t.npes {
		if pe != t.me && v.reserved[pe] != 0 && v.nonces[pe] != 0 {
			left = append(left, pe)
		}
	}
	ours := func(m *postMsg) bool { return m.gen == a.gen }
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for len(left) > 0 {
		wake := v.post.changed() // before looking: no arrival is missed
		waiting := left[:0]
		for _, pe := range left {
			m, ok, err := v.post.take(pe, v.pids[pe], ours, 0)
			if err != nil {
				return err
			}
			if !ok {
				waiting = append(waiting, pe)
				continue
			}
			if err := t.mapPeerAhead(a, pe, mapped[pe], m); err != nil {
				return err
			}
		}
		if left = waiting; len(left) == 0 {
			break
		}
		select {
		case <-a.stop:
			return errs.New(errs.ErrTimeout, t.me, "AllocDevice", "PE %d had not prepared its next GPU heap chunk (generation %d) when this PE stopped waiting", left[0], a.gen)
		case <-wake:
		case <-tick.C:
			for _, pe := range left {
				if gone(v.pids[pe]) {
					return errs.New(errs.ErrTimeout, t.me, "AllocDevice", "PE %d (pid %d) exited before it prepared its next GPU heap chunk (generation %d)", pe, v.pids[pe], a.gen)
				}
			}
		}
	}
	return nil
}

// mapPeerAhead maps the chunk that PE pe's message m names into pe's view
// here (a.peers[pe]); it closes m's descriptor. mapped is pe's mapped
// length when the preparation started.
func (t *Transport) mapPeerAhead(a *ahead, pe int, mapped uint64, m postMsg) error {
	switch {
	case m.stat != postChunk:
		closeFD(m.fd)
		return errs.New(errs.ErrHeapExhausted, t.me, "AllocDevice", "PE %d could not prepare its next GPU heap chunk", pe)
	case m.size == 0:
		closeFD(m.fd)
		return nil
	case m.off != mapped:
		closeFD(m.fd)
		return errs.New(errs.ErrInvalidArgument, t.me, "AllocDevice", "PE %d prepared its GPU heap chunk at offset %d, but it maps %d bytes", pe, m.off, mapped)
	}
	c, err := t.importChunk(pe, m)
	if err != nil {
		return err
	}
	a.peers[pe] = c
	return nil
}

// startZero starts clearing [p, p+n) on a stream of its own (the legacy
// stream's memset would wait for the program's kernels on blocking
// streams) and returns the stream for finishZero.
func (t *Transport) startZero(p cuda.DevicePtr, n uint64) (cuda.Stream, error) {
	s, err := t.Ctx.StreamCreate(cuda.StreamNonBlocking)
	if err != nil {
		return s, err
	}
	if err := s.MemsetD8Async(p, 0, int(n)); err != nil {
		_ = s.Destroy()
		return cuda.Stream{}, err
	}
	return s, nil
}

// finishZero waits for startZero's clearing and destroys its stream.
func finishZero(s cuda.Stream) error {
	err := s.Synchronize()
	if derr := s.Destroy(); err == nil {
		err = derr
	}
	return err
}

// waitAhead waits for a's goroutine, at most aheadWait before stopping it.
func waitAhead(a *ahead) {
	select {
	case <-a.done:
	case <-time.After(aheadWait):
		stopAhead(a)
	}
}

// stopAhead stops a's goroutine and waits for it.
func stopAhead(a *ahead) {
	if !a.stopped {
		a.stopped = true
		close(a.stop)
	}
	<-a.done
}

// dropAhead stops a's goroutine and unmaps and releases what it prepared.
func (t *Transport) dropAhead(a *ahead) {
	stopAhead(a)
	for pe, c := range a.peers {
		if c.size > 0 {
			_ = t.dropChunk(t.peers[pe], c)
		}
	}
	if a.own.size > 0 {
		_ = t.dropChunk(t.own, a.own)
	}
}

// adoptAhead exchanges whether every PE's preparation of a succeeded and,
// if so, makes its chunks part of the mapped heap here (the usable size
// is set by the caller); if not, drops them and turns preparation off.
// Returns whether it adopted.
func (t *Transport) adoptAhead(a *ahead, exchange func([]byte) ([][]byte, error)) (bool, error) {
	// how long before this growth the preparation finished (negative:
	// the growth waits for it), and how long it took (burstAfter)
	slack := int64(-1)
	select {
	case <-a.done:
		slack = int64(time.Since(a.start) - a.took)
	default:
	}
	waitAhead(a)
	var rec [growLen]byte
	st := uint64(growAhead)
	if a.err != nil {
		st = growAheadFailed
	}
	le := binary.LittleEndian
	le.PutUint64(rec[0:], st)
	le.PutUint64(rec[8:], uint64(a.took))
	le.PutUint64(rec[16:], uint64(slack))
	end := t.vmm.mapped[t.me] // this PE's mapped length once adopted
	if a.own.size > 0 {
		end = a.own.off + a.own.size
	}
	le.PutUint64(rec[40:], end)
	all, err := exchange(rec[:])
	if err != nil {
		t.dropAhead(a)
		return false, err
	}
	for pe, r := range all {
		if len(r) != growLen || le.Uint64(r[0:]) != growAhead {
			if t.Warn != nil {
				why := a.err
				if why == nil {
					why = fmt.Errorf("PE %d could not", pe)
				}
				t.Warn(fmt.Sprintf("the GPU heap's next chunk was not prepared ahead (%v); it grows by need from now on", why))
			}
			t.dropAhead(a)
			t.vmm.noAhead = true
			return false, nil
		}
	}
	t.burstAfter(all)
	v := &t.vmm
	if a.own.size > 0 {
		v.chunks[t.me] = append(v.chunks[t.me], a.own)
		v.mapped[t.me] = a.own.off + a.own.size
	}
	// each peer's mapped length from its record (a node peer's also ends
	// the chunk mapped into its view here)
	for pe, r := range all {
		if pe != t.me {
			if c := a.peers[pe]; c.size > 0 {
				v.chunks[pe] = append(v.chunks[pe], c)
			}
			v.mapped[pe] = max(v.mapped[pe], le.Uint64(r[40:]))
		}
	}
	return true, nil
}
