package shmem

// OFIProgressStats is the ofi transport's ProgressStats (ok: ofi is in use).
func OFIProgressStats() (defers, rounds, kicks uint64, ok bool) {
	r := current.Load()
	if r == nil || r.ofi == nil {
		return 0, 0, 0, false
	}
	defers, rounds, kicks = r.ofi.ProgressStats()
	return defers, rounds, kicks, true
}
