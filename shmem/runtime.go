package shmem

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"io"
	"math/bits"
	"os"
	goruntime "runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/collectives"
	"github.com/goshmem/goshmem/cxi"
	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/bootstrap/local"
	mpiboot "github.com/goshmem/goshmem/internal/bootstrap/mpi"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/internal/transport"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
	"github.com/goshmem/goshmem/internal/transport/ofi"
	"github.com/goshmem/goshmem/internal/transport/proxy"
	"github.com/goshmem/goshmem/internal/transport/shm"
	"github.com/goshmem/goshmem/quiet"
	"github.com/goshmem/goshmem/symmetric"
)

// Region layout: [0, collectives.ControlSize) psync and scratch words;
// [headerOff, heapOff) this PE's header (liveness); [heapOff, size) the
// user heap managed by the allocator.
const (
	headerOff = collectives.ControlSize
	heapOff   = (headerOff + 4096 + 4095) &^ 4095
	// header words
	hdrPID   = headerOff
	hdrState = headerOff + 64

	stateRunning   = 1
	stateFinalized = 2

	heapAlign = 64
)

// The one runtime singleton. Hot paths read it with one atomic load.
var (
	current atomic.Pointer[runtime]
	// lifecycle serializes Init and Finalize.
	lifecycle sync.Mutex
	// generation numbers each Init, so arrays of an earlier Init are rejected.
	generation atomic.Uint64
)

type runtime struct {
	boot     bootstrap.Bootstrap
	me, npes int
	node     []int
	settings env.Settings
	policy   spin.Policy
	debug    bool
	gen      uint64

	regions []*symmetric.Region // own at [me]; node peers mapped; nil otherwise
	bases   []unsafe.Pointer
	pids    []int
	heapLen uint64
	alloc   *symmetric.Allocator

	shm *shm.Transport
	ofi *ofi.Transport        // nil unless some peer is reached over libfabric
	tr  []transport.Transport // per peer
	// progress drives the transports with manual progress (ofi) while a
	// quiet waits; nil when every peer is on shm. Wait loops drive ofi
	// through spinLook.
	progress func()

	gpu    *cudatr.Transport    // nil without a GPU heap
	gpuErr error                // why gpu is nil (ErrNotSupported)
	ibgda  string               // GOSHMEM_GPU_TRANSPORT=ibgda: what serves it (for GOSHMEM_INFO), else ""
	galloc *symmetric.Allocator // the GPU heap's allocator
	proxy  *proxy.Proxy         // GPU proxy workers; nil unless some peer's GPU heap is reached through them
	// proxyFarPEs: the proxy peers served by its ofi backend (nil: none)
	proxyCUDA   proxy.CUDAOptions // the CUDA backend's options (GOSHMEM_INFO)
	proxyFarPEs []bool
	// softNIC: GOSHMEM_IBGDA_NIC=soft on a GPU: the emulated NIC serving
	// the device API's IBGDA path (ibgda_soft.go); nil otherwise.
	softNIC *softIBGDA
	// mlx5: GOSHMEM_IBGDA_NIC=mlx5 on a GPU: the ConnectX setup
	// (ibgda_mlx5.go); nil otherwise.
	mlx5 *mlx5IBGDA

	streamOnce sync.Once
	stream     *Stream // default launch stream
	streamErr  error
	lastKernel atomic.Pointer[string] // last kernel launched, for fault messages

	cxi *cxiRT // the CXI triggered path (WithCXI), nil otherwise

	all  *quiet.Scope // every queue: PE-wide Quiet
	dflt *Ctx

	// coll serializes this PE's collectives (heap, teams, data collectives):
	// they share the team epochs and scratch words.
	coll    sync.Mutex
	world   *collectives.Team
	teamsMu sync.RWMutex
	teams   map[int32]*collectives.Team
	nextTID int32
	collSeq uint64

	ctxMu  sync.Mutex
	nextID int

	cpus int // cores the node's PEs may run on, together
	// claimLooks: the looks of a wait loop that claim the ofi endpoint
	// (spinLook).
	claimLooks int
}

// Option configures Init. Options override the environment.
type Option func(*config)

type config struct {
	heapSize uint64
	timeout  time.Duration
	debug    *bool
	boot     bootstrap.Bootstrap
	cxi      *cxi.Config
}

// WithSymmetricSize sets the bytes of symmetric heap per PE (overrides
// GOSHMEM_SYMMETRIC_SIZE). Every PE must pass the same size.
func WithSymmetricSize(bytes uint64) Option { return func(c *config) { c.heapSize = bytes } }

