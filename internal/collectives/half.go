package collectives

import "github.com/goshmem/goshmem/internal/elem"

// Reductions and scans of Float16 and BFloat16 (elem.HalfKind): every
// element is accumulated in float32 over the team, in team order, and
// rounded to the element type once, when it is written. The result is the
// float32 fold's rounded, the same bits on every member, and a long sum
// does not lose what rounding every partial sum to 11 (or 8) significant
// bits would. This is the accumulation NVSHMEM's NVLS reductions of half
// and bfloat16 ask of the switch (Ref: PTX ISA multimem.ld_reduce
// .acc::f32 with .f16x2/.bf16x2) and what cuBLAS/NCCL-style mixed
// precision does; OpenSHMEM 1.6 has no half types.
//
// The data movement is Reduce's and Scan's (small vectors through the
// team scratch, larger ones a chunk per member); only the fold differs.

// halfBlock is how many elements a half reduction folds at a time (their
// float32 accumulators fill reduceBlock bytes).
const halfBlock = reduceBlock / 4

// widen converts n half elements (bits in b) of the given kind to float32,
// into acc (first) or folded into it with op.
func foldHalf(kind int, op Op, acc []float32, b []byte, first bool) {
	x := asT[uint16](b)[:len(acc)]
	for j, h := range x {
		var v float32
		if kind == elem.KindFloat16 {
			v = elem.Float16(h).Float32()
		} else {
			v = elem.BFloat16(h).Float32()
		}
		switch {
		case first:
			acc[j] = v
		case op == OpSum:
			acc[j] += v
		case op == OpProd:
			acc[j] *= v
		case op == OpMin:
			if v < acc[j] {
				acc[j] = v
			}
		case op == OpMax:
			if v > acc[j] {
				acc[j] = v
			}
		}
	}
}

// narrow rounds acc to half elements of the given kind into out's bytes.
func narrow(kind int, out []byte, acc []float32) {
	o := asT[uint16](out)[:len(acc)]
	for j, v := range acc {
		if kind == elem.KindFloat16 {
			o[j] = uint16(elem.Float16FromFloat32(v))
		} else {
			o[j] = uint16(elem.BFloat16FromFloat32(v))
		}
	}
}

// reduceHalf is Reduce for half kinds (sum, prod, min, max; the caller
// refuses bitwise operators on floating point).
func reduceHalf(c Comm, t *Team, kind int, op Op, dst, src uint64, n int) error {
	nb := 2 * n
	if nb <= TeamScratchSize {
		copy(t.publish(c, nb), c.Local(src, nb))
		if err := t.SyncAs(c, KindReduce); err != nil {
			return err
		}
		acc := asT[float32](t.buffer(2, 4*n))
		for i := 0; i < t.Size; i++ {
			v, err := t.view(c, i, t.published(), nb, 0)
			if err != nil {
				return t.abort(KindReduce, err)
			}
			foldHalf(kind, op, acc, v, i == 0)
		}
		narrow(kind, c.Local(dst, nb), acc)
		return nil
	}
	if err := t.SyncAs(c, KindReduce); err != nil {
		return err
	}
	if err := halfChunks(c, t, kind, op, foldReduce, dst, src, n); err != nil {
		return t.abort(KindReduce, err)
	}
	return t.BarrierAs(c, KindReduce)
}

// scanHalf is Scan for half kinds.
func scanHalf(c Comm, t *Team, kind int, exclusive bool, dst, src uint64, n int) error {
	nb := 2 * n
	if nb <= TeamScratchSize {
		copy(t.publish(c, nb), c.Local(src, nb))
		if err := t.SyncAs(c, KindScan); err != nil {
			return err
		}
		last := t.Me
		if exclusive {
			last--
		}
		d := c.Local(dst, nb)
		if last < 0 {
			clear(d)
			return nil
		}
		acc := asT[float32](t.buffer(2, 4*n))
		for i := 0; i <= last; i++ {
			v, err := t.view(c, i, t.published(), nb, 0)
			if err != nil {
				return t.abort(KindScan, err)
			}
			foldHalf(kind, OpSum, acc, v, i == 0)
		}
		narrow(kind, d, acc)
		return nil
	}
	if err := t.SyncAs(c, KindScan); err != nil {
		return err
	}
	fold := foldInScan
	if exclusive {
		fold = foldExScan
	}
	if err := halfChunks(c, t, kind, OpSum, fold, dst, src, n); err != nil {
		return t.abort(KindScan, err)
	}
	return t.BarrierAs(c, KindScan)
}

// halfChunks is chunked for half kinds: this member's chunk, halfBlock
// elements at a time, folded in float32 in team order. Every member's
// source block is read before any dest block that may alias it is
// written: a reduction writes after the whole fold; a scan writes member
// i's prefix after reading member i's block (an exclusive scan rounds the
// prefix before adding member i's block, and writes it after).
func halfChunks(c Comm, t *Team, kind int, op Op, fold int, dst, src uint64, n int) error {
	lo, hi := chunk(n, t.Size, t.Me)
	for b := lo; b < hi; b += halfBlock {
		m := min(halfBlock, hi-b)
		off := uint64(2 * b)
		acc := asT[float32](t.buffer(2, 4*m))
		out := t.buffer(3, 2*m)
		for i := 0; i < t.Size; i++ {
			v, err := t.view(c, i, src+off, 2*m, 0)
			if err != nil {
				return err
			}
			switch fold {
			case foldExScan:
				if i == 0 {
					clear(out)
				} else {
					narrow(kind, out, acc)
				}
				foldHalf(kind, op, acc, v, i == 0) // reads member i's block before its dest is written
				err = t.writeTo(c, i, dst+off, out)
			case foldInScan:
				foldHalf(kind, op, acc, v, i == 0)
				narrow(kind, out, acc)
				err = t.writeTo(c, i, dst+off, out)
			default:
				foldHalf(kind, op, acc, v, i == 0)
			}
			if err != nil {
				return err
			}
		}
		if fold == foldReduce {
			narrow(kind, out, acc)
			for k := 0; k < t.Size; k++ {
				if err := t.writeTo(c, (t.Me+k)%t.Size, dst+off, out); err != nil { // staggered targets
					return err
				}
			}
		}
	}
	return nil
}
