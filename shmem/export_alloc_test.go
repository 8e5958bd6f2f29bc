package shmem

// HeapCalls is the number of heap collectives this PE has made (Alloc,
// Free, Realloc, ...), or 0 before Init.
func HeapCalls() uint64 {
	r := current.Load()
	if r == nil {
		return 0
	}
	r.world.Lock()
	defer r.world.Unlock()
	return r.collSeq
}
