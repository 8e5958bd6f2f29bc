package collectives

import (
	"unsafe"

	"github.com/goshmem/goshmem/internal/errs"
)

// collectHeader is the bytes before a Collect contribution in the team
// scratch: the member's element count (int64; < 0: its own arguments were
// invalid).
const collectHeader = 8

// Collect concatenates every member's source[0:n) (n elements of sz bytes,
// n may differ per member) into dest in team order: member i's block lands
// after the blocks of members 0..i-1 (Ref: OpenSHMEM 1.6 §9.9
// shmem_collect). dstLen is dest's length in elements, the same on every
// member (a symmetric array). A member passes n < 0 when its own arguments
// failed their checks (it reports its own error); every member then fails
// with ErrInvalidArgument naming it, and when the counts add up to more
// than dstLen every member fails with ErrOutOfBounds. Both failures happen
// alike on every member after one sync, so the team stays in step.
//
// Every member publishes its count in the team scratch, and its block too
// when it fits there; after the sync each member reads every count. When
// every block was published, each member copies them into its own dest
// (one sync); otherwise every member puts its block into every member's
// dest at its offset and a barrier ends the call.
func Collect(c Comm, t *Team, dst, src uint64, n, sz, dstLen int) error {
	const room = TeamScratchSize - collectHeader
	nb := max(n, 0) * sz
	fits := n >= 0 && nb <= room
	pub := t.publish(c, collectHeader)
	putU64(pub, uint64(int64(n)))
	if fits {
		copy(t.publish(c, collectHeader+nb)[collectHeader:], c.Local(src, nb))
	}
	if err := t.SyncAs(c, KindCollect); err != nil {
		return err
	}
	// at[i] is member i's block offset in dest (elements), at[Size] the
	// total; member i's count is at[i+1] - at[i].
	if cap(t.counts) < t.Size+1 {
		t.counts = make([]int, t.Size+1)
	}
	at := t.counts[:t.Size+1]
	at[0] = 0
	all := true
	bad := -1
	for i := 0; i < t.Size; i++ {
		v, err := t.view(c, i, t.published(), collectHeader, 0)
		if err != nil {
			return t.abort(KindCollect, err)
		}
		ci := int(int64(getU64(v)))
		if ci < 0 {
			if bad < 0 {
				bad = i
			}
			ci = 0
		}
		at[i+1] = at[i] + ci
		all = all && ci*sz <= room
	}
	me := c.MyPE()
	if bad >= 0 {
		return errs.New(errs.ErrInvalidArgument, me, KindCollect.String(),
			"PE %d passed an invalid n or src (its own error says which); no member collected", t.PE(bad))
	}
	if total := at[t.Size]; total > dstLen {
		return errs.New(errs.ErrOutOfBounds, me, KindCollect.String(),
			"dst needs %d elements (the sum of every member's n), has %d", total, dstLen)
	}
	if all {
		for i := 0; i < t.Size; i++ {
			d := c.Local(dst+uint64(at[i]*sz), (at[i+1]-at[i])*sz)
			if err := t.readInto(c, d, i, t.published()+collectHeader); err != nil {
				return t.abort(KindCollect, err)
			}
		}
		return nil
	}
	for k := 0; k < t.Size; k++ {
		i := (t.Me + k) % t.Size
		if t.maps(c, i) { // member i's block into this dest, read in place
			ni := (at[i+1] - at[i]) * sz
			memcopy(c.Local(dst+uint64(at[i]*sz), ni), t.mem(c, i, src, ni))
			continue
		}
		if nb > 0 { // this block into member i's dest (it puts its own here)
			if err := c.Put(t.PE(i), dst+uint64(at[t.Me]*sz), c.Local(src, nb)); err != nil {
				return t.abort(KindCollect, err)
			}
		}
	}
	return t.BarrierAs(c, KindCollect)
}

