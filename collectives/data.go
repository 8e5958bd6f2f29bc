package collectives

import (
	"unsafe"

	"github.com/goshmem/goshmem/internal/elem"
)

// The data collectives below take symmetric byte offsets (already bounds-
// checked by the caller) and follow OpenSHMEM 1.6 §9.9 semantics: every
// member calls them with the same arguments; on return the PE's dest holds
// the result and source may be reused. Each starts with a sync, so no
// member writes into a dest another member is still reading from a previous
// collective, and ends with a barrier, so every put has landed everywhere.
// Both carry the collective's kind (a member calling another collective is
// found there), and a put or get that fails between them leaves the team
// out of step (the other members go on to the closing barrier).

// Broadcast copies root's source[0:n) (n elements of size sz) into dest on
// every member, root included (Ref: OpenSHMEM 1.6 §9.9.7). Non-roots pull
// from the root, spreading the copy work over the members.
func Broadcast(c Comm, t *Team, dst, src uint64, nbytes int, root int) error {
	if err := t.SyncAs(c, KindBroadcast); err != nil {
		return err
	}
	d := c.Local(dst, nbytes)
	if t.Me == root {
		copy(d, c.Local(src, nbytes))
	} else if err := c.Get(d, t.PE(root), src); err != nil {
		return t.abort(KindBroadcast, err)
	}
	return t.BarrierAs(c, KindBroadcast)
}

// FCollect concatenates every member's source[0:nbytes) into dest in team
// order (Ref: OpenSHMEM 1.6 §9.9.9): member i's block lands at i*nbytes.
func FCollect(c Comm, t *Team, dst, src uint64, nbytes int) error {
	if err := t.SyncAs(c, KindFCollect); err != nil {
		return err
	}
	mine := c.Local(src, nbytes)
	for k := 0; k < t.Size; k++ {
		i := (t.Me + k) % t.Size // stagger so members do not all hit one PE first
		if err := c.Put(t.PE(i), dst+uint64(t.Me*nbytes), mine); err != nil {
			return t.abort(KindFCollect, err)
		}
	}
	return t.BarrierAs(c, KindFCollect)
}

// AllToAll sends block j (nbytes each) of this member's source to member j,
// where it lands at block Me of dest (Ref: OpenSHMEM 1.6 §9.9.10).
func AllToAll(c Comm, t *Team, dst, src uint64, nbytes int) error {
	if err := t.SyncAs(c, KindAllToAll); err != nil {
		return err
	}
	for k := 0; k < t.Size; k++ {
		j := (t.Me + k) % t.Size
		blk := c.Local(src+uint64(j*nbytes), nbytes)
		if err := c.Put(t.PE(j), dst+uint64(t.Me*nbytes), blk); err != nil {
			return t.abort(KindAllToAll, err)
		}
	}
	return t.BarrierAs(c, KindAllToAll)
}

// Op is a reduction operator.
type Op int

// The reduction operators (Ref: OpenSHMEM 1.6 §9.9.11).
const (
	OpSum Op = iota
	OpProd
	OpMin
	OpMax
	OpAnd
	OpOr
	OpXor
)

var opNames = [...]string{"sum", "prod", "min", "max", "and", "or", "xor"}

func (o Op) String() string {
	if o < 0 || int(o) >= len(opNames) {
		return "op(?)"
	}
	return opNames[o]
}

// Bitwise reports whether o is and, or or xor (integers only).
func (o Op) Bitwise() bool { return o == OpAnd || o == OpOr || o == OpXor }

// Reduce combines n elements of every member's source with op into every
// member's dest (an all-reduce). Member i reduces chunk i of the elements:
// it gets chunk i of every member's source, combines, and puts the result
// into chunk i of every member's dest (reduce-scatter, then all-gather by
// puts). dest may be the same array as source: chunk i of any source is
// read only by member i, before member i writes chunk i anywhere.
func Reduce[T elem.Elem](c Comm, t *Team, op Op, dst, src uint64, n int) error {
	if err := t.SyncAs(c, KindReduce); err != nil {
		return err
	}
	sz := elem.Size[T]()
	lo, hi := chunk(n, t.Size, t.Me)
	if hi > lo {
		m := hi - lo
		acc := make([]T, m)
		tmp := make([]T, m)
		off := uint64(lo * sz)
		copy(elem.Bytes(acc), c.Local(src+off, m*sz))
		for k := 1; k < t.Size; k++ {
			i := (t.Me + k) % t.Size
			if err := c.Get(elem.Bytes(tmp), t.PE(i), src+off); err != nil {
				return t.abort(KindReduce, err)
			}
			combine(op, acc, tmp)
		}
		b := elem.Bytes(acc)
		for k := 0; k < t.Size; k++ {
			i := (t.Me + k) % t.Size
			if err := c.Put(t.PE(i), dst+off, b); err != nil {
				return t.abort(KindReduce, err)
			}
		}
	}
	return t.BarrierAs(c, KindReduce)
}

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

func combine[T elem.Elem](op Op, acc, x []T) {
	switch op {
	case OpSum:
		for i := range acc {
			acc[i] += x[i]
		}
	case OpProd:
		for i := range acc {
			acc[i] *= x[i]
		}
	case OpMin:
		for i := range acc {
			if x[i] < acc[i] {
				acc[i] = x[i]
			}
		}
	case OpMax:
		for i := range acc {
			if x[i] > acc[i] {
				acc[i] = x[i]
			}
		}
	default:
		bitwise(op, acc, x)
	}
}

// bitwise applies and/or/xor on the raw bits (callers reject floats).
func bitwise[T elem.Elem](op Op, acc, x []T) {
	a, b := elem.Bytes(acc), elem.Bytes(x)
	// Work a word at a time where the slices allow (at least one word, both
	// 8-byte aligned: a narrow T's slice may be neither, and converting its
	// pointer to *uint64 would be invalid); bytes otherwise.
	n := len(a) / 8
	if n == 0 || uintptr(unsafe.Pointer(unsafe.SliceData(a)))%8 != 0 || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 != 0 {
		n = 0
	}
	var aw, bw []uint64
	if n > 0 {
		aw = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(a))), n)
		bw = unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), n)
	}
	for i := range aw {
		switch op {
		case OpAnd:
			aw[i] &= bw[i]
		case OpOr:
			aw[i] |= bw[i]
		case OpXor:
			aw[i] ^= bw[i]
		}
	}
	for i := n * 8; i < len(a); i++ {
		switch op {
		case OpAnd:
			a[i] &= b[i]
		case OpOr:
			a[i] |= b[i]
		case OpXor:
			a[i] ^= b[i]
		}
	}
}
