package fabric

import (
	"os"
	"testing"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/errs"
)

// The sockets provider's progress thread sleeps between polls unless told
// not to (see cxi/engine.go); libfabric reads this at its first fi_getinfo.
func init() { os.Setenv("FI_SOCKETS_PE_WAITTIME", "0") }

func pair(t *testing.T) (a, b *Endpoint, bAddr uint64) {
	t.Helper()
	var err error
	a, err = OpenTriggered("sockets")
	require.NoError(t, err, "libfabric's sockets provider implements deferred work: it must open")
	t.Cleanup(a.Close)
	b, err = OpenTriggered("sockets")
	require.NoError(t, err)
	t.Cleanup(b.Close)
	assert.NotZero(t, a.Attr.Caps&CapTrigger)
	name, err := b.Name()
	require.NoError(t, err)
	addrs, err := a.InsertAddrs(name, 1)
	require.NoError(t, err)
	require.NoError(t, b.StartProgress())
	return a, b, addrs[0]
}

func mmap(t *testing.T, n int) []byte {
	m, err := unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	require.NoError(t, err)
	t.Cleanup(func() { unix.Munmap(m) })
	return m
}

// writeRig is a pair of endpoints set up for deferred writes from a to b:
// a 4 KiB source registered on a (key lkey) and destination on b (key
// rkey), a's trigger and completion counters, and base, the destination's
// address in the writes (0 without FI_MR_VIRT_ADDR).
type writeRig struct {
	a          *Endpoint
	dest       uint64
	dst, src   []byte
	mr, lmr    *MR
	trig, comp *Counter
	base       uint64
}

func newWriteRig(t *testing.T, rkey, lkey uint64) *writeRig {
	t.Helper()
	a, b, dest := pair(t)
	r := &writeRig{a: a, dest: dest, dst: mmap(t, 4096), src: mmap(t, 4096)}
	var err error
	r.mr, err = b.Register(unsafe.Pointer(&r.dst[0]), 4096, AccessRemote, rkey)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.mr.Close() })
	r.lmr, err = a.Register(unsafe.Pointer(&r.src[0]), 4096, AccessLocal, lkey)
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.lmr.Close() })
	r.trig, err = a.OpenCounter()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.trig.Close() })
	r.comp, err = a.OpenCounter()
	require.NoError(t, err)
	t.Cleanup(func() { _ = r.comp.Close() })
	r.base = uint64(uintptr(unsafe.Pointer(&r.dst[0])))
	if a.Attr.MRMode&MRVirtAddr == 0 {
		r.base = 0
	}
	return r
}

func TestDeferredWrite(t *testing.T) {
	r := newWriteRig(t, 7, 8)
	a, dest, dst, src, mr, lmr, trig, comp, base := r.a, r.dest, r.dst, r.src, r.mr, r.lmr, r.trig, r.comp, r.base

	// Two writes on one trigger counter, thresholds 1 and 2: they run in order.
	*(*uint64)(unsafe.Pointer(&src[0])) = 0x1111
	*(*uint64)(unsafe.Pointer(&src[8])) = 0x2222
	w1, w2 := NewWork(), NewWork()
	defer w1.Free()
	defer w2.Free()
	require.NoError(t, a.QueueWrite(w1, trig, 1, comp, unsafe.Pointer(&src[0]), 8, lmr.Desc, dest, base, mr.Key, 0))
	require.NoError(t, a.QueueWrite(w2, trig, 2, comp, unsafe.Pointer(&src[8]), 8, lmr.Desc, dest, base+8, mr.Key, 0))
	time.Sleep(20 * time.Millisecond)
	assert.Zero(t, comp.Read(), "nothing runs before the trigger counter reaches a threshold")
	assert.Zero(t, *(*uint64)(unsafe.Pointer(&dst[0])))

	require.NoError(t, trig.Add(1))
	require.NoError(t, comp.Wait(1, 5*time.Second))
	assert.Equal(t, uint64(0x1111), *(*uint64)(unsafe.Pointer(&dst[0])))
	time.Sleep(5 * time.Millisecond)
	assert.Equal(t, uint64(1), comp.Read(), "threshold 2 is not reached yet")
	assert.Zero(t, *(*uint64)(unsafe.Pointer(&dst[8])))

	require.NoError(t, trig.Add(1))
	require.NoError(t, comp.Wait(2, 5*time.Second))
	assert.Equal(t, uint64(0x2222), *(*uint64)(unsafe.Pointer(&dst[8])))
	assert.Zero(t, comp.ReadErr())

	// Reset and reuse (the monitor's retire -> reset -> re-arm).
	require.NoError(t, trig.Set(0))
	require.NoError(t, comp.Set(0))
	assert.Zero(t, trig.Read())
	*(*uint64)(unsafe.Pointer(&src[0])) = 0x3333
	require.NoError(t, a.QueueWrite(w1, trig, 1, comp, unsafe.Pointer(&src[0]), 8, lmr.Desc, dest, base, mr.Key, 0))
	require.NoError(t, trig.Add(1))
	require.NoError(t, comp.Wait(1, 5*time.Second))
	assert.Equal(t, uint64(0x3333), *(*uint64)(unsafe.Pointer(&dst[0])))
}

