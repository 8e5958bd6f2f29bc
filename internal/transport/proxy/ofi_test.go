package proxy_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/bootstrap/local"
	"github.com/goshmem/goshmem/internal/cgo/devhost"
	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/transport"
	"github.com/goshmem/goshmem/internal/transport/ofi"
	"github.com/goshmem/goshmem/internal/transport/proxy"
	"github.com/goshmem/goshmem/internal/transport/shm"
)

// areaOff is where the ofi backend's area starts in each PE's registered
// region (not 0, as in the runtime, where it is a heap allocation).
const areaOff = 8192

// ofiJob is a host-mode job (newJob) whose proxies reach the other PE
// through the ofi backend: a real ofi transport (tcp;ofi_rxm) per PE on a
// registered region of its own, requests applied by the target's server
// to its "GPU heap" (host memory). heap, when set, wraps the server's heap
// of each PE.
type ofiJob struct {
	*job
	trs   []*ofi.Transport
	links []*proxy.OFILink
}

func newOFIJob(t *testing.T, cfg proxy.Config, ly proxy.OFILayout, linkTimeout time.Duration,
	heap func(pe int, h proxy.Heap) proxy.Heap) *ofiJob {
	t.Helper()
	const npes = 2
	j := &ofiJob{job: newJob(t, npes, cfg, false)}
	ly.NPEs, ly.Lanes = npes, max(cfg.Workers, 1)
	boots, err := local.NewJob(npes)
	require.NoError(t, err)
	regions := make([][]byte, npes)
	for pe := range regions {
		regions[pe], err = unix.Mmap(-1, 0, int(areaOff+ly.Size()), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANONYMOUS)
		require.NoError(t, err)
	}
	j.trs = make([]*ofi.Transport, npes)
	newErrs := make([]error, npes)
	var wg sync.WaitGroup
	for pe := 0; pe < npes; pe++ {
		wg.Add(1)
		go func(pe int) {
			defer wg.Done()
			j.trs[pe], newErrs[pe] = ofi.New(ofi.Config{Provider: "tcp;ofi_rxm", Me: pe, NPEs: npes, OneNode: true,
				Region: unsafe.Pointer(&regions[pe][0]), RegionLen: uint64(len(regions[pe])),
				Local: make([]unsafe.Pointer, npes), Allgather: boots[pe].Allgather, Timeout: 20 * time.Second})
		}(pe)
	}
	wg.Wait()
	t.Cleanup(func() {
		for _, p := range j.proxies {
			_ = p.Close() // their workers and servers use the transports
		}
		for pe, tr := range j.trs {
			if tr != nil {
				assert.NoError(t, tr.Close())
			}
			_ = unix.Munmap(regions[pe])
		}
	})
	for pe, err := range newErrs {
		require.NoError(t, err, "PE %d", pe)
	}
	for pe := 0; pe < npes; pe++ {
		l, err := proxy.NewOFILink(proxy.OFIConfig{Me: pe, Tr: j.trs[pe], Area: unsafe.Pointer(&regions[pe][areaOff]),
			Off: areaOff, Layout: ly, Timeout: linkTimeout})
		require.NoError(t, err)
		j.links = append(j.links, l)
		var h proxy.Heap = &proxy.HostHeap{Base: j.heaps[pe], N: heapSize}
		if heap != nil {
			h = heap(pe, h)
		}
		l.Serve(h, j.proxies[pe].Fail, nil)
		j.proxies[pe].OnClose(l.Close)
	}
	sh := shm.New(j.heaps)
	for pe := 0; pe < npes; pe++ {
		require.NoError(t, j.proxies[pe].Start(func(w int) (proxy.Backend, error) {
			near := &proxy.HostBackend{Tr: sh, Local: j.heaps[pe], Q: quiet.NewQueue("near", nil)}
			return j.links[pe].Backend(w, &proxy.HostHeap{Base: j.heaps[pe], N: heapSize}, near, nil)
		}))
	}
	return j
}

