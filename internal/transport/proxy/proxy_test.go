package proxy_test

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/cgo/devhost"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/quiet"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
	"github.com/goshmem/goshmem/internal/transport/proxy"
	"github.com/goshmem/goshmem/internal/transport/shm"
)

const heapSize = 4 << 20

// testTeams is the team slots of the test states: the world alone is used.
const testTeams = 4

// job is npes host-mode "GPUs": heaps in host memory, a device state per
// PE that reaches only itself by load/store and every other PE through its
// own proxy, whose worker submits through the shm transport.
type job struct {
	mem     *proxy.HostMemory
	heaps   []unsafe.Pointer
	pes     []devhost.PE
	proxies []*proxy.Proxy
}

func newJob(t *testing.T, npes int, cfg proxy.Config, start bool) *job {
	t.Helper()
	j := &job{mem: &proxy.HostMemory{}}
	t.Cleanup(func() {
		for _, p := range j.proxies {
			_ = p.Close()
		}
		_ = j.mem.Close()
	})
	for pe := 0; pe < npes; pe++ {
		h, err := j.mem.Pinned(heapSize)
		require.NoError(t, err)
		j.heaps = append(j.heaps, h.Host)
	}
	for pe := 0; pe < npes; pe++ {
		c := cfg
		c.Me, c.NPEs = pe, npes
		if c.HeapSize == 0 {
			c.HeapSize = heapSize
		}
		pm := &proxy.HostMemory{}
		p, err := proxy.New(c, pm)
		require.NoError(t, err)
		j.proxies = append(j.proxies, p)
		st := cudatr.State{MyPE: int32(pe), NPEs: int32(npes), HeapSize: heapSize,
			RemoteTransport: cudatr.RemoteProxy, ProxyState: p.StateAddr()}
		st.HeapBase[pe] = uint64(uintptr(j.heaps[pe]))
		sm, err := j.mem.Device(cudatr.StateSize + cudatr.TeamTableBytes(testTeams))
		require.NoError(t, err)
		table, teams, epochs := cudatr.TeamTableImage(testTeams, npes, pe, sm.Dev+cudatr.StateSize)
		st.Teams, st.TeamEpoch, st.MaxTeams = teams, epochs, testTeams
		st.InitTeams(npes)
		require.NoError(t, j.mem.Write(sm.Dev, st.Bytes()))
		require.NoError(t, j.mem.Write(sm.Dev+cudatr.StateSize, table))
		j.pes = append(j.pes, devhost.PE{State: uintptr(sm.Host)})
		if start {
			j.start(t, pe, nil)
		}
	}
	return j
}

// start starts PE pe's workers over shm (wrap: optional backend wrapper).
func (j *job) start(t *testing.T, pe int, wrap func(proxy.Backend) proxy.Backend) {
	t.Helper()
	tr := shm.New(j.heaps)
	require.NoError(t, j.proxies[pe].Start(func(int) (proxy.Backend, error) {
		var b proxy.Backend = &proxy.HostBackend{Tr: tr, Local: j.heaps[pe], Q: quiet.NewQueue("proxy", nil)}
		if wrap != nil {
			b = wrap(b)
		}
		return b, nil
	}))
}

func (j *job) addr(pe int, off uintptr) uintptr { return uintptr(j.heaps[pe]) + off }
func (j *job) bytes(pe int, off uintptr, n int) []byte {
	return unsafe.Slice((*byte)(unsafe.Add(j.heaps[pe], off)), n)
}
func (j *job) u64(pe int, off uintptr) uint64 { return *(*uint64)(unsafe.Add(j.heaps[pe], off)) }

// sym is the address PE 0 names for offset off (its own heap: symmetric).
func (j *job) sym(off uintptr) uintptr { return j.addr(0, off) }

// goProducers starts n producers of PE 0 and returns their WaitGroup:
// producer g is a goroutine locked to its OS thread (a host-mode "GPU
// thread") with its own copy of PE 0 as block g, and runs body(g, pe).
func (j *job) goProducers(n int, body func(g int, pe *devhost.PE)) *sync.WaitGroup {
	var wg sync.WaitGroup
	for g := 0; g < n; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			pe := j.pes[0]
			pe.Block = g
			body(g, &pe)
		}(g)
	}
	return &wg
}

func trapCode(t *testing.T, err error) uint64 {
	t.Helper()
	var tr *devhost.Trap
	require.True(t, errors.As(err, &tr), "want a device trap, got %v", err)
	return tr.Code
}

