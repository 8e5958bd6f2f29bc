package shmem

import "github.com/goshmem/goshmem/internal/gpulib"

// OFIProgressStats is the ofi transport's ProgressStats (ok: ofi is in use).
func OFIProgressStats() (defers, rounds, kicks uint64, ok bool) {
	r := current.Load()
	if r == nil {
		return 0, 0, 0, false
	}
	return r.c.OFIStats()
}

// OFISpinning reports whether a wait loop's claim on the ofi endpoint is
// held (ofi Transport.Spinning).
func OFISpinning() bool {
	r := current.Load()
	return r != nil && r.c.OFISpinning()
}

// LaunchTrappingBarrier queues on the default stream a device barrier over
// team slot 31, which no team holds: the kernel traps (a fault the next
// synchronization reports).
func LaunchTrappingBarrier() error {
	r := current.Load()
	if r == nil {
		return notInitialized("LaunchTrappingBarrier")
	}
	v := [gpulib.NArgs]uint64{31}
	return r.c.LibLaunch(nil, gpulib.Barrier, &v, "BarrierOnStream")
}
