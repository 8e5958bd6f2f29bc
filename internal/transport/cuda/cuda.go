// Package cudatr is the GPU heap and its transport: every PE reserves its
// device heap and maps memory into it as it grows (CUDA VMM; vmm.go), or
// where VMM is unavailable allocates it with cuMemAlloc and exports it with
// a CUDA IPC handle, and maps every same-node peer's heap (same GPU or
// another over NVLink), so kernels reach peers with plain loads and
// stores. The host API reaches device arrays through synchronous copies
// and a module of one-thread atomic kernels. It also owns the device state (include/goshmem/device_state.h)
// that every loaded module points at.
package cudatr

import (
	"encoding/binary"
	"fmt"
	"sync"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/transport"
)

// Transport is one PE's view of the GPU heaps.
type Transport struct {
	Ctx      *cuda.Context
	Dev      cuda.Device
	DevName  string
	BusID    string
	me, npes int
	size     uint64
	own      cuda.DevicePtr
	peers    []cuda.DevicePtr // device address of each PE's heap here; 0 = unreachable
	opened   []bool
	busIDs   []string
	state    cuda.DevicePtr
	img      State
	// maxTeams is GOSHMEM_MAX_TEAMS (the team table's rows and the control
	// area's slots), control the control area's bytes (ControlBytes), at
	// the front of the heap and not counted in initial and heapMax.
	maxTeams int
	control  uint64
	// initial is GOSHMEM_DEVICE_HEAP_SIZE, heapMax GOSHMEM_DEVICE_HEAP_MAX
	// (0: the GPU's memory); vmm the growing heap's state (vmm.go).
	initial, heapMax uint64
	vmm              vmmHeap
	// fresh: [fresh, mapped length) of this PE's heap is zero and was
	// never handed out (ZeroBlock)
	fresh uint64
	// Stream is the non-blocking stream the host's own work (atomic
	// kernels) runs on, so it never waits behind a user's kernels.
	Stream cuda.Stream
	// CollLL is the device state's coll_ll_bytes (GOSHMEM_GPU_COLL_LL),
	// set before Connect.
	CollLL uint32

	mu      sync.Mutex       // staging buffer, AMO out word, consts
	consts  []cuda.DevicePtr // goshmemi_device_state_c of every loaded module
	stage   unsafe.Pointer
	stageN  int
	amoMod  *cuda.Module
	amoFn   [2][transport.AMOXor + 1]*cuda.Function
	amoOut  unsafe.Pointer
	errRec  unsafe.Pointer // host-mapped goshmemi_error_record_t (deverr.go)
	amoOutD cuda.DevicePtr
	args    cuda.Args

	// soft NIC (region.go): copy kernel and its mapped staging buffer
	copyMod   *cuda.Module
	copyFn    *cuda.Function
	nicStage  unsafe.Pointer
	nicStageD cuda.DevicePtr

	// Warn reports what the program should know but that fails nothing
	// (a growth prepared ahead that could not be used); nil: silent.
	Warn func(msg string)

	// DevWhy says why this GPU was chosen (see Choice), for GOSHMEM_INFO.
	DevWhy      string
	caller      cuda.ThreadContext // the Init thread's context before Setup
	callerSaved bool
}

const stageBytes = 4 << 20

// record exchanged at Open: status, IPC handle, PCI bus id.
const (
	recStatus = 0
	recHandle = 8
	recBus    = recHandle + cuda.IpcHandleSize
	recLen    = recBus + 32
)

// Choice says which GPU a PE uses, in this order: Ordinal when it is set
// (Source not empty; an ordinal outside [0, device count) is an error);
// else the device of the context current on the calling thread
// (another library made it current), which is then used as it is; else
// LocalRank modulo the device count.
type Choice struct {
	// Ordinal is the device asked for, or -1.
	Ordinal int
	// Source names what asked for Ordinal ("WithDevice", "GOSHMEM_DEVICE")
	// in errors and GOSHMEM_INFO.
	Source string
	// LocalRank is this PE's rank among its node's PEs.
	LocalRank int
}

