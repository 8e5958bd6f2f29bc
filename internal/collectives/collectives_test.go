package collectives

import (
	"bytes"
	stderrors "errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
)

// view is PE c's elements [0, n) of type T at region offset off.
func view[T elem.Elem](c *fakeComm, off uint64, n int) []T {
	if n == 0 {
		return nil
	}
	b := c.Local(off, n*elem.Size[T]())
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

func TestLayout(t *testing.T) {
	ly := Layout{Base: 1 << 20, MaxTeams: 100}
	assert.Equal(t, uint64(100*SlotSize), ly.Size())
	assert.Equal(t, uint64(1<<20), ly.psyncOff(0, 0))
	assert.Equal(t, uint64(1<<20+SlotSize+3*lineSize), ly.psyncOff(1, 3))
	assert.Less(t, ly.psyncOff(5, MaxRounds-1), ly.teamScratchOff(5, 0), "a slot's psync lines come before its scratch")
	assert.Equal(t, ly.teamScratchOff(5, 0)+TeamScratchSize, ly.teamScratchOff(5, 1))
	assert.Equal(t, ly.teamScratchOff(5, 2), ly.teamScratchOff(5, 0), "the buffers alternate by epoch")
	assert.Equal(t, ly.psyncOff(6, 0), ly.teamScratchOff(5, 1)+TeamScratchSize, "slots are contiguous")
	assert.Equal(t, ly.Base+ly.Size(), ly.psyncOff(ly.MaxTeams, 0), "the last slot ends at Size")
	assert.Zero(t, SlotSize%64, "every slot's words stay cache-line aligned")
	assert.LessOrEqual(t, 32+MaxTeams/8, MaxExchange, "a split's arguments and slot bitmap fit one exchange")
}

func TestTeamIndex(t *testing.T) {
	tests := []struct {
		name string
		team *Team
		pes  []int // the members in team order
	}{
		{"world of 5", &Team{Start: 0, Stride: 1, Size: 5}, []int{0, 1, 2, 3, 4}},
		{"evens of 8", &Team{Start: 0, Stride: 2, Size: 4}, []int{0, 2, 4, 6}},
		{"odds of 8", &Team{Start: 1, Stride: 2, Size: 4}, []int{1, 3, 5, 7}},
		{"size 1", &Team{Start: 3, Stride: 1, Size: 1}, []int{3}},
		{"stride 0 size 1", &Team{Start: 2, Stride: 0, Size: 1}, []int{2}},
		{"negative stride", &Team{Start: 6, Stride: -2, Size: 3}, []int{6, 4, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for i, pe := range tc.pes {
				assert.Equal(t, pe, tc.team.PE(i))
				assert.Equal(t, i, tc.team.Index(pe), "Index(%d)", pe)
			}
			for pe := -3; pe < 12; pe++ {
				member := false
				for _, m := range tc.pes {
					member = member || m == pe
				}
				if !member {
					assert.Equal(t, -1, tc.team.Index(pe), "PE %d is not a member", pe)
				}
			}
			assert.Contains(t, tc.team.String(), fmt.Sprintf("size %d", tc.team.Size))
		})
	}
}

func TestChunk(t *testing.T) {
	for _, size := range sizes {
		for _, n := range []int{0, 1, 3, 7, 8, 9, 63, 64, 65, 1000} {
			next := 0
			for i := range size {
				lo, hi := chunk(n, size, i)
				require.LessOrEqual(t, lo, hi)
				require.Equal(t, next, lo, "n %d size %d member %d: chunks are contiguous", n, size, i)
				if hi > lo && hi < n {
					assert.Zero(t, (hi-lo)%8, "inner chunks are multiples of 8 elements")
				}
				next = hi
			}
			assert.Equal(t, n, next, "n %d size %d: the chunks cover every element", n, size)
		}
	}
}

func TestOpString(t *testing.T) {
	for op, s := range map[Op]string{OpSum: "sum", OpProd: "prod", OpMin: "min", OpMax: "max",
		OpAnd: "and", OpOr: "or", OpXor: "xor", Op(-1): "op(?)", Op(7): "op(?)"} {
		assert.Equal(t, s, op.String())
	}
	assert.True(t, OpXor.Bitwise())
	assert.False(t, OpMax.Bitwise())
}

// TestSyncLateArrival: nobody leaves a sync before the last member
// arrives. The late member marks its arrival just before it enters (after
// a sleep, so a sync that does not wait would be caught); every member must
// see the mark once its sync returns.
func TestSyncLateArrival(t *testing.T) {
	const late = 30 * time.Millisecond
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var lateArrived atomic.Bool
			sawMark := make([]bool, n)
			spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				if c.me == n-1 {
					time.Sleep(late)
					lateArrived.Store(true)
				}
				err := world.Sync(c)
				sawMark[c.me] = lateArrived.Load()
				return err
			})
			for pe, saw := range sawMark {
				assert.True(t, saw, "PE %d left the sync before PE %d arrived", pe, n-1)
			}
		})
	}
}

