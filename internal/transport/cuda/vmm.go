package cudatr

import (
	"encoding/binary"
	"fmt"
	"os"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
)

// The growing GPU heap (CUDA virtual memory management). Each PE reserves
// address space for its heap (GOSHMEM_DEVICE_HEAP_MAX) and maps physical
// memory into it from offset 0 as the heap needs it, in chunks that are
// multiples of the allocation granularity. Every PE of the node reserves
// a view of the same size for each peer and maps each of the peer's chunks
// at the same offset there, from the chunk's file descriptor: the owner
// exports it (cuMemExportToShareableHandle), keeps it open while the
// chunk lives and sends a copy to every node peer over a Unix socket
// (fdpost.go); a peer imports its copy and closes it. A PE's heap base
// stays the reservation's base, so kernels see one contiguous heap whose
// mapped length grows.
//
// Growth happens inside the collective AllocDevice that needs it: every PE
// has the same allocator state and so grows at the same call; each PE
// sends its new chunk's descriptor to its node peers, then one exchange of
// a growth record per PE (the chunk's message number, offset and size) and
// one of whether each PE mapped its node peers' new chunks (a PE that
// could not fails the growth everywhere: agreeMapped) are the only
// collective communication, plus what the remote GPU transports' growth
// hooks exchange (OnGrow: the proxy's and IBGDA's registrations must
// cover the new chunk before kernels may address it). Once the heap has
// less than a step left, the next step is prepared in the background on
// every PE (ahead.go), so that the growth that needs it only exchanges one
// record and adopts it. Without VMM (no driver support, or a device
// without POSIX file descriptor handles) or with
// GOSHMEM_DEVICE_HEAP_MAX=fixed the heap is one cuMemAlloc shared with
// legacy CUDA IPC and never grows.

// Heap modes in a Setup record (byte recMode).
const (
	modeIPC = 0
	modeVMM = 2

	recMode = 1
	// VMM fields, in the IPC handle's place.
	recPID      = recHandle
	recSeq      = recHandle + 8 // the first chunk's message number (fdpost.go)
	recMapped   = recHandle + 16
	recReserved = recHandle + 24
	recNonce    = recHandle + 32 // the descriptor socket's nonce (postName)
)

// growLen is the length of a growth record: status, 0, the chunk's
// message number (fdpost.go), chunk offset, chunk size, mapped length
// after the growth (an adoption's record: status, the preparation's time
// and slack in ns (burstAfter), mapped length).
const growLen = 48

// Growth record statuses.
const (
	growNone   = 0 // this PE's mapping already covers the need
	growChunk  = 1 // a new chunk, to be mapped by the peers
	growFailed = 2
	// adopting prepared chunks (ahead.go)
	growAhead       = 3
	growAheadFailed = 4
)

// chunk is physical memory mapped at off in a heap or a peer's view.
type chunk struct {
	off, size uint64
	h         cuda.MemHandle
	fd        int // this PE's exported descriptor (own chunks), else -1
}

// vmmHeap is the VMM state of a Transport (zero when the heap uses IPC).
type vmmHeap struct {
	on       bool
	gran     uint64
	reserved []uint64  // each PE's reservation size (own and views here; 0: no view)
	mapped   []uint64  // each PE's mapped length
	chunks   [][]chunk // chunks mapped here, per PE (views of peers; own)
	limit    uint64    // the smallest reservation of any PE: the heap's maximum
	step     uint64    // the least a growth maps (GOSHMEM_DEVICE_HEAP_CHUNK)
	largest  uint64    // the largest block a Grow was asked for
	burst    uint      // the preparation is doubled this many times (ahead.go)
	noBurst  bool      // SetBurst(false)
	hooks    []GrowHook
	// the descriptor socket (fdpost.go), each PE's pid and socket nonce
	// (0: no view here), and the first chunk's message number
	post   *post
	pids   []int
	nonces []uint64
	seq0   uint64
	// the next growth prepared ahead (ahead.go): the last generation
	// started, the one in flight or waiting, and whether preparing was
	// turned off (a preparation failed)
	gen     uint64
	next    *ahead
	noAhead bool
	// growths that succeeded, and those that adopted a prepared chunk
	grown, adopted uint64
}

