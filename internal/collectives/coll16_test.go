package collectives

import (
	stderrors "errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
)

// The collectives of issue 16 (Collect, AllToAllStrided, scans) and the
// paths the data collectives take: one sync through the team scratch up to
// TeamScratchSize bytes per member, two syncs past it, peers' memory read
// in place (Direct) or with Get (Comm), on strided teams too.

// spmdPath runs fn on n PEs of a world that is Direct or not, passing the
// Comm the collectives are called with.
func spmdPath(t *testing.T, n int, direct bool, fn func(c Comm, fc *fakeComm, world *Team) error) {
	t.Helper()
	w := newFakeWorld(n, testPolicy)
	w.direct = direct
	spmdIn(t, w, func(fc *fakeComm, world *Team, b bootstrap.Bootstrap) error {
		if err := fn(fc.comm(), fc, world); err != nil {
			return err
		}
		return b.Barrier() // nobody's region goes while a peer may read it
	})
}

// teamsOf are the teams tests run on: the world, and when n >= 3 the odd
// members reversed (stride -2) and the members from 1 at stride 2.
func teamsOf(t *testing.T, c Comm, world *Team) []*Team {
	out := []*Team{world}
	if world.Size < 3 {
		return out
	}
	last := world.Size - 1
	if last%2 == 0 {
		last--
	}
	rev, err := Split(c, world, world, last, -2, (last+1)/2)
	require.NoError(t, err)
	odd, err := Split(c, world, world, 1, 2, world.Size/2)
	require.NoError(t, err)
	evens, err := Split(c, world, world, 0, 2, (world.Size+1)/2)
	require.NoError(t, err)
	for _, tm := range []*Team{rev, odd, evens} {
		if tm != nil {
			out = append(out, tm)
		}
	}
	return out
}

// fill sets PE c's elements [0, n) at off to f(i).
func fill[T elem.Elem](c *fakeComm, off uint64, n int, f func(i int) T) {
	v := view[T](c, off, n)
	for i := range v {
		v[i] = f(i)
	}
}

func TestCollect(t *testing.T) {
	for _, p := range paths {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", p.name, n), func(t *testing.T) {
				spmdPath(t, n, p.direct, func(c Comm, fc *fakeComm, world *Team) error {
					for _, tm := range teamsOf(t, c, world) {
						testCollectOn(t, c, fc, tm)
					}
					return nil
				})
			})
		}
	}
}

func testCollectOn(t *testing.T, c Comm, fc *fakeComm, tm *Team) {
	const room = TeamScratchSize - collectHeader
	countSets := [][]int{
		make([]int, tm.Size), // all zero
		nil,                  // small, different, some zero
		nil,                  // one member past the scratch
		nil,                  // everybody past it
	}
	for i := range tm.Size {
		countSets[1] = append(countSets[1], (i*5+1)%4)
		c2 := i
		if i == tm.Size-1 {
			c2 = room/8 + 1
		}
		countSets[2] = append(countSets[2], c2)
		countSets[3] = append(countSets[3], room/8+1+2*i)
	}
	for si, counts := range countSets {
		for _, sz := range []int{1, 8} {
			what := fmt.Sprintf("%v, PE %d, counts %v, %d-byte elements", tm, fc.me, counts, sz)
			mine := counts[tm.Me]
			copy(fc.Local(srcOff, mine*sz), pattern(100*fc.me+si, mine*sz))
			total := 0
			for _, ci := range counts {
				total += ci
			}
			d := fc.Local(dstOff, total*sz+8)
			for i := range d {
				d[i] = 0xee
			}
			require.NoError(t, Collect(c, tm, dstOff, srcOff, mine, sz, total+1), what)
			want := []byte{}
			for j, cj := range counts {
				want = append(want, pattern(100*tm.PE(j)+si, cj*sz)...)
			}
			assert.Equal(t, want, d[:total*sz], what)
			assert.Equal(t, []byte{0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee, 0xee}, d[total*sz:], what+": past the blocks")
			require.NoError(t, tm.Sync(c)) // src is rewritten next
		}
	}
}