// WithTimeout sets the watchdog (overrides GOSHMEM_TIMEOUT): a wait, quiet or
// barrier longer than d fails with ErrTimeout. 0 turns it off.
func WithTimeout(d time.Duration) Option { return func(c *config) { c.timeout = d } }

// WithDebug turns debug checks on or off (overrides GOSHMEM_DEBUG).
func WithDebug(on bool) Option { return func(c *config) { c.debug = &on } }

// WithBootstrap runs on the given bootstrap instead of choosing one (used by
// goshmem's own tests and tools).
func WithBootstrap(b bootstrap.Bootstrap) Option { return func(c *config) { c.boot = b } }

// Init starts goshmem on this PE. Under mpirun (or another PMI launcher)
// it bootstraps over MPI; a program started alone is a 1-PE job. Init is
// collective: every PE of the job calls it. It maps the symmetric heap of
// every PE on this node, chooses a transport for every peer, and ends with
// a barrier. Calling Init again before Finalize is an error.
func Init(opts ...Option) error {
	lifecycle.Lock()
	defer lifecycle.Unlock()
	if r := current.Load(); r != nil {
		return errs.Hint(errs.ErrInvalidArgument, "call Finalize before initializing again",
			r.me, "Init", "goshmem is already initialized")
	}
	var cfg config
	for _, o := range opts {
		o(&cfg)
	}
	settings, err := env.Read(nil)
	if err != nil {
		return markErr(err, errs.ErrInvalidArgument)
	}
	boot := cfg.boot
	if boot == nil {
		if boot, err = chooseBootstrap(settings.String("GOSHMEM_BOOTSTRAP")); err != nil {
			return err
		}
	}
	r, err := newRuntime(boot, settings, cfg)
	if err != nil {
		if cfg.boot == nil {
			_ = boot.Finalize()
		}
		return err
	}
	current.Store(r)
	if settings.Bool("GOSHMEM_INFO") {
		r.printInfo(os.Stderr)
	}
	return nil
}

var mpiUsed atomic.Bool

func chooseBootstrap(name string) (bootstrap.Bootstrap, error) {
	useMPI := false
	switch name {
	case "auto":
		useMPI = mpiboot.UnderLauncher()
	case "mpi":
		useMPI = true
	case "single":
	default:
		return nil, errs.New(errs.ErrInvalidArgument, -1, "Init", "GOSHMEM_BOOTSTRAP=%q; want auto, mpi or single", name)
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
		return nil, errors.Wrap(err, "goshmem: Init: MPI bootstrap")
	}
	mpiUsed.Store(true)
	return b, nil
}