// TestSyncBackToBack: many syncs in a row with random delays; after sync k
// every member has arrived at sync k and none is past sync k+1.
func TestSyncBackToBack(t *testing.T) {
	const rounds = 150
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			arrived := make([]atomic.Int64, n)
			spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				rng := rand.New(rand.NewPCG(uint64(c.me), 7))
				for k := int64(1); k <= rounds; k++ {
					if rng.IntN(10) == 0 {
						time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
					}
					arrived[c.me].Store(k)
					if err := world.Sync(c); err != nil {
						return err
					}
					for pe := range arrived {
						a := arrived[pe].Load()
						if !assert.GreaterOrEqual(t, a, k, "PE %d after sync %d: PE %d has not arrived", c.me, k, pe) ||
							!assert.LessOrEqual(t, a, k+1, "PE %d after sync %d: PE %d is two syncs ahead", c.me, k, pe) {
							return errors.Newf("barrier broken at sync %d", k)
						}
					}
				}
				assert.Equal(t, uint64(rounds), world.epoch)
				return nil
			})
		})
	}
}

// TestBarrier: puts issued before a barrier are visible everywhere after it,
// and Barrier completes them with Quiet first.
func TestBarrier(t *testing.T) {
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				for round := uint64(1); round <= 20; round++ {
					v := (round << 8) | uint64(c.me)
					var b [8]byte
					putU64(b[:], v)
					for pe := range n {
						if err := c.Put(pe, dataOff+uint64(8*c.me), b[:]); err != nil {
							return err
						}
					}
					if err := world.Barrier(c); err != nil {
						return err
					}
					slots := view[uint64](c, dataOff, n)
					for pe := range n {
						assert.Equal(t, (round<<8)|uint64(pe), slots[pe], "round %d on PE %d: slot of PE %d", round, c.me, pe)
					}
					// Nobody overwrites the slots of this round before all have read them.
					if err := world.Sync(c); err != nil {
						return err
					}
				}
				assert.EqualValues(t, 20, c.quiets.Load(), "one Quiet per Barrier")
				return nil
			})
		})
	}
}

func TestExchange(t *testing.T) {
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				for round := range 5 {
					in := []byte(fmt.Sprintf("round %d from PE %d", round, c.me))
					out, err := world.Exchange(c, in)
					if err != nil {
						return err
					}
					if assert.Len(t, out, n) {
						for pe := range n {
							assert.Equal(t, fmt.Sprintf("round %d from PE %d", round, pe), string(out[pe]))
						}
					}
				}
				big, err := world.Exchange(c, make([]byte, MaxExchange))
				if assert.NoError(t, err) {
					assert.Len(t, big, n)
				}
				_, err = world.Exchange(c, make([]byte, MaxExchange+1))
				assert.ErrorIs(t, err, errs.ErrInvalidArgument)
				if err != nil {
					assert.Contains(t, err.Error(), fmt.Sprintf("%d bytes, at most %d", MaxExchange+1, MaxExchange))
				}
				return nil
			})
		})
	}
}

func pattern(seed, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(seed*131 + i*7 + 1)
	}
	return b
}

func TestBroadcast(t *testing.T) {
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				for _, nbytes := range []int{0, 1, 13, 1000} {
					for root := range n {
						copy(c.Local(srcOff, nbytes+1), pattern(100*c.me+root, nbytes+1))
						d := c.Local(dstOff, nbytes+1)
						clear(d)
						d[nbytes] = 0xee // must stay untouched
						if err := Broadcast(c, world, dstOff, srcOff, nbytes, root); err != nil {
							return err
						}
						assert.Equal(t, pattern(100*root+root, nbytes+1)[:nbytes], d[:nbytes],
							"PE %d, root %d, %d bytes", c.me, root, nbytes)
						assert.Equal(t, byte(0xee), d[nbytes], "past the end")
					}
				}
				return nil
			})
		})
	}
}

