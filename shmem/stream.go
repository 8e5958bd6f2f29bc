package shmem

import (
	"math"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/gpulib"
	core "github.com/goshmem/goshmem/internal/runtime"
)

// Stream-ordered communication (Ref: NVSHMEM nvshmemx_*_on_stream): each
// call validates its arguments, enqueues the operation on the stream and
// returns without waiting for the GPU; the operation runs in stream order
// with the kernels and copies queued there (nil stream: the PE's default
// stream, the one Launch uses for a nil LaunchConfig.Stream). Errors in
// the arguments are returned at the call; a failure while the operation
// runs surfaces at the next Synchronize of the stream (or the PE), like a
// kernel's. The operations run goshmem's own kernels (internal/gpulib,
// embedded in the binary) or, where a plain copy does the job, a stream
// copy: a put or get to a PE whose heap this GPU maps (CUDA IPC, NVLink)
// is cuMemcpyDtoDAsync; every PE the GPU reaches through the proxy or
// IBGDA (GOSHMEM_GPU_TRANSPORT) goes through a kernel.
//
// Collectives on stream: every member enqueues the same collective, and
// the GPU work of all members must be able to run at the same time (one
// GPU shared under MPS, or one GPU per PE), as for any device barrier.
// One team's on-stream collectives and barriers must be issued on one
// stream per PE (they share the team's device barrier state), and a team
// needs a device slot (Team.DeviceID >= 0).

// StreamFromHandle wraps h, a CUstream of this PE's GPU context made by
// another library (cuBLAS, a framework), for the on-stream calls and
// Launch; h = 0 is the legacy NULL stream. The handle stays the other
// library's: Destroy only retires the wrapper. Called before Init or
// without a GPU, it returns a Stream whose every use reports why.
func StreamFromHandle(h uintptr) *Stream {
	r, err := rt("StreamFromHandle")
	if err != nil {
		return &Stream{err: err}
	}
	cs, err := r.c.WrapStream(h)
	if err != nil {
		return &Stream{err: err}
	}
	return &Stream{r: r, s: cs}
}

// Handle is the stream's CUstream handle, for another library (0 for a
// stream StreamFromHandle could not wrap).
func (s *Stream) Handle() uintptr {
	if s == nil || s.s == nil {
		return 0
	}
	return s.s.Handle()
}

// use resolves s for op: the runtime and the core stream (nil: the
// default stream). The call is in flight (enter) until the caller's
// leave, unless use fails.
func (s *Stream) use(op string) (_ *runtime, _ *core.Stream, err error) {
	r, err := enter(op)
	if err != nil {
		return nil, nil, err
	}
	defer func() {
		if err != nil {
			r.leave()
		}
	}()
	if s == nil {
		if err := r.c.NeedGPU(op); err != nil {
			return nil, nil, err
		}
		return r, nil, nil
	}
	if s.err != nil {
		return nil, nil, errs.Wrap(s.err, r.me, op, "a stream StreamFromHandle could not wrap")
	}
	if s.r != r {
		return nil, nil, errs.New(errs.ErrInvalidArgument, r.me, op, "the stream belongs to a finalized runtime")
	}
	return r, s.s, nil
}

// devSpan checks that a is a live symmetric GPU array with elements
// [idx, idx+n) and pe a PE, and returns the elements' heap offset (the
// symmetric offset on every PE). A registered buffer is refused: it has
// no heap offset, and no peer knows it.
func devSpan[T Elem](r *runtime, a Array[T], op, name string, idx, n, pe int) (uint64, error) {
	if err := devArray(r, a, op, name); err != nil {
		return 0, err
	}
	if a.b.reg != 0 {
		return 0, notSymmetric(r, op, name)
	}
	if uint(pe) >= uint(r.npes) {
		return 0, errs.New(errs.ErrPEOutOfRange, r.me, op, "pe = %d; must be in [0, %d)", pe, r.npes)
	}
	if idx < 0 || n < 0 || idx > a.b.n || n > a.b.n-idx {
		return 0, errs.New(errs.ErrOutOfBounds, r.me, op, "%s: index %d, length %d: elements [%d, %s) are outside the array's [0, %d)",
			name, idx, n, idx, exactSum(idx, n), a.b.n)
	}
	return a.b.off + uint64(idx)*uint64(elem.Size[T]()), nil
}

