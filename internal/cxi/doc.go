// Package cxi is the machinery of goshmem's Slingshot triggered path
// (docs/cxi.md); the types a program uses (Config, Rank, Stats) are
// defined in the public package github.com/goshmem/goshmem/cxi. GPU
// kernels release NIC work the host pre-staged as libfabric
// deferred work, and a host monitor keeps that bounded work flowing.
//
// A deferred-work record is (trigger counter, threshold, operation,
// completion counter), queued with fi_control(FI_QUEUE_WORK)
// (Ref: fi_trigger(3)). Per rank the monitor
//   - arms each coordination instance one ahead in two slots (instance k in
//     slot k mod 2: double-buffered stage-ahead) with one engine call over
//     the slot's prebuilt records (fabric.WorkSet: FI_QUEUE_WORK per
//     record); thresholds rise by an instance's trigger count each time,
//     and the slot's two counters are reset (fi_cntr_set) only when they
//     would pass Budget.CounterMax; then it publishes the slot's
//     readiness epoch (armed = k+1) in GPU-visible memory;
//   - forwards the GPU's trigger: the kernel release-stores a doorbell word
//     in host-pinned memory and the monitor adds to the slot's trigger
//     counter with fi_cntr_add. This forward is EMULATION of the CXI
//     counter MMIO write (fi_cxi_cntr_add), which needs a Slingshot NIC; on
//     cxi the slot's MMIO address is published and the kernel writes it;
//   - drives progress and retires a slot when its completion counter shows
//     every record ran: by its own bookkeeping, since sockets has no
//     FI_FLUSH_WORK/FI_CANCEL_WORK (and cxi's flush blocks ~1 s);
//   - when a slot cannot be re-armed in time (its previous instance not yet
//     retired, re-arm lag, or the DWQ budget), completes the instance the
//     GPU began with host-issued writes of the same words to the same
//     flags (the fallback), never touching the slot's counters;
//   - never lets a trigger run past what is armed (back-pressure), and on
//     Stop sets a GPU-visible flag so every waiter returns ErrTimeout.
//
// Budgets default to Slingshot 11's (256 DWQ entries, counter maximum 2047,
// two counters per triggered operation; Budget); a dissemination barrier of
// R = ceil(log2 P) rounds keeps at most 2R records armed per rank.
//
// Engines: "fabric" runs the records as real libfabric deferred work (the
// cxi provider on Slingshot; sockets here, the only provider of libfabric
// 1.17 that implements FI_QUEUE_WORK); "software" keeps the counters and
// the queue in the monitor and posts ordinary RMA writes when a threshold
// is reached (any provider), selected only explicitly
// (GOSHMEM_CXI_ENGINE=software). A provider without deferred work is
// otherwise an error that says so.
//
// The memory the GPU and the monitor share is one versioned, size-asserted
// C struct, include/goshmem/cxi.h (goshmemi_cxi_state_t), mirrored in
// layout.go. The kernel API is goshmemx_cxi_barrier / _am_send / _am_poll;
// the Go API (Rank.Barrier, Rank.AMSend, Rank.AMPoll) runs the same
// protocol from host threads.
package cxi
