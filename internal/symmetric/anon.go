//go:build linux

package symmetric

import (
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"golang.org/x/sys/unix"
)

// HandleSize is the length of a marshalled RegionHandle.
const HandleSize = 40

// handleVersion tags the handle layout: (1<<16) + its size, so a change of
// either is seen by ParseRegionHandle.
const handleVersion = 1<<16 + HandleSize

// hintSameUser is the hint on the errors that opening another process's
// fd gives when the kernel refuses it.
const hintSameUser = "the PEs of a node must run as the same user, in the same PID namespace, " +
	"with /proc mounted (not hidepid=) and without making themselves non-dumpable " +
	"(setuid, prctl PR_SET_DUMPABLE 0): a peer maps a heap through /proc/<pid>/fd/<fd>, " +
	"which needs ptrace read access to the owning process"

// RegionHandle names an unnamed region so that other processes of the node
// can map it: the owner's pid and the fd that holds the region there, plus
// the file's identity (device and inode) and length, which OpenHandle
// checks so that a reused pid or fd is detected instead of mapped.
//
// It is a fixed-size record (Marshal, ParseRegionHandle) meant to travel
// through the bootstrap's allgather.
type RegionHandle struct {
	PID  int    // the owning process
	FD   int    // the owner's fd for the region file
	Dev  uint64 // st_dev of the region file
	Ino  uint64 // st_ino of the region file
	Size uint64 // the region's length in bytes
}

// Path is where a peer opens the region: /proc/<pid>/fd/<fd>.
func (h RegionHandle) Path() string { return fmt.Sprintf("/proc/%d/fd/%d", h.PID, h.FD) }

// String names the handle in messages.
func (h RegionHandle) String() string {
	return fmt.Sprintf("region of %d bytes at %s (inode %d on device %d:%d)",
		h.Size, h.Path(), h.Ino, unix.Major(h.Dev), unix.Minor(h.Dev))
}

// Marshal encodes h in HandleSize bytes, little-endian:
//
//	[0,4) version (1<<16 + HandleSize)  [4,8) pid  [8,12) fd  [12,16) zero
//	[16,24) dev  [24,32) ino  [32,40) size
func (h RegionHandle) Marshal() []byte {
	b := make([]byte, HandleSize)
	binary.LittleEndian.PutUint32(b[0:], handleVersion)
	binary.LittleEndian.PutUint32(b[4:], uint32(h.PID))
	binary.LittleEndian.PutUint32(b[8:], uint32(h.FD))
	binary.LittleEndian.PutUint64(b[16:], h.Dev)
	binary.LittleEndian.PutUint64(b[24:], h.Ino)
	binary.LittleEndian.PutUint64(b[32:], h.Size)
	return b
}

// ParseRegionHandle decodes what Marshal produced. A record of another
// length or version, a pid outside [1, 2^31), a negative fd, a nonzero
// reserved word or a zero size gives ErrInvalidHandle.
func ParseRegionHandle(b []byte) (RegionHandle, error) {
	if len(b) != HandleSize {
		return RegionHandle{}, errors.Wrapf(ErrInvalidHandle, "handle of %d bytes; want %d", len(b), HandleSize)
	}
	if v := binary.LittleEndian.Uint32(b[0:]); v != handleVersion {
		return RegionHandle{}, errors.WithHint(errors.Wrapf(ErrInvalidHandle,
			"handle version %#x; want %#x", v, handleVersion), "every PE must run the same goshmem build")
	}
	pid := binary.LittleEndian.Uint32(b[4:])
	fd := binary.LittleEndian.Uint32(b[8:])
	h := RegionHandle{
		PID:  int(pid),
		FD:   int(int32(fd)),
		Dev:  binary.LittleEndian.Uint64(b[16:]),
		Ino:  binary.LittleEndian.Uint64(b[24:]),
		Size: binary.LittleEndian.Uint64(b[32:]),
	}
	switch {
	case pid == 0 || pid > 1<<31-1:
		return RegionHandle{}, errors.Wrapf(ErrInvalidHandle, "handle pid %d is not in [1, %d]", pid, 1<<31-1)
	case h.FD < 0:
		return RegionHandle{}, errors.Wrapf(ErrInvalidHandle, "handle fd %d is negative", h.FD)
	case binary.LittleEndian.Uint32(b[12:]) != 0:
		return RegionHandle{}, errors.Wrapf(ErrInvalidHandle, "handle reserved word is %#x; want 0",
			binary.LittleEndian.Uint32(b[12:]))
	case h.Size == 0:
		return RegionHandle{}, errors.Wrapf(ErrInvalidHandle, "handle size is 0")
	}
	return h, nil
}