// devArray checks that a is a live GPU array (AllocDevice or
// RegisterDevice).
func devArray[T Elem](r *runtime, a Array[T], op, name string) error {
	if a.b == nil || a.b.freed.Load() || a.b.gen != r.gen {
		return badArray(r, a, op+" ("+name+")")
	}
	if !a.b.dev {
		return errs.Hint(errs.ErrInvalidArgument, "allocate it with shmem.AllocDevice", r.me, op,
			"%s is a host array: stream-ordered operations and collectives on GPU arrays need every array on the GPU", name)
	}
	return nil
}

// localDev checks the local side of a stream call: a live GPU array,
// symmetric or registered, with elements [idx, idx+n). It returns the
// device address of element idx on this PE.
func localDev[T Elem](r *runtime, a Array[T], op, name string, idx, n int) (uint64, error) {
	if err := devArray(r, a, op, name); err != nil {
		return 0, err
	}
	if idx < 0 || n < 0 || idx > a.b.n || n > a.b.n-idx {
		return 0, errs.New(errs.ErrOutOfBounds, r.me, op, "%s: index %d, length %d: elements [%d, %s) are outside the array's [0, %d)",
			name, idx, n, idx, exactSum(idx, n), a.b.n)
	}
	at := uint64(idx) * uint64(elem.Size[T]())
	if a.b.reg != 0 {
		return a.b.reg + at, nil
	}
	return r.devLocal(a.b.off + at), nil
}

// devPeer is the device's address of pe's heap (0: a remote transport
// carries it), or an error when the GPU cannot reach pe at all.
func (r *runtime) devPeer(pe int, op string) (cuda.DevicePtr, error) {
	g := r.c.GPU
	if p := g.DeviceAddr(pe); p != 0 || g.DeviceRemote() {
		return p, nil
	}
	return 0, errs.Hint(errs.ErrNotSupported, "set GOSHMEM_GPU_TRANSPORT=proxy (or ibgda) to reach other nodes' GPUs", r.me, op,
		"the GPU heap of PE %d is not mapped on this GPU and no GPU remote transport is configured", pe)
}

// devLocal is this PE's device address of heap offset off.
func (r *runtime) devLocal(off uint64) uint64 { return uint64(r.c.GPU.Base()) + off }

// streamRMA is the validated part of PutOnStream, GetOnStream and
// PutSignalOnStream: the runtime, the core stream, the heap offset of the
// remote side (dst of a put, src of a get), the device address of the
// local side on this PE, the bytes to move and the device's address of
// pe's heap (0: a remote transport carries it).
type streamRMA struct {
	r     *runtime
	cs    *core.Stream
	roff  uint64
	laddr uint64
	bytes int
	peer  cuda.DevicePtr
}

// streamRMAArgs is the prologue of the on-stream puts and gets. It
// resolves s, checks dst[dstIdx:dstIdx+n] and src[srcIdx:srcIdx+n] (GPU
// arrays; dst on pe and src on this PE, or the other way round for a get),
// runs more (the caller's own checks, nil for none) and checks that this
// GPU reaches pe, in that order, returning the first error. The local side
// may be a registered buffer (RegisterDevice); the remote side must be
// symmetric. Without an
// error the call is in flight until the caller's x.r.leave.
func streamRMAArgs[T Elem](s *Stream, op string, get bool, dst Array[T], dstIdx int, src Array[T], srcIdx, n, pe int,
	more func(r *runtime) error) (x streamRMA, err error) {
	if x.r, x.cs, err = s.use(op); err != nil {
		return x, err
	}
	defer func() {
		if err != nil {
			err = x.r.apiErr(err, op)
			x.r.leave()
		}
	}()
	if get {
		if x.laddr, err = localDev(x.r, dst, op, "dst", dstIdx, n); err != nil {
			return x, err
		}
		if x.roff, err = devSpan(x.r, src, op, "src", srcIdx, n, pe); err != nil {
			return x, err
		}
	} else {
		if x.roff, err = devSpan(x.r, dst, op, "dst", dstIdx, n, pe); err != nil {
			return x, err
		}
		if x.laddr, err = localDev(x.r, src, op, "src", srcIdx, n); err != nil {
			return x, err
		}
	}
	if more != nil {
		if err := more(x.r); err != nil {
			return x, err
		}
	}
	if x.peer, err = x.r.devPeer(pe, op); err != nil {
		return x, err
	}
	x.bytes = n * elem.Size[T]()
	return x, nil
}

