package shmem

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/collectives"
	"github.com/goshmem/goshmem/internal/cxi"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/logx"
	"github.com/goshmem/goshmem/internal/quiet"
	core "github.com/goshmem/goshmem/internal/runtime"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/internal/symmetric"
	"github.com/goshmem/goshmem/internal/transport"
)

// heapOff is where the user heap starts in every PE's region; heapAlign
// and gpuAlign are the host and GPU heaps' block alignments.
const (
	heapOff   = core.HeapOff
	heapAlign = core.HeapAlign
	gpuAlign  = core.GPUAlign
)

// The one runtime singleton. Hot paths read it with one atomic load.
var (
	current atomic.Pointer[runtime]
	// lifecycle serializes Init and Finalize.
	lifecycle sync.Mutex
	// generation numbers each Init, so arrays of an earlier Init are rejected.
	generation atomic.Uint64
)

// runtime is the API's state on top of the lifecycle (core.Runtime, which
// owns the bootstrap, the heaps and every backend): contexts, teams and
// the collectives' sequence, plus the fields hot paths read directly.
type runtime struct {
	c        *core.Runtime
	me, npes int
	policy   spin.Policy
	// collWait is the policy of the collectives' waits (WaitGE): policy,
	// without its spin phase on a crowded node (more than two PEs per
	// core) without ofi, where a member waits for members that need its
	// core: it yields at once. (Over ofi a wait's spin looks also drive the
	// endpoint; see core.SpinLook.)
	collWait spin.Policy
	// worldComm is the Comm of BarrierAllContext with a context that can
	// be done (its policies' Ctx set for the call): the world lock, held
	// for the whole call, guards it.
	worldComm ctxComm
	crowded   bool
	debug     bool
	gen       uint64

	heapLen uint64
	alloc   *symmetric.Allocator
	galloc  *symmetric.Allocator  // the GPU heap's allocator (nil without one)
	tr      []transport.Transport // per peer

	all  *quiet.Scope // every queue: PE-wide Quiet
	dflt *Ctx

	// world is the world team. Each team's Lock serializes this PE's
	// collectives on it (world's also the heap calls, which are world
	// collectives and update the allocators); collectives on different
	// teams run concurrently.
	world     *collectives.Team
	devTeamMu sync.Mutex // SetDeviceTeam of concurrent splits (publishTeam)
	teamsMu   sync.RWMutex
	teams     map[int32]*teamEntry
	nextTID   int32
	collSeq   uint64

	ctxMu  sync.Mutex
	nextID int

	pcontrol atomic.Int64 // the last PControl level - 1 (query.go: the zero value is the default level 1)

	// calls counts the API calls in flight (enter, leave); shut refuses new
	// ones and halt ends every wait of policy and collWait (stop.go).
	calls atomic.Int64
	shut  spin.Halt
	// native[dk]: the backends that data calls of kind dk (on host
	// arrays, on GPU arrays, quiets) reach hold native resources
	// (libfabric, the CUDA driver), so enterData counts those calls too.
	native  [dataQuiet + 1]bool
	gate    atomic.Uint32 // enterData's slow cases (gated)
	halt    spin.Halt
	unwatch func() bool // stops WithContext's watch (nil without one)
}

// Option configures Init. Options override the environment.
type Option func(*config)

type config struct {
	heapSize uint64
	timeout  time.Duration
	debug    *bool
	boot     bootstrap.Bootstrap
	cxi      *cxi.Config
	uid      *uidJoin // WithUniqueID
	ctx      context.Context
	logger   *slog.Logger
	device   *int // WithDevice
}

// WithSymmetricSize sets the bytes of symmetric heap per PE (overrides
// GOSHMEM_SYMMETRIC_SIZE). Every PE must pass the same size.
func WithSymmetricSize(bytes uint64) Option { return func(c *config) { c.heapSize = bytes } }

// WithTimeout sets the watchdog (overrides GOSHMEM_TIMEOUT): a wait, quiet or
// barrier longer than d fails with ErrTimeout. 0 turns it off.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithDebug turns debug checks on or off (overrides GOSHMEM_DEBUG).
func WithDebug(on bool) Option { return func(c *config) { c.debug = &on } }

