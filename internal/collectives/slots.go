package collectives

import (
	"math/bits"
	"sync"

	"github.com/goshmem/goshmem/internal/errs"
)

// Psync slots under concurrent splits. A split agrees with its parent's
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

// slotTable is this PE's record of its psync slots, shared by every team of
// the PE through the world team; safe for concurrent use.
type slotTable struct {
	mu      sync.Mutex
	free    uint64 // bit set: no team of this PE holds the slot
	pending uint64 // bit set: a split in progress on this PE claimed it
}

// available is the slots a new split may pick: free and not claimed.
func (s *slotTable) available() uint64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.free &^ s.pending
}

// claim marks the slots of mask pending if every one is available, and
// reports whether it did.
func (s *slotTable) claim(mask uint64) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if (s.free&^s.pending)&mask != mask {
		return false
	}
	s.pending |= mask
	return true
}

// settle ends a claim of mask: the slots are taken (keep) or available
// again.
func (s *slotTable) settle(mask uint64, keep bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending &^= mask
	if keep {
		s.free &^= mask
	}
}

// release frees the slots of mask (a team destroyed).
func (s *slotTable) release(mask uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free |= mask
}

// splitSlots is a split's exchange over parent (kind k, naming op): buf is
// this PE's contribution, whose first 8 bytes it fills with this PE's
// available slots; check validates the exchanged contributions (the same
// verdict on every member: they read the same). It then agrees on n slots
// free on every parent member, claimed on this PE when joins (this PE is a
// member of a new team; the others never use the slot), and returns them,
// taken on this PE when joins. On any error no slot is taken.
func splitSlots(c Comm, world, parent *Team, k Kind, op string, buf []byte, n int, joins bool, check func(all [][]byte) error) ([]int, error) {
	me := c.MyPE()
	for attempt := 0; ; attempt++ {
		putU64(buf[0:], world.slots.available())
		all, err := parent.ExchangeAs(c, k, buf)
		if err != nil {
			return nil, err
		}
		if attempt == 0 {
			if err := check(all); err != nil {
				return nil, err
			}
		}
		free := ^uint64(0)
		for _, b := range all {
			free &= getU64(b[0:])
		}
		rot := 0
		if attempt > 0 {
			rot = parent.slot + attempt
		}
		slots, err := takeSlots(me, op, free, n, rot)
		if err != nil {
			return nil, err
		}
		var mask uint64
		for _, s := range slots {
			mask |= 1 << s
		}
		held := !joins || world.slots.claim(mask)
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
			world.slots.settle(mask, all0)
		}
		if err != nil {
			return nil, err
		}
		if all0 {
			return slots, nil
		}
		if attempt+1 == maxSplitAttempts {
			return nil, errs.New(errs.ErrTimeout, me, op,
				"no psync slot agreed after %d attempts: concurrent team splits on other teams kept taking the chosen slots", maxSplitAttempts)
		}
	}
}

// takeSlots picks n psync slots set in free (the intersection of the
// parent members' available bitmaps): the lowest, or with rot > 0 the n
// consecutive set bits (wrapping) after skipping rot mod the number of set
// bits; or fails naming op.
func takeSlots(me int, op string, free uint64, n, rot int) ([]int, error) {
	cnt := bits.OnesCount64(free)
	if cnt < n {
		if n == 1 {
			return nil, errs.Hint(errs.ErrInvalidArgument, "destroy teams that are no longer used",
				me, op, "all %d team slots are in use", MaxTeams)
		}
		return nil, errs.Hint(errs.ErrInvalidArgument, "destroy teams that are no longer used",
			me, op, "%d new teams per PE need %d free team slots; %d of %d slots are free on every parent member",
			n, n, cnt, MaxTeams)
	}
	set := make([]int, 0, cnt)
	for f := free; f != 0; f &= f - 1 {
		set = append(set, bits.TrailingZeros64(f))
	}
	slots := make([]int, n)
	for i := range slots {
		slots[i] = set[(rot+i)%cnt]
	}
	return slots, nil
}
