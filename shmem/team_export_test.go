package shmem

import "github.com/goshmem/goshmem/internal/gpulib"

// BreakWorld puts the world team out of step with cause err, as a failed
// collective would (a 1-PE job cannot fail one for real).
func BreakWorld(err error) {
	if r := current.Load(); r != nil {
		r.world.Lock()
		r.world.Fail(err)
		r.world.Unlock()
	}
}

// DeviceBarrier launches the kernel library's team barrier on device team
// handle id (what a kernel passes as goshmem_team_t) on the default stream
// and synchronizes it.
func DeviceBarrier(id int) error {
	r := current.Load()
	if r == nil {
		return ErrInvalidArgument
	}
	if err := r.c.LibLaunch(nil, gpulib.Barrier, &[gpulib.NArgs]uint64{uint64(id)}, "DeviceBarrier"); err != nil {
		return err
	}
	return r.c.SyncStream(nil, "DeviceBarrier")
}
