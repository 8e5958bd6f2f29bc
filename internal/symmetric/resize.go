package symmetric

import "sort"

// Resize changes the live block that starts at off to n bytes (rounded up
// to the minimum alignment) without moving it, when it can: a smaller
// size returns the block's tail to the free list (to quarantine while
// quarantine is on); a larger one takes the free space that starts right
// where the block ends, if that is enough. It reports whether the block
// now has the new size; false leaves everything unchanged (the caller
// then allocates elsewhere and copies). Like Alloc and Free it depends on
// nothing but its arguments and the allocator's state, so every PE that
// makes the same calls gets the same answer.
//
// Errors: n == 0 → ErrInvalidSize (Free the block instead); off not the
// start of a live block → ErrNotAllocated.
func (a *Allocator) Resize(off, n uint64) (bool, error) {
	if n == 0 {
		return false, invalidArg(ErrInvalidSize, "resize of the block at %d to 0 bytes", off)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	sz, ok := a.used[off]
	if !ok {
		return false, a.notAllocated("resize", off)
	}
	if n > a.total {
		return false, nil // cannot fit, and rounding could overflow
	}
	nsz := (n + a.minAlign - 1) &^ (a.minAlign - 1)
	switch {
	case nsz == sz:
		return true, nil
	case nsz < sz:
		tail := sz - nsz
		a.used[off] = nsz
		a.usedBytes -= tail
		if a.quarantine {
			a.quar[off+nsz] = tail
			a.quarBytes += tail
		} else {
			a.insertFree(off+nsz, tail)
		}
		return true, nil
	}
	end, more := off+sz, nsz-sz
	i := sort.Search(len(a.free), func(j int) bool { return a.free[j].Off >= end })
	if i == len(a.free) || a.free[i].Off != end || a.free[i].Size < more {
		return false, nil
	}
	a.carve(i, end, more)
	a.used[off] = nsz
	a.usedBytes += more
	a.freeBytes -= more
	return true, nil
}