// TestCollectErrors: a member with bad arguments (n < 0) and counts past
// dst fail on every member alike, with no dst written; the team stays in
// step.
func TestCollectErrors(t *testing.T) {
	for _, p := range paths {
		for _, n := range []int{1, 3, 5} {
			t.Run(fmt.Sprintf("%s/%d", p.name, n), func(t *testing.T) {
				spmdPath(t, n, p.direct, func(c Comm, fc *fakeComm, world *Team) error {
					d := fc.Local(dstOff, 64)
					clear(d)
					cnt := 4
					if fc.me == n-1 {
						cnt = -1
					}
					err := Collect(c, world, dstOff, srcOff, cnt, 8, 64)
					if assert.True(t, stderrors.Is(err, errs.ErrInvalidArgument), "PE %d: %v", fc.me, err) {
						assert.Contains(t, err.Error(), fmt.Sprintf("PE %d: Collect: PE %d passed an invalid n", fc.me, n-1))
					}
					err = Collect(c, world, dstOff, srcOff, 4, 8, 4*n-1)
					if assert.True(t, stderrors.Is(err, errs.ErrOutOfBounds), "PE %d: %v", fc.me, err) {
						assert.Contains(t, err.Error(), fmt.Sprintf("dst needs %d elements (the sum of every member's n), has %d", 4*n, 4*n-1))
					}
					assert.Equal(t, make([]byte, 64), d, "PE %d: no dst written", fc.me)
					assert.NoError(t, world.Broken(), "the team stays in step")
					fill(fc, srcOff, 4, func(int) int64 { return int64(fc.me) })
					require.NoError(t, Collect(c, world, dstOff, srcOff, 4, 8, 4*n))
					for j := range n {
						assert.Equal(t, []int64{int64(j), int64(j), int64(j), int64(j)}, view[int64](fc, dstOff+uint64(32*j), 4))
					}
					return nil
				})
			})
		}
	}
}

func TestAllToAllStrided(t *testing.T) {
	pairs := [][2]int{{1, 1}, {2, 1}, {1, 3}, {3, 2}}
	for _, p := range paths {
		for _, n := range sizes {
			t.Run(fmt.Sprintf("%s/%d", p.name, n), func(t *testing.T) {
				spmdPath(t, n, p.direct, func(c Comm, fc *fakeComm, world *Team) error {
					for _, tm := range teamsOf(t, c, world) {
						for _, sz := range []int{2, 8} {
							big := TeamScratchSize/(sz*tm.Size) + 1 // past the scratch
							for _, pr := range pairs {
								for _, cnt := range []int{0, 1, 7, big} {
									testAllToAllStrided(t, c, fc, tm, pr[0], pr[1], cnt, sz)
								}
							}
						}
					}
					return nil
				})
			})
		}
	}
}

func testAllToAllStrided(t *testing.T, c Comm, fc *fakeComm, tm *Team, ds, ss, cnt, sz int) {
	what := fmt.Sprintf("%v, PE %d, dst stride %d, src stride %d, n %d, %d-byte elements", tm, fc.me, ds, ss, cnt, sz)
	// Element e of the block for member j: j*cnt*ss + e*ss; its value names
	// sender, receiver and e; the elements in between hold 0xff bytes.
	val := func(from, to, e int) []byte {
		b := make([]byte, sz)
		for i := range b {
			b[i] = byte(from*31 + to*7 + e*3 + i + 1)
		}
		return b
	}
	srcLen := extent(tm.Size*cnt, ss, sz)
	s := fc.Local(srcOff, srcLen)
	for i := range s {
		s[i] = 0xff
	}
	for j := range tm.Size {
		for e := 0; e < cnt; e++ {
			copy(s[(j*cnt+e)*ss*sz:], val(tm.Me, j, e))
		}
	}
	dstLen := extent(tm.Size*cnt, ds, sz) + 8
	d := fc.Local(dstOff, dstLen)
	for i := range d {
		d[i] = 0xee
	}
	require.NoError(t, AllToAllStrided(c, tm, dstOff, srcOff, ds, ss, cnt, sz), what)
	want := make([]byte, dstLen)
	for i := range want {
		want[i] = 0xee
	}
	for i := range tm.Size {
		for e := 0; e < cnt; e++ {
			copy(want[(i*cnt+e)*ds*sz:], val(i, tm.Me, e))
		}
	}
	assert.Equal(t, want, d, what)
	require.NoError(t, tm.Sync(c))
}

