package runtime

import (
	"encoding/binary"
	"fmt"
	"os"
	"sync"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/gpulib"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
)

// gpuLib is goshmem's kernel library (the image the gpulib module
// registers with internal/gpulib) in this PE's GPU context: loaded at Init
// (preloadLib), its device state installed like a user module's, unloaded
// at Finalize (gpuBackend.Close).
type gpuLib struct {
	mu     sync.Mutex // guards everything below; held across a launch (args)
	loaded bool
	err    error // why the library did not load, without the call that needs it
	mod    *cuda.Module
	fns    [gpulib.Count]*cuda.Function
	names  [gpulib.Count]string
	args   cuda.Args
	buf    [gpulib.NArgs * 8]byte
}

// loadLib loads the library (under l.mu) unless it is loaded. A failure
// is kept: every later call that needs the library reports it, named op.
func (r *Runtime) loadLib(l *gpuLib, op string) error {
	if !l.loaded && l.err == nil {
		l.err = r.openLib(l)
	}
	return errs.Wrap(l.err, r.Me, op, "")
}

// openLib loads the library's module, installs its device state and
// finds its kernels.
func (r *Runtime) openLib(l *gpuLib) error {
	var image []byte
	what := "goshmem's kernel library (sm_80, sm_90 and sm_100 SASS, PTX for the newest)"
	if p := r.Settings.String("GOSHMEM_GPU_LIB"); p != "" {
		b, err := os.ReadFile(p)
		if err != nil {
			return errors.Wrapf(err, "GOSHMEM_GPU_LIB=%q: reading the kernel library", p)
		}
		image, what = b, fmt.Sprintf("the kernel library GOSHMEM_GPU_LIB=%q", p)
	} else {
		var err error
		if image, err = gpulib.Image(); err != nil {
			return err // registered by importing gpulib.ImportPath; the error says so
		}
	}
	m, err := r.GPU.Ctx.ModuleLoadData(image)
	if err != nil {
		return errors.Wrapf(err, "loading %s", what)
	}
	if _, err := r.GPU.InstallState(m); err != nil {
		_ = m.Unload()
		return errors.Wrap(err, "goshmem's kernel library")
	}
	for k := range l.fns {
		name := gpulib.Kernel(k).Name()
		if l.fns[k], err = m.Function(name); err != nil {
			r.GPU.ForgetModule(m)
			_ = m.Unload()
			return errors.Wrap(err, "goshmem's kernel library")
		}
		l.names[k] = name
	}
	l.mod, l.loaded = m, true
	r.archLaunch()
	return nil
}

// preloadLib loads the library at Init, on every PE with a GPU, before
// Init's first barrier: no PE's kernel runs yet. A module load may wait
// until the GPU runs no kernel, every process's under MPS: loaded on a
// first stream call, it would wait for a kernel that waits for this PE
// (another PE's on-stream barrier on the same GPU, a kernel that waits
// for the proxy's or IBGDA's host thread), which never ends. A failure
// (e.g. a GPU older than sm_80, a program without the gpulib import) is
// kept for the calls that need the library to report; the job itself
// does not need it.
func (r *Runtime) preloadLib() {
	r.GPU.Preload(false) // the host-atomics module, for the same reason
	l := &r.gpuState.lib
	l.mu.Lock()
	defer l.mu.Unlock()
	_ = r.loadLib(l, "Init")
}

// closeLib unloads the library (Finalize).
func (r *Runtime) closeLib(t *cudatr.Transport) error {
	l := &r.gpuState.lib
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.loaded {
		l.err = nil
		return nil
	}
	l.loaded = false
	t.ForgetModule(l.mod)
	err := l.mod.Unload()
	l.mod = nil
	return err
}

// StreamOrDefault is s, or the PE's default stream when s is nil; a
// destroyed stream is an error naming op.
func (r *Runtime) StreamOrDefault(s *Stream, op string) (*Stream, error) {
	if err := r.NeedGPU(op); err != nil {
		return nil, err
	}
	if s == nil {
		return r.DefaultStream()
	}
	if s.dead.Load() {
		return nil, errs.New(errs.ErrInvalidArgument, r.Me, op, "the stream was destroyed")
	}
	return s, nil
}