func TestEndToEndOverShm(t *testing.T) {
	j := newJob(t, 2, proxy.Config{Workers: 2, Rings: 2, Contexts: 4, Slots: 64, Batch: 4}, true)
	endToEnd(t, j)
}

// endToEnd runs every kind of device request from PE 0 to PE 1 through
// PE 0's proxy and checks the values (contexts 0 and 2 are used).
func endToEnd(t *testing.T, j *job) {
	pe0 := j.pes[0]

	// p (inline 8 and 2 bytes), then quiet: visible on PE 1
	require.NoError(t, pe0.P64(j.sym(0), 0x1122334455667788, 1))
	require.NoError(t, pe0.P16(j.sym(8), 0xbeef, 1))
	require.NoError(t, pe0.Quiet(-1))
	assert.Equal(t, uint64(0x1122334455667788), j.u64(1, 0))
	assert.Equal(t, []byte{0xef, 0xbe}, j.bytes(1, 8, 2))

	// blocking put of 100000 bytes from the symmetric heap: done on return
	src := j.bytes(0, 4096, 100000)
	for i := range src {
		src[i] = byte(i*7 + 3)
	}
	require.NoError(t, pe0.Putmem(j.sym(200000), j.sym(4096), len(src), 1, false))
	assert.Equal(t, src, j.bytes(1, 200000, len(src)), "blocking put completed before returning")

	// nbi put from a non-symmetric source (inline chunks) + quiet
	outside, err := j.mem.Pinned(4096)
	require.NoError(t, err)
	ob := unsafe.Slice((*byte)(outside.Host), 21)
	for i := range ob {
		ob[i] = byte(100 + i)
	}
	require.NoError(t, pe0.Putmem(j.sym(300000), uintptr(outside.Host), 21, 1, true))
	require.NoError(t, pe0.Quiet(0))
	assert.Equal(t, ob, j.bytes(1, 300000, 21))

	// get into the symmetric heap, and into non-symmetric memory (reply slots)
	pb := j.bytes(1, 400000, 3000)
	for i := range pb {
		pb[i] = byte(i ^ 0x5a)
	}
	require.NoError(t, pe0.Getmem(j.sym(500000), j.sym(400000), 3000, 1, false))
	assert.Equal(t, pb, j.bytes(0, 500000, 3000))
	require.NoError(t, pe0.Getmem(uintptr(outside.Host)+64, j.sym(400000), 13, 1, false))
	assert.Equal(t, pb[:13], unsafe.Slice((*byte)(unsafe.Add(outside.Host, 64)), 13))
	v, err := pe0.G64(j.sym(0), 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(0x1122334455667788), v)

	// AMOs (64 and 32 bits) with their fetched values
	ctr := j.sym(600000)
	old, err := pe0.AMO64(devhost.AMOFetchAdd, ctr, 5, 0, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(0), old)
	_, err = pe0.AMO64(devhost.AMOAdd, ctr, 10, 0, 1)
	require.NoError(t, err)
	old, err = pe0.AMO64(devhost.AMOCompareSwap, ctr, 99, 15, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(15), old, "compare-swap sees 5 + 10")
	old, err = pe0.AMO64(devhost.AMOCompareSwap, ctr, 1, 15, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(99), old, "failed compare-swap returns the current value")
	old, err = pe0.AMO64(devhost.AMOSwap, ctr, 7, 0, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(99), old)
	_, err = pe0.AMO64(devhost.AMOSet, ctr+8, 0xf0, 0, 1)
	require.NoError(t, err)
	old, err = pe0.AMO64(devhost.AMOFetchOr, ctr+8, 0x0f, 0, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xf0), old)
	old, err = pe0.AMO64(devhost.AMOFetchXor, ctr+8, 0xff, 0, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(0xff), old)
	f, err := pe0.AMO64(devhost.AMOFetch, ctr, 0, 0, 1)
	require.NoError(t, err)
	assert.Equal(t, uint64(7), f)
	o32, err := pe0.FetchAdd32(j.sym(600064), -3, 1)
	require.NoError(t, err)
	assert.Equal(t, int32(0), o32)
	require.NoError(t, pe0.Quiet(-1))
	assert.Equal(t, uint64(0), j.u64(1, 600008), "xor 0xff of 0xff")
	assert.Equal(t, int32(-3), *(*int32)(unsafe.Add(j.heaps[1], 600064)))

	// put_signal: the signal lands after the payload; ADD twice
	for i := range src[:5000] {
		src[i] = byte(i + 1)
	}
	require.NoError(t, pe0.PutSignal(j.sym(700000), j.sym(4096), 5000, j.sym(710000), 1, true, 1, false))
	require.NoError(t, pe0.PutSignal(j.sym(700000), j.sym(4096), 4, j.sym(710000), 1, true, 1, true))
	require.NoError(t, pe0.SignalOp(j.sym(710008), 42, false, 1))
	require.NoError(t, pe0.Quiet(-1))
	assert.Equal(t, uint64(2), j.u64(1, 710000))
	assert.Equal(t, uint64(42), j.u64(1, 710008))
	assert.Equal(t, src[:5000], j.bytes(1, 700000, 5000))
	// a signal operator other than SET/ADD traps before anything is posted,
	// on the remote path as on the load/store path (0 and 1 are not SET/ADD)
	for _, op := range []int{0, 1, 8, 11, -1} {
		err := pe0.SignalOpRaw(j.sym(710008), 5, op, 1)
		assert.Equal(t, uint64(devhost.ErrInvalidArg), trapCode(t, err), "signal_op op %d to a proxy peer", op)
		err = pe0.PutSignalOp(j.sym(700000), j.sym(4096), 16, j.sym(710008), 5, op, 1, true)
		assert.Equal(t, uint64(devhost.ErrInvalidArg), trapCode(t, err), "put_signal_nbi op %d to a proxy peer", op)
		err = pe0.SignalOpRaw(j.sym(710008), 5, op, 0)
		assert.Equal(t, uint64(devhost.ErrInvalidArg), trapCode(t, err), "signal_op op %d to itself", op)
	}
	require.NoError(t, pe0.Quiet(-1))
	assert.Equal(t, uint64(42), j.u64(1, 710008), "no bad op reached the signal")
	assert.Equal(t, uint64(0), j.u64(0, 710008), "no bad op reached the local signal")

	// a private context's ring, completed by its ctx quiet
	require.NoError(t, pe0.CtxPutmemNBI(2, j.sym(800000), j.sym(4096), 64, 1))
	require.NoError(t, pe0.Quiet(2))
	assert.Equal(t, src[:64], j.bytes(1, 800000, 64))
	// the load/store path still serves this PE itself
	require.NoError(t, pe0.P64(j.sym(16), 77, 0))
	assert.Equal(t, uint64(77), j.u64(0, 16))
	require.NoError(t, j.proxies[0].Err())
}

