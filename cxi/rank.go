package cxi

import "time"

// Rank is one PE's side of the triggered path, from shmem.CXI. Init
// opens it on every PE and Finalize closes it. Its calls run the kernels'
// protocol from one host thread at a time. Only goshmem implements Rank,
// so later versions may add methods.
type Rank interface {
	// Barrier is the GPU-triggered dissemination barrier run from the
	// host (goshmemx_cxi_barrier's protocol). Completion: on return every
	// rank has entered this instance. It returns an error matching
	// shmem.ErrTimeout when the monitor stopped or Config.Timeout passed;
	// it never hangs.
	Barrier() error
	// AMSend sends an active message of at most 5 arguments to pe
	// (goshmemx_cxi_am_send's protocol). It waits for a credit when both
	// mailbox slots at pe are full (back-pressure). It needs Config.AM.
	AMSend(pe int, handler, flags uint32, args ...uint64) error
	// AMPoll takes the next message from pe if it has arrived. Run its
	// Handler yourself, or use a table with Dispatch.
	AMPoll(pe int) (Msg, bool)
	// Dispatch polls every source once and runs handlers[m.Handler] for
	// each message that arrived. It returns how many ran. An unknown
	// handler id is an error naming it (the message is consumed).
	Dispatch(handlers map[uint32]Handler) (int, error)
	// Stats returns a snapshot of the monitor's counters.
	Stats() Stats
	// ResetStats zeroes the monitor's counters and restarts its peaks.
	// Benchmarks call it after their warm-up.
	ResetStats()
	// Err is the first asynchronous error the monitor hit (nil: none).
	Err() error
	// Engine names the engine and provider ("fabric:sockets").
	Engine() string
	// Emulated is the label every report should carry: it says what is
	// emulated without a Slingshot NIC (the GPU's counter write, or the
	// deferred work itself under the software engine).
	Emulated() string
	// PE is this rank.
	PE() int
	// NPEs is the number of ranks.
	NPEs() int
}

// Msg is an active message: header {handler id, source PE, flags} and
// arguments.
type Msg struct {
	Handler uint32
	SrcPE   int
	Flags   uint32
	Args    []uint64
}

// Handler runs an active message on the host.
type Handler func(m Msg)

// GapBounds are the upper bounds of Stats.Gaps' buckets (the last one is
// open): monitor loop gaps up to 10 us, 100 us, 1 ms, 10 ms, longer.
var GapBounds = [...]time.Duration{10 * time.Microsecond, 100 * time.Microsecond, time.Millisecond, 10 * time.Millisecond}

// Stats are the monitor's counters (a consistent-enough snapshot).
type Stats struct {
	Engine          string
	Deferred        bool   // records run as libfabric deferred work
	Armed           int    // deferred records armed now
	MaxArmed        int    // most records ever armed at once
	BarrierMaxArmed int    // most barrier records armed at once (<= 2R)
	Arms            uint64 // instances armed
	Retired         uint64 // instances retired by bookkeeping
	Forwarded       uint64 // doorbells forwarded with fi_cntr_add (emulation of the CXI MMIO write)
	MMIOTriggers    uint64 // doorbells whose NIC counter the GPU advanced itself (real CXI MMIO)
	Fallbacks       uint64 // instances completed by host-issued writes
	FallbackWrites  uint64
	BudgetDeferrals uint64 // re-arms postponed because the DWQ budget was full
	Overruns        uint64 // triggers beyond what was armed (clamped: back-pressure)
	Credits         uint64 // active-message credits returned
	ReadyStalls     uint64 // triggers that found their slot not yet armed
	// MaxLoopGap is the longest time between the starts of two
	// consecutive passes of the monitor loop (monitor clock): the longest
	// a trigger could wait for its forward, retirement or re-arm (the
	// monitor's stall). Of that pass, MaxGapWork was spent in its work
	// (provider progress, forwards, retirements, re-arms, credits) and the
	// rest in its idle action MaxGapAction ("spin", "yield", "sleep") and
	// off the CPU.
	MaxLoopGap   time.Duration
	MaxGapWork   time.Duration
	MaxGapAction string
	// Gaps counts loop gaps by GapBounds (len(GapBounds)+1 buckets);
	// Passes is the number of loop passes, Yields and Sleeps the idle
	// passes that yielded the CPU or slept.
	Gaps                   [len(GapBounds) + 1]uint64
	Passes, Yields, Sleeps uint64
	// GCCycles is the Go GC cycles completed and GCMaxPause the longest
	// stop-the-world GC pause (histogram bucket bound) since ResetStats;
	// MonitorVolCtxSw and MonitorInvCtxSw the monitor thread's voluntary
	// (it blocked: a provider lock, the Go runtime, its idle sleep) and
	// involuntary (the OS gave its CPU away) context switches (Linux
	// /proc; -1 where unavailable).
	GCCycles        uint64
	GCMaxPause      time.Duration
	MonitorVolCtxSw int64
	MonitorInvCtxSw int64
	// ArmTime is the monitor's time spent re-arming (sequence words, the
	// engine call that queues the records, readiness epoch, bookkeeping)
	// over ArmOps records, of which ArmProviderTime inside the provider's
	// calls (C clock around fi_cntr_set/fi_control only): ArmTime/ArmOps
	// is the re-arm cost per operation, (ArmTime-ArmProviderTime)/ArmOps
	// the monitor's own overhead. Every 8th arm is timed: ArmOps counts
	// the records of the timed arms only.
	ArmTime         time.Duration
	ArmProviderTime time.Duration
	ArmOps          uint64
	// ArmMedian and ArmProviderMedian are the medians per record of the
	// timed arms (within ~9%), robust to preemption on a loaded machine.
	ArmMedian, ArmProviderMedian time.Duration
	// FwdToRetire is the time, summed over FwdToRetireN barrier
	// instances, from the monitor pass that forwarded an instance's last
	// trigger to the pass that retired it: the provider running the
	// triggered write and its completion coming back (its write round
	// trip) plus up to a pass of monitor latency at each end.
	FwdToRetire  time.Duration
	FwdToRetireN uint64
	// CounterResets is the arms that reset the slot's counters
	// (fi_cntr_set x2): only when raised thresholds would pass
	// Budget.CounterMax (or after an overrun); other arms set no counter.
	CounterResets uint64
}
