package shmem

import (
	"math/big"
	"sync"
	"unsafe"

	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
)

// Strided RMA (Ref: OpenSHMEM 1.6 §9.5 shmem_iput, shmem_ibput,
// shmem_iget, shmem_ibget). Strides and offsets count
// elements, not bytes. IPut and IGet move n single elements; IBPut and
// IBGet move nBlocks blocks of blockSize contiguous elements, and their
// strides are the distances between the starts of consecutive blocks (a
// stride equal to blockSize is contiguous data).
//
// Element (or block) k is read from src index srcIdx + k*srcStride and
// written to dst index dstIdx + k*dstStride (srcIdx or dstIdx is 0 on the
// local slice). Strides are signed, as OpenSHMEM's ptrdiff_t: a stride of 0
// reads one source element (block) repeatedly, or writes every element
// (block) to the same place, where the last one, k = n-1, is what remains
// (the copies land in order k = 0, 1, ... wherever they overlap); a negative
// stride walks down from the first index. Every index touched, on the local
// slice and on the symmetric array, must lie inside it: the call checks the
// lowest and highest before moving anything.
//
// Completion is that of Put and Get: IPut and IBPut return when src may be
// reused, and the data is visible at pe after Quiet (or a barrier), ordered
// by Fence like a put; IGet and IBGet return with dst filled. Data that is
// contiguous on both sides is one Put or Get. Otherwise, on the shm
// transport the elements are copied one by one straight into (or out of)
// the peer's mapping; over ofi, contiguous runs travel as one transfer and
// scattered elements as one operation each (IGet and IBGet then complete
// them with a quiet of the context, which also completes the context's
// earlier operations).

// IPut copies n elements of src, srcStride apart, to dst[dstIdx],
// dst[dstIdx+dstStride], ... on PE pe (shmem_iput). src may be reused when
// IPut returns; the data is visible at pe after Quiet.
func IPut[T Elem](dst Array[T], dstIdx, dstStride int, src []T, srcStride, n, pe int) error {
	return stridedPut(nil, "IPut", dst, dstIdx, dstStride, src, srcStride, 1, n, pe)
}

// IPutCtx is IPut on context c.
func IPutCtx[T Elem](c *Ctx, dst Array[T], dstIdx, dstStride int, src []T, srcStride, n, pe int) error {
	return stridedPut(c, "IPut", dst, dstIdx, dstStride, src, srcStride, 1, n, pe)
}

// IGet copies n elements of src on PE pe, from src[srcIdx] on, srcStride
// apart, to dst[0], dst[dstStride], ... and returns once dst holds them
// (shmem_iget).
func IGet[T Elem](dst []T, dstStride int, src Array[T], srcIdx, srcStride, n, pe int) error {
	return stridedGet(nil, "IGet", dst, dstStride, src, srcIdx, srcStride, 1, n, pe)
}

// IGetCtx is IGet on context c.
func IGetCtx[T Elem](c *Ctx, dst []T, dstStride int, src Array[T], srcIdx, srcStride, n, pe int) error {
	return stridedGet(c, "IGet", dst, dstStride, src, srcIdx, srcStride, 1, n, pe)
}

// IBPut copies nBlocks blocks of blockSize elements: block k of src starts
// at src[k*srcStride] and goes to dst[dstIdx+k*dstStride:] on PE pe
// (shmem_ibput). src may be reused when IBPut returns; the data is visible
// at pe after Quiet.
func IBPut[T Elem](dst Array[T], dstIdx, dstStride int, src []T, srcStride, blockSize, nBlocks, pe int) error {
	return stridedPut(nil, "IBPut", dst, dstIdx, dstStride, src, srcStride, blockSize, nBlocks, pe)
}

// IBPutCtx is IBPut on context c.
func IBPutCtx[T Elem](c *Ctx, dst Array[T], dstIdx, dstStride int, src []T, srcStride, blockSize, nBlocks, pe int) error {
	return stridedPut(c, "IBPut", dst, dstIdx, dstStride, src, srcStride, blockSize, nBlocks, pe)
}

