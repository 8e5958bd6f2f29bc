//go:build linux

package symmetric

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
)

// shmEntriesFor lists the entries of ShmDir that are the file with inode
// ino, or are named like a region of process pid (goshmem-*-<pid>-*). Other
// jobs' files are ignored, so the check holds on a shared machine.
func shmEntriesFor(t *testing.T, ino uint64, pid int) []string {
	t.Helper()
	ents, err := os.ReadDir(ShmDir)
	require.NoError(t, err)
	var found []string
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, "goshmem-") && strings.Contains(name, "-"+strconv.Itoa(pid)+"-") {
			found = append(found, name)
			continue
		}
		var st unix.Stat_t
		if unix.Lstat(filepath.Join(ShmDir, name), &st) == nil && st.Ino == ino {
			found = append(found, name)
		}
	}
	return found
}

func TestRegionHandleMarshal(t *testing.T) {
	h := RegionHandle{PID: 12345, FD: 7, Dev: 0x1234_5678_9abc, Ino: 987654321, Size: 1 << 30}
	b := h.Marshal()
	require.Len(t, b, HandleSize)
	got, err := ParseRegionHandle(b)
	require.NoError(t, err)
	assert.Equal(t, h, got)
	assert.Equal(t, "/proc/12345/fd/7", h.Path())
	assert.Contains(t, h.String(), "/proc/12345/fd/7")

	with := func(off int, v uint32) []byte {
		c := h.Marshal()
		binary.LittleEndian.PutUint32(c[off:], v)
		return c
	}
	tests := []struct {
		name string
		b    []byte
		want string
	}{
		{"short", b[:HandleSize-1], "39 bytes"},
		{"long", append(h.Marshal(), 0), "41 bytes"},
		{"version", with(0, 1<<16+32), "version"},
		{"pid 0", with(4, 0), "pid 0"},
		{"pid too large", with(4, 1<<31), "pid"},
		{"negative fd", with(8, 0xffffffff), "fd -1"},
		{"reserved", with(12, 1), "reserved"},
		{"size 0", func() []byte { c := h.Marshal(); binary.LittleEndian.PutUint64(c[32:], 0); return c }(), "size"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseRegionHandle(tc.b)
			require.ErrorIs(t, err, ErrInvalidHandle)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// FuzzParseRegionHandle checks that every record ParseRegionHandle accepts
// marshals back to the same bytes.
func FuzzParseRegionHandle(f *testing.F) {
	f.Add(RegionHandle{PID: 1, FD: 3, Dev: 5, Ino: 7, Size: 4096}.Marshal())
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := ParseRegionHandle(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidHandle) {
				t.Fatalf("error %v does not match ErrInvalidHandle", err)
			}
			return
		}
		if got := h.Marshal(); string(got) != string(b) {
			t.Fatalf("round trip: %x -> %+v -> %x", b, h, got)
		}
	})
}

func TestCreateAnonOpenHandle(t *testing.T) {
	requireShm(t)
	for _, tmpfile := range []bool{true, false} {
		t.Run(fmt.Sprintf("tmpfile=%v", tmpfile), func(t *testing.T) {
			const size = 1 << 20
			r, err := createAnon(ShmDir, size, tmpfile)
			require.NoError(t, err)
			defer func() { assert.NoError(t, r.Close()) }()
			h := r.Handle()
			assert.Equal(t, os.Getpid(), h.PID)
			assert.GreaterOrEqual(t, h.FD, 0)
			assert.Equal(t, uint64(size), h.Size)
			assert.Equal(t, uint64(size), r.Size())
			require.Len(t, r.Bytes(), size)

			// The file has no name in /dev/shm, and the kernel says so.
			assert.Empty(t, shmEntriesFor(t, h.Ino, os.Getpid()))
			link, err := os.Readlink(h.Path())
			require.NoError(t, err)
			assert.Contains(t, link, "(deleted)")
			var fst unix.Stat_t
			require.NoError(t, unix.Fstat(h.FD, &fst))
			assert.Equal(t, uint64(0), fst.Nlink, "no directory entry refers to it")
			assert.Equal(t, uint32(0o600), fst.Mode&0o777)

			o, err := OpenHandle(h, size)
			require.NoError(t, err)
			defer func() { assert.NoError(t, o.Close()) }()
			assert.Equal(t, h, o.Handle())
			assert.NotEqual(t, r.Base(), o.Base(), "a second mapping sits elsewhere")
			for _, off := range []uint64{0, 4095, 4096, size / 2, size - 1} {
				r.Bytes()[off] = byte(off) + 1
				assert.Equal(t, byte(off)+1, o.Bytes()[off], "offset %d", off)
			}
			copy(o.Bytes()[100:], "hello")
			assert.Equal(t, "hello", string(r.Bytes()[100:105]))

			// Once the owner closes its fd, the mappings still share memory,
			// but the handle opens nothing.
			require.NoError(t, r.CloseHandle())
			require.NoError(t, r.CloseHandle(), "second CloseHandle is a no-op")
			r.Bytes()[7] = 77
			assert.Equal(t, byte(77), o.Bytes()[7])
			_, err = OpenHandle(h, size)
			require.ErrorIs(t, err, ErrRegionNotFound)
			assert.Contains(t, err.Error(), h.Path())
		})
	}
}