// Many producers on the multi-producer default context, a ring of 8 slots:
// every slot is reused hundreds of times (wrap, full ring) and every
// fetch-add is seen exactly once.
func TestManyProducersWrapAndFullRing(t *testing.T) {
	j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 1, Contexts: 2, Slots: 8, Batch: 3}, true)
	const threads, iters = 6, 300
	seen := make([][]uint64, threads)
	j.goProducers(threads, func(g int, pe *devhost.PE) {
		for k := 0; k < iters; k++ {
			old, err := pe.AMO64(devhost.AMOFetchAdd, j.sym(0), 1, 0, 1)
			if err != nil {
				t.Error(err)
				return
			}
			seen[g] = append(seen[g], old)
			if err := pe.P64(j.sym(uintptr(64+8*g)), uint64(k+1), 1); err != nil {
				t.Error(err)
				return
			}
		}
	}).Wait()
	require.NoError(t, j.pes[0].Quiet(-1))
	assert.Equal(t, uint64(threads*iters), j.u64(1, 0))
	all := map[uint64]bool{}
	for _, s := range seen {
		for _, v := range s {
			assert.False(t, all[v], "value %d fetched twice", v)
			all[v] = true
		}
	}
	assert.Len(t, all, threads*iters)
	for g := 0; g < threads; g++ {
		assert.Equal(t, uint64(iters), j.u64(1, uintptr(64+8*g)), "thread %d's last p", g)
	}
}

// A full ring is back-pressure: the producer waits, nothing is overwritten,
// and everything lands once the worker runs.
func TestFullRingBlocksThenDrains(t *testing.T) {
	j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 1, Contexts: 2, Slots: 4, Batch: 2}, false)
	pe := j.pes[0]
	pe.Block = 0
	for k := 0; k < 4; k++ { // fills ctx 1's ring (tuned, single producer)
		require.NoError(t, pe.CtxPutmemNBI(1, j.sym(uintptr(8*k)), j.sym(uintptr(4096+8*k)), 8, 1))
	}
	for k := 0; k < 8; k++ {
		*(*uint64)(unsafe.Add(j.heaps[0], 4096+8*k)) = uint64(1000 + k)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		err := pe.CtxPutmemNBI(1, j.sym(32), j.sym(4096+32), 8, 1) // the fifth: waits for space
		if err == nil {
			err = pe.Quiet(1)
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("a put into a full ring returned before the worker ran (err %v)", err)
	case <-time.After(100 * time.Millisecond):
	}
	assert.Equal(t, uint64(0), j.u64(1, 0), "nothing delivered yet")
	j.start(t, 0, nil)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("the blocked producer never got space")
	}
	// inline payloads were copied at enqueue: the first four carry the
	// source as it was then (0), the fifth the value written later
	for k := 0; k < 4; k++ {
		assert.Equal(t, uint64(0), j.u64(1, uintptr(8*k)))
	}
	assert.Equal(t, uint64(1004), j.u64(1, 32))
}

