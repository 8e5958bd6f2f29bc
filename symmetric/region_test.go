//go:build linux

package symmetric

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// requireShm fails the test when /dev/shm is missing: on Linux it should be
// there, so a skip would hide a broken platform.
func requireShm(t *testing.T) {
	t.Helper()
	fi, err := os.Stat(ShmDir)
	require.NoError(t, err, "POSIX shared memory needs %s", ShmDir)
	require.True(t, fi.IsDir())
}

// createRegion creates a region and registers its cleanup.
func createRegion(t *testing.T, name string, size uint64) *Region {
	t.Helper()
	r, err := CreateRegion(name, size)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, r.Close())
		assert.NoError(t, r.Unlink())
	})
	return r
}

func TestRegionCreateOpenShare(t *testing.T) {
	requireShm(t)
	name := testName(t)
	const size = 1 << 20
	r := createRegion(t, name, size)
	assert.Equal(t, name, r.Name())
	assert.Equal(t, uint64(size), r.Size())
	require.Len(t, r.Bytes(), size)
	assert.NotZero(t, r.Base())
	assert.Zero(t, r.Base()%uintptr(unix.Getpagesize()), "mappings are page aligned")

	fi, err := os.Stat(filepath.Join(ShmDir, name))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	assert.Equal(t, int64(size), fi.Size())

	o, err := OpenRegion(name, size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, o.Close()) }()
	assert.NotEqual(t, r.Base(), o.Base(), "a second mapping sits elsewhere")

	// Writes through one mapping are visible through the other.
	tests := []struct {
		off uint64
		val byte
	}{{0, 0xa5}, {4095, 1}, {4096, 2}, {size / 2, 3}, {size - 1, 0x5a}}
	for _, tc := range tests {
		r.Bytes()[tc.off] = tc.val
	}
	for _, tc := range tests {
		assert.Equal(t, tc.val, o.Bytes()[tc.off], "offset %d", tc.off)
	}
	copy(o.Bytes()[100:], "hello")
	assert.Equal(t, "hello", string(r.Bytes()[100:105]))
}

func TestRegionUnlinkKeepsMapping(t *testing.T) {
	requireShm(t)
	name := testName(t)
	r, err := CreateRegion(name, 64*kib)
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	o, err := OpenRegion(name, 64*kib)
	require.NoError(t, err)
	defer func() { assert.NoError(t, o.Close()) }()

	require.NoError(t, r.Unlink())
	require.NoError(t, r.Unlink(), "second Unlink is a no-op")
	_, err = os.Stat(filepath.Join(ShmDir, name))
	require.True(t, os.IsNotExist(err), "name is gone")

	r.Bytes()[123] = 42
	assert.Equal(t, byte(42), o.Bytes()[123], "mappings still share memory")

	_, err = OpenRegion(name, 64*kib)
	require.ErrorIs(t, err, ErrRegionNotFound)
	assert.Contains(t, err.Error(), name)
}

func TestRegionErrors(t *testing.T) {
	requireShm(t)
	name := testName(t)
	createRegion(t, name, 64*kib)

	_, err := CreateRegion(name, 64*kib)
	require.ErrorIs(t, err, ErrRegionExists)
	assert.Contains(t, err.Error(), filepath.Join(ShmDir, name))
	assert.NotEmpty(t, errors.FlattenHints(err))

	_, err = OpenRegion(name, 128*kib)
	require.ErrorIs(t, err, ErrRegionSize)
	assert.Contains(t, err.Error(), "65536")
	assert.Contains(t, err.Error(), "131072")
	assert.Contains(t, err.Error(), name)

	tests := []struct {
		name    string
		region  string
		size    uint64
		wantErr error
	}{
		{"empty name", "", kib, ErrInvalidName},
		{"slash", "a/b", kib, ErrInvalidName},
		{"dotdot", "..", kib, ErrInvalidName},
		{"too long", strings.Repeat("x", 256), kib, ErrInvalidName},
		{"zero size", testName(t), 0, ErrInvalidSize},
		{"larger than tmpfs", testName(t), 1 << 62, ErrShmCapacity},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := CreateRegion(tc.region, tc.size)
			require.ErrorIs(t, err, tc.wantErr)
			assert.Nil(t, r)
			if tc.wantErr != ErrInvalidName {
				_, statErr := os.Stat(filepath.Join(ShmDir, tc.region))
				assert.Error(t, statErr, "nothing left behind")
			}
		})
	}
	_, err = OpenRegion(testName(t), kib)
	require.ErrorIs(t, err, ErrRegionNotFound)
}

func TestRegionLazyCommit(t *testing.T) {
	requireShm(t)
	const size = 4 << 30
	require.NoError(t, checkShm(0, false))
	if err := checkShm(size, false); err != nil {
		// A tmpfs smaller than 4 GiB is a property of this machine, not a bug.
		t.Skipf("skipping: %s is smaller than 4 GiB: %v", ShmDir, err)
	}
	name := testName(t)
	r := createRegion(t, name, size)

	path := filepath.Join(ShmDir, name)
	var before, after unix.Stat_t
	require.NoError(t, unix.Stat(path, &before))
	assert.Equal(t, int64(size), before.Size)
	assert.LessOrEqual(t, before.Blocks, int64(8), "nothing committed yet (512-byte blocks)")

	r.Bytes()[size/2] = 1 // touch one page in the middle
	require.NoError(t, unix.Stat(path, &after))
	t.Logf("4 GiB region: st_blocks %d before, %d after touching one byte", before.Blocks, after.Blocks)
	page := int64(unix.Getpagesize())
	assert.Greater(t, after.Blocks, before.Blocks, "the touched page is committed")
	assert.LessOrEqual(t, after.Blocks-before.Blocks, int64(2<<20/512), "at most one (huge) page committed")
	assert.GreaterOrEqual(t, (after.Blocks-before.Blocks)*512, page)
}

func TestCheckShm(t *testing.T) {
	requireShm(t)
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(ShmDir, &st))
	if st.Blocks == 0 {
		t.Skipf("skipping: %s has no size limit", ShmDir)
	}
	fsSize := st.Blocks * uint64(st.Frsize)
	assert.NoError(t, checkShm(fsSize, false), "exactly the tmpfs size is allowed")
	err := checkShm(fsSize+1, false)
	require.ErrorIs(t, err, ErrShmCapacity)
	assert.Contains(t, err.Error(), "/dev/shm")
	assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_SYMMETRIC_SIZE")
}

func TestRegionCloseTwice(t *testing.T) {
	requireShm(t)
	name := testName(t)
	r, err := CreateRegion(name, 8*kib)
	require.NoError(t, err)
	require.NoError(t, r.Unlink())
	require.NoError(t, r.Close())
	require.NoError(t, r.Close())
	assert.Nil(t, r.Bytes())
	assert.Zero(t, r.Base())
	assert.Equal(t, uint64(8*kib), r.Size())
}
