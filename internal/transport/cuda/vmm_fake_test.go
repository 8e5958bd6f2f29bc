package cudatr

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// The growing heap (vmm.go, ahead.go) on the fake CUDA driver, PEs as
// goroutines of this process over an in-memory exchange, so that a test
// can tamper with what one PE receives (a peer's descriptor it cannot
// take) and look at the transports' state. Every test closes its PEs and
// checks that the fake holds no live object.

func TestMain(m *testing.M) {
	removeFake := testutil.ShareFakeCUDA()
	code := m.Run()
	removeFake()
	os.Exit(code)
}

// exchangeWait bounds one exchange of fakeNet: a PE that does not come
// (PEs that disagree on the exchanges to make) fails the exchange.
const exchangeWait = 5 * time.Second

// fakeNet is an allgather among n PEs: each PE's k-th exchange meets the
// others' k-th, and records of different lengths are an error (as the
// runtime's exchanges refuse them).
type fakeNet struct {
	mu     sync.Mutex
	n      int
	seq    []int
	rounds map[int]*fakeRound
	// tamper, when set, rewrites the records PE pe receives from its k-th
	// exchange
	tamper func(pe, k int, all [][]byte)
}

type fakeRound struct {
	recs [][]byte
	got  int
	done chan struct{}
}

func newFakeNet(n int) *fakeNet {
	return &fakeNet{n: n, seq: make([]int, n), rounds: map[int]*fakeRound{}}
}

// exchange is PE pe's exchange function (Grow's).
func (g *fakeNet) exchange(pe int) func([]byte) ([][]byte, error) {
	return func(rec []byte) ([][]byte, error) {
		g.mu.Lock()
		k := g.seq[pe]
		g.seq[pe]++
		r := g.rounds[k]
		if r == nil {
			r = &fakeRound{recs: make([][]byte, g.n), done: make(chan struct{})}
			g.rounds[k] = r
		}
		r.recs[pe] = bytes.Clone(rec)
		if r.got++; r.got == g.n {
			close(r.done)
		}
		g.mu.Unlock()
		select {
		case <-r.done:
		case <-time.After(exchangeWait):
			return nil, fmt.Errorf("PE %d: exchange #%d: not every PE came within %v", pe, k, exchangeWait)
		}
		all := make([][]byte, g.n)
		for i, b := range r.recs {
			if len(b) != len(rec) {
				return nil, fmt.Errorf("PE %d: exchange #%d: PE %d sent %d bytes, this PE %d", pe, k, i, len(b), len(rec))
			}
			all[i] = bytes.Clone(b)
		}
		if g.tamper != nil {
			g.tamper(pe, k, all)
		}
		return all, nil
	}
}

// fakeVMMJob opens n PEs of one node on the fake driver (its two devices)
// with heapSize mapped, heapMax reserved and growth step step, and closes
// them and checks the fake's live objects when the test ends.
func fakeVMMJob(t *testing.T, n int, heapSize, heapMax, step uint64) ([]*Transport, *fakeNet) {
	t.Helper()
	lib := testutil.FakeCUDA(t)
	leaks := filepath.Join(t.TempDir(), "live")
	t.Setenv("FAKECUDA_LEAKS", leaks)
	ts := make([]*Transport, n)
	recs := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for pe := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			goruntime.LockOSThread()
			defer goruntime.UnlockOSThread()
			ts[pe], recs[pe], errs[pe] = Setup(pe, n, Choice{Ordinal: pe % 2, Source: "test"}, heapSize, heapMax, 2, lib)
			if errs[pe] == nil {
				errs[pe] = ts[pe].RestoreCaller()
			}
		}()
	}
	wg.Wait()
	t.Cleanup(func() {
		for pe, tr := range ts {
			if tr != nil {
				assert.NoError(t, tr.Close(), "PE %d: Close", pe)
			}
		}
		if live, ok := testutil.FakeCUDALive(t, leaks, os.Getpid()); ok {
			for k, v := range live {
				assert.Zero(t, v, "the fake driver still holds %d %s after every PE closed", v, k)
			}
		}
	})
	for pe, err := range errs {
		require.NoError(t, err, "PE %d: Setup", pe)
	}
	nodes := make([]int, n)
	// at once, as the PEs' processes do: each PE's Connect waits for its
	// peers' first chunks, which their Connect sends
	for pe, err := range onEvery(ts, func(_ int, tr *Transport) error { return tr.Connect(recs, nodes) }) {
		require.NoError(t, err, "PE %d: Connect", pe)
	}
	for _, tr := range ts {
		tr.SetGrowStep(step)
		tr.SetBurst(false)
	}
	return ts, newFakeNet(n)
}