// An invalid descriptor is rejected by the worker and reported at the next
// quiet of its context (device trap code, host error naming it); another
// context is unaffected.
func TestInvalidDescriptorRejectedAtQuiet(t *testing.T) {
	j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 1, Contexts: 4, Slots: 16, Batch: 4}, true)
	pe := j.pes[0]
	for _, tc := range []struct {
		name, want string
		ctx        int
		w0, w1     uint64
	}{
		{"PE out of range", "PE 5 out of range [0, 2)", 1, proxy.Encode(proxy.OpPutInline, 5, 8, 0), 1},
		{"offset beyond the heap", "outside PE 1's heap", 2, proxy.Encode(proxy.OpPut, 1, 0, heapSize-8), proxy.Span(0, 64)},
		{"unknown op", "unknown op 9", 3, proxy.Encode(9, 1, 0, 0), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pe.PostRaw(tc.ctx, tc.w0, tc.w1)
			require.NoError(t, err, "posting never fails: the worker judges")
			err = pe.Quiet(tc.ctx)
			assert.Equal(t, uint64(devhost.ErrProxyRejected), trapCode(t, err))
			require.Error(t, j.proxies[0].Err())
			assert.Contains(t, j.proxies[0].Err().Error(), tc.want)
		})
	}
	// context 0 saw no rejection: it still works and quiets
	require.NoError(t, pe.P64(j.sym(0), 5, 1))
	require.NoError(t, pe.Quiet(0))
	assert.Equal(t, uint64(5), j.u64(1, 0))
}

// A worker that dies: device waits fail with the dead flag; a worker that
// never runs: device waits fail at the timeout. Neither hangs.
func TestDeadWorkerAndTimeout(t *testing.T) {
	t.Run("dead", func(t *testing.T) {
		j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 1, Contexts: 2, Slots: 16}, true)
		j.proxies[0].KillWorker(0)
		require.Eventually(t, func() bool { return j.proxies[0].Err() != nil }, 5*time.Second, time.Millisecond)
		_, err := j.pes[0].G64(j.sym(0), 1)
		assert.Equal(t, uint64(devhost.ErrProxyDead), trapCode(t, err))
		assert.Contains(t, j.proxies[0].Err().Error(), "proxy: worker 0 was stopped")
	})
	t.Run("failing backend", func(t *testing.T) {
		j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 1, Contexts: 2, Slots: 16}, false)
		j.start(t, 0, func(b proxy.Backend) proxy.Backend { return &failFlush{Backend: b} })
		require.NoError(t, j.pes[0].P64(j.sym(0), 1, 1))
		// the host backend completed the put before the failing flush: a
		// quiet may still succeed; the next request cannot
		require.Eventually(t, func() bool { return j.proxies[0].Err() != nil }, 5*time.Second, time.Millisecond)
		_, err := j.pes[0].AMO64(devhost.AMOFetchAdd, j.sym(8), 1, 0, 1)
		assert.Equal(t, uint64(devhost.ErrProxyDead), trapCode(t, err))
		assert.Contains(t, j.proxies[0].Err().Error(), "injected flush failure")
	})
	t.Run("timeout", func(t *testing.T) {
		j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 1, Contexts: 2, Slots: 16, Timeout: 200 * time.Millisecond}, false)
		require.NoError(t, j.pes[0].P64(j.sym(0), 1, 1))
		err := j.pes[0].Quiet(-1)
		assert.Equal(t, uint64(devhost.ErrProxyTimeout), trapCode(t, err))
		assert.Equal(t, uint64(0), j.u64(1, 0), "no worker ran: the put is still unserved when the wait gives up")
	})
}

type failFlush struct{ proxy.Backend }

func (f *failFlush) Flush() error { return errors.New("injected flush failure") }

