package cxi

import (
	"time"
	"unsafe"

	"github.com/goshmem/goshmem/internal/cgo/fabric"
	"github.com/goshmem/goshmem/internal/errs"
)

// Monitor-owned scratch words (goshmemi_cxi_state_t.scratch_): the source
// of host-issued fallback and credit writes, so they never touch a source
// word that armed deferred work may still read.
const (
	offScratchFallback = offScratch
	offScratchCredit   = offScratch + 8
)

// op is one deferred write of an instance.
type op struct {
	src     uintptr // local offset of the source bytes
	n       uint64
	peer    int
	dst     uintptr // offset in the peer's region
	trigger int     // the doorbell trigger count that releases it (1-based)
	thr     uint64  // threshold on the slot's trigger counter
	chain   bool    // its completion advances the trigger counter (releases the next op)
	seq     bool    // the source word must hold instance+1
}

// channel is a sequence of instances double-buffered over two slots.
type channel struct {
	name     string
	barrier  bool
	slotOff  [Slots]uintptr // goshmemi_cxi_slot_t of each slot
	ops      func(s int) []op
	triggers uint64 // doorbell triggers per instance
	expect   uint64 // completion-counter count of a finished instance
	span     uint64 // trigger-counter count of a finished instance (triggers + chain ops)
	slots    [Slots]slot
}

type slot struct {
	trig, comp counter
	set        recordSet // the slot's records, built once, re-armed per instance
	// base and cbase are what the trigger and completion counters read
	// before the instance armed here (or next) began: its records run at
	// base + op.thr, and it ran when comp reaches cbase + expect. They rise
	// by span and expect per retired instance, so a re-arm sets no
	// counter; both counters are reset (fi_cntr_set) only when the
	// thresholds would pass Budget.CounterMax, or after an overrun.
	base, cbase uint64
	dirty       bool  // the counters may be off the bookkeeping: reset at the next arm
	broken      bool  // an arm failed (records may sit queued): never armed again, the fallback serves it
	armed       int64 // instance armed here, -1: none
	fwd         uint64
	fwdAt       time.Time // the monitor pass that forwarded the instance's last trigger
	entries     int
	next        uint64 // next instance this slot serves
	fb          int64  // instance being completed by the fallback, -1: none
	fbDone      uint64 // triggers the fallback handled
	retiredAt   time.Time
	deferred    bool   // the current next instance was postponed by the budget
	overrun     uint64 // doorbell word last reported as an overrun (reported once, not on every pass)
}

func (r *Rank) buildChannels() {
	if r.rounds > 0 {
		c := &channel{name: "barrier", barrier: true, triggers: uint64(r.rounds), expect: uint64(r.rounds), span: uint64(r.rounds)}
		var ops [Slots][]op
		for s := 0; s < Slots; s++ {
			c.slotOff[s] = barSlotOff(s)
			for k := 0; k < r.rounds; k++ {
				ops[s] = append(ops[s], op{src: srcOff(s, k), n: 8, peer: (r.pe + 1<<k) % r.n, dst: sigOff(s, k),
					trigger: k + 1, thr: uint64(k + 1), seq: true})
			}
		}
		c.ops = func(s int) []op { return ops[s] }
		r.chans = append(r.chans, c)
	}
	if r.cfg.AM {
		for p := 0; p < r.n; p++ {
			c := &channel{name: "am", triggers: 1, expect: 1, span: 2}
			var ops [Slots][]op
			for s := 0; s < Slots; s++ {
				c.slotOff[s] = amSlotOff(p, s)
				// Payload (header + arguments) first; its completion adds
				// one to the trigger counter and so releases the sequence
				// write (threshold 2): one GPU trigger releases both, in
				// order.
				ops[s] = []op{
					{src: amSendOff(p, s) + 8, n: msgSize - 8, peer: p, dst: amMboxOff(r.pe, s) + 8, trigger: 1, thr: 1, chain: true},
					{src: amSeqSrcOff(p, s), n: 8, peer: p, dst: amMboxOff(r.pe, s), trigger: 1, thr: 2, seq: true},
				}
			}
			c.ops = func(s int) []op { return ops[s] }
			r.chans = append(r.chans, c)
		}
	}
	for _, c := range r.chans {
		for s := range c.slots {
			c.slots[s] = slot{armed: -1, fb: -1, next: uint64(s)}
		}
	}
}