func TestOpenHandleErrors(t *testing.T) {
	requireShm(t)
	r, err := CreateAnon(64 * kib)
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	h := r.Handle()

	_, err = OpenHandle(h, 128*kib)
	require.ErrorIs(t, err, ErrRegionSize)
	assert.Contains(t, err.Error(), "65536")
	assert.Contains(t, err.Error(), "131072")
	assert.Contains(t, err.Error(), h.Path())
	assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_SYMMETRIC_SIZE")

	_, err = OpenHandle(h, 0)
	require.ErrorIs(t, err, ErrInvalidSize)

	// The fd now holds another file: a reused fd (or pid) is refused.
	other, err := os.Open("/dev/null")
	require.NoError(t, err)
	defer other.Close()
	wrong := h
	wrong.FD = int(other.Fd())
	_, err = OpenHandle(wrong, 64*kib)
	require.ErrorIs(t, err, ErrRegionNotFound)
	assert.Contains(t, err.Error(), "is another file")

	// A live process without that fd.
	wrong = h
	wrong.FD = 1 << 20
	_, err = OpenHandle(wrong, 64*kib)
	require.ErrorIs(t, err, ErrRegionNotFound)
	assert.Contains(t, err.Error(), fmt.Sprintf("process %d has no fd %d", os.Getpid(), 1<<20))
}

// TestAnonAcrossProcesses: a child maps this process's region and stores
// into it; then this process maps a child's region and stores into that.
func TestAnonAcrossProcesses(t *testing.T) {
	requireShm(t)
	const size = 256 * kib
	r, err := CreateAnon(size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	r.Bytes()[size-1] = 0x3c
	out, err := childCmd(t, "peer-write", hex.EncodeToString(r.Handle().Marshal()), size, size-2, 0xa7).Output()
	require.NoError(t, err)
	assert.Equal(t, byte(0xa7), r.Bytes()[size-2], "the child's store is visible here")
	assert.Equal(t, "60", strings.TrimSpace(string(out)), "the child saw this process's store (0x3c)")

	o := startOwner(t, size, 1000, 0x5e)
	assert.Empty(t, shmEntriesFor(t, o.handle.Ino, o.handle.PID), "the child's region has no name")
	p, err := OpenHandle(o.handle, size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	assert.Equal(t, byte(0x5e), p.Bytes()[1000])
	assert.Equal(t, byte(0xee), p.Bytes()[size-4096], "the child touched every page")
	p.Bytes()[1001] = 0x42
	assert.Equal(t, byte(0x42), o.finish(t), "the child saw this process's store")
}

// TestAnonOwnerKilled: a SIGKILLed owner leaves no file in /dev/shm; a
// peer that mapped its region before keeps it, and one that tries after
// gets ErrRegionNotFound naming the pid, at once.
func TestAnonOwnerKilled(t *testing.T) {
	requireShm(t)
	const size = 1 * mib

	o := startOwner(t, size, 5, 55)
	h := o.handle
	assert.Empty(t, shmEntriesFor(t, h.Ino, h.PID), "while the owner runs")
	p, err := OpenHandle(h, size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, p.Close()) }()
	o.kill(t)
	assert.Empty(t, shmEntriesFor(t, h.Ino, h.PID), "after the owner was killed")
	assert.Equal(t, byte(55), p.Bytes()[5], "a mapping outlives the owner")
	p.Bytes()[6] = 66
	assert.Equal(t, byte(66), p.Bytes()[6])

	_, err = OpenHandle(h, size)
	require.ErrorIs(t, err, ErrRegionNotFound)
	assert.Contains(t, err.Error(), fmt.Sprintf("process %d has exited", h.PID))

	// Killed before any peer opened it.
	o2 := startOwner(t, size, 0, 1)
	o2.kill(t)
	assert.Empty(t, shmEntriesFor(t, o2.handle.Ino, o2.handle.PID))
	_, err = OpenHandle(o2.handle, size)
	require.ErrorIs(t, err, ErrRegionNotFound)
	assert.Contains(t, err.Error(), strconv.Itoa(o2.handle.PID))
}

// TestAnonLazyCommit: a region is sparse, ftruncate reserves its length
// and a page is committed on first touch (no MAP_NORESERVE needed: tmpfs
// files are not charged at mmap time).
func TestAnonLazyCommit(t *testing.T) {
	requireShm(t)
	const size = 4 << 30
	if err := checkShmIn(ShmDir, size, false); err != nil {
		// A tmpfs smaller than 4 GiB is a property of this machine, not a bug.
		t.Skipf("skipping: %s is smaller than 4 GiB: %v", ShmDir, err)
	}
	r, err := CreateAnon(size)
	require.NoError(t, err)
	defer func() { assert.NoError(t, r.Close()) }()
	var before, after unix.Stat_t
	require.NoError(t, unix.Fstat(r.Handle().FD, &before))
	assert.Equal(t, int64(size), before.Size)
	assert.Zero(t, before.Blocks, "nothing committed yet")
	r.Bytes()[size/2] = 1
	require.NoError(t, unix.Fstat(r.Handle().FD, &after))
	assert.Greater(t, after.Blocks, before.Blocks, "the touched page is committed")
	assert.LessOrEqual(t, after.Blocks, int64(2<<20/512), "at most one (huge) page committed")
	assert.GreaterOrEqual(t, after.Blocks*512, int64(unix.Getpagesize()), "st_blocks counts 512-byte blocks")
}