func TestFCollect(t *testing.T) {
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				for _, nbytes := range []int{0, 1, 8, 129} {
					copy(c.Local(srcOff, nbytes), pattern(c.me+nbytes, nbytes))
					d := c.Local(dstOff, n*nbytes+1)
					clear(d)
					d[n*nbytes] = 0xee
					if err := FCollect(c, world, dstOff, srcOff, nbytes); err != nil {
						return err
					}
					want := []byte{}
					for pe := range n {
						want = append(want, pattern(pe+nbytes, nbytes)...)
					}
					assert.Equal(t, want, d[:n*nbytes], "PE %d, %d bytes", c.me, nbytes)
					assert.Equal(t, byte(0xee), d[n*nbytes])
				}
				return nil
			})
		})
	}
}

func TestAllToAll(t *testing.T) {
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				for _, nbytes := range []int{0, 1, 24, 100} {
					for j := range n {
						// block j of my source goes to PE j
						copy(c.Local(srcOff+uint64(j*nbytes), nbytes), pattern(1000*c.me+j, nbytes))
					}
					clear(c.Local(dstOff, n*nbytes))
					if err := AllToAll(c, world, dstOff, srcOff, nbytes); err != nil {
						return err
					}
					for i := range n {
						assert.Equal(t, pattern(1000*i+c.me, nbytes), c.Local(dstOff+uint64(i*nbytes), nbytes),
							"PE %d, block from PE %d, %d bytes", c.me, i, nbytes)
					}
				}
				return nil
			})
		})
	}
}

// reduceValue is PE pe's element i for op: small values whose float sums
// and products are exact, so every type has one exact expected answer.
func reduceValue[T elem.Elem](op Op, pe, i int) T {
	if op == OpProd {
		return T((pe+i)%3 + 1) // 1..3: at most 3^8 for 8 PEs
	}
	v := int64((pe*37+i*11)%251) - 100 // -100..150, wrapped for narrow/unsigned types
	if elem.IsFloat[T]() {
		return T(float64(v) / 4) // quarters: exact in float32 too
	}
	return T(v)
}

func reduceExpect[T elem.Elem](op Op, npes, i int) T {
	acc := reduceValue[T](op, 0, i)
	for pe := 1; pe < npes; pe++ {
		x := reduceValue[T](op, pe, i)
		a := []T{acc}
		combine(op, a, []T{x})
		acc = a[0]
	}
	return acc
}

func testReduce[T elem.Elem](t *testing.T, npes int) {
	ops := []Op{OpSum, OpProd, OpMin, OpMax}
	if !elem.IsFloat[T]() {
		ops = append(ops, OpAnd, OpOr, OpXor)
	}
	counts := []int{0, 1, npes - 1, 13, 1001}
	const maxCount = 1001
	want := map[Op][]T{} // read-only once the PEs start
	for _, op := range ops {
		for i := range maxCount {
			want[op] = append(want[op], reduceExpect[T](op, npes, i))
		}
	}
	spmd(t, npes, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
		for _, op := range ops {
			for _, n := range counts {
				for _, inPlace := range []bool{false, true} {
					if inPlace && n != npes-1 && n != maxCount {
						continue // in place: n < N and a long, uneven count suffice
					}
					dst := uint64(dstOff)
					if inPlace {
						dst = srcOff
					}
					src := view[T](c, srcOff, n+1)
					for i := range src {
						src[i] = reduceValue[T](op, c.me, i)
					}
					if !inPlace {
						out := view[T](c, dst, n+1)
						clear(out)
					}
					sentinel := src[n] // element n is past the end: untouched
					if err := Reduce[T](c, world, op, dst, srcOff, n); err != nil {
						return err
					}
					out := view[T](c, dst, n+1)
					assert.Equal(t, want[op][:n], out[:n:n],
						"%s %v n=%d inPlace=%v PE %d", elem.Name[T](), op, n, inPlace, c.me)
					if inPlace {
						assert.Equal(t, sentinel, out[n], "past the end")
					} else {
						assert.Zero(t, out[n], "past the end")
						assert.Equal(t, sentinel, src[n], "source untouched")
					}
				}
			}
		}
		return nil
	})
}

func TestReduce(t *testing.T) {
	types := []struct {
		name string
		run  func(t *testing.T, n int)
	}{
		{"int8", testReduce[int8]},
		{"int32", testReduce[int32]},
		{"uint64", testReduce[uint64]},
		{"float32", testReduce[float32]},
		{"float64", testReduce[float64]},
	}
	for _, n := range sizes {
		for _, ty := range types {
			t.Run(fmt.Sprintf("%d/%s", n, ty.name), func(t *testing.T) { ty.run(t, n) })
		}
	}
}

