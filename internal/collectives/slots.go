package collectives

import (
	"math/bits"
	"sync"

	"github.com/goshmem/goshmem/internal/errs"
)

// Team slots under concurrent splits. A split agrees with its parent's
// members on slots free on every one of them. Splits of different parents
// may run at once on one PE (from different goroutines), and two of them
// can pick the same slot from their snapshots of the PE's free slots; so a
// split claims its slots on this PE (pending) and the members then confirm
// to each other that every claim held. A split whose claim failed anywhere
// lets go of its claims and tries again with a fresh snapshot (which leaves
// out slots other splits hold pending). Claims never wait, so a split never
// waits for another team's collective to progress; a split that lost a
// slot retries on another one, and a retry's choice is rotated by the
// parent's slot (distinct among teams that share a PE), so two splits that
// keep colliding soon pick different slots.

// maxSplitAttempts bounds a split's retries after lost claims.
const maxSplitAttempts = 64

// slotTable is this PE's record of its team slots, shared by every team of
// the PE through the world team; safe for concurrent use. A bitmap has one
// bit per slot in words of 64 (slot s: bit s%64 of word s/64); bits past n
// are never set.
type slotTable struct {
	mu      sync.Mutex
	n       int      // slots (Layout.MaxTeams)
	free    []uint64 // bit set: no team of this PE holds the slot
	pending []uint64 // bit set: a split in progress on this PE claimed it
}

// newSlotTable is the table of n slots with slot 0 (the world team's)
// taken.
func newSlotTable(n int) *slotTable {
	w := (n + 63) / 64
	s := &slotTable{n: n, free: make([]uint64, w), pending: make([]uint64, w)}
	for i := range s.free {
		s.free[i] = ^uint64(0)
	}
	if r := n % 64; r != 0 {
		s.free[w-1] = 1<<r - 1
	}
	s.free[0] &^= 1
	return s
}

// words is the length of the table's bitmaps.
func (s *slotTable) words() int { return len(s.free) }

// available is the slots a new split may pick (free and not claimed), as a
// bitmap, and how many they are.
func (s *slotTable) available() ([]uint64, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]uint64, len(s.free))
	cnt := 0
	for i, f := range s.free {
		out[i] = f &^ s.pending[i]
		cnt += bits.OnesCount64(out[i])
	}
	return out, cnt
}

func bit(slot int) (int, uint64) { return slot / 64, 1 << (slot % 64) }

// claim marks slots pending if every one is available, and reports
// whether it did.
func (s *slotTable) claim(slots []int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range slots {
		if w, b := bit(sl); (s.free[w]&^s.pending[w])&b == 0 {
			return false
		}
	}
	for _, sl := range slots {
		w, b := bit(sl)
		s.pending[w] |= b
	}
	return true
}

// settle ends a claim of slots: they are taken (keep) or available again.
func (s *slotTable) settle(slots []int, keep bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sl := range slots {
		w, b := bit(sl)
		s.pending[w] &^= b
		if keep {
			s.free[w] &^= b
		}
	}
}

// release frees slot (its team destroyed).
func (s *slotTable) release(slot int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w, b := bit(slot)
	s.free[w] |= b
}

// splitSlots is a split's exchange over parent (kind k, naming op): this
// PE contributes args followed by its available slots' bitmap; check
// validates the exchanged contributions (the same verdict on every member:
// they read the same), each starting with its member's args. It then
// agrees on n slots free on every parent member, claimed on this PE when
// joins (this PE is a member of a new team; the others never use the
// slot), and returns them, taken on this PE when joins. On any error no
// slot is taken.
func splitSlots(c Comm, world, parent *Team, k Kind, op string, args []byte, n int, joins bool, check func(all [][]byte) error) ([]int, error) {
	me := c.MyPE()
	st := world.slots
	buf := make([]byte, len(args)+8*st.words())
	copy(buf, args)
	free := make([]uint64, st.words())
	for attempt := 0; ; attempt++ {
		avail, own := st.available()
		for i, w := range avail {
			putU64(buf[len(args)+8*i:], w)
		}
		all, err := parent.ExchangeAs(c, k, buf)
		if err != nil {
			return nil, err
		}
		if attempt == 0 {
			if err := check(all); err != nil {
				return nil, err
			}
		}
		for i := range free {
			free[i] = ^uint64(0)
		}
		for _, b := range all {
			for i := range free {
				free[i] &= getU64(b[len(args)+8*i:])
			}
		}
		rot := 0
		if attempt > 0 {
			rot = parent.slot + attempt
		}
		slots, err := takeSlots(me, op, free, own, st.n, n, rot)
		if err != nil {
			return nil, err
		}
		held := !joins || st.claim(slots)
		var ok [8]byte
		if held {
			ok[0] = 1
		}
		res, err := parent.ExchangeAs(c, k, ok[:])
		all0 := err == nil
		for _, b := range res {
			all0 = all0 && b[0] == 1
		}
		if joins && held {
			st.settle(slots, all0)
		}
		if err != nil {
			return nil, err
		}
		if all0 {
			return slots, nil
		}
		if attempt+1 == maxSplitAttempts {
			return nil, errs.New(errs.ErrTimeout, me, op,
				"no team slot agreed after %d attempts: concurrent team splits on other teams kept taking the chosen slots", maxSplitAttempts)
		}
	}
}

// teamsHint is what a user does about too few team slots.
const teamsHint = "destroy teams that are no longer used, or raise GOSHMEM_MAX_TEAMS (the same value on every PE)"

// takeSlots picks n slots set in free (the intersection of the parent
// members' available bitmaps; this PE has own slots available of total):
// the lowest, or with rot > 0 the n consecutive set bits (wrapping) after
// skipping rot mod the number of set bits; or fails naming op.
func takeSlots(me int, op string, free []uint64, own, total, n, rot int) ([]int, error) {
	cnt := 0
	for _, w := range free {
		cnt += bits.OnesCount64(w)
	}
	if cnt < n {
		switch {
		case n == 1 && own == 0:
			return nil, errs.Hint(errs.ErrInvalidArgument, teamsHint,
				me, op, "all %d team slots (GOSHMEM_MAX_TEAMS) are in use", total)
		case n == 1:
			return nil, errs.Hint(errs.ErrInvalidArgument, teamsHint,
				me, op, "%d of %d team slots (GOSHMEM_MAX_TEAMS) are in use on this PE, and none of the others is free on every parent member",
				total-own, total)
		}
		return nil, errs.Hint(errs.ErrInvalidArgument, teamsHint,
			me, op, "%d new teams per PE need %d free team slots; %d of %d (GOSHMEM_MAX_TEAMS) are free on every parent member",
			n, n, cnt, total)
	}
	skip := rot % cnt
	slots := make([]int, 0, n)
	// Two passes over the set bits at most: from the skip-th one, wrapping.
	for pass := 0; pass < 2 && len(slots) < n; pass++ {
		i := 0
		for wi, w := range free {
			for ; w != 0; w &= w - 1 {
				if pass == 0 && i < skip {
					i++
					continue
				}
				if pass == 1 && i >= skip {
					return slots, nil
				}
				slots = append(slots, wi*64+bits.TrailingZeros64(w))
				i++
				if len(slots) == n {
					return slots, nil
				}
			}
		}
	}
	return slots, nil
}
