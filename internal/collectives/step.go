package collectives

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// This file is the cold side of the collectives: what a team does when a
// collective fails, and what it can read about its members afterwards.

// outOfStepHint is the hint on every error of a team that is out of step.
const outOfStepHint = "a collective on this team failed, so its members no longer agree on which call comes next: " +
	"end the job (Finalize still runs and reports the failure)"

// Broken returns the error that put the team out of step (the first
// failure of one of its collectives on this PE), or nil while it is in step.
func (t *Team) Broken() error { return t.broken }

// Fail puts the team out of step with cause err, unless it already is:
// every later collective on it fails at once. For the runtime, when it
// learns outside a collective that the members cannot agree any more (a
// member is gone).
func (t *Team) Fail(err error) {
	if t.broken == nil && err != nil {
		t.broken, t.brokenAt = err, fmt.Sprintf("sync #%d", t.epoch)
	}
}

// outOfStep is the error of every collective k called on a broken team.
func (t *Team) outOfStep(c Comm, k Kind) error {
	return errs.Hint(errs.ErrNotSymmetric, outOfStepHint, c.MyPE(), k.String(),
		"%v is out of step since %s failed: %v", t, t.brokenAt, t.broken)
}

// abort puts the team out of step after collective k failed on this PE
// outside a sync (a put, get or quiet between its syncs): the other members
// go on without this PE.
func (t *Team) abort(k Kind, err error) error {
	if t.broken == nil {
		t.broken, t.brokenAt = err, fmt.Sprintf("%v after sync #%d", k, t.epoch)
	}
	return err
}

// failSync turns the error of sync e (collective k) into the one returned,
// and puts the team out of step with it.
func (t *Team) failSync(c Comm, e uint64, k Kind, err error) error {
	var m *mismatch
	switch {
	case errors.As(err, &m):
		err = t.mismatchErr(c, e, k, m.d)
	case errors.Is(err, errs.ErrTimeout):
		err = t.withMissing(c, e, k, err)
	}
	if t.broken == nil {
		t.broken, t.brokenAt = err, fmt.Sprintf("sync #%d (%v)", e, k)
	}
	return err
}

// signal is what a member sent in round 0 of its latest sync, read from the
// word it signals (its successor's); err when that word could not be read.
type signal struct {
	v   uint64
	err error
}

// signals reads every member's round-0 word (a member stores it first thing
// in a sync, so its epoch tells how far the member has come, and its kind
// what it called there): by load when the word is load/store reachable,
// else by c.Get (an 8-byte get; it is diagnostics, so a get that is not
// atomic on some transport costs at most a wrong report). The entry of this
// PE is its own latest word. In a flat team every member's word is a line
// of this PE's own slot.
func (t *Team) signals(c Comm) []signal {
	out := make([]signal, t.Size)
	if t.Size < 2 {
		return out
	}
	if t.flat() {
		for j := range out {
			out[j].v = atomic.LoadUint64(localWord(c, t.psyncOff(j)))
		}
		return out
	}
	dc, _ := c.(Direct)
	off := t.psyncOff(0)
	for j := range out {
		to := (j + 1) % t.Size
		pe := t.PE(to)
		switch {
		case to == t.Me:
			out[j].v = atomic.LoadUint64(localWord(c, off))
		case dc != nil && dc.Word(pe, off) != nil:
			out[j].v = atomic.LoadUint64(dc.Word(pe, off))
		default:
			var b [8]byte
			if err := c.Get(b[:], pe, off); err != nil {
				out[j].err = err
				continue
			}
			out[j].v = getU64(b[:])
		}
	}
	return out
}

