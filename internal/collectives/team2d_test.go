package collectives

import (
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/errs"
)

func TestListed(t *testing.T) {
	tests := []struct {
		name    string
		pes     []int
		strided bool
		stride  int
	}{
		{"one", []int{5}, true, 1},
		{"consecutive", []int{2, 3, 4}, true, 1},
		{"evens", []int{0, 2, 4, 6}, true, 2},
		{"descending", []int{7, 4, 1}, true, -3},
		{"two", []int{1, 6}, true, 5},
		{"gap", []int{0, 1, 3}, false, 0},
		{"unordered", []int{4, 0, 2, 1}, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tm := listed(tc.pes, 3)
			assert.Equal(t, tc.strided, tm.Strided())
			assert.Equal(t, len(tc.pes), tm.Size)
			assert.Equal(t, 3, tm.Slot())
			if tc.strided {
				assert.Equal(t, tc.pes[0], tm.Start)
				assert.Equal(t, tc.stride, tm.Stride)
			} else {
				assert.Contains(t, tm.String(), fmt.Sprint(tc.pes))
			}
			assert.Contains(t, tm.String(), fmt.Sprintf("size %d", len(tc.pes)))
			for i, p := range tc.pes {
				assert.Equal(t, p, tm.PE(i))
				assert.Equal(t, i, tm.Index(p))
			}
			for p := -2; p < 10; p++ {
				in := false
				for _, m := range tc.pes {
					in = in || m == p
				}
				if !in {
					assert.Equal(t, -1, tm.Index(p), "PE %d is not a member", p)
				}
			}
		})
	}
	pes := []int{0, 1, 3}
	tm := listed(pes, 1)
	pes[0] = 9
	assert.Equal(t, 0, tm.PE(0), "the team keeps its own copy of the list")
}

// grid2D is what Split2D must give parent index p: its row's and its
// column's members (parent indices, team order).
func grid2D(n, xrange, p int) (row, col []int) {
	xr := min(xrange, n)
	for q := p / xr * xr; q < n && q < (p/xr+1)*xr; q++ {
		row = append(row, q)
	}
	for q := p % xr; q < n; q += xr {
		col = append(col, q)
	}
	return row, col
}

func TestGrid2DExample(t *testing.T) {
	// The spec's example: 10 PEs, xrange 3.
	row, col := grid2D(10, 3, 4)
	assert.Equal(t, []int{3, 4, 5}, row)
	assert.Equal(t, []int{1, 4, 7}, col)
	row, col = grid2D(10, 3, 9)
	assert.Equal(t, []int{9}, row)
	assert.Equal(t, []int{0, 3, 6, 9}, col)
}

// checkMembers asserts tm holds exactly the world PEs want, in order, with
// this PE (me) at its index.
func checkMembers(t *testing.T, what string, tm *Team, want []int, me int) {
	t.Helper()
	if !assert.NotNil(t, tm, what) {
		return
	}
	assert.Equal(t, len(want), tm.Size, what)
	got := make([]int, tm.Size)
	for i := range got {
		got[i] = tm.PE(i)
	}
	assert.Equal(t, want, got, what)
	assert.Equal(t, me, tm.PE(tm.Me), what)
}

// TestSplit2D: every shape at 1..8 PEs, of the world and of a reversed
// (negative-stride) parent: membership, numbering, shared slots, a reduce
// on every row and column at once, and the slots back after Destroy.
func TestSplit2D(t *testing.T) {
	for _, n := range []int{1, 2, 3, 4, 5, 8} {
		for _, reversed := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/reversed=%v", n, reversed), func(t *testing.T) {
				spmd(t, n, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
					parent := world
					if reversed {
						var err error
						if parent, err = Split(c, world, world, n-1, -1, n); err != nil {
							return err
						}
					}
					free0 := freeSlots(world)
					for xrange := 1; xrange <= n+1; xrange++ {
						what := fmt.Sprintf("PE %d, xrange %d", c.me, xrange)
						x, y, err := Split2D(c, world, parent, xrange, 0, 0)
						require.NoError(t, err, what)
						row, col := grid2D(n, xrange, parent.Me)
						toWorld := func(idx []int) []int {
							out := make([]int, len(idx))
							for i, q := range idx {
								out[i] = parent.PE(q)
							}
							return out
						}
						checkMembers(t, what+" x", x, toWorld(row), c.me)
						checkMembers(t, what+" y", y, toWorld(col), c.me)
						assert.Equal(t, parent.Me%min(xrange, n), x.Me, "%s: x.Me is the x coordinate", what)
						assert.Equal(t, parent.Me/min(xrange, n), y.Me, "%s: y.Me is the y coordinate", what)
						assert.NotEqual(t, x.Slot(), y.Slot())
						assert.Equal(t, slices.DeleteFunc(slices.Clone(free0), func(s int) bool { return s == x.Slot() || s == y.Slot() }),
							freeSlots(world), what)

						// Rows, then columns, each all at once: sum of world numbers.
						for _, tm := range []*Team{x, y} {
							view[int64](c, srcOff, 1)[0] = int64(c.me)
							if err := Reduce[int64](c, tm, OpSum, dstOff, srcOff, 1); err != nil {
								return err
							}
							want := int64(0)
							for i := range tm.Size {
								want += int64(tm.PE(i))
							}
							assert.Equal(t, want, view[int64](c, dstOff, 1)[0], what)
						}
						if err := x.Destroy(c, world); err != nil {
							return err
						}
						if err := y.Destroy(c, world); err != nil {
							return err
						}
						assert.Equal(t, free0, freeSlots(world), "%s: slots back", what)
					}
					return world.Sync(c)
				})
			})
		}
	}
}