// SetBurst turns the doubling of the preparation (burstAfter) on (the
// default) or off, on every PE alike before the first growth: off, the
// growths' sizes do not depend on how fast the preparation runs (tests
// that check sizes).
func (t *Transport) SetBurst(on bool) { t.vmm.noBurst = !on }

// Growths reports how many growths of the heap succeeded here, and how
// many of them adopted a chunk prepared ahead (for tests and tools).
func (t *Transport) Growths() (grown, adopted uint64) { return t.vmm.grown, t.vmm.adopted }

// SetGrowStep sets the least each growth maps here (before the first
// Grow): a growth maps max(need, mapped+step), rounded up to the
// granularity and within the reservation (a step of at most the
// granularity maps only what is needed). With VMM it also makes room in
// the descriptor table for the chunks the heap can grow by (reserveFDs).
func (t *Transport) SetGrowStep(step uint64) {
	v := &t.vmm
	v.step = step
	if v.on {
		res := v.reserved[t.me] // the heap's limit is not agreed yet
		chunks := (res - min(t.size, res)) / max(step, v.gran)
		reserveFDs(v.chunks[t.me][0].fd, int(min(chunks, fdChunksMax))+fdSpare)
	}
}

// GrowHook makes a remote GPU transport cover a grown heap: the GPU proxy
// accepts requests up to the new size, IBGDA registers the new chunks with
// the NIC and hands the keys to the device state. Grow calls the hooks on
// every PE, in the order added, once the new chunks are mapped here and
// before the device state's heap size grows (no kernel addresses the new
// chunk before every hook returned). size is the new usable size of every
// PE's heap; exchange gathers one record from every PE, as Grow's own. A
// hook that fails must fail on every PE (it exchanges its outcome) and
// leave its old state: Grow then keeps the old size, and a later Grow to
// the same size calls it again.
type GrowHook func(size uint64, exchange func([]byte) ([][]byte, error)) error

// OnGrow adds h to the hooks Grow calls (at Init, by the remote GPU
// transport that needs it).
func (t *Transport) OnGrow(h GrowHook) { t.vmm.hooks = append(t.vmm.hooks, h) }

// VMM reports whether the heap grows (CUDA virtual memory management)
// rather than being one fixed allocation shared by legacy CUDA IPC.
func (t *Transport) VMM() bool { return t.vmm.on }

// Limit is the size every PE's heap may grow to: the smallest reservation
// of the job (GOSHMEM_DEVICE_HEAP_MAX), or the fixed size without VMM.
func (t *Transport) Limit() uint64 {
	if t.vmm.limit == 0 {
		return t.size
	}
	return t.vmm.limit
}

// LimitSetting names the setting that bounds the heap, for hints.
func (t *Transport) LimitSetting() string {
	if t.vmm.on {
		return "GOSHMEM_DEVICE_HEAP_MAX"
	}
	return "GOSHMEM_DEVICE_HEAP_SIZE"
}

// HeapMode says how the heap is allocated and shared, for GOSHMEM_INFO.
func (t *Transport) HeapMode() string {
	if t.vmm.on {
		return fmt.Sprintf("CUDA VMM, growing from %d bytes mapped up to %d reserved, at least %d bytes at a time (GOSHMEM_DEVICE_HEAP_CHUNK), prepared in the background once the heap has less than that left (or less than the largest block so far, doubled while allocations outrun it, up to 4 times as much), in chunks of %d-byte granularity, shared by file descriptors; the first %d bytes hold %d team slots",
			t.size, t.Limit(), roundUp(max(t.vmm.step, t.vmm.gran), t.vmm.gran), t.vmm.gran, t.control, t.maxTeams)
	}
	why := "no CUDA VMM with POSIX file descriptors here"
	if t.heapMax == HeapMaxFixed {
		why = "GOSHMEM_DEVICE_HEAP_MAX=fixed"
	}
	return fmt.Sprintf("cuMemAlloc of %d bytes shared by legacy CUDA IPC (%s), fixed; the first %d bytes hold %d team slots",
		t.size, why, t.control, t.maxTeams)
}

func roundUp(n, g uint64) uint64 { return (n + g - 1) / g * g }

// HeapMaxFixed as Setup's heapMax asks for the fixed heap (one cuMemAlloc
// shared by legacy CUDA IPC) even where VMM is supported
// (GOSHMEM_DEVICE_HEAP_MAX=fixed).
const HeapMaxFixed = ^uint64(0)