// WithDevice makes this PE use the GPU with this ordinal, in [0, device
// count) on its node (overrides GOSHMEM_DEVICE). Without it, and without
// GOSHMEM_DEVICE, a PE uses the device of the CUDA context current on the
// thread that calls Init (one another library made current), keeping that
// context; else its local rank modulo the node's device count. An ordinal
// out of range fails Init with ErrInvalidArgument. Lock the goroutine to
// its thread (runtime.LockOSThread) when the context was made current
// there.
func WithDevice(ordinal int) Option { return func(c *config) { c.device = &ordinal } }

// WithBootstrap runs on the given bootstrap instead of choosing one (used by
// goshmem's own tests and tools).
func WithBootstrap(b bootstrap.Bootstrap) Option { return func(c *config) { c.boot = b } }

// Init starts goshmem on this PE. Under mpirun (or another PMI launcher)
// it bootstraps over MPI; with GOSHMEM_RANK/GOSHMEM_NPES (or torchrun's or
// Slurm's rank variables) and a rendezvous address it bootstraps over TCP
// (GOSHMEM_BOOTSTRAP=tcp, docs/environment.md); WithUniqueID joins a job
// made by NewUniqueID; a program started alone is a 1-PE job. Init is
// collective: every PE of the job calls it. It maps the symmetric heap of
// every PE on this node, chooses a transport for every peer, and ends with
// a barrier. Calling Init again before Finalize is an error.
func Init(opts ...Option) error {
	lifecycle.Lock()
	defer lifecycle.Unlock()
	// Init's CUDA calls run on the calling thread, whose current context
	// (another library's) chooses the GPU and is current again on return.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	if r := current.Load(); r != nil {
		return errs.Hint(errs.ErrInvalidArgument, "call Finalize before initializing again",
			r.me, "Init", "goshmem is already initialized")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	settings, envErr := env.Read(nil)
	if envErr != nil {
		// A bad value on one PE must fail Init on every PE, not leave the
		// others in the bootstrap waiting for a PE that never joins: go on
		// with the bad values at their defaults, and Init's first exchange
		// carries the error.
		envErr = markErr(envErr, errs.ErrInvalidArgument)
		if settings = validSettings(); settings == nil {
			return envErr
		}
	}
	var err error
	boot := cfg.boot
	if boot == nil && cfg.uid != nil {
		if boot, err = core.NewUniqueIDBootstrap(cfg.uid.id, cfg.uid.rank, cfg.uid.npes); err != nil {
			return joinErrors(envErr, err)
		}
	}
	if boot == nil {
		name := settings.String("GOSHMEM_BOOTSTRAP")
		if err := core.CheckBootstrap(name); err != nil {
			// Like a bad value: the launcher's PEs fail together.
			if envErr == nil {
				envErr = err
			}
			name = "auto"
		}
		if boot, err = core.ChooseBootstrap(name); err != nil {
			return joinErrors(envErr, err)
		}
	}
	if l, ok := boot.(bootstrap.Logged); ok && cfg.logger != nil {
		l.SetLogger(cfg.logger)
	}
	r, err := newRuntime(boot, settings, cfg, envErr)
	if err != nil {
		if cfg.boot == nil {
			_ = boot.Finalize()
		}
		return err
	}
	r.c.RestoreCallerContext()
	finalized.Store(false)
	current.Store(r)
	r.watchContext(cfg.ctx)
	if settings.Bool("GOSHMEM_INFO") {
		r.c.Info(r.c.Log)
	}
	return nil
}

// validSettings reads the environment with every variable whose value
// does not parse at its default (nil if that fails too).
func validSettings() env.Settings {
	s, err := env.Read(func(name string) (string, bool) {
		v, ok := os.LookupEnv(name)
		if !ok {
			return "", false
		}
		_, bad := env.Read(func(n string) (string, bool) {
			if n == name {
				return v, true
			}
			return "", false
		})
		return v, bad == nil
	})
	if err != nil {
		return nil
	}
	return s
}