// scanValue is member i's element k of a scan test: small, so float sums
// are exact; wrapping sums of narrow integers are what V's arithmetic gives.
func scanValue[T elem.Elem](i, k int) T { return T((i*13+k*7)%29 + 1) }

func testScan[T elem.Elem](t *testing.T, n int, direct bool) {
	big := TeamScratchSize/elem.Size[T]() + 5 // past the scratch
	counts := []int{0, 1, 13, big, 3*big + 1}
	spmdPath(t, n, direct, func(c Comm, fc *fakeComm, world *Team) error {
		for _, tm := range teamsOf(t, c, world) {
			for _, exclusive := range []bool{false, true} {
				for _, cnt := range counts {
					for _, inPlace := range []bool{false, true} {
						what := fmt.Sprintf("%s %v, PE %d, n %d, exclusive %v, in place %v", elem.Name[T](), tm, fc.me, cnt, exclusive, inPlace)
						fill(fc, srcOff, cnt+1, func(k int) T { return scanValue[T](tm.Me, k) })
						dst := uint64(dstOff)
						if inPlace {
							dst = srcOff
						} else {
							fill(fc, dst, cnt+1, func(int) T { return 99 })
						}
						require.NoError(t, Scan[T](c, tm, exclusive, dst, srcOff, cnt), what)
						want := make([]T, cnt)
						last := tm.Me
						if exclusive {
							last--
						}
						for k := range want {
							for i := 0; i <= last; i++ {
								want[k] += scanValue[T](i, k)
							}
						}
						got := view[T](fc, dst, cnt+1)
						assert.Equal(t, want, got[:cnt:cnt], what)
						if inPlace {
							assert.Equal(t, scanValue[T](tm.Me, cnt), got[cnt], what+": past the end")
						} else {
							assert.Equal(t, T(99), got[cnt], what+": past the end")
							assert.Equal(t, scanValue[T](tm.Me, 0), view[T](fc, srcOff, 1)[0], what+": src")
						}
						require.NoError(t, tm.Sync(c))
					}
				}
			}
		}
		return nil
	})
}

func TestScan(t *testing.T) {
	types := []struct {
		name string
		run  func(t *testing.T, n int, direct bool)
	}{
		{"int8", testScan[int8]}, {"int32", testScan[int32]}, {"uint64", testScan[uint64]},
		{"float32", testScan[float32]}, {"float64", testScan[float64]},
	}
	for _, p := range paths {
		for _, n := range []int{1, 2, 3, 5, 8} {
			for _, ty := range types {
				t.Run(fmt.Sprintf("%s/%d/%s", p.name, n, ty.name), func(t *testing.T) { ty.run(t, n, p.direct) })
			}
		}
	}
}

// testReduceLarge: Reduce past the team scratch (the chunked reduce-scatter
// and all-gather) for every op, in place and not, on every team.
func testReduceLarge[T elem.Elem](t *testing.T, n int, direct bool) {
	ops := []Op{OpSum, OpProd, OpMin, OpMax}
	if !elem.IsFloat[T]() {
		ops = append(ops, OpAnd, OpOr, OpXor)
	}
	sz := elem.Size[T]()
	counts := []int{TeamScratchSize/sz + 1, 3*reduceBlock/sz + 17}
	spmdPath(t, n, direct, func(c Comm, fc *fakeComm, world *Team) error {
		for _, tm := range teamsOf(t, c, world) {
			for _, op := range ops {
				for _, cnt := range counts {
					for _, inPlace := range []bool{false, true} {
						what := fmt.Sprintf("%s %v %v, PE %d, n %d, in place %v", elem.Name[T](), op, tm, fc.me, cnt, inPlace)
						fill(fc, srcOff, cnt+1, func(k int) T { return reduceValue[T](op, tm.Me, k) })
						dst := uint64(dstOff)
						if inPlace {
							dst = srcOff
						} else {
							fill(fc, dst, cnt+1, func(int) T { return 0 })
						}
						require.NoError(t, Reduce[T](c, tm, op, dst, srcOff, cnt), what)
						got := view[T](fc, dst, cnt+1)
						bad := 0
						for k := 0; k < cnt && bad < 3; k++ {
							if want := reduceExpect[T](op, tm.Size, k); got[k] != want {
								assert.Equal(t, want, got[k], "%s: element %d", what, k)
								bad++
							}
						}
						past := T(0)
						if inPlace {
							past = reduceValue[T](op, tm.Me, cnt)
						}
						assert.Equal(t, past, got[cnt], what+": past the end")
						require.NoError(t, tm.Sync(c))
					}
				}
			}
		}
		return nil
	})
}