// allocHeap reserves and maps the heap (VMM) or allocates it (legacy) and
// clears it: the control area and GOSHMEM_DEVICE_HEAP_SIZE mapped, the
// control area and heapMax reserved (heapMax 0: the device's memory, the
// control area included). Errors match ErrNotSupported.
func (t *Transport) allocHeap(heapMax uint64, notSupported func(error, string) error) error {
	if heapMax == HeapMaxFixed || !t.Ctx.VMMSupported() {
		var err error
		if t.own, err = t.Ctx.MemAlloc(int(t.size)); err != nil {
			return errors.WithHint(notSupported(err, fmt.Sprintf("GPU heap of %d bytes (GOSHMEM_DEVICE_HEAP_SIZE and a %d-byte control area) on GPU %d",
				t.size, t.control, t.Dev)), "lower GOSHMEM_DEVICE_HEAP_SIZE")
		}
		return nil
	}
	g, err := t.Ctx.MemGranularity()
	if err != nil || g == 0 || g&(g-1) != 0 {
		if err == nil {
			err = errors.Newf("granularity %d is not a power of two", g)
		}
		return notSupported(err, "CUDA VMM allocation granularity")
	}
	var res uint64
	if heapMax == 0 {
		if heapMax, err = t.Dev.TotalMem(); err != nil {
			return notSupported(err, "GPU memory size (the default GOSHMEM_DEVICE_HEAP_MAX)")
		}
		res = heapMax &^ (g - 1)
	} else {
		res = roundUp(t.control+heapMax, g)
	}
	size := roundUp(t.size, g)
	if size > res {
		return errors.WithHint(notSupported(errors.Newf("GOSHMEM_DEVICE_HEAP_SIZE=%d bytes and the %d-byte control area (%d in %d-byte chunks) exceed the %d-byte reservation (GOSHMEM_DEVICE_HEAP_MAX=%d bytes)",
			t.initial, t.control, size, g, res, heapMax), fmt.Sprintf("GPU heap on GPU %d", t.Dev)),
			"lower GOSHMEM_DEVICE_HEAP_SIZE or raise GOSHMEM_DEVICE_HEAP_MAX")
	}
	t.vmm = vmmHeap{on: true, gran: g,
		reserved: make([]uint64, t.npes), mapped: make([]uint64, t.npes), chunks: make([][]chunk, t.npes),
		pids: make([]int, t.npes), nonces: make([]uint64, t.npes)}
	if t.vmm.post, err = newPost(t.me); err != nil {
		return errors.WithHint(notSupported(err, "the GPU heap's descriptor socket"), "set GOSHMEM_DEVICE_HEAP_MAX=fixed for a fixed heap shared by legacy CUDA IPC")
	}
	t.vmm.seq0 = t.vmm.post.nextSeq()
	if t.own, err = t.Ctx.MemAddressReserve(res, g); err != nil {
		return errors.WithHint(notSupported(err, fmt.Sprintf("reserving %d bytes of address space for the GPU heap on GPU %d", res, t.Dev)),
			"lower GOSHMEM_DEVICE_HEAP_MAX")
	}
	t.vmm.reserved[t.me] = res
	c, err := t.newChunk(0, size)
	if err != nil {
		return errors.WithHint(notSupported(err, fmt.Sprintf("GPU heap of %d bytes on GPU %d", size, t.Dev)),
			"lower GOSHMEM_DEVICE_HEAP_SIZE")
	}
	t.vmm.chunks[t.me] = []chunk{c}
	t.vmm.mapped[t.me] = size
	t.size = size
	return nil
}

// Descriptor table room made at Init (reserveFDs): one per chunk the heap
// can still grow by at the step, up to fdChunksMax, and fdSpare more (a
// growth's descriptors taken from peers, the program's).
const (
	fdChunksMax = 4096
	fdSpare     = 64
)

// reserveFDs grows this process's descriptor table now to hold n more
// descriptors than are open. Each chunk this PE exports holds a
// descriptor while it lives, and in a multi-threaded process Linux waits
// out an RCU grace period whenever the table grows (inside a growth, the
// peers' mapping stalls on every PE at once); the table never shrinks,
// so growths then never pay for it. fd is any open
// descriptor. Best effort: within RLIMIT_NOFILE, and a failure leaves the
// table as is.
func reserveFDs(fd, n int) {
	lo, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(lo)
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	if hi := min(uint64(lo+n), lim.Cur-1); hi > uint64(lo) {
		if d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, int(hi)); err == nil {
			_ = unix.Close(d)
		}
	}
}