var smallLayout = proxy.OFILayout{Slots: 8, Payload: 1024}

// Every device request (inline, small and multi-slot puts, gets into the
// heap and into reply slots, every atomic, signals, a private context)
// through the ofi backend: the target's proxy applies them.
func TestOFIBackendEndToEnd(t *testing.T) {
	j := newOFIJob(t, proxy.Config{Workers: 2, Rings: 2, Contexts: 4, Slots: 64, Batch: 4}, smallLayout, 0, nil)
	endToEnd(t, j.job)
	assert.Greater(t, j.links[1].Served(), uint64(100), "PE 1's server applied PE 0's requests")
	assert.Equal(t, uint64(0), j.links[0].Served())
	// a put of more slots than the lane has: credits recycle
	src := j.bytes(0, 4096, 20*smallLayout.Payload+5)
	for i := range src {
		src[i] = byte(i*13 + 1)
	}
	require.NoError(t, j.pes[0].Putmem(j.sym(900000), j.sym(4096), len(src), 1, true))
	require.NoError(t, j.pes[0].Quiet(0))
	assert.Equal(t, src, j.bytes(1, 900000, len(src)))
	require.NoError(t, j.proxies[0].Err())
}

// slowHeap delays the target's Stores: a quiet that returned before the
// target applied the puts would see old data.
type slowHeap struct {
	proxy.Heap
	d time.Duration
}

func (h *slowHeap) Store(off uint64, src unsafe.Pointer, n int) error {
	time.Sleep(h.d)
	return h.Heap.Store(off, src, n)
}

func TestOFIBackendQuietWaitsForTheTarget(t *testing.T) {
	j := newOFIJob(t, proxy.Config{Workers: 1, Rings: 1, Contexts: 2, Slots: 16}, smallLayout, 0,
		func(_ int, h proxy.Heap) proxy.Heap { return &slowHeap{Heap: h, d: 30 * time.Millisecond} })
	pe := j.pes[0]
	for k := 0; k < 3; k++ {
		require.NoError(t, pe.P64(j.sym(uintptr(8*k)), uint64(100+k), 1))
		require.NoError(t, pe.Quiet(-1))
		assert.Equal(t, uint64(100+k), j.u64(1, uintptr(8*k)), "visible at the target when quiet returns")
	}
	// a blocking put is complete on return; the signal lands after the data
	src := j.bytes(0, 4096, 3000)
	for i := range src {
		src[i] = byte(i)
	}
	require.NoError(t, pe.Putmem(j.sym(50000), j.sym(4096), len(src), 1, false))
	assert.Equal(t, src, j.bytes(1, 50000, len(src)))
	require.NoError(t, pe.PutSignal(j.sym(60000), j.sym(4096), 2000, j.sym(70000), 7, false, 1, true))
	require.NoError(t, pe.Quiet(-1))
	assert.Equal(t, uint64(7), j.u64(1, 70000))
	assert.Equal(t, src[:2000], j.bytes(1, 60000, 2000))
}

// gateHeap holds the target's Stores until open is closed, counting them.
type gateHeap struct {
	proxy.Heap
	open   chan struct{}
	stores atomic.Int64
}

func (h *gateHeap) Store(off uint64, src unsafe.Pointer, n int) error {
	<-h.open
	h.stores.Add(1)
	return h.Heap.Store(off, src, n)
}