// PutOnStream enqueues on s a put of src[srcIdx:srcIdx+n] (this PE) into
// dst[dstIdx:dstIdx+n] on pe; both are GPU arrays, and src may be a
// registered buffer (RegisterDevice). When the stream's next operation
// starts the data has been delivered to pe (Ref: NVSHMEM
// nvshmemx_putmem_on_stream; here also remotely complete).
func PutOnStream[T Elem](s *Stream, dst Array[T], dstIdx int, src Array[T], srcIdx, n, pe int) error {
	const op = "PutOnStream"
	x, err := streamRMAArgs(s, op, false, dst, dstIdx, src, srcIdx, n, pe, nil)
	if err != nil {
		return err
	}
	r := x.r
	defer r.leave()
	if x.peer != 0 {
		return r.apiErr(r.c.CopyOnStream(x.cs, x.peer+cuda.DevicePtr(x.roff), cuda.DevicePtr(x.laddr), x.bytes, op), op)
	}
	return r.apiErr(r.c.LibLaunch(x.cs, gpulib.Put, &[gpulib.NArgs]uint64{r.devLocal(x.roff), x.laddr, uint64(x.bytes), uint64(pe)}, op), op)
}

// GetOnStream enqueues on s a get of src[srcIdx:srcIdx+n] on pe into
// dst[dstIdx:dstIdx+n] (this PE); both are GPU arrays, and dst may be a
// registered buffer (RegisterDevice). The data is in dst when the stream's
// next operation starts (Ref: NVSHMEM nvshmemx_getmem_on_stream).
func GetOnStream[T Elem](s *Stream, dst Array[T], dstIdx int, src Array[T], srcIdx, n, pe int) error {
	const op = "GetOnStream"
	x, err := streamRMAArgs(s, op, true, dst, dstIdx, src, srcIdx, n, pe, nil)
	if err != nil {
		return err
	}
	r := x.r
	defer r.leave()
	if x.peer != 0 {
		return r.apiErr(r.c.CopyOnStream(x.cs, cuda.DevicePtr(x.laddr), x.peer+cuda.DevicePtr(x.roff), x.bytes, op), op)
	}
	return r.apiErr(r.c.LibLaunch(x.cs, gpulib.Get, &[gpulib.NArgs]uint64{x.laddr, r.devLocal(x.roff), uint64(x.bytes), uint64(pe)}, op), op)
}

// PutSignalOnStream enqueues on s a put of src[srcIdx:srcIdx+n] into
// dst[dstIdx:] on pe followed by the update of sig[sigIdx] on pe with
// sigVal (SignalSet or SignalAdd): a PE that sees the signal sees the data
// (Ref: NVSHMEM nvshmemx_putmem_signal_on_stream). dst, src and sig are
// GPU arrays; src may be a registered buffer (RegisterDevice).
func PutSignalOnStream[T Elem](s *Stream, dst Array[T], dstIdx int, src Array[T], srcIdx, n int, sig Array[uint64], sigIdx int, sigVal uint64, op SignalOp, pe int) error {
	const name = "PutSignalOnStream"
	var goff, code uint64
	x, err := streamRMAArgs(s, name, false, dst, dstIdx, src, srcIdx, n, pe, func(r *runtime) error {
		var err error
		if goff, err = devSpan(r, sig, name, "sig", sigIdx, 1, pe); err != nil {
			return err
		}
		switch op {
		case SignalSet:
			code = gpulib.SignalSet
		case SignalAdd:
			code = gpulib.SignalAdd
		default:
			return errs.New(errs.ErrInvalidArgument, r.me, name, "op = %d; must be SignalSet or SignalAdd", int(op))
		}
		return nil
	})
	if err != nil {
		return err
	}
	r := x.r
	defer r.leave()
	return r.apiErr(r.c.LibLaunch(x.cs, gpulib.PutSignal, &[gpulib.NArgs]uint64{r.devLocal(x.roff), x.laddr, uint64(x.bytes),
		r.devLocal(goff), sigVal, code, uint64(pe)}, name), name)
}