// AllToAllStrided is AllToAll over strided blocks (Ref: OpenSHMEM 1.6 §9.9
// shmem_alltoalls): block j of this member's source, the n elements (of sz
// bytes) at element indices j*n*srcStride + k*srcStride, goes to member j,
// where it lands at element indices Me*n*dstStride + k*dstStride of dest
// (k < n; strides >= 1).
//
// Up to TeamScratchSize bytes of blocks per member it takes one sync: each
// member packs its blocks into its team scratch and unpacks the members'
// blocks for it. Larger ones store straight into each member's dest where
// this PE maps it (Put otherwise: one per block at dest stride 1, one per
// element above), between a sync and a barrier.
func AllToAllStrided(c Comm, t *Team, dst, src uint64, dstStride, srcStride, n, sz int) error {
	nb := n * sz
	if t.Size*nb <= TeamScratchSize {
		pub := t.publish(c, t.Size*nb)
		for j := 0; j < t.Size; j++ {
			s := c.Local(src+uint64(j*n*srcStride*sz), extent(n, srcStride, sz))
			stridedCopy(pub[j*nb:(j+1)*nb], 1, s, srcStride, n, sz)
		}
		if err := t.SyncAs(c, KindAllToAllStrided); err != nil {
			return err
		}
		for i := 0; i < t.Size; i++ {
			d := c.Local(dst+uint64(i*n*dstStride*sz), extent(n, dstStride, sz))
			off := t.published() + uint64(t.Me*nb)
			if dstStride == 1 {
				if err := t.readInto(c, d, i, off); err != nil {
					return t.abort(KindAllToAllStrided, err)
				}
				continue
			}
			v, err := t.view(c, i, off, nb, 0)
			if err != nil {
				return t.abort(KindAllToAllStrided, err)
			}
			stridedCopy(d, dstStride, v, 1, n, sz)
		}
		return nil
	}
	if err := t.SyncAs(c, KindAllToAllStrided); err != nil {
		return err
	}
	for k := 0; k < t.Size; k++ {
		j := (t.Me + k) % t.Size // stagger so members do not all hit one PE first
		s := c.Local(src+uint64(j*n*srcStride*sz), extent(n, srcStride, sz))
		doff := dst + uint64(t.Me*n*dstStride*sz)
		if m := t.mem(c, j, doff, extent(n, dstStride, sz)); m != nil {
			stridedCopy(m, dstStride, s, srcStride, n, sz)
			continue
		}
		packed := s
		if srcStride != 1 {
			packed = t.buffer(0, nb)
			stridedCopy(packed, 1, s, srcStride, n, sz)
		}
		if dstStride == 1 {
			if err := c.Put(t.PE(j), doff, packed); err != nil {
				return t.abort(KindAllToAllStrided, err)
			}
			continue
		}
		for e := 0; e < n; e++ {
			if err := c.Put(t.PE(j), doff+uint64(e*dstStride*sz), packed[e*sz:(e+1)*sz]); err != nil {
				return t.abort(KindAllToAllStrided, err)
			}
		}
	}
	return t.BarrierAs(c, KindAllToAllStrided)
}

// extent is the bytes that n elements of sz bytes at stride span (0 for
// n = 0).
func extent(n, stride, sz int) int {
	if n == 0 {
		return 0
	}
	return ((n-1)*stride + 1) * sz
}

// stridedCopy copies n elements of sz bytes (1, 2, 4 or 8) from src at
// element stride ss to dst at element stride ds.
func stridedCopy(dst []byte, ds int, src []byte, ss int, n, sz int) {
	if n == 0 {
		return
	}
	if ds == 1 && ss == 1 {
		memcopy(dst[:n*sz], src[:n*sz])
		return
	}
	_ = dst[extent(n, ds, sz)-1]
	_ = src[extent(n, ss, sz)-1]
	switch sz {
	case 8:
		stride64(dst, ds, src, ss, n)
	case 4:
		d := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst)/4)
		s := unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(src))), len(src)/4)
		for k := 0; k < n; k++ {
			d[k*ds] = s[k*ss]
		}
	case 2:
		d := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst)/2)
		s := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(src))), len(src)/2)
		for k := 0; k < n; k++ {
			d[k*ds] = s[k*ss]
		}
	default:
		for k := 0; k < n; k++ {
			copy(dst[k*ds*sz:k*ds*sz+sz], src[k*ss*sz:k*ss*sz+sz])
		}
	}
}

func stride64(dst []byte, ds int, src []byte, ss int, n int) {
	d := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(dst))), len(dst)/8)
	s := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(src))), len(src)/8)
	for k := 0; k < n; k++ {
		d[k*ds] = s[k*ss]
	}
}