// The baseline protocol (atomic reservation, host progress read every
// request, release publication) moves the same data.
func TestBaselineMode(t *testing.T) {
	j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 1, Contexts: 2, Slots: 8, Mode: "baseline"}, true)
	pe := j.pes[0]
	for k := 0; k < 50; k++ {
		require.NoError(t, pe.P64(j.sym(uintptr(8*(k%4))), uint64(k), 1))
		_, err := pe.AMO64(devhost.AMOAdd, j.sym(64), 2, 0, 1)
		require.NoError(t, err)
	}
	require.NoError(t, pe.Quiet(-1))
	assert.Equal(t, uint64(100), j.u64(1, 64))
	assert.Equal(t, uint64(49), j.u64(1, 8))
}

// Two PEs, each reaching the other only through its proxy: puts + device
// barrier_all (arrivals through the proxy) + a signal round trip.
func TestBarrierAndRoundTripOverProxy(t *testing.T) {
	j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 2, Contexts: 2, Slots: 32}, true)
	const rounds = 20
	ctrlOff := uintptr(cudatr.ControlBytes(testTeams))
	var wg sync.WaitGroup
	for me := 0; me < 2; me++ {
		wg.Add(1)
		go func(me int) {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			pe := j.pes[me]
			other := 1 - me
			base := func(off uintptr) uintptr { return j.addr(me, off) }
			for r := 1; r <= rounds; r++ {
				if err := pe.P64(base(ctrlOff+uintptr(8*me)), uint64(r), other); err != nil {
					t.Error(err)
					return
				}
				if err := pe.BarrierAll(); err != nil {
					t.Error(err)
					return
				}
				if got := j.u64(me, ctrlOff+uintptr(8*other)); got != uint64(r) {
					t.Errorf("PE %d round %d: saw %d from PE %d after the barrier", me, r, got, other)
				}
				// ping-pong on a signal
				sig := base(ctrlOff + 4096)
				if me == 0 {
					if err := pe.SignalOp(sig, uint64(r), false, other); err != nil {
						t.Error(err)
						return
					}
					if _, err := pe.WaitGE(base(ctrlOff+4104), uint64(r)); err != nil {
						t.Error(err)
						return
					}
				} else {
					if _, err := pe.WaitGE(sig, uint64(r)); err != nil {
						t.Error(err)
						return
					}
					if err := pe.SignalOp(base(ctrlOff+4104), uint64(r), false, other); err != nil {
						t.Error(err)
						return
					}
				}
			}
		}(me)
	}
	wg.Wait()
	for me := 0; me < 2; me++ {
		require.NoError(t, j.proxies[me].Err())
	}
}

// Compare-swap takes two slots (the operand in an extension slot): on a
// ring of 4 slots, shifted by single-slot p's, extension slots land on
// every index and lap; none may ever be taken for a descriptor.
func TestCompareSwapExtensionSlotsWrap(t *testing.T) {
	j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 1, Contexts: 2, Slots: 4, Batch: 2}, true)
	pe := j.pes[0]
	for k := uint64(0); k < 200; k++ {
		old, err := pe.AMO64(devhost.AMOCompareSwap, j.sym(0), k+1, k, 1)
		require.NoError(t, err)
		require.Equal(t, k, old, "compare-swap %d", k)
		if k%3 != 0 {
			require.NoError(t, pe.P64(j.sym(8), k, 1))
		}
	}
	require.NoError(t, pe.Quiet(-1))
	assert.Equal(t, uint64(200), j.u64(1, 0))
	assert.Equal(t, uint64(199), j.u64(1, 8))
	require.NoError(t, j.proxies[0].Err())
}

// The producer API (goshmemx_proxy_producer_*: head in registers) on a
// tuned ring of 8 slots: wraps it many times (its cached index refreshed
// from the ring's counter), leaves ring->head exact for quiet, and mixes
// with the context's ordinary calls between producers. On the default
// context and in baseline mode it falls back to the ordinary path.
// lastOf is the last of 0..n-1 that is i mod 8: the index of the value
// ProducerP64 (which posts to word k mod 8) leaves in word i.
func lastOf(n, i int) int { return n - 1 - (n-1-i)%8 }