// libCmp maps c to the library's code (lib.h GOSHMEMI_LIB_CMP_*).
var libCmp = [...]uint64{CmpEQ: gpulib.CmpEQ, CmpNE: gpulib.CmpNE, CmpGT: gpulib.CmpGT, CmpGE: gpulib.CmpGE,
	CmpLT: gpulib.CmpLT, CmpLE: gpulib.CmpLE}

// SignalWaitUntilOnStream enqueues on s a wait until this PE's sig[idx]
// (a GPU array) satisfies (sig[idx] cmp v): the stream's later work runs
// after the wait ends and sees the data published before the signal (Ref:
// NVSHMEM nvshmemx_signal_wait_until_on_stream).
func SignalWaitUntilOnStream(s *Stream, sig Array[uint64], idx int, cmp Cmp, v uint64) error {
	const op = "SignalWaitUntilOnStream"
	r, cs, err := s.use(op)
	if err != nil {
		return err
	}
	defer r.leave()
	off, err := devSpan(r, sig, op, "sig", idx, 1, r.me)
	if err != nil {
		return r.apiErr(err, op)
	}
	if !cmp.valid() {
		return errs.New(errs.ErrInvalidArgument, r.me, op, "cmp = %d; must be one of CmpEQ..CmpLE", int(cmp))
	}
	return r.apiErr(r.c.LibLaunch(cs, gpulib.SignalWait, &[gpulib.NArgs]uint64{r.devLocal(off), libCmp[cmp], v}, op), op)
}

// QuietOnStream enqueues on s the completion of every put, get and atomic
// this PE's GPU issued before it (goshmem_quiet; Ref: NVSHMEM
// nvshmemx_quiet_on_stream).
func QuietOnStream(s *Stream) error {
	r, cs, err := s.use("QuietOnStream")
	if err != nil {
		return err
	}
	defer r.leave()
	return r.apiErr(r.c.LibLaunch(cs, gpulib.Quiet, &[gpulib.NArgs]uint64{}, "QuietOnStream"), "QuietOnStream")
}

// BarrierAllOnStream enqueues on s a barrier of all PEs: quiet, then wait
// until every PE's stream reached its barrier (Ref: NVSHMEM
// nvshmemx_barrier_all_on_stream). Collective. Between two PEs without a
// GPU remote transport it is two stream memory operations, no kernel
// (GOSHMEM_GPU_STREAM_SYNC).
func BarrierAllOnStream(s *Stream) error {
	return TeamWorld.syncOnStream(s, gpulib.Barrier, "BarrierAllOnStream")
}

// SyncAllOnStream enqueues on s a sync of all PEs: it waits until every
// PE's stream reached it, ordering (not completing) earlier stores (Ref:
// NVSHMEM nvshmemx_sync_all_on_stream). Collective.
func SyncAllOnStream(s *Stream) error {
	return TeamWorld.syncOnStream(s, gpulib.Sync, "SyncAllOnStream")
}

// BarrierOnStream enqueues on s a barrier of t's members (quiet, then
// wait for every member; Ref: NVSHMEM nvshmemx_barrier_on_stream).
// Collective over t.
func (t Team) BarrierOnStream(s *Stream) error {
	return t.syncOnStream(s, gpulib.Barrier, "Team.BarrierOnStream")
}

