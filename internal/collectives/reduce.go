package collectives

import (
	"unsafe"

	"github.com/goshmem/goshmem/internal/elem"
)

// reduceBlock is how many bytes of a chunk a reduction combines at a time:
// the accumulator stays in the L1 cache while every member's block is added
// into it and it is copied out to every dest.
const reduceBlock = 8192

// Reduce combines n elements of every member's source with op into every
// member's dest (an all-reduce; Ref: OpenSHMEM 1.6 §9.9 shmem_reduce).
// dest may be the same array as source.
//
// Small vectors (see gather.go) take one sync: every member combines all
// the members' published vectors itself, in team order, so every member
// computes the same bits. Larger ones are a reduce-scatter and an
// all-gather: member i combines chunk i of every member's source (read in
// place where this PE maps it, else fetched with Get) and writes the result
// into chunk i of every member's dest. Chunk i of any source is read only
// by member i, before member i writes chunk i anywhere, so dest == source
// is safe.
func Reduce[T elem.Elem](c Comm, t *Team, op Op, dst, src uint64, n int) error {
	if k := elem.HalfKind[T](); k != elem.NotHalf {
		return reduceHalf(c, t, k, op, dst, src, n) // accumulated in float32 (half.go)
	}
	sz := elem.Size[T]()
	nb := n * sz
	if nb <= TeamScratchSize {
		copy(t.publish(c, nb), c.Local(src, nb))
		if err := t.SyncAs(c, KindReduce); err != nil {
			return err
		}
		d := c.Local(dst, nb)
		if err := t.readInto(c, d, 0, t.published()); err != nil {
			return t.abort(KindReduce, err)
		}
		for i := 1; i < t.Size; i++ {
			v, err := t.view(c, i, t.published(), nb, 0)
			if err != nil {
				return t.abort(KindReduce, err)
			}
			combine(op, asT[T](d), asT[T](v))
		}
		return nil
	}
	if err := t.SyncAs(c, KindReduce); err != nil {
		return err
	}
	if err := chunked[T](c, t, op, foldReduce, dst, src, n); err != nil {
		return t.abort(KindReduce, err)
	}
	return t.BarrierAs(c, KindReduce)
}

// What chunked computes for member i's dest.
const (
	foldReduce = iota // every dest: member 0 op 1 op ... op Size-1
	foldInScan        // member i's dest: 0 + ... + i
	foldExScan        // member i's dest: 0 + ... + i-1 (zero for i = 0)
)

