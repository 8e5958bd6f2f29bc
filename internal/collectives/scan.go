package collectives

import "github.com/goshmem/goshmem/internal/elem"

// Scan is a prefix sum over the team, element by element: member i's dest
// receives the sum of members 0..i's sources (inclusive) or of members
// 0..i-1 (exclusive; member 0's dest receives zeros, the sum's identity).
// dest may be the same array as source. Sums are taken in team order, so
// every member's floating-point result is the same bits as a sequential
// prefix sum would give (Ref: OpenSHMEM 1.6 §9.9 shmem_sum_inscan,
// shmem_sum_exscan).
//
// Small vectors take one sync (see gather.go): member i adds up the
// published vectors of the members before it. Larger ones are split in
// chunks like Reduce: member k folds chunk k of every source in team order
// and writes each member its prefix.
func Scan[T elem.Elem](c Comm, t *Team, exclusive bool, dst, src uint64, n int) error {
	if k := elem.HalfKind[T](); k != elem.NotHalf {
		return scanHalf(c, t, k, exclusive, dst, src, n) // accumulated in float32 (half.go)
	}
	sz := elem.Size[T]()
	nb := n * sz
	if nb <= TeamScratchSize {
		copy(t.publish(c, nb), c.Local(src, nb))
		if err := t.SyncAs(c, KindScan); err != nil {
			return err
		}
		last := t.Me // the members whose vectors this member adds
		if exclusive {
			last--
		}
		d := c.Local(dst, nb)
		if last < 0 {
			clear(d)
			return nil
		}
		if err := t.readInto(c, d, 0, t.published()); err != nil {
			return t.abort(KindScan, err)
		}
		for i := 1; i <= last; i++ {
			v, err := t.view(c, i, t.published(), nb, 0)
			if err != nil {
				return t.abort(KindScan, err)
			}
			addTo(asT[T](d), asT[T](v))
		}
		return nil
	}
	if err := t.SyncAs(c, KindScan); err != nil {
		return err
	}
	fold := foldInScan
	if exclusive {
		fold = foldExScan
	}
	if err := chunked[T](c, t, OpSum, fold, dst, src, n); err != nil {
		return t.abort(KindScan, err)
	}
	return t.BarrierAs(c, KindScan)
}