// IBGet copies nBlocks blocks of blockSize elements from PE pe: block k
// starts at src[srcIdx+k*srcStride] there and goes to dst[k*dstStride:]
// (shmem_ibget). It returns once dst holds them.
func IBGet[T Elem](dst []T, dstStride int, src Array[T], srcIdx, srcStride, blockSize, nBlocks, pe int) error {
	return stridedGet(nil, "IBGet", dst, dstStride, src, srcIdx, srcStride, blockSize, nBlocks, pe)
}

// IBGetCtx is IBGet on context c.
func IBGetCtx[T Elem](c *Ctx, dst []T, dstStride int, src Array[T], srcIdx, srcStride, blockSize, nBlocks, pe int) error {
	return stridedGet(c, "IBGet", dst, dstStride, src, srcIdx, srcStride, blockSize, nBlocks, pe)
}

// stridedPut is IPut (bs = 1) and IBPut.
func stridedPut[T Elem](c *Ctx, op string, dst Array[T], dstIdx, dstStride int, src []T, srcStride, bs, nb, pe int) error {
	dk := dataOf(dst.b)
	r, c, err := c.use(op, &pe, dk)
	if err != nil {
		return err
	}
	defer r.leaveData(dk)
	base, err := span(r, dst, op, 0, 0, pe)
	if err != nil {
		return err
	}
	if err := checkStrided(r, op, op == "IBPut", "dst", dst.Len(), pe, dstIdx, dstStride, "src", len(src), srcStride, bs, nb); err != nil {
		return err
	}
	if bs == 0 || nb == 0 {
		return nil
	}
	sz := elem.Size[T]()
	t := r.trFor(dst.b, pe)
	at := func(k int) uint64 { return base + uint64(dstIdx+k*dstStride)*uint64(sz) }
	if nb == 1 || (dstStride == bs && srcStride == bs) {
		// One contiguous run on both sides: one Put (a memmove on shm).
		return t.Put(c.q, pe, at(0), elem.Bytes(src[:bs*nb]))
	}
	if p := r.direct(dst.b, pe); p != nil {
		copyBlocks(unsafe.Add(p, dstIdx*sz), dstStride*sz, unsafe.Pointer(&src[0]), srcStride*sz, bs*sz, nb, sz)
		return nil
	}
	block := func(k int) []byte { return elem.Bytes(src[k*srcStride : k*srcStride+bs]) }
	switch {
	case dstStride == 0:
		// Every block lands on the same elements; the last remains.
		return t.Put(c.q, pe, at(nb-1), block(nb-1))
	case dstStride == bs && bs <= scratchBytes/sz:
		// Contiguous at the target: gather the blocks and put the runs.
		s := getScratch()
		defer putScratch(s)
		per := scratchBytes / sz / bs
		for k := 0; k < nb; k += per {
			m := min(per, nb-k)
			copyBlocks(unsafe.Pointer(&s[0]), bs*sz, unsafe.Pointer(&src[k*srcStride]), srcStride*sz, bs*sz, m, sz)
			if err := t.Put(c.q, pe, at(k), s[:m*bs*sz]); err != nil {
				return err
			}
		}
		return nil
	}
	// One put per block; where target blocks overlap, fences keep them in
	// order so the later block remains.
	overlap := dstStride < bs && dstStride > -bs
	for k := 0; k < nb; k++ {
		if overlap && k > 0 {
			if err := t.Fence(c.q); err != nil {
				return err
			}
		}
		if err := t.Put(c.q, pe, at(k), block(k)); err != nil {
			return err
		}
	}
	return nil
}

