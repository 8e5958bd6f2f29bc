// Package shmem is goshmem's public host API: an OpenSHMEM-style PGAS
// library for Go SPMD programs launched with mpirun, without a launcher
// (GOSHMEM_RANK/GOSHMEM_NPES or torchrun's and Slurm's variables: the tcp
// bootstrap), or embedded (NewUniqueID, WithUniqueID).
//
// Every PE (processing element: one process of the job) allocates the same
// symmetric arrays in the same order; an Array[T] then names this PE's copy
// and every peer's copy, and data moves with one-sided puts, gets, atomics
// and signals, without the target PE taking part.
//
//	if err := shmem.Init(); err != nil { ... }   // mpirun -np N ./prog
//	defer shmem.Finalize()
//	a, _ := shmem.Alloc[float64](1024)          // collective
//	shmem.Put(a, 0, []float64{1, 2, 3}, (shmem.MyPE()+1)%shmem.NPEs())
//	shmem.BarrierAll()                          // puts complete and visible
//	fmt.Println(a.Local()[:3])
//
// # Element types
//
// An Array holds any Elem: the signed and unsigned integers of 8 to 64
// bits, float32, float64, and the half-precision Float16 (IEEE binary16,
// CUDA's half) and BFloat16 (CUDA's __nv_bfloat16), held as their bit
// patterns and converted with Float16FromFloat32 / (Float16).Float32
// (round to nearest even). Every call that takes float32 takes the half
// types, with float32's rules: waits and tests compare values, Reduce and
// the scans accumulate each element in float32 over the team and round
// once, bitwise reductions and the integer-only atomics refuse them.
//
// # Memory model (OpenSHMEM 1.6 §9.8)
//
// Put, P, PutNBI and the atomics are one-sided. Their completion rules:
//
//   - Put returns when src may be reused; the data is guaranteed visible at
//     the target only after Quiet (this PE) or a barrier (everyone).
//   - PutNBI and GetNBI may return earlier still: their buffers belong to
//     the library until Quiet.
//   - Get, G and fetching atomics return with the value.
//   - Fence orders this PE's puts, atomics and signals to each target PE
//     (earlier before later) without waiting for completion; Quiet waits for
//     completion of everything issued before it, on every context, and makes
//     it visible to every PE.
//   - PutSignal delivers the data before the signal: a PE that observes the
//     signal with SignalWaitUntil or WaitUntil also observes the data
//     (release on the sender, acquire in the wait).
//   - WaitUntil and TestCmp read with acquire order; so do the waits and
//     tests on many elements (WaitUntilAll/Any/Some, TestAll/Any/Some and
//     their Vector forms, OpenSHMEM 1.6 §9.10), over a[idx:idx+n] less a
//     skip mask; WaitUntilAny and TestAny start at a random element, so a
//     loop over them is handed every satisfied index.
//
// The OpenSHMEM 1.6 strided, non-blocking-atomic and signal calls:
//
//	call          returns when                  complete at the target   ordered by
//	IPut, IBPut   src may be reused             after Quiet / barrier    Fence (like Put)
//	IGet, IBGet   dst holds the data            -                        -
//	Atomic...NBI  the atomic is issued          after Quiet; *fetch too  Fence (like the blocking form)
//	PutSignalNBI  issued; src busy until Quiet  after Quiet              Fence; the signal after the data
//	SignalUpdate  issued                        after Quiet              Fence (an atomic)
//
// (goshmem stores an NBI atomic's *fetch before returning; Quiet, Ctx.Quiet
// of its context or BarrierAll is still what a portable program waits for.)
// All of them, like Put and Get, may be called from several goroutines at
// once, on one context or on several; concurrent transfers to the same
// elements race as plain puts do.
//
// Contexts (Ctx) split a PE's operations into independent completion scopes:
// Ctx.Quiet waits for that context only. The PE-wide Quiet and Fence cover
// every context.
//
// # Teams and contexts (OpenSHMEM 1.6 §9.4, §9.5)
//
// A Team is a set of PEs numbered 0..NPEs()-1 that run collectives
// together. TeamWorld is every PE; TeamShared (the PEs whose heaps this PE
// can load and store) and TeamNode (the PEs of its node) are both the node's
// PEs in world order, one team under two handles, since every node peer's
// heap is mapped whichever transport carries RMA. TeamSplitStrided and
// TeamSplit2D (a grid's rows and columns, one exchange over the parent) make
// more, collectively over the parent; WithTeamConfig records a TeamConfig
// that Config reads back. Team.Destroy is collective over the team and
// destroys the team's contexts; TeamInvalid.Destroy does nothing. A PE
// holds at most GOSHMEM_MAX_TEAMS teams at once (default 1,088 slots; the
// predefined three take two, TeamSplit2D two more).
//
// NewTeamCtx makes a context on a team: every PE number passed to a ...Ctx
// call on it is a number in that team (ErrPEOutOfRange outside it), turned
// into the world number once per call. Ctx.Team reports the team: TeamWorld
// for the default context (a nil *Ctx) and NewCtx's, TeamInvalid once the
// context is destroyed. CtxPrivate, CtxSerialized and CtxNoStore are
// accepted as hints and change nothing.
//
// On the shm transport (all PEs on one node, the default) data moves with
// plain loads and stores into peers' mappings of the heap, so operations
// complete when they return and Quiet costs one store-load barrier; the
// rules above are what portable programs may rely on.
//
// # Goroutines (ThreadMultiple)
//
// goshmem provides OpenSHMEM's ThreadMultiple level (QueryThread): any
// goroutine may make any call at any time, and a PE is the process, not a
// goroutine (a Lock, for one, is held by the PE). The cost is small and
// paid on every call whether or not goroutines share the library: each
// operation counts itself on its context's queue with atomic adds (that is
// what Quiet waits on); the shm data path takes no lock (copies and CPU
// atomics); over ofi the libfabric domain is thread-safe (the provider
// locks each post) and the transport's operation table takes a mutex; a
// collective takes its team's mutex (heap calls the world team's, which
// also guards the allocator), uncontended unless the program runs two
// collectives on one team at once; a team split takes its psync slot with
// one more exchange over the parent (the members confirm that no
// concurrent split on another team took the slot first). Family by
// family:
//
//   - RMA, atomics, signals, waits and tests, Fence, Quiet, Ptr and the
//     Accessible and query calls: safe from several goroutines at once, on
//     the default context or any other. Quiet completes what any goroutine
//     issued before it was called; operations issued meanwhile may or may
//     not be included. Operations from different goroutines are ordered by
//     when the calls happen, as in any concurrent program.
//   - Contexts: NewCtx is safe anywhere and a context may be shared.
//     Destroying a context while another goroutine still uses it is a
//     program error (later calls fail with ErrInvalidArgument).
//   - Locks: Set, Test and Clear are safe from any goroutine; while one of a
//     PE's goroutines holds or waits for a lock, the PE's other goroutines'
//     Set waits and Test returns false. Any goroutine of the holding PE may
//     Clear it.
//   - Collectives and heap calls (barriers, Broadcast, Reduce, ..., Alloc,
//     Free, Realloc, NewLock, team splits and Destroy): collectives on
//     different teams may run at once from different goroutines, in any
//     order on each PE, as OpenSHMEM's SHMEM_THREAD_MULTIPLE allows (Ref:
//     OpenSHMEM 1.6 §9.2): every team has its own psync words, scratch
//     buffers and lock. Collectives on one team are matched by order, so
//     the program must serialize them: every PE makes a team's collectives
//     in the same order (calls on one team from several goroutines at once
//     run one at a time, in an order the PEs may not agree on: they then
//     fail with ErrNotSymmetric or wait for GOSHMEM_TIMEOUT). Heap calls
//     and team splits of TeamWorld are collectives on TeamWorld; a split
//     or Destroy is a collective on the parent or destroyed team (TeamShared
//     and TeamNode are one team). Destroy must not overlap other calls on
//     the team it destroys.
//   - Init must not run concurrently with any other call. Finalize may: it
//     ends the calls other goroutines are blocked in (they return
//     ErrFinalized) and waits until every call has left (see Finalize).
//   - Local and Ptr slices are plain memory: Go's rules for concurrent
//     access apply (use the atomics for words several goroutines update).
//   - GPU calls are safe from several goroutines; the host-side copies and
//     atomics on GPU arrays are serialized by the GPU transport.
//   - Stream-ordered calls (PutOnStream ... AllToAllOnStream, stream.go)
//     enqueue on a CUDA stream and return without waiting: the operation
//     runs in stream order with the kernels queued there (nil: the PE's
//     default stream). Their collectives follow the collective rules above
//     on the GPU's side: every member enqueues them in one order, one
//     stream per PE. Reduce, Broadcast, FCollect and AllToAll on GPU
//     arrays run goshmem's embedded kernels and wait for them
//     (docs/gpu.md, "Stream-ordered communication from Go").
//
// # Errors
//
// Every error matches one sentinel under errors.Is (ErrPEOutOfRange,
// ErrOutOfBounds, ...) and names the PE, the argument and its valid range;
// many carry a hint for the user: %+v prints it, and an error in the chain
// returns it from an ErrorHint() string method. Bad input
// never corrupts memory and leaves the runtime usable.
//
// # Environment
//
// Every GOSHMEM_* variable (GOSHMEM_SYMMETRIC_SIZE, GOSHMEM_TIMEOUT,
// GOSHMEM_TRANSPORT, ...) is read once, at Init, from one table
// (internal/env); docs/environment.md lists them all with their defaults.
package shmem
