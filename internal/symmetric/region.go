//go:build linux

package symmetric

import (
	"math"
	"sync"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"golang.org/x/sys/unix"
)

// ShmDir is the tmpfs in which CreateAnon makes regions: where POSIX
// shared memory lives on Linux, so regions are charged to (and bounded by)
// the same space as shm_open's objects.
const ShmDir = "/dev/shm"

const hintShmSize = "lower GOSHMEM_SYMMETRIC_SIZE, or enlarge /dev/shm " +
	"(mount -o remount,size=<bytes> /dev/shm; under Docker: --shm-size)"

// Region is one PE's part of the symmetric heap: an unnamed tmpfs file
// mapped MAP_SHARED read-write into this process, created by CreateAnon or
// mapped from a peer's handle by OpenHandle. The mapping is outside the Go
// heap; it stays valid after CloseHandle, until Close.
//
// A Region is safe for concurrent use, but Bytes and Base must not be used
// (nor their results dereferenced) after Close.
type Region struct {
	size   uint64
	handle RegionHandle // how peers open it

	mu  sync.Mutex
	mem []byte // nil after Close
	fd  int    // CreateAnon's fd until CloseHandle or Close; else -1
}

// Handle returns what other processes pass to OpenHandle to map the
// region: for CreateAnon's region, its own handle; for OpenHandle's, the
// handle it was opened with.
func (r *Region) Handle() RegionHandle { return r.handle }

// CloseHandle closes the fd that CreateAnon's region keeps for its peers;
// call it once every peer has mapped the region (OpenHandle fails after
// it). The mapping, here and in the peers, stays valid. It is a no-op for
// OpenHandle's regions, after Close, and when called again.
func (r *Region) CloseHandle() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closeFD()
}

// closeFD closes r.fd; r.mu is held.
func (r *Region) closeFD() error {
	if r.fd < 0 {
		return nil
	}
	fd := r.fd
	r.fd = -1
	if err := unix.Close(fd); err != nil {
		return errors.Wrapf(err, "symmetric: close the fd of %s", r.handle)
	}
	return nil
}

// Size returns the region's length in bytes.
func (r *Region) Size() uint64 { return r.size }

// Bytes returns the whole mapping (not on the Go heap), or nil after Close.
func (r *Region) Bytes() []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.mem
}

// Base returns the mapping's address in this process, or 0 after Close.
// The address of offset off on this region's PE is Base()+off.
func (r *Region) Base() uintptr {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mem == nil {
		return 0
	}
	return uintptr(unsafe.Pointer(unsafe.SliceData(r.mem)))
}

// Close unmaps the region and closes its fd if CloseHandle has not.
// Closing twice is not an error.
func (r *Region) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	fdErr := r.closeFD()
	if r.mem == nil {
		return fdErr
	}
	mem := r.mem
	r.mem = nil
	if err := unix.Munmap(mem); err != nil {
		return errors.Wrapf(err, "symmetric: unmap %s", r.handle)
	}
	return fdErr
}

// Retire closes the region but keeps its address range mapped: the
// region's pages are replaced (MAP_FIXED) by private anonymous zero pages,
// and its fd is closed. A slice that still points into the region reads
// zeros afterwards, writes land in this process's private pages, and no
// access faults; peers no longer share them. The address range stays
// reserved until the process exits (only pages written after Retire take
// memory). After Retire, Bytes and Base report a closed region; Close and
// Retire again are no-ops.
func (r *Region) Retire() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	fdErr := r.closeFD()
	if r.mem == nil {
		return fdErr
	}
	mem := r.mem
	r.mem = nil
	_, err := unix.MmapPtr(-1, 0, unsafe.Pointer(unsafe.SliceData(mem)), uintptr(len(mem)),
		unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_FIXED|unix.MAP_NORESERVE)
	if err != nil {
		// The old mapping is still there: keep it rather than unmap it.
		return errors.Wrapf(err, "symmetric: replace the mapping of %s", r.handle)
	}
	return fdErr
}

// mapRegion maps size bytes of fd MAP_SHARED read-write; what names the
// region in the error.
func mapRegion(fd int, what string, size uint64) ([]byte, error) {
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		err = errors.Wrapf(err, "symmetric: map region %s (%d bytes)", what, size)
		if errors.Is(err, unix.ENOMEM) {
			err = errors.WithHint(err, "the address space limit (ulimit -v) or vm.max_map_count is too low, "+
				"or lower GOSHMEM_SYMMETRIC_SIZE")
		}
		return nil, err
	}
	return mem, nil
}

// checkRegionSize refuses a size of 0 or one that mmap's int length cannot
// hold.
func checkRegionSize(op, what string, size uint64) error {
	if size == 0 || size > math.MaxInt {
		return invalidArg(ErrInvalidSize, "%s region %s: size %d is not in [1, %d]", op, what, size, uint64(math.MaxInt))
	}
	return nil
}

// checkShmIn refuses a single reservation of total bytes that is larger
// than the whole tmpfs at dir (touching its pages beyond the tmpfs's size
// would SIGBUS); with needRoom it also requires room for one page and one
// inode right now. The node-wide check is CheckCapacity.
func checkShmIn(dir string, total uint64, needRoom bool) error {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return errors.WithHint(errors.Wrapf(err, "symmetric: statfs %s", dir),
			"POSIX shared memory needs a tmpfs mounted at "+dir)
	}
	unit := uint64(st.Frsize)
	if unit == 0 {
		unit = uint64(st.Bsize)
	}
	fsSize, fsFree := st.Blocks*unit, st.Bavail*unit
	if st.Blocks != 0 && total > fsSize { // Blocks == 0: tmpfs with no size limit
		return errors.WithHint(errors.Wrapf(ErrShmCapacity,
			"reserving %d bytes exceeds the size of %s (%d bytes, %d free); touching the pages beyond it would SIGBUS",
			total, dir, fsSize, fsFree), hintShmSize)
	}
	if needRoom {
		page := uint64(unix.Getpagesize())
		if st.Blocks != 0 && fsFree < page {
			return errors.WithHint(errors.Wrapf(ErrShmCapacity,
				"%s has %d bytes free, less than one page (%d bytes) for the region's metadata",
				dir, fsFree, page), "remove stale files from "+dir+" (crashed jobs), or "+hintShmSize)
		}
		if st.Files != 0 && st.Ffree == 0 {
			return errors.WithHint(errors.Wrapf(ErrShmCapacity, "%s has no free inodes", dir),
				"remove stale files from "+dir+" (crashed jobs), or raise its nr_inodes")
		}
	}
	return nil
}
