// Package runtime is goshmem's lifecycle: it bootstraps a job, agrees on
// the settings, and takes every host transport and GPU backend through one
// interface (Backend) in a fixed order of phases, so that Init agrees or
// fails together on every PE. The public package shmem holds the API and
// the one singleton on top of it; nothing there sets up a backend.
package runtime

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"math/bits"
	"os"
	goruntime "runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/bootstrap/local"
	mpiboot "github.com/goshmem/goshmem/internal/bootstrap/mpi"
	tcpboot "github.com/goshmem/goshmem/internal/bootstrap/tcp"
	"github.com/goshmem/goshmem/internal/collectives"
	"github.com/goshmem/goshmem/internal/cxi"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/logx"
	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/internal/symmetric"
	"github.com/goshmem/goshmem/internal/transport"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
	"github.com/goshmem/goshmem/internal/transport/ofi"
	"github.com/goshmem/goshmem/internal/transport/proxy"
	"github.com/goshmem/goshmem/internal/transport/shm"
)

// Region layout: [0, HeapOff) this PE's header (liveness); [HeapOff,
// HeapOff+HeapLen) the user heap managed by the allocator; then the team
// slots (Teams: GOSHMEM_MAX_TEAMS slots of collectives.SlotSize bytes,
// their pages committed as teams use them).
const (
	headerOff = 0
	// HeapOff is where the user heap starts in every PE's region (a
	// multiple of the largest page size, so the heap's pages align).
	HeapOff = 64 << 10
	// header words
	hdrPID   = headerOff
	hdrState = headerOff + 64

	stateRunning   = 1
	stateFinalized = 2
	// stateFinalizing: the PE entered Finalize (a peer whose Finalize
	// times out names the PEs that never got there).
	stateFinalizing = 3
	// stateLeft: the PE finalized alone after its context was done
	// (Leave): it will never answer, as if it had exited.
	stateLeft = 4

	// HeapAlign is the alignment of host heap blocks.
	HeapAlign = 64
	// GPUAlign is the alignment of device arrays (a full 256-byte
	// transaction segment, so block-wide vector copies start aligned).
	GPUAlign = 256
)

// Config is what Init's options give the runtime (zero: the environment's).
type Config struct {
	HeapSize uint64
	Timeout  time.Duration
	Debug    *bool
	CXI      *cxi.Config
	// Local is a failure this PE found before the bootstrap (a GOSHMEM_*
	// value that does not parse): Init's first exchange carries it, so
	// every PE's Init fails naming this PE.
	Local error
	// Log receives the diagnostics (nil: text lines on stderr).
	Log *logx.Logger
	// Device is the GPU ordinal asked for (shmem.WithDevice; nil: none).
	Device *int
}

// Runtime is one PE's job: bootstrap, heaps, per-peer transports and the
// GPU backends, in the order they were set up.
type Runtime struct {
	// Log receives this runtime's diagnostics (Config.Log).
	Log      *logx.Logger
	Boot     bootstrap.Bootstrap
	Me, NPEs int
	Node     []int
	Settings env.Settings
	Policy   spin.Policy
	// Crowded: this node runs more than two PEs per core in their
	// affinity masks (see collectives.CrowdedNode).
	Crowded bool
	Debug   bool

	// HeapLen is the user heap's size; Alloc manages it (offsets from HeapOff).
	HeapLen uint64
	Alloc   *symmetric.Allocator
	// Teams places the team slots in every PE's region, after the user
	// heap (GOSHMEM_MAX_TEAMS of them; the same on every PE).
	Teams collectives.Layout
	// Tr is the host heap's transport per peer.
	Tr []transport.Transport

	// GPU is the GPU heap's transport (nil without one; GPUErr says why),
	// GAlloc its allocator (offsets from GPUControlBytes()).
	GPU    *cudatr.Transport
	GPUErr error
	GAlloc *symmetric.Allocator

	heap   *heapBackend
	firstQ *quiet.Queue // the default context's queue until NewQueue hands it out
	shm    *shm.Transport
	ofi    *ofi.Transport
	pids   []int
	cpus   int
	claim  int // looks of a wait that claim the ofi endpoint (SpinLook)

	proxy       *proxy.Proxy
	proxyCUDA   proxy.CUDAOptions
	proxyFarPEs []bool
	ibgda       string
	softNIC     *softIBGDA
	mlx5        *mlx5IBGDA
	cxi         *cxiRT
	jobCXI      *cxi.Config

	device    *int              // Config.Device
	gpuCaller *cudatr.Transport // the GPU heap set up on Init's thread (restoreCallerContext)

	gpuState gpuState

	backends  []Backend
	declined  map[string]error
	exchanges int
}