// TestSplit2DSlotsAgree: rows and columns made on PEs whose free bitmaps
// differ still agree on their slots (the intersection over the parent).
func TestSplit2DSlotsAgree(t *testing.T) {
	spmd(t, 4, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
		// PEs 0 and 1 hold a team of their own: slot 1 is taken there only.
		pair, err := Split(c, world, world, 0, 1, 2)
		if err != nil {
			return err
		}
		x, y, err := Split2D(c, world, world, 2, 0, 0)
		if err != nil {
			return err
		}
		assert.Equal(t, 2, x.Slot(), "PE %d", c.me)
		assert.Equal(t, 3, y.Slot(), "PE %d", c.me)
		for _, tm := range []*Team{x, y} {
			if err := tm.Barrier(c); err != nil {
				return err
			}
		}
		if pair != nil {
			if err := pair.Sync(c); err != nil {
				return err
			}
		}
		return world.Sync(c)
	})
}

func TestSplit2DErrors(t *testing.T) {
	tests := []struct {
		name     string
		xrange   func(me int) int
		xcfg     func(me int) uint64
		ycfg     func(me int) uint64
		sentinel error
		want     string
	}{
		{"xrange 0 everywhere", func(int) int { return 0 }, nil, nil, errs.ErrInvalidArgument, "xrange = 0; must be >= 1"},
		{"xrange -3 everywhere", func(int) int { return -3 }, nil, nil, errs.ErrInvalidArgument, "xrange = -3"},
		{"xrange differs", func(me int) int { return 1 + me%2 }, nil, nil, errs.ErrNotSymmetric, "passed xrange"},
		{"xrange 0 on one PE", func(me int) int {
			if me == 2 {
				return 0
			}
			return 2
		}, nil, nil, errs.ErrNotSymmetric, "passed xrange"},
		{"x config differs in a row", func(int) int { return 2 }, func(me int) uint64 { return uint64(me) }, nil,
			errs.ErrNotSymmetric, "one x-axis team passed different team configurations"},
		{"y config differs in a column", func(int) int { return 2 }, nil, func(me int) uint64 { return uint64(me / 2) },
			errs.ErrNotSymmetric, "one y-axis team passed different team configurations"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spmd(t, 4, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
				free0 := freeSlots(world)
				var xc, yc uint64
				if tc.xcfg != nil {
					xc = tc.xcfg(c.me)
				}
				if tc.ycfg != nil {
					yc = tc.ycfg(c.me)
				}
				x, y, err := Split2D(c, world, world, tc.xrange(c.me), xc, yc)
				assert.Nil(t, x)
				assert.Nil(t, y)
				if assert.ErrorIs(t, err, tc.sentinel, "PE %d", c.me) {
					assert.Contains(t, err.Error(), tc.want)
					assert.Contains(t, err.Error(), fmt.Sprintf("PE %d: TeamSplit2D", c.me))
				}
				assert.Equal(t, free0, freeSlots(world), "no slot taken by a failed split")
				return world.Barrier(c) // still in step
			})
		})
	}
	// Configurations that differ between the rows (or columns) are fine.
	spmd(t, 4, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
		x, y, err := Split2D(c, world, world, 2, uint64(c.me/2), uint64(c.me%2))
		if err != nil {
			return err
		}
		return joinSync(c, x, y)
	})
}

func joinSync(c Comm, teams ...*Team) error {
	for _, tm := range teams {
		if err := tm.Sync(c); err != nil {
			return err
		}
	}
	return nil
}

// TestSplit2DSlotsExhausted: two free slots are needed on every member.
func TestSplit2DSlotsExhausted(t *testing.T) {
	spmd(t, 2, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
		var teams []*Team
		for range testTeams - 2 {
			tm, err := Split(c, world, world, 0, 1, 2)
			if err != nil {
				return err
			}
			teams = append(teams, tm)
		}
		x, y, err := Split2D(c, world, world, 1, 0, 0)
		assert.Nil(t, x)
		assert.Nil(t, y)
		if assert.ErrorIs(t, err, errs.ErrInvalidArgument) {
			assert.Contains(t, err.Error(), "need 2 free team slots; 1 of 64 (GOSHMEM_MAX_TEAMS) are free on every parent member")
		}
		teams[0].Destroy(c, world)
		x, y, err = Split2D(c, world, world, 1, 0, 0)
		if err != nil {
			return err
		}
		return joinSync(c, x, y)
	})
}