// CreateAnon creates a region of size bytes that never has a name: an
// unnamed tmpfs file in /dev/shm (open(2) with O_TMPFILE|O_EXCL, so it can
// never be linked in either), sized with ftruncate and mapped MAP_SHARED.
// Its pages are charged to /dev/shm like a named object's, committed on
// first touch, and freed when the last process that maps it or holds its fd
// unmaps or exits, however it exits: a job killed at any point leaves no
// file behind.
//
// Where the kernel or filesystem lacks O_TMPFILE, CreateAnon creates a
// uniquely named file (goshmem-anon-<pid>-<random>) and unlinks it before
// sizing it, so a name exists only between two consecutive system calls,
// and a process killed in that window leaves an empty file.
//
// Other processes map the region with OpenHandle(r.Handle(), size), which
// goes through the owner's fd: keep the region's fd open (do not call
// CloseHandle) until every peer has mapped it.
//
// Errors: size 0, or one above math.MaxInt → ErrInvalidSize; a size
// larger than the whole tmpfs, or a tmpfs with no room left for one page or
// an inode → ErrShmCapacity (with a hint).
func CreateAnon(size uint64) (*Region, error) {
	return createAnon(ShmDir, size, true)
}

// createAnon is CreateAnon in dir; tmpfile false takes the named-then-
// unlinked fallback (for tests of that path).
func createAnon(dir string, size uint64, tmpfile bool) (*Region, error) {
	what := "(unnamed) in " + dir
	if err := checkRegionSize("create", what, size); err != nil {
		return nil, err
	}
	if err := checkShmIn(dir, size, true); err != nil {
		return nil, errors.Wrapf(err, "create region %s (%d bytes)", what, size)
	}
	fd := -1
	var err error
	if tmpfile {
		fd, err = unix.Open(dir, unix.O_TMPFILE|unix.O_RDWR|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
		// EOPNOTSUPP: the filesystem has no O_TMPFILE; EISDIR or EINVAL: a
		// kernel that predates it (it then reads the flag as O_DIRECTORY).
		if errors.Is(err, unix.EOPNOTSUPP) || errors.Is(err, unix.EISDIR) || errors.Is(err, unix.EINVAL) {
			fd, err = -1, nil
		}
	}
	if fd < 0 && err == nil {
		fd, err = createUnlinked(dir)
	}
	switch {
	case errors.Is(err, unix.ENOSPC):
		return nil, errors.WithHint(errors.Wrapf(ErrShmCapacity, "create region %s: %s has no room for a new file: %v",
			what, dir, err), hintShmSize)
	case err != nil:
		return nil, errors.Wrapf(err, "symmetric: create region %s", what)
	}
	fail := func(err error) (*Region, error) {
		_ = unix.Close(fd)
		return nil, err
	}
	if err := unix.Ftruncate(fd, int64(size)); err != nil {
		if errors.Is(err, unix.ENOSPC) || errors.Is(err, unix.EFBIG) {
			return fail(errors.WithHint(errors.Wrapf(ErrShmCapacity, "create region %s: reserve %d bytes: %v",
				what, size, err), hintShmSize))
		}
		return fail(errors.Wrapf(err, "symmetric: create region %s: reserve %d bytes", what, size))
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fail(errors.Wrapf(err, "symmetric: create region %s: fstat", what))
	}
	mem, err := mapRegion(fd, what, size)
	if err != nil {
		return fail(err)
	}
	h := RegionHandle{PID: os.Getpid(), FD: fd, Dev: st.Dev, Ino: st.Ino, Size: size}
	return &Region{size: size, mem: mem, fd: fd, handle: h}, nil
}

// createUnlinked creates a fresh file in dir and removes its name at once,
// before it has any length.
func createUnlinked(dir string) (int, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	path := filepath.Join(dir, fmt.Sprintf("goshmem-anon-%d-%s", os.Getpid(), hex.EncodeToString(rnd[:])))
	fd, err := unix.Open(path, unix.O_CREAT|unix.O_EXCL|unix.O_RDWR|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return -1, err
	}
	if err := unix.Unlink(path); err != nil {
		_ = unix.Close(fd)
		return -1, errors.Wrapf(err, "unlink %s", path)
	}
	return fd, nil
}

// OpenHandle maps, in this process, the region another process (or this
// one) created with CreateAnon and described by h: it opens
// /proc/<pid>/fd/<fd>, checks that the file is the one h names and is size
// bytes long, maps it and closes the fd again (the mapping keeps the
// memory alive). The owner must still hold its fd; OpenHandle never waits
// for it.
//
// Opening another process's fd needs ptrace read access to it (same user,
// same PID namespace, /proc mounted; see the package doc).
//
// Errors: size 0 → ErrInvalidSize; h.Size != size → ErrRegionSize; the
// owner has exited, or no longer holds the fd, or the fd now holds another
// file (a reused pid or fd) → ErrRegionNotFound naming the pid and fd and
// saying which; the kernel refusing access → the errno (EACCES or EPERM)
// with a hint.
func OpenHandle(h RegionHandle, size uint64) (*Region, error) {
	path := h.Path()
	if err := checkRegionSize("open", path, size); err != nil {
		return nil, err
	}
	if h.Size != size {
		return nil, errors.WithHint(
			errors.Wrapf(ErrRegionSize, "open %s: the owner made it %d bytes, expected %d", h, h.Size, size),
			"every PE must use the same GOSHMEM_SYMMETRIC_SIZE")
	}
	fd, err := unix.Open(path, unix.O_RDWR|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.ENOENT):
		return nil, errors.Wrapf(ErrRegionNotFound, "open %s: %s", h, ownerGone(h))
	case errors.Is(err, unix.EACCES) || errors.Is(err, unix.EPERM):
		return nil, errors.WithHint(errors.Wrapf(err, "symmetric: open %s: access to process %d refused", h, h.PID),
			hintSameUser)
	case err != nil:
		return nil, errors.Wrapf(err, "symmetric: open %s", h)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, errors.Wrapf(err, "symmetric: open %s: fstat", h)
	}
	if st.Dev != h.Dev || st.Ino != h.Ino {
		return nil, errors.Wrapf(ErrRegionNotFound,
			"open %s: fd %d of process %d is another file (inode %d on device %d:%d): "+
				"the owner closed the region's fd, or exited and its pid was reused",
			h, h.FD, h.PID, st.Ino, unix.Major(st.Dev), unix.Minor(st.Dev))
	}
	if st.Size < 0 || uint64(st.Size) != size {
		return nil, errors.Wrapf(ErrRegionSize, "open %s: the file is %d bytes, expected %d", h, st.Size, size)
	}
	mem, err := mapRegion(fd, path, size)
	if err != nil {
		return nil, err
	}
	return &Region{size: size, mem: mem, fd: -1, handle: h}, nil
}

// ownerGone says why /proc/<pid>/fd/<fd> does not exist.
func ownerGone(h RegionHandle) string {
	if _, err := os.Stat("/proc/self/fd"); err != nil {
		return "/proc is not mounted here (" + err.Error() + ")"
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(h.PID) + "/stat")
	if err != nil {
		return fmt.Sprintf("process %d has exited before this process mapped its region", h.PID)
	}
	// /proc/<pid>/stat is "pid (comm) state ...", and comm may hold ')'.
	if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) {
		if s := stat[i+2]; s == 'Z' || s == 'X' {
			return fmt.Sprintf("process %d has exited (state %c) before this process mapped its region", h.PID, s)
		}
	}
	return fmt.Sprintf("process %d has no fd %d: it closed the region's fd before this process mapped it, "+
		"or it exited and its pid was reused", h.PID, h.FD)
}