// symmetricSettings must be equal on every PE: Init compares them in its
// first exchange and fails with ErrNotSymmetric naming the setting, the
// values and the PEs.
var symmetricSettings = []string{
	"GOSHMEM_TRANSPORT", "GOSHMEM_OFI_PROVIDER", "GOSHMEM_GPU", "GOSHMEM_DEVICE_HEAP_SIZE", "GOSHMEM_DEVICE_HEAP_MAX", "GOSHMEM_DEVICE_HEAP_CHUNK",
	"GOSHMEM_GPU_TRANSPORT", "GOSHMEM_PROXY_WORKERS", "GOSHMEM_PROXY_RINGS", "GOSHMEM_PROXY_CONTEXTS",
	"GOSHMEM_PROXY_SLOTS", "GOSHMEM_PROXY_BATCH", "GOSHMEM_PROXY_BACKEND", "GOSHMEM_PROXY_MODE",
	"GOSHMEM_IBGDA_NIC", "GOSHMEM_IBGDA_DOORBELL", "GOSHMEM_IBGDA_QUEUES",
	"GOSHMEM_CXI_ENGINE", "GOSHMEM_CXI_PROVIDER", "GOSHMEM_GPU_COLL_GRID", "GOSHMEM_GPU_COLL_BLOCK",
	"GOSHMEM_GPU_COLL_FUSED", "GOSHMEM_GPU_COLL_LL", "GOSHMEM_GPU_STREAM_SYNC",
}

// New runs Init's phases on this PE: the settings exchange, the symmetric
// heap, the host transports, the GPU heap, the GPU's remote path (proxy or
// IBGDA) and the CXI triggered path. Every PE makes the same bootstrap
// calls in the same order whatever fails locally; on error every backend
// made so far is closed.
func New(boot bootstrap.Bootstrap, settings env.Settings, cfg Config) (*Runtime, error) {
	// The GPU heap's setup looks for a CUDA context that the program made
	// current on the thread calling Init: stay on that thread until the end,
	// which puts the thread's context back as it was.
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	r := &Runtime{Log: cfg.Log, Boot: boot, Me: boot.Rank(), NPEs: boot.Size(), Node: boot.Node(), Settings: settings,
		declined: map[string]error{}, jobCXI: cfg.CXI, device: cfg.Device}
	defer r.RestoreCallerContext()
	if r.Me == 0 {
		env.WarnUnknown(r.Log, os.Environ())
	}
	if err := r.agree(cfg); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			r.Close()
		}
	}()
	r.heap = &heapBackend{r: r}
	if err := r.runPhase("symmetric heap", []Backend{r.heap}); err != nil {
		return nil, err
	}
	var err error
	if r.Alloc, err = symmetric.NewAllocator(r.HeapLen, HeapAlign); err != nil {
		return nil, errs.Wrap(err, r.Me, "Init", "host heap allocator")
	}
	r.Alloc.SetQuarantine(r.Debug)
	host := []Backend{&shmBackend{r: r}}
	if ob := r.newOFIBackend(); ob != nil {
		host = append(host, ob)
	}
	if err := r.runPhase("host transports", host); err != nil {
		return nil, err
	}
	binary.LittleEndian.PutUint64(r.Local(hdrPID, 8), uint64(os.Getpid()))
	atomic.StoreUint64((*uint64)(r.LocalPtr(hdrState)), stateRunning)

	gb, err := r.newGPUBackend()
	if err != nil {
		return nil, err
	}
	if gb != nil {
		if err := r.runPhase("GPU heap", []Backend{gb}); err != nil {
			return nil, err
		}
		if err, off := r.declined[gb.Name()]; off {
			r.GPUErr = errors.WithHint(err, "AllocDevice needs a GPU on every PE; use shmem.Alloc for the host heap")
		}
	}
	if err := r.runPhase("GPU remote path", r.gpuRemoteBackends()); err != nil {
		return nil, err
	}
	if cfg.CXI != nil {
		if err := r.runPhase("CXI triggered path", []Backend{&cxiBackend{r: r, cfg: *cfg.CXI}}); err != nil {
			return nil, err
		}
	}
	if r.GPU != nil {
		r.preloadLib() // before any kernel runs (Init's first barrier follows)
	}
	ok = true
	return r, nil
}