// SyncOnStream enqueues on s a sync of t's members: it waits until every
// member's stream reached it, ordering (not completing) earlier stores
// (Ref: NVSHMEM nvshmemx_team_sync_on_stream). Collective over t.
func (t Team) SyncOnStream(s *Stream) error {
	return t.syncOnStream(s, gpulib.Sync, "Team.SyncOnStream")
}

// syncOnStream queues t's barrier (k = gpulib.Barrier) or sync (gpulib.Sync)
// on s (teamSyncOnStream). The team's memory-operation syncs and its
// kernels' syncs use separate words and epochs, so they mix freely on the
// team's one stream.
func (t Team) syncOnStream(s *Stream, k gpulib.Kernel, op string) error {
	r, cs, err := s.use(op)
	if err != nil {
		return err
	}
	defer r.leave()
	id, _, err := r.devTeam(t, op)
	if err != nil {
		return err
	}
	return r.apiErr(r.teamSyncOnStream(cs, t, id, k, op), op)
}

// teamSyncOnStream queues the barrier (k = gpulib.Barrier) or sync
// (gpulib.Sync) of t (device slot id) on cs: stream memory operations
// where the runtime can (StreamSync), else the library's kernel.
func (r *runtime) teamSyncOnStream(cs *core.Stream, t Team, id int, k gpulib.Kernel, op string) error {
	ct, err := r.team(t, op)
	if err != nil {
		return err
	}
	if ok, err := r.c.StreamSync(cs, id, ct.Start, ct.Stride, ct.Size, ct.Me, op); ok || err != nil {
		return err
	}
	return r.c.LibLaunchColl(cs, k, &[gpulib.NArgs]uint64{uint64(id)}, 0, op)
}

// devTeam is t's device team id (world: GOSHMEM_TEAM_WORLD) and size, or
// an error when t has none here.
func (r *runtime) devTeam(t Team, op string) (int, int, error) {
	if err := r.c.NeedGPU(op); err != nil {
		return 0, 0, err
	}
	ct, err := r.team(t, op)
	if err != nil {
		return 0, 0, err
	}
	if t == TeamWorld {
		return 0, ct.Size, nil
	}
	id := t.DeviceID()
	if id < 0 {
		return 0, 0, errs.Hint(errs.ErrNotSupported, "use a strided team (TeamWorld, a split of it)", r.me, op,
			"the team has no device id: its members are not evenly strided in the world (a listed team)")
	}
	return id, ct.Size, nil
}

// libType is the reduction kernel's element type for T.
func libType[T Elem]() gpulib.Type {
	switch elem.HalfKind[T]() {
	case elem.KindFloat16:
		return gpulib.Float16
	case elem.KindBFloat16:
		return gpulib.BFloat16
	}
	var z T
	switch any(z).(type) {
	case int8:
		return 0
	case int16:
		return 1
	case int32:
		return 2
	case int64:
		return 3
	case uint8:
		return 4
	case uint16:
		return 5
	case uint32:
		return 6
	case uint64:
		return 7
	case float32:
		return gpulib.Float32
	case float64:
		return gpulib.Float64
	}
	// a type defined on one of them
	size, signed := elem.Size[T](), z-1 < 0
	if elem.IsFloat[T]() {
		if size == 4 {
			return gpulib.Float32
		}
		return gpulib.Float64
	}
	t := gpulib.Type(map[int]int{1: 0, 2: 1, 4: 2, 8: 3}[size])
	if !signed {
		t += 4
	}
	return t
}

// collDev validates an on-stream collective's arrays (GPU arrays of at
// least dstN and srcN elements) and returns their heap offsets.
func collDev[T Elem](r *runtime, op string, dst, src Array[T], dstN, srcN int) (uint64, uint64, error) {
	doff, err := devSpan(r, dst, op, "dst", 0, dstN, r.me)
	if err != nil {
		return 0, 0, err
	}
	soff, err := devSpan(r, src, op, "src", 0, srcN, r.me)
	return doff, soff, err
}

