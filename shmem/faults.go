//go:build goshmem_faults

package shmem

import "github.com/goshmem/goshmem/internal/errs"

// FaultDivergeHeap allocates bytes from this PE's host heap allocator on
// this PE alone, so its heap no longer matches the other PEs' (fault
// injection for the tests; only in builds with -tags goshmem_faults).
func FaultDivergeHeap(bytes uint64) error {
	r, err := enter("FaultDivergeHeap")
	if err != nil {
		return err
	}
	defer r.leave()
	r.world.Lock()
	defer r.world.Unlock()
	if _, err := r.alloc.Alloc(bytes, heapAlign); err != nil {
		return errs.Wrap(err, r.me, "FaultDivergeHeap", "%d bytes", bytes)
	}
	return nil
}