// A lane of 2 slots and a target that does not consume: the origin waits
// for credits (the server fails on more outstanding requests than slots,
// and an overwritten slot would corrupt the data), then everything lands.
func TestOFIBackendBackPressure(t *testing.T) {
	gates := make([]*gateHeap, 2)
	j := newOFIJob(t, proxy.Config{Workers: 1, Rings: 1, Contexts: 2, Slots: 16}, proxy.OFILayout{Slots: 2, Payload: 64}, 0,
		func(pe int, h proxy.Heap) proxy.Heap {
			gates[pe] = &gateHeap{Heap: h, open: make(chan struct{})}
			return gates[pe]
		})
	src := j.bytes(0, 4096, 64*10+3) // 11 slots
	for i := range src {
		src[i] = byte(i*3 + 7)
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		done <- j.pes[0].Putmem(j.sym(20000), j.sym(4096), len(src), 1, false)
	}()
	select {
	case err := <-done:
		t.Fatalf("the put completed while the target applied nothing (err %v)", err)
	case <-time.After(150 * time.Millisecond):
	}
	assert.LessOrEqual(t, j.links[1].Served(), uint64(1), "at most the first request is being applied")
	close(gates[1].open)
	select {
	case err := <-done:
		require.NoError(t, err)
	case <-time.After(20 * time.Second):
		t.Fatal("the put never completed after the target resumed")
	}
	assert.Equal(t, src, j.bytes(1, 20000, len(src)))
	assert.Equal(t, int64(11), gates[1].stores.Load())
	require.NoError(t, j.proxies[0].Err())
	require.NoError(t, j.proxies[1].Err(), "the server never saw more outstanding requests than slots")
}

// smallHeap makes the target's heap smaller than the origin believes: the
// origin's checks pass, the target rejects, and the origin reports it at
// the next quiet of that context; other contexts go on.
type smallHeap struct{ proxy.Heap }

func (h *smallHeap) Size() uint64 { return heapSize / 2 }

func TestOFIBackendRejectedAtTarget(t *testing.T) {
	j := newOFIJob(t, proxy.Config{Workers: 1, Rings: 1, Contexts: 4, Slots: 16}, smallLayout, 0,
		func(_ int, h proxy.Heap) proxy.Heap { return &smallHeap{h} })
	pe := j.pes[0]
	bad := uintptr(heapSize/2 + 64)
	require.NoError(t, pe.CtxPutmemNBI(1, j.sym(bad), j.sym(4096), 16, 1))
	err := pe.Quiet(1)
	assert.Equal(t, uint64(devhost.ErrProxyRejected), trapCode(t, err))
	require.Error(t, j.proxies[0].Err())
	msg := j.proxies[0].Err().Error()
	assert.Contains(t, msg, "rejected by PE 1's proxy")
	assert.Contains(t, msg, fmt.Sprintf("outside PE 1's heap (%d bytes)", heapSize/2))
	assert.Contains(t, msg, "context 1")

	// a fetching atomic beyond the target's heap: the reply carries the error
	_, err = pe.AMO64(devhost.AMOFetchAdd, j.sym(bad), 1, 0, 1)
	assert.Equal(t, uint64(devhost.ErrProxyRejected), trapCode(t, err))

	// a context that saw no rejection still works
	require.NoError(t, pe.CtxPutmemNBI(2, j.sym(64), j.sym(4096), 8, 1))
	require.NoError(t, pe.Quiet(2))
	assert.Equal(t, j.bytes(0, 4096, 8), j.bytes(1, 64, 8))
}

// A target whose proxy stopped: the origin's worker fails within the
// link's timeout naming that PE, and device waits trap instead of hanging.
func TestOFIBackendTargetStops(t *testing.T) {
	j := newOFIJob(t, proxy.Config{Workers: 1, Rings: 1, Contexts: 2, Slots: 16, Timeout: 10 * time.Second},
		smallLayout, 300*time.Millisecond, nil)
	pe := j.pes[0]
	require.NoError(t, pe.P64(j.sym(0), 1, 1))
	require.NoError(t, pe.Quiet(-1))
	require.NoError(t, j.links[1].Close())
	require.NoError(t, pe.P64(j.sym(8), 2, 1))
	err := pe.Quiet(-1)
	assert.Equal(t, uint64(devhost.ErrProxyDead), trapCode(t, err))
	require.Error(t, j.proxies[0].Err())
	assert.Contains(t, j.proxies[0].Err().Error(), "PE 1's proxy did not apply requests")
	assert.True(t, strings.Contains(j.proxies[0].Err().Error(), "PE 0"), j.proxies[0].Err().Error())
}