// step advances one slot: forward its doorbell, retire, fall back, re-arm.
// It reports whether anything changed.
func (r *Rank) step(c *channel, s int, now time.Time) (bool, error) {
	sl := &c.slots[s]
	so := c.slotOff[s]
	if sl.trig == nil {
		var err error
		if sl.trig, err = r.eng.newCounter(); err != nil {
			return false, err
		}
		if sl.comp, err = r.eng.newCounter(); err != nil {
			return false, err
		}
		if sl.set, err = r.eng.newSet(sl.trig, sl.comp, c.ops(s)); err != nil {
			return false, errs.Wrap(err, r.pe, "cxi: arm", "build the %s slot %d records", c.name, s)
		}
	}
	did := false
	db := word(r.base, so+slotDoorbel).Load()
	var dbInst, dbTrig uint64
	dbMMIOFlag := false
	hasDB := db != 0
	if hasDB {
		dbInst, dbTrig, dbMMIOFlag = db>>16-1, db&0x7fff, db&dbMMIO != 0
		if dbTrig > c.triggers {
			// More triggers than armed records: clamp (back-pressure),
			// never advance a counter past what is armed. Reported once
			// per doorbell value: the word stays until the next instance.
			if sl.overrun != db {
				sl.overrun = db
				sl.dirty = true // with MMIO triggers the GPU advanced the counter itself
				r.st.Overruns++
				r.fail(errs.New(errs.ErrInvalidArgument, r.pe, "cxi: trigger",
					"%s slot %d: %d triggers for an instance of %d records", c.name, s, dbTrig, c.triggers))
			}
			dbTrig = c.triggers
		}
	}
	// 1. forward the GPU's trigger (emulation of the CXI MMIO write).
	if hasDB && sl.armed == int64(dbInst) && dbTrig > sl.fwd {
		if dbMMIOFlag {
			r.st.MMIOTriggers++
		} else {
			if err := sl.trig.Add(dbTrig - sl.fwd); err != nil {
				return did, err
			}
			r.st.Forwarded++
		}
		sl.fwd = dbTrig
		if sl.fwd == c.triggers {
			sl.fwdAt = now
		}
		did = true
	}
	// 2. the GPU began an instance this slot does not hold armed: fallback.
	if hasDB && sl.armed != int64(dbInst) && dbInst == sl.next && sl.fb < 0 {
		sl.fb, sl.fbDone = int64(dbInst), 0
		r.st.Fallbacks++
		did = true
	}
	// 3. retire the armed instance once every record ran (bookkeeping:
	// the completion counter; no FI_FLUSH_WORK needed).
	if sl.armed >= 0 && sl.fwd == c.triggers && sl.comp.Read() >= sl.cbase+c.expect {
		if e := sl.comp.ReadErr(); e != 0 {
			return did, errs.New(nil, r.pe, "cxi: retire", "%s slot %d instance %d: %d deferred writes failed", c.name, s, sl.armed, e)
		}
		// Every record ran: the trigger counter is at base + span (the
		// forwards were clamped to the armed triggers; chain completions
		// preceded the last record), the completion counter at cbase + expect.
		sl.base += c.span
		sl.cbase += c.expect
		if c.barrier && !sl.fwdAt.IsZero() {
			r.st.FwdToRetire += now.Sub(sl.fwdAt)
			r.st.FwdToRetireN++
			sl.fwdAt = time.Time{}
		}
		r.armed -= sl.entries
		if c.barrier {
			r.barArmed -= sl.entries
		}
		sl.entries = 0
		sl.next = uint64(sl.armed) + Slots
		sl.armed, sl.fwd, sl.retiredAt = -1, 0, now
		r.st.Retired++
		did = true
	}
	// 4. fallback: once the slot's previous instance is retired (so no
	// armed write can land after ours), issue the released ops by host.
	if sl.fb >= 0 && sl.armed < 0 && hasDB && dbInst == uint64(sl.fb) && dbTrig > sl.fbDone {
		for _, o := range c.ops(s) {
			if uint64(o.trigger) <= sl.fbDone || uint64(o.trigger) > dbTrig {
				continue
			}
			src := o.src
			if o.seq {
				word(r.base, offScratchFallback).Store(uint64(sl.fb) + 1)
				src = offScratchFallback
			}
			if err := r.eng.hostWrite(src, o.n, o.peer, o.dst); err != nil {
				return did, err
			}
			r.st.FallbackWrites++
		}
		sl.fbDone = dbTrig
		if sl.fbDone == c.triggers {
			sl.next = uint64(sl.fb) + Slots
			sl.fb, sl.retiredAt = -1, now
		}
		did = true
	}
	// 5. re-arm the next instance (stage-ahead), within the budget.
	if sl.armed < 0 && sl.fb < 0 && !sl.broken && now.Sub(sl.retiredAt) >= r.cfg.RearmLag && !(hasDB && dbInst >= sl.next) {
		ops := c.ops(s)
		if r.armed+len(ops) > r.cfg.Budget.DWQEntries {
			if !sl.deferred {
				sl.deferred = true
				r.st.BudgetDeferrals++
			}
			return did, nil
		}
		sl.deferred = false
		if err := r.arm(c, s, sl, ops); err != nil {
			return did, err
		}
		did = true
	}
	return did, nil
}

