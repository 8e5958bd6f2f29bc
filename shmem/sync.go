package shmem

import (
	"context"
	"sync/atomic"
	"unsafe"

	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/transport"
)

// Cmp is a comparison for the wait and test calls (Ref: OpenSHMEM 1.6 §9.10).
type Cmp int

// The comparisons: the wait ends when (a[idx] cmp v) holds. The values are
// the device header's GOSHMEM_CMP_* (NVSHMEM's NVSHMEM_CMP_*), so a Cmp
// passed to a kernel means the same there (Ref: NVSHMEM 3.x
// nvshmem_constants.h; consts_test.go reads include/goshmem/defs.h).
const (
	CmpEQ Cmp = 0
	CmpNE Cmp = 1
	CmpGT Cmp = 2
	CmpLE Cmp = 3
	CmpLT Cmp = 4
	CmpGE Cmp = 5
)

var cmpNames = [...]string{CmpEQ: "==", CmpNE: "!=", CmpGT: ">", CmpLE: "<=", CmpLT: "<", CmpGE: ">="}

func (c Cmp) String() string {
	if c < 0 || int(c) >= len(cmpNames) {
		return sprintf("Cmp(%d)", int(c))
	}
	return cmpNames[c]
}

func (c Cmp) valid() bool { return c >= 0 && int(c) < len(cmpNames) }

func compare[T Elem](x T, c Cmp, v T) bool {
	if k := elem.HalfKind[T](); k != elem.NotHalf {
		return compareHalf(k, uint16(x), uint16(v), c)
	}
	switch c {
	case CmpEQ:
		return x == v
	case CmpNE:
		return x != v
	case CmpGT:
		return x > v
	case CmpGE:
		return x >= v
	case CmpLT:
		return x < v
	default:
		return x <= v
	}
}

// load reads *p with acquire order and without tearing. 1- and 2-byte
// elements are read through their aligned 32-bit word.
func load[T Elem](p unsafe.Pointer) T {
	var z T
	switch unsafe.Sizeof(z) {
	case 8:
		return fromBits[T](atomic.LoadUint64((*uint64)(p)))
	case 4:
		return fromBits[T](uint64(atomic.LoadUint32((*uint32)(p))))
	default:
		addr := uintptr(p)
		w := atomic.LoadUint32((*uint32)(unsafe.Add(p, -int(addr&3))))
		return fromBits[T](uint64(w >> ((addr & 3) * 8)))
	}
}

// WaitUntil blocks until this PE's a[idx] satisfies (a[idx] cmp v), which a
// peer makes true with a put, P, atomic or signal. Loads have acquire
// order: data the peer wrote before the word (with Fence or PutSignal) is
// visible once WaitUntil returns (Ref: OpenSHMEM 1.6 §9.10.1). It spins,
// then yields, then sleeps, so oversubscribed nodes keep progressing; with
// GOSHMEM_TIMEOUT set it fails with ErrTimeout naming the word and values.
func WaitUntil[T Elem](a Array[T], idx int, cmp Cmp, v T) error {
	_, err := waitFor(context.Background(), a, "WaitUntil", "a", idx, cmp, v)
	return err
}

// WaitUntilContext is WaitUntil that also ends when ctx is done, with an
// error that matches ctx.Err() (errors.Is). A ctx already done ends it at
// once. The runtime stays usable: the next calls work.
func WaitUntilContext[T Elem](ctx context.Context, a Array[T], idx int, cmp Cmp, v T) error {
	_, err := waitFor(ctx, a, "WaitUntil", "a", idx, cmp, v)
	return err
}

// waitFor is WaitUntil and SignalWaitUntil: it checks the arguments, waits
// on this PE's a[idx] (spin, yield, sleep; GPU arrays by polling device-to-
// host copies) and returns the value that satisfied (a[idx] cmp v), read by
// the load that ended the wait. name labels the array in a timeout error.
// ctx (nil: none) ends the wait when done.
func waitFor[T Elem](ctx context.Context, a Array[T], op, name string, idx int, cmp Cmp, v T) (T, error) {
	r, err := enter(op)
	if err != nil {
		return 0, err
	}
	defer r.leave()
	if err := r.ctxErr(ctx, op); err != nil {
		return 0, err
	}
	off, err := span(r, a, op, idx, 1, r.me)
	if err != nil {
		return 0, err
	}
	if !cmp.valid() {
		return 0, errs.New(errs.ErrInvalidArgument, r.me, op, "cmp = %d; must be one of CmpEQ..CmpGE (0..5)", int(cmp))
	}
	var read func() (T, error)
	if a.b.dev {
		read = func() (T, error) { return loadDevice[T](r, off) }
	} else {
		p := r.localPtr(off)
		read = func() (T, error) { return load[T](p), nil }
	}
	seen, lerr := read()
	if lerr != nil {
		return 0, lerr
	}
	if compare(seen, cmp, v) {
		return seen, nil
	}
	// A failed read ends the wait (done) and is returned, never spun on.
	// Host arrays may be written over ofi: each look drives its progress
	// first (runtime.spinLook), so the data lands while this thread spins.
	var looks waitLooks
	ok, err := waitPolicy(r.policy, ctx).Until(func() bool {
		if !a.b.dev {
			r.spinLook(&looks)
		}
		seen, lerr = read()
		return lerr != nil || compare(seen, cmp, v)
	}, r.checkPeers)
	r.endSpin(&looks)
	if err != nil {
		return 0, errs.Wrap(err, r.me, op, "waiting for %s[%d] %v %v", name, idx, cmp, v)
	}
	if lerr != nil {
		return 0, lerr
	}
	if !ok {
		where := ""
		if a.b.dev {
			where = "GPU array "
		}
		return 0, errs.New(errs.ErrTimeout, r.me, op,
			"waited GOSHMEM_TIMEOUT=%v for %s%s[%d] %v %v (%s), value is still %v",
			r.policy.Timeout, where, name, idx, cmp, v, elem.Name[T](), seen)
	}
	return seen, nil
}