// Missing returns the world numbers of the members that have not arrived
// at sync e of the team (a member arrives when it stores its round-0
// signal). It reads the members' words (see signals), so it is meant for
// after a failure: a member whose word could not be read is left out of the
// list and its read error returned. This PE counts as arrived once its own
// epoch has reached e.
func (t *Team) Missing(c Comm, e uint64) ([]int, error) {
	if t.slot < 0 {
		return nil, errs.New(errs.ErrInvalidArgument, c.MyPE(), "Missing", "%v was destroyed", t)
	}
	var missing []int
	var errList []error
	for j, s := range t.signals(c) {
		switch {
		case j == t.Me:
			if t.epoch < e {
				missing = append(missing, t.PE(j))
			}
		case s.err != nil:
			errList = append(errList, errors.Wrapf(s.err, "PE %d's signal (on PE %d)", t.PE(j), t.PE((j+1)%t.Size)))
		case wordEpoch(s.v) < e:
			missing = append(missing, t.PE(j))
		}
	}
	return missing, errors.Join(errList...)
}

// withMissing adds to the timeout err of sync e which members have not
// arrived at it.
func (t *Team) withMissing(c Comm, e uint64, k Kind, err error) error {
	missing, rerr := t.Missing(c, e)
	var what string
	switch len(missing) {
	case 0:
		what = fmt.Sprintf("every member has arrived at sync #%d of %v (one stopped in a later round)", e, t)
	case 1:
		what = fmt.Sprintf("PE %d has not arrived at sync #%d of %v", missing[0], e, t)
	default:
		what = fmt.Sprintf("PEs %s have not arrived at sync #%d of %v", peList(missing), e, t)
	}
	if rerr != nil {
		what += fmt.Sprintf(" (not known for some: %v)", rerr)
	}
	return errors.Wrapf(err, "PE %d: %v: %s", c.MyPE(), k, what)
}

// mismatchErr is the error of sync e when its members called different
// collectives: every member returns it, naming the kinds of the members
// that differ from its own (read from their words; d, what this PE saw
// itself, when they cannot be read).
func (t *Team) mismatchErr(c Comm, e uint64, k Kind, d diff) error {
	byKind := map[Kind][]int{}
	var unknown []int
	for j, s := range t.signals(c) {
		switch {
		case j == t.Me:
		case s.err != nil || wordEpoch(s.v) != e:
			unknown = append(unknown, t.PE(j))
		case wordKind(s.v) != k:
			byKind[wordKind(s.v)] = append(byKind[wordKind(s.v)], t.PE(j))
		}
	}
	if len(byKind) == 0 && d.kind != KindNone {
		byKind[d.kind] = []int{d.pe}
	}
	var parts []string
	for kind := Kind(0); kind <= kindMask; kind++ {
		pes := byKind[kind]
		switch {
		case len(pes) == 1:
			parts = append(parts, fmt.Sprintf("PE %d called %v here", pes[0], kind))
		case len(pes) > 1:
			parts = append(parts, fmt.Sprintf("PEs %s called %v here", peList(pes), kind))
		}
	}
	if len(parts) == 0 {
		parts = append(parts, "another member called a different collective here")
	}
	if len(unknown) > 0 && len(byKind) == 0 {
		parts = append(parts, fmt.Sprintf("the calls of PEs %s could not be read", peList(unknown)))
	}
	return errs.Hint(errs.ErrNotSymmetric, outOfStepHint, c.MyPE(), k.String(),
		"sync #%d of %v: %s (every PE must call the same collectives in the same order)", e, t, strings.Join(parts, "; "))
}

// peList formats world PE numbers as "0, 3 and 5".
func peList(pes []int) string {
	s := make([]string, len(pes))
	for i, p := range pes {
		s[i] = fmt.Sprint(p)
	}
	if len(s) < 2 {
		return strings.Join(s, "")
	}
	return strings.Join(s[:len(s)-1], ", ") + " and " + s[len(s)-1]
}

// localWord is this PE's 64-bit psync word at off.
func localWord(c Comm, off uint64) *uint64 {
	return (*uint64)(unsafe.Pointer(unsafe.SliceData(c.Local(off, 8))))
}
