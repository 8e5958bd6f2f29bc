package symmetric

import errors "github.com/goshmem/goshmem/internal/xerrors"

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

	// ErrRegionNotFound: OpenHandle found that the owner has exited, or
	// that its fd is closed or holds another file (a reused pid or fd).
	ErrRegionNotFound = errors.New("symmetric: region not found")
	// ErrRegionSize: OpenHandle was given a size other than the handle's,
	// or found a file of another length.
	ErrRegionSize = errors.New("symmetric: region size mismatch")
	// ErrShmCapacity: /dev/shm is too small or too full for the request
	// (CreateAnon, CheckFree, CheckCapacity). CheckFree's and
	// CheckCapacity's errors also match errs.ErrHeapExhausted.
	ErrShmCapacity = errors.New("symmetric: shared memory capacity exceeded")
	// ErrInvalidHandle: ParseRegionHandle was given a malformed record.
	ErrInvalidHandle = errors.New("symmetric: invalid region handle")
)
