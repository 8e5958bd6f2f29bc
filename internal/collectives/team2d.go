package collectives

import (
	"github.com/goshmem/goshmem/internal/errs"
)

// Teams beyond strided splits: the 2D split, teams given by their member
// list (a node's PEs), and the helpers Split shares with them.

// Strided reports whether t is {Start + i*Stride}; false for a team given
// by its member list (then only PE and Index describe it).
func (t *Team) Strided() bool { return t.pes == nil }

// memberOf is the index in the strided set {start + k*stride : k < size} of
// parent index i, or -1.
func memberOf(i, start, stride, size int) int {
	d := i - start
	if stride == 0 {
		if d == 0 {
			return 0
		}
		return -1
	}
	if d%stride != 0 || d/stride < 0 || d/stride >= size {
		return -1
	}
	return d / stride
}

// sub is the team of t's members start + k*stride (k < size, indices in t)
// on psync slot, as this PE (world number me) holds it, or nil when me is
// not among them. A strided t gives a strided team; a listed t gives a
// strided team when the members happen to be evenly strided in the world.
func (t *Team) sub(start, stride, size, slot, me int) *Team {
	var n *Team
	if t.pes == nil {
		n = &Team{Start: t.PE(start), Stride: stride * t.Stride, Size: size, slot: slot}
		if size == 1 {
			n.Stride = 1
		}
	} else {
		pes := make([]int, size)
		for k := range pes {
			pes[k] = t.PE(start + k*stride)
		}
		n = listed(pes, slot)
	}
	n.ly = t.ly
	n.Me = n.Index(me)
	if n.Me < 0 {
		return nil
	}
	return n
}

// listed is the team of the world PEs pes (team order) on slot: strided
// when pes is an arithmetic progression, else listed. pes has no repeats.
func listed(pes []int, slot int) *Team {
	t := &Team{Start: pes[0], Stride: 1, Size: len(pes), slot: slot}
	if len(pes) == 1 {
		return t
	}
	t.Stride = pes[1] - pes[0]
	for k, p := range pes {
		if p != pes[0]+k*t.Stride {
			t.Stride = 0
			t.pes = append([]int(nil), pes...)
			break
		}
	}
	return t
}

// Predefined makes a team of the world PEs pes (in team order; this PE
// among them) on the lowest psync slot free in world's bitmap, without
// communicating. Every PE must call it at the same point of its life
// (Init, before any split), so that every PE's bitmap is the same and the
// slot agrees across the team's members; disjoint teams made this way (one
// per node) share the slot number, each on its own members' words.
func Predefined(c Comm, world *Team, pes []int) (*Team, error) {
	me := c.MyPE()
	avail, own := world.slots.available()
	slots, err := takeSlots(me, "Init", avail, own, world.slots.n, 1, 0)
	if err != nil {
		return nil, err
	}
	seen := make(map[int]bool, len(pes))
	for _, p := range pes {
		if p < 0 || p >= c.NPEs() || seen[p] {
			return nil, errs.New(errs.ErrInvalidArgument, me, "Init", "team members %v: PE %d repeated or outside [0, %d)", pes, p, c.NPEs())
		}
		seen[p] = true
	}
	if len(pes) == 0 || !seen[me] {
		return nil, errs.New(errs.ErrInvalidArgument, me, "Init", "team members %v do not include this PE", pes)
	}
	t := listed(pes, slots[0])
	t.Me = t.Index(me)
	t.ly = world.ly
	if !world.slots.claim(slots) {
		return nil, errs.New(errs.ErrInvalidArgument, me, "Init", "team slot %d was taken meanwhile (a team split ran during Init)", t.slot)
	}
	world.slots.settle(slots, true)
	return t, nil
}

// Split2D splits parent into the rows and columns of a grid xrange wide
// (Ref: OpenSHMEM 1.6 §9.4.7 shmem_team_split_2d), collectively over
// parent: parent index p is at (p mod xr, p div xr), xr = min(xrange,
// parent.Size). x is this PE's row (the xr consecutive parent members of
// its y coordinate; the last row may be shorter), numbered by x
// coordinate; y is its column (the members with its x coordinate, stride
// xr), numbered by y coordinate. Every parent member gets both teams.
//
// Every member passes the same xrange, else every member gets
// ErrNotSymmetric; xrange < 1 is ErrInvalidArgument on every member. The
// check runs after the exchange (a PE with a bad xrange still takes part),
// so PEs that disagree all fail instead of some waiting. xcfg and ycfg
// are the new teams' configurations (as in SplitConfig: at least 0, else
// ErrInvalidArgument on every member): members of one new team must pass
// the same. All rows share one psync slot and
// all columns another (rows are disjoint, so are columns): the split costs
// one exchange over parent, whatever the number of teams. On any failure
// no team is made on any member.
func Split2D(c Comm, world, parent *Team, xrange int, xcfg, ycfg uint64) (x, y *Team, err error) {
	const op = "TeamSplit2D"
	me := c.MyPE()
	var args [24]byte
	putU64(args[0:], uint64(int64(xrange)))
	putU64(args[8:], xcfg)
	putU64(args[16:], ycfg)
	n := parent.Size
	xr := max(1, min(xrange, n))
	slots, err := splitSlots(c, world, parent, KindSplit2D, op, args[:], 2, true, func(all [][]byte) error {
		for i, b := range all {
			if got := int64(getU64(b[0:])); got != int64(xrange) {
				return errs.New(errs.ErrNotSymmetric, me, op,
					"PE %d passed xrange %d, this PE passed %d (every parent member must pass the same)", parent.PE(i), got, xrange)
			}
		}
		if xrange < 1 {
			return errs.New(errs.ErrInvalidArgument, me, op, "xrange = %d; must be >= 1", xrange)
		}
		if err := badConfig(me, op, parent, all, 8); err != nil {
			return err
		}
		if err := badConfig(me, op, parent, all, 16); err != nil {
			return err
		}
		for i, b := range all {
			if hx := i / xr * xr; getU64(b[8:]) != getU64(all[hx][8:]) {
				return errs.New(errs.ErrNotSymmetric, me, op,
					"members of one x-axis team passed different team configurations: PE %d passed %d, PE %d passed %d",
					parent.PE(hx), getU64(all[hx][8:]), parent.PE(i), getU64(b[8:]))
			}
			if hy := i % xr; getU64(b[16:]) != getU64(all[hy][16:]) {
				return errs.New(errs.ErrNotSymmetric, me, op,
					"members of one y-axis team passed different team configurations: PE %d passed %d, PE %d passed %d",
					parent.PE(hy), getU64(all[hy][16:]), parent.PE(i), getU64(b[16:]))
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	p := parent.Me
	row, col := p/xr, p%xr
	x = parent.sub(row*xr, 1, min(xr, n-row*xr), slots[0], me)
	y = parent.sub(col, xr, (n-1-col)/xr+1, slots[1], me)
	return x, y, nil
}
