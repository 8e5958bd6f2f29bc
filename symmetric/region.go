//go:build linux

package symmetric

import (
	"math"
	"path/filepath"
	"strings"
	"sync"
	"unsafe"

	"github.com/cockroachdb/errors"
	"golang.org/x/sys/unix"
)

// ShmDir is where POSIX shared-memory objects live on Linux; a region
// named N is the file ShmDir/N (what shm_open("/N") would create).
const ShmDir = "/dev/shm"

const hintShmSize = "lower GOSHMEM_SYMMETRIC_SIZE, or enlarge /dev/shm " +
	"(mount -o remount,size=<bytes> /dev/shm; under Docker: --shm-size)"

// Region is one PE's part of the symmetric heap: a tmpfs file mapped
// MAP_SHARED read-write into this process, either unnamed (CreateAnon,
// OpenHandle) or a named POSIX shared-memory object (CreateRegion,
// OpenRegion). The mapping is outside the Go heap; it stays valid after
// Unlink and CloseHandle, until Close.
//
// A Region is safe for concurrent use, but Bytes and Base must not be used
// (nor their results dereferenced) after Close.
type Region struct {
	name   string       // "" for an unnamed region
	size   uint64       //
	handle RegionHandle // unnamed regions: how peers open it

	mu       sync.Mutex
	mem      []byte // nil after Close
	fd       int    // CreateAnon's fd until CloseHandle or Close; else -1
	unlinked bool   // no name to remove (unnamed, or Unlink done)
}

// CreateRegion creates the shared-memory object name (the file
// /dev/shm/<name>, O_CREAT|O_EXCL, mode 0600), sizes it to size bytes and
// maps it. The object is sparse: ftruncate reserves the length and pages
// are committed on first touch, so creating a large region is cheap.
//
// Errors: a name that is not one plain file name → ErrInvalidName; size 0
// → ErrInvalidSize; the name already taken → ErrRegionExists (naming the
// file, with a hint); a size larger than the whole tmpfs, or a tmpfs with
// no room left for even the region's first page or its inode →
// ErrShmCapacity (with a hint). The caller owns the name: Unlink it once
// every PE has opened it, or at exit; a process killed before that leaves
// the file behind (CreateAnon's regions have no name to leave).
func CreateRegion(name string, size uint64) (*Region, error) {
	path, err := regionPath(name)
	if err != nil {
		return nil, err
	}
	if err := checkRegionSize("create", path, size); err != nil {
		return nil, err
	}
	if err := checkShm(size, true); err != nil {
		return nil, errors.Wrapf(err, "create region %s (%d bytes)", path, size)
	}
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	switch {
	case errors.Is(err, unix.EEXIST):
		return nil, errors.WithHint(errors.Wrapf(ErrRegionExists, "create region %s", path),
			"another job is using this name, or a crashed job left it behind: remove "+path+" if no job is running")
	case errors.Is(err, unix.ENOSPC):
		return nil, errors.WithHint(errors.Wrapf(ErrShmCapacity, "create region %s: %s has no room for a new file: %v",
			path, ShmDir, err), hintShmSize)
	case err != nil:
		return nil, errors.Wrapf(err, "symmetric: create region %s", path)
	}
	defer unix.Close(fd) // the mapping keeps the object alive
	fail := func(err error) (*Region, error) {
		_ = unix.Unlink(path)
		return nil, err
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EFBIG) {
			return fail(errors.WithHint(errors.Wrapf(ErrShmCapacity, "create region %s: reserve %d bytes: %v",
				path, size, err), hintShmSize))
		}
		return fail(errors.Wrapf(err, "symmetric: create region %s: reserve %d bytes", path, size))
	}
	mem, err := mapRegion(fd, path, size)
	if err != nil {
		return fail(err)
	}
	return &Region{name: name, size: size, mem: mem, fd: -1}, nil
}