func TestReduceSpotValues(t *testing.T) {
	// A few hand-checked answers, so reduceExpect is not the only oracle.
	sum := -100 + (37 - 100) + (74 - 100) // -189 wraps to 67 in int8
	assert.Equal(t, int8(sum), reduceExpect[int8](OpSum, 3, 0))
	assert.Equal(t, int8(67), int8(sum))
	assert.Equal(t, float64(1*2*3*1)/1, reduceExpect[float64](OpProd, 4, 0))
	assert.Equal(t, float32(-25), reduceExpect[float32](OpMin, 2, 0))
	assert.Equal(t, uint64(0xffffffffffffff9c)^uint64(0xffffffffffffffc1), reduceExpect[uint64](OpXor, 2, 0))
}

// TestSplit covers team creation: even/odd teams used concurrently, a
// size-1 team, non-members, reversed (negative-stride) teams.
func TestSplit(t *testing.T) {
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				evens, err := Split(c, world, world, 0, 2, (n+1)/2)
				if err != nil {
					return err
				}
				var odds *Team
				if n > 1 {
					if odds, err = Split(c, world, world, 1, 2, n/2); err != nil {
						return err
					}
				}
				last, err := Split(c, world, world, n-1, 1, 1)
				if err != nil {
					return err
				}
				rev, err := Split(c, world, world, n-1, -1, n)
				if err != nil {
					return err
				}
				mine, other := evens, odds
				if c.me%2 == 1 {
					mine, other = odds, evens
				}
				assert.Nil(t, other, "PE %d is not in the other parity's team", c.me)
				if !assert.NotNil(t, mine) {
					return errors.New("no team")
				}
				assert.Equal(t, c.me/2, mine.Me)
				if mine.Size > 1 {
					assert.Equal(t, 2, mine.Stride)
				} else {
					assert.Equal(t, 1, mine.Stride, "a team of one has stride 1")
				}
				assert.Equal(t, c.me%2, mine.Start)
				if c.me == n-1 {
					if assert.NotNil(t, last) {
						assert.Equal(t, 0, last.Me)
						assert.Equal(t, 1, last.Size)
						assert.NoError(t, last.Sync(c), "a team of one syncs alone")
					}
				} else {
					assert.Nil(t, last)
				}
				if assert.NotNil(t, rev) {
					assert.Equal(t, n-1-c.me, rev.Me, "reversed team")
					assert.Equal(t, n, rev.Size)
				}

				// A collective on each parity team at once: a sum of members' ranks.
				x := view[int64](c, srcOff, 1)
				x[0] = int64(c.me)
				if err := Reduce[int64](c, mine, OpSum, dstOff, srcOff, 1); err != nil {
					return err
				}
				want := int64(0)
				for pe := c.me % 2; pe < n; pe += 2 {
					want += int64(pe)
				}
				assert.Equal(t, want, view[int64](c, dstOff, 1)[0], "PE %d: sum over its parity team", c.me)

				// FCollect over the reversed team: blocks in team order.
				copy(c.Local(srcOff, 1), []byte{byte(c.me)})
				if err := FCollect(c, rev, dstOff, srcOff, 1); err != nil {
					return err
				}
				want8 := make([]byte, n)
				for i := range want8 {
					want8[i] = byte(n - 1 - i)
				}
				assert.Equal(t, want8, c.Local(dstOff, n))

				// Slots: world 0, then one per team this PE belongs to, all distinct.
				used := map[int]bool{0: true}
				for _, tm := range []*Team{mine, last, rev} {
					if tm != nil {
						assert.False(t, used[tm.slot], "slot %d reused while alive", tm.slot)
						used[tm.slot] = true
					}
				}
				return world.Sync(c)
			})
		})
	}
}

// TestSplitMismatch: different arguments on different PEs fail with
// ErrNotSymmetric on every parent member, and the world stays usable.
func TestSplitMismatch(t *testing.T) {
	for _, n := range sizes[1:] {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			free0 := make([][]int, n)
			spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				free0[c.me] = freeSlots(world)
				size := 2
				if c.me == 0 {
					size = 1
				}
				tm, err := Split(c, world, world, 0, 1, size)
				assert.Nil(t, tm)
				if assert.ErrorIs(t, err, errs.ErrNotSymmetric, "PE %d", c.me) {
					assert.Contains(t, err.Error(), fmt.Sprintf("PE %d: TeamSplitStrided", c.me))
					assert.Contains(t, err.Error(), "passed (start 0, stride 1, size")
				}
				assert.Equal(t, free0[c.me], freeSlots(world), "no slot taken by a failed split")
				// Still usable: a good split and a barrier.
				good, err := Split(c, world, world, 0, 1, n)
				if err != nil {
					return err
				}
				if assert.NotNil(t, good) {
					assert.NoError(t, good.Barrier(c))
					good.Destroy(c, world)
				}
				return world.Barrier(c)
			})
		})
	}
}