// TestSplitConfig: the members of the new team must agree on its
// configuration; parent PEs outside it may pass anything.
func TestSplitConfig(t *testing.T) {
	spmd(t, 4, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
		// Evens agree (7); odds are outside and pass their own numbers.
		cfg := uint64(7)
		if c.me%2 == 1 {
			cfg = uint64(c.me)
		}
		evens, err := SplitConfig(c, world, world, 0, 2, 2, cfg)
		if err != nil {
			return err
		}
		assert.Equal(t, c.me%2 == 0, evens != nil)
		// PE 2 differs from PE 0: every PE fails alike.
		cfg = 7
		if c.me == 2 {
			cfg = 8
		}
		tm, err := SplitConfig(c, world, world, 0, 2, 2, cfg)
		assert.Nil(t, tm)
		if assert.ErrorIs(t, err, errs.ErrNotSymmetric, "PE %d", c.me) {
			assert.Contains(t, err.Error(), "PE 0 passed 7, PE 2 passed 8")
		}
		if evens != nil {
			if err := evens.Barrier(c); err != nil {
				return err
			}
		}
		return world.Barrier(c)
	})
}

// TestPredefinedNodes: node teams from an irregular node map (the first
// node's PEs are not strided): each node's team on the same slot, its
// collectives, and splits inside it (strided and 2D).
func TestPredefinedNodes(t *testing.T) {
	node := []int{0, 1, 0, 0, 1, 2}
	spmd(t, len(node), func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
		var pes []int
		for p, nd := range node {
			if nd == node[c.me] {
				pes = append(pes, p)
			}
		}
		nt, err := Predefined(c, world, pes)
		if err != nil {
			return err
		}
		assert.Equal(t, 1, nt.Slot())
		assert.Equal(t, node[c.me] != 0, nt.Strided(), "only node 0 {0, 2, 3} is not strided")
		checkMembers(t, "node team", nt, pes, c.me)

		view[int64](c, srcOff, 1)[0] = int64(c.me + 1)
		if err := Reduce[int64](c, nt, OpSum, dstOff, srcOff, 1); err != nil {
			return err
		}
		want := int64(0)
		for _, p := range pes {
			want += int64(p + 1)
		}
		assert.Equal(t, want, view[int64](c, dstOff, 1)[0])
		copy(c.Local(srcOff, 1), []byte{byte(c.me)})
		if err := FCollect(c, nt, dstOff, srcOff, 1); err != nil {
			return err
		}
		want8 := make([]byte, len(pes))
		for i, p := range pes {
			want8[i] = byte(p)
		}
		assert.Equal(t, want8, c.Local(dstOff, len(pes)))
		got, err := nt.Exchange(c, []byte{byte(c.me)})
		if err != nil {
			return err
		}
		for i, b := range got {
			assert.Equal(t, byte(pes[i]), b[0])
		}

		// Splits of the listed team: its last two ({2, 3}: strided again),
		// a reversal (listed), and a 2D split 2 wide.
		if node[c.me] == 0 {
			tail, err := Split(c, world, nt, 1, 1, 2)
			if err != nil {
				return err
			}
			if c.me == 0 {
				assert.Nil(t, tail)
			} else {
				checkMembers(t, "tail", tail, []int{2, 3}, c.me)
				assert.True(t, tail.Strided())
				assert.NoError(t, tail.Barrier(c))
			}
			rev, err := Split(c, world, nt, 2, -1, 3)
			if err != nil {
				return err
			}
			checkMembers(t, "reversed", rev, []int{3, 2, 0}, c.me)
			assert.False(t, rev.Strided())
			assert.NoError(t, rev.Barrier(c))
			x, y, err := Split2D(c, world, nt, 2, 0, 0)
			if err != nil {
				return err
			}
			row, col := map[int][]int{0: {0, 2}, 2: {0, 2}, 3: {3}}, map[int][]int{0: {0, 3}, 3: {0, 3}, 2: {2}}
			checkMembers(t, "row", x, row[c.me], c.me)
			checkMembers(t, "column", y, col[c.me], c.me)
			assert.NoError(t, joinSync(c, x, y))
		}
		return world.Barrier(c)
	})
}

func TestPredefinedErrors(t *testing.T) {
	spmd(t, 3, func(c *fakeComm, world *Team, _ bootstrap.Bootstrap) error {
		for _, pes := range [][]int{nil, {(c.me + 1) % 3}, {c.me, c.me}, {c.me, 3}, {-1, c.me}} {
			tm, err := Predefined(c, world, pes)
			assert.Nil(t, tm)
			assert.ErrorIs(t, err, errs.ErrInvalidArgument, "members %v", pes)
		}
		assert.Equal(t, slotRange(1, testTeams), freeSlots(world))
		return nil
	})
}
