// Package collectives implements goshmem's team collectives on the host:
// barrier and sync, broadcast, reduce, fcollect and alltoall, and team
// splitting. Everything moves through the runtime's transports (one-sided
// puts, gets and 64-bit signal stores into symmetric memory); MPI is not on
// the data path.
//
// Synchronization words live in the control area at the front of every PE's
// symmetric region (see Layout); each team owns one slot of psync words,
// agreed on by its members when the team is created.
package collectives

import (
	"fmt"
	"math/big"
	"sync/atomic"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/memord"
)

// Comm is what the collectives need from the runtime of one PE.
type Comm interface {
	// MyPE and NPEs are world numbers.
	MyPE() int
	NPEs() int
	// Put copies src into pe's symmetric region at off (complete after Quiet).
	Put(pe int, off uint64, src []byte) error
	// Get copies pe's symmetric region at off into dst (complete on return).
	Get(dst []byte, pe int, off uint64) error
	// Signal stores v into the 64-bit word at off on pe, ordered after every
	// put this PE issued to pe before it (a release store).
	Signal(pe int, off uint64, v uint64) error
	// Local is this PE's own symmetric memory [off, off+n).
	Local(off uint64, n int) []byte
	// WaitGE waits until this PE's 64-bit word at off is >= v. why
	// describes the wait for a timeout error (formatted only on error).
	WaitGE(off uint64, v uint64, why Wait) error
	// Quiet completes every put this PE issued.
	Quiet() error
}

// Layout of the control area at the front of every region. The runtime
// reserves ControlSize bytes there before the user heap.
// Direct is implemented by a Comm that can reach some peers' memory by
// plain loads and stores (shared memory on one node). Sync then signals
// with one release store and polls with inline loads, skipping the
// transport calls: a two-PE barrier is about one cache-line handoff, and
// the call layers were a fifth of it.
type Direct interface {
	// Word is the address of the 8-byte-aligned word at off in pe's
	// symmetric region, or nil when pe is not load/store reachable.
	Word(pe int, off uint64) *uint64
}

const (
	// MaxTeams is the number of psync slots (teams alive at once, world included).
	MaxTeams = 64
	// MaxRounds bounds a dissemination barrier (2^32 PEs).
	MaxRounds = 32
	lineSize  = 64
	slotSize  = MaxRounds * lineSize
	// ScratchSize is the per-PE scratch for small exchanges (Exchange).
	ScratchSize = 4096

	psyncBase   = 0
	scratchBase = psyncBase + MaxTeams*slotSize
	// ControlSize is how many bytes of each region the collectives use.
	ControlSize = scratchBase + ScratchSize
)

func psyncOff(slot, round int) uint64 { return uint64(psyncBase + slot*slotSize + round*lineSize) }

// Team is a set of world PEs {Start + i*Stride : 0 <= i < Size}. A Team
// value is owned by one PE (it carries that PE's barrier epoch).
type Team struct {
	Start, Stride, Size int
	// Me is this PE's index in the team.
	Me   int
	slot int
	// epoch counts this team's syncs on this PE; every member counts the
	// same, so the value doubles as the expected signal.
	epoch uint64
	// freeSlots, on the world team only, is this PE's bitmap of free psync
	// slots (bit set = free).
	freeSlots *uint64
	// direct: per round, the word this PE signals and the word it waits
	// on, when every round's partner is load/store reachable (built on
	// the first Sync; directOff when some partner is not).
	direct      []directRound
	directState uint8
}

type directRound struct{ to, mine *uint64 }

const (
	directUnknown uint8 = iota
	directOn
	directOff
)

// directPolls is how many inline polls Sync makes before it hands the wait
// to Comm.WaitGE (which spins, yields, sleeps and watches for timeouts and
// dead peers). A few hundred nanoseconds: a barrier among running PEs ends
// within it; an oversubscribed PE soon reaches WaitGE's yielding.
const directPolls = 256

// World returns the team of every PE, using psync slot 0.
func World(c Comm) *Team {
	free := ^uint64(0) &^ 1
	return &Team{Start: 0, Stride: 1, Size: c.NPEs(), Me: c.MyPE(), slot: 0, freeSlots: &free}
}

// Slot is the team's psync slot (0 for the world team).
func (t *Team) Slot() int { return t.slot }

// PE is the world number of team member i.
func (t *Team) PE(i int) int { return t.Start + i*t.Stride }