// Setup does this PE's part of the GPU heap with no collective call: it
// loads the driver, picks the GPU (see Choice), allocates and clears the
// heap and returns the record Connect consumes (status, IPC handle, PCI
// bus id). The heap is the control area of maxTeams team slots
// (ControlBytes) followed by heapSize bytes that may grow to heapMax (0:
// the device's memory). It must run on the thread that called Init,
// locked, for the current-context rule. An error matching ErrNotSupported
// means this PE has no usable GPU; the transport is then released. An
// ordinal out of range or maxTeams < 2 is an error matching
// ErrInvalidArgument.
func Setup(me, npes int, dev Choice, heapSize, heapMax uint64, maxTeams int, libcuda string) (*Transport, []byte, error) {
	if maxTeams < 2 {
		return nil, nil, errs.New(errs.ErrInvalidArgument, me, "Init", "GPU heap: %d team slots; at least 2 (the world and node teams)", maxTeams)
	}
	control := ControlBytes(maxTeams)
	t := &Transport{me: me, npes: npes, size: control + heapSize, initial: heapSize, heapMax: heapMax, maxTeams: maxTeams, control: control}
	if t.npes > MaxPEs {
		return nil, nil, errs.New(errs.ErrNotSupported, t.me, "Init", "GPU heap: %d PEs, at most %d per job in this build", t.npes, MaxPEs)
	}
	if err := t.setupLocal(dev, libcuda); err != nil {
		_ = t.RestoreCaller()
		t.Close()
		return nil, nil, err
	}
	rec := make([]byte, recLen)
	if t.vmm.on {
		t.vmmRecord(rec)
	} else {
		h, err := t.Ctx.IpcGetMemHandle(t.own)
		if err != nil {
			t.Close()
			return nil, nil, errs.Mark(errs.Wrap(err, t.me, "Init", "IPC handle of the GPU heap"), errs.ErrNotSupported)
		}
		copy(rec[recHandle:], h[:])
	}
	rec[recStatus] = 1
	copy(rec[recBus:], t.BusID)
	return t, rec, nil
}

// Connect maps the GPU heap of every PE of this node (nodes[pe] equal to
// this PE's) from their Setup records and writes the device state. It
// makes no collective call; on error the caller closes the transport.
func (t *Transport) Connect(recs [][]byte, nodes []int) error {
	if len(recs) != t.npes {
		return errs.New(errs.ErrInvalidArgument, t.me, "Init", "GPU heap: %d records for %d PEs", len(recs), t.npes)
	}
	for pe, r := range recs {
		if len(r) != recLen || r[recStatus] != 1 {
			return errs.Hint(errs.ErrNotSupported, "every PE needs a GPU for the GPU heap; run where each node has one",
				t.me, "Init", "PE %d has no usable GPU, so no PE gets a GPU heap", pe)
		}
	}
	t.peers = make([]cuda.DevicePtr, t.npes)
	t.opened = make([]bool, t.npes)
	t.busIDs = make([]string, t.npes)
	if err := t.sendFirst(recs, nodes); err != nil {
		return err
	}
	for pe := 0; pe < t.npes; pe++ {
		r := recs[pe]
		t.busIDs[pe] = string(trimZero(r[recBus:]))
		switch {
		case pe == t.me:
			t.peers[pe] = t.own
		case nodes[pe] == nodes[t.me] && r[recMode] == modeVMM:
			if err := t.connectVMM(pe, r); err != nil {
				return errs.Wrap(err, t.me, "Init", "mapping the GPU heap of PE %d (GPU %s) into GPU %s", pe, t.busIDs[pe], t.BusID)
			}
		case nodes[pe] == nodes[t.me]:
			var h cuda.IpcMemHandle
			copy(h[:], r[recHandle:])
			p, err := t.Ctx.IpcOpenMemHandle(h, cuda.IpcMemLazyEnablePeerAccess)
			if err != nil {
				return errs.Wrap(err, t.me, "Init", "mapping the GPU heap of PE %d (GPU %s) into GPU %s", pe, t.busIDs[pe], t.BusID)
			}
			t.peers[pe], t.opened[pe] = p, true
		}
	}
	t.agree(recs)
	return t.writeState()
}