// The host heap's atomics (what the target applies in host mode).
func TestHostHeapAtomics(t *testing.T) {
	var w [2]uint64
	h := &proxy.HostHeap{Base: unsafe.Pointer(&w[0]), N: 16}
	for _, tc := range []struct {
		op        transport.AMO
		v, cmp    uint64
		old, want uint64
	}{
		{transport.AMOSet, 5, 0, 0, 5},
		{transport.AMOAdd, 3, 0, 5, 8},
		{transport.AMOCompareSwap, 1, 7, 8, 8},
		{transport.AMOCompareSwap, 1, 8, 8, 1},
		{transport.AMOOr, 6, 0, 1, 7},
		{transport.AMOAnd, 3, 0, 7, 3},
		{transport.AMOXor, 1, 0, 3, 2},
		{transport.AMOSwap, 9, 0, 2, 9},
		{transport.AMOFetch, 0, 0, 9, 9},
	} {
		old, err := h.AtomicAt(8, tc.op, 8, tc.v, tc.cmp)
		require.NoError(t, err)
		assert.Equal(t, tc.old, old, "%v", tc.op)
		assert.Equal(t, tc.want, w[1], "%v", tc.op)
	}
	old, err := h.AtomicAt(4, transport.AMOAdd, 4, 0xffffffff, 0)
	require.NoError(t, err)
	assert.Equal(t, uint64(0), old)
	assert.Equal(t, uint64(0xffffffff00000000), w[0])
	_, err = h.AtomicAt(0, transport.AMOAdd, 2, 1, 0)
	require.Error(t, err)
}

// The runtime's layout: within goshmem-perf's 16 MiB heap for 2 PEs with
// up to 4 workers; offsets of different lanes never overlap.
func TestOFILayoutSize(t *testing.T) {
	ly := proxy.DefaultOFILayout(2, 4)
	require.NoError(t, ly.Validate())
	assert.Equal(t, uint64(8*(64+32*(32+8192))+8*(64+32*8192)), ly.Size())
	assert.Less(t, ly.Size(), uint64(8<<20))
	require.Error(t, proxy.OFILayout{NPEs: 2, Lanes: 1, Slots: 8, Payload: 100}.Validate(), "payload not a multiple of 64")
	require.Error(t, proxy.OFILayout{NPEs: 2, Lanes: 1, Slots: 1, Payload: 64}.Validate(), "one slot")
}

// A registered buffer through the ofi backend: the origin stages a put
// from it (LoadAddr) over several slots, and stores a get's replies into
// it (StoreAddr), in place of the heap.
func TestOFIBackendRegisteredBuffer(t *testing.T) {
	j := newOFIJob(t, proxy.Config{Workers: 1, Rings: 1, Contexts: 2, Slots: 16}, smallLayout, 0, nil)
	pe0, px := j.pes[0], j.proxies[0]
	buf, err := j.mem.Pinned(64 << 10)
	require.NoError(t, err)
	b := unsafe.Slice((*byte)(buf.Host), 64<<10)
	for i := range b {
		b[i] = byte(i*5 + 2)
	}
	slot, err := px.Register(uint64(uintptr(buf.Host)), 64<<10)
	require.NoError(t, err)
	n := 20*smallLayout.Payload + 5
	require.NoError(t, pe0.Putmem(j.sym(100000), uintptr(buf.Host)+3, n, 1, false))
	assert.Equal(t, b[3:3+n], j.bytes(1, 100000, n))
	src := j.bytes(1, 200000, 5000)
	for i := range src {
		src[i] = byte(i ^ 0x6c)
	}
	require.NoError(t, pe0.Getmem(uintptr(buf.Host)+40000, j.sym(200000), 5000, 1, false))
	assert.Equal(t, src, b[40000:45000])
	ops := px.Ops()
	assert.Equal(t, proxy.OpCounts{PutReg: 1, GetReg: 1}, ops, "by reference: no inline chunks, no reply slots")
	require.NoError(t, px.Unregister(slot))
	require.NoError(t, px.Err())
}