func newRuntime(boot bootstrap.Bootstrap, settings env.Settings, cfg config, local error) (*runtime, error) {
	c, err := core.New(boot, settings, core.Config{HeapSize: cfg.heapSize, Timeout: cfg.timeout, Debug: cfg.debug, CXI: cfg.cxi, Local: local,
		Log: logx.New(cfg.logger, nil), Device: cfg.device})
	if err != nil {
		return nil, err
	}
	r := &runtime{
		c:       c,
		me:      c.Me,
		npes:    c.NPEs,
		policy:  c.Policy,
		crowded: c.Crowded,
		debug:   c.Debug,
		gen:     generation.Add(1),
		heapLen: c.HeapLen,
		alloc:   c.Alloc,
		galloc:  c.GAlloc,
		tr:      c.Tr,
		teams:   map[int32]*teamEntry{},
		nextTID: firstTeamID,
	}
	r.native = [...]bool{dataHost: c.NativeHostCalls(), dataDev: c.NativeCalls(), dataQuiet: c.NativeQuiet()}
	var gate uint32
	for dk, n := range r.native {
		if n {
			gate |= 1 << dk
		}
	}
	r.gate.Store(gate)
	r.policy.Halt = &r.halt
	r.collWait = r.policy
	if _, _, _, ofiOn := c.OFIStats(); r.crowded && !ofiOn {
		r.collWait.Spins = 0
	}
	r.worldComm = ctxComm{runtime: r, wait: r.collWait, pol: r.policy}
	r.all = quiet.NewScope("PE-wide quiet")
	if r.dflt, err = r.newCtx("default context"); err != nil {
		c.Close()
		return nil, err
	}
	r.world = collectives.World(r, c.Teams)
	r.teams[TeamWorld.id] = &teamEntry{ct: r.world}
	if err := r.predefinedTeams(); err != nil {
		c.Close()
		return nil, err
	}
	if err := r.world.SyncAs(r, collectives.KindInit); err != nil {
		c.Close()
		return nil, errs.Wrap(err, r.me, "Init", "first barrier")
	}
	return r, nil
}

func (r *runtime) local(off uint64, n int) []byte     { return r.c.Local(off, n) }
func (r *runtime) localPtr(off uint64) unsafe.Pointer { return r.c.LocalPtr(off) }

// fence orders q's operations on every transport (shmem_fence).
func (r *runtime) fence(q *quiet.Queue) error { return r.c.Fence(q) }

// Finalize ends goshmem on this PE. It is collective: it completes every
// outstanding operation (Quiet), waits for every PE (barrier), releases
// the heap and the bootstrap. Arrays are unusable afterwards; every call
// but Init returns ErrFinalized.
//
// With a GPU it first waits for the work queued on this PE's GPU that the
// program did not synchronize (stream calls, its kernels), as Synchronize
// does, so that no kernel addresses a heap after it is unmapped; a fault
// in that work is Finalize's error. A kernel that never ends keeps
// Finalize waiting, and the logger gets a warning every 10 seconds
// naming the last kernel launched.
//
// Other goroutines may be inside goshmem calls: Finalize first refuses new
// calls, ends the blocked ones (waits, quiets, barriers and other
// collectives, locks), which return ErrFinalized, and waits until every
// call has left; only then does it synchronize and close anything. A
// collective that it ended leaves its team out of step. The memory
// behind slices kept from Local stays mapped: reading it never faults, and
// it reads zeros (this PE's region is replaced by private zero pages).
//
// When this PE's context (WithContext) is done, Finalize does not wait for
// the other PEs or for its GPU's queued work: it marks this PE as gone (their waits fail naming it),
// releases what this PE holds and returns nil.
//
// Under GOSHMEM_TIMEOUT a peer
// that never arrives makes Finalize return ErrTimeout naming the PEs that
// did not enter Finalize; the runtime is then released without the
// bootstrap's last barrier (which would wait for them forever), and the
// program should exit non-zero, which ends the job. When the world team
// is out of step (an earlier collective failed) Finalize reports it and
// still finalizes when every PE gets there.
func Finalize() error {
	lifecycle.Lock()
	defer lifecycle.Unlock()
	r := current.Load()
	if r == nil {
		return notInitialized("Finalize")
	}
	left := r.shut.Err() != nil // this PE's context is done
	r.stopPE(errs.New(errs.ErrFinalized, r.me, "Finalize", "Finalize was called while this call ran"))
	if r.unwatch != nil {
		r.unwatch()
	}
	r.drain()
	// BarrierAll and SyncAll are not counted (enterWorld): taking the
	// world lock waits for one in flight (halted) to leave, and refuses
	// any later one. Finalize holds it to the end.
	r.world.Lock()
	defer r.world.Unlock()
	// A call that is not counted and slipped past shut before stopPE
	// (enterData's calls and locks over shm alone) may still start a wait
	// while Finalize's own waits run: halted again at the end, it returns
	// ErrFinalized instead of waiting on retired memory.
	defer r.halt.Stop(r.shut.Err())
	if left {
		r.c.Leave()
		r.c.StopCXI()
		finalized.Store(true)
		current.Store(nil)
		r.c.Close()
		return nil
	}
	// Finalize's own waits run; calls stay refused.
	r.halt.Clear()
	var errList []error
	// The GPU work the program queued and did not synchronize may still
	// address the heaps: it ends before any PE passes the barrier below
	// (a peer's queued work may wait for this PE's).
	if err := r.c.SettleGPU(); err != nil {
		errList = append(errList, err)
	}
	if err := r.all.Quiet(r.policy, r.checkPeers); err != nil {
		errList = append(errList, err)
	}
	r.c.BeginFinalize()
	berr := r.world.BarrierAs(r, collectives.KindFinalize)
	if berr != nil {
		errList = append(errList, r.finalizeError(berr))
	} else if err := r.all.Quiet(r.policy, r.checkPeers); err != nil {
		// The barrier's last signals (over ofi, atomics still in flight
		// when the barrier returns here) must land before this PE says it
		// has finalized: a peer still waiting for one would otherwise take
		// the finalized state for a PE that will never answer.
		errList = append(errList, err)
	}
	r.c.StopCXI()
	r.c.EndFinalize()
	finalized.Store(true)
	current.Store(nil)
	// The bootstrap barrier keeps every PE's mapping alive until all are
	// past their last access (a peer may still read our barrier word).
	// After a world barrier that completed, every PE gets here: the
	// bootstrap's barrier and finalize need no bound. After one that failed
	// some PE may end without them: they are skipped when a PE never
	// arrived (they would wait for it forever) and bounded by
	// GOSHMEM_TIMEOUT otherwise; without them the bootstrap is not
	// finalized, and the program should exit non-zero.
	barrier, finalize := r.c.Boot.Barrier, r.c.Boot.Finalize
	if berr != nil {
		barrier = func() error { return r.c.BootBarrier("Finalize") }
		finalize = func() error { return r.c.BootFinalize("Finalize") }
	}
	// A peer that left (its context was done) never joins them either.
	done := (berr == nil || !errors.Is(berr, errs.ErrTimeout)) && !r.c.AnyLeft()
	if done {
		if err := barrier(); err != nil {
			errList = append(errList, err)
			done = false
		}
	}
	r.c.Close()
	if done {
		if err := finalize(); err != nil {
			errList = append(errList, err)
		}
	}
	return joinErrors(errList...)
}