func TestReduceLarge(t *testing.T) {
	types := []struct {
		name string
		run  func(t *testing.T, n int, direct bool)
	}{
		{"int8", testReduceLarge[int8]}, {"int16", testReduceLarge[int16]}, {"uint64", testReduceLarge[uint64]},
		{"float32", testReduceLarge[float32]}, {"float64", testReduceLarge[float64]},
	}
	for _, p := range paths {
		for _, n := range []int{1, 2, 3, 5, 8} {
			for _, ty := range types {
				t.Run(fmt.Sprintf("%s/%d/%s", p.name, n, ty.name), func(t *testing.T) { ty.run(t, n, p.direct) })
			}
		}
	}
}

// TestLargePaths: Broadcast, FCollect and AllToAll past the team scratch,
// on every team, Direct and not.
func TestLargePaths(t *testing.T) {
	const nbytes = TeamScratchSize + 1001
	for _, p := range paths {
		for _, n := range []int{1, 2, 3, 5, 8} {
			t.Run(fmt.Sprintf("%s/%d", p.name, n), func(t *testing.T) {
				spmdPath(t, n, p.direct, func(c Comm, fc *fakeComm, world *Team) error {
					for _, tm := range teamsOf(t, c, world) {
						what := fmt.Sprintf("%v, PE %d", tm, fc.me)
						for root := range tm.Size {
							copy(fc.Local(srcOff, nbytes), pattern(7*fc.me+root, nbytes))
							clear(fc.Local(dstOff, nbytes+1))
							require.NoError(t, Broadcast(c, tm, dstOff, srcOff, nbytes, root))
							assert.Equal(t, pattern(7*tm.PE(root)+root, nbytes), fc.Local(dstOff, nbytes), "%s: Broadcast from %d", what, root)
							assert.Zero(t, fc.Local(dstOff+nbytes, 1)[0])
							require.NoError(t, tm.Sync(c))
						}
						copy(fc.Local(srcOff, nbytes), pattern(fc.me, nbytes))
						require.NoError(t, FCollect(c, tm, dstOff, srcOff, nbytes))
						for j := range tm.Size {
							assert.Equal(t, pattern(tm.PE(j), nbytes), fc.Local(dstOff+uint64(j*nbytes), nbytes), "%s: FCollect block %d", what, j)
						}
						require.NoError(t, tm.Sync(c))
						blk := nbytes / tm.Size
						for j := range tm.Size {
							copy(fc.Local(srcOff+uint64(j*blk), blk), pattern(1000*fc.me+tm.PE(j), blk))
						}
						require.NoError(t, AllToAll(c, tm, dstOff, srcOff, blk))
						for i := range tm.Size {
							assert.Equal(t, pattern(1000*tm.PE(i)+fc.me, blk), fc.Local(dstOff+uint64(i*blk), blk), "%s: AllToAll block from %d", what, i)
						}
						require.NoError(t, tm.Sync(c))
					}
					return nil
				})
			})
		}
	}
}

