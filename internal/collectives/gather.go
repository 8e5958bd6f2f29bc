package collectives

import (
	"unsafe"

	"github.com/goshmem/goshmem/internal/elem"
)

// The small data collectives (a contribution of up to TeamScratchSize
// bytes per member) take one sync instead of two. Each member copies its
// contribution into its team scratch buffer, syncs, and then reads what it
// needs from the members' buffers (plain loads where this PE maps them,
// Get otherwise) and writes only its own dest. No member writes another's
// dest, so no sync has to say that every dest is free; and the source is
// free for reuse once it is copied.
//
// A team has two buffers per PE and a collective whose (first) sync has
// epoch e publishes into buffer e&1 (teamScratchOff). Publishing into it
// again at epoch e' >= e+2 is safe: the publisher has returned from sync
// e'-1 >= e+1, so every member has arrived there, and a member reads the
// buffers of collective e only between its sync e and its next sync, e+1.
// Syncs in between (a closing barrier, Team.Sync) only widen the gap.

// publish is this member's scratch buffer [0, n) for the collective whose
// first sync is the next one (n <= TeamScratchSize).
func (t *Team) publish(c Comm, n int) []byte {
	return c.Local(t.ly.teamScratchOff(t.slot, t.epoch+1), n)
}

// published is the offset of the buffers of the collective whose first
// sync was the latest.
func (t *Team) published() uint64 { return t.ly.teamScratchOff(t.slot, t.epoch) }

// mem is member i's memory [off, off+n) when this PE maps it (its own
// always), else nil.
func (t *Team) mem(c Comm, i int, off uint64, n int) []byte {
	if i == t.Me {
		return c.Local(off, n)
	}
	if dc, ok := c.(Direct); ok {
		return dc.Mem(t.PE(i), off, n)
	}
	return nil
}

// maps reports whether this PE reaches member i's memory by loads and
// stores. Reach is mutual (PEs of one node reach each other), so two
// members agree on which of them moves a block between them.
func (t *Team) maps(c Comm, i int) bool { return t.mem(c, i, 0, 0) != nil }

// readInto copies member i's memory [off, off+len(dst)) into dst.
func (t *Team) readInto(c Comm, dst []byte, i int, off uint64) error {
	if len(dst) == 0 {
		return nil
	}
	if m := t.mem(c, i, off, len(dst)); m != nil {
		memcopy(dst, m)
		return nil
	}
	return c.Get(dst, t.PE(i), off)
}

// copyChunk bounds each copy of memcopy: Go's memmove switches to
// non-temporal stores at 1 MiB, which bypass the caches, so a reader of the
// data soon after (a peer, or this PE's next collective) misses; below it
// copies stay cached. The shm transport's Put and Get copy the same way.
const copyChunk = 512 << 10

// memcopy is copy(dst, src) in pieces of at most copyChunk bytes.
func memcopy(dst, src []byte) {
	for len(src) > copyChunk && len(dst) > copyChunk {
		copy(dst[:copyChunk], src[:copyChunk])
		dst, src = dst[copyChunk:], src[copyChunk:]
	}
	copy(dst, src)
}

// view is member i's memory [off, off+n): the mapping itself when this PE
// maps it, else a copy read with Get into the team's view buffer k (0 or
// 1; valid until the next view into the same buffer).
func (t *Team) view(c Comm, i int, off uint64, n, k int) ([]byte, error) {
	if n == 0 {
		return nil, nil
	}
	if m := t.mem(c, i, off, n); m != nil {
		return m, nil
	}
	b := t.buffer(k, n)
	if err := c.Get(b, t.PE(i), off); err != nil {
		return nil, err
	}
	return b, nil
}

// buffer is the team's private buffer k of at least n bytes (8-byte
// aligned, grown as needed and then reused, so steady-state calls do not
// allocate).
func (t *Team) buffer(k, n int) []byte {
	if cap(t.bufs[k]) < n {
		words := make([]uint64, (max(n, TeamScratchSize)+7)/8)
		t.bufs[k] = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(words)*8)
	}
	return t.bufs[k][:n]
}

// asT views b (aligned for T, a multiple of its size) as elements.
func asT[T elem.Elem](b []byte) []T {
	if len(b) == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/elem.Size[T]())
}