// RestoreCallerContext puts back the CUDA context that was current on
// Init's thread before the GPU heap's setup made its own current there.
// New calls it on return; a caller that makes more CUDA calls on that
// thread afterwards (publishing teams) calls it again when done.
func (r *Runtime) RestoreCallerContext() {
	if r.gpuCaller != nil {
		_ = r.gpuCaller.RestoreCaller()
	}
}

// agree is Init's first exchange: the heap size, pid and CPU affinity of
// every PE, the settings that must match, and this PE's local validation.
func (r *Runtime) agree(cfg Config) error {
	s := r.Settings
	heap := s.Size("GOSHMEM_SYMMETRIC_SIZE")
	if cfg.HeapSize != 0 {
		heap = cfg.HeapSize
	}
	heap = (heap + 4095) &^ 4095
	timeout := s.Duration("GOSHMEM_TIMEOUT")
	if cfg.Timeout != 0 {
		timeout = cfg.Timeout
	}
	r.Debug = s.Bool("GOSHMEM_DEBUG")
	if cfg.Debug != nil {
		r.Debug = *cfg.Debug
	}
	local := errs.Wrap(cfg.Local, r.Me, "Init", "environment")
	teams, terr := r.maxTeams()
	if local == nil {
		local = terr
	}
	if local == nil && heap <= HeapOff {
		local = errs.Hint(errs.ErrInvalidArgument, fmt.Sprintf("set GOSHMEM_SYMMETRIC_SIZE above %d bytes", HeapOff),
			r.Me, "Init", "symmetric heap of %d bytes leaves no room for the user heap: goshmem reserves the first %d bytes", heap, HeapOff)
	}

	// Record: heap size, pid, CPU mask, then "name=value" of every
	// setting that must agree. The CPU masks tell the wait policy whether
	// the node's PEs have a core each (spin) or share cores (yield early):
	// runtime.NumCPU alone counts only this process's affinity.
	vals := r.symmetricValues(heap, teams)
	rec := binary.LittleEndian.AppendUint64(nil, heap)
	rec = binary.LittleEndian.AppendUint64(rec, uint64(os.Getpid()))
	rec = append(rec, cpuMask()...)
	rec = append(rec, strings.Join(vals, "\x00")...)
	e := &entry{b: nil, rec: rec, err: local, st: status(local, stMore)}
	all, err := r.exchange("settings", encodeStatuses([]*entry{e}))
	if err != nil {
		return err
	}
	const fixed = 16 + cpuMaskBytes
	recs := make([][]byte, r.NPEs)
	var failures []failure
	for pe, p := range all {
		st, body, ok := decodeStatuses(p, 1)
		if !ok || (st[0] != stFailed && len(body[0]) < fixed) {
			return errs.New(errs.ErrNotSymmetric, r.Me, "Init", "settings: PE %d sent a malformed record (%d bytes)", pe, len(p))
		}
		if st[0] == stFailed {
			failures = append(failures, newFailure(pe, "settings", body[0]))
			continue
		}
		recs[pe] = body[0]
	}
	if len(failures) > 0 {
		return r.initFailed("settings", failures, local)
	}
	if err := compareSettings(r.Me, recs, fixed); err != nil {
		return err
	}
	r.pids = make([]int, r.NPEs)
	var union [cpuMaskBytes]byte
	localSize := 0
	for pe, b := range recs {
		r.pids[pe] = int(binary.LittleEndian.Uint64(b[8:]))
		if r.Node[pe] != r.Node[r.Me] {
			continue
		}
		localSize++
		for i, c := range b[16:fixed] {
			union[i] |= c
		}
	}
	r.cpus = popcount(union[:])
	r.Policy = spin.For(localSize, r.cpus, timeout)
	r.Crowded = localSize > 2*r.cpus
	// A wait claims the ofi endpoint while it spins on a CPU of its own:
	// the spin phase, and the yield phase too when every PE of the node has
	// a CPU of its own (sched_yield then returns at once); see SpinLook.
	r.claim = r.Policy.Spins
	if localSize <= r.cpus {
		r.claim += r.Policy.Yields
	}
	r.HeapLen = heap - HeapOff
	r.Teams = collectives.Layout{Base: HeapOff + r.HeapLen, MaxTeams: teams}
	return nil
}

