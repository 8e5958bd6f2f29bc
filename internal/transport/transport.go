// Package transport is the interface every goshmem data path implements:
// RMA, atomics and ordering between this PE and one peer, counted on the
// quiet.Queue of the calling context. The runtime picks a transport per peer
// pair (shm on one node; others as they land).
//
// Offsets are byte offsets into the peer's symmetric region, already bounds-
// checked by the caller; transports do not re-check them.
package transport

import (
	"fmt"
	"unsafe"

	"github.com/goshmem/goshmem/internal/quiet"
)

// AMO is an atomic memory operation.
type AMO int

// The atomic operations. All return the old value (ignored for non-fetching
// calls).
const (
	AMOFetch AMO = iota
	AMOSet
	AMOSwap
	AMOCompareSwap
	AMOAdd
	AMOAnd
	AMOOr
	AMOXor
)

var amoNames = [...]string{"fetch", "set", "swap", "compare_swap", "fetch_add", "fetch_and", "fetch_or", "fetch_xor"}

func (o AMO) String() string { return amoNames[o] }

// Apply is o's new value for a word that holds old (operand v, comparand
// cmp, all already masked to the word's width): store is false when the
// word keeps old (a fetch, or a compare-and-swap that does not match).
// The transports' compare-and-swap loops share it; an unknown op panics
// (the callers validated it).
func (o AMO) Apply(old, v, cmp uint64) (nv uint64, store bool) {
	switch o {
	case AMOFetch:
		return old, false
	case AMOSet, AMOSwap:
		return v, true
	case AMOCompareSwap:
		return v, old == cmp
	case AMOAdd:
		return old + v, true
	case AMOAnd:
		return old & v, true
	case AMOOr:
		return old | v, true
	case AMOXor:
		return old ^ v, true
	}
	panic(fmt.Sprintf("transport: unknown AMO %d", int(o)))
}

// Transport moves data between this PE and its peers.
type Transport interface {
	// Name is printed by GOSHMEM_INFO ("shm").
	Name() string
	// Put copies src to pe's region at off. src is reusable on return;
	// remote completion is guaranteed by a quiet of q's scope.
	Put(q *quiet.Queue, pe int, off uint64, src []byte) error
	// PutNBI is Put where src is reusable only after quiet.
	PutNBI(q *quiet.Queue, pe int, off uint64, src []byte) error
	// Get copies pe's region at off into dst and returns once dst holds it.
	Get(q *quiet.Queue, dst []byte, pe int, off uint64) error
	// GetNBI is Get where dst holds the data only after quiet.
	GetNBI(q *quiet.Queue, dst []byte, pe int, off uint64) error
	// Atomic applies op to the width-byte integer (1, 2, 4 or 8) at off on
	// pe and returns the old value. cmp is used by AMOCompareSwap only.
	Atomic(q *quiet.Queue, op AMO, width int, pe int, off uint64, operand, cmp uint64) (uint64, error)
	// Fence orders q's puts, atomics and signals to each peer: those issued
	// before it are delivered before those issued after it.
	Fence(q *quiet.Queue) error
	// Ptr returns a load/store address of pe's region at off, or nil when pe
	// is not load/store reachable (shmem_ptr).
	Ptr(pe int, off uint64) unsafe.Pointer
	// Close releases the transport.
	Close() error
}