// Open sets up the GPU heap collectively over boot (every PE calls it, GPU
// or not): Setup, one exchange of the records, Connect, and one exchange
// of Connect's outcome, so a failure anywhere is an error everywhere. A PE
// without a usable GPU reports why, and then no PE gets a GPU heap (the
// error matches ErrNotSupported on every PE). The runtime runs Setup and
// Connect inside its own exchanges; Open serves tools and tests.
func Open(boot bootstrap.Bootstrap, heapSize uint64, maxTeams int, libcuda string) (*Transport, error) {
	lr, _ := bootstrap.LocalRank(boot)
	t, rec, local := Setup(boot.Rank(), boot.Size(), Choice{Ordinal: -1, LocalRank: lr}, heapSize, 0, maxTeams, libcuda)
	if local != nil {
		rec = make([]byte, recLen)
	}
	all, err := boot.Allgather(rec)
	if err == nil && local == nil {
		recs := make([][]byte, boot.Size())
		for pe := range recs {
			recs[pe] = all[pe*recLen : (pe+1)*recLen]
		}
		local = t.Connect(recs, boot.Node())
	} else if local == nil {
		local = errs.Wrap(err, boot.Rank(), "Init", "exchanging GPU heap handles")
	}
	var ok [1]byte
	if local == nil {
		ok[0] = 1
	}
	oks, err := boot.Allgather(ok[:])
	if local == nil {
		for pe, v := range oks {
			if err != nil || v != 1 {
				local = errs.New(errs.ErrNotSupported, boot.Rank(), "Init", "PE %d could not set up or map the GPU heaps", pe)
				break
			}
		}
	}
	if local != nil {
		if t != nil {
			t.Close()
		}
		return nil, local
	}
	return t, nil
}

func trimZero(b []byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b
}

// setupLocal loads the driver, picks the GPU (pick), and allocates the
// heap. Errors match ErrNotSupported, but for an ordinal out of range.
func (t *Transport) setupLocal(dev Choice, libcuda string) error {
	notSupported := func(err error, what string) error {
		return errs.Mark(errs.Wrap(err, t.me, "Init", "%s", what), errs.ErrNotSupported)
	}
	if err := cuda.LoadLibrary(libcuda); err != nil {
		return notSupported(err, "no GPU")
	}
	n, err := cuda.DeviceCount()
	if err != nil || n == 0 {
		if err == nil {
			err = errors.New("cuda: no devices")
		}
		return notSupported(err, "no GPU")
	}
	if err := t.pick(dev, n); err != nil {
		return err
	}
	if t.DevName, err = t.Dev.Name(); err != nil {
		return notSupported(err, "GPU name")
	}
	if t.BusID, err = t.Dev.PCIBusID(); err != nil {
		return notSupported(err, "GPU PCI bus id")
	}
	if t.Ctx == nil {
		if t.Ctx, err = t.Dev.RetainPrimary(); err != nil {
			return notSupported(err, fmt.Sprintf("CUDA context on GPU %d", t.Dev))
		}
	}
	if err := t.allocHeap(t.heapMax, notSupported); err != nil {
		return err
	}
	if err := t.Ctx.MemsetD8(t.own, 0, int(t.size)); err != nil {
		return notSupported(err, "clearing the GPU heap")
	}
	t.fresh = t.control
	if t.Stream, err = t.Ctx.StreamCreate(cuda.StreamNonBlocking); err != nil {
		return notSupported(err, "creating the host stream")
	}
	return nil
}

// pick chooses the GPU among n devices (see Choice) and says why in
// DevWhy. It records the calling thread's current context for
// RestoreCaller, and adopts it when no ordinal was asked for.
func (t *Transport) pick(dev Choice, n int) error {
	var err error
	if t.caller, err = cuda.SaveThreadContext(); err != nil {
		return errs.Mark(errs.Wrap(err, t.me, "Init", "the calling thread's CUDA context"), errs.ErrNotSupported)
	}
	t.callerSaved = true
	if dev.Source != "" { // asked for: WithDevice or GOSHMEM_DEVICE
		if dev.Ordinal < 0 || dev.Ordinal >= n {
			return errs.Hint(errs.ErrInvalidArgument, fmt.Sprintf("choose a device in [0, %d)", n), t.me, "Init",
				"%s=%d: no such GPU; this node has %d, valid range [0, %d)", dev.Source, dev.Ordinal, n, n)
		}
		t.Dev, t.DevWhy = cuda.Device(dev.Ordinal), dev.Source
		return nil
	}
	cur, err := cuda.CurrentContext()
	if err != nil {
		return errs.Mark(errs.Wrap(err, t.me, "Init", "the calling thread's CUDA context"), errs.ErrNotSupported)
	}
	if cur != nil {
		t.Ctx, t.Dev, t.DevWhy = cur, cur.Device(), "the calling thread's current CUDA context"
		return nil
	}
	t.Dev = cuda.Device(dev.LocalRank % n)
	t.DevWhy = fmt.Sprintf("local rank %d modulo %d devices", dev.LocalRank, n)
	return nil
}