// maxTeams is GOSHMEM_MAX_TEAMS: the team slots of every PE, predefined
// teams included, in [collectives.MinTeams, collectives.MaxTeams].
func (r *Runtime) maxTeams() (int, error) {
	v := r.Settings.String("GOSHMEM_MAX_TEAMS")
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < collectives.MinTeams || n > collectives.MaxTeams {
		return 0, errs.Hint(errs.ErrInvalidArgument, fmt.Sprintf("set GOSHMEM_MAX_TEAMS to a number in [%d, %d] (default %d), the same on every PE",
			collectives.MinTeams, collectives.MaxTeams, collectives.DefaultTeams), r.Me, "Init",
			"GOSHMEM_MAX_TEAMS=%q; must be a number of team slots in [%d, %d]", v, collectives.MinTeams, collectives.MaxTeams)
	}
	return n, nil
}

// RegionSize is the bytes of every PE's symmetric region: header, user
// heap and team slots.
func (r *Runtime) RegionSize() uint64 { return HeapOff + r.HeapLen + r.Teams.Size() }

// symmetricValues is this PE's "name=value" list of what must agree: the
// effective heap size, team slots (teams; 0 when GOSHMEM_MAX_TEAMS is not
// valid here) and debug mode (options included), whether the CXI path was
// asked for, and the symmetricSettings rows.
func (r *Runtime) symmetricValues(heap uint64, teams int) []string {
	vals := []string{
		fmt.Sprintf("GOSHMEM_SYMMETRIC_SIZE=%d", heap),
		fmt.Sprintf("GOSHMEM_MAX_TEAMS=%d", teams),
		fmt.Sprintf("GOSHMEM_DEBUG=%v", r.Debug),
		fmt.Sprintf("WithCXI=%v", r.jobCXI != nil),
	}
	for _, n := range symmetricSettings {
		vals = append(vals, n+"="+r.Settings.String(n))
	}
	return vals
}

// compareSettings fails with ErrNotSymmetric naming every setting whose
// value differs, each value and the PEs that have it. Every PE computes
// the same error from the same records.
func compareSettings(me int, recs [][]byte, fixed int) error {
	parse := func(b []byte) map[string]string {
		m := map[string]string{}
		for _, kv := range strings.Split(string(b[fixed:]), "\x00") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				m[k] = v
			}
		}
		return m
	}
	maps := make([]map[string]string, len(recs))
	names := map[string]bool{}
	for pe, b := range recs {
		maps[pe] = parse(b)
		for k := range maps[pe] {
			names[k] = true
		}
	}
	var keys []string
	for k := range names {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var diffs []string
	for _, k := range keys {
		byVal := map[string][]int{}
		var order []string
		for pe := range maps {
			v, ok := maps[pe][k]
			if !ok {
				v = "(unknown to this goshmem build)"
			}
			if _, seen := byVal[v]; !seen {
				order = append(order, v)
			}
			byVal[v] = append(byVal[v], pe)
		}
		if len(order) < 2 {
			continue
		}
		var parts []string
		for _, v := range order {
			parts = append(parts, fmt.Sprintf("%q on %s", v, peList(byVal[v])))
		}
		diffs = append(diffs, k+": "+strings.Join(parts, ", "))
	}
	if len(diffs) == 0 {
		return nil
	}
	return errs.Hint(errs.ErrNotSymmetric, "set the same value on every PE (and pass the same Init options)",
		me, "Init", "settings differ across PEs: %s", strings.Join(diffs, "; "))
}

// peList is "PE 3" or "PEs 0, 2-5".
func peList(pes []int) string {
	if len(pes) == 1 {
		return fmt.Sprintf("PE %d", pes[0])
	}
	var parts []string
	for i := 0; i < len(pes); {
		j := i
		for j+1 < len(pes) && pes[j+1] == pes[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", pes[i], pes[j]))
		} else {
			parts = append(parts, fmt.Sprint(pes[i]))
		}
		i = j + 1
	}
	return "PEs " + strings.Join(parts, ", ")
}

// Close releases every backend in the reverse order of setup. The
// bootstrap stays (the caller finalizes it).
func (r *Runtime) Close() {
	for i := len(r.backends) - 1; i >= 0; i-- {
		_ = r.backends[i].Close()
	}
	r.backends = nil
}

// Backends lists the connected backends in setup order.
func (r *Runtime) Backends() []Backend { return r.backends }

// Local is this PE's region bytes [off, off+n).
func (r *Runtime) Local(off uint64, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(r.heap.bases[r.Me], off)), n)
}

// LocalPtr is this PE's region at off.
func (r *Runtime) LocalPtr(off uint64) unsafe.Pointer { return unsafe.Add(r.heap.bases[r.Me], off) }