func TestSplitBadArgs(t *testing.T) {
	tests := []struct {
		name                string
		start, stride, size int
		want                string
	}{
		{"size 0", 0, 1, 0, "size >= 1"},
		{"negative start", -1, 1, 1, "start must be in [0, 4)"},
		{"start past the end", 4, 1, 1, "start must be in [0, 4)"},
		{"last past the end", 1, 2, 3, "= 5 is outside the parent team's indices [0, 4)"},
		{"negative stride past the start", 1, -1, 3, "= -1 is outside"},
		{"stride 0", 0, 0, 2, "stride 0 with size 2"},
		// (2^62+1 - 1) * 4 wraps to 0 in an int: the check must not see 1 + 0.
		{"product overflows int", 1, 4, 1<<62 + 1, "= 18446744073709551617 is outside"},
		{"negative product overflows int", 1, math.MinInt64, 3, "= -18446744073709551615 is outside"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Local checks fail before any communication, on every PE alike.
			spmd(t, 4, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				tm, err := Split(c, world, world, tc.start, tc.stride, tc.size)
				assert.Nil(t, tm)
				if assert.ErrorIs(t, err, errs.ErrInvalidArgument) {
					assert.Contains(t, err.Error(), tc.want)
				}
				return nil
			})
		})
	}
}

// TestTeamSlotReuse: a destroyed team's slot is handed to the next team,
// whose syncs start from fresh epochs (words zeroed) and still hold a
// late PE back.
func TestTeamSlotReuse(t *testing.T) {
	for _, n := range sizes {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			var lateGen atomic.Int64
			spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				for gen := range 4 {
					tm, err := Split(c, world, world, 0, 1, n)
					if err != nil {
						return err
					}
					assert.Equal(t, 1, tm.slot, "generation %d reuses slot 1", gen)
					assert.Equal(t, uint64(0), tm.epoch, "fresh epoch")
					// A late PE must hold the others in the new team's first
					// sync: with stale words from the previous generation (up
					// to epoch 10+gen) they would sail through.
					if c.me == n-1 {
						time.Sleep(2 * time.Millisecond)
						lateGen.Store(int64(gen + 1))
					}
					if err := tm.Sync(c); err != nil {
						return err
					}
					assert.Equal(t, int64(gen+1), lateGen.Load(), "generation %d: PE %d left the first sync before the late PE arrived", gen, c.me)
					for range 10 + gen {
						if err := tm.Sync(c); err != nil {
							return err
						}
					}
					tm.Destroy(c, world)
					assert.Equal(t, -1, tm.slot)
					for k := range MaxRounds {
						assert.Zero(t, getU64(c.Local(world.ly.psyncOff(1, k), 8)), "slot 1 round %d zeroed", k)
					}
				}
				return nil
			})
		})
	}
}

// TestMaxTeams: with k slots, k-1 teams can be alive beside the world; one
// more is an ErrInvalidArgument with a hint on every PE; destroying one
// frees a slot. The slot counts fill one bitmap word, part of a second,
// and three.
func TestMaxTeams(t *testing.T) {
	for _, k := range []int{64, 100, 130} {
		for _, n := range []int{1, 3} {
			t.Run(fmt.Sprintf("%d-slots/%d", k, n), func(t *testing.T) {
				spmdIn(t, newFakeWorldTeams(n, testPolicy, k), func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
					var teams []*Team
					for range k - 1 {
						tm, err := Split(c, world, world, 0, 1, n)
						if err != nil {
							return err
						}
						teams = append(teams, tm)
					}
					assert.Empty(t, freeSlots(world))
					for i, tm := range teams {
						assert.Equal(t, i+1, tm.slot, "the lowest free slot")
					}
					tm, err := Split(c, world, world, 0, 1, n)
					assert.Nil(t, tm)
					if assert.ErrorIs(t, err, errs.ErrInvalidArgument) {
						assert.Contains(t, err.Error(), fmt.Sprintf("all %d team slots (GOSHMEM_MAX_TEAMS) are in use", k))
						assert.Contains(t, errors.GetAllHints(err), teamsHint)
					}
					last := teams[k-2]
					require.NoError(t, last.Destroy(c, world))
					teams[10].Destroy(c, world)
					again, err := Split(c, world, world, 0, 1, n)
					if err != nil {
						return err
					}
					assert.Equal(t, 11, again.slot, "the lowest freed slot")
					teams[10] = again
					again, err = Split(c, world, world, 0, 1, n)
					if err != nil {
						return err
					}
					assert.Equal(t, k-1, again.slot, "the last slot, freed")
					teams[k-2] = again
					for _, tm := range teams {
						if err := tm.Sync(c); err != nil {
							return err
						}
						tm.Destroy(c, world)
					}
					assert.Equal(t, slotRange(1, k), freeSlots(world), "every slot but the world's is free again")
					world.Destroy(c, world) // the world's slot is never released
					assert.Equal(t, slotRange(1, k), freeSlots(world))
					return nil
				})
			})
		}
	}
}