func newRuntime(boot bootstrap.Bootstrap, settings env.Settings, cfg config) (*runtime, error) {
	r := &runtime{
		boot:     boot,
		me:       boot.Rank(),
		npes:     boot.Size(),
		node:     boot.Node(),
		settings: settings,
		gen:      generation.Add(1),
		teams:    map[int32]*collectives.Team{},
		nextTID:  2,
	}
	heap := settings.Size("GOSHMEM_SYMMETRIC_SIZE")
	if cfg.heapSize != 0 {
		heap = cfg.heapSize
	}
	heap = (heap + 4095) &^ 4095
	timeout := settings.Duration("GOSHMEM_TIMEOUT")
	if cfg.timeout != 0 {
		timeout = cfg.timeout
	}
	r.debug = settings.Bool("GOSHMEM_DEBUG")
	if cfg.debug != nil {
		r.debug = *cfg.debug
	}

	// Agree on the heap size and learn every PE's pid (for liveness checks).
	// Each PE also sends the CPUs it may run on, so the wait policy can
	// tell whether the node's PEs have a core each (spin) or share cores
	// (yield early). runtime.NumCPU alone counts only this process's
	// affinity: 1 under mpirun's default per-core binding.
	const rec = 16 + cpuMaskBytes
	var mine [rec]byte
	binary.LittleEndian.PutUint64(mine[0:], heap)
	binary.LittleEndian.PutUint64(mine[8:], uint64(os.Getpid()))
	copy(mine[16:], cpuMask())
	all, err := boot.Allgather(mine[:])
	if err != nil {
		return nil, errors.Wrap(err, "goshmem: Init: exchanging heap sizes")
	}
	r.pids = make([]int, r.npes)
	for pe := 0; pe < r.npes; pe++ {
		h := binary.LittleEndian.Uint64(all[rec*pe:])
		r.pids[pe] = int(binary.LittleEndian.Uint64(all[rec*pe+8:]))
		if h != heap {
			return nil, errs.Hint(errs.ErrNotSymmetric, "set the same GOSHMEM_SYMMETRIC_SIZE on every PE",
				r.me, "Init", "symmetric heap size %d bytes here, %d bytes on PE %d", heap, h, pe)
		}
	}
	// The front of the region holds the control area and the header: a
	// smaller heap would put them (and the allocator's range) outside the
	// mapping. Every PE agreed on heap above, so every PE fails alike.
	if heap <= heapOff {
		return nil, errs.Hint(errs.ErrInvalidArgument, fmt.Sprintf("set GOSHMEM_SYMMETRIC_SIZE above %d bytes", heapOff),
			r.me, "Init", "symmetric heap of %d bytes leaves no room for the user heap: goshmem reserves the first %d bytes", heap, heapOff)
	}
	var union [cpuMaskBytes]byte
	localSize := 0
	for pe := 0; pe < r.npes; pe++ {
		if r.node[pe] != r.node[r.me] {
			continue
		}
		localSize++
		for i, b := range all[rec*pe+16 : rec*(pe+1)] {
			union[i] |= b
		}
	}
	r.cpus = popcount(union[:])
	r.policy = spin.For(localSize, r.cpus, timeout)
	// A wait claims the ofi endpoint while it spins on a CPU of its own:
	// the spin phase, and the yield phase too when every PE of the node has
	// a CPU of its own (sched_yield then returns at once); see spinLook.
	r.claimLooks = r.policy.Spins
	if localSize <= r.cpus {
		r.claimLooks += r.policy.Yields
	}

	// A job-unique name prefix for the regions, chosen by PE 0.
	var jobID [48]byte
	if r.me == 0 {
		var rnd [8]byte
		_, _ = rand.Read(rnd[:])
		copy(jobID[:], fmt.Sprintf("goshmem-%d-%s", os.Getpid(), hex.EncodeToString(rnd[:])))
	}
	if err := boot.Bcast(jobID[:], 0); err != nil {
		return nil, errors.Wrap(err, "goshmem: Init: broadcasting the job id")
	}
	job := strings.TrimRight(string(jobID[:]), "\x00")

	if err := r.mapHeaps(job, heap); err != nil {
		r.unmap()
		return nil, err
	}
	r.heapLen = heap - heapOff
	if r.alloc, err = symmetric.NewAllocator(r.heapLen, heapAlign); err != nil {
		r.unmap()
		return nil, errors.Wrap(err, "goshmem: Init")
	}
	if r.debug {
		r.alloc.SetQuarantine(true)
	}

	if err := r.chooseTransports(settings.String("GOSHMEM_TRANSPORT")); err != nil {
		r.unmap()
		return nil, err
	}
	r.all = quiet.NewScope("PE-wide quiet")
	if r.dflt, err = r.newCtx("default context"); err != nil {
		r.unmap()
		return nil, err
	}
	r.world = collectives.World(r)
	r.teams[1] = r.world

	binary.LittleEndian.PutUint64(r.local(hdrPID, 8), uint64(os.Getpid()))
	atomic.StoreUint64((*uint64)(r.localPtr(hdrState)), stateRunning)
	if err := r.openGPU(); err != nil {
		r.unmap()
		return nil, err
	}
	if err := r.openIBGDA(); err != nil {
		r.unmap()
		return nil, err
	}
	if err := r.openCXI(cfg.cxi); err != nil {
		r.unmap()
		return nil, err
	}
	if err := r.world.Sync(r); err != nil {
		r.unmap()
		return nil, errors.Wrap(err, "goshmem: Init: first barrier")
	}
	return r, nil
}