// joinErrors joins the errors that are not nil and repeats their hints
// outside the join, for readers of hints that do not look into joined
// errors: one error comes back as it is.
func joinErrors(list ...error) error {
	var errList []error
	for _, err := range list {
		if err != nil {
			errList = append(errList, err)
		}
	}
	if len(errList) <= 1 {
		if len(errList) == 0 {
			return nil
		}
		return errList[0]
	}
	err := errors.Join(errList...)
	for _, e := range errList {
		for _, h := range errors.GetAllHints(e) {
			err = errors.WithHint(err, h)
		}
	}
	return err
}

// finalizeError is Finalize's barrier error, naming the PEs that have not
// entered Finalize when this PE can see them (node peers).
func (r *runtime) finalizeError(err error) error {
	if !errors.Is(err, errs.ErrTimeout) {
		return errs.Wrap(err, r.me, "Finalize", "barrier")
	}
	missing, unknown := r.c.NotFinalizing()
	detail := "every PE finalized past the barrier's wait"
	switch {
	case len(missing) > 0:
		detail = fmt.Sprintf("PEs %v have not called Finalize", missing)
	case len(unknown) > 0:
		detail = fmt.Sprintf("PEs %v (on other nodes) may not have called Finalize", unknown)
	}
	return errors.WithHint(errs.Wrap(err, r.me, "Finalize", "%s after GOSHMEM_TIMEOUT=%v", detail, r.policy.Timeout),
		"every PE must call Finalize; exit non-zero to end the job")
}

// MyPE returns this PE's number in [0, NPEs()), or -1 before Init.
func MyPE() int {
	if r := current.Load(); r != nil {
		return r.me
	}
	return -1
}

// NPEs returns the number of PEs in the job, or -1 before Init.
func NPEs() int {
	if r := current.Load(); r != nil {
		return r.npes
	}
	return -1
}

