// Package spin is goshmem's one waiting policy: spin on a memory word, then
// back off by yielding the OS thread, then by sleeping, so that 8 PEs on 2
// cores keep making progress while 2 PEs on 2 cores pay only the cache-line
// transfer. It also enforces the GOSHMEM_TIMEOUT watchdog.
package spin

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// Policy is how a PE waits. The zero value spins forever without a deadline.
type Policy struct {
	// Spins is the number of busy polls before the first yield. Large when
	// every PE of the node has its own core, small when oversubscribed.
	Spins int
	// Yields is the number of sched_yield rounds before sleeping starts.
	Yields int
	// MaxSleep caps the sleep between polls once sleeping.
	MaxSleep time.Duration
	// Timeout, when > 0, ends a wait with ok=false after this long.
	Timeout time.Duration
	// Halt, when non-nil, ends a wait with its error once Stop is called.
	// It is read on every look: one atomic load.
	Halt *Halt
	// Ctx, when non-nil, ends a wait with Ctx.Err() once Ctx is done. Its
	// Done channel is polled without blocking every ctxLooks looks of the
	// spin phase and on every look of the yield and sleep phases.
	Ctx context.Context
}

// ctxLooks is how many spin-phase looks pass between two polls of a
// wait's context: a non-blocking receive costs a few loads, a look of
// shared memory about one, so the spin phase keeps its pace.
const ctxLooks = 64

// Halt ends every wait whose policy points to it: the runtime stops a
// PE's blocked calls with it (Finalize, or the PE's context done). The
// zero value is running.
type Halt struct {
	err atomic.Pointer[error]
}

// Stop makes every wait on h end with err, now and until Clear. The
// first error stays while h is stopped.
func (h *Halt) Stop(err error) { h.err.CompareAndSwap(nil, &err) }

// Clear lets waits on h run again.
func (h *Halt) Clear() { h.err.Store(nil) }

// Stopped reports whether h is stopped (Err is not nil), in one load.
func (h *Halt) Stopped() bool { return h.err.Load() != nil }

// Err is the error Stop set, or nil while h runs.
func (h *Halt) Err() error {
	if p := h.err.Load(); p != nil {
		return *p
	}
	return nil
}

// stopped is the error that ends a wait of p now (Halt's, then Ctx's), or
// nil. done is Ctx.Done() (nil without a context).
func (p *Policy) stopped(done <-chan struct{}) error {
	if p.Halt != nil {
		if e := p.Halt.err.Load(); e != nil {
			return *e
		}
	}
	if done != nil {
		select {
		case <-done:
			return p.Ctx.Err()
		default:
		}
	}
	return nil
}

// For returns the policy for a node with pesOnNode PEs and cpus cores.
func For(pesOnNode, cpus int, timeout time.Duration) Policy {
	p := Policy{Spins: 1 << 16, Yields: 1 << 12, MaxSleep: 50 * time.Microsecond, Timeout: timeout}
	if pesOnNode > cpus {
		// Oversubscribed: a spinning PE steals the core of the PE it waits for.
		p.Spins = 64
		p.Yields = 256
	}
	return p
}

// Yield gives up the OS thread (sched_yield), so another process on this
// core runs; runtime.Gosched would only switch goroutines.
//
// It is a raw syscall, without the Go runtime's syscall entry and exit
// bookkeeping. On an oversubscribed core a yield returns only after the
// other PEs there have run, and around such syscalls the runtime keeps its
// monitor thread (sysmon) waking at its fastest rate and wakes a second
// thread of the process; those extra thread wake-ups compete with the PEs
// for the cores, on every yield of every PE. sched_yield never blocks, so
// holding the P through it only delays this process's other goroutines
// (and a GC stop) by the time the yield gives to other processes, as a
// preemption would.
func Yield() {
	unix.RawSyscallNoError(unix.SYS_SCHED_YIELD, 0, 0, 0)
}

// Until calls done until it returns true. It returns false when the
// policy's timeout expired first. check, when non-nil, is called on the slow
// path (about every millisecond once sleeping) and may end the wait with an
// error (a dead peer, an asynchronous failure). A stopped Halt or a done
// Ctx ends the wait with ok false and their error (done is looked at
// first: a wait whose condition holds succeeds).
func (p Policy) Until(done func() bool, check func() error) (ok bool, err error) {
	return p.until(time.Now, done, check)
}

// until is Until reading the time from now (tests pass a fake clock, so
// they check which look at the clock ends a wait, not how long it took).
func (p Policy) until(now func() time.Time, done func() bool, check func() error) (ok bool, err error) {
	var start time.Time
	if p.Timeout > 0 {
		// The deadline holds in the spin phase too: a done that is not a
		// plain load (an ofi poll and a yield per look) can make 65536
		// spins last a minute.
		start = now()
	}
	var ctxDone <-chan struct{}
	if p.Ctx != nil {
		ctxDone = p.Ctx.Done()
	}
	for i := 0; i < p.Spins; i++ {
		if done() {
			return true, nil
		}
		if p.Halt != nil && p.Halt.err.Load() != nil {
			return false, p.Halt.Err()
		}
		if ctxDone != nil && i&(ctxLooks-1) == 0 {
			if err := p.stopped(ctxDone); err != nil {
				return false, err
			}
		}
		if p.Timeout > 0 && i&255 == 255 && now().Sub(start) > p.Timeout {
			return done(), nil
		}
	}
	if start.IsZero() && check != nil {
		start = now()
	}
	sleep := time.Microsecond
	lastCheck := start
	for n := 0; ; n++ {
		if done() {
			return true, nil
		}
		if err := p.stopped(ctxDone); err != nil {
			return false, err
		}
		if n < p.Yields {
			Yield()
		} else {
			time.Sleep(sleep)
			if sleep < p.MaxSleep {
				sleep *= 2
			}
		}
		if n&63 == 0 || n >= p.Yields {
			t := now()
			if p.Timeout > 0 && t.Sub(start) > p.Timeout {
				return done(), nil
			}
			if check != nil && t.Sub(lastCheck) > time.Millisecond {
				lastCheck = t
				if err := check(); err != nil {
					return false, err
				}
			}
		}
	}
}
