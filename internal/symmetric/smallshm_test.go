//go:build linux

package symmetric

import (
	stderrors "errors"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/errs"
)

// inPrivateShmEnv tells a re-executed test binary that it runs in a mount
// namespace of its own, where it may mount a tmpfs over /dev/shm.
const inPrivateShmEnv = "GOSHMEM_SYMTEST_PRIVATE_SHM"

// TestSmallShm runs its body (smallShm) in a child process with a private
// mount namespace and an 8 MiB tmpfs on /dev/shm. It skips when not root or
// when the kernel refuses unshare(CLONE_NEWNS); any other failure to set
// that up fails.
func TestSmallShm(t *testing.T) {
	if os.Getenv(inPrivateShmEnv) == "1" {
		smallShm(t)
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("skipping: mounting a tmpfs over /dev/shm in a private mount namespace needs root")
	}
	exe, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(exe, "-test.run=^TestSmallShm$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), inPrivateShmEnv+"=1")
	// Go makes the new namespace's mounts private (MS_REC|MS_PRIVATE on /)
	// before exec, so the child's mounts stay in it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	out, err := cmd.CombinedOutput()
	t.Logf("child in a private mount namespace:\n%s", out)
	var pe *os.PathError
	if stderrors.As(err, &pe) && (stderrors.Is(err, syscall.EPERM) || stderrors.Is(err, syscall.EACCES)) {
		t.Skipf("skipping: unshare(CLONE_NEWNS) is not permitted here (a container without CAP_SYS_ADMIN?): %v", err)
	}
	require.NoError(t, err)
	require.Contains(t, string(out), "--- PASS: TestSmallShm", "the child ran the body")
}

// smallShm is TestSmallShm's body, run in the private mount namespace.
func smallShm(t *testing.T) {
	const fsSize = 8 * mib
	require.NoError(t, unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""), "mount --make-rprivate /")
	require.NoError(t, unix.Mount("tmpfs", ShmDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size=8m,mode=1777"),
		"mount -t tmpfs -o size=8m tmpfs /dev/shm")
	free := func() uint64 {
		t.Helper()
		f, err := ShmFree(ShmDir)
		require.NoError(t, err)
		return f
	}
	empty := func(msg string) {
		t.Helper()
		ents, err := os.ReadDir(ShmDir)
		require.NoError(t, err)
		assert.Empty(t, ents, "no file in the private /dev/shm: %s", msg)
	}
	require.Equal(t, uint64(fsSize), free())

	t.Run("check", func(t *testing.T) {
		err := CheckCapacity(ShmDir, []uint64{4 * mib, 4 * mib, 4 * mib})
		require.Error(t, err)
		assert.True(t, stderrors.Is(err, errs.ErrHeapExhausted))
		assert.Contains(t, err.Error(), "the 3 PEs of the node need 12582912 bytes (12 MiB) of symmetric heap in /dev/shm "+
			"(GOSHMEM_SYMMETRIC_SIZE=4194304 each); /dev/shm has 8388608 bytes (8 MiB) free")
		assert.NoError(t, CheckCapacity(ShmDir, []uint64{4 * mib, 4 * mib}), "exactly what is free")
		_, err = ShmFree("/nonexistent-goshmem-test")
		assert.ErrorIs(t, err, unix.ENOENT)
	})

	t.Run("sparse until touched, freed on close", func(t *testing.T) {
		a, err := CreateAnon(4 * mib)
		require.NoError(t, err)
		b, err := createAnon(ShmDir, 4*mib, false)
		require.NoError(t, err)
		empty("two unnamed regions exist")
		assert.Equal(t, uint64(fsSize), free(), "reserving commits nothing")
		touch(a.Bytes())
		assert.Equal(t, uint64(fsSize-4*mib), free(), "a touched region is charged to /dev/shm")
		require.NoError(t, a.Close())
		require.NoError(t, b.Close())
		assert.Equal(t, uint64(fsSize), free(), "closing the last mapping and fd frees it")
	})

	t.Run("the SIGBUS that CheckCapacity prevents", func(t *testing.T) {
		sizes := []uint64{6 * mib, 6 * mib}
		require.ErrorIs(t, CheckCapacity(ShmDir, sizes), errs.ErrHeapExhausted)
		a, err := CreateAnon(sizes[0])
		require.NoError(t, err, "each region alone fits")
		defer func() { assert.NoError(t, a.Close()) }()
		b, err := CreateAnon(sizes[1])
		require.NoError(t, err)
		defer func() { assert.NoError(t, b.Close()) }()
		touch(a.Bytes())
		fault := touchCatch(b.Bytes())
		require.NotNil(t, fault, "touching past a full tmpfs faults")
		addr, ok := fault.(interface{ Addr() uintptr })
		require.True(t, ok, "the fault %v carries its address", fault)
		base := b.Base()
		assert.True(t, addr.Addr() >= base && addr.Addr() < base+uintptr(b.Size()),
			"the fault address %#x is in the second region [%#x, %#x)", addr.Addr(), base, base+uintptr(b.Size()))
		assert.Zero(t, free(), "the first region and the second's pages before the fault fill the tmpfs")
	})
	assert.Equal(t, uint64(fsSize), free())

	t.Run("owner killed", func(t *testing.T) {
		o := startOwner(t, 4*mib, 0, 9)
		empty("the owner child is running")
		assert.Equal(t, uint64(fsSize-4*mib), free(), "the owner touched every page")
		p, err := OpenHandle(o.handle, 4*mib)
		require.NoError(t, err)
		o.kill(t)
		empty("the owner child was killed")
		assert.Equal(t, uint64(fsSize-4*mib), free(), "a peer's mapping keeps the memory")
		assert.Equal(t, byte(9), p.Bytes()[0])
		require.NoError(t, p.Close())
		assert.Equal(t, uint64(fsSize), free(), "the last mapping gone, the memory is freed: nothing leaked")

		o = startOwner(t, 4*mib, 0, 9)
		o.kill(t)
		empty("a second owner was killed before any peer mapped its region")
		assert.Equal(t, uint64(fsSize), free())
	})

	t.Run("unlimited tmpfs", func(t *testing.T) {
		require.NoError(t, unix.Mount("tmpfs", ShmDir, "tmpfs", 0, "size=0"))
		defer func() { assert.NoError(t, unix.Unmount(ShmDir, 0)) }()
		assert.Equal(t, uint64(Unlimited), free())
		assert.NoError(t, CheckCapacity(ShmDir, []uint64{1 << 62, 1 << 62}))
	})
}

// touch stores to every page of mem.
func touch(mem []byte) {
	for i := 0; i < len(mem); i += os.Getpagesize() {
		mem[i] = 1
	}
}

// touchCatch is touch that returns the fault (SIGBUS) a store hits
// instead of crashing, or nil.
func touchCatch(mem []byte) (fault any) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { fault = recover() }()
	touch(mem)
	return nil
}