// GlobalExit ends every PE of the job with the given exit status
// (shmem_global_exit), printing msg naming this PE. It does not return.
func GlobalExit(code int, msg string) {
	var lg *logx.Logger // stderr
	if r := current.Load(); r != nil {
		r.c.Boot.Abort(code, msg)
		lg = r.c.Log
	}
	lg.Log(slog.LevelError, fmt.Sprintf("goshmem: %s\n", msg), msg, logx.PE(MyPE()), slog.Int("code", code))
	os.Exit(code)
}

// rt returns the runtime, or ErrNotInitialized (ErrFinalized after
// Finalize, or the PE context's error) naming op. It does not count the
// call in flight: that is enter.
func rt(op string) (*runtime, error) {
	r := current.Load()
	if r == nil {
		return nil, notInitialized(op)
	}
	if r.shut.Err() != nil {
		return nil, r.shutErr(op)
	}
	return r, nil
}

// checkPeers runs on the slow path of every wait (core.CheckPeers).
func (r *runtime) checkPeers() error { return r.c.CheckPeers() }

// Comm, for the collectives: the default context's queue, the shm signals.

func (r *runtime) MyPE() int { return r.me }
func (r *runtime) NPEs() int { return r.npes }

func (r *runtime) Put(pe int, off uint64, src []byte) error {
	return r.tr[pe].Put(r.dflt.q, pe, off, src)
}

func (r *runtime) Get(dst []byte, pe int, off uint64) error {
	return r.tr[pe].Get(r.dflt.q, dst, pe, off)
}

func (r *runtime) Signal(pe int, off uint64, v uint64) error {
	t := r.tr[pe]
	if err := t.Fence(r.dflt.q); err != nil {
		return err
	}
	_, err := t.Atomic(r.dflt.q, transport.AMOSet, 8, pe, off, v, 0)
	return err
}

func (r *runtime) Local(off uint64, n int) []byte { return r.local(off, n) }

// Crowded implements collectives.CrowdedNode.
func (r *runtime) Crowded() bool { return r.crowded }

// Word implements collectives.Direct: pe's word at off when pe is reached
// over shared memory (not over ofi), else nil.
func (r *runtime) Word(pe int, off uint64) *uint64 { return r.c.Word(pe, off) }

// waitLooks is the state of a wait loop that drives the ofi transport
// while it waits for data from the peers (core.SpinLook).
type waitLooks = core.WaitLooks

func (r *runtime) spinLook(w *waitLooks) { r.c.SpinLook(w) }
func (r *runtime) endSpin(w *waitLooks)  { r.c.EndSpin(w) }

func (r *runtime) WaitGE(off uint64, v uint64, why collectives.Wait) error {
	return r.waitGE(r.collWait, off, v, why)
}

// waitGE is WaitGE under policy pol (a call's context: runtime.comm).
func (r *runtime) waitGE(pol spin.Policy, off uint64, v uint64, why collectives.Wait) error {
	p := (*uint64)(r.localPtr(off))
	if atomic.LoadUint64(p) >= v {
		return nil
	}
	var looks waitLooks
	ok, err := pol.Until(func() bool {
		if atomic.LoadUint64(p) >= v {
			return true
		}
		r.spinLook(&looks)
		return atomic.LoadUint64(p) >= v
	}, func() error {
		// A partner that has finalized will never answer (unless its
		// signal landed just before it did: look once more).
		if err := r.c.CheckPeersInCollective(why.From); err != nil && atomic.LoadUint64(p) < v {
			return err
		}
		return nil
	})
	r.endSpin(&looks)
	if err != nil {
		return errs.Wrap(err, r.me, "wait", "%v", why)
	}
	if !ok {
		return errs.New(errs.ErrTimeout, r.me, "wait", "%v: still waiting after GOSHMEM_TIMEOUT=%v", why, r.policy.Timeout)
	}
	return nil
}

// Quiet, for the collectives, completes every queue but skips the shm
// store-load barrier of the user-facing Quiet: a collective always follows
// its puts with a signal (a release store, ordered after them) that the
// peers wait for, so they see the data by causality, and this PE's own
// later loads come after its wait's loads. The barrier is only needed when
// this PE itself must not let a later load pass its stores (shmem_quiet).
func (r *runtime) Quiet() error { return r.all.Quiet(r.policy, r.checkPeers) }

func (r *runtime) quietAll() error {
	err := r.all.Quiet(r.policy, r.checkPeers)
	r.c.StoreLoadBarrier()
	return errors.Join(err, r.c.ProxyErr("Quiet"))
}