// Word is pe's 8-byte word at off when pe is reached over shared memory
// (not over ofi), else nil.
func (r *Runtime) Word(pe int, off uint64) *uint64 {
	if pe < 0 || pe >= len(r.Tr) || r.Tr[pe] != transport.Transport(r.shm) {
		return nil
	}
	return (*uint64)(r.shm.Ptr(pe, off))
}

// Drain waits for every backend's accepted work (Synchronize's second
// half: the soft NIC's WQEs, the GPU proxy's requests).
func (r *Runtime) Drain(op string) error {
	for _, b := range r.backends {
		if err := b.Drain(op, r.Policy.Timeout); err != nil {
			return err
		}
	}
	return nil
}

// Diagnose joins every backend's diagnosis for a failed GPU wait of op
// (Synchronize, or Finalize's wait for the work queued on the GPU).
func (r *Runtime) Diagnose(op string) error {
	var list []error
	for _, b := range r.backends {
		if d := b.Diagnose(); d != "" {
			list = append(list, errs.Wrap(errors.New(d), r.Me, op, "%s", b.Name()))
		}
	}
	return errors.Join(list...)
}

// BeginFinalize marks this PE as finalizing (peers that time out in
// Finalize name the PEs that never got there).
func (r *Runtime) BeginFinalize() {
	atomic.StoreUint64((*uint64)(r.LocalPtr(hdrState)), stateFinalizing)
}

// EndFinalize marks this PE's last access done: node peers stop checking
// its liveness.
func (r *Runtime) EndFinalize() {
	atomic.StoreUint64((*uint64)(r.LocalPtr(hdrState)), stateFinalized)
}

// Leave marks this PE as gone without the job's Finalize (its context
// was done): node peers waiting for it fail at their next liveness check,
// naming it, as for a PE that exited.
func (r *Runtime) Leave() {
	atomic.StoreUint64((*uint64)(r.LocalPtr(hdrState)), stateLeft)
}

// AnyLeft reports whether a node peer left the job (Leave): it will never
// join the bootstrap's barrier or finalize.
func (r *Runtime) AnyLeft() bool {
	for pe := 0; pe < r.NPEs; pe++ {
		if pe != r.Me && r.heap.bases[pe] != nil &&
			atomic.LoadUint64((*uint64)(unsafe.Add(r.heap.bases[pe], hdrState))) == stateLeft {
			return true
		}
	}
	return false
}

// NotFinalizing lists the node peers that have not entered Finalize (-1
// entries never: only PEs whose header this PE can read are listed;
// unreadable ones are in unknown).
func (r *Runtime) NotFinalizing() (missing, unknown []int) {
	for pe := 0; pe < r.NPEs; pe++ {
		if pe == r.Me {
			continue
		}
		if r.heap.bases[pe] == nil {
			unknown = append(unknown, pe)
			continue
		}
		if st := atomic.LoadUint64((*uint64)(unsafe.Add(r.heap.bases[pe], hdrState))); st == stateRunning {
			missing = append(missing, pe)
		}
	}
	return missing, unknown
}

// CheckPeers runs on the slow path of every wait: a node peer whose
// process is gone without finalizing will never answer, so the wait ends
// with an error naming it instead of hanging; a peer that has finished
// Finalize will not answer a collective either.
func (r *Runtime) CheckPeers() error {
	for pe := 0; pe < r.NPEs; pe++ {
		if pe == r.Me || r.heap.bases[pe] == nil {
			continue
		}
		st := atomic.LoadUint64((*uint64)(unsafe.Add(r.heap.bases[pe], hdrState)))
		if st == stateFinalized {
			continue
		}
		if st == stateLeft {
			return errs.New(errs.ErrTimeout, r.Me, "wait",
				"PE %d (pid %d) left: its context was done and it finalized alone; it will never answer", pe, r.pids[pe])
		}
		if err := syscall.Kill(r.pids[pe], 0); err == syscall.ESRCH {
			return errs.New(errs.ErrTimeout, r.Me, "wait",
				"PE %d (pid %d) exited without calling Finalize; it will never answer", pe, r.pids[pe])
		}
	}
	return nil
}

// CheckPeersInCollective is CheckPeers for a wait inside a collective: a
// peer that has finalized (or entered Finalize while this PE waits in
// another collective) will never answer it either.
func (r *Runtime) CheckPeersInCollective(from int) error {
	if from >= 0 && from < r.NPEs && from != r.Me && r.heap.bases[from] != nil {
		switch atomic.LoadUint64((*uint64)(unsafe.Add(r.heap.bases[from], hdrState))) {
		case stateFinalized:
			return errs.Hint(errs.ErrNotSymmetric, "every PE must call the same collectives in the same order before Finalize",
				r.Me, "wait", "PE %d has finalized; it will never answer this collective", from)
		}
	}
	return r.CheckPeers()
}