// OpenRegion maps the existing shared-memory object name, which must be
// exactly size bytes long (as CreateRegion made it on another PE).
//
// Errors: ErrInvalidName, ErrInvalidSize as for CreateRegion; no such
// object → ErrRegionNotFound; another length → ErrRegionSize naming both.
func OpenRegion(name string, size uint64) (*Region, error) {
	path, err := regionPath(name)
	if err != nil {
		return nil, err
	}
	if err := checkRegionSize("open", path, size); err != nil {
		return nil, err
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, errors.WithHint(errors.Wrapf(ErrRegionNotFound, "open region %s", path),
			"the owning PE has not created it yet, or has already unlinked it")
	case err != nil:
		return nil, errors.Wrapf(err, "symmetric: open region %s", path)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, errors.Wrapf(err, "symmetric: open region %s: fstat", path)
	}
	if st.Size < 0 || uint64(st.Size) != size {
		return nil, errors.WithHint(
			errors.Wrapf(ErrRegionSize, "open region %s: the object is %d bytes, expected %d", path, st.Size, size),
			"every PE must use the same GOSHMEM_SYMMETRIC_SIZE")
	}
	mem, err := mapRegion(fd, path, size)
	if err != nil {
		return nil, err
	}
	return &Region{name: name, size: size, mem: mem, fd: -1}, nil
}

func mapRegion(fd int, path string, size uint64) ([]byte, error) {
	mem, err := unix.Mmap(fd, 0, int(size), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		err = errors.Wrapf(err, "symmetric: map region %s (%d bytes)", path, size)
		if errors.Is(err, unix.ENOMEM) {
			err = errors.WithHint(err, "the address space limit (ulimit -v) or vm.max_map_count is too low, "+
				"or lower GOSHMEM_SYMMETRIC_SIZE")
		}
		return nil, err
	}
	return mem, nil
}

// regionPath validates name and returns ShmDir/name.
func regionPath(name string) (string, error) {
	bad := ""
	switch {
	case name == "":
		bad = "is empty"
	case name == "." || name == "..":
		bad = "is a directory name"
	case strings.ContainsAny(name, "/\x00"):
		bad = "contains '/' or NUL"
	case len(name) > 255:
		bad = "is longer than 255 bytes"
	}
	if bad != "" {
		return "", errors.Wrapf(ErrInvalidName, "region name %q %s; want one file name under %s",
			name, bad, ShmDir)
	}
	return filepath.Join(ShmDir, name), nil
}

func checkRegionSize(op, path string, size uint64) error {
	if size == 0 || size > math.MaxInt {
		return invalidArg(ErrInvalidSize, "%s region %s: size %d is not in [1, %d]", op, path, size, uint64(math.MaxInt))
	}
	return nil
}

// checkShm refuses a single reservation of total bytes that is larger than
// the whole tmpfs at ShmDir (touching its pages beyond the tmpfs's size
// would SIGBUS); with needRoom it also requires room for one page and one
// inode right now. The node-wide check is CheckCapacity.
func checkShm(total uint64, needRoom bool) error { return checkShmIn(ShmDir, total, needRoom) }

// checkShmIn is checkShm for the tmpfs at dir.
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

// Name returns the region's name (its file is ShmDir/Name()), or "" for an
// unnamed region.
func (r *Region) Name() string { return r.name }

// Handle returns what other processes pass to OpenHandle to map an unnamed
// region: for CreateAnon's region, its own handle; for OpenHandle's, the
// handle it was opened with. A named region's handle is the zero value.
func (r *Region) Handle() RegionHandle { return r.handle }

// CloseHandle closes the fd that CreateAnon's region keeps for its peers;
// call it once every peer has mapped the region (OpenHandle fails after
// it). The mapping, here and in the peers, stays valid. It is a no-op for
// other regions and when called again.
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

// Unlink removes the region's name from /dev/shm; existing mappings (here
// and in other processes) stay valid, and the memory is freed when the last
// one is unmapped. A second Unlink of the same Region, and Unlink of an
// unnamed region, is a no-op.
func (r *Region) Unlink() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.unlinked {
		return nil
	}
	path := filepath.Join(ShmDir, r.name)
	if err := unix.Unlink(path); err != nil {
		return errors.Wrapf(err, "symmetric: unlink region %s", path)
	}
	r.unlinked = true
	return nil
}

// Close unmaps the region and closes its fd if CloseHandle has not. It
// does not unlink the name. Closing twice is not an error.
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
		return errors.Wrapf(err, "symmetric: unmap %s", r.describe())
	}
	return fdErr
}

// describe names the region in messages.
func (r *Region) describe() string {
	if r.name != "" {
		return "region " + filepath.Join(ShmDir, r.name)
	}
	return r.handle.String()
}