// stridedGet is IGet (bs = 1) and IBGet.
func stridedGet[T Elem](c *Ctx, op string, dst []T, dstStride int, src Array[T], srcIdx, srcStride, bs, nb, pe int) error {
	dk := dataOf(src.b)
	r, c, err := c.use(op, &pe, dk)
	if err != nil {
		return err
	}
	defer r.leaveData(dk)
	base, err := span(r, src, op, 0, 0, pe)
	if err != nil {
		return err
	}
	if err := checkStrided(r, op, op == "IBGet", "src", src.Len(), pe, srcIdx, srcStride, "dst", len(dst), dstStride, bs, nb); err != nil {
		return err
	}
	if bs == 0 || nb == 0 {
		return nil
	}
	sz := elem.Size[T]()
	t := r.trFor(src.b, pe)
	at := func(k int) int { return srcIdx + k*srcStride }
	off := func(i int) uint64 { return base + uint64(i)*uint64(sz) }
	if nb == 1 || (dstStride == bs && srcStride == bs) {
		// One contiguous run on both sides: one Get (a memmove on shm).
		return t.Get(c.q, elem.Bytes(dst[:bs*nb]), pe, off(at(0)))
	}
	if p := r.direct(src.b, pe); p != nil {
		copyBlocks(unsafe.Pointer(&dst[0]), dstStride*sz, unsafe.Add(p, srcIdx*sz), srcStride*sz, bs*sz, nb, sz)
		return nil
	}
	block := func(k int) []byte { return elem.Bytes(dst[k*dstStride : k*dstStride+bs]) }
	if dstStride == 0 {
		return t.Get(c.q, block(nb-1), pe, off(at(nb-1)))
	}
	scratchElems := scratchBytes / sz
	gap := srcStride - bs
	if srcStride < 0 {
		gap = -srcStride - bs
	}
	if bs <= scratchElems && gap*sz <= coverGap {
		// Read the span that covers a run of blocks (the gaps between them
		// too) and pick the blocks out: one transfer instead of many.
		s := getScratch()
		defer putScratch(s)
		per := nb
		if srcStride != 0 {
			per = (scratchElems-bs)/max(srcStride, -srcStride) + 1
		}
		for k := 0; k < nb; k += per {
			m := min(per, nb-k)
			lo := min(at(k), at(k+m-1))
			hi := max(at(k), at(k+m-1)) + bs
			if err := t.Get(c.q, s[:(hi-lo)*sz], pe, off(lo)); err != nil {
				return err
			}
			copyBlocks(unsafe.Pointer(&dst[k*dstStride]), dstStride*sz, unsafe.Pointer(&s[(at(k)-lo)*sz]), srcStride*sz, bs*sz, m, sz)
		}
		return nil
	}
	if dstStride < bs && dstStride > -bs {
		// Local blocks overlap: blocking gets, in order.
		for k := 0; k < nb; k++ {
			if err := t.Get(c.q, block(k), pe, off(at(k))); err != nil {
				return err
			}
		}
		return nil
	}
	for k := 0; k < nb; k++ {
		if err := t.GetNBI(c.q, block(k), pe, off(at(k))); err != nil {
			return err
		}
	}
	return c.scope.Quiet(r.policy, r.checkPeers)
}

// direct is the load/store address of element 0 of b on pe when the shm
// transport carries this PE's RMA to pe, else nil (ofi and the other
// transports, GPU arrays).
func (r *runtime) direct(b *block, pe int) unsafe.Pointer {
	if b.dev {
		return nil
	}
	return unsafe.Pointer(r.c.Word(pe, b.off))
}

// copyBlocks copies nb blocks of bsb bytes from s to d, block k from byte
// offset k*ssb of s to k*dsb of d, in order k = 0, 1, ... (strides may be
// zero or negative). Single elements (bsb == sz) go through a typed loop:
// no call per element.
func copyBlocks(d unsafe.Pointer, dsb int, s unsafe.Pointer, ssb int, bsb, nb, sz int) {
	if bsb == sz {
		switch sz {
		case 8:
			strideCopy[uint64](d, dsb, s, ssb, nb)
		case 4:
			strideCopy[uint32](d, dsb, s, ssb, nb)
		case 2:
			strideCopy[uint16](d, dsb, s, ssb, nb)
		default:
			strideCopy[uint8](d, dsb, s, ssb, nb)
		}
		return
	}
	di, si := 0, 0
	for k := 0; k < nb; k++ {
		copy(unsafe.Slice((*byte)(unsafe.Add(d, di)), bsb), unsafe.Slice((*byte)(unsafe.Add(s, si)), bsb))
		di += dsb
		si += ssb
	}
}

// strideCopy copies n words of W, ds and ss bytes apart. Pointers are
// formed only for elements inside the arrays (never one past the end).
func strideCopy[W uint8 | uint16 | uint32 | uint64](d unsafe.Pointer, ds int, s unsafe.Pointer, ss int, n int) {
	di, si := 0, 0
	for ; n >= 4; n -= 4 {
		*(*W)(unsafe.Add(d, di)) = *(*W)(unsafe.Add(s, si))
		*(*W)(unsafe.Add(d, di+ds)) = *(*W)(unsafe.Add(s, si+ss))
		*(*W)(unsafe.Add(d, di+2*ds)) = *(*W)(unsafe.Add(s, si+2*ss))
		*(*W)(unsafe.Add(d, di+3*ds)) = *(*W)(unsafe.Add(s, si+3*ss))
		di += 4 * ds
		si += 4 * ss
	}
	for ; n > 0; n-- {
		*(*W)(unsafe.Add(d, di)) = *(*W)(unsafe.Add(s, si))
		di += ds
		si += ss
	}
}