func TestProducerAPI(t *testing.T) {
	for _, mode := range []string{"tuned", "baseline"} {
		t.Run(mode, func(t *testing.T) {
			j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 2, Contexts: 3, Slots: 8, Batch: 3, Mode: mode}, true)
			pe := j.pes[0]
			require.NoError(t, pe.ProducerP64(1, j.sym(0), 1000, 100, 1))
			require.NoError(t, pe.Quiet(1))
			for i := 0; i < 8; i++ {
				assert.Equal(t, uint64(1000+lastOf(100, i)), j.u64(1, uintptr(8*i)), "word %d's last value", i)
			}
			// an ordinary call on the context, then a new producer: both see the same head
			*(*uint64)(unsafe.Add(j.heaps[0], 8)) = 1092
			require.NoError(t, pe.CtxPutmemNBI(1, j.sym(64), j.sym(8), 8, 1))
			require.NoError(t, pe.ProducerP64(1, j.sym(128), 5000, 21, 1))
			require.NoError(t, pe.ProducerP64(0, j.sym(256), 7000, 9, 1)) // default context: falls back
			require.NoError(t, pe.Quiet(-1))
			assert.Equal(t, uint64(1092), j.u64(1, 64))
			assert.Equal(t, uint64(5020), j.u64(1, 128+8*4))
			assert.Equal(t, uint64(7008), j.u64(1, 256))
			// a PE reached by load/store: a plain store
			require.NoError(t, pe.ProducerP64(1, j.sym(512), 9, 1, 0))
			assert.Equal(t, uint64(9), j.u64(0, 512))
			require.NoError(t, pe.ProducerP64(1, j.sym(heapSize-8), 77, 1, 1)) // the heap's last word
			require.NoError(t, pe.Quiet(1))
			assert.Equal(t, uint64(77), j.u64(1, heapSize-8))
			require.NoError(t, j.proxies[0].Err())
		})
	}
}

// Drain returns only once every request posted before it is served (no
// quiet on the device side), also when a worker has more than one chain
// to go (batch 3) and on the default context's shared rings; a dead
// worker makes it fail instead of wait.
func TestDrain(t *testing.T) {
	j := newJob(t, 2, proxy.Config{Workers: 2, Rings: 2, Contexts: 3, Slots: 256, Batch: 3}, true)
	pe := j.pes[0]
	for round := 0; round < 20; round++ {
		base := uint64(1000 * (round + 1))
		require.NoError(t, pe.ProducerP64(1, j.sym(0), base, 200, 1))     // reserved ring, no quiet
		require.NoError(t, pe.ProducerP64(0, j.sym(256), base+1, 100, 1)) // the default context
		require.NoError(t, j.proxies[0].Drain(10*time.Second))
		for i := 0; i < 8; i++ {
			require.Equal(t, base+uint64(lastOf(200, i)), j.u64(1, uintptr(8*i)), "round %d: reserved ring, word %d", round, i)
			require.Equal(t, base+1+uint64(lastOf(100, i)), j.u64(1, uintptr(256+8*i)), "round %d: default context, word %d", round, i)
		}
	}
	require.NoError(t, j.proxies[0].Drain(time.Second)) // nothing posted: answers at once
	j.proxies[0].KillWorker(0)
	require.NoError(t, pe.ProducerP64(1, j.sym(0), 1, 50, 1))
	err := j.proxies[0].Drain(5 * time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "stopped")
}

// Bad arguments to a tuned producer leave its one-test fast path and trap
// in the general one with the error that names them; nothing is posted.
// (The first error of a PE is the one kept: a job per case.)
func TestProducerBadArgs(t *testing.T) {
	for _, bad := range []struct {
		name string
		off  int64 // of the target from the heap's start
		pe   int
		code uint64
	}{
		{"pe = n_pes", 0, 2, 2 /* GOSHMEMI_ERR_PE_OUT_OF_RANGE */},
		{"pe < 0", 0, -1, 2},
		{"below the heap", -8, 1, 3 /* GOSHMEMI_ERR_NOT_SYMMETRIC */},
		{"last word past the heap", heapSize - 4, 1, 3},
		{"past the heap", heapSize, 1, 3},
	} {
		t.Run(bad.name, func(t *testing.T) {
			j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 2, Contexts: 3, Slots: 8}, true)
			err := j.pes[0].ProducerP64(1, uintptr(int64(j.sym(0))+bad.off), 1, 1, bad.pe)
			assert.Equal(t, bad.code, trapCode(t, err))
			assert.Never(t, func() bool { return !strings.Contains(j.proxies[0].Stats(), "worker 0: 0 requests") },
				50*time.Millisecond, 5*time.Millisecond, "the worker saw a request")
		})
	}
}

// A context the host did not configure traps before anything is posted:
// ctx >= nctx names ring ctx-1 (another context's or none), negative and
// huge ones are clamped into the ring array first.
func TestBadContextTraps(t *testing.T) {
	j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 2, Contexts: 3, Slots: 8}, true)
	pe := j.pes[0]
	for _, ctx := range []int{3, 4, 5, 63, 64, 1000, -1} {
		err := pe.CtxPutmemNBI(ctx, j.sym(0), j.sym(8), 8, 1)
		assert.Equal(t, uint64(devhost.ErrInvalidArg), trapCode(t, err), "ctx %d", ctx)
	}
	require.NoError(t, pe.CtxPutmemNBI(2, j.sym(0), j.sym(8), 8, 1))
	require.NoError(t, pe.Quiet(-1))
	require.NoError(t, j.proxies[0].Err())
}

