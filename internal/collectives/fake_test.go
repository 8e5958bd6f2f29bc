package collectives

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/bootstrap/local"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/spin"
)

// The fake runtime: N PEs of one process, each with its own symmetric
// region (a Go-heap []uint64 viewed as bytes, so the race detector sees
// every access; symmetric memory of the real runtime is mmap'd instead).
// Put and Get are plain copies between regions, Signal is an atomic 64-bit
// store, WaitGE polls with atomic loads. The only happens-before edges
// between PEs are those Signal/WaitGE create, so a collective that reads or
// writes a peer's memory without the right synchronization is flagged by
// go test -race.

const (
	// dataOff is the first byte of the test data; the team slots follow
	// the data, as the runtime's follow its user heap.
	dataOff  = 4096
	dataSize = 1 << 20
	srcOff   = dataOff
	dstOff   = dataOff + dataSize/2
	// large is a contribution past the team scratch (the large paths).
	large = TeamScratchSize + 8
	// testTeams is a fake world's slot count unless a test asks for another.
	testTeams = 64
)

// testLayout is a fake world's layout of teams slots.
func testLayout(teams int) Layout { return Layout{Base: dataOff + dataSize, MaxTeams: teams} }

// freeSlots lists the slots no team of world's PE holds.
func freeSlots(world *Team) []int {
	s := world.slots
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int
	for sl := 0; sl < s.n; sl++ {
		if w, b := bit(sl); s.free[w]&b != 0 {
			out = append(out, sl)
		}
	}
	return out
}

// slotRange is the slots [lo, hi).
func slotRange(lo, hi int) []int {
	out := make([]int, 0, hi-lo)
	for sl := lo; sl < hi; sl++ {
		out = append(out, sl)
	}
	return out
}

type fakeWorld struct {
	n       int
	ly      Layout // the team slots, after the data
	regions [][]byte
	policy  spin.Policy
	// direct makes fakeComm a Direct (Sync's load/store path); reach,
	// when set, says which peers Word returns (default: all).
	direct bool
	reach  func(from, to int) bool
	waits  atomic.Int64 // WaitGE calls, all PEs
}

func newFakeWorld(n int, policy spin.Policy) *fakeWorld {
	return newFakeWorldTeams(n, policy, testTeams)
}

// newFakeWorldTeams is newFakeWorld with teams slots.
func newFakeWorldTeams(n int, policy spin.Policy, teams int) *fakeWorld {
	w := &fakeWorld{n: n, ly: testLayout(teams), regions: make([][]byte, n), policy: policy}
	for pe := range w.regions {
		words := make([]uint64, (w.ly.Base+w.ly.Size())/8)
		w.regions[pe] = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	}
	return w
}

// fakeComm is one PE's Comm.
type fakeComm struct {
	w       *fakeWorld
	me      int
	quiets  atomic.Int64
	failPut error        // when set, Put returns it
	failGet error        // when set, Get returns it
	policy  *spin.Policy // when set, WaitGE's instead of the world's
}

var _ Comm = (*fakeComm)(nil)

func (c *fakeComm) MyPE() int { return c.me }
func (c *fakeComm) NPEs() int { return c.w.n }

func (c *fakeComm) Put(pe int, off uint64, src []byte) error {
	if c.failPut != nil {
		return c.failPut
	}
	copy(c.w.regions[pe][off:off+uint64(len(src))], src)
	return nil
}

func (c *fakeComm) Get(dst []byte, pe int, off uint64) error {
	if c.failGet != nil {
		return c.failGet
	}
	copy(dst, c.w.regions[pe][off:off+uint64(len(dst))])
	return nil
}

func (c *fakeComm) word(pe int, off uint64) *uint64 {
	if off%8 != 0 {
		panic(fmt.Sprintf("signal word at unaligned offset %d", off))
	}
	return (*uint64)(unsafe.Pointer(&c.w.regions[pe][off]))
}

func (c *fakeComm) Signal(pe int, off uint64, v uint64) error {
	atomic.StoreUint64(c.word(pe, off), v)
	return nil
}

func (c *fakeComm) Local(off uint64, n int) []byte {
	return c.w.regions[c.me][off : off+uint64(n)]
}

// directComm is a fakeComm that is also a Direct (the world's direct flag).
type directComm struct{ *fakeComm }

func (c directComm) Word(pe int, off uint64) *uint64 {
	if c.w.reach != nil && !c.w.reach(c.me, pe) {
		return nil
	}
	return c.word(pe, off)
}

// Mem implements Direct over the fake regions.
func (c directComm) Mem(pe int, off uint64, n int) []byte {
	if c.w.reach != nil && !c.w.reach(c.me, pe) {
		return nil
	}
	return c.w.regions[pe][off : off+uint64(n)]
}

// comm is the Comm the collectives see for this fake PE.
func (c *fakeComm) comm() Comm {
	if c.w.direct {
		return directComm{c}
	}
	return c
}

func (c *fakeComm) WaitGE(off uint64, v uint64, why Wait) error {
	c.w.waits.Add(1)
	p := c.word(c.me, off)
	policy := c.w.policy
	if c.policy != nil {
		policy = *c.policy
	}
	ok, err := policy.Until(func() bool { return atomic.LoadUint64(p) >= v }, nil)
	if err != nil {
		return errors.Wrap(err, why.String())
	}
	if !ok {
		return errs.New(errs.ErrTimeout, c.me, "wait", "%s: word at %d is %d, want >= %d",
			why.String(), off, atomic.LoadUint64(p), v)
	}
	return nil
}

func (c *fakeComm) Quiet() error {
	c.quiets.Add(1)
	return nil
}

// testPolicy is oversubscription-friendly and ends a hung collective with
// ErrTimeout instead of hanging the test binary.
var testPolicy = spin.Policy{Spins: 64, Yields: 64, MaxSleep: 50 * time.Microsecond, Timeout: 20 * time.Second}

var sizes = []int{1, 2, 3, 4, 5, 8}

// spmd runs fn on n PEs of one fake world, as goroutines of the local
// bootstrap, and fails the test with every PE's error.
func spmd(t *testing.T, n int, fn func(c *fakeComm, world *Team, b bootstrap.Bootstrap) error) *fakeWorld {
	t.Helper()
	return spmdIn(t, newFakeWorld(n, testPolicy), fn)
}

// spmdIn is spmd in a world the caller configured.
func spmdIn(t *testing.T, w *fakeWorld, fn func(c *fakeComm, world *Team, b bootstrap.Bootstrap) error) *fakeWorld {
	t.Helper()
	n := w.n
	err := local.Run(n, func(b bootstrap.Bootstrap) error {
		c := &fakeComm{w: w, me: b.Rank()}
		return fn(c, World(c, w.ly), b)
	})
	require.NoError(t, err)
	return w
}