// arm re-arms the slot's records for its next instance (one call into the
// engine: the records are prebuilt, and the counters are not reset unless
// the raised thresholds would pass Budget.CounterMax), writes the
// sequence sources and publishes the readiness epoch (release: the GPU
// that sees armed == instance+1 may trigger). Every 8th arm is timed (the
// monitor's clock around all of it, and the engine's around the provider
// calls): Stats.ArmTime/ArmOps and ArmProviderTime/ArmOps.
func (r *Rank) arm(c *channel, s int, sl *slot, ops []op) error {
	timed := r.st.Arms&7 == 0
	var t0 time.Time
	if timed {
		t0 = time.Now()
	}
	inst := sl.next
	reset := sl.dirty || sl.base+c.span > r.cfg.Budget.CounterMax
	if reset {
		sl.base, sl.cbase, sl.dirty = 0, 0, false
		if c.span > r.cfg.Budget.CounterMax {
			return errs.New(errs.ErrInvalidArgument, r.pe, "cxi: arm", "%s: an instance needs a trigger count of %d > CounterMax %d",
				c.name, c.span, r.cfg.Budget.CounterMax)
		}
	}
	for _, o := range ops {
		if o.seq {
			word(r.base, o.src).Store(inst + 1)
		}
	}
	var prov *time.Duration
	prov0 := r.st.ArmProviderTime
	if timed {
		prov = &r.st.ArmProviderTime
	}
	if err := sl.set.arm(sl.base, reset, prov); err != nil {
		// Some records may sit queued at thresholds the counter has not
		// reached: leave the counters alone (a reset could release them
		// later) and serve the slot's instances by the fallback from now on.
		sl.broken = true
		return errs.Wrap(err, r.pe, "cxi: arm", "%s slot %d instance %d", c.name, s, inst)
	}
	sl.entries = len(ops)
	r.armed += len(ops)
	if c.barrier {
		r.barArmed += len(ops)
	}
	sl.armed, sl.fwd = int64(inst), 0
	word(r.base, c.slotOff[s]+slotArmed).Store(inst + 1)
	st := &r.st
	st.Arms++
	if reset {
		st.CounterResets++
	}
	st.MaxArmed = max(st.MaxArmed, r.armed)
	st.BarrierMaxArmed = max(st.BarrierMaxArmed, r.barArmed)
	if timed {
		d, k := time.Since(t0), time.Duration(len(ops))
		st.ArmOps += uint64(len(ops))
		st.ArmTime += d
		r.armHist.add(int64(d / k))
		r.provHist.add(int64((st.ArmProviderTime - prov0) / k))
	}
	return nil
}

// credits returns active-message credits: each rank's `consumed` count of
// messages from p is written to p's `credit` word for us (host-issued).
// One credit write is in flight at a time (its source is the one scratch
// word) and the monitor does not wait for it: a delivery wait here would
// stall every other slot (a sockets delivery can take many milliseconds;
// docs/cxi.md).
func (r *Rank) credits() bool {
	if r.creditBusy {
		return false
	}
	for i := 0; i < r.n; i++ {
		p := (r.creditNext + i) % r.n
		cons := word(r.base, amPeerOff(p)+amConsumed).Load()
		sent := word(r.base, amPeerOff(p)+amCredSent)
		if cons <= sent.Load() {
			continue
		}
		word(r.base, offScratchCredit).Store(cons)
		r.creditBusy = true
		r.creditNext = p + 1
		err := r.link.postWrite(offScratchCredit, 8, p, amPeerOff(r.pe)+amCredit, fabric.FlagDelivery, func(err error) {
			r.creditBusy = false
			if err != nil {
				r.fail(errs.Wrap(err, r.pe, "cxi: credit write", "to rank %d", p))
				return
			}
			sent.Store(cons)
			r.st.Credits++
		})
		if err != nil {
			r.creditBusy = false
			r.fail(err)
		}
		return true
	}
	return false
}

var _ = unsafe.Pointer(nil)
