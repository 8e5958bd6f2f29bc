package collectives

import (
	"sync/atomic"

	pub "github.com/goshmem/goshmem/collectives"
	"github.com/goshmem/goshmem/internal/memord"
)

// The data collectives below take symmetric byte offsets (already bounds-
// checked by the caller) and follow OpenSHMEM 1.6 §9.9 semantics: every
// member calls them with the same arguments; on return the PE's dest holds
// the result and source may be reused. Their syncs carry the collective's
// kind (a member calling another collective is found there), and a put or
// get that fails between them leaves the team out of step (the other
// members go on without this PE).
//
// Up to TeamScratchSize bytes per member they take one sync: each member
// publishes its contribution in the team scratch and, after the sync,
// builds its own dest from the members' scratch (gather.go). Larger ones
// start with a sync, so no member writes into a dest another member is
// still reading from a previous collective and every member's source holds
// this call's data, and end with a barrier, so every put has landed
// everywhere and no source is read after its owner returned. Between the
// two, each member reads what it needs from the members it maps (shared
// memory on one node) and puts into the others (Team.exchange).

// Broadcast copies root's source[0:nbytes) into dest on every member, root
// included (Ref: OpenSHMEM 1.6 §9.9 shmem_broadcast). Non-roots pull from
// the root, spreading the copy work over the members. Past the team
// scratch, the call ends with the root waiting for every reader (done
// lines) rather than with a barrier: nothing else must outlive the reads.
func Broadcast(c Comm, t *Team, dst, src uint64, nbytes int, root int) error {
	if nbytes <= TeamScratchSize {
		if t.Me == root {
			copy(t.publish(c, nbytes), c.Local(src, nbytes))
		}
		if err := t.SyncAs(c, KindBroadcast); err != nil {
			return err
		}
		d := c.Local(dst, nbytes)
		if t.Me == root {
			copy(d, c.Local(src, nbytes))
			return nil
		}
		if err := t.readInto(c, d, root, t.published()); err != nil {
			return t.abort(KindBroadcast, err)
		}
		return nil
	}
	if err := t.SyncAs(c, KindBroadcast); err != nil {
		return err
	}
	d := c.Local(dst, nbytes)
	if t.Me == root {
		memcopy(d, c.Local(src, nbytes))
	} else if err := t.readInto(c, d, root, src); err != nil {
		return t.abort(KindBroadcast, err)
	}
	if t.Size-1 > doneLines {
		return t.BarrierAs(c, KindBroadcast)
	}
	// Only the root's source must outlive the readers: they tell the root
	// they are done, and only the root waits.
	if t.Me != root {
		if err := t.signalDone(c, root, KindBroadcast); err != nil {
			return t.abort(KindBroadcast, err)
		}
		return nil
	}
	if err := t.waitDone(c, KindBroadcast); err != nil {
		return t.abort(KindBroadcast, err)
	}
	return nil
}

// The done lines: the upper half of a team's psync lines, beyond those of
// its syncs (a flat sync uses lines [0, flatMax), a dissemination barrier
// of up to 2^flatMax members no more), carry "finished reading" words from
// the members to a collective's root: member j's word at the root is line
// doneBase + (j - root - 1) mod size. Per root and line there is one
// writer, and its words' epochs grow, so plain stores do.
const (
	doneBase  = flatMax
	doneLines = MaxRounds - doneBase
)

func (t *Team) doneLine(j, root int) uint64 {
	return t.psyncOff(doneBase + (j-root-1+t.Size)%t.Size)
}

// signalDone tells root that this member has finished collective k of the
// latest sync (its reads of the root's memory returned).
func (t *Team) signalDone(c Comm, root int, k Kind) error {
	off, v := t.doneLine(t.Me, root), psyncWord(t.epoch, k)
	if dc, ok := c.(Direct); ok {
		if w := dc.Word(t.PE(root), off); w != nil {
			memord.StoreRelease64(w, v)
			return nil
		}
	}
	return c.Signal(t.PE(root), off, v)
}

// waitDone waits, on the root, until every other member has signalled
// done for the latest sync.
func (t *Team) waitDone(c Comm, k Kind) error {
	base := t.epoch << epochShift
	for j := 0; j < t.Size; j++ {
		if j == t.Me {
			continue
		}
		off := t.doneLine(j, t.Me)
		if atomic.LoadUint64(localWord(c, off)) >= base {
			continue
		}
		w := Wait{Team: t, Kind: k, Epoch: t.epoch, From: t.PE(j), Done: true}
		if err := c.WaitGE(off, base, w); err != nil {
			return err
		}
	}
	return nil
}

