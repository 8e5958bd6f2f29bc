package shmem

import (
	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/transport"
)

// Put copies src into dst[dstIdx : dstIdx+len(src)] on PE pe. src may be
// reused when Put returns; the data is visible at pe after Quiet (or a
// barrier), and ordered before later puts to pe by Fence
// (Ref: OpenSHMEM 1.6 §9.5.1 shmem_put).
func Put[T Elem](dst Array[T], dstIdx int, src []T, pe int) error {
	return PutCtx(nil, dst, dstIdx, src, pe)
}

// PutCtx is Put on context c (nil: the default context).
func PutCtx[T Elem](c *Ctx, dst Array[T], dstIdx int, src []T, pe int) error {
	dk := dataOf(dst.b)
	r, c, err := c.use("Put", &pe, dk)
	if err != nil {
		return err
	}
	off, err := span(r, dst, "Put", dstIdx, len(src), pe)
	if err != nil {
		r.leaveData(dk)
		return err
	}
	err = r.trFor(dst.b, pe).Put(c.q, pe, off, elem.Bytes(src))
	r.leaveData(dk)
	return r.apiErr(err, "Put")
}

// PutNBI is Put that may return before src has been read: src must not be
// modified until Quiet (Ref: OpenSHMEM 1.6 §9.5.3 shmem_put_nbi).
func PutNBI[T Elem](dst Array[T], dstIdx int, src []T, pe int) error {
	return PutNBICtx(nil, dst, dstIdx, src, pe)
}

// PutNBICtx is PutNBI on context c.
func PutNBICtx[T Elem](c *Ctx, dst Array[T], dstIdx int, src []T, pe int) error {
	dk := dataOf(dst.b)
	r, c, err := c.use("PutNBI", &pe, dk)
	if err != nil {
		return err
	}
	off, err := span(r, dst, "PutNBI", dstIdx, len(src), pe)
	if err != nil {
		r.leaveData(dk)
		return err
	}
	err = r.trFor(dst.b, pe).PutNBI(c.q, pe, off, elem.Bytes(src))
	r.leaveData(dk)
	return r.apiErr(err, "PutNBI")
}

// Get copies src[srcIdx : srcIdx+len(dst)] on PE pe into dst and returns
// once dst holds the data (Ref: OpenSHMEM 1.6 §9.5.2 shmem_get).
func Get[T Elem](dst []T, src Array[T], srcIdx int, pe int) error {
	return GetCtx(nil, dst, src, srcIdx, pe)
}

// GetCtx is Get on context c.
func GetCtx[T Elem](c *Ctx, dst []T, src Array[T], srcIdx int, pe int) error {
	dk := dataOf(src.b)
	r, c, err := c.use("Get", &pe, dk)
	if err != nil {
		return err
	}
	off, err := span(r, src, "Get", srcIdx, len(dst), pe)
	if err != nil {
		r.leaveData(dk)
		return err
	}
	err = r.trFor(src.b, pe).Get(c.q, elem.Bytes(dst), pe, off)
	r.leaveData(dk)
	return r.apiErr(err, "Get")
}

// GetNBI is Get that may return before dst is filled: dst holds the data
// after Quiet (Ref: OpenSHMEM 1.6 §9.5.4 shmem_get_nbi).
func GetNBI[T Elem](dst []T, src Array[T], srcIdx int, pe int) error {
	return GetNBICtx(nil, dst, src, srcIdx, pe)
}

// GetNBICtx is GetNBI on context c.
func GetNBICtx[T Elem](c *Ctx, dst []T, src Array[T], srcIdx int, pe int) error {
	dk := dataOf(src.b)
	r, c, err := c.use("GetNBI", &pe, dk)
	if err != nil {
		return err
	}
	off, err := span(r, src, "GetNBI", srcIdx, len(dst), pe)
	if err != nil {
		r.leaveData(dk)
		return err
	}
	err = r.trFor(src.b, pe).GetNBI(c.q, elem.Bytes(dst), pe, off)
	r.leaveData(dk)
	return r.apiErr(err, "GetNBI")
}

// P writes the single element v to dst[idx] on PE pe. The store is single-
// copy atomic (never torn), so a peer polling the word with WaitUntil sees
// either the old or the new value (Ref: OpenSHMEM 1.6 §9.5.1 shmem_p).
func P[T Elem](dst Array[T], idx int, v T, pe int) error {
	return PCtx(nil, dst, idx, v, pe)
}

// PCtx is P on context c.
func PCtx[T Elem](c *Ctx, dst Array[T], idx int, v T, pe int) error {
	dk := dataOf(dst.b)
	r, c, err := c.use("P", &pe, dk)
	if err != nil {
		return err
	}
	off, err := span(r, dst, "P", idx, 1, pe)
	if err != nil {
		r.leaveData(dk)
		return err
	}
	_, err = r.trFor(dst.b, pe).Atomic(c.q, transport.AMOSet, elem.Size[T](), pe, off, toBits(v), 0)
	r.leaveData(dk)
	return r.apiErr(err, "P")
}

// G reads the single element src[idx] on PE pe (single-copy atomic)
// (Ref: OpenSHMEM 1.6 §9.5.2 shmem_g).
func G[T Elem](src Array[T], idx int, pe int) (T, error) {
	return GCtx(nil, src, idx, pe)
}

// GCtx is G on context c.
func GCtx[T Elem](c *Ctx, src Array[T], idx int, pe int) (T, error) {
	dk := dataOf(src.b)
	r, c, err := c.use("G", &pe, dk)
	if err != nil {
		return 0, err
	}
	off, err := span(r, src, "G", idx, 1, pe)
	if err != nil {
		r.leaveData(dk)
		return 0, err
	}
	bits, err := r.trFor(src.b, pe).Atomic(c.q, transport.AMOFetch, elem.Size[T](), pe, off, 0, 0)
	r.leaveData(dk)
	return fromBits[T](bits), r.apiErr(err, "G")
}