func TestDeferredCntrAdd(t *testing.T) {
	a, _, _ := pair(t)
	trig, err := a.OpenCounter()
	require.NoError(t, err)
	defer trig.Close()
	comp, err := a.OpenCounter()
	require.NoError(t, err)
	defer comp.Close()
	target, err := a.OpenCounter()
	require.NoError(t, err)
	defer target.Close()
	w := NewWork()
	defer w.Free()
	require.NoError(t, a.QueueCntrAdd(w, trig, 3, comp, target, 40))
	require.NoError(t, trig.Add(2))
	assert.Zero(t, target.Read())
	require.NoError(t, trig.Add(1))
	require.NoError(t, target.Wait(40, 5*time.Second))
	assert.Equal(t, uint64(40), target.Read())
}

func TestDeferredWorkUnsupported(t *testing.T) {
	a, _, _ := pair(t)
	// sockets lacks flush and cancel: the monitor retires by bookkeeping.
	err := a.FlushWork()
	require.Error(t, err)
	assert.True(t, errors.Is(err, ENOSYS), "sockets' FI_FLUSH_WORK: %v", err)

	// The CXI counter MMIO extension needs the cxi provider.
	c, err := a.OpenCounter()
	require.NoError(t, err)
	defer c.Close()
	_, _, err = c.MMIO()
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrNotSupported))
	assert.Contains(t, errors.FlattenHints(err), "Slingshot")

	// tcp;ofi_rxm ignores FI_TRIGGER: refused with a clear error.
	_, err = OpenTriggered("tcp;ofi_rxm")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoDeferredWork), "%v", err)
	assert.True(t, errors.Is(err, errs.ErrNotSupported))
	assert.Contains(t, errors.FlattenHints(err), "GOSHMEM_CXI_ENGINE")
}

// A work set re-armed at raised thresholds (no counter reset) and with a
// reset: nothing runs before its threshold, each epoch's writes land, a
// chain record releases the record after it, and BenchRearm counts.
func TestWorkSetRearm(t *testing.T) {
	r := newWriteRig(t, 9, 10)
	a, dest, dst, src, mr, lmr, trig, comp, base := r.a, r.dest, r.dst, r.src, r.mr, r.lmr, r.trig, r.comp, r.base
	u64 := func(m []byte, off int) *uint64 { return (*uint64)(unsafe.Pointer(&m[off])) }

	// The active-message shape: a chain write (payload) at 1 releases the
	// sequence write at 2; one trigger per instance, span 2.
	_, err := a.NewWorkSet(trig, comp, 0)
	require.Error(t, err)
	ws, err := a.NewWorkSet(trig, comp, 2)
	require.NoError(t, err)
	defer ws.Free()
	ws.SetWrite(0, 1, true, unsafe.Pointer(&src[8]), 8, lmr.Desc, dest, base+8, mr.Key, 0)
	ws.SetWrite(1, 2, false, unsafe.Pointer(&src[0]), 8, lmr.Desc, dest, base, mr.Key, 0)
	at := uint64(0) // the trigger count before instance k
	for k := uint64(0); k < 4; k++ {
		reset := k == 2
		if reset {
			at = 0
		}
		*u64(src, 0), *u64(src, 8) = k+1, 100+k
		require.NoError(t, ws.Arm(at, reset))
		time.Sleep(2 * time.Millisecond)
		require.Equal(t, at, trig.Read(), "instance %d", k)
		require.Equal(t, at/2, comp.Read(), "instance %d: nothing ran before its threshold", k)
		require.Equal(t, k, *u64(dst, 0), "instance %d: the previous sequence stays", k)
		require.NoError(t, trig.Add(1))
		require.NoError(t, comp.Wait(at/2+1, 5*time.Second))
		assert.Equal(t, at+2, trig.Read(), "instance %d: the chain completion advanced the trigger counter", k)
		assert.Equal(t, k+1, *u64(dst, 0))
		assert.Equal(t, 100+k, *u64(dst, 8), "the chained payload landed before the sequence")
		at += 2
	}
	assert.Zero(t, comp.ReadErr())

	// BenchRearm: reset every epoch, then raised thresholds with a reset
	// only when base+span passes cmax (span 2, cmax 5: epochs 0 and 2).
	c, err := ws.BenchRearm(2, 2047, true, 3)
	require.NoError(t, err)
	assert.Equal(t, 3, c.Epochs)
	assert.Equal(t, 3, c.Resets)
	assert.Positive(t, c.Queue)
	c, err = ws.BenchRearm(2, 5, false, 4)
	require.NoError(t, err)
	assert.Equal(t, 4, c.Epochs)
	assert.Equal(t, 2, c.Resets)
	assert.Positive(t, c.PerRecord(2))
}
