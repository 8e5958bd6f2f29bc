package shmem

import (
	"fmt"
	"math/bits"
	"unsafe"

	"github.com/goshmem/goshmem/internal/collectives"
	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
)

// Collect concatenates n elements of src from every member of t into dst
// on every member, in team order: member i's block lands right after the
// blocks of members 0..i-1, so dst needs the sum of every member's n. n may
// differ from member to member (Ref: OpenSHMEM 1.6 §9.9 shmem_collect).
//
// Every member of t calls it. On return this PE's dst holds every block
// and src may be reused; the call does not complete other outstanding
// operations. When a member's n is negative or exceeds its src, that member
// returns ErrInvalidArgument or ErrOutOfBounds for its own n and every other
// member returns ErrInvalidArgument naming it; when the counts add up to
// more than dst holds, every member returns ErrOutOfBounds. Either way no
// dst is written and the team stays usable.
func Collect[T Elem](t Team, dst, src Array[T], n int) error {
	const op = "Collect"
	r, err := enter(op)
	if err != nil {
		return err
	}
	defer r.leave()
	ct, err := r.lockTeam(t, op)
	if err != nil {
		return err
	}
	defer ct.Unlock()
	if err := collArgs(r, op, dst, src, 0, 0); err != nil {
		return err
	}
	var local error
	switch {
	case n < 0:
		local = errs.New(errs.ErrInvalidArgument, r.me, op, "n = %d; must be >= 0", n)
	case n > src.b.n:
		local = errs.New(errs.ErrOutOfBounds, r.me, op, "n = %d; src has %d elements (n must be in [0, %d])", n, src.b.n, src.b.n)
	}
	cn := n
	if local != nil {
		cn = -1 // every member fails alike, naming this PE
	}
	err = collectives.Collect(r, ct, dst.b.off, src.b.off, cn, elem.Size[T](), dst.b.n)
	if local != nil {
		return local
	}
	return r.apiErr(err, op)
}

// AllToAllStrided is AllToAll over strided data (Ref: OpenSHMEM 1.6 §9.9
// shmem_alltoalls): member j receives the n elements of src at indices
// j*n*srcStride + k*srcStride (k < n) of every member i, and stores them at
// indices i*n*dstStride + k*dstStride of its dst. Strides count elements
// and must be >= 1; src and dst need (t.NPEs()*n - 1)*stride + 1 elements
// (none when n is 0). Elements of dst between the strided ones are left
// alone.
//
// Every member of t calls it with the same strides and n. On return this
// PE's dst holds every member's block for it and src may be reused; the
// call does not complete other outstanding operations.
func AllToAllStrided[T Elem](t Team, dst, src Array[T], dstStride, srcStride, n int) error {
	const op = "AllToAllStrided"
	r, err := enter(op)
	if err != nil {
		return err
	}
	defer r.leave()
	ct, err := r.lockTeam(t, op)
	if err != nil {
		return err
	}
	defer ct.Unlock()
	if err := collArgs(r, op, dst, src, 0, 0); err != nil {
		return err
	}
	if n < 0 {
		return errs.New(errs.ErrInvalidArgument, r.me, op, "n = %d; must be >= 0", n)
	}
	for _, x := range []struct {
		name   string
		stride int
		len    int
	}{{"dstStride", dstStride, dst.b.n}, {"srcStride", srcStride, src.b.n}} {
		if x.stride < 1 {
			return errs.New(errs.ErrInvalidArgument, r.me, op, "%s = %d; must be >= 1", x.name, x.stride)
		}
		need, ok := stridedLen(ct.Size, n, x.stride)
		if !ok || need > uint64(x.len) {
			what := "more than 2^64"
			if ok {
				what = fmt.Sprint(need)
			}
			return errs.New(errs.ErrOutOfBounds, r.me, op,
				"%s needs %s elements ((%d members * n %d - 1) * %s %d + 1), has %d",
				x.name[:3], what, ct.Size, n, x.name, x.stride, x.len)
		}
	}
	return r.apiErr(collectives.AllToAllStrided(r, ct, dst.b.off, src.b.off, dstStride, srcStride, n, elem.Size[T]()), op)
}

// stridedLen is (size*n - 1)*stride + 1 (0 when n is 0), and false when it
// overflows a uint64.
func stridedLen(size, n, stride int) (uint64, bool) {
	if n == 0 {
		return 0, true
	}
	hi, cnt := bits.Mul64(uint64(size), uint64(n))
	if hi != 0 {
		return 0, false
	}
	hi, span := bits.Mul64(cnt-1, uint64(stride))
	if hi != 0 || span == ^uint64(0) {
		return 0, false
	}
	return span + 1, true
}

// SumInScan is an inclusive prefix sum over t, element by element: member
// i's dst[k] receives src[k] summed over members 0..i (Ref: OpenSHMEM 1.6
// §9.9 shmem_sum_inscan). dst may be src. Sums are taken in team order, so
// floating-point results are those of the sequential sum.
//
// Every member of t calls it with the same n. On return this PE's dst holds
// its prefix and src may be reused; the call does not complete other
// outstanding operations.
func SumInScan[T Elem](t Team, dst, src Array[T], n int) error {
	return scan(t, dst, src, n, false, "SumInScan")
}

// SumExScan is SumInScan excluding each member's own src: member i's
// dst[k] receives src[k] summed over members 0..i-1, and member 0's dst
// receives zeros (Ref: OpenSHMEM 1.6 §9.9 shmem_sum_exscan).
func SumExScan[T Elem](t Team, dst, src Array[T], n int) error {
	return scan(t, dst, src, n, true, "SumExScan")
}

func scan[T Elem](t Team, dst, src Array[T], n int, exclusive bool, op string) error {
	r, err := enter(op)
	if err != nil {
		return err
	}
	defer r.leave()
	ct, err := r.lockTeam(t, op)
	if err != nil {
		return err
	}
	defer ct.Unlock()
	if err := collArgs(r, op, dst, src, n, n); err != nil {
		return err
	}
	return r.apiErr(collectives.Scan[T](r, ct, exclusive, dst.b.off, src.b.off, n), op)
}

// Mem implements collectives.Direct: pe's memory [off, off+n) when pe is
// reached over shared memory (not over ofi), else nil.
func (r *runtime) Mem(pe int, off uint64, n int) []byte {
	p := r.c.Word(pe, off)
	if p == nil {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), n)
}
