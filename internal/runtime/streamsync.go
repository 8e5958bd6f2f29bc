package runtime

import (
	"sync"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
)

// streamSync is the state of the on-stream syncs done with stream memory
// operations (StreamSync): the epoch each team slot reached on this PE and
// the batch being built.
type streamSync struct {
	mu    sync.Mutex // guards everything below; held across the driver call (ops)
	epoch []uint64   // per team slot (GOSHMEM_MAX_TEAMS), made with the GPU heap
	ops   [2 * max(cudatr.StreamSyncRounds, cudatr.StreamSyncFlatMax-1)]cuda.MemOp
}

// StreamSync queues on s (nil: the default stream) a sync of the team in
// device slot slot (members start + i*stride for i < size, this PE being
// member me) as stream memory operations instead of a kernel, in one driver
// call. A team of at most cudatr.StreamSyncFlatMax members syncs flat (unless
// GOSHMEM_GPU_STREAM_SYNC=dissemination): this PE writes
// the sync's epoch into its own word (index me) of every other member's
// sync line, then the stream waits until each member's word here reaches
// the epoch; all writes go out before the first wait, so the sync costs
// one exchange. A larger team syncs by dissemination: in round k, this PE
// writes the epoch into round k's word of member (me + 2^k) mod size, then
// waits until its own round-k word reaches it (ceil(log2 size) rounds, each
// a wait the GPU's front end sits through). Each write comes after the
// stream's earlier work behind a system-wide memory barrier
// (CU_STREAM_WRITE_VALUE_DEFAULT), so a member whose stream passes the sync
// sees what every member's stream wrote before it (through the rounds,
// transitively); the stream's later work runs after the last wait. Epochs
// only grow and are counted here (every member queues the same syncs of a
// team in the same order, on one stream), and the words are zeroed with
// the slot (SetDeviceTeam). A team's size and the symmetric setting fix
// its scheme, so the two never share a team's words.
//
// It reports false without queueing anything when this path does not
// apply, and the caller then launches the barrier or sync kernel:
// GOSHMEM_GPU_STREAM_SYNC=kernel, or auto (the default) and a team of more
// than streamSyncAutoMax members, or the stream is being captured into a
// CUDA graph (every member must capture the same calls, as it must make
// them), or a GPU remote transport is configured
// (a barrier must then complete the proxy's or the NIC's outstanding
// operations, which only a kernel's quiet does). The choice follows from
// symmetric settings, so every member makes the same one. Without a remote
// transport every PE's heap is mapped on this GPU, and the work the
// stream ran before has completed when the first write is performed, so the
// sync is also a barrier (quiet is then the write's memory barrier).
// Ref: NVSHMEM nvshmemx_barrier_on_stream; CUDA Driver API, Stream Memory
// Operations.
func (r *Runtime) StreamSync(s *Stream, slot, start, stride, size, me int, op string) (bool, error) {
	g := &r.gpuState
	if r.GPU == nil || g.syncKernel || r.GPU.DeviceRemote() || (g.syncAuto && size > streamSyncAutoMax) {
		return false, nil
	}
	if slot < 0 || slot >= r.GPU.MaxTeams() || size < 1 || me < 0 || me >= size {
		return false, errs.New(errs.ErrInvalidArgument, r.Me, op, "team slot %d, member %d of %d: slot must be in [0, %d) and member in [0, size)",
			slot, me, size, r.GPU.MaxTeams())
	}
	s, err := r.StreamOrDefault(s, op)
	if err != nil {
		return true, err
	}
	if size == 1 {
		return true, nil
	}
	// Captured into a CUDA graph, the operations would keep this call's
	// epoch: a replay's waits would find their words already past it and
	// not wait. The kernel counts its epochs on the GPU, so replays sync.
	if capturing, err := s.s.Capturing(); err != nil || capturing {
		return false, nil
	}
	st := &g.streamSync
	st.mu.Lock()
	defer st.mu.Unlock()
	epoch := st.epoch[slot] + 1
	own := r.GPU.Base()
	peer := func(i int) (cuda.DevicePtr, error) {
		pe := start + i*stride
		if p := r.GPU.DeviceAddr(pe); p != 0 {
			return p, nil
		}
		return 0, errs.New(errs.ErrNotSupported, r.Me, op, "the GPU heap of PE %d is not mapped on this GPU", pe)
	}
	n := 0
	// flat: 2(size-1) operations and one exchange; dissemination: 2 ceil(log2 size)
	// operations and as many exchanges
	if size <= cudatr.StreamSyncFlatMax && !g.syncDissem {
		for d := 1; d < size; d++ {
			p, err := peer((me + d) % size)
			if err != nil {
				return true, err
			}
			st.ops[n] = cuda.MemOp{Op: cuda.MemOpWrite64, Addr: p + cuda.DevicePtr(cudatr.StreamSyncFlatWord(slot, me)), Value: epoch}
			n++
		}
		for d := 1; d < size; d++ {
			w := cuda.DevicePtr(cudatr.StreamSyncFlatWord(slot, (me+d)%size))
			st.ops[n] = cuda.MemOp{Op: cuda.MemOpWait64, Flags: cuda.WaitGEQ, Addr: own + w, Value: epoch}
			n++
		}
	} else {
		for k, dist := 0, 1; dist < size; k, dist = k+1, dist*2 {
			if k >= cudatr.StreamSyncRounds {
				return true, errs.New(errs.ErrInvalidArgument, r.Me, op, "a team of %d members needs more than %d sync rounds", size, k)
			}
			p, err := peer((me + dist) % size)
			if err != nil {
				return true, err
			}
			w := cuda.DevicePtr(cudatr.StreamSyncWord(slot, k))
			st.ops[n] = cuda.MemOp{Op: cuda.MemOpWrite64, Addr: p + w, Value: epoch}
			st.ops[n+1] = cuda.MemOp{Op: cuda.MemOpWait64, Flags: cuda.WaitGEQ, Addr: own + w, Value: epoch}
			n += 2
		}
	}
	if err := s.s.MemOps(st.ops[:n]); err != nil {
		return true, errors.WithHint(errs.Wrap(err, r.Me, op, "queueing the sync's %d stream memory operations", n),
			"GOSHMEM_GPU_STREAM_SYNC=kernel syncs with a kernel instead")
	}
	st.epoch[slot] = epoch
	s.last.Store(&memopsName)
	return true, nil
}

// streamSyncAutoMax is the largest team GOSHMEM_GPU_STREAM_SYNC=auto syncs
// with memory operations. A stream wait the GPU's front end reaches before
// its word is written costs it more than a kernel's poll: with several PEs
// on one GPU (an H200 under MPS) two members' streams sync in less time
// than a barrier kernel, four members' in more, flat or by dissemination.
const streamSyncAutoMax = 2

// memopsName names the stream's last operation in errors after a StreamSync.
var memopsName = "stream sync (memory operations)"

// resetStreamSync restarts slot's on-stream sync epochs (its words were
// just zeroed).
func (r *Runtime) resetStreamSync(slot int) {
	st := &r.gpuState.streamSync
	st.mu.Lock()
	st.epoch[slot] = 0
	st.mu.Unlock()
}