// noPartialOverlap refuses dst and src that overlap without being the
// same elements (Ref: OpenSHMEM 1.6 §9.9.11: in place, or disjoint).
func noPartialOverlap(r *runtime, op string, doff uint64, dn int, soff uint64, sn int, size int) error {
	if doff == soff || doff+uint64(dn*size) <= soff || soff+uint64(sn*size) <= doff {
		return nil
	}
	return errs.New(errs.ErrInvalidArgument, r.me, op, "dst and src overlap without being the same array (in place) or disjoint")
}

// ReduceOnStream enqueues on s the all-reduce of Reduce: n elements of src
// combined with op over t's members into dst on every member (dst may be
// src; Ref: NVSHMEM nvshmemx_<T>_<op>_reduce_on_stream). GPU arrays.
// Every member gets the same bits. Collective over t.
func ReduceOnStream[T Elem](s *Stream, t Team, op Op, dst, src Array[T], n int) error {
	return reduceOnStream(s, t, op, dst, src, n, false, "ReduceOnStream")
}

// ReduceScatterOnStream enqueues on s a reduce-scatter over t: src holds
// t.NPEs() blocks of n elements on every member; the member numbered i in
// t gets in dst[0:n] the reduction with op of every member's block i (Ref:
// NVSHMEM nvshmemx_<T>_<op>_reducescatter_on_stream). dst and src are
// disjoint GPU arrays. Collective over t.
func ReduceScatterOnStream[T Elem](s *Stream, t Team, op Op, dst, src Array[T], n int) error {
	return reduceOnStream(s, t, op, dst, src, n, true, "ReduceScatterOnStream")
}

func reduceOnStream[T Elem](s *Stream, t Team, op Op, dst, src Array[T], n int, scatter bool, name string) (err error) {
	r, cs, err := s.use(name)
	if err != nil {
		return err
	}
	defer func() { err = r.apiErr(err, name); r.leave() }()
	if op < OpSum || op > OpXor {
		return errs.New(errs.ErrInvalidArgument, r.me, name, "op = %d; must be one of OpSum..OpXor", int(op))
	}
	if op.Bitwise() && elem.IsFloat[T]() {
		return errs.Hint(errs.ErrInvalidArgument, "use OpSum, OpProd, OpMin or OpMax for floating point",
			r.me, name, "op %v is bitwise; element type %s is floating point", op, elem.Name[T]())
	}
	id, size, err := r.devTeam(t, name)
	if err != nil {
		return err
	}
	if err := blocksFit(r, name, n, size); err != nil {
		return err
	}
	srcN, sc := n, uint64(0)
	if scatter {
		srcN, sc = n*size, 1
	}
	doff, soff, err := collDev(r, name, dst, src, n, srcN)
	if err != nil {
		return err
	}
	overlap := noPartialOverlap
	if scatter {
		overlap = noOverlap
	}
	if err := overlap(r, name, doff, n, soff, srcN, elem.Size[T]()); err != nil {
		return err
	}
	args := &[gpulib.NArgs]uint64{uint64(id), r.devLocal(doff), r.devLocal(soff), uint64(n), uint64(op), sc}
	bytes := n * elem.Size[T]()
	if r.gridPath(t, size, bytes, false) {
		// the device reduction's own zero-copy scheme, its data step on a
		// grid: this PE reduces a 1/size share (all-reduce) or one block
		part := bytes
		if !scatter {
			part = (bytes + size - 1) / size
		}
		return r.gridOnStream(cs, t, id, gpulib.ReducePart(libType[T]()), args, part, name)
	}
	return r.c.LibLaunchColl(cs, gpulib.Reduce(libType[T]()), args, bytes*size, name)
}