// The staging buffer of the ofi paths: gathers for puts, covering spans
// for gets (a get reads the gaps between blocks when they are at most
// coverGap bytes, instead of one operation per block).
const (
	scratchBytes = 64 << 10
	coverGap     = 512
)

var scratchPool = sync.Pool{New: func() any { return new([scratchBytes]byte) }}

func getScratch() []byte  { return scratchPool.Get().(*[scratchBytes]byte)[:] }
func putScratch(s []byte) { scratchPool.Put((*[scratchBytes]byte)(s)) }

// checkStrided checks the counts (blocks: IBPut/IBGet, else n single
// elements) and that every index the transfer touches lies inside the
// symmetric array (n elements on pe, argument sym, from idx, stride apart)
// and the local slice (local elements, argument loc, from 0, lstride apart).
func checkStrided(r *runtime, op string, blocks bool, sym string, n, pe, idx, stride int, loc string, local, lstride, bs, nb int) error {
	switch {
	case !blocks && nb < 0:
		return errs.New(errs.ErrInvalidArgument, r.me, op, "n = %d; must be >= 0", nb)
	case bs < 0:
		return errs.New(errs.ErrInvalidArgument, r.me, op, "blockSize = %d; must be >= 0", bs)
	case nb < 0:
		return errs.New(errs.ErrInvalidArgument, r.me, op, "nBlocks = %d; must be >= 0", nb)
	}
	if bs == 0 || nb == 0 {
		if idx < 0 || idx > n {
			return errs.New(errs.ErrOutOfBounds, r.me, op, "%sIdx = %d on PE %d; must be in [0, %d]", sym, idx, pe, n)
		}
		return nil
	}
	if !fits(idx, stride, bs, nb, n) {
		return errs.New(errs.ErrOutOfBounds, r.me, op, "%sIdx = %d, %sStride = %d, %s reach %s indices %s on PE %d, outside the array's [0, %d)",
			sym, idx, sym, stride, counts(blocks, bs, nb), sym, reached(idx, stride, bs, nb), pe, n)
	}
	if !fits(0, lstride, bs, nb, local) {
		return errs.New(errs.ErrOutOfBounds, r.me, op, "%sStride = %d, %s reach %s indices %s, outside %s's [0, %d)",
			loc, lstride, counts(blocks, bs, nb), loc, reached(0, lstride, bs, nb), loc, local)
	}
	return nil
}

// counts names the count arguments in a range error.
func counts(blocks bool, bs, nb int) string {
	if blocks {
		return sprintf("blockSize = %d, nBlocks = %d", bs, nb)
	}
	return sprintf("n = %d", nb)
}

// fits reports whether nb >= 1 blocks of bs >= 1 elements, block k from
// base + k*stride, all lie in [0, limit), without overflowing int: the
// blocks run monotonically from the first to the last, so those two decide.
func fits(base, stride, bs, nb, limit int) bool {
	if base < 0 || base >= limit || bs > limit-base {
		return false
	}
	k := nb - 1
	switch {
	case k == 0 || stride == 0:
		return true
	case stride > 0:
		return k <= (limit-bs-base)/stride
	case stride == -stride: // math.MinInt: one step leaves the array
		return false
	default:
		return k <= base/-stride
	}
}

// reached is the lowest to the highest index touched, "lo..hi", computed
// exactly (big integers: error texts only).
func reached(base, stride, bs, nb int) string {
	first := big.NewInt(int64(base))
	last := new(big.Int).Mul(big.NewInt(int64(nb-1)), big.NewInt(int64(stride)))
	last.Add(last, first)
	lo, hi := first, last
	if lo.Cmp(hi) > 0 {
		lo, hi = hi, lo
	}
	hi = new(big.Int).Add(hi, big.NewInt(int64(bs-1)))
	return lo.String() + ".." + hi.String()
}