// TestTakeSlotsErrors: too few slots free on every parent member, named
// with the counts and the setting.
func TestTakeSlotsErrors(t *testing.T) {
	_, err := takeSlots(2, "TeamSplitStrided", []uint64{0, 0, 0}, 0, 150, 1, 0)
	require.ErrorIs(t, err, errs.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "PE 2: TeamSplitStrided: all 150 team slots (GOSHMEM_MAX_TEAMS) are in use")
	_, err = takeSlots(2, "TeamSplitStrided", []uint64{0, 0, 0}, 5, 150, 1, 0)
	require.ErrorIs(t, err, errs.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "145 of 150 team slots (GOSHMEM_MAX_TEAMS) are in use on this PE, and none of the others is free on every parent member")
	_, err = takeSlots(2, "TeamSplit2D", []uint64{1<<3 | 1<<63}, 2, 64, 3, 0)
	require.ErrorIs(t, err, errs.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "3 new teams per PE need 3 free team slots; 2 of 64 (GOSHMEM_MAX_TEAMS) are free on every parent member")
	assert.Contains(t, errors.GetAllHints(err), teamsHint)
}

// TestWaitTimeout: a member that never arrives turns the others' sync into
// ErrTimeout naming the sync, the round, the PE waited for and the members
// that have not arrived; the team is then out of step.
func TestWaitTimeout(t *testing.T) {
	w := newFakeWorld(2, testPolicy)
	w.policy.Timeout = 50 * time.Millisecond
	var syncErr, again error
	var broken error
	err := localRun(2, func(me int) error {
		if me == 1 {
			return nil // never syncs
		}
		c := &fakeComm{w: w, me: me}
		world := World(c, w.ly)
		syncErr = world.Sync(c)
		again = world.Sync(c)
		broken = world.Broken()
		return nil
	})
	require.NoError(t, err)
	require.ErrorIs(t, syncErr, errs.ErrTimeout)
	assert.Contains(t, syncErr.Error(), "PE 0: Sync: PE 1 has not arrived at sync #1 of team world")
	assert.Contains(t, syncErr.Error(), "Sync: sync #1 of team world, round 0: waiting for PE 1")
	assert.Equal(t, syncErr, broken)
	require.True(t, stderrors.Is(again, errs.ErrNotSymmetric), "%v", again)
	assert.False(t, stderrors.Is(again, errs.ErrTimeout), "the later call did not time out itself")
	assert.Contains(t, again.Error(), "PE 0: Sync: team world is out of step since sync #1 (Sync) failed: PE 0: Sync: PE 1 has not arrived")
}

// TestCommErrors: a transport error ends the collective with that error.
func TestCommErrors(t *testing.T) {
	boom := errors.New("put failed")
	tests := []struct {
		name string
		run  func(c *fakeComm, world *Team) error
	}{
		// Sizes past the team scratch: the large paths put to members
		// this PE does not map.
		{"FCollect", func(c *fakeComm, w *Team) error { return FCollect(c, w, dstOff, srcOff, large) }},
		{"AllToAll", func(c *fakeComm, w *Team) error { return AllToAll(c, w, dstOff, srcOff, large) }},
		{"Reduce", func(c *fakeComm, w *Team) error { return Reduce[int32](c, w, OpSum, dstOff, srcOff, large) }},
		{"Collect", func(c *fakeComm, w *Team) error { return Collect(c, w, dstOff, srcOff, large, 1, 2*large) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errsOf := putFailure(t, boom, tc.run)
			assert.ErrorIs(t, errsOf[0], boom)
			assert.ErrorIs(t, errsOf[1], errs.ErrTimeout, "PE 1 waits for PE 0 in vain")
		})
	}
}

