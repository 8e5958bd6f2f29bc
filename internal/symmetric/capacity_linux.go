//go:build linux

package symmetric

import (
	errors "github.com/goshmem/goshmem/internal/xerrors"
	"golang.org/x/sys/unix"
)

// ShmFree returns the bytes free in the filesystem at dir (statfs's
// f_bavail × f_frsize), normally ShmDir: what the node's PEs may still
// commit there. A tmpfs with no size limit reports Unlimited.
func ShmFree(dir string) (free uint64, err error) {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return 0, errors.WithHint(errors.Wrapf(err, "symmetric: statfs %s", dir),
			"POSIX shared memory needs a tmpfs mounted at "+dir)
	}
	if st.Type == unix.TMPFS_MAGIC && st.Blocks == 0 {
		return Unlimited, nil
	}
	unit := uint64(st.Frsize)
	if unit == 0 {
		unit = uint64(st.Bsize)
	}
	return st.Bavail * unit, nil
}