// Index returns the team index of world PE pe, or -1.
func (t *Team) Index(pe int) int {
	d := pe - t.Start
	if t.Stride == 0 {
		if d == 0 {
			return 0
		}
		return -1
	}
	// Strides may be negative (Split accepts them), so test the quotient,
	// not the sign of d.
	if d%t.Stride != 0 || d/t.Stride < 0 || d/t.Stride >= t.Size {
		return -1
	}
	return d / t.Stride
}

func (t *Team) String() string {
	return fmt.Sprintf("team{start %d, stride %d, size %d}", t.Start, t.Stride, t.Size)
}

// Sync is a dissemination barrier over the team's members: in round k each
// member signals member (me + 2^k) mod size and waits for member
// (me - 2^k) mod size. It does not complete outstanding puts (that is
// Barrier). Each round's word has exactly one writer, and epochs only grow,
// so a plain store of the epoch suffices (no atomic add, no reset).
func (t *Team) Sync(c Comm) error {
	t.epoch++
	e := t.epoch
	if t.directState == directUnknown {
		t.buildDirect(c)
	}
	if t.directState == directOn {
		return t.syncDirect(c, e)
	}
	for k, d := 0, 1; d < t.Size; k, d = k+1, d*2 {
		off := psyncOff(t.slot, k)
		to := t.PE((t.Me + d) % t.Size)
		if err := c.Signal(to, off, e); err != nil {
			return err
		}
		from := t.PE((t.Me - d%t.Size + t.Size) % t.Size)
		if err := c.WaitGE(off, e, Wait{Team: t, Epoch: e, Round: k, From: from}); err != nil {
			return err
		}
	}
	return nil
}

// buildDirect resolves every round's words once (membership and heaps are
// fixed for the team's life).
func (t *Team) buildDirect(c Comm) {
	t.directState = directOff
	dc, ok := c.(Direct)
	if !ok {
		return
	}
	var rounds []directRound
	for k, d := 0, 1; d < t.Size; k, d = k+1, d*2 {
		off := psyncOff(t.slot, k)
		to := dc.Word(t.PE((t.Me+d)%t.Size), off)
		mine := dc.Word(c.MyPE(), off)
		if to == nil || mine == nil {
			return
		}
		rounds = append(rounds, directRound{to: to, mine: mine})
	}
	t.direct, t.directState = rounds, directOn
}