// putFailure runs call on 2 PEs that reach each other only through Comm;
// PE 0's puts fail with boom, PE 1 gives up waiting for it after 50 ms.
func putFailure(t *testing.T, boom error, call func(c *fakeComm, world *Team) error) [2]error {
	var errsOf [2]error
	short := testPolicy
	short.Timeout = 50 * time.Millisecond
	spmd(t, 2, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
		if c.me == 0 {
			c.failPut = boom
		} else {
			c.policy = &short
		}
		errsOf[c.me] = call(c, world)
		return nil
	})
	return errsOf
}

// localRun is spmd without a fake world (the test builds its own).
func localRun(n int, fn func(me int) error) error {
	done := make(chan error, n)
	for me := range n {
		go func() { done <- fn(me) }()
	}
	var all []error
	for range n {
		all = append(all, <-done)
	}
	return errors.Join(all...)
}

func TestBitwiseTail(t *testing.T) {
	// 11 bytes: one 8-byte word, then 3 single bytes.
	a := []uint8{0xff, 0x0f, 0xf0, 1, 2, 3, 4, 5, 0xaa, 0x55, 0xff}
	b := []uint8{0x0f, 0xff, 0xff, 1, 0, 3, 0, 5, 0x0f, 0x0f, 0x00}
	for _, tc := range []struct {
		op   Op
		want []uint8
	}{
		{OpAnd, []uint8{0x0f, 0x0f, 0xf0, 1, 0, 3, 0, 5, 0x0a, 0x05, 0x00}},
		{OpOr, []uint8{0xff, 0xff, 0xff, 1, 2, 3, 4, 5, 0xaf, 0x5f, 0xff}},
		{OpXor, []uint8{0xf0, 0xf0, 0x0f, 0, 2, 0, 4, 0, 0xa5, 0x5a, 0xff}},
	} {
		acc := bytes.Clone(a)
		combine(tc.op, acc, b)
		assert.Equal(t, tc.want, acc, tc.op.String())
	}
}

// TestSyncDirect: Sync over a Direct comm (release stores and inline polls
// on the partners' words) keeps the barrier's guarantees, falls back to
// WaitGE for a late partner, and is used only by a PE whose every round
// partner is load/store reachable (the others take the Comm path; the words
// and values are the same, so the two mix).
func TestSyncDirect(t *testing.T) {
	const rounds = 150
	unreachable := func(from, to int) bool { return !(from == 0 && to == 1) } // PE 0 cannot store to PE 1
	for _, n := range sizes {
		for _, tc := range []struct {
			name  string
			reach func(from, to int) bool
		}{{"all reachable", nil}, {"PE 1 unreachable from PE 0", unreachable}} {
			t.Run(fmt.Sprintf("%d/%s", n, tc.name), func(t *testing.T) {
				w := newFakeWorld(n, testPolicy)
				w.direct, w.reach = true, tc.reach
				arrived := make([]atomic.Int64, n)
				data := make([][]uint64, n)
				spmdIn(t, w, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
					comm := c.comm()
					rng := rand.New(rand.NewPCG(uint64(c.me), 11))
					for k := int64(1); k <= rounds; k++ {
						if rng.IntN(10) == 0 {
							time.Sleep(time.Duration(rng.IntN(200)) * time.Microsecond)
						}
						var b [8]byte
						putU64(b[:], uint64(k)<<8|uint64(c.me))
						for pe := range n {
							if err := c.Put(pe, dataOff+uint64(8*c.me), b[:]); err != nil {
								return err
							}
						}
						arrived[c.me].Store(k)
						if err := world.Barrier(comm); err != nil {
							return err
						}
						for pe := range arrived {
							a := arrived[pe].Load()
							if !assert.GreaterOrEqual(t, a, k, "PE %d after barrier %d: PE %d has not arrived", c.me, k, pe) ||
								!assert.LessOrEqual(t, a, k+1, "PE %d after barrier %d: PE %d is two ahead", c.me, k, pe) {
								return errors.Newf("barrier broken at %d", k)
							}
						}
						slots := view[uint64](c, dataOff, n)
						for pe := range n {
							if !assert.Equal(t, uint64(k)<<8|uint64(pe), slots[pe], "barrier %d on PE %d: slot of PE %d", k, c.me, pe) {
								return errors.Newf("data not visible after barrier %d", k)
							}
						}
						if err := world.Sync(comm); err != nil { // nobody overwrites a slot still being read
							return err
						}
					}
					want := directOn
					if n > 1 && tc.reach != nil && c.me == 0 {
						want = directOff // its round-0 partner is PE 1
					}
					assert.Equal(t, want, world.directState, "PE %d", c.me)
					data[c.me] = []uint64{world.epoch}
					return nil
				})
				for pe := range n {
					assert.Equal(t, []uint64{2 * rounds}, data[pe], "PE %d epochs", pe)
				}
			})
		}
	}
}