// chunked runs this member's chunk of a reduce-scatter + all-gather (or of
// a scan), a block at a time: it folds every member's block of source into
// an accumulator, in team order, and writes the fold's result into every
// member's dest block. Member i's source block is read before member i's
// dest block is written, so dest == source is safe.
func chunked[T elem.Elem](c Comm, t *Team, op Op, fold int, dst, src uint64, n int) error {
	sz := elem.Size[T]()
	lo, hi := chunk(n, t.Size, t.Me)
	per := max(reduceBlock/sz, 1)
	if fold == foldReduce {
		return reduceChunk[T](c, t, op, dst, src, lo, hi, per)
	}
	for b := lo; b < hi; b += per {
		m := min(per, hi-b)
		off := uint64(b * sz)
		acc := asT[T](t.buffer(2, m*sz))
		for i := 0; i < t.Size; i++ {
			v, err := t.view(c, i, src+off, m*sz, 0)
			if err != nil {
				return err
			}
			x := asT[T](v)
			switch {
			case i == 0:
				copy(acc, x)
				if fold == foldExScan {
					zero := asT[T](t.buffer(3, m*sz))
					clear(zero)
					err = t.writeTo(c, 0, dst+off, elem.Bytes(zero))
				}
			case fold == foldExScan:
				// Member i gets the fold before its own block, and its
				// block (which may be its dest) must be read first.
				next := asT[T](t.buffer(3, m*sz))
				add2(next, acc, x)
				err = t.writeTo(c, i, dst+off, elem.Bytes(acc))
				t.bufs[2], t.bufs[3] = t.bufs[3], t.bufs[2]
				acc = next
			default:
				combine(op, acc, x)
			}
			if err != nil {
				return err
			}
			if fold == foldInScan {
				if err := t.writeTo(c, i, dst+off, elem.Bytes(acc)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// reduceChunk is chunked's reduction of elements [lo, hi), per at a time:
// the first two members' blocks are combined in one pass, the others
// folded in, and the result copied to every dest. Unless dest is source,
// the fold runs in this member's own dest block (one copy fewer); with
// dest == source it runs in a private buffer, as this member's source
// block is read only in its turn.
func reduceChunk[T elem.Elem](c Comm, t *Team, op Op, dst, src uint64, lo, hi, per int) error {
	sz := elem.Size[T]()
	for b := lo; b < hi; b += per {
		m := min(per, hi-b)
		off := uint64(b * sz)
		inDst := dst != src
		var acc []T
		if inDst {
			acc = asT[T](c.Local(dst+off, m*sz))
		} else {
			acc = asT[T](t.buffer(2, m*sz))
		}
		v0, err := t.view(c, 0, src+off, m*sz, 0)
		if err != nil {
			return err
		}
		if t.Size == 1 {
			copy(acc, asT[T](v0))
		} else {
			v1, err := t.view(c, 1, src+off, m*sz, 1)
			if err != nil {
				return err
			}
			combine2(op, acc, asT[T](v0), asT[T](v1))
		}
		for i := 2; i < t.Size; i++ {
			v, err := t.view(c, i, src+off, m*sz, 0)
			if err != nil {
				return err
			}
			combine(op, acc, asT[T](v))
		}
		for k := 0; k < t.Size; k++ {
			i := (t.Me + k) % t.Size // stagger the writers' targets
			if inDst && i == t.Me {
				continue
			}
			if err := t.writeTo(c, i, dst+off, elem.Bytes(acc)); err != nil {
				return err
			}
		}
	}
	return nil
}

// writeTo copies b into member i's memory at off: a store where this PE
// maps it, else a Put.
func (t *Team) writeTo(c Comm, i int, off uint64, b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if m := t.mem(c, i, off, len(b)); m != nil {
		memcopy(m, b)
		return nil
	}
	return c.Put(t.PE(i), off, b)
}

// combine folds x into acc with op, element by element.
func combine[T elem.Elem](op Op, acc, x []T) {
	x = x[:len(acc)]
	switch op {
	case OpSum:
		addTo(acc, x)
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

// combine2 is out = a op b, element by element, with combine's semantics
// (min and max as its comparisons, NaN included); out may be a, not b.
func combine2[T elem.Elem](op Op, out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	switch op {
	case OpSum:
		add2(out, a, b)
	case OpProd:
		for i := range out {
			out[i] = a[i] * b[i]
		}
	case OpMin:
		for i := range out {
			x := a[i]
			if b[i] < x {
				x = b[i]
			}
			out[i] = x
		}
	case OpMax:
		for i := range out {
			x := a[i]
			if b[i] > x {
				x = b[i]
			}
			out[i] = x
		}
	default:
		copy(out, a)
		bitwise(op, out, b)
	}
}

// add2 is out = a + b, eight elements per iteration (see addTo).
func add2[T elem.Elem](out, a, b []T) {
	a, b = a[:len(out)], b[:len(out)]
	i := 0
	for ; i+8 <= len(out); i += 8 {
		o, x, y := out[i:i+8:i+8], a[i:i+8:i+8], b[i:i+8:i+8]
		o[0] = x[0] + y[0]
		o[1] = x[1] + y[1]
		o[2] = x[2] + y[2]
		o[3] = x[3] + y[3]
		o[4] = x[4] + y[4]
		o[5] = x[5] + y[5]
		o[6] = x[6] + y[6]
		o[7] = x[7] + y[7]
	}
	for ; i < len(out); i++ {
		out[i] = a[i] + b[i]
	}
}

// addTo is acc += x, eight elements per iteration: Go does not vectorize,
// and the loop overhead is a visible share of a memory-bound sum.
func addTo[T elem.Elem](acc, x []T) {
	x = x[:len(acc)]
	i := 0
	for ; i+8 <= len(acc); i += 8 {
		a, b := acc[i:i+8:i+8], x[i:i+8:i+8]
		a[0] += b[0]
		a[1] += b[1]
		a[2] += b[2]
		a[3] += b[3]
		a[4] += b[4]
		a[5] += b[5]
		a[6] += b[6]
		a[7] += b[7]
	}
	for ; i < len(acc); i++ {
		acc[i] += x[i]
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
	switch op {
	case OpAnd:
		for i := range aw {
			aw[i] &= bw[i]
		}
	case OpOr:
		for i := range aw {
			aw[i] |= bw[i]
		}
	case OpXor:
		for i := range aw {
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