// RestoreCaller makes the context that was current on the calling thread
// before Setup current again: Init's CUDA calls on that thread leave it as
// the program had it. Call it on the thread that ran Setup.
func (t *Transport) RestoreCaller() error {
	if !t.callerSaved {
		return nil
	}
	return t.caller.Restore()
}

// writeState builds this PE's device state (world team in slot 0) and its
// team table, and copies them to the GPU: one allocation, the state then
// the epochs and the table (TeamTableImage).
func (t *Transport) writeState() error {
	t.img = State{MyPE: int32(t.me), NPEs: int32(t.npes), HeapSize: t.size, AllPeersSameDevice: true, CollLLBytes: t.CollLL,
		MaxTeams: uint32(t.maxTeams)}
	for pe, p := range t.peers {
		t.img.HeapBase[pe] = uint64(p)
		if p != 0 && t.busIDs[pe] != t.BusID {
			t.img.AllPeersSameDevice = false
		}
	}
	if err := t.newErrorRecord(); err != nil {
		return errs.Wrap(err, t.me, "Init", "device error record")
	}
	var err error
	if t.state, err = t.Ctx.MemAlloc(StateSize + TeamTableBytes(t.maxTeams)); err != nil {
		return errs.Wrap(err, t.me, "Init", "device state and team table (%d team slots)", t.maxTeams)
	}
	table, teams, epochs := TeamTableImage(t.maxTeams, t.npes, t.me, uint64(t.state)+StateSize)
	t.img.Teams, t.img.TeamEpoch = teams, epochs
	t.img.InitTeams(t.npes)
	if err := t.Ctx.MemcpyHtoD(t.state+StateSize, unsafe.Pointer(&table[0]), len(table)); err != nil {
		return err
	}
	return t.syncState()
}

func (t *Transport) syncState() error {
	b := t.img.Bytes()
	return t.Ctx.MemcpyHtoD(t.state, unsafe.Pointer(&b[0]), len(b))
}

