package symmetric

import "github.com/cockroachdb/errors"

// Sentinel errors. Match them with errors.Is; the returned errors wrap them
// with the argument that was wrong and, where the user can fix it, a hint
// (errors.GetAllHints).
// The shmem layer wraps them with the PE and maps them onto its public
// sentinels (ErrHeapExhausted, ErrInvalidArgument).
var (
	// ErrInvalidSize: a zero (or otherwise unusable) size.
	ErrInvalidSize = errors.New("symmetric: invalid size")
	// ErrInvalidAlign: an alignment that is not a power of two.
	ErrInvalidAlign = errors.New("symmetric: invalid alignment")
	// ErrHeapExhausted: no free block can hold the request.
	ErrHeapExhausted = errors.New("symmetric: heap exhausted")
	// ErrNotAllocated: Free or Size of an offset that is not the start of a
	// live block (double free included).
	ErrNotAllocated = errors.New("symmetric: offset not allocated")

	// ErrInvalidName: a region name that is not a single file name.
	ErrInvalidName = errors.New("symmetric: invalid region name")
	// ErrRegionExists: CreateRegion found the name already taken.
	ErrRegionExists = errors.New("symmetric: region already exists")
	// ErrRegionNotFound: OpenRegion found no region of that name, or
	// OpenHandle found the owner exited or its fd closed or reused.
	ErrRegionNotFound = errors.New("symmetric: region not found")
	// ErrRegionSize: OpenRegion or OpenHandle found a region of another size.
	ErrRegionSize = errors.New("symmetric: region size mismatch")
	// ErrShmCapacity: /dev/shm is too small or too full for the request.
	// CheckCapacity's error also matches errs.ErrHeapExhausted.
	ErrShmCapacity = errors.New("symmetric: shared memory capacity exceeded")
	// ErrInvalidHandle: ParseRegionHandle was given a malformed record.
	ErrInvalidHandle = errors.New("symmetric: invalid region handle")
)