// newChunk creates, maps and exports size bytes at off of this PE's heap.
func (t *Transport) newChunk(off, size uint64) (chunk, error) {
	c := chunk{off: off, size: size, fd: -1}
	var err error
	if c.h, err = t.Ctx.MemCreate(size); err != nil {
		return c, err
	}
	if err = t.Ctx.MemMap(t.own+cuda.DevicePtr(off), size, c.h); err != nil {
		_ = t.Ctx.MemRelease(c.h)
		return c, err
	}
	if err = t.Ctx.MemSetAccess(t.own+cuda.DevicePtr(off), size); err == nil {
		c.fd, err = t.Ctx.MemExportFD(c.h)
	}
	if err != nil {
		t.dropChunk(t.own, c)
		return c, err
	}
	return c, nil
}

// dropChunk unmaps c from the range at base and releases it.
func (t *Transport) dropChunk(base cuda.DevicePtr, c chunk) error {
	err := t.Ctx.MemUnmap(base+cuda.DevicePtr(c.off), c.size)
	err = errors.Join(err, t.Ctx.MemRelease(c.h))
	if c.fd >= 0 {
		err = errors.Join(err, unix.Close(c.fd))
	}
	return err
}

// vmmRecord fills the VMM fields of this PE's Setup record.
func (t *Transport) vmmRecord(rec []byte) {
	rec[recMode] = modeVMM
	le := binary.LittleEndian
	le.PutUint64(rec[recPID:], uint64(os.Getpid()))
	le.PutUint64(rec[recSeq:], t.vmm.seq0)
	le.PutUint64(rec[recMapped:], t.vmm.mapped[t.me])
	le.PutUint64(rec[recReserved:], t.vmm.reserved[t.me])
	le.PutUint64(rec[recNonce:], t.vmm.post.nonce)
}