// Fence orders q's operations on every transport (shmem_fence).
func (r *Runtime) Fence(q *quiet.Queue) error {
	if r.ofi != nil {
		if err := r.ofi.Fence(q); err != nil {
			return err
		}
	}
	return r.shm.Fence(q)
}

// StoreLoadBarrier is the shm transport's quiet: a full barrier, so this
// PE's later loads do not pass its stores (shmem_quiet on load/store).
func (r *Runtime) StoreLoadBarrier() { r.shm.Quiet() }

// NewQueue makes a context's completion queue: on ofi its own endpoint
// and completion queue (its quiet reads its own acknowledgements, and the
// primary endpoint, where the peers' operations arrive, is left to the
// progress thread and to the spinning waits). The first call returns the
// default context's queue, made in the host transports phase (so a
// failure to make it is agreed there, like any other).
func (r *Runtime) NewQueue(name string) (*quiet.Queue, error) {
	if q := r.firstQ; q != nil {
		r.firstQ = nil
		return q, nil
	}
	if r.ofi != nil {
		return r.ofi.NewQueue(name)
	}
	return quiet.NewQueue(name, nil), nil
}

// CloseQueue releases a context's queue.
func (r *Runtime) CloseQueue(q *quiet.Queue) {
	if r.ofi != nil {
		r.ofi.CloseQueue(q)
	}
}

// OFIStats is the ofi transport's ProgressStats (ok: ofi is in use).
func (r *Runtime) OFIStats() (defers, rounds, kicks uint64, ok bool) {
	if r.ofi == nil {
		return 0, 0, 0, false
	}
	defers, rounds, kicks = r.ofi.ProgressStats()
	return defers, rounds, kicks, true
}

// OFISpinning reports whether a wait's claim on the ofi endpoint is held.
func (r *Runtime) OFISpinning() bool { return r.ofi != nil && r.ofi.Spinning() }

// WaitLooks is the state of a wait loop that waits for data from the
// peers as it drives the ofi transport: see SpinLook.
type WaitLooks struct {
	n       int   // looks so far
	last    int64 // end of the previous look (monotonic ns)
	claimed bool  // this wait holds the ofi claim
	off     int   // looks left without a claim after the thread was off its CPU
}

const (
	// spinPolls: looks of a wait that poll ofi back to back before each
	// look also yields the CPU (sched_yield). A look that polls costs
	// microseconds, not a load's nanoseconds: the policy's spin phase
	// would otherwise keep the CPU for a long time, starving a PE it
	// shares the CPU with (the one it may be waiting for).
	spinPolls = 64
	// offCPU: a gap this long between two looks means the thread lost its
	// CPU to another PE or process (a yield ran it for a time slice, or it
	// was preempted): the wait then releases its claim and does not claim
	// again for offCPULooks looks, so the progress thread, not a thread
	// waiting for a CPU, serves the endpoint. Its own progress thread,
	// which a yield lets run for a few microseconds, must not trip it.
	offCPU      = 500 * time.Microsecond
	offCPULooks = 64
)

// SpinLook drives the ofi transport (manual progress) for one look of a
// wait loop that waits for data from the peers: a put to this PE lands,
// and the peer's delivery-complete quiet returns, only once this process
// calls into the provider. While the wait spins on a CPU of its own the
// waiting thread polls the primary endpoint itself and claims it (ofi
// SpinProgress): what arrives lands at once, with no progress-thread
// wake-up per message. The claim ends (ofi EndSpin) when the wait stops
// spinning, loses its CPU or returns (EndSpin); the progress thread then
// drives the endpoint again. Past spinPolls looks each look also yields.
func (r *Runtime) SpinLook(w *WaitLooks) {
	if r.ofi == nil {
		return
	}
	w.n++
	if w.n > 1 && monotonic()-w.last > int64(offCPU) {
		w.off = offCPULooks
	}
	if w.off > 0 {
		w.off--
	}
	if w.off == 0 && w.n <= r.claim {
		r.ofi.SpinProgress()
		w.claimed = true
	} else {
		if w.claimed {
			r.ofi.EndSpin()
			w.claimed = false
		}
		r.ofi.Progress()
	}
	w.last = monotonic()
	if w.n > spinPolls && w.n <= r.Policy.Spins {
		spin.Yield()
	}
}