// TestSmallBackToBack: one-sync collectives of changing kinds and sizes in
// a row, with random delays, so fast members publish the next call's
// contribution while slow ones still read the last one's: the two scratch
// buffers must keep them apart (every value checked; go test -race sees
// every access to the fake's memory).
func TestSmallBackToBack(t *testing.T) {
	const rounds = 400
	for _, p := range paths {
		for _, n := range []int{2, 3, 5, 8} {
			t.Run(fmt.Sprintf("%s/%d", p.name, n), func(t *testing.T) {
				spmdPath(t, n, p.direct, func(c Comm, fc *fakeComm, world *Team) error {
					kinds := rand.New(rand.NewPCG(9, 9)) // the same sequence everywhere
					delay := rand.New(rand.NewPCG(uint64(fc.me), 1))
					for r := range rounds {
						if delay.IntN(6) == 0 {
							time.Sleep(time.Duration(delay.IntN(50)) * time.Microsecond)
						}
						cnt := 1 + kinds.IntN(TeamScratchSize/8/n)
						what := fmt.Sprintf("PE %d round %d n %d", fc.me, r, cnt)
						fill(fc, srcOff, cnt, func(k int) int64 { return int64(r*1000 + fc.me*10 + k) })
						switch kinds.IntN(4) {
						case 0:
							require.NoError(t, Reduce[int64](c, world, OpSum, dstOff, srcOff, cnt), what)
							for k, v := range view[int64](fc, dstOff, cnt) {
								want := int64(0)
								for pe := range n {
									want += int64(r*1000 + pe*10 + k)
								}
								require.Equal(t, want, v, "%s: Reduce [%d]", what, k)
							}
						case 1:
							root := r % n
							require.NoError(t, Broadcast(c, world, dstOff, srcOff, 8*cnt, root), what)
							for k, v := range view[int64](fc, dstOff, cnt) {
								require.Equal(t, int64(r*1000+root*10+k), v, "%s: Broadcast [%d]", what, k)
							}
						case 2:
							require.NoError(t, FCollect(c, world, dstOff, srcOff, 8*cnt), what)
							for k, v := range view[int64](fc, dstOff, n*cnt) {
								require.Equal(t, int64(r*1000+(k/cnt)*10+k%cnt), v, "%s: FCollect [%d]", what, k)
							}
						default:
							require.NoError(t, Scan[int64](c, world, false, dstOff, srcOff, cnt), what)
							for k, v := range view[int64](fc, dstOff, cnt) {
								want := int64(0)
								for pe := 0; pe <= fc.me; pe++ {
									want += int64(r*1000 + pe*10 + k)
								}
								require.Equal(t, want, v, "%s: Scan [%d]", what, k)
							}
						}
					}
					return nil
				})
			})
		}
	}
}

// TestNewKindsMismatch: a member calling Collect, AllToAllStrided or a scan
// where the others call Reduce finds out, and so do the others.
func TestNewKindsMismatch(t *testing.T) {
	calls := map[Kind]func(c Comm, tm *Team) error{
		KindCollect:         func(c Comm, tm *Team) error { return Collect(c, tm, dstOff, srcOff, 1, 8, 64) },
		KindAllToAllStrided: func(c Comm, tm *Team) error { return AllToAllStrided(c, tm, dstOff, srcOff, 2, 1, 1, 8) },
		KindScan:            func(c Comm, tm *Team) error { return Scan[int64](c, tm, true, dstOff, srcOff, 1) },
	}
	for _, p := range paths {
		for k, call := range calls {
			for _, n := range []int{2, 4} {
				t.Run(fmt.Sprintf("%s/%v/%d", p.name, k, n), func(t *testing.T) {
					errsOf := make([]error, n)
					spmdPath(t, n, p.direct, func(c Comm, fc *fakeComm, world *Team) error {
						if fc.me == 1 {
							errsOf[1] = call(c, world)
						} else {
							errsOf[fc.me] = Reduce[int64](c, world, OpSum, dstOff, srcOff, 1)
						}
						return nil
					})
					for pe, err := range errsOf {
						if !isNotSymmetric(t, err, pe) {
							continue
						}
						if pe == 1 {
							assert.Contains(t, err.Error(), fmt.Sprintf("PE 1: %v: sync #1 of team world: PE", k))
							assert.Contains(t, err.Error(), "called Reduce here")
						} else {
							assert.Contains(t, err.Error(), fmt.Sprintf("PE %d: Reduce: sync #1 of team world: PE 1 called %v here", pe, k))
						}
					}
				})
			}
		}
	}
}

