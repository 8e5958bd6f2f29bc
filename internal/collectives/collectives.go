// Package collectives implements goshmem's team collectives on the host:
// barrier and sync, broadcast, reduce, fcollect, collect, alltoall and
// alltoalls, inclusive and exclusive scans, and team splitting. Everything
// moves through the runtime's transports (one-sided puts, gets and 64-bit
// signal stores into symmetric memory), or by plain loads and stores where
// the runtime maps a peer's memory (Direct); MPI is not on the data path.
// Programs call them through package shmem; Op is defined in the public
// package github.com/goshmem/goshmem/collectives.
//
// Synchronization words live in the team slots of every PE's symmetric
// region (see Layout); each team owns one slot of psync words and two
// scratch buffers (the one-sync small collectives publish there: see
// gather.go), agreed on by its members when the team is created. A word holds the sync's
// epoch and the kind of collective the writer called (Kind), so members
// that call different collectives find out; a team whose collective failed
// part-way is out of step, and says so on every later call (Team.Broken).
// Device barriers (include/goshmem/coll.h) use their own psync words at the
// front of the GPU heap and their own epochs: they do not read these.
package collectives

import (
	"fmt"
	"math/big"
	"sync"
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

// Direct is implemented by a Comm that can reach some peers' memory by
// plain loads and stores (shared memory on one node). Sync then signals
// with one release store and polls with inline loads, skipping the
// transport calls: a two-PE barrier is about one cache-line handoff, so
// the call layers are a visible share of it (docs/host.md).
type Direct interface {
	// Word is the address of the 8-byte-aligned word at off in pe's
	// symmetric region, or nil when pe is not load/store reachable.
	Word(pe int, off uint64) *uint64
	// Mem is pe's symmetric memory [off, off+n), or nil when pe is not
	// load/store reachable. The data collectives read peers' buffers
	// through it instead of copying them in with Get.
	Mem(pe int, off uint64, n int) []byte
}

// CrowdedNode is implemented by a Comm that knows whether this PE's node
// runs more than two PEs per core. There a sync does not poll inline
// before it hands a wait to Comm.WaitGE: the members it waits for are
// rarely running, they need cores, and every poll of a PE that shares a
// core with them is time they do not run. (With up to two PEs per core a
// member on another core often is running, and a short poll catches it.)
type CrowdedNode interface {
	Crowded() bool
}

// Team slots. Every team owns one slot on each of its members (the world
// team slot 0), agreed on when the team is made; a slot holds the team's
// psync words and its two scratch buffers. A Layout places MaxTeams slots
// in every PE's region; the runtime reserves Layout.Size bytes for them
// (GOSHMEM_MAX_TEAMS slots), the same on every PE.
const (
	// DefaultTeams is GOSHMEM_MAX_TEAMS's default: room for 1,024 teams a
	// program makes beside the predefined ones (the world and the node
	// team), rounded up to a whole word of the slot bitmap.
	DefaultTeams = 1088
	// MinTeams and MaxTeams bound a Layout's slot count: the predefined
	// teams take two slots, and a split exchanges a bitmap of every slot
	// (MaxTeams/8 bytes per member, within MaxExchange).
	MinTeams = 2
	MaxTeams = 16384
	// MaxRounds bounds a dissemination barrier (2^32 PEs).
	MaxRounds = 32
	lineSize  = 64
	psyncSize = MaxRounds * lineSize
	// ScratchSize bounds one member's contribution to Exchange (which goes
	// through its team's scratch buffers).
	ScratchSize = 4096
	// TeamScratchSize is the size of each of a team's two scratch buffers
	// on every PE: the data collectives of up to this many bytes per
	// member publish their contribution there (see gather).
	TeamScratchSize = 8192
	// SlotSize is the bytes of one team slot on every PE: the psync words
	// (MaxRounds lines), then the two scratch buffers.
	SlotSize = psyncSize + 2*TeamScratchSize
)

// Layout is where the team slots live in every PE's symmetric region: slot
// s at Base + s*SlotSize, for s < MaxTeams (MinTeams <= MaxTeams <=
// collectives.MaxTeams). Base is a multiple of 64.
type Layout struct {
	Base     uint64
	MaxTeams int
}

// Size is the bytes of region the slots take.
func (l Layout) Size() uint64 { return uint64(l.MaxTeams) * SlotSize }

func (l Layout) psyncOff(slot, round int) uint64 {
	return l.Base + uint64(slot)*SlotSize + uint64(round*lineSize)
}

// teamScratchOff is the team scratch buffer of slot that a collective
// whose first sync has epoch e publishes into: buffers alternate by epoch.
func (l Layout) teamScratchOff(slot int, e uint64) uint64 {
	return l.Base + uint64(slot)*SlotSize + psyncSize + (e&1)*TeamScratchSize
}

// psyncOff is the offset of round r's psync word (line r) of t's slot.
func (t *Team) psyncOff(r int) uint64 { return t.ly.psyncOff(t.slot, r) }

// Team is a set of world PEs {Start + i*Stride : 0 <= i < Size}, or, for a
// team whose members are not evenly strided in the world (a node's PEs
// under an irregular placement, and teams split from it), an explicit list
// of members in team order (Strided reports which; PE and Index answer for
// both). A Team value is owned by one PE (it carries that PE's barrier
// epoch).
//
// A PE runs one collective at a time on a team: callers hold the team's
// Lock around each. Everything a collective touches is the team's own
// (its psync slot, its two scratch buffers, its epoch and private buffers)
// or safe for concurrent use (the Comm, the slot table behind splits), so
// collectives on different teams may run concurrently, from different
// goroutines, in any order on each PE (Ref: OpenSHMEM 1.6 §9.2
// SHMEM_THREAD_MULTIPLE: only collectives on one team must be serialized).
//
// A team whose collective failed in a way that may leave its members at
// different points (a timeout, a transport error, members calling different
// collectives) is out of step: every later collective on it fails at once
// with an error that wraps ErrNotSymmetric and quotes the first failure
// (Broken). Teams split from it earlier keep working: each team has its own
// psync slot and epochs. A collective that fails the same way on every
// member with nothing synchronized half-way (arguments that differ, found by
// the exchange every member reads alike) leaves the team usable.
type Team struct {
	// Start and Stride describe a strided team; a listed team has
	// Start = PE(0) and Stride 0.
	Start, Stride, Size int
	// pes, when not nil, lists the members' world numbers in team order.
	pes []int
	// Me is this PE's index in the team.
	Me   int
	slot int
	// ly places the slots (the world team's, shared by every team).
	ly Layout
	// epoch counts this team's syncs on this PE; every member counts the
	// same, so the value doubles as the expected signal.
	epoch uint64
	// mu serializes the team's collectives on this PE (Lock).
	mu sync.Mutex
	// slots, on the world team only, is this PE's table of psync slots.
	slots *slotTable
	// direct: per round, the word this PE signals and the word it waits
	// on, when every round's partner is load/store reachable (built on
	// the first Sync; directOff when some partner is not).
	direct      []directRound
	directState uint8
	// polls is how many inline polls the direct syncs make before WaitGE
	// (directPolls, 0 on a crowded node; set with direct).
	polls int
	// broken is the first error that left the team out of step, raised
	// where brokenAt says ("sync #7 (Barrier)"); nil while in step.
	broken   error
	brokenAt string
	// bufs are private buffers of the data collectives (peer data read
	// with Get, reduction accumulators), counts the members' Collect
	// counts: kept, so that repeated calls do not allocate.
	bufs   [4][]byte
	counts []int
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
// within it. On a crowded node (CrowdedNode) a sync does not poll inline
// at all.
const directPolls = 256

// flatMax is the largest team that syncs flat (teams of 3 or more): each
// member stores its word into its own line at every member and waits for
// the other members' lines: one round where a dissemination barrier takes
// log2(size), at the cost of size-1 signals per member. On a node with more
// PEs than CPUs a waiting PE yields its CPU, and a round costs about one
// turn of every PE on the CPUs, so fewer rounds are what counts there.
const flatMax = 16

// flat reports whether the team syncs flat (see flatMax); every member
// decides alike, from the size.
func (t *Team) flat() bool { return t.Size >= 3 && t.Size <= flatMax }

// World returns the team of every PE, using slot 0 of ly, whose other
// slots it hands out to the teams made from it.
func World(c Comm, ly Layout) *Team {
	return &Team{Start: 0, Stride: 1, Size: c.NPEs(), Me: c.MyPE(), slot: 0, ly: ly, slots: newSlotTable(ly.MaxTeams)}
}

// Lock takes the team's collective lock on this PE: callers hold it around
// every collective on the team (and every heap collective, for the world
// team), so that one runs at a time per team.
func (t *Team) Lock() { t.mu.Lock() }

// Unlock releases the lock Lock took.
func (t *Team) Unlock() { t.mu.Unlock() }

// Destroyed reports whether Destroy released the team on this PE (read it
// under Lock: a caller that waited for the lock may find the team gone).
func (t *Team) Destroyed() bool { return t.slot < 0 }

// Slot is the team's slot (0 for the world team).
func (t *Team) Slot() int { return t.slot }

// Epoch is the number of syncs this PE has started on the team (the epoch
// of the latest; Missing takes it).
func (t *Team) Epoch() uint64 { return t.epoch }

// PE is the world number of team member i.
func (t *Team) PE(i int) int {
	if t.pes != nil {
		return t.pes[i]
	}
	return t.Start + i*t.Stride
}

// Index returns the team index of world PE pe, or -1.
func (t *Team) Index(pe int) int {
	if t.pes != nil {
		for i, p := range t.pes {
			if p == pe {
				return i
			}
		}
		return -1
	}
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
	if t.slots != nil {
		return "team world"
	}
	if t.pes != nil {
		return fmt.Sprintf("team{size %d, PEs %v}", t.Size, t.pes)
	}
	return fmt.Sprintf("team{start %d, stride %d, size %d}", t.Start, t.Stride, t.Size)
}

// Sync is SyncAs with KindSync.
func (t *Team) Sync(c Comm) error { return t.SyncAs(c, KindSync) }

// SyncAs is a barrier over the team's members, as part of collective k:
// a dissemination barrier (in round r each member signals member
// (me + 2^r) mod size and waits for member (me - 2^r) mod size), or for
// teams of 3 to flatMax members a flat one (member i signals line i of
// every member and waits for every member's line: one round). It does not
// complete outstanding puts (that is Barrier). Each word has exactly one
// writer, and epochs only grow, so a plain store suffices (no atomic add,
// no reset).
//
// The word carries k (see psyncWord). A member that receives another kind
// for its epoch, or the mismatch flag, sets the flag in the signals of its
// later rounds. By induction, after round r a member's flag says whether
// the kinds of members me-2^(r+1)+1 .. me differ (its window of round r-1
// joined with its partner's, plus the partner's kind against its own), so
// after the last round every member knows whether any two members called
// different collectives, and every member returns ErrNotSymmetric for that
// sync. A word of a later epoch (a partner already one sync ahead wrote
// over its word of this one) needs no check: such words exist only once a
// member left this sync without a mismatch, and the first member to leave
// read only words of this sync, so the kinds were all equal.
//
// In a flat sync every member reads every member's word of the sync, so
// each finds out about any other kind itself. A word of a later epoch
// needs no check there either: its writer left this sync having read
// every member's word of it, all of one kind.
//
// On a timeout the error names every member that has not arrived (Missing).
// Any failure leaves the team out of step (see Team).
func (t *Team) SyncAs(c Comm, k Kind) error {
	if t.broken != nil {
		return t.outOfStep(c, k)
	}
	t.epoch++
	e := t.epoch
	if t.directState == directUnknown {
		t.buildDirect(c)
	}
	var err error
	switch {
	case t.flat() && t.directState == directOn:
		err = t.syncFlatDirect(c, e, k)
	case t.flat():
		err = t.syncFlatComm(c, e, k)
	case t.directState == directOn:
		err = t.syncDirect(c, e, k)
	default:
		err = t.syncComm(c, e, k)
	}
	if err != nil {
		return t.failSync(c, e, k, err)
	}
	return nil
}

// from is the world number of the member that signals this PE in round r
// (of a flat sync: member r).
func (t *Team) from(r int) int {
	if t.flat() {
		return t.PE(r)
	}
	d := (1 << r) % t.Size
	return t.PE((t.Me - d + t.Size) % t.Size)
}

func (t *Team) wait(e uint64, k Kind, r int) Wait {
	return Wait{Team: t, Kind: k, Epoch: e, Round: r, From: t.from(r)}
}

// mismatch is what the sync loops return when the mismatch flag is set at
// their end; failSync turns it into the error that names the kinds.
type mismatch struct{ d diff }

func (m *mismatch) Error() string { return "collectives: members called different collectives" }

func (t *Team) syncComm(c Comm, e uint64, k Kind) error {
	want := psyncWord(e, k)
	send := want
	var d diff
	for r, dist := 0, 1; dist < t.Size; r, dist = r+1, dist*2 {
		off := t.psyncOff(r)
		if err := c.Signal(t.PE((t.Me+dist)%t.Size), off, send); err != nil {
			return err
		}
		if err := c.WaitGE(off, e<<epochShift, t.wait(e, k, r)); err != nil {
			return err
		}
		if v := atomic.LoadUint64(localWord(c, off)); v != want && d.note(v, e, k, t.from(r)) {
			send |= flagMismatch
		}
	}
	if send&flagMismatch != 0 {
		return &mismatch{d}
	}
	return nil
}

// buildDirect resolves every round's words once (membership and heaps are
// fixed for the team's life). A flat team's entry j is member j: the word
// this PE signals there and the word member j signals here.
func (t *Team) buildDirect(c Comm) {
	t.directState = directOff
	t.polls = directPolls
	if o, ok := c.(CrowdedNode); ok && o.Crowded() {
		t.polls = 0
	}
	dc, ok := c.(Direct)
	if !ok {
		return
	}
	if t.flat() {
		lines := make([]directRound, t.Size)
		for j := range lines {
			to := dc.Word(t.PE(j), t.psyncOff(t.Me))
			mine := dc.Word(c.MyPE(), t.psyncOff(j))
			if to == nil || mine == nil {
				return
			}
			lines[j] = directRound{to: to, mine: mine}
		}
		t.direct, t.directState = lines, directOn
		return
	}
	var rounds []directRound
	for k, d := 0, 1; d < t.Size; k, d = k+1, d*2 {
		off := t.psyncOff(k)
		to := dc.Word(t.PE((t.Me+d)%t.Size), off)
		mine := dc.Word(c.MyPE(), off)
		if to == nil || mine == nil {
			return
		}
		rounds = append(rounds, directRound{to: to, mine: mine})
	}
	t.direct, t.directState = rounds, directOn
}

// syncDirect is syncComm over load/store-reachable partners: the same
// words, values and order as Comm.Signal / Comm.WaitGE. Per round: one
// release store, inline polls, and one compare of the word that ended them
// with the expected word (only a different word takes the slow branch).
func (t *Team) syncDirect(c Comm, e uint64, k Kind) error {
	want := psyncWord(e, k)
	base := e << epochShift
	send := want
	var d diff
	for r := range t.direct {
		dr := &t.direct[r]
		memord.StoreRelease64(dr.to, send)
		v := atomic.LoadUint64(dr.mine)
		for i := 0; v < base && i < t.polls; i++ {
			v = atomic.LoadUint64(dr.mine)
		}
		if v < base {
			if err := c.WaitGE(t.psyncOff(r), base, t.wait(e, k, r)); err != nil {
				return err
			}
			v = atomic.LoadUint64(dr.mine)
		}
		if v != want && d.note(v, e, k, t.from(r)) {
			send |= flagMismatch
		}
	}
	if send&flagMismatch != 0 {
		return &mismatch{d}
	}
	return nil
}

// syncFlatComm is the flat sync over Comm: this PE's word goes to its line
// at every member (its own by a local store), then it waits for every
// member's line here.
func (t *Team) syncFlatComm(c Comm, e uint64, k Kind) error {
	want := psyncWord(e, k)
	off := t.psyncOff(t.Me)
	for i := 1; i < t.Size; i++ {
		j := (t.Me + i) % t.Size // stagger, so members do not all signal one PE first
		if err := c.Signal(t.PE(j), off, want); err != nil {
			return err
		}
	}
	atomic.StoreUint64(localWord(c, off), want)
	var d diff
	found := false
	for i := 1; i < t.Size; i++ {
		j := (t.Me + i) % t.Size
		offj := t.psyncOff(j)
		if err := c.WaitGE(offj, e<<epochShift, t.wait(e, k, j)); err != nil {
			return err
		}
		if v := atomic.LoadUint64(localWord(c, offj)); v != want && d.note(v, e, k, t.PE(j)) {
			found = true
		}
	}
	if found {
		return &mismatch{d}
	}
	return nil
}

// syncFlatDirect is syncFlatComm over load/store-reachable members: release
// stores into their lines, inline polls of the lines here before WaitGE.
func (t *Team) syncFlatDirect(c Comm, e uint64, k Kind) error {
	want := psyncWord(e, k)
	base := e << epochShift
	for i := 1; i < t.Size; i++ {
		memord.StoreRelease64(t.direct[(t.Me+i)%t.Size].to, want)
	}
	atomic.StoreUint64(t.direct[t.Me].mine, want)
	var d diff
	found := false
	for i := 1; i < t.Size; i++ {
		j := (t.Me + i) % t.Size
		p := t.direct[j].mine
		v := atomic.LoadUint64(p)
		for n := 0; v < base && n < t.polls; n++ {
			v = atomic.LoadUint64(p)
		}
		if v < base {
			if err := c.WaitGE(t.psyncOff(j), base, t.wait(e, k, j)); err != nil {
				return err
			}
			v = atomic.LoadUint64(p)
		}
		if v != want && d.note(v, e, k, t.PE(j)) {
			found = true
		}
	}
	if found {
		return &mismatch{d}
	}
	return nil
}

// diff is what a member learned in one sync about kinds other than its own:
// the first partner seen with another kind, and whether any signal said so.
type diff struct {
	seen bool
	pe   int // world number; valid when kind != KindNone
	kind Kind
}

// note records the round's word v (not the word this PE expected) and
// reports whether it shows a mismatch in sync e.
func (d *diff) note(v, e uint64, k Kind, from int) bool {
	if wordEpoch(v) != e {
		return false // a partner one sync ahead: it found no mismatch in e
	}
	if wk := wordKind(v); wk != k && d.kind == KindNone {
		d.pe, d.kind = from, wk
	}
	d.seen = true
	return true
}

// Wait describes a barrier wait for diagnostics. It is a value, so passing
// it costs nothing unless the wait fails and String formats it.
type Wait struct {
	Team        *Team
	Kind        Kind
	Epoch       uint64
	Round, From int
	// Done: a collective's root waits for From to finish reading (see
	// Broadcast), not a sync round.
	Done bool
}

func (w Wait) String() string {
	if w.Done {
		return fmt.Sprintf("%v: sync #%d of %v: waiting for PE %d to finish reading", w.Kind, w.Epoch, w.Team, w.From)
	}
	if w.Team.flat() {
		return fmt.Sprintf("%v: sync #%d of %v: waiting for PE %d", w.Kind, w.Epoch, w.Team, w.From)
	}
	return fmt.Sprintf("%v: sync #%d of %v, round %d: waiting for PE %d", w.Kind, w.Epoch, w.Team, w.Round, w.From)
}

// Barrier is BarrierAs with KindBarrier.
func (t *Team) Barrier(c Comm) error { return t.BarrierAs(c, KindBarrier) }

// BarrierAs completes this PE's outstanding puts (Quiet) and then syncs as
// part of collective k: on return every member's puts issued before the
// barrier are visible. A failed Quiet leaves the team out of step (the
// other members go on to the sync without this PE).
func (t *Team) BarrierAs(c Comm, k Kind) error {
	if t.broken != nil {
		return t.outOfStep(c, k)
	}
	if err := c.Quiet(); err != nil {
		return t.abort(k, err)
	}
	return t.SyncAs(c, k)
}

// Exchange is ExchangeAs with KindExchange.
func (t *Team) Exchange(c Comm, in []byte) ([][]byte, error) {
	return t.ExchangeAs(c, KindExchange, in)
}

// ExchangeAs gathers a small contribution from every member, as part of
// collective k: each member publishes in (the same length everywhere, at
// most MaxExchange bytes) and gets everybody's contribution in team order.
// Contributions go through the team's own scratch buffers (see publish),
// so exchanges on different teams do not share memory; a trailing sync
// keeps a fast member from going on to reuse the buffers while a slow one
// is still reading them.
func (t *Team) ExchangeAs(c Comm, k Kind, in []byte) ([][]byte, error) {
	if len(in) > MaxExchange {
		return nil, errs.New(errs.ErrInvalidArgument, c.MyPE(), k.String(), "exchange of %d bytes, at most %d", len(in), MaxExchange)
	}
	if t.broken != nil {
		return nil, t.outOfStep(c, k)
	}
	copy(t.publish(c, len(in)), in)
	if err := t.BarrierAs(c, k); err != nil {
		return nil, err
	}
	off := t.published()
	out := make([][]byte, t.Size)
	for i := range out {
		out[i] = make([]byte, len(in))
		if i == t.Me {
			copy(out[i], in)
			continue
		}
		if err := c.Get(out[i], t.PE(i), off); err != nil {
			return nil, t.abort(k, err)
		}
	}
	if err := t.SyncAs(c, k); err != nil {
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

// MaxExchange is the largest contribution to Exchange (it fits a team
// scratch buffer).
const MaxExchange = ScratchSize

// Split creates the team {parent member start + i*stride : i < size}
// (indices relative to parent), collectively over parent. PEs of parent
// that are not in the new team get nil and no error. world is the world
// team (it holds the slot bitmap).
func Split(c Comm, world, parent *Team, start, stride, size int) (*Team, error) {
	return SplitConfig(c, world, parent, start, stride, size, 0)
}

// SplitConfig is Split with the new team's configuration cfg (a value of
// the caller's, at least 0 as an int64): every member of the new team must
// pass the same cfg; parent PEs outside it may pass another. A difference
// fails the split with ErrNotSymmetric on every parent member, a negative
// cfg on any parent member with ErrInvalidArgument on every one (checked
// after the exchange, like the arguments).
func SplitConfig(c Comm, world, parent *Team, start, stride, size int, cfg uint64) (*Team, error) {
	me := c.MyPE()
	// The arguments are checked after the exchange (a PE with bad ones
	// still takes part), as in Split2D: a PE that left on a local check
	// while the others wait in the exchange would leave parent out of step.
	valid := func() error {
		if size < 1 || start < 0 || start >= parent.Size {
			return errs.New(errs.ErrInvalidArgument, me, "TeamSplitStrided",
				"start %d, size %d: start must be in [0, %d) and size >= 1", start, size, parent.Size)
		}
		if last, ok := splitLast(start, stride, size, parent.Size); !ok {
			return errs.New(errs.ErrInvalidArgument, me, "TeamSplitStrided",
				"start %d + (size %d - 1) * stride %d = %v is outside the parent team's indices [0, %d)",
				start, size, stride, last, parent.Size)
		}
		if size > 1 && stride == 0 {
			return errs.New(errs.ErrInvalidArgument, me, "TeamSplitStrided",
				"stride 0 with size %d would repeat a PE; use stride != 0 or size 1", size)
		}
		return nil
	}
	// Agree on a slot free on every parent member (a conservative
	// intersection: members of the new team are among them). Also check
	// that every member passed the same arguments.
	var args [32]byte
	putU64(args[0:], uint64(start))
	putU64(args[8:], uint64(stride))
	putU64(args[16:], uint64(size))
	putU64(args[24:], cfg)
	joins := memberOf(parent.Me, start, stride, size) >= 0
	slots, err := splitSlots(c, world, parent, KindSplit, "TeamSplitStrided", args[:], 1, joins, func(all [][]byte) error {
		head := -1 // the parent index of the new team's first member's entry
		for i, b := range all {
			if getU64(b[0:]) != uint64(start) || getU64(b[8:]) != uint64(stride) || getU64(b[16:]) != uint64(size) {
				return errs.New(errs.ErrNotSymmetric, me, "TeamSplitStrided",
					"PE %d passed (start %d, stride %d, size %d), this PE passed (%d, %d, %d)",
					parent.PE(i), int64(getU64(b[0:])), int64(getU64(b[8:])), int64(getU64(b[16:])), start, stride, size)
			}
		}
		if err := badConfig(me, "TeamSplitStrided", parent, all, 24); err != nil {
			return err
		}
		for i, b := range all {
			if memberOf(i, start, stride, size) < 0 {
				continue
			}
			if head < 0 {
				head = i
			}
			if got, want := getU64(b[24:]), getU64(all[head][24:]); got != want {
				return errs.New(errs.ErrNotSymmetric, me, "TeamSplitStrided",
					"members of the new team passed different team configurations: PE %d passed %d, PE %d passed %d",
					parent.PE(head), want, parent.PE(i), got)
			}
		}
		return valid()
	})
	if err != nil {
		return nil, err
	}
	// The slot's psync words are zero: fresh, or zeroed by Destroy.
	return parent.sub(start, stride, size, slots[0], me), nil
}

// badConfig checks the configuration words at offset off of every parent
// member's split record: a negative one (as int64) fails the split on
// every member, naming the PE that passed it.
func badConfig(me int, op string, parent *Team, all [][]byte, off int) error {
	for i, b := range all {
		if v := int64(getU64(b[off:])); v < 0 {
			return errs.New(errs.ErrInvalidArgument, me, op,
				"PE %d passed TeamConfig.NumContexts = %d; must be >= 0", parent.PE(i), v)
		}
	}
	return nil
}

// Destroy releases the team's psync slot on this PE and zeroes its words,
// so the next team on the slot starts at epoch 0. It is collective over the
// team's members: a last sync (KindDestroy) checks that every member
// destroys the team here, and afterwards no member signals this PE on the
// slot again (each signal a member sends to this PE in a sync is waited for
// by this PE in that same sync, so none can still be in flight). A team out
// of step keeps its slot (a member may still signal into it) and Destroy
// returns the out-of-step error. The world team's slot is never released.
func (t *Team) Destroy(c Comm, world *Team) error { return t.DestroyAnd(c, world, nil) }

// DestroyAnd is Destroy that calls unpublish(slot) (when not nil) once the
// last sync succeeded and before the slot is released on this PE: what the
// caller keeps per slot elsewhere (the device team table's row) is undone
// before a concurrent split on this PE can take the slot and publish its
// own team there.
func (t *Team) DestroyAnd(c Comm, world *Team, unpublish func(slot int)) error {
	if t.slot == 0 {
		return nil
	}
	if t.slot < 0 {
		return errs.New(errs.ErrInvalidArgument, c.MyPE(), KindDestroy.String(), "%v was already destroyed", t)
	}
	if err := t.SyncAs(c, KindDestroy); err != nil {
		return err
	}
	for k := 0; k < MaxRounds; k++ {
		putU64(c.Local(t.psyncOff(k), 8), 0)
	}
	if unpublish != nil {
		unpublish(t.slot)
	}
	world.slots.release(t.slot)
	t.slot = -1
	return nil
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