// EndSpin ends the claim of a wait loop that returned.
func (r *Runtime) EndSpin(w *WaitLooks) {
	if w.claimed {
		r.ofi.EndSpin()
		w.claimed = false
	}
}

var monoBase = time.Now()

// monotonic is the monotonic clock in nanoseconds.
func monotonic() int64 { return int64(time.Since(monoBase)) }

// Info logs the GOSHMEM_INFO lines to lg: this PE's choices first (every
// backend's lines, each naming the PE), then (PE 0) the job and every
// setting. Records carry the attributes pe and backend (or setting).
// Without a *slog.Logger each line is its own write: under mpirun a PE's
// output reaches the terminal in the chunks mpirun reads, and a long
// write can be cut mid-line.
func (r *Runtime) Info(lg *logx.Logger) {
	pe := logx.PE(r.Me)
	for _, be := range r.backends {
		for _, l := range be.Info() {
			lg.Info("goshmem: info: "+l+"\n", l, pe, slog.String("backend", be.Name()))
		}
	}
	names := make([]string, 0, len(r.declined))
	for n := range r.declined {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		lg.Info(fmt.Sprintf("goshmem: info: PE %d: %s off: %v\n", r.Me, n, r.declined[n]), "backend off",
			pe, slog.String("backend", n), slog.Any("reason", r.declined[n]))
	}
	if r.Me == 0 {
		job := fmt.Sprintf("%d PEs, bootstrap %s, symmetric region %d bytes per PE (%d for the user heap, %d for %d team slots), %d cores for this node's PEs; %d bootstrap exchanges at Init",
			r.NPEs, r.Boot.Name(), r.RegionSize(), r.HeapLen, r.Teams.Size(), r.Teams.MaxTeams, r.cpus, r.exchanges)
		lg.Info("goshmem: info: "+job+"\n", job, pe, slog.Int("npes", r.NPEs), slog.String("bootstrap", r.Boot.Name()))
		wait := fmt.Sprintf("wait policy: spin %d, yield %d, then sleep up to %v; timeout %v",
			r.Policy.Spins, r.Policy.Yields, r.Policy.MaxSleep, r.Policy.Timeout)
		lg.Info("goshmem: info: "+wait+"\n", wait, pe)
		r.Settings.Log(lg, r.Me)
		bootInfo(lg, r.Me, r.Boot, r.Settings.String("GOSHMEM_BOOTSTRAP"))
	}
}

// cpuMaskBytes is the affinity mask exchanged at Init (1024 CPUs).
const cpuMaskBytes = 128

// cpuMask is this process's CPU affinity as a little-endian bitmap; on
// failure it claims every CPU runtime.NumCPU reports.
func cpuMask() []byte {
	m := make([]byte, cpuMaskBytes)
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err == nil {
		for c := 0; c < cpuMaskBytes*8; c++ {
			if set.IsSet(c) {
				m[c/8] |= 1 << (c % 8)
			}
		}
		return m
	}
	for c := 0; c < goruntime.NumCPU() && c < cpuMaskBytes*8; c++ {
		m[c/8] |= 1 << (c % 8)
	}
	return m
}

func popcount(b []byte) int {
	n := 0
	for _, x := range b {
		n += bits.OnesCount8(x)
	}
	return n
}

var mpiUsed atomic.Bool

// CheckBootstrap reports whether name is a GOSHMEM_BOOTSTRAP value that
// fits how the process was started.
func CheckBootstrap(name string) error {
	switch name {
	case "auto", "mpi", "tcp":
		return nil
	case "single":
		// A 1-PE job inside a launched job of several ranks would leave
		// the others waiting for this one.
		if n := mpiboot.LauncherSize(); n > 1 {
			return errs.Hint(errs.ErrInvalidArgument, "unset GOSHMEM_BOOTSTRAP (auto) or set it alike on every rank",
				-1, "Init", "GOSHMEM_BOOTSTRAP=single in a job of %d ranks started by a launcher", n)
		}
		return nil
	}
	return errs.New(errs.ErrInvalidArgument, -1, "Init", "GOSHMEM_BOOTSTRAP=%q; want auto, mpi, tcp or single", name)
}