// Placement rule the device relies on (proxy.h): ring c-1 is context c's,
// the default context's rings follow. Workers: with T >= 2 the last one
// serves only the reserved rings of contexts >= 1, the default context's
// j-th ring is on worker j mod (T-1); with T = 1 every ring is on worker 0.
func TestRingPlacement(t *testing.T) {
	j := newJob(t, 1, proxy.Config{Workers: 3, Rings: 4, Contexts: 5, Slots: 8}, false)
	p := j.proxies[0]
	require.Equal(t, 8, p.NumRings())
	for i := 0; i < 8; i++ {
		ctx, w := p.RingOf(i)
		if i < 4 {
			assert.Equal(t, i+1, ctx, "ring %d", i)
			assert.Equal(t, 2, w, "ring %d: reserved rings on the last worker", i)
		} else {
			assert.Equal(t, 0, ctx, "ring %d", i)
			assert.Equal(t, (i-4)%2, w, "ring %d: default rings on workers 0..T-2", i)
		}
	}
	assert.Equal(t, []int{4, 5, 6, 7}, p.RingsOf(0))
	assert.Equal(t, []int{1}, p.RingsOf(2))

	one := newJob(t, 1, proxy.Config{Workers: 1, Rings: 2, Contexts: 3, Slots: 8}, false).proxies[0]
	for i := 0; i < one.NumRings(); i++ {
		_, w := one.RingOf(i)
		assert.Equal(t, 0, w, "ring %d with one worker", i)
	}
}

// Registered buffers (Proxy.Register): memory outside the heap that the
// device finds in the table. A put from it and a get into it go by
// reference (PUT/GET naming the slot, served in place: no inline chunks,
// no reply slots), blocking and nbi, as does put_signal's payload; a
// removed buffer is no longer found (its puts go inline again), and its
// slot is reused. Bad registrations and a request naming a free slot are
// refused.
func TestRegisteredBuffers(t *testing.T) {
	j := newJob(t, 2, proxy.Config{Workers: 2, Rings: 2, Contexts: 4, Slots: 64, Batch: 4}, true)
	pe0, px := j.pes[0], j.proxies[0]
	buf, err := j.mem.Pinned(1 << 20) // mmap'd: host memory outside both heaps
	require.NoError(t, err)
	b := unsafe.Slice((*byte)(buf.Host), 1<<20)
	for i := range b {
		b[i] = byte(i*13 + 1)
	}
	base := uint64(uintptr(buf.Host))
	slot, err := px.Register(base+4096, 512<<10)
	require.NoError(t, err)
	assert.Equal(t, 1, px.Registered())

	before := px.Ops()
	const n = 300000
	require.NoError(t, pe0.Putmem(j.sym(100000), uintptr(buf.Host)+4096+8, n, 1, false))
	assert.Equal(t, b[4096+8:4096+8+n], j.bytes(1, 100000, n), "blocking put from a registered buffer")
	require.NoError(t, pe0.Putmem(j.sym(500000), uintptr(buf.Host)+4096, 24, 1, true))
	require.NoError(t, pe0.Quiet(-1))
	assert.Equal(t, b[4096:4096+24], j.bytes(1, 500000, 24), "nbi put")

	pb := j.bytes(1, 600000, 5000)
	for i := range pb {
		pb[i] = byte(i ^ 0x33)
	}
	require.NoError(t, pe0.Getmem(uintptr(buf.Host)+4096+100, j.sym(600000), 5000, 1, false))
	assert.Equal(t, pb, b[4096+100:4096+100+5000], "blocking get into a registered buffer")
	require.NoError(t, pe0.Getmem(uintptr(buf.Host)+4096+8000, j.sym(600000), 40, 1, true))
	require.NoError(t, pe0.Quiet(-1))
	assert.Equal(t, pb[:40], b[4096+8000:4096+8040], "nbi get")

	require.NoError(t, pe0.PutSignal(j.sym(700000), uintptr(buf.Host)+4096+16, 4000, j.sym(800000), 3, false, 1, false))
	assert.Equal(t, b[4096+16:4096+16+4000], j.bytes(1, 700000, 4000))
	assert.Equal(t, uint64(3), j.u64(1, 800000), "the signal after the payload")
	got := px.Ops()
	assert.Equal(t, before.PutInline, got.PutInline, "no inline chunks for registered sources")
	assert.Equal(t, before.GetReply, got.GetReply, "no reply slots for registered destinations")
	assert.Equal(t, before.PutReg+3, got.PutReg, "puts served from the registered buffer (300000 bytes: one chunk)")
	assert.Equal(t, before.GetReg+2, got.GetReg)
	assert.Equal(t, before.Put, got.Put, "nothing went through the heap")

	// outside the registered range (a byte before it): inline, as before
	require.NoError(t, pe0.Putmem(j.sym(900000), uintptr(buf.Host)+4095, 16, 1, false))
	require.NoError(t, pe0.Quiet(-1)) // inline chunks: the source is reusable before they are served
	assert.Equal(t, b[4095:4095+16], j.bytes(1, 900000, 16))
	assert.Equal(t, got.PutInline+2, px.Ops().PutInline, "an unregistered source goes in 8-byte chunks")

	// removed: the device no longer finds it
	require.NoError(t, px.Unregister(slot))
	assert.Zero(t, px.Registered())
	assert.ErrorIs(t, px.Unregister(slot), errs.ErrInvalidArgument, "a free slot")
	in := px.Ops().PutInline
	require.NoError(t, pe0.Putmem(j.sym(950000), uintptr(buf.Host)+4096, 16, 1, false))
	require.NoError(t, pe0.Quiet(-1))
	assert.Equal(t, in+2, px.Ops().PutInline)
	again, err := px.Register(base+(768<<10), 4096)
	require.NoError(t, err)
	assert.Equal(t, slot, again, "the free slot is reused")
	require.NoError(t, px.Unregister(again))

	for name, size := range map[string]uint64{"empty": 0, "past 1 TiB": 1 << 40} {
		_, err := px.Register(base, size)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument, name)
	}
	// a request naming a free slot is rejected, naming it
	_, err = pe0.PostRaw(3, proxy.Encode(proxy.OpPut, 1, 5, 0), proxy.Span(0, 64))
	require.NoError(t, err)
	assert.Equal(t, uint64(devhost.ErrProxyRejected), trapCode(t, pe0.Quiet(3)))
	assert.Contains(t, px.Err().Error(), "registered-buffer slot 4 is free")
}

