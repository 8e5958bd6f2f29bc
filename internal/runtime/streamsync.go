package runtime

import (
	"sync"

	"github.com/cockroachdb/errors"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
)

// streamSync is the state of the on-stream syncs done with stream memory
// operations (StreamSync): the epoch each team slot reached on this PE and
// the batch being built.
type streamSync struct {
	mu    sync.Mutex // guards everything below; held across the driver call (ops)
	epoch [cudatr.MaxTeams]uint64
	ops   [2 * cudatr.StreamSyncRounds]cuda.MemOp
}

// StreamSync queues on s (nil: the default stream) a sync of the team in
// device slot slot (members start + i*stride for i < size, this PE being
// member me) as stream memory operations instead of a kernel: a
// dissemination sync in which, in round k, this PE writes the sync's epoch
// into round k's word of member (me + 2^k) mod size, then the stream waits
// until its own round-k word reaches the epoch. One driver call queues
// every round. Each write comes after the stream's earlier work behind a
// system-wide memory barrier (CU_STREAM_WRITE_VALUE_DEFAULT), so a member
// whose stream passes the sync sees what every member's stream wrote
// before it, transitively through the rounds; the stream's later work runs
// after the last wait. Epochs only grow and are counted here (every member
// queues the same syncs of a team in the same order, on one stream), and
// the words are zeroed with the slot (SetDeviceTeam).
//
// It reports false without queueing anything when this path does not
// apply, and the caller then launches the barrier or sync kernel:
// GOSHMEM_GPU_STREAM_SYNC=kernel, or a GPU remote transport is configured
// (a barrier must then complete the proxy's or the NIC's outstanding
// operations, which only a kernel's quiet does). The choice follows from
// symmetric settings, so every member makes the same one. Without a remote
// transport every PE's heap is mapped on this GPU, and the work the
// stream ran before has completed when the first write is performed, so the
// sync is also a barrier (quiet is then the write's memory barrier).
// Ref: NVSHMEM nvshmemx_barrier_on_stream; CUDA Driver API, Stream Memory
// Operations.
func (r *Runtime) StreamSync(s *Stream, slot, start, stride, size, me int, op string) (bool, error) {
	if r.GPU == nil || r.gpuState.syncKernel || r.GPU.DeviceRemote() {
		return false, nil
	}
	if slot < 0 || slot >= cudatr.MaxTeams || size < 1 || me < 0 || me >= size {
		return false, errs.New(errs.ErrInvalidArgument, r.Me, op, "team slot %d, member %d of %d: slot must be in [0, %d) and member in [0, size)",
			slot, me, size, cudatr.MaxTeams)
	}
	s, err := r.StreamOrDefault(s, op)
	if err != nil {
		return true, err
	}
	if size == 1 {
		return true, nil
	}
	st := &r.gpuState.streamSync
	st.mu.Lock()
	defer st.mu.Unlock()
	epoch := st.epoch[slot] + 1
	own := r.GPU.Base()
	n := 0
	for k, dist := 0, 1; dist < size; k, dist = k+1, dist*2 {
		if k >= cudatr.StreamSyncRounds {
			return true, errs.New(errs.ErrInvalidArgument, r.Me, op, "a team of %d members needs more than %d sync rounds", size, k)
		}
		pe := start + ((me+dist)%size)*stride
		peer := r.GPU.DeviceAddr(pe)
		if peer == 0 {
			return true, errs.New(errs.ErrNotSupported, r.Me, op, "the GPU heap of PE %d is not mapped on this GPU", pe)
		}
		w := cuda.DevicePtr(cudatr.StreamSyncWord(slot, k))
		st.ops[n] = cuda.MemOp{Op: cuda.MemOpWrite64, Addr: peer + w, Value: epoch}
		st.ops[n+1] = cuda.MemOp{Op: cuda.MemOpWait64, Flags: cuda.WaitGEQ, Addr: own + w, Value: epoch}
		n += 2
	}
	if err := s.s.MemOps(st.ops[:n]); err != nil {
		return true, errors.WithHint(errs.Wrap(err, r.Me, op, "queueing the sync's %d stream memory operations", n),
			"GOSHMEM_GPU_STREAM_SYNC=kernel syncs with a kernel instead")
	}
	st.epoch[slot] = epoch
	s.last.Store(&memopsName)
	return true, nil
}

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