// sendChunk sends c's descriptor, as message seq of generation gen (0:
// not prepared ahead) with status stat, to every node peer that has a
// view of this PE's heap (pids and nonces known), and returns the first
// failure; it tries every peer even after one failed, so that each peer
// still alive gets its copy.
func (t *Transport) sendChunk(c chunk, seq, gen, stat uint64) error {
	v := &t.vmm
	var first error
	for pe := range t.npes {
		if pe == t.me || v.nonces[pe] == 0 {
			continue
		}
		fd := c.fd
		if stat != postChunk || c.size == 0 {
			fd = -1
		}
		err := v.post.send(pe, v.pids[pe], v.nonces[pe], postMsg{seq: seq, gen: gen, off: c.off, size: c.size, stat: stat}, fd)
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// takeChunk takes PE pe's message number seq (not prepared ahead),
// waiting for it up to wait; with wait 0 it must have arrived (the peer
// sent it before an exchange this PE has seen).
func (t *Transport) takeChunk(pe int, seq uint64, wait time.Duration) (postMsg, error) {
	m, ok, err := t.vmm.post.take(pe, t.vmm.pids[pe], func(m *postMsg) bool { return m.seq == seq && m.gen == 0 }, wait)
	if err == nil && !ok {
		err = errs.New(errs.ErrInvalidArgument, t.me, "GPU heap", "PE %d's descriptor message %d has not arrived here, though PE %d sent it", pe, seq, pe)
	}
	switch {
	case err == nil && m.lost:
		err = t.lostFD(pe, m)
	case err == nil && (m.stat != postChunk || m.fd < 0):
		closeFD(m.fd)
		err = errs.New(errs.ErrInvalidArgument, t.me, "GPU heap", "PE %d's message %d holds no GPU heap chunk descriptor", pe, seq)
	}
	return m, err
}

// lostFD is the error for PE pe's message m, whose descriptor the kernel
// dropped here.
func (t *Transport) lostFD(pe int, m postMsg) error {
	var lim unix.Rlimit
	_ = unix.Getrlimit(unix.RLIMIT_NOFILE, &lim)
	return errs.Hint(errs.ErrNotSupported, "raise the open files limit (ulimit -n)", t.me, "GPU heap",
		"PE %d's GPU heap chunk [%d, %d) came without its descriptor: this process's descriptor table is full (RLIMIT_NOFILE %d)",
		pe, m.off, m.off+m.size, lim.Cur)
}

// fdHint is what a user can do when a peer's descriptor does not arrive.
const fdHint = "the node's PEs pass GPU heap chunks' file descriptors to each other over abstract Unix sockets (SCM_RIGHTS): " +
	"run them as one user in one network namespace and one pid namespace; " +
	"or set GOSHMEM_DEVICE_HEAP_MAX=fixed for a heap of GOSHMEM_DEVICE_HEAP_SIZE shared by legacy CUDA IPC"

// mapPeerChunk maps PE pe's chunk that m's descriptor names into pe's
// view here, after what is mapped there; it closes m's descriptor.
func (t *Transport) mapPeerChunk(pe int, m postMsg) error {
	if m.off+m.size > t.vmm.reserved[pe] || m.off < t.vmm.mapped[pe] {
		closeFD(m.fd)
		return errs.New(errs.ErrInvalidArgument, t.me, "GPU heap", "PE %d's chunk [%d, %d) does not extend its mapped %d bytes within its %d reserved",
			pe, m.off, m.off+m.size, t.vmm.mapped[pe], t.vmm.reserved[pe])
	}
	c, err := t.importChunk(pe, m)
	if err != nil {
		return err
	}
	t.vmm.chunks[pe] = append(t.vmm.chunks[pe], c)
	t.vmm.mapped[pe] = m.off + m.size
	return nil
}

// importChunk maps PE pe's chunk [m.off, m.off+m.size), whose descriptor
// m.fd came from pe, at m.off in pe's view here, and returns it (the VMM
// state is the caller's to update). It closes m.fd.
func (t *Transport) importChunk(pe int, m postMsg) (chunk, error) {
	c := chunk{off: m.off, size: m.size, fd: -1}
	if m.lost {
		return c, t.lostFD(pe, m)
	}
	if m.fd < 0 {
		return c, errs.New(errs.ErrInvalidArgument, t.me, "GPU heap", "PE %d's chunk [%d, %d) came without its descriptor", pe, m.off, m.off+m.size)
	}
	if m.off+m.size > t.vmm.reserved[pe] {
		closeFD(m.fd)
		return c, errs.New(errs.ErrInvalidArgument, t.me, "GPU heap", "PE %d's chunk [%d, %d) is past its %d bytes reserved",
			pe, m.off, m.off+m.size, t.vmm.reserved[pe])
	}
	var err error
	c.h, err = t.Ctx.MemImportFD(m.fd)
	closeFD(m.fd)
	if err != nil {
		return c, errs.Wrap(err, t.me, "GPU heap", "importing PE %d's GPU heap chunk", pe)
	}
	base := t.peers[pe] + cuda.DevicePtr(c.off)
	if err := t.Ctx.MemMap(base, c.size, c.h); err != nil {
		_ = t.Ctx.MemRelease(c.h)
		return c, errs.Wrap(err, t.me, "GPU heap", "mapping PE %d's GPU heap chunk", pe)
	}
	if err := t.Ctx.MemSetAccess(base, c.size); err != nil {
		_ = t.dropChunk(t.peers[pe], c)
		return c, errs.Wrap(err, t.me, "GPU heap", "access to PE %d's GPU heap chunk", pe)
	}
	return c, nil
}

// sendFirst sends this PE's first chunk to every node peer whose Setup
// record says it uses VMM (before any PE takes one: Connect).
func (t *Transport) sendFirst(recs [][]byte, nodes []int) error {
	if !t.vmm.on {
		return nil
	}
	le := binary.LittleEndian
	for pe, r := range recs {
		if pe != t.me && nodes[pe] == nodes[t.me] && r[recMode] == modeVMM {
			t.vmm.pids[pe], t.vmm.nonces[pe] = int(le.Uint64(r[recPID:])), le.Uint64(r[recNonce:])
		}
	}
	if err := t.sendChunk(t.vmm.chunks[t.me][0], t.vmm.seq0, 0, postChunk); err != nil {
		return errors.WithHint(err, fdHint)
	}
	return nil
}

// connectVMM maps peer pe's heap from its Setup record r: a view of its
// reservation's size, its first chunk mapped there (its descriptor sent
// by sendFirst, on pe).
func (t *Transport) connectVMM(pe int, r []byte) error {
	le := binary.LittleEndian
	if !t.vmm.on {
		return errs.Hint(errs.ErrNotSupported, "run every PE of a node where CUDA VMM is supported, or none", t.me, "Init",
			"PE %d's GPU heap uses CUDA VMM, which this PE's GPU %s does not support", pe, t.BusID)
	}
	res := roundUp(le.Uint64(r[recReserved:]), t.vmm.gran)
	p, err := t.Ctx.MemAddressReserve(res, t.vmm.gran)
	if err != nil {
		return errs.Wrap(err, t.me, "Init", "reserving a view of PE %d's GPU heap (%d bytes)", pe, res)
	}
	t.peers[pe], t.vmm.reserved[pe] = p, res
	m, err := t.takeChunk(pe, le.Uint64(r[recSeq:]), aheadWait)
	if err != nil {
		return errors.WithHint(err, fdHint)
	}
	if m.off != 0 || m.size != le.Uint64(r[recMapped:]) {
		closeFD(m.fd)
		return errs.New(errs.ErrInvalidArgument, t.me, "Init", "PE %d sent its first GPU heap chunk as [%d, %d); its record says [0, %d)",
			pe, m.off, m.off+m.size, le.Uint64(r[recMapped:]))
	}
	return t.mapPeerChunk(pe, m)
}

// agree sets the heap's usable size and limit from every PE's Setup
// record: the smallest mapped length and the smallest reservation
// (a fixed IPC heap counts as both).
func (t *Transport) agree(recs [][]byte) {
	le := binary.LittleEndian
	size, limit := uint64(0), uint64(0)
	for pe, r := range recs {
		m, res := t.control+t.initial, t.control+t.initial
		if r[recMode] == modeVMM {
			m, res = le.Uint64(r[recMapped:]), le.Uint64(r[recReserved:])
		}
		if t.vmm.on {
			t.vmm.mapped[pe] = m
		}
		if pe == 0 || m < size {
			size = m
		}
		if pe == 0 || res < limit {
			limit = res
		}
	}
	t.size = size
	if t.vmm.on {
		t.vmm.limit = limit
	}
}

// Grow makes at least need bytes of the heap usable on every PE, for a
// block of block bytes ending there (it sizes the preparation of the next
// growth: ahead.go; 0 for none). It is collective over the job (every PE
// calls it with the same need and block: the allocator state is
// symmetric) and, when the heap is already that large,
// makes no communication (it may start preparing the next growth in the
// background: ahead.go). The caller serializes it with the other heap
// operations (AllocDevice holds the world team). exchange gathers one
// record from every PE (the same length everywhere), in PE order. On
// error no PE's usable size changes.
func (t *Transport) Grow(need, block uint64, exchange func([]byte) ([][]byte, error)) error {
	t.vmm.largest = max(t.vmm.largest, block)
	if need <= t.size {
		t.maybePrepare(need)
		return nil
	}
	adopted := false
	if a := t.vmm.next; a != nil && need <= t.Limit() {
		t.vmm.next = nil
		var err error
		if adopted, err = t.adoptAhead(a, exchange); err != nil {
			return err
		}
		if adopted {
			t.vmm.adopted++
		}
		if adopted && need <= t.mappedEverywhere() {
			if err := t.publishSize(exchange); err != nil {
				return err
			}
			t.vmm.grown++
			t.maybePrepare(need)
			return nil
		}
	}
	if err := t.growChunk(need, adopted, exchange); err != nil {
		return err
	}
	t.vmm.grown++
	t.maybePrepare(need)
	return nil
}

// growChunk is a growth by need: every PE creates, maps and exports a
// chunk, the records are exchanged, and each PE maps its node peers'.
// It maps at least the step, but only what the need lacks after an
// adoption (the adopted chunk was the step) or once a preparation failed
// (the GPU could not hold another step).
func (t *Transport) growChunk(need uint64, adopted bool, exchange func([]byte) ([][]byte, error)) error {
	var rec [growLen]byte
	le := binary.LittleEndian
	var c chunk
	var lerr error
	var mine uint64
	if t.vmm.on {
		mine = t.vmm.mapped[t.me]
	}
	switch {
	case !t.vmm.on || need > t.Limit():
		lerr = errs.Hint(errs.ErrHeapExhausted, "raise "+t.LimitSetting(), t.me, "AllocDevice",
			"the GPU heap needs %d bytes, more than its %d-byte limit", need, t.Limit())
	case mine < need:
		// at least the step: fewer growths, each of which costs every PE
		// of the node driver calls for its chunk and each peer's
		end := max(need, mine+min(t.vmm.step, t.vmm.reserved[t.me]))
		if adopted || t.vmm.noAhead {
			end = need
		}
		size := min(roundUp(end, t.vmm.gran), t.vmm.reserved[t.me]) - mine
		if c, lerr = t.newChunk(mine, size); lerr == nil {
			seq := t.vmm.post.nextSeq()
			if lerr = t.sendChunk(c, seq, 0, postChunk); lerr == nil {
				le.PutUint64(rec[0:], growChunk)
				le.PutUint64(rec[16:], seq)
				le.PutUint64(rec[24:], c.off)
				le.PutUint64(rec[32:], c.size)
				le.PutUint64(rec[40:], c.off+c.size)
			} else {
				_ = t.dropChunk(t.own, c)
				lerr = errors.WithHint(lerr, fdHint)
			}
		} else {
			lerr = errors.WithHint(errs.Wrap(errs.Mark(lerr, errs.ErrHeapExhausted), t.me, "AllocDevice",
				"growing the GPU heap by %d bytes at offset %d", size, mine), "lower GOSHMEM_DEVICE_HEAP_MAX to what the GPU can hold")
		}
	default:
		le.PutUint64(rec[40:], mine)
	}
	if lerr != nil {
		le.PutUint64(rec[0:], growFailed)
	}
	all, err := exchange(rec[:])
	undo := func() {
		if le.Uint64(rec[0:]) == growChunk {
			_ = t.dropChunk(t.own, c)
		}
	}
	if lerr != nil {
		undo()
		return lerr
	}
	if err != nil {
		undo()
		return err
	}
	for pe, r := range all {
		if len(r) != growLen || le.Uint64(r[0:]) == growFailed {
			undo()
			return errs.New(errs.ErrHeapExhausted, t.me, "AllocDevice", "PE %d could not grow its GPU heap to %d bytes", pe, need)
		}
	}
	// Map the node peers' new chunks, then agree that every PE did before
	// any of it counts: a PE that could not map a peer's chunk (its
	// descriptor refused, the driver out of memory) fails the growth on
	// every PE, which all unmap what it mapped. Committed on one PE only,
	// the usable sizes would differ and the PEs would disagree on the
	// exchanges of the next growths.
	var got []chunk // got[i] is mapped in the view of PE gotPE[i]
	var gotPE []int
	var merr error
	for pe, r := range all {
		if pe != t.me && le.Uint64(r[0:]) == growChunk && t.vmm.reserved[pe] != 0 {
			off, size := le.Uint64(r[24:]), le.Uint64(r[32:])
			if off != t.vmm.mapped[pe] || size == 0 {
				merr = errs.New(errs.ErrInvalidArgument, t.me, "AllocDevice", "PE %d's new GPU heap chunk [%d, %d) does not extend its mapped %d bytes",
					pe, off, off+size, t.vmm.mapped[pe])
				break
			}
			m, err := t.takeChunk(pe, le.Uint64(r[16:]), 0)
			if err == nil && (m.off != off || m.size != size) {
				closeFD(m.fd)
				err = errs.New(errs.ErrInvalidArgument, t.me, "AllocDevice", "PE %d sent its new GPU heap chunk as [%d, %d), its record says [%d, %d)",
					pe, m.off, m.off+m.size, off, off+size)
			}
			var pc chunk
			if err == nil {
				pc, err = t.importChunk(pe, m)
			}
			if err != nil {
				merr = err
				break
			}
			got, gotPE = append(got, pc), append(gotPE, pe)
		}
	}
	if err := t.agreeMapped(need, merr, exchange); err != nil {
		for i, pc := range got {
			_ = t.dropChunk(t.peers[gotPE[i]], pc)
		}
		undo()
		return err
	}
	if c.size > 0 {
		t.vmm.chunks[t.me] = append(t.vmm.chunks[t.me], c)
		t.vmm.mapped[t.me] = c.off + c.size
		// a new chunk's memory is not zeroed: nothing past it is fresh
		t.fresh = max(t.fresh, t.vmm.mapped[t.me])
	}
	for i, pc := range got {
		t.vmm.chunks[gotPE[i]] = append(t.vmm.chunks[gotPE[i]], pc)
	}
	for pe, r := range all {
		if pe != t.me {
			t.vmm.mapped[pe] = max(t.vmm.mapped[pe], le.Uint64(r[40:]))
		}
	}
	return t.publishSize(exchange)
}

// agreeMapped exchanges whether this PE mapped its node peers' new chunks
// of a growth to need (merr: why not) and returns an error on every PE
// when any PE did not: this PE's own, else one naming the PE that failed,
// with its error's sentinel.
func (t *Transport) agreeMapped(need uint64, merr error, exchange func([]byte) ([][]byte, error)) error {
	var rec [growLen]byte
	le := binary.LittleEndian
	le.PutUint64(rec[0:], growChunk)
	if merr != nil {
		le.PutUint64(rec[0:], growFailed)
		le.PutUint64(rec[8:], uint64(errs.Code(merr)))
	}
	all, err := exchange(rec[:])
	if merr != nil {
		return merr
	}
	if err != nil {
		return err
	}
	for pe, r := range all {
		if len(r) != growLen || le.Uint64(r[0:]) != growChunk {
			var code byte
			if len(r) == growLen {
				code = byte(le.Uint64(r[8:]))
			}
			return errs.New(errs.Sentinel(code), t.me, "AllocDevice", "PE %d could not map its node peers' new GPU heap chunks (growing the heap to %d bytes); its error says why", pe, need)
		}
	}
	return nil
}

// mappedEverywhere is the smallest mapped length of any PE.
func (t *Transport) mappedEverywhere() uint64 {
	size := t.vmm.mapped[t.me]
	for _, m := range t.vmm.mapped {
		size = min(size, m)
	}
	return size
}

// publishSize makes the smallest mapped length of any PE the usable size:
// the growth hooks cover it, then the device state learns it. (After an
// adoption that does not cover the need, the growth by need that follows
// publishes both at once.)
func (t *Transport) publishSize(exchange func([]byte) ([][]byte, error)) error {
	size := t.mappedEverywhere()
	for _, h := range t.vmm.hooks {
		if err := h(size, exchange); err != nil {
			return err
		}
	}
	t.size = size
	return t.setHeapSize(size)
}

// setHeapSize writes the device state's heap_size (and every loaded
// module's constant copy of it).
func (t *Transport) setHeapSize(n uint64) error {
	t.img.HeapSize = n
	if t.state == 0 {
		return nil
	}
	if err := t.Ctx.MemcpyHtoD(t.state+offHeapSize, unsafe.Pointer(&n), 8); err != nil {
		return errs.Wrap(err, t.me, "AllocDevice", "device state heap size")
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range t.consts {
		if err := t.Ctx.MemcpyHtoD(c+offHeapSize, unsafe.Pointer(&n), 8); err != nil {
			return errs.Wrap(err, t.me, "AllocDevice", "device state heap size of a module")
		}
	}
	return nil
}

// closeVMM unmaps and releases every chunk here, closes the exported
// descriptors and frees the reservations (own and views).
func (t *Transport) closeVMM() error {
	if a := t.vmm.next; a != nil {
		t.vmm.next = nil
		t.dropAhead(a)
	}
	var errList []error
	for pe := range t.vmm.chunks {
		base := t.own
		if pe != t.me {
			if t.peers == nil {
				continue
			}
			base = t.peers[pe]
		}
		for i := len(t.vmm.chunks[pe]) - 1; i >= 0; i-- {
			errList = append(errList, t.dropChunk(base, t.vmm.chunks[pe][i]))
		}
		t.vmm.chunks[pe] = nil
		if t.vmm.reserved[pe] != 0 && base != 0 {
			errList = append(errList, t.Ctx.MemAddressFree(base, t.vmm.reserved[pe]))
		}
		t.vmm.reserved[pe] = 0
	}
	t.own = 0
	errList = append(errList, t.vmm.post.close())
	t.vmm.post = nil
	return errors.Join(errList...)
}