// mapHeaps creates this PE's region, then maps every same-node peer's.
func (r *runtime) mapHeaps(job string, heap uint64) error {
	r.regions = make([]*symmetric.Region, r.npes)
	r.bases = make([]unsafe.Pointer, r.npes)
	name := func(pe int) string { return fmt.Sprintf("%s-%d", job, pe) }
	reg, err := symmetric.CreateRegion(name(r.me), heap)
	if err != nil {
		return errors.Wrapf(markErr(err, errs.ErrHeapExhausted), "goshmem: PE %d: Init: symmetric heap of %d bytes", r.me, heap)
	}
	r.regions[r.me] = reg
	var openErr error
	if err := r.boot.Barrier(); err != nil {
		return errors.Wrap(err, "goshmem: Init")
	}
	for pe := 0; pe < r.npes; pe++ {
		if pe == r.me || r.node[pe] != r.node[r.me] {
			continue
		}
		if r.regions[pe], err = symmetric.OpenRegion(name(pe), heap); err != nil && openErr == nil {
			openErr = errors.Wrapf(err, "goshmem: PE %d: Init: mapping the heap of PE %d", r.me, pe)
		}
	}
	// Everyone has mapped everyone: the names can go, so nothing is left in
	// /dev/shm even if the job is killed later.
	if err := r.boot.Barrier(); err != nil {
		return errors.Wrap(err, "goshmem: Init")
	}
	_ = reg.Unlink()
	if openErr != nil {
		return openErr
	}
	for pe, rg := range r.regions {
		if rg != nil {
			r.bases[pe] = unsafe.Pointer(unsafe.SliceData(rg.Bytes()))
		}
	}
	return nil
}

// chooseTransports picks a transport per peer (like NVSHMEM's
// can_reach_peer): shm for the PEs of this node, ofi for the others;
// GOSHMEM_TRANSPORT=ofi sends every peer, this PE included, over ofi (how
// the ofi path is tested on one machine). Every PE reaches the same
// decision (the node map and the environment are the same everywhere), so
// the ofi setup, which is collective, runs on all PEs or on none.
func (r *runtime) chooseTransports(want string) error {
	switch want {
	case "auto", "shm", "ofi":
	default:
		return errs.Hint(errs.ErrNotSupported, "use GOSHMEM_TRANSPORT=auto, shm or ofi",
			r.me, "Init", "GOSHMEM_TRANSPORT=%q is not a transport", want)
	}
	r.shm = shm.New(r.bases)
	r.tr = make([]transport.Transport, r.npes)
	needOFI := want == "ofi"
	for pe := range r.tr {
		if r.bases[pe] == nil {
			if want == "shm" {
				return errs.Hint(errs.ErrNotSupported, "use GOSHMEM_TRANSPORT=auto (ofi across nodes) or run every PE on one node",
					r.me, "Init", "PE %d is on another node (node %d, this PE is on node %d) and GOSHMEM_TRANSPORT=shm",
					pe, r.node[pe], r.node[r.me])
			}
			needOFI = true
		}
		r.tr[pe] = r.shm
	}
	if !needOFI {
		return nil
	}
	own := r.regions[r.me].Bytes()
	reach := make([]bool, r.npes)
	for pe := range reach {
		reach[pe] = pe != r.me && (want == "ofi" || r.bases[pe] == nil)
	}
	t, err := ofi.New(ofi.Config{
		Reach:     reach,
		Provider:  r.settings.String("GOSHMEM_OFI_PROVIDER"),
		Me:        r.me,
		NPEs:      r.npes,
		Region:    unsafe.Pointer(unsafe.SliceData(own)),
		RegionLen: uint64(len(own)),
		Local:     r.bases,
		Allgather: r.boot.Allgather,
		Timeout:   r.policy.Timeout,
		Check:     r.checkPeers,
	})
	if err != nil {
		return errors.Wrap(err, "goshmem: Init: ofi transport")
	}
	r.ofi = t
	r.progress = t.Progress
	for pe := range r.tr {
		if want == "ofi" || r.bases[pe] == nil {
			r.tr[pe] = t
		}
	}
	return nil
}

// fence orders q's operations on every transport (shmem_fence).
func (r *runtime) fence(q *quiet.Queue) error {
	if r.ofi != nil {
		if err := r.ofi.Fence(q); err != nil {
			return err
		}
	}
	return r.shm.Fence(q)
}

func (r *runtime) unmap() {
	if r.proxy != nil {
		_ = r.proxy.Close() // before the GPU context its streams belong to, and the ofi transport its ofi backend uses
		if r.settings.Bool("GOSHMEM_INFO") {
			for _, l := range strings.Split(strings.TrimSpace(r.proxy.Stats()), "\n") {
				fmt.Fprintf(os.Stderr, "goshmem: info: PE %d: %s\n", r.me, l)
			}
		}
		r.proxy = nil
	}
	r.closeCXI() // before the GPU context its region is mapped into
	if r.ofi != nil {
		_ = r.ofi.Close() // before the heap it registered is unmapped
		r.ofi = nil
	}
	if r.softNIC != nil {
		_ = r.softNIC.close() // before the GPU transport it copies through
		r.softNIC = nil
	}
	if r.mlx5 != nil {
		_ = r.mlx5.close() // before the GPU context its queue and UAR pages are registered with
		r.mlx5 = nil
	}
	if r.gpu != nil {
		_ = r.gpu.Close()
		r.gpu = nil
	}
	for i, rg := range r.regions {
		if rg != nil {
			_ = rg.Close()
			r.regions[i] = nil
		}
	}
}