// LibLaunch queues library kernel k (one block of gpulib.Threads threads)
// with argument words v on s (nil: the default stream) and returns
// without waiting. It allocates nothing once the library is loaded.
func (r *Runtime) LibLaunch(s *Stream, k gpulib.Kernel, v *[gpulib.NArgs]uint64, op string) error {
	return r.libLaunch(s, k, v, 1, gpulib.Threads, op)
}

// LibLaunchColl is LibLaunch for a one-block collective kernel (barrier,
// sync, reduce, broadcast, fcollect, alltoall) in which this PE moves or
// reduces about work bytes (a block per member: block bytes x members):
// its block is CollThreads(work).
func (r *Runtime) LibLaunchColl(s *Stream, k gpulib.Kernel, v *[gpulib.NArgs]uint64, work int, op string) error {
	return r.libLaunch(s, k, v, 1, r.CollThreads(work), op)
}

// CollThreads is the block of a one-block collective kernel over work
// bytes: GOSHMEM_GPU_COLL_THREADS, or (auto) one thread per 16 bytes in
// whole warps, from one warp to gpulib.Threads. A small collective is a
// handful of stores and polls: a smaller block starts and syncs sooner,
// while each thread keeps at most a few LL words (coll_data.h); the block
// forms are correct for any block size, and the members need not agree on
// it.
func (r *Runtime) CollThreads(work int) int {
	if n := r.gpuState.collThreads; n > 0 {
		return n
	}
	n := (max(work, 0)/16 + 31) &^ 31
	return min(max(n, 32), gpulib.Threads)
}

// GridMinBytes is GOSHMEM_GPU_COLL_GRID: the size from which an on-stream
// collective over load/store members runs its data step on a grid (0:
// never). The settings agree across PEs, so every member decides alike.
func (r *Runtime) GridMinBytes() int { return r.gpuState.gridMin }

// LibBlocks is the grid of library grid kernel k over bytes of data: one
// block per GOSHMEM_GPU_COLL_BLOCK bytes (rounded up), at least 1, up to
// one block per SM divided among the PEs of this node on this GPU. The
// data movers then grow at one block per 256 KiB up to two per SM. Those
// were the faster grids at 16-128 MiB (2 and 4 PEs on an H200 under MPS:
// more reduction blocks were slower; an alltoall wanted more blocks,
// a broadcast or fcollect no more than one per 256 KiB).
func (r *Runtime) LibBlocks(k gpulib.Kernel, bytes int) int {
	return r.libBlocks(k, bytes, r.GPU.DeviceSharers())
}

// libBlocks is LibBlocks on a GPU shared by sharers PEs.
func (r *Runtime) libBlocks(k gpulib.Kernel, bytes, sharers int) int {
	per := max(r.gpuState.gridBlock, 1)
	n := min(r.smShare(sharers), (bytes+per-1)/per)
	if k == gpulib.MovePart {
		n = max(n, min(2*r.sms(), (bytes+moverGrain-1)/moverGrain))
	}
	return max(1, n)
}

// GridFused reports whether a library grid kernel of blocks blocks runs
// fused (the team syncs in the kernel, one launch): GOSHMEM_GPU_COLL_FUSED
// and at most one block per SM shared among the PEs on this GPU, so every
// member's grid is resident at once (a fused kernel's blocks wait for its
// first block, which waits for the other members' kernels).
func (r *Runtime) GridFused(blocks int) bool { return r.gridFits(blocks, r.GPU.DeviceSharers()) }

// gridFits is GridFused on a GPU shared by sharers PEs.
func (r *Runtime) gridFits(blocks, sharers int) bool {
	return r.gpuState.gridFused && blocks <= r.smShare(sharers)
}

// GridFusedTeam reports whether every member of the team whose members
// are start + i*stride (i < size) runs library grid kernel k over bytes
// fused: GridFused of the grid LibBlocks gives each member, counting the
// PEs on that member's GPU (DeviceSharersOf; every member's GPU is taken to
// have this one's SM count). Every member decides alike, so none runs the
// fused kernel's team syncs while another syncs on its stream, which
// would leave both waiting on different words: the members' grids may
// differ (a member alone on its GPU gets more SMs than one that shares).
func (r *Runtime) GridFusedTeam(k gpulib.Kernel, bytes, start, stride, size int) bool {
	if !r.gpuState.gridFused {
		return false
	}
	for i := 0; i < size; i++ {
		sh := r.GPU.DeviceSharersOf(start + i*stride)
		if !r.gridFits(r.libBlocks(k, bytes, sh), sh) {
			return false
		}
	}
	return true
}