// syncDirect is Sync's loop over load/store-reachable partners: the same
// words, values and order as Comm.Signal / Comm.WaitGE.
func (t *Team) syncDirect(c Comm, e uint64) error {
	for k := range t.direct {
		r := &t.direct[k]
		memord.StoreRelease64(r.to, e)
		done := false
		for i := 0; i < directPolls; i++ {
			if atomic.LoadUint64(r.mine) >= e {
				done = true
				break
			}
		}
		if !done {
			d := 1 << k
			from := t.PE((t.Me - d%t.Size + t.Size) % t.Size)
			if err := c.WaitGE(psyncOff(t.slot, k), e, Wait{Team: t, Epoch: e, Round: k, From: from}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Wait describes a barrier wait for diagnostics. It is a value, so passing
// it costs nothing unless the wait fails and String formats it.
type Wait struct {
	Team        *Team
	Epoch       uint64
	Round, From int
}

func (w Wait) String() string {
	return fmt.Sprintf("barrier #%d on %v, round %d: waiting for PE %d", w.Epoch, w.Team, w.Round, w.From)
}

// Barrier completes this PE's outstanding puts (Quiet) and then syncs:
// on return every member's puts issued before the barrier are visible.
func (t *Team) Barrier(c Comm) error {
	if err := c.Quiet(); err != nil {
		return err
	}
	return t.Sync(c)
}

// Exchange gathers a small contribution from every member: each member
// publishes in (the same length everywhere, at most MaxExchange bytes) and
// gets everybody's contribution in team order. The scratch words are reused,
// so a trailing sync keeps a fast member from overwriting its scratch while
// a slow one is still reading it.
func (t *Team) Exchange(c Comm, in []byte) ([][]byte, error) {
	if len(in) > MaxExchange {
		return nil, errs.New(errs.ErrInvalidArgument, c.MyPE(), "exchange", "%d bytes, at most %d", len(in), MaxExchange)
	}
	copy(c.Local(scratchBase, len(in)), in)
	if err := t.Barrier(c); err != nil {
		return nil, err
	}
	out := make([][]byte, t.Size)
	for i := range out {
		out[i] = make([]byte, len(in))
		if i == t.Me {
			copy(out[i], in)
			continue
		}
		if err := c.Get(out[i], t.PE(i), scratchBase); err != nil {
			return nil, err
		}
	}
	if err := t.Sync(c); err != nil {
		return nil, err
	}
	return out, nil
}

// splitLast is the parent index of a split team's last member, start +
// (size-1)*stride, computed exactly (the product of two ints may overflow
// one, and a wrapped value could land inside the parent), and whether it
// lies in [0, n). size >= 1.
func splitLast(start, stride, size, n int) (*big.Int, bool) {
	last := new(big.Int).Mul(big.NewInt(int64(size-1)), big.NewInt(int64(stride)))
	last.Add(last, big.NewInt(int64(start)))
	return last, last.Sign() >= 0 && last.Cmp(big.NewInt(int64(n))) < 0
}

// MaxExchange is the largest contribution to Exchange.
const MaxExchange = ScratchSize

// Split creates the team {parent member start + i*stride : i < size}
// (indices relative to parent), collectively over parent. PEs of parent
// that are not in the new team get nil and no error. world is the world
// team (it holds the slot bitmap).
func Split(c Comm, world, parent *Team, start, stride, size int) (*Team, error) {
	me := c.MyPE()
	if size < 1 || start < 0 || start >= parent.Size {
		return nil, errs.New(errs.ErrInvalidArgument, me, "TeamSplitStrided",
			"start %d, size %d: start must be in [0, %d) and size >= 1", start, size, parent.Size)
	}
	if last, ok := splitLast(start, stride, size, parent.Size); !ok {
		return nil, errs.New(errs.ErrInvalidArgument, me, "TeamSplitStrided",
			"start %d + (size %d - 1) * stride %d = %v is outside the parent team's indices [0, %d)",
			start, size, stride, last, parent.Size)
	}
	if size > 1 && stride == 0 {
		return nil, errs.New(errs.ErrInvalidArgument, me, "TeamSplitStrided",
			"stride 0 with size %d would repeat a PE; use stride != 0 or size 1", size)
	}
	// Agree on a psync slot free on every parent member (a conservative
	// intersection: members of the new team are among them). Also check
	// that every member passed the same arguments.
	var buf [32]byte
	putU64(buf[0:], *world.freeSlots)
	putU64(buf[8:], uint64(start))
	putU64(buf[16:], uint64(stride))
	putU64(buf[24:], uint64(size))
	all, err := parent.Exchange(c, buf[:])
	if err != nil {
		return nil, err
	}
	free := ^uint64(0)
	for i, b := range all {
		free &= getU64(b[0:])
		if getU64(b[8:]) != uint64(start) || getU64(b[16:]) != uint64(stride) || getU64(b[24:]) != uint64(size) {
			return nil, errs.New(errs.ErrNotSymmetric, me, "TeamSplitStrided",
				"PE %d passed (start %d, stride %d, size %d), this PE passed (%d, %d, %d)",
				parent.PE(i), int64(getU64(b[8:])), int64(getU64(b[16:])), int64(getU64(b[24:])), start, stride, size)
		}
	}
	if free == 0 {
		return nil, errs.Hint(errs.ErrInvalidArgument, "destroy teams that are no longer used",
			me, "TeamSplitStrided", "all %d team slots are in use", MaxTeams)
	}
	slot := 0
	for free&(1<<slot) == 0 {
		slot++
	}
	t := &Team{Start: parent.PE(start), Stride: stride * parent.Stride, Size: size, slot: slot}
	if size == 1 {
		t.Stride = 1
	}
	t.Me = t.Index(me)
	if t.Me < 0 {
		return nil, nil
	}
	*world.freeSlots &^= 1 << slot
	// The slot's psync words are zero: fresh, or zeroed by Destroy.
	return t, nil
}

// Destroy releases the team's psync slot on this PE and zeroes its words,
// so the next team on the slot starts at epoch 0. This is safe once every
// collective of the team has returned on this PE: each signal a member sends
// to this PE in a sync is waited for by this PE in that same sync, so none
// can still be in flight.
func (t *Team) Destroy(c Comm, world *Team) {
	if t.slot == 0 {
		return
	}
	for k := 0; k < MaxRounds; k++ {
		putU64(c.Local(psyncOff(t.slot, k), 8), 0)
	}
	*world.freeSlots |= 1 << t.slot
	t.slot = -1
}

func putU64(b []byte, v uint64) {
	for i := 0; i < 8; i++ {
		b[i] = byte(v >> (8 * i))
	}
}

func getU64(b []byte) uint64 {
	var v uint64
	for i := 0; i < 8; i++ {
		v |= uint64(b[i]) << (8 * i)
	}
	return v
}