func (r *runtime) local(off uint64, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(r.bases[r.me], off)), n)
}

func (r *runtime) localPtr(off uint64) unsafe.Pointer { return unsafe.Add(r.bases[r.me], off) }

// Finalize ends goshmem on this PE. It is collective: it completes every
// outstanding operation (Quiet), waits for every PE (barrier), unmaps the
// heap and releases the bootstrap. Arrays are unusable afterwards; every
// call but Init returns ErrNotInitialized.
func Finalize() error {
	lifecycle.Lock()
	defer lifecycle.Unlock()
	r := current.Load()
	if r == nil {
		return errs.Hint(errs.ErrNotInitialized, "call shmem.Init first", -1, "Finalize", "goshmem is not initialized")
	}
	var errList []error
	if err := r.all.Quiet(r.policy, r.checkPeers); err != nil {
		errList = append(errList, err)
	}
	r.coll.Lock()
	if err := r.world.Barrier(r); err != nil {
		errList = append(errList, errors.Wrap(err, "goshmem: Finalize: barrier"))
	}
	r.coll.Unlock()
	r.stopCXI()
	atomic.StoreUint64((*uint64)(r.localPtr(hdrState)), stateFinalized)
	// The bootstrap barrier keeps every PE's mapping alive until all are
	// past their last access (a peer may still read our barrier word).
	if err := r.boot.Barrier(); err != nil {
		errList = append(errList, err)
	}
	current.Store(nil)
	r.unmap()
	if err := r.boot.Finalize(); err != nil {
		errList = append(errList, err)
	}
	return errors.Join(errList...)
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
	if r := current.Load(); r != nil {
		r.boot.Abort(code, msg)
	}
	fmt.Fprintf(os.Stderr, "goshmem: %s\n", msg)
	os.Exit(code)
}

// rt returns the runtime or ErrNotInitialized naming op.
func rt(op string) (*runtime, error) {
	if r := current.Load(); r != nil {
		return r, nil
	}
	return nil, errs.Hint(errs.ErrNotInitialized, "call shmem.Init first (and not after Finalize)", -1, op, "goshmem is not initialized")
}

// checkPeers runs on the slow path of every wait: a node peer whose process
// is gone without finalizing will never answer, so the wait ends with an
// error naming it instead of hanging.
func (r *runtime) checkPeers() error {
	for pe := 0; pe < r.npes; pe++ {
		if pe == r.me || r.bases[pe] == nil {
			continue
		}
		st := atomic.LoadUint64((*uint64)(unsafe.Add(r.bases[pe], hdrState)))
		if st == stateFinalized {
			continue
		}
		if err := syscall.Kill(r.pids[pe], 0); err == syscall.ESRCH {
			return errs.New(errs.ErrTimeout, r.me, "wait",
				"PE %d (pid %d) exited without calling Finalize; it will never answer", pe, r.pids[pe])
		}
	}
	return nil
}

// printInfo writes the GOSHMEM_INFO lines: this PE's choices first, then
// (PE 0) the job and every setting. Each line is its own write: under
// mpirun a PE's output reaches the terminal in the chunks mpirun reads, and
// one 4 KiB+ write was cut mid-line with another PE's line in between.
func (r *runtime) printInfo(w io.Writer) {
	var b strings.Builder
	byName := map[string][]int{}
	for pe, t := range r.tr {
		byName[t.Name()] = append(byName[t.Name()], pe)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(&b, "goshmem: info: PE %d (node %d): transport %s to PEs %v\n", r.me, r.node[r.me], n, byName[n])
	}
	if r.ibgda != "" {
		fmt.Fprintf(&b, "goshmem: info: PE %d: GPU transport ibgda: %s\n", r.me, r.ibgda)
	}
	if r.ofi != nil && r.me == 0 {
		fmt.Fprintf(&b, "goshmem: info: %s\n", r.ofi.Describe())
	}
	b.WriteString(r.gpuInfo())
	if r.me == 0 {
		fmt.Fprintf(&b, "goshmem: info: %d PEs, bootstrap %s, symmetric heap %d bytes per PE (%d for the user), %d cores for this node's PEs\n",
			r.npes, r.boot.Name(), r.heapLen+heapOff, r.heapLen, r.cpus)
		fmt.Fprintf(&b, "goshmem: info: wait policy: spin %d, yield %d, then sleep up to %v; timeout %v\n",
			r.policy.Spins, r.policy.Yields, r.policy.MaxSleep, r.policy.Timeout)
		r.settings.Print(&b)
	}
	for _, line := range strings.SplitAfter(b.String(), "\n") {
		if line != "" {
			_, _ = io.WriteString(w, line)
		}
	}
}

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