// FCollect concatenates every member's source[0:nbytes) into dest in team
// order (Ref: OpenSHMEM 1.6 §9.9 shmem_fcollect): member i's block lands at
// i*nbytes.
func FCollect(c Comm, t *Team, dst, src uint64, nbytes int) error {
	if nbytes <= TeamScratchSize {
		copy(t.publish(c, nbytes), c.Local(src, nbytes))
		if err := t.SyncAs(c, KindFCollect); err != nil {
			return err
		}
		for i := 0; i < t.Size; i++ {
			d := c.Local(dst+uint64(i*nbytes), nbytes)
			if err := t.readInto(c, d, i, t.published()); err != nil {
				return t.abort(KindFCollect, err)
			}
		}
		return nil
	}
	if err := t.SyncAs(c, KindFCollect); err != nil {
		return err
	}
	for k := 0; k < t.Size; k++ {
		i := (t.Me + k) % t.Size // stagger so members do not all hit one PE first
		err := t.exchange(c, i, dst+uint64(i*nbytes), src, dst+uint64(t.Me*nbytes), src, nbytes)
		if err != nil {
			return t.abort(KindFCollect, err)
		}
	}
	return t.BarrierAs(c, KindFCollect)
}

// AllToAll sends block j (nbytes each) of this member's source to member j,
// where it lands at block Me of dest (Ref: OpenSHMEM 1.6 §9.9
// shmem_alltoall).
func AllToAll(c Comm, t *Team, dst, src uint64, nbytes int) error {
	if t.Size*nbytes <= TeamScratchSize {
		copy(t.publish(c, t.Size*nbytes), c.Local(src, t.Size*nbytes))
		if err := t.SyncAs(c, KindAllToAll); err != nil {
			return err
		}
		for i := 0; i < t.Size; i++ {
			d := c.Local(dst+uint64(i*nbytes), nbytes)
			if err := t.readInto(c, d, i, t.published()+uint64(t.Me*nbytes)); err != nil {
				return t.abort(KindAllToAll, err)
			}
		}
		return nil
	}
	if err := t.SyncAs(c, KindAllToAll); err != nil {
		return err
	}
	for k := 0; k < t.Size; k++ {
		i := (t.Me + k) % t.Size
		err := t.exchange(c, i, dst+uint64(i*nbytes), src+uint64(t.Me*nbytes), dst+uint64(t.Me*nbytes), src+uint64(i*nbytes), nbytes)
		if err != nil {
			return t.abort(KindAllToAll, err)
		}
	}
	return t.BarrierAs(c, KindAllToAll)
}

// bypassBytes: when the members of a data phase together write at least
// this much into their dests (Size x Size blocks), the dests cannot stay in
// a node's caches anyway, so exchange leaves a block to copy rather than
// memcopy: from 1 MiB Go's copy uses non-temporal stores, which skip the
// read of each dest line before it is written (a third of the memory
// traffic of a copy whose dest misses the caches).
const bypassBytes = 64 << 20

// exchange moves the data between this member and member i of a
// collective's data phase (past the team scratch, after its first sync):
// member i's block at its offset from (n bytes) into this member's dest at
// to, and this member's block at mine into member i's dest at theirs. A
// member this PE maps is read in place (each member pulls what lands in its
// own dest, so the dest is in its own cache afterwards); any other is
// written with Put, and it puts this member's block likewise (load/store
// reach is mutual: peers on one node), so each block moves once.
func (t *Team) exchange(c Comm, i int, to, from, theirs, mine uint64, n int) error {
	if n == 0 {
		return nil
	}
	if t.maps(c, i) {
		d, s := c.Local(to, n), t.mem(c, i, from, n)
		if t.Size*t.Size*n >= bypassBytes {
			copy(d, s)
		} else {
			memcopy(d, s)
		}
		return nil
	}
	return c.Put(t.PE(i), theirs, c.Local(mine, n))
}

// Op is a reduction operator, defined in the public package
// github.com/goshmem/goshmem/collectives.
type Op = pub.Op

// The reduction operators.
const (
	OpSum  = pub.OpSum
	OpProd = pub.OpProd
	OpMin  = pub.OpMin
	OpMax  = pub.OpMax
	OpAnd  = pub.OpAnd
	OpOr   = pub.OpOr
	OpXor  = pub.OpXor
)

// chunk splits n elements over size members, keeping chunks a multiple of
// 8 elements where possible so cache lines are not shared between writers.
func chunk(n, size, i int) (lo, hi int) {
	per := (n + size - 1) / size
	per = (per + 7) &^ 7
	lo = i * per
	hi = lo + per
	if lo > n {
		lo = n
	}
	if hi > n {
		hi = n
	}
	return lo, hi
}