// onEvery runs f on every PE at once and returns each PE's error.
func onEvery(ts []*Transport, f func(pe int, t *Transport) error) []error {
	out := make([]error, len(ts))
	var wg sync.WaitGroup
	for pe, tr := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[pe] = f(pe, tr)
		}()
	}
	wg.Wait()
	return out
}

// A growth by need whose new chunk one PE cannot map from a peer (its
// descriptor did not arrive, as where the PEs' sockets cannot reach each
// other) fails on every PE and changes no PE's usable size; the same
// growth then succeeds, and the peer's chunk is mapped in the view.
func TestVMMGrowPeerMapFails(t *testing.T) {
	ts, net := fakeVMMJob(t, 2, 4<<20, 64<<20, 2<<20)
	size := ts[0].Size()
	need := size + 8
	net.tamper = func(pe, k int, all [][]byte) {
		if pe == 1 && k == 0 {
			binary.LittleEndian.PutUint64(all[0][16:], 1<<20) // a message PE 0 never sent
		}
	}
	errs := onEvery(ts, func(pe int, tr *Transport) error { return tr.Grow(need, 0, net.exchange(pe)) })
	for pe, tr := range ts {
		assert.Error(t, errs[pe], "PE %d: Grow(%d) with PE 1 unable to map PE 0's chunk", pe, need)
		assert.Equal(t, size, tr.Size(), "PE %d: usable size after the failed growth", pe)
	}
	net.tamper = nil
	errs = onEvery(ts, func(pe int, tr *Transport) error { return tr.Grow(need, 0, net.exchange(pe)) })
	for pe, tr := range ts {
		require.NoError(t, errs[pe], "PE %d: Grow(%d) again", pe, need)
		assert.Equal(t, size+2<<20, tr.Size(), "PE %d", pe)
	}
	// PE 1 writes the last word of PE 0's new chunk through its view
	require.NoError(t, ts[1].Put(nil, 0, size+2<<20-8, []byte{1, 2, 3, 4, 5, 6, 7, 8}))
	b := make([]byte, 8)
	require.NoError(t, ts[0].Get(nil, b, 0, size+2<<20-8))
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, b)
}

// Growths that adopt prepared chunks on 3 PEs, then Close with a
// preparation in flight on PE 0 only (its peers never prepare that
// generation): Close stops it and nothing leaks (run with -race).
func TestVMMAheadCloseInFlight(t *testing.T) {
	ts, net := fakeVMMJob(t, 3, 4<<20, 64<<20, 4<<20)
	for range 3 {
		errs := onEvery(ts, func(pe int, tr *Transport) error {
			size := tr.Size()
			if err := tr.Grow(size-1, 0, net.exchange(pe)); err != nil {
				return err
			}
			return tr.Grow(size+8, 0, net.exchange(pe))
		})
		for pe, err := range errs {
			require.NoError(t, err, "PE %d", pe)
		}
	}
	for pe, tr := range ts {
		gr, ad := tr.Growths()
		assert.Equal(t, []uint64{3, 3}, []uint64{gr, ad}, "PE %d: growths, adopted", pe)
	}
	require.NoError(t, ts[0].Grow(ts[0].Size()-1, 0, net.exchange(0)))
	require.NotNil(t, ts[0].vmm.next)
	time.Sleep(50 * time.Millisecond)
	start := time.Now()
	require.NoError(t, ts[0].Close())
	assert.Less(t, time.Since(start), 5*time.Second)
}