// gridPath reports whether a collective over t (size members) runs on a
// grid between two team syncs (gridOnStream), with every member mapped
// here. A reduction of bytes of data takes it from GOSHMEM_GPU_COLL_GRID x
// size/2 bytes, a broadcast, fcollect or alltoall delivering bytes to each
// member from twice that: the two syncs cost about linearly in the
// members, and the one-block movers are faster per byte than the one-block
// reduction (2 and 4 PEs on an H200). Every member decides alike: the same
// arguments and settings, and every member's GPU maps every other member's
// heap or none does (the device collectives assume the same).
func (r *runtime) gridPath(t Team, size, bytes int, mover bool) bool {
	g := r.c.GridMinBytes()
	if size < 2 || g == 0 {
		return false
	}
	from := uint64(g) * uint64(size) / 2
	if mover {
		from *= 2
	}
	return uint64(bytes) >= from && r.teamLoadStore(t, size)
}

// gridOnStream enqueues grid kernel k with args on blocks for bytes of this
// PE's data between two team syncs: the first makes every member's src
// ready, the second keeps every member's buffers untouched until
// everyone's grid kernel is done. A grid that fits beside the other
// members' (GridFused) runs them itself, in one launch; a larger one
// between two team syncs on the stream (StreamSync's memory operations,
// else Sync kernels).
func (r *runtime) gridOnStream(cs *core.Stream, t Team, id int, k gpulib.Kernel, args *[gpulib.NArgs]uint64, bytes int, op string) error {
	ct, err := r.team(t, op)
	if err != nil {
		return err
	}
	blocks := r.c.LibBlocks(k, bytes)
	if r.c.GridFusedTeam(k, bytes, ct.Start, ct.Stride, ct.Size) {
		if k == gpulib.MovePart {
			return r.c.LibLaunchGrid(cs, gpulib.MoveFused, args, blocks, op)
		}
		fused := *args
		fused[gpulib.ArgFused] = 1
		return r.c.LibLaunchGrid(cs, k, &fused, blocks, op)
	}
	if err := r.teamSyncOnStream(cs, t, id, gpulib.Sync, op); err != nil {
		return err
	}
	if err := r.c.LibLaunchGrid(cs, k, args, blocks, op); err != nil {
		return err
	}
	return r.teamSyncOnStream(cs, t, id, gpulib.Sync, op)
}

// teamLoadStore reports whether this GPU maps the heap of every member of
// t (size members).
func (r *runtime) teamLoadStore(t Team, size int) bool {
	ct, err := r.team(t, "")
	if err != nil {
		return false
	}
	for i := 0; i < size; i++ {
		if r.c.GPU.DeviceAddr(ct.PE(i)) == 0 {
			return false
		}
	}
	return true
}

// BroadcastOnStream enqueues on s the Broadcast of n elements of src on
// t's root (a number in t) into dst on every member, root included (Ref:
// NVSHMEM nvshmemx_<T>_broadcast_on_stream). GPU arrays. Collective over t.
func BroadcastOnStream[T Elem](s *Stream, t Team, dst, src Array[T], n, root int) (err error) {
	const op = "BroadcastOnStream"
	r, cs, err := s.use(op)
	if err != nil {
		return err
	}
	defer func() { err = r.apiErr(err, op); r.leave() }()
	id, size, err := r.devTeam(t, op)
	if err != nil {
		return err
	}
	if n < 0 {
		return errs.New(errs.ErrInvalidArgument, r.me, op, "n = %d; must be >= 0", n)
	}
	if root < 0 || root >= size {
		return errs.New(errs.ErrPEOutOfRange, r.me, op, "root = %d; must be in [0, %d) (a number in the team)", root, size)
	}
	doff, soff, err := collDev(r, op, dst, src, n, n)
	if err != nil {
		return err
	}
	nb := n * elem.Size[T]()
	if r.gridPath(t, size, nb, true) {
		return r.gridOnStream(cs, t, id, gpulib.MovePart, &[gpulib.NArgs]uint64{uint64(id), r.devLocal(doff), r.devLocal(soff),
			uint64(nb), gpulib.MoveBroadcast, uint64(root)}, nb, op)
	}
	return r.c.LibLaunchColl(cs, gpulib.Broadcast, &[gpulib.NArgs]uint64{uint64(id), r.devLocal(doff), r.devLocal(soff),
		uint64(nb), uint64(root)}, nb*size, op)
}