// Word implements collectives.Direct: pe's word at off when pe is reached
// over shared memory (not over ofi), else nil.
func (r *runtime) Word(pe int, off uint64) *uint64 {
	if pe < 0 || pe >= len(r.tr) || r.tr[pe] != transport.Transport(r.shm) {
		return nil
	}
	return (*uint64)(r.shm.Ptr(pe, off))
}

// waitLooks is the state of a wait loop that waits for data from the peers
// (WaitGE, waitFor) as it drives the ofi transport: see spinLook.
type waitLooks struct {
	n       int   // looks so far
	last    int64 // end of the previous look (monotonic ns)
	claimed bool  // this wait holds the ofi claim
	off     int   // looks left without a claim after the thread was off its CPU
}

const (
	// spinPolls: looks of a wait that poll ofi back to back before each
	// look also yields the CPU (sched_yield). A look that polls costs 2-4
	// us here, not a load's nanoseconds: the policy's spin phase would
	// otherwise keep the CPU for a quarter of a second, starving a PE it
	// shares the CPU with (the one it may be waiting for).
	spinPolls = 64
	// offCPU: a gap this long between two looks means the thread lost its
	// CPU to another PE or process (a yield ran it for a time slice, or it
	// was preempted): the wait then releases its claim and does not claim
	// again for offCPULooks looks, so the progress thread, not a thread
	// waiting for a CPU, serves the endpoint (on a CPU shared with other
	// PEs every yield is such a gap, and the wait never claims). Its own
	// progress thread, which a yield lets run for a few microseconds (to go
	// to sleep after a claim), must not trip it.
	offCPU      = 500 * time.Microsecond
	offCPULooks = 64
)

// spinLook drives the ofi transport (manual progress) for one look of a
// wait loop that waits for data from the peers: a put to this PE lands, and
// the peer's delivery-complete quiet returns, only once this process calls
// into the provider. While the wait spins on a CPU of its own (the first
// claimLooks looks, unless it was just off its CPU: offCPU) the waiting
// thread polls the primary endpoint itself and claims it (ofi SpinProgress):
// what arrives lands at once, with no progress-thread wake-up per message.
// The claim ends (ofi EndSpin) when the wait stops spinning, loses its CPU
// or returns (endSpin); the progress thread then drives the endpoint again
// and later looks poll without claiming. Past spinPolls looks each look
// also yields the CPU. A store by a node peer over shared memory is seen
// within one poll.
func (r *runtime) spinLook(w *waitLooks) {
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
	if w.off == 0 && w.n <= r.claimLooks {
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
	if w.n > spinPolls && w.n <= r.policy.Spins {
		spin.Yield()
	}
}

var monoBase = time.Now()

// monotonic is the monotonic clock in nanoseconds.
func monotonic() int64 { return int64(time.Since(monoBase)) }

// endSpin ends the claim of a wait loop that returned.
func (r *runtime) endSpin(w *waitLooks) {
	if w.claimed {
		r.ofi.EndSpin()
		w.claimed = false
	}
}

func (r *runtime) WaitGE(off uint64, v uint64, why collectives.Wait) error {
	p := (*uint64)(r.localPtr(off))
	if atomic.LoadUint64(p) >= v {
		return nil
	}
	var looks waitLooks
	ok, err := r.policy.Until(func() bool {
		if atomic.LoadUint64(p) >= v {
			return true
		}
		r.spinLook(&looks)
		return atomic.LoadUint64(p) >= v
	}, r.checkPeers)
	r.endSpin(&looks)
	if err != nil {
		return errors.Wrap(err, why.String())
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
	r.shm.Quiet()
	return errors.Join(err, r.proxyErr("Quiet"))
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