// SetTeam publishes a team in row slot of the device team table (slot in
// [0, MaxTeams()), the team's slot): it zeroes this PE's psync words and
// LL packets of the slot (a packet of the slot's previous team could carry
// a tag the new team's epochs reach) and the slot's epoch, then writes the
// team's row: in the table in device memory, and for a row the state also
// holds (InlineTeams) in the state and in every loaded module's constant
// copy. Only those bytes are written: the device owns the other slots'
// epochs. The caller must synchronize the team's members afterwards,
// before any of them runs a device barrier on it.
func (t *Transport) SetTeam(slot int, tm Team) error {
	if slot < 0 || slot >= t.maxTeams {
		return errs.New(errs.ErrInvalidArgument, t.me, "SetTeam", "team slot %d; must be in [0, %d) (GOSHMEM_MAX_TEAMS)", slot, t.maxTeams)
	}
	base := t.own + cuda.DevicePtr(teamSlotOff(slot))
	if err := t.Ctx.MemsetD8(base, 0, psyncSlot); err != nil {
		return err
	}
	if err := t.Ctx.MemsetD8(base+collLLInSlot, 0, collLLSlot); err != nil {
		return err
	}
	var zero uint64
	if err := t.Ctx.MemcpyHtoD(cuda.DevicePtr(t.img.TeamEpoch)+cuda.DevicePtr(8*slot), unsafe.Pointer(&zero), 8); err != nil {
		return err
	}
	row := tm.Bytes()
	if err := t.Ctx.MemcpyHtoD(cuda.DevicePtr(t.img.Teams)+cuda.DevicePtr(TeamSize*slot), unsafe.Pointer(&row[0]), TeamSize); err != nil {
		return err
	}
	if slot >= InlineTeams {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.img.InlineTeams[slot] = tm
	o := cuda.DevicePtr(offInline + TeamSize*slot)
	if err := t.Ctx.MemcpyHtoD(t.state+o, unsafe.Pointer(&row[0]), TeamSize); err != nil {
		return err
	}
	for _, c := range t.consts {
		if err := t.Ctx.MemcpyHtoD(c+o, unsafe.Pointer(&row[0]), TeamSize); err != nil {
			return err
		}
	}
	return nil
}

// MaxTeams is the team table's rows (GOSHMEM_MAX_TEAMS).
func (t *Transport) MaxTeams() int { return t.maxTeams }

// ControlBytes is the front of the heap that the allocator never hands
// out (ControlBytes(MaxTeams())).
func (t *Transport) ControlBytes() uint64 { return t.control }

// StatePtr is the device address of this PE's device state.
func (t *Transport) StatePtr() cuda.DevicePtr { return t.state }

// Base is this PE's own heap base (device address).
func (t *Transport) Base() cuda.DevicePtr { return t.own }

// Size is the heap size per PE.
func (t *Transport) Size() uint64 { return t.size }

// SharesDevice reports whether another PE of this node (one whose heap is
// mapped here) uses this PE's GPU.
func (t *Transport) SharesDevice() bool { return t.DeviceSharers() > 1 }

// DeviceSharers is the number of PEs whose kernels run on this GPU: this
// one and the mapped peers (this node) with its PCI bus id.
func (t *Transport) DeviceSharers() int {
	n := 1
	for pe, p := range t.peers {
		if pe != t.me && p != 0 && t.busIDs[pe] == t.BusID {
			n++
		}
	}
	return n
}

// DeviceSharersOf is DeviceSharers as PE pe counts it: the PEs mapped here
// whose GPU is pe's (1 for a PE not mapped here). The PEs of one node map
// the same peers, so every member of a team mapped here agrees on it.
func (t *Transport) DeviceSharersOf(pe int) int {
	if pe < 0 || pe >= len(t.peers) || t.peers[pe] == 0 {
		return 1
	}
	n := 0
	for q, p := range t.peers {
		if p != 0 && t.busIDs[q] == t.busIDs[pe] {
			n++
		}
	}
	return max(n, 1)
}

// AllPeersSameDevice reports whether every reachable PE shares this GPU.
func (t *Transport) AllPeersSameDevice() bool { return t.img.AllPeersSameDevice }

// Reachable reports whether pe's heap is mapped here.
func (t *Transport) Reachable(pe int) bool { return t.peers[pe] != 0 }

// BusIDs returns every PE's GPU PCI bus id.
func (t *Transport) BusIDs() []string { return t.busIDs }

// InstallState points a loaded module's goshmemi_device_state at this PE's
// state and fills its constant-memory copy goshmemi_device_state_c (the
// header's hot-path view). A module that does not include goshmem.h lacks
// the symbols: that is not an error (found=false).
func (t *Transport) InstallState(m *cuda.Module) (found bool, err error) {
	p, n, err := m.Global("goshmemi_device_state")
	if err != nil {
		return false, nil
	}
	if n != 8 {
		return true, errs.New(errs.ErrInvalidArgument, t.me, "LoadModule",
			"goshmemi_device_state is %d bytes in the module, want 8 (a pointer): module built against another goshmem.h?", n)
	}
	v := uint64(t.state)
	if err := t.Ctx.MemcpyHtoD(p, unsafe.Pointer(&v), 8); err != nil {
		return true, err
	}
	c, cn, err := m.Global("goshmemi_device_state_c")
	if err != nil {
		return true, errs.Hint(errs.ErrInvalidArgument, "rebuild the module against this goshmem's include/goshmem.h",
			t.me, "LoadModule", "the module has goshmemi_device_state but not goshmemi_device_state_c (an older goshmem.h)")
	}
	if cn != StateSize {
		return true, errs.New(errs.ErrInvalidArgument, t.me, "LoadModule",
			"goshmemi_device_state_c is %d bytes in the module, this goshmem's state is %d: module built against another goshmem.h?", cn, StateSize)
	}
	// Under mu: SetTeam updates the image's inline rows and every
	// installed copy under it, so no copy misses a row.
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.img.Bytes()
	if err := t.Ctx.MemcpyHtoD(c, unsafe.Pointer(&b[0]), len(b)); err != nil {
		return true, err
	}
	t.consts = append(t.consts, c)
	return true, nil
}

// ForgetModule stops updating a module's constant state (it was unloaded).
func (t *Transport) ForgetModule(m *cuda.Module) {
	c, _, err := m.Global("goshmemi_device_state_c")
	if err != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, x := range t.consts {
		if x == c {
			t.consts = append(t.consts[:i], t.consts[i+1:]...)
			return
		}
	}
}

// ErrorCode reads the device state's error word (set by a device call that
// saw bad input).
func (t *Transport) ErrorCode() (code, info uint64, err error) {
	var b [16]byte
	if err := t.Ctx.MemcpyDtoH(unsafe.Pointer(&b[0]), t.state+offErrorCode, 16); err != nil {
		return 0, 0, err
	}
	return binary.LittleEndian.Uint64(b[:]), binary.LittleEndian.Uint64(b[8:]), nil
}

// Name implements transport.Transport.
func (t *Transport) Name() string {
	if t.img.AllPeersSameDevice {
		return "cuda (same GPU)"
	}
	return "cuda (IPC/NVLink)"
}

// Put implements transport.Transport: src is staged through pinned memory
// so the copy has completed (is visible to kernels) when Put returns.
func (t *Transport) Put(_ *quiet.Queue, pe int, off uint64, src []byte) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ensureStage(); err != nil {
		return err
	}
	stage := unsafe.Slice((*byte)(t.stage), t.stageN)
	for done := 0; done < len(src); {
		n := copy(stage, src[done:])
		if err := t.Ctx.MemcpyHtoD(t.peers[pe]+cuda.DevicePtr(off)+cuda.DevicePtr(done), t.stage, n); err != nil {
			return errs.Wrap(err, t.me, "Put", "the GPU heap of PE %d", pe)
		}
		done += n
	}
	return nil
}