// smCount is the GPU's SM count (read once).
func (r *Runtime) smCount() (int, error) {
	g := &r.gpuState
	g.smsOnce.Do(func() {
		n, err := r.GPU.Dev.Attribute(cuda.AttrMultiprocessorCount)
		g.nsms, g.smsErr = max(n, 1), err
	})
	return g.nsms, g.smsErr
}

// sms is smCount, 1 when the driver cannot say (grid sizing only).
func (r *Runtime) sms() int {
	if n, err := r.smCount(); err == nil {
		return n
	}
	return 1
}

// smShare is one SM per block shared among sharers PEs on a GPU (>= 1).
func (r *Runtime) smShare(sharers int) int { return max(1, r.sms()/sharers) }

// moverGrain is the data per block of a large broadcast, fcollect or
// alltoall grid (LibBlocks).
const moverGrain = 256 << 10

// LibLaunchGrid is LibLaunch on a grid of blocks (the grid kernels only:
// the others are one-block kernels).
func (r *Runtime) LibLaunchGrid(s *Stream, k gpulib.Kernel, v *[gpulib.NArgs]uint64, blocks int, op string) error {
	return r.libLaunch(s, k, v, blocks, gpulib.Threads, op)
}

func (r *Runtime) libLaunch(s *Stream, k gpulib.Kernel, v *[gpulib.NArgs]uint64, blocks, threads int, op string) error {
	s, err := r.StreamOrDefault(s, op)
	if err != nil {
		return err
	}
	l := &r.gpuState.lib
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := r.loadLib(l, op); err != nil {
		return err
	}
	for i, w := range v {
		binary.LittleEndian.PutUint64(l.buf[8*i:], w)
	}
	grid, block := [3]uint32{uint32(blocks), 1, 1}, [3]uint32{uint32(threads), 1, 1}
	args := l.args.Reset().Struct(l.buf[:], 8)
	// Overlapped: one-block kernels only, as an early grid would hold SM
	// slots that the members' fused grids need resident at once.
	overlap := blocks == 1 && r.gpuState.overlap
	if overlap {
		err = l.fns[k].LaunchOverlapped(grid, block, 0, s.s, args)
	}
	if !overlap || err != nil {
		errOverlap := err
		err = l.fns[k].Launch(grid, block, 0, s.s, args)
		if errOverlap != nil && err == nil {
			// The driver (or a stream capture) refuses programmatic dependent
			// launch but not the kernel: plain launches from now on.
			r.gpuState.overlap = false
		}
	}
	if err != nil {
		return errs.Wrap(err, r.Me, op, "launching %s", l.names[k])
	}
	s.last.Store(&l.names[k])
	r.gpuState.lastKernel.Store(&l.names[k])
	return nil
}

// CopyOnStream queues a copy of n bytes between device addresses (local
// or a peer's mapped heap) on s (nil: the default stream).
func (r *Runtime) CopyOnStream(s *Stream, dst, src cuda.DevicePtr, n int, op string) error {
	s, err := r.StreamOrDefault(s, op)
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	return errs.Wrap(s.s.MemcpyDtoDAsync(dst, src, n), r.Me, op, "cuMemcpyDtoDAsync of %d bytes", n)
}

// WrapStream is the Stream for another library's CUstream h of this PE's
// context (0: the NULL stream). Destroy only retires the wrapper.
func (r *Runtime) WrapStream(h uintptr) (*Stream, error) {
	if err := r.NeedGPU("StreamFromHandle"); err != nil {
		return nil, err
	}
	return &Stream{s: r.GPU.Ctx.WrapStream(h), borrowed: true}, nil
}

// SyncStream waits for s (nil: the default stream) and then for the
// backends' accepted work, like Synchronize(s).
func (r *Runtime) SyncStream(s *Stream, op string) error {
	s, err := r.StreamOrDefault(s, op)
	if err != nil {
		return err
	}
	return r.Synchronize(s, op)
}