// ChooseBootstrap picks the bootstrap for GOSHMEM_BOOTSTRAP: auto (MPI
// under an MPI launcher, tcp when its variables are set, else a 1-PE
// job), mpi, tcp, or single.
func ChooseBootstrap(name string) (bootstrap.Bootstrap, error) {
	if err := CheckBootstrap(name); err != nil {
		return nil, err
	}
	useMPI := false
	switch name {
	case "auto":
		useMPI = mpiboot.UnderLauncher()
		if ok, why := tcpboot.Configured(nil); ok && !useMPI {
			return newTCPBootstrap("GOSHMEM_BOOTSTRAP=auto, no MPI launcher, and " + why)
		}
	case "tcp":
		return newTCPBootstrap("GOSHMEM_BOOTSTRAP=tcp")
	case "mpi":
		useMPI = true
	}
	if !useMPI {
		job, err := local.NewJob(1, local.ExitOnAbort())
		if err != nil {
			return nil, err
		}
		return job[0], nil
	}
	if mpiUsed.Load() {
		return nil, errs.Hint(errs.ErrNotSupported, "MPI cannot be initialized twice in one process: call Init once per run",
			-1, "Init", "Init after Finalize under MPI")
	}
	b, err := mpiboot.New()
	if err != nil {
		return nil, errs.Wrap(err, -1, "Init", "MPI bootstrap")
	}
	mpiUsed.Store(true)
	return b, nil
}

// NativeCalls reports whether a backend that host data calls (RMA,
// atomics, quiet) may reach holds native resources that Close releases:
// libfabric (ofi, CXI) or the CUDA driver (the GPU heap and its remote
// paths). Without one, those calls touch only Go state and the heap
// mappings, which Close retires rather than unmaps.
func (r *Runtime) NativeCalls() bool {
	return r.ofi != nil || r.GPU != nil || r.proxy != nil || r.softNIC != nil || r.mlx5 != nil || r.cxi != nil
}

// SetDeviceTeam publishes a team (its slot) in the device team table and
// restarts the slot's on-stream sync epochs (StreamSync); nothing without
// a GPU heap.
func (r *Runtime) SetDeviceTeam(slot, start, stride, size, myIndex int) error {
	if r.GPU == nil {
		return nil
	}
	if err := r.GPU.SetTeam(slot, cudatr.Team{Start: int32(start), Stride: int32(stride),
		Size: int32(size), MyIndex: int32(myIndex), Slot: int32(slot)}); err != nil {
		return errs.Wrap(err, r.Me, "SetDeviceTeam", "team slot %d", slot)
	}
	r.resetStreamSync(slot)
	return nil
}

// ClearDeviceTeam marks row slot of the device team table unused again
// (a destroyed team's; kernels naming it then trap) and restarts the
// slot's on-stream sync epochs; nothing without a GPU heap.
func (r *Runtime) ClearDeviceTeam(slot int) error {
	if r.GPU == nil {
		return nil
	}
	if err := r.GPU.SetTeam(slot, cudatr.InitialTeam(slot, r.NPEs, r.Me)); err != nil {
		return errs.Wrap(err, r.Me, "Team.Destroy", "team slot %d", slot)
	}
	r.resetStreamSync(slot)
	return nil
}

// GPUControlBytes is the front of every PE's GPU heap that the runtime
// keeps (the device team slots, cudatr.ControlBytes of GOSHMEM_MAX_TEAMS;
// 0 without a GPU heap): GAlloc's offsets start there.
func (r *Runtime) GPUControlBytes() uint64 {
	if r.GPU == nil {
		return 0
	}
	return r.GPU.ControlBytes()
}

// BootBarrier is the bootstrap's barrier bounded by GOSHMEM_TIMEOUT (the
// bootstrap's own barrier has no bound: past the timeout the call is left
// behind and ErrTimeout returned; the job is then to end).
func (r *Runtime) BootBarrier(op string) error {
	return r.bounded(op, "barrier", r.Boot.Barrier)
}

// BootFinalize is the bootstrap's Finalize bounded by GOSHMEM_TIMEOUT:
// MPI_Finalize is collective, and a PE that ended without it (after its
// own Finalize timed out) would leave this one in it forever.
func (r *Runtime) BootFinalize(op string) error {
	return r.bounded(op, "finalize", r.Boot.Finalize)
}

// bounded runs a bootstrap call under GOSHMEM_TIMEOUT (none without one).
func (r *Runtime) bounded(op, what string, call func() error) error {
	if r.Policy.Timeout <= 0 {
		return call()
	}
	done := make(chan error, 1)
	go func() { done <- call() }()
	t := time.NewTimer(r.Policy.Timeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return errs.Hint(errs.ErrTimeout, "every PE must call Finalize; exit non-zero to end the job", r.Me, op,
			"the bootstrap's %s did not complete within GOSHMEM_TIMEOUT=%v: a PE has not reached it", what, r.Policy.Timeout)
	}
}