func (t *Transport) ensureStage() error {
	if t.stage != nil {
		return nil
	}
	p, err := t.Ctx.MemHostAlloc(stageBytes, cuda.HostAllocPortable)
	if err != nil {
		return err
	}
	t.stage, t.stageN = p, stageBytes
	return nil
}

// PutNBI implements transport.Transport (complete on return here).
func (t *Transport) PutNBI(q *quiet.Queue, pe int, off uint64, src []byte) error {
	return t.Put(q, pe, off, src)
}

// Get implements transport.Transport (device-to-pageable copies complete
// before cuMemcpyDtoH returns).
func (t *Transport) Get(_ *quiet.Queue, dst []byte, pe int, off uint64) error {
	if len(dst) == 0 {
		return nil
	}
	if err := t.Ctx.MemcpyDtoH(unsafe.Pointer(&dst[0]), t.peers[pe]+cuda.DevicePtr(off), len(dst)); err != nil {
		return errs.Wrap(err, t.me, "Get", "the GPU heap of PE %d", pe)
	}
	return nil
}

// GetNBI implements transport.Transport.
func (t *Transport) GetNBI(q *quiet.Queue, dst []byte, pe int, off uint64) error {
	return t.Get(q, dst, pe, off)
}

// Atomic implements transport.Transport with a one-thread kernel doing
// atom.global.sys on the target word, on the host's non-blocking stream.
// 1- and 2-byte widths are not supported on device arrays from the host.
func (t *Transport) Atomic(_ *quiet.Queue, op transport.AMO, width int, pe int, off uint64, v, cmp uint64) (uint64, error) {
	if width != 4 && width != 8 {
		return 0, errs.Hint(errs.ErrNotSupported, "use 32- or 64-bit elements for atomics on GPU arrays from the host",
			t.me, "atomic", "%d-byte atomic on a GPU array from the host", width)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if err := t.ensureAMO(); err != nil {
		return 0, err
	}
	w := 0
	if width == 8 {
		w = 1
	}
	fn := t.amoFn[w][op]
	t.args.Reset().Ptr(t.peers[pe] + cuda.DevicePtr(off)).U64(v).U64(cmp).Ptr(t.amoOutD)
	one := [3]uint32{1, 1, 1}
	if err := fn.Launch(one, one, 0, t.Stream, &t.args); err != nil {
		return 0, err
	}
	if err := t.Stream.Synchronize(); err != nil {
		return 0, errs.Wrap(err, t.me, "atomic", "%v on the GPU heap of PE %d", op, pe)
	}
	if width == 4 {
		return uint64(*(*uint32)(t.amoOut)), nil
	}
	return *(*uint64)(t.amoOut), nil
}

// Preload loads the host-atomics module, and the soft NIC's copy module
// when copies is set, before any kernel of the job runs. A module load
// may wait until the GPU runs no kernel (every process's, under MPS):
// loaded on first use by the proxy's or the soft NIC's host thread while
// a kernel waits for that thread, it would never return. A failure is
// not returned: the first call that needs the module loads it again and
// reports it.
func (t *Transport) Preload(copies bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	_ = t.ensureAMO()
	if copies {
		_ = t.ensureCopy()
	}
}

func (t *Transport) ensureAMO() error {
	if t.amoMod != nil {
		return nil
	}
	m, err := t.Ctx.ModuleLoadData([]byte(amoPTX()))
	if err != nil {
		return errs.Wrap(err, t.me, "atomic", "loading the host-atomics PTX module")
	}
	for w, width := range []int{32, 64} {
		for op := transport.AMOFetch; op <= transport.AMOXor; op++ {
			if t.amoFn[w][op], err = m.Function(amoKernel(op, width)); err != nil {
				return err
			}
		}
	}
	if t.amoOut, err = t.Ctx.MemHostAlloc(64, cuda.HostAllocPortable|cuda.HostAllocDeviceMap); err != nil {
		return err
	}
	if t.amoOutD, err = t.Ctx.MemHostGetDevicePointer(t.amoOut); err != nil {
		return err
	}
	t.amoMod = m
	return nil
}

// Fence implements transport.Transport: host copies complete in order.
func (t *Transport) Fence(_ *quiet.Queue) error { return nil }

// Ptr implements transport.Transport: the host cannot load/store GPU memory.
func (t *Transport) Ptr(int, uint64) unsafe.Pointer { return nil }

// ZeroBlock makes [off, off+n) of this PE's heap, a block being handed
// out, zero: it clears the part that may have been used before and skips
// what was never handed out since it was cleared (the heap at Init, a
// prepared chunk). The bytes are zero when it returns. The caller
// serializes it with Grow.
func (t *Transport) ZeroBlock(off uint64, n int) error {
	end := off + uint64(n)
	z := end // [off, z) is cleared
	if t.fresh < end {
		z = max(off, t.fresh)
	}
	if z > off {
		if err := t.Ctx.MemsetD8(t.own+cuda.DevicePtr(off), 0, int(z-off)); err != nil { // waits for completion (see MemsetD8)
			return err
		}
	}
	t.fresh = max(t.fresh, end)
	return nil
}

// Close unmaps peers and frees everything (safe on a partly opened one).
func (t *Transport) Close() error {
	if t.Ctx == nil {
		return nil
	}
	var errList []error
	for pe, o := range t.opened {
		if o {
			errList = append(errList, t.Ctx.IpcCloseMemHandle(t.peers[pe]))
		}
	}
	if t.amoMod != nil {
		errList = append(errList, t.amoMod.Unload())
	}
	if t.amoOut != nil {
		errList = append(errList, t.Ctx.MemFreeHost(t.amoOut))
	}
	if t.stage != nil {
		errList = append(errList, t.Ctx.MemFreeHost(t.stage))
	}
	if t.copyMod != nil {
		errList = append(errList, t.copyMod.Unload())
	}
	if t.nicStage != nil {
		errList = append(errList, t.Ctx.MemFreeHost(t.nicStage))
	}
	// The host stream goes after every kernel that ran on it (the atomics,
	// the soft NIC's copies) and before the context.
	errList = append(errList, t.Stream.Destroy())
	t.Stream = cuda.Stream{}
	if t.state != 0 {
		errList = append(errList, t.Ctx.MemFree(t.state))
	}
	if t.errRec != nil {
		errList = append(errList, t.Ctx.MemFreeHost(t.errRec))
		t.errRec = nil
	}
	if t.vmm.reserved != nil {
		errList = append(errList, t.closeVMM())
	} else if t.own != 0 {
		errList = append(errList, t.Ctx.MemFree(t.own))
	}
	errList = append(errList, t.Ctx.Release())
	t.Ctx = nil
	return errors.Join(errList...)
}
