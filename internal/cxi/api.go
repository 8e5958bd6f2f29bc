package cxi

import (
	"runtime"
	"time"

	"github.com/goshmem/goshmem/internal/errs"
)

// The Go API: the protocol of include/goshmem/cxi.h run by a host thread
// (one caller at a time per rank), against the same region and monitor.

// ready polls a slot's readiness epoch up to spins times.
func (r *Rank) ready(so uintptr, inst uint64, spins int) bool {
	for i := 0; i <= spins; i++ {
		if word(r.base, so+slotArmed).Load() == inst+1 {
			return true
		}
		runtime.Gosched()
	}
	return false
}

func (r *Rank) ring(so uintptr, inst, triggers uint64) {
	word(r.base, so+slotDoorbel).Store((inst+1)<<16 | triggers)
}

// waitGE waits until the word at off is >= v; ErrTimeout on a stopped
// monitor or after Config.Timeout.
func (r *Rank) waitGE(off uintptr, v uint64, what string) error {
	var deadline time.Time
	for i := 0; ; i++ {
		if word(r.base, off).Load() >= v {
			return nil
		}
		if i&255 == 255 {
			if word(r.base, offStop).Load() != 0 {
				return errs.Hint(errs.ErrTimeout, "the CXI monitor was stopped (Rank.Stop/Close) while a waiter waited", r.pe,
					"cxi: "+what, "monitor stopped while waiting for %d", v)
			}
			if r.cfg.Timeout > 0 {
				now := time.Now()
				if deadline.IsZero() {
					deadline = now.Add(r.cfg.Timeout)
				} else if now.After(deadline) {
					return errs.Hint(errs.ErrTimeout, "a peer did not arrive, or its monitor is stalled; raise Config.Timeout", r.pe,
						"cxi: "+what, "value %d < %d after %v", word(r.base, off).Load(), v, r.cfg.Timeout)
				}
			}
		}
		runtime.Gosched()
	}
}

// Barrier is the GPU-triggered dissemination barrier run from the host
// (goshmemx_cxi_barrier's protocol). Completion: on return every rank has
// entered this instance. ErrTimeout when the monitor stopped or the
// deadline passed: never hangs.
func (r *Rank) Barrier() error {
	if !r.started {
		return errs.New(errs.ErrNotInitialized, r.pe, "cxi: Barrier", "Start was not called")
	}
	k := word(r.base, offBarInst).Load()
	s := int(k & 1)
	so := barSlotOff(s)
	if !r.ready(so, k, 0) {
		word(r.base, offReadyStal).Add(1)
		r.ready(so, k, r.cfg.ReadySpins)
	}
	for rd := 0; rd < r.rounds; rd++ {
		r.ring(so, k, uint64(rd+1))
		if err := r.waitGE(sigOff(s, rd), k+1, "Barrier"); err != nil {
			return err
		}
	}
	word(r.base, offBarInst).Store(k + 1)
	return nil
}

// AMSend sends an active message to pe (goshmemx_cxi_am_send's protocol):
// payload, then sequence, released by one trigger; waits for a credit when
// both mailbox slots at pe are full (back-pressure).
func (r *Rank) AMSend(pe int, handler, flags uint32, args ...uint64) error {
	if !r.cfg.AM {
		return errs.Hint(errs.ErrNotSupported, "set Config.AM", r.pe, "cxi: AMSend", "active messages are not configured")
	}
	if pe < 0 || pe >= r.n {
		return errs.New(errs.ErrPEOutOfRange, r.pe, "cxi: AMSend", "pe %d not in [0, %d)", pe, r.n)
	}
	if len(args) > AMArgs {
		return errs.New(errs.ErrInvalidArgument, r.pe, "cxi: AMSend", "%d arguments > %d", len(args), AMArgs)
	}
	po := amPeerOff(pe)
	n := word(r.base, po+amSent).Load()
	s := int(n & 1)
	if n >= Slots {
		if err := r.waitGE(po+amCredit, n-1, "AMSend credit"); err != nil {
			return err
		}
	}
	so := amSlotOff(pe, s)
	r.ready(so, n, r.cfg.ReadySpins)
	mo := amSendOff(pe, s)
	word32(r.base, mo+msgHandler).Store(handler)
	word32(r.base, mo+msgSrcPE).Store(uint32(r.pe))
	word32(r.base, mo+msgFlags).Store(flags)
	word32(r.base, mo+msgNArgs).Store(uint32(len(args)))
	for i := 0; i < AMArgs; i++ {
		v := uint64(0)
		if i < len(args) {
			v = args[i]
		}
		word(r.base, mo+msgArgs+uintptr(8*i)).Store(v)
	}
	r.ring(so, n, 1)
	word(r.base, po+amSent).Store(n + 1)
	return nil
}

// AMPoll takes the next message from pe if it has arrived (the receiver
// side; dispatch its Handler yourself, or use a table with Dispatch).
func (r *Rank) AMPoll(pe int) (Msg, bool) {
	if !r.cfg.AM || pe < 0 || pe >= r.n {
		return Msg{}, false
	}
	po := amPeerOff(pe)
	n := word(r.base, po+amConsumed).Load()
	mo := amMboxOff(pe, int(n&1))
	if word(r.base, mo+msgSeq).Load() != n+1 {
		return Msg{}, false
	}
	m := Msg{
		Handler: word32(r.base, mo+msgHandler).Load(),
		SrcPE:   int(int32(word32(r.base, mo+msgSrcPE).Load())),
		Flags:   word32(r.base, mo+msgFlags).Load(),
	}
	na := min(int(word32(r.base, mo+msgNArgs).Load()), AMArgs)
	m.Args = make([]uint64, na)
	for i := range m.Args {
		m.Args[i] = word(r.base, mo+msgArgs+uintptr(8*i)).Load()
	}
	word(r.base, po+amConsumed).Store(n + 1)
	return m, true
}

// Dispatch polls every source once and runs handlers[m.Handler] for each
// message that arrived; it returns how many ran. An unknown handler id is
// an error naming it (the message is consumed).
func (r *Rank) Dispatch(handlers map[uint32]Handler) (int, error) {
	ran := 0
	for pe := 0; pe < r.n; pe++ {
		m, ok := r.AMPoll(pe)
		if !ok {
			continue
		}
		h, ok := handlers[m.Handler]
		if !ok {
			return ran, errs.New(errs.ErrInvalidArgument, r.pe, "cxi: Dispatch", "no handler %d (message from PE %d)", m.Handler, m.SrcPE)
		}
		h(m)
		ran++
	}
	return ran, nil
}
