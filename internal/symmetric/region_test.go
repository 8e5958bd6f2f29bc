//go:build linux

package symmetric

import (
	"fmt"
	"math"
	"os"
	"testing"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
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

// newRegion creates an unnamed region of size bytes and closes it when t
// ends.
func newRegion(t *testing.T, size uint64) *Region {
	t.Helper()
	r, err := CreateAnon(size)
	require.NoError(t, err)
	t.Cleanup(func() { assert.NoError(t, r.Close()) })
	return r
}

// openFDs counts this process's open file descriptors.
func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(ents)
}

func TestRegionShare(t *testing.T) {
	requireShm(t)
	const size = 1 << 20
	r := newRegion(t, size)
	assert.Equal(t, uint64(size), r.Size())
	require.Len(t, r.Bytes(), size)
	assert.NotZero(t, r.Base())
	assert.Equal(t, uintptr(unsafe.Pointer(&r.Bytes()[0])), r.Base())
	assert.Zero(t, r.Base()%uintptr(unix.Getpagesize()), "mappings are page aligned")

	var st unix.Stat_t
	require.NoError(t, unix.Fstat(r.Handle().FD, &st))
	assert.Equal(t, uint32(0o600), st.Mode&0o777)
	assert.Equal(t, int64(size), st.Size)

	o, err := OpenHandle(r.Handle(), size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, o.Close()) }()
	assert.Equal(t, uint64(size), o.Size())
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

// TestRegionSizeErrors: sizes CreateAnon (both ways of making the file) and
// OpenHandle refuse, with nothing left behind.
func TestRegionSizeErrors(t *testing.T) {
	requireShm(t)
	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(ShmDir, &st))
	fsSize := st.Blocks * uint64(st.Frsize) // 0: no size limit

	tests := []struct {
		name    string
		size    uint64
		wantErr error
		want    string
	}{
		{"zero", 0, ErrInvalidSize, "size 0 is not in [1, 9223372036854775807]"},
		{"above MaxInt", math.MaxInt + 1, ErrInvalidSize, "size 9223372036854775808 is not in [1, "},
		{"one byte larger than the tmpfs", fsSize + 1, ErrShmCapacity, "exceeds the size of /dev/shm"},
		{"far larger than the tmpfs", 1 << 62, ErrShmCapacity, "reserving 4611686018427387904 bytes exceeds"},
	}
	for _, tmpfile := range []bool{true, false} {
		for _, tc := range tests {
			t.Run(fmt.Sprintf("%s/tmpfile=%v", tc.name, tmpfile), func(t *testing.T) {
				if tc.wantErr == ErrShmCapacity && st.Blocks == 0 {
					t.Skipf("skipping: %s has no size limit", ShmDir)
				}
				fds := openFDs(t)
				r, err := createAnon(ShmDir, tc.size, tmpfile)
				require.ErrorIs(t, err, tc.wantErr)
				assert.Nil(t, r)
				assert.Contains(t, err.Error(), tc.want)
				if tc.wantErr == ErrShmCapacity {
					assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_SYMMETRIC_SIZE")
				}
				assert.Empty(t, shmEntriesFor(t, 0, os.Getpid()), "no file left behind")
				assert.Equal(t, fds, openFDs(t), "no fd left open")
			})
		}
	}

	r := newRegion(t, 64*kib)
	for _, size := range []uint64{0, math.MaxInt + 1} {
		_, err := OpenHandle(r.Handle(), size)
		require.ErrorIs(t, err, ErrInvalidSize, "OpenHandle of size %d", size)
		assert.Contains(t, err.Error(), r.Handle().Path())
	}
}

func TestCheckShmIn(t *testing.T) {
	requireShm(t)
	require.NoError(t, checkShmIn(ShmDir, 0, false))
	err := checkShmIn("/nonexistent-goshmem-test", 1, false)
	require.ErrorIs(t, err, unix.ENOENT)
	assert.Contains(t, errors.FlattenHints(err), "tmpfs")

	var st unix.Statfs_t
	require.NoError(t, unix.Statfs(ShmDir, &st))
	if st.Blocks == 0 {
		t.Skipf("skipping: %s has no size limit", ShmDir)
	}
	fsSize := st.Blocks * uint64(st.Frsize)
	assert.NoError(t, checkShmIn(ShmDir, fsSize, false), "exactly the tmpfs size is allowed")
	err = checkShmIn(ShmDir, fsSize+1, false)
	require.ErrorIs(t, err, ErrShmCapacity)
	assert.Contains(t, err.Error(), "/dev/shm")
	assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_SYMMETRIC_SIZE")
}

// TestRegionCloseTwice: Close is idempotent for the owner's region and a
// peer's mapping; afterwards Bytes and Base are empty, Size stays, and the
// owner's fd is closed with it.
func TestRegionCloseTwice(t *testing.T) {
	requireShm(t)
	r, err := CreateAnon(8 * kib)
	require.NoError(t, err)
	h := r.Handle()
	o, err := OpenHandle(h, 8*kib)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		r    *Region
	}{{"peer", o}, {"owner", r}} {
		require.NoError(t, tc.r.Close(), tc.name)
		require.NoError(t, tc.r.Close(), "%s: second Close", tc.name)
		assert.Nil(t, tc.r.Bytes(), tc.name)
		assert.Zero(t, tc.r.Base(), tc.name)
		assert.Equal(t, uint64(8*kib), tc.r.Size(), tc.name)
		assert.Equal(t, h, tc.r.Handle(), tc.name)
		assert.NoError(t, tc.r.CloseHandle(), "%s: CloseHandle after Close is a no-op", tc.name)
	}
	_, err = OpenHandle(h, 8*kib)
	require.ErrorIs(t, err, ErrRegionNotFound, "Close closed the owner's fd")
}

// TestRegionRetire checks that a retired region's memory stays mapped: a
// slice kept from Bytes reads zeros and takes writes, without sharing
// them with the peer that still maps the region, and the fd is closed.
func TestRegionRetire(t *testing.T) {
	requireShm(t)
	fds := openFDs(t)
	r, err := CreateAnon(8 * kib)
	require.NoError(t, err)
	o, err := OpenHandle(r.Handle(), 8*kib)
	require.NoError(t, err)
	defer func() { assert.NoError(t, o.Close()) }()
	kept := r.Bytes()
	kept[0], kept[len(kept)-1] = 7, 9
	require.Equal(t, byte(7), o.Bytes()[0], "shared before Retire")

	require.NoError(t, r.Retire())
	assert.Nil(t, r.Bytes())
	assert.Zero(t, r.Base())
	assert.Equal(t, byte(0), kept[0], "a kept slice reads zeros")
	assert.Equal(t, byte(0), kept[len(kept)-1])
	kept[1] = 5
	assert.Equal(t, byte(5), kept[1], "a kept slice takes writes")
	assert.Equal(t, byte(0), o.Bytes()[1], "the peer does not see them")
	assert.Equal(t, byte(7), o.Bytes()[0], "the peer keeps the region's data")
	require.NoError(t, r.Retire(), "Retire again is a no-op")
	require.NoError(t, r.Close(), "Close after Retire is a no-op")
	assert.Equal(t, fds, openFDs(t), "Retire closed the owner's fd")
}