// TestSyncDirectLate: a partner that arrives late sends the direct path
// past its inline polls into WaitGE (spin, yield, sleep, timeouts), and
// nobody leaves before the late PE arrived.
func TestSyncDirectLate(t *testing.T) {
	const late = 30 * time.Millisecond
	for _, n := range []int{2, 3, 5} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			w := newFakeWorld(n, testPolicy)
			w.direct = true
			var lateArrived atomic.Bool
			sawMark := make([]bool, n)
			spmdIn(t, w, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				if c.me == n-1 {
					time.Sleep(late)
					lateArrived.Store(true)
				}
				err := world.Sync(c.comm())
				sawMark[c.me] = lateArrived.Load()
				return err
			})
			for pe, saw := range sawMark {
				assert.True(t, saw, "PE %d left before PE %d arrived", pe, n-1)
			}
			assert.Positive(t, w.waits.Load(), "the late partner was waited for in WaitGE")
		})
	}
}

// TestSplitBadArgsOnePE: one PE passes arguments that are invalid on their
// own (size 0, a start outside the parent), the others valid ones. The
// split's arguments differ across PEs, so every parent member must fail
// alike (ErrNotSymmetric or ErrInvalidArgument) with no slot taken, and the
// parent must stay usable: the bad PE may not leave on a local check while
// the others wait in the split's exchange.
func TestSplitBadArgsOnePE(t *testing.T) {
	for _, bad := range []struct{ start, stride, size int }{{0, 1, 0}, {7, 1, 1}, {0, 0, 2}} {
		t.Run(fmt.Sprint(bad), func(t *testing.T) {
			const n = 3
			spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				free0 := freeSlots(world)
				start, stride, size := 0, 1, n
				if c.me == 1 {
					start, stride, size = bad.start, bad.stride, bad.size
				}
				tm, err := Split(c, world, world, start, stride, size)
				assert.Nil(t, tm, "PE %d", c.me)
				assert.Error(t, err, "PE %d: a split whose arguments differ across PEs", c.me)
				if err != nil {
					assert.Contains(t, err.Error(), fmt.Sprintf("PE %d: TeamSplitStrided", c.me))
				}
				assert.Equal(t, free0, freeSlots(world), "PE %d: no slot taken by a failed split", c.me)
				assert.Nil(t, world.broken, "PE %d: the parent stays in step", c.me)
				return world.Barrier(c)
			})
		})
	}
}

// TestSplitBadConfigOnePE: one PE, outside the new team, passes a
// negative configuration. Every parent member must fail alike
// (ErrInvalidArgument naming that PE) with no slot taken, and the parent
// must stay usable; Split2D the same with a bad y configuration.
func TestSplitBadConfigOnePE(t *testing.T) {
	const n = 3
	neg := uint64(1<<64 - 2) // int64 -2
	spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
		free0 := freeSlots(world)
		cfg := uint64(0)
		if c.me == 2 {
			cfg = neg
		}
		tm, err := SplitConfig(c, world, world, 0, 1, 2, cfg) // PE 2 is not in the team
		assert.Nil(t, tm, "PE %d", c.me)
		if assert.ErrorIs(t, err, errs.ErrInvalidArgument, "PE %d", c.me) {
			assert.Contains(t, err.Error(), "PE 2 passed TeamConfig.NumContexts = -2")
		}
		ycfg := uint64(0)
		if c.me == 1 {
			ycfg = neg
		}
		x, y, err := Split2D(c, world, world, 2, 0, ycfg)
		assert.Nil(t, x, "PE %d", c.me)
		assert.Nil(t, y, "PE %d", c.me)
		if assert.ErrorIs(t, err, errs.ErrInvalidArgument, "PE %d", c.me) {
			assert.Contains(t, err.Error(), "PE 1 passed TeamConfig.NumContexts = -2")
		}
		assert.Equal(t, free0, freeSlots(world), "PE %d: no slot taken by a failed split", c.me)
		assert.Nil(t, world.broken, "PE %d: the parent stays in step", c.me)
		return world.Barrier(c)
	})
}
