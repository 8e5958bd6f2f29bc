package cxi

import "time"

// Engine names for Config.Engine (GOSHMEM_CXI_ENGINE).
const (
	// EngineAuto runs the fabric engine where the provider has
	// deferred work, else fails saying so.
	EngineAuto = "auto"
	// EngineFabric runs the records as libfabric deferred work
	// (FI_QUEUE_WORK): the cxi provider on Slingshot, sockets elsewhere.
	EngineFabric = "fabric"
	// EngineSoftware keeps the counters and the queue in the host monitor
	// and posts ordinary RMA writes (any provider). Only chosen explicitly.
	EngineSoftware = "software"
)

// Config configures one rank of the triggered path.
type Config struct {
	// Engine is EngineAuto, EngineFabric or EngineSoftware (empty:
	// GOSHMEM_CXI_ENGINE, else auto).
	Engine string
	// Provider is the libfabric provider ("" or auto: cxi where present,
	// else sockets; software: tcp;ofi_rxm).
	Provider string
	// Budget bounds the armed NIC state (zero value: Slingshot 11's
	// limits).
	Budget Budget
	// AM adds one active-message channel per rank.
	AM bool
	// Timeout is the waiters' deadline per wait (0: none). A stopped
	// monitor ends every wait with ErrTimeout regardless.
	Timeout time.Duration
	// ReadySpins is how many polls a trigger waits for its slot's
	// readiness epoch before it leaves the instance to the host fallback
	// (0: 4096, as GOSHMEMX_CXI_READY_SPINS).
	ReadySpins int
	// RearmLag delays every re-arm after a retirement (fault injection:
	// monitor lag; the fallback then completes the instances).
	RearmLag time.Duration
	// Spin keeps the monitor polling without ever yielding or sleeping
	// (benchmarks on a machine with a core to spare). Otherwise an idle
	// monitor spins 256 passes, then yields its CPU (sched_yield) each
	// pass, and after 2 ms without work sleeps 50 us per pass.
	Spin bool
}

// Budget is the NIC state the triggered path may use per rank.
// HPE Slingshot 11's limits: 256 deferred-work-queue entries, trigger
// counters bounded at 2047 (shared by the ranks of a NIC), and one
// triggered operation consumes two counters.
type Budget struct {
	DWQEntries    int    // deferred-work records armed at once
	CounterMax    uint64 // largest value a trigger counter may reach
	CountersPerOp int    // counters one triggered operation consumes
}