// TestCmp reports whether this PE's a[idx] satisfies (a[idx] cmp v) now,
// without waiting (Ref: OpenSHMEM 1.6 §9.10.3 shmem_test).
func TestCmp[T Elem](a Array[T], idx int, cmp Cmp, v T) (bool, error) {
	r, err := enter("TestCmp")
	if err != nil {
		return false, err
	}
	defer r.leave()
	off, err := span(r, a, "TestCmp", idx, 1, r.me)
	if err != nil {
		return false, err
	}
	if !cmp.valid() {
		return false, errs.New(errs.ErrInvalidArgument, r.me, "TestCmp", "cmp = %d; must be one of CmpEQ..CmpGE (0..5)", int(cmp))
	}
	if a.b.dev {
		x, err := loadDevice[T](r, off)
		return err == nil && compare(x, cmp, v), err
	}
	return compare(load[T](r.localPtr(off)), cmp, v), nil
}

// SignalOp is how PutSignal updates the signal word.
type SignalOp int

// Signal operations (Ref: OpenSHMEM 1.6 §9.6 SHMEM_SIGNAL_SET/ADD). The
// values are the device header's GOSHMEM_SIGNAL_* (NVSHMEM's
// NVSHMEM_SIGNAL_SET = 9, NVSHMEM_SIGNAL_ADD = 10), so an op passed to a
// kernel means the same there; every other value (0 included) is refused.
const (
	SignalSet SignalOp = 9
	SignalAdd SignalOp = 10
)

// PutSignal copies src into dst[dstIdx:] on pe and then updates
// sig[sigIdx] on pe with sigVal (set or add). The signal update is ordered
// after the data: a PE that sees the signal (SignalWaitUntil, WaitUntil)
// sees the data (release/acquire; Ref: OpenSHMEM 1.6 §9.6.1
// shmem_put_signal). src is reusable on return.
func PutSignal[T Elem](dst Array[T], dstIdx int, src []T, sig Array[uint64], sigIdx int, sigVal uint64, op SignalOp, pe int) error {
	return PutSignalCtx(nil, dst, dstIdx, src, sig, sigIdx, sigVal, op, pe)
}

// PutSignalCtx is PutSignal on context c.
func PutSignalCtx[T Elem](c *Ctx, dst Array[T], dstIdx int, src []T, sig Array[uint64], sigIdx int, sigVal uint64, op SignalOp, pe int) error {
	dk := max(dataOf(dst.b), dataOf(sig.b))
	r, c, err := c.use("PutSignal", &pe, dk)
	if err != nil {
		return err
	}
	defer r.leaveData(dk)
	off, err := span(r, dst, "PutSignal", dstIdx, len(src), pe)
	if err != nil {
		return err
	}
	soff, err := span(r, sig, "PutSignal (signal)", sigIdx, 1, pe)
	if err != nil {
		return err
	}
	amo := transport.AMOSet
	switch op {
	case SignalSet:
	case SignalAdd:
		amo = transport.AMOAdd
	default:
		return errs.New(errs.ErrInvalidArgument, r.me, "PutSignal", "op = %d; must be SignalSet (9) or SignalAdd (10)", int(op))
	}
	t := r.trFor(dst.b, pe)
	if err := t.Put(c.q, pe, off, elem.Bytes(src)); err != nil {
		return err
	}
	// The signal must not overtake the data: fence the context's queue.
	// (When data and signal live in different heaps, the data transport's
	// Put has completed before the signal's transport sees anything.)
	if err := t.Fence(c.q); err != nil {
		return err
	}
	_, err = r.trFor(sig.b, pe).Atomic(c.q, amo, 8, pe, soff, sigVal, 0)
	return err
}

// SignalWaitUntil waits until this PE's sig[idx] satisfies (sig[idx] cmp v)
// and returns the value that satisfied it, read by the same acquire load
// that ended the wait (Ref: OpenSHMEM 1.6 §9.6.3 shmem_signal_wait_until).
func SignalWaitUntil(sig Array[uint64], idx int, cmp Cmp, v uint64) (uint64, error) {
	return waitFor(context.Background(), sig, "SignalWaitUntil", "sig", idx, cmp, v)
}

// SignalWaitUntilContext is SignalWaitUntil that also ends when ctx is
// done, with an error that matches ctx.Err() (errors.Is). The runtime
// stays usable: the next calls work.
func SignalWaitUntilContext(ctx context.Context, sig Array[uint64], idx int, cmp Cmp, v uint64) (uint64, error) {
	return waitFor(ctx, sig, "SignalWaitUntil", "sig", idx, cmp, v)
}

// SignalFetch atomically reads this PE's sig[idx] (shmem_signal_fetch).
func SignalFetch(sig Array[uint64], idx int) (uint64, error) {
	r, err := enter("SignalFetch")
	if err != nil {
		return 0, err
	}
	defer r.leave()
	return amo(nil, "SignalFetch", transport.AMOFetch, false, sig, idx, 0, 0, r.me)
}