// TestSmallPathGetError: a Get that fails on the one-sync path puts the
// team out of step on the PE that saw it.
func TestSmallPathGetError(t *testing.T) {
	boom := errors.New("get failed")
	// PE 0 fails its Gets; an inclusive scan's member 0 reads only its
	// own scratch, so there PE 1 fails.
	failer := map[string]int{"Scan": 1}
	calls := map[string]func(c Comm, tm *Team) error{
		"Broadcast":       func(c Comm, tm *Team) error { return Broadcast(c, tm, dstOff, srcOff, 8, 1) },
		"Reduce":          func(c Comm, tm *Team) error { return Reduce[int32](c, tm, OpSum, dstOff, srcOff, 4) },
		"FCollect":        func(c Comm, tm *Team) error { return FCollect(c, tm, dstOff, srcOff, 8) },
		"AllToAll":        func(c Comm, tm *Team) error { return AllToAll(c, tm, dstOff, srcOff, 8) },
		"Collect":         func(c Comm, tm *Team) error { return Collect(c, tm, dstOff, srcOff, 1, 8, 8) },
		"AllToAllStrided": func(c Comm, tm *Team) error { return AllToAllStrided(c, tm, dstOff, srcOff, 2, 1, 1, 8) },
		"Scan":            func(c Comm, tm *Team) error { return Scan[int64](c, tm, false, dstOff, srcOff, 1) },
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			errsOf := make([]error, 2)
			f := failer[name]
			spmdPath(t, 2, false, func(c Comm, fc *fakeComm, world *Team) error {
				if fc.me == f {
					fc.failGet = boom
				}
				errsOf[fc.me] = call(c, world)
				fc.failGet = nil
				if fc.me == f {
					isNotSymmetric(t, world.Sync(c), f, "the next call on the failed PE")
				}
				return nil
			})
			assert.ErrorIs(t, errsOf[f], boom)
			assert.NoError(t, errsOf[1-f], "the other PE read nothing that failed")
		})
	}
}

// TestFlatSizes: the flat sync at its largest size and the dissemination
// barrier just past it, back to back with delays.
func TestFlatSizes(t *testing.T) {
	for _, p := range paths {
		for _, n := range []int{flatMax, flatMax + 1} {
			t.Run(fmt.Sprintf("%s/%d", p.name, n), func(t *testing.T) {
				spmdPath(t, n, p.direct, func(c Comm, fc *fakeComm, world *Team) error {
					assert.Equal(t, n <= flatMax, world.flat())
					delay := rand.New(rand.NewPCG(uint64(fc.me), 2))
					for r := range 100 {
						if delay.IntN(8) == 0 {
							time.Sleep(time.Duration(delay.IntN(50)) * time.Microsecond)
						}
						fill(fc, srcOff, 1, func(int) int64 { return int64(r + fc.me) })
						require.NoError(t, Reduce[int64](c, world, OpSum, dstOff, srcOff, 1))
						require.Equal(t, int64(n*r+n*(n-1)/2), view[int64](fc, dstOff, 1)[0], "PE %d round %d", fc.me, r)
					}
					return nil
				})
			})
		}
	}
}

func TestStridedCopy(t *testing.T) {
	for _, sz := range []int{1, 2, 4, 8} {
		for _, st := range [][2]int{{1, 1}, {1, 2}, {3, 1}, {2, 5}} {
			const n = 9
			src := make([]byte, extent(n, st[1], sz))
			for i := range src {
				src[i] = byte(i + 1)
			}
			dst := make([]byte, extent(n, st[0], sz))
			stridedCopy(dst, st[0], src, st[1], n, sz)
			for e := 0; e < n; e++ {
				assert.Equal(t, src[e*st[1]*sz:(e*st[1]+1)*sz], dst[e*st[0]*sz:(e*st[0]+1)*sz], "sz %d strides %v element %d", sz, st, e)
			}
		}
	}
	assert.Zero(t, extent(0, 5, 8))
	assert.Equal(t, 8*(3*3+1), extent(4, 3, 8))
}

func TestAddToTail(t *testing.T) {
	for _, n := range []int{0, 1, 7, 8, 9, 17} {
		acc, x := make([]int32, n), make([]int32, n)
		for i := range acc {
			acc[i], x[i] = int32(i), int32(100*i)
		}
		addTo(acc, x)
		for i, v := range acc {
			assert.Equal(t, int32(101*i), v, "n %d element %d", n, i)
		}
	}
}

