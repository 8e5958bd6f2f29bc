package shmem

// ThreadLevel is how much concurrency a library supports among the
// threads of one PE (Ref: OpenSHMEM 1.6 §9.2 shmem_init_thread,
// shmem_query_thread). The levels are ordered: ThreadSingle <
// ThreadFunneled < ThreadSerialized < ThreadMultiple, so
// QueryThread() >= ThreadSerialized reads as "at least serialized".
type ThreadLevel int

// The thread levels, with OpenSHMEM's values (SHMEM_THREAD_*).
const (
	// ThreadSingle: the PE has one thread.
	ThreadSingle ThreadLevel = iota
	// ThreadFunneled: only the thread that initialized calls the library.
	ThreadFunneled
	// ThreadSerialized: any thread calls it, one at a time.
	ThreadSerialized
	// ThreadMultiple: any thread calls it, at any time.
	ThreadMultiple
)

var threadLevelNames = [...]string{"ThreadSingle", "ThreadFunneled", "ThreadSerialized", "ThreadMultiple"}

func (l ThreadLevel) String() string {
	if l < 0 || int(l) >= len(threadLevelNames) {
		return sprintf("ThreadLevel(%d)", int(l))
	}
	return threadLevelNames[l]
}

// QueryThread returns the thread level goshmem provides: ThreadMultiple,
// always (before Init too). Any goroutine may call any function at any
// time, within the rules the package documentation's "Goroutines" section
// states (chiefly: collectives are called in the same order on every PE).
func QueryThread() ThreadLevel { return ThreadMultiple }

// InfoVersion returns the version of the OpenSHMEM specification goshmem
// implements: 1, 6 (Ref: OpenSHMEM 1.6 §9.2 shmem_info_get_version). It
// needs no Init.
func InfoVersion() (major, minor int) { return 1, 6 }

// InfoName returns the library's name, "goshmem" (the vendor string of
// shmem_info_get_name; Ref: OpenSHMEM 1.6 §9.2). It needs no Init.
func InfoName() string { return "goshmem" }

// PControl is the profiling hook (shmem_pcontrol; Ref: OpenSHMEM 1.6
// profiling interface): level 0 asks a profiler to stop collecting, 1 to
// collect at its normal level (the default), 2 and more for more detail,
// as the profiler defines. goshmem has no profiling layer of its own: it
// only records the level (for tools that hook the call) and otherwise has
// no effect. It is safe from any goroutine and is ignored before Init.
func PControl(level int) {
	if r := current.Load(); r != nil {
		r.pcontrol.Store(int64(level) - 1)
	}
}

// pcontrolLevel is the level PControl last recorded (1 before any call:
// the field's zero value is level 1).
func (r *runtime) pcontrolLevel() int { return int(r.pcontrol.Load()) + 1 }