// A full table is refused with ErrNotSupported; removing one makes room.
func TestRegisteredTableFull(t *testing.T) {
	j := newJob(t, 1, proxy.Config{Workers: 1, Rings: 1, Contexts: 1, Slots: 16, Batch: 4}, false)
	px := j.proxies[0]
	for i := 0; i < proxy.MaxRegs; i++ {
		s, err := px.Register(uint64(i+1)<<20, 4096)
		require.NoError(t, err)
		require.Equal(t, i, s)
	}
	_, err := px.Register(1<<40, 4096)
	assert.ErrorIs(t, err, errs.ErrNotSupported)
	require.NoError(t, px.Unregister(7))
	s, err := px.Register(1<<40, 4096)
	require.NoError(t, err)
	assert.Equal(t, 7, s)
}

// SetHeapSize (the heap grew on every PE): requests past the old size are
// rejected before and served after; sizes past what a descriptor
// addresses are refused.
func TestSetHeapSize(t *testing.T) {
	j := newJob(t, 2, proxy.Config{Workers: 1, Rings: 1, Contexts: 4, Slots: 16, Batch: 4, HeapSize: 1 << 20}, true)
	pe0, px := j.pes[0], j.proxies[0]
	assert.Equal(t, uint64(1<<20), px.HeapSize())
	require.NoError(t, pe0.P64(j.sym(0), 1, 1)) // the device state says 4 MiB; the worker judges
	_, err := pe0.PostRaw(3, proxy.Encode(proxy.OpPutInline, 1, 8, 2<<20), 7)
	require.NoError(t, err)
	assert.Equal(t, uint64(devhost.ErrProxyRejected), trapCode(t, pe0.Quiet(3)), "past the heap before it grew")
	require.NoError(t, px.SetHeapSize(heapSize))
	assert.Equal(t, uint64(heapSize), px.HeapSize())
	require.NoError(t, pe0.P64(j.sym(2<<20), 0x77, 1))
	require.NoError(t, pe0.Quiet(0))
	assert.Equal(t, uint64(0x77), j.u64(1, 2<<20), "served once the heap grew")
	require.NoError(t, px.SetHeapSize(1<<20), "never shrinks")
	assert.Equal(t, uint64(heapSize), px.HeapSize())
	assert.ErrorIs(t, px.SetHeapSize(1<<40), errs.ErrNotSupported)
}