// TestBroadcastRootWaits: past the team scratch the root returns only once
// every member has read its source: it rewrites the source at once, and
// every member still got the data of the call (go test -race checks the
// order of the reads and the rewrite).
func TestBroadcastRootWaits(t *testing.T) {
	const nbytes = TeamScratchSize + 64
	for _, p := range paths {
		for _, n := range []int{2, 3, 8, doneLines + 1, doneLines + 2} {
			t.Run(fmt.Sprintf("%s/%d", p.name, n), func(t *testing.T) {
				spmdPath(t, n, p.direct, func(c Comm, fc *fakeComm, world *Team) error {
					for r := range 20 {
						root := r % n
						if fc.me == root {
							copy(fc.Local(srcOff, nbytes), pattern(r, nbytes))
						}
						if fc.me != root && r%3 == 0 {
							time.Sleep(200 * time.Microsecond) // a slow reader
						}
						require.NoError(t, Broadcast(c, world, dstOff, srcOff, nbytes, root))
						if fc.me == root {
							clear(fc.Local(srcOff, nbytes)) // at once: every reader is done
						}
						assert.Equal(t, pattern(r, nbytes), fc.Local(dstOff, nbytes), "PE %d round %d", fc.me, r)
					}
					return world.Barrier(c)
				})
			})
		}
	}
}

// TestCombine2MatchesCombine: the two-input fold gives combine's bits for
// every op, NaN and signed zeros included.
func TestCombine2MatchesCombine(t *testing.T) {
	nan, negZero := math.NaN(), math.Copysign(0, -1)
	a := []float64{1, nan, 2, negZero, 0, 5, nan, -3, 7, 8, 9, negZero}
	b := []float64{nan, 1, negZero, 0, negZero, 5, nan, 4, -7, 1, 2, negZero}
	for _, op := range []Op{OpSum, OpProd, OpMin, OpMax} {
		want := append([]float64(nil), a...)
		combine(op, want, b)
		got := make([]float64, len(a))
		combine2(op, got, a, b)
		for i := range got {
			assert.Equal(t, math.Float64bits(want[i]), math.Float64bits(got[i]), "%v [%d]: %v vs %v", op, i, got[i], want[i])
		}
	}
	x := []uint16{0xf0f0, 1, 2, 3, 0xffff, 6, 7, 8, 9}
	y := []uint16{0x0ff0, 3, 2, 1, 0x00ff, 6, 1, 2, 3}
	for _, op := range []Op{OpAnd, OpOr, OpXor, OpSum, OpMin, OpMax, OpProd} {
		want := append([]uint16(nil), x...)
		combine(op, want, y)
		got := make([]uint16, len(x))
		combine2(op, got, x, y)
		assert.Equal(t, want, got, op.String())
		inPlace := append([]uint16(nil), x...)
		combine2(op, inPlace, inPlace, y)
		assert.Equal(t, want, inPlace, "%v with out = a", op)
	}
}

// TestCombineSignedZeros: a sum is -0 only when both terms are, a product's
// sign is the XOR of its factors' signs, and min and max compare -0 and +0
// equal and keep the earlier operand. Every PE folds members in team order,
// so every PE gets the same zero, and the device fold
// (GOSHMEMI_RDX_OP_min/max in include/goshmem/coll_data.h) keeps the
// earlier operand too.
func TestCombineSignedZeros(t *testing.T) {
	negZero := math.Copysign(0, -1)
	require.True(t, math.Signbit(negZero), "negZero must be -0")
	for _, tc := range []struct {
		op         Op
		a, b, want float64
	}{
		{OpSum, negZero, 0, 0},
		{OpSum, 0, negZero, 0},
		{OpSum, negZero, negZero, negZero},
		{OpSum, 2, negZero, 2},
		{OpProd, negZero, 0, negZero},
		{OpProd, 0, negZero, negZero},
		{OpProd, negZero, negZero, 0},
		{OpProd, 2, negZero, negZero},
		{OpMin, negZero, 0, negZero},
		{OpMin, 0, negZero, 0},
		{OpMin, negZero, negZero, negZero},
		{OpMin, negZero, 1, negZero},
		{OpMax, negZero, 0, negZero},
		{OpMax, 0, negZero, 0},
		{OpMax, negZero, -1, negZero},
	} {
		acc := []float64{tc.a}
		combine(tc.op, acc, []float64{tc.b})
		assert.Equal(t, math.Float64bits(tc.want), math.Float64bits(acc[0]), "combine %v(%v, %v) = %v", tc.op, tc.a, tc.b, acc[0])
		out := []float64{1}
		combine2(tc.op, out, []float64{tc.a}, []float64{tc.b})
		assert.Equal(t, math.Float64bits(tc.want), math.Float64bits(out[0]), "combine2 %v(%v, %v) = %v", tc.op, tc.a, tc.b, out[0])
	}
}