// FCollectOnStream enqueues on s the FCollect of n elements of src from
// every member of t into dst (n*t.NPEs() elements) in team order (Ref:
// NVSHMEM nvshmemx_<T>_fcollect_on_stream). GPU arrays. Collective over t.
func FCollectOnStream[T Elem](s *Stream, t Team, dst, src Array[T], n int) error {
	return moveOnStream(s, t, dst, src, n, gpulib.FCollect, "FCollectOnStream")
}

// AllToAllOnStream enqueues on s the AllToAll of t: block j (n elements)
// of src on every member lands at block MyPE-in-t of dst on member j; src
// and dst hold n*t.NPEs() elements (Ref: NVSHMEM
// nvshmemx_<T>_alltoall_on_stream). GPU arrays. Collective over t.
func AllToAllOnStream[T Elem](s *Stream, t Team, dst, src Array[T], n int) error {
	return moveOnStream(s, t, dst, src, n, gpulib.AllToAll, "AllToAllOnStream")
}

func moveOnStream[T Elem](s *Stream, t Team, dst, src Array[T], n int, k gpulib.Kernel, op string) (err error) {
	r, cs, err := s.use(op)
	if err != nil {
		return err
	}
	defer func() { err = r.apiErr(err, op); r.leave() }()
	id, size, err := r.devTeam(t, op)
	if err != nil {
		return err
	}
	if err := blocksFit(r, op, n, size); err != nil {
		return err
	}
	srcN := n
	if k == gpulib.AllToAll {
		srcN = n * size
	}
	doff, soff, err := collDev(r, op, dst, src, n*size, srcN)
	if err != nil {
		return err
	}
	if err := noOverlap(r, op, doff, n*size, soff, srcN, elem.Size[T]()); err != nil {
		return err
	}
	nb := n * elem.Size[T]()
	if r.gridPath(t, size, nb*size, true) {
		what := uint64(gpulib.MoveFCollect)
		if k == gpulib.AllToAll {
			what = gpulib.MoveAllToAll
		}
		return r.gridOnStream(cs, t, id, gpulib.MovePart, &[gpulib.NArgs]uint64{uint64(id), r.devLocal(doff), r.devLocal(soff),
			uint64(nb), what}, nb*size, op)
	}
	return r.c.LibLaunchColl(cs, k, &[gpulib.NArgs]uint64{uint64(id), r.devLocal(doff), r.devLocal(soff), uint64(nb)}, nb*size, op)
}

// blocksFit refuses a block length n < 0, or one whose size blocks (one
// per member) overflow an int: n*size would wrap to a count the arrays
// hold.
func blocksFit(r *runtime, op string, n, size int) error {
	if n < 0 {
		return errs.New(errs.ErrInvalidArgument, r.me, op, "n = %d; must be >= 0", n)
	}
	if size > 1 && n > math.MaxInt/size {
		return errs.New(errs.ErrInvalidArgument, r.me, op, "n = %d: %d blocks of n elements (one per team member) overflow an int; n must be <= %d",
			n, size, math.MaxInt/size)
	}
	return nil
}

// noOverlap refuses overlapping dst and src (fcollect, alltoall).
func noOverlap(r *runtime, op string, doff uint64, dn int, soff uint64, sn int, size int) error {
	if dn == 0 || sn == 0 || doff+uint64(dn*size) <= soff || soff+uint64(sn*size) <= doff {
		return nil
	}
	return errs.New(errs.ErrInvalidArgument, r.me, op, "dst and src overlap; they must be disjoint")
}

// gpuColl runs an on-stream collective on the default stream and waits
// for it: the host collectives on GPU arrays.
func gpuColl(op string, enqueue func() error) error {
	r, err := enter(op)
	if err != nil {
		return err
	}
	defer r.leave()
	if err := enqueue(); err != nil {
		return r.apiErr(err, op)
	}
	return r.apiErr(r.c.SyncStream(nil, op), op)
}
