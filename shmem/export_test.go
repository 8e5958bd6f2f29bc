package shmem

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
