package shmem

import (
	"github.com/goshmem/goshmem/internal/elem"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/transport"
)

// Non-blocking fetching atomics (Ref: OpenSHMEM 1.6 §9.7, the _nbi
// forms of the fetching AMOs). Each takes the address the old value is
// stored through, fetch, then the blocking form's arguments. *fetch is
// valid after the next Quiet of the context (Ctx.Quiet for the ...Ctx
// forms; Quiet and BarrierAll for the default context), and the caller
// must not read or write it before then. The atomic itself has the
// blocking form's atomicity and is ordered like it by Fence.
//
// goshmem performs the atomic when the call is made and stores *fetch
// before returning, on every transport (shm and ofi answer fetching
// atomics synchronously): the operation completes early, which the
// contract allows, so a later Quiet has nothing left to wait for.

// nbiAMO runs one fetching atomic for an NBI call and stores the old value
// through fetch (never on failure).
func nbiAMO[T Elem](c *Ctx, name string, op transport.AMO, intOnly bool, fetch *T, a Array[T], idx int, v, cmp T, pe int) error {
	if fetch == nil {
		r, _, err := c.use(name, &pe, dataOf(a.b))
		if err != nil {
			return err
		}
		r.leaveData(dataOf(a.b))
		return errs.New(errs.ErrInvalidArgument, r.me, name, "fetch is nil; pass the address the old value is stored through")
	}
	old, err := amo(c, name, op, intOnly, a, idx, v, cmp, pe)
	if err != nil {
		return err
	}
	*fetch = old
	return nil
}

// AtomicFetchNBI atomically reads a[idx] on pe into *fetch, valid after
// the next Quiet (shmem_atomic_fetch_nbi; floating-point types included).
func AtomicFetchNBI[T Elem](fetch *T, a Array[T], idx, pe int) error {
	return nbiAMO(nil, "AtomicFetchNBI", transport.AMOFetch, false, fetch, a, idx, 0, 0, pe)
}

// AtomicFetchNBICtx is AtomicFetchNBI on context c (*fetch valid after c.Quiet).
func AtomicFetchNBICtx[T Elem](c *Ctx, fetch *T, a Array[T], idx, pe int) error {
	return nbiAMO(c, "AtomicFetchNBI", transport.AMOFetch, false, fetch, a, idx, 0, 0, pe)
}

// AtomicFetchAddNBI adds v to a[idx] on pe; the old value is in *fetch
// after the next Quiet (shmem_atomic_fetch_add_nbi).
func AtomicFetchAddNBI[T Integer](fetch *T, a Array[T], idx int, v T, pe int) error {
	return nbiAMO(nil, "AtomicFetchAddNBI", transport.AMOAdd, true, fetch, a, idx, v, 0, pe)
}

// AtomicFetchAddNBICtx is AtomicFetchAddNBI on context c.
func AtomicFetchAddNBICtx[T Integer](c *Ctx, fetch *T, a Array[T], idx int, v T, pe int) error {
	return nbiAMO(c, "AtomicFetchAddNBI", transport.AMOAdd, true, fetch, a, idx, v, 0, pe)
}

// AtomicFetchIncNBI adds 1 to a[idx] on pe; the old value is in *fetch
// after the next Quiet (shmem_atomic_fetch_inc_nbi).
func AtomicFetchIncNBI[T Integer](fetch *T, a Array[T], idx, pe int) error {
	return nbiAMO(nil, "AtomicFetchIncNBI", transport.AMOAdd, true, fetch, a, idx, 1, 0, pe)
}

// AtomicFetchIncNBICtx is AtomicFetchIncNBI on context c.
func AtomicFetchIncNBICtx[T Integer](c *Ctx, fetch *T, a Array[T], idx, pe int) error {
	return nbiAMO(c, "AtomicFetchIncNBI", transport.AMOAdd, true, fetch, a, idx, 1, 0, pe)
}

// AtomicSwapNBI stores v into a[idx] on pe; the old value is in *fetch
// after the next Quiet (shmem_atomic_swap_nbi; floating-point types
// included).
func AtomicSwapNBI[T Elem](fetch *T, a Array[T], idx int, v T, pe int) error {
	return nbiAMO(nil, "AtomicSwapNBI", transport.AMOSwap, false, fetch, a, idx, v, 0, pe)
}

// AtomicSwapNBICtx is AtomicSwapNBI on context c.
func AtomicSwapNBICtx[T Elem](c *Ctx, fetch *T, a Array[T], idx int, v T, pe int) error {
	return nbiAMO(c, "AtomicSwapNBI", transport.AMOSwap, false, fetch, a, idx, v, 0, pe)
}

// AtomicCompareSwapNBI stores v into a[idx] on pe if it equals cond; the
// old value, either way, is in *fetch after the next Quiet
// (shmem_atomic_compare_swap_nbi).
func AtomicCompareSwapNBI[T Integer](fetch *T, a Array[T], idx int, cond, v T, pe int) error {
	return nbiAMO(nil, "AtomicCompareSwapNBI", transport.AMOCompareSwap, true, fetch, a, idx, v, cond, pe)
}

// AtomicCompareSwapNBICtx is AtomicCompareSwapNBI on context c.
func AtomicCompareSwapNBICtx[T Integer](c *Ctx, fetch *T, a Array[T], idx int, cond, v T, pe int) error {
	return nbiAMO(c, "AtomicCompareSwapNBI", transport.AMOCompareSwap, true, fetch, a, idx, v, cond, pe)
}

// AtomicFetchAndNBI ands v into a[idx] on pe; the old value is in *fetch
// after the next Quiet (shmem_atomic_fetch_and_nbi).
func AtomicFetchAndNBI[T Integer](fetch *T, a Array[T], idx int, v T, pe int) error {
	return nbiAMO(nil, "AtomicFetchAndNBI", transport.AMOAnd, true, fetch, a, idx, v, 0, pe)
}

// AtomicFetchAndNBICtx is AtomicFetchAndNBI on context c.
func AtomicFetchAndNBICtx[T Integer](c *Ctx, fetch *T, a Array[T], idx int, v T, pe int) error {
	return nbiAMO(c, "AtomicFetchAndNBI", transport.AMOAnd, true, fetch, a, idx, v, 0, pe)
}

// AtomicFetchOrNBI ors v into a[idx] on pe; the old value is in *fetch
// after the next Quiet (shmem_atomic_fetch_or_nbi).
func AtomicFetchOrNBI[T Integer](fetch *T, a Array[T], idx int, v T, pe int) error {
	return nbiAMO(nil, "AtomicFetchOrNBI", transport.AMOOr, true, fetch, a, idx, v, 0, pe)
}

// AtomicFetchOrNBICtx is AtomicFetchOrNBI on context c.
func AtomicFetchOrNBICtx[T Integer](c *Ctx, fetch *T, a Array[T], idx int, v T, pe int) error {
	return nbiAMO(c, "AtomicFetchOrNBI", transport.AMOOr, true, fetch, a, idx, v, 0, pe)
}

// AtomicFetchXorNBI xors v into a[idx] on pe; the old value is in *fetch
// after the next Quiet (shmem_atomic_fetch_xor_nbi).
func AtomicFetchXorNBI[T Integer](fetch *T, a Array[T], idx int, v T, pe int) error {
	return nbiAMO(nil, "AtomicFetchXorNBI", transport.AMOXor, true, fetch, a, idx, v, 0, pe)
}

// AtomicFetchXorNBICtx is AtomicFetchXorNBI on context c.
func AtomicFetchXorNBICtx[T Integer](c *Ctx, fetch *T, a Array[T], idx int, v T, pe int) error {
	return nbiAMO(c, "AtomicFetchXorNBI", transport.AMOXor, true, fetch, a, idx, v, 0, pe)
}

// signalAMO is the atomic that applies op to a signal word.
func signalAMO(r *runtime, name string, op SignalOp) (transport.AMO, error) {
	switch op {
	case SignalSet:
		return transport.AMOSet, nil
	case SignalAdd:
		return transport.AMOAdd, nil
	}
	return 0, errs.New(errs.ErrInvalidArgument, r.me, name, "op = %d; must be SignalSet (9) or SignalAdd (10)", int(op))
}

// PutSignalNBI is PutSignal that may return before src has been read: src
// must not be modified until Quiet. The signal update is ordered after the
// data as in PutSignal: a PE that observes the signal also observes the
// data; both are complete at pe after Quiet (Ref: OpenSHMEM 1.6 §9.6
// shmem_put_signal_nbi).
func PutSignalNBI[T Elem](dst Array[T], dstIdx int, src []T, sig Array[uint64], sigIdx int, sigVal uint64, op SignalOp, pe int) error {
	return PutSignalNBICtx(nil, dst, dstIdx, src, sig, sigIdx, sigVal, op, pe)
}

// PutSignalNBICtx is PutSignalNBI on context c (src reusable after c.Quiet).
func PutSignalNBICtx[T Elem](c *Ctx, dst Array[T], dstIdx int, src []T, sig Array[uint64], sigIdx int, sigVal uint64, op SignalOp, pe int) error {
	const name = "PutSignalNBI"
	dk := max(dataOf(dst.b), dataOf(sig.b))
	r, c, err := c.use(name, &pe, dk)
	if err != nil {
		return err
	}
	defer r.leaveData(dk)
	off, err := span(r, dst, name, dstIdx, len(src), pe)
	if err != nil {
		return err
	}
	soff, err := span(r, sig, name+" (signal)", sigIdx, 1, pe)
	if err != nil {
		return err
	}
	o, err := signalAMO(r, name, op)
	if err != nil {
		return err
	}
	t := r.trFor(dst.b, pe)
	if err := t.PutNBI(c.q, pe, off, elem.Bytes(src)); err != nil {
		return err
	}
	// The signal must not overtake the data (as in PutSignal).
	if err := t.Fence(c.q); err != nil {
		return err
	}
	_, err = r.trFor(sig.b, pe).Atomic(c.q, o, 8, pe, soff, sigVal, 0)
	return err
}

// SignalUpdate atomically sets sig[idx] on pe to v (SignalSet) or adds v
// to it (SignalAdd): shmem_signal_set and shmem_signal_add. It is an
// atomic on the signal word, ordered after this PE's earlier puts to pe
// only by a Fence (or a Quiet), and complete at pe after Quiet; a waiter's
// SignalWaitUntil sees it (Ref: OpenSHMEM 1.6 §9.6 shmem_signal_add,
// shmem_signal_set).
func SignalUpdate(sig Array[uint64], idx int, v uint64, op SignalOp, pe int) error {
	return SignalUpdateCtx(nil, sig, idx, v, op, pe)
}

// SignalUpdateCtx is SignalUpdate on context c (shmem_ctx_signal_add,
// shmem_ctx_signal_set).
func SignalUpdateCtx(c *Ctx, sig Array[uint64], idx int, v uint64, op SignalOp, pe int) error {
	const name = "SignalUpdate"
	dk := dataOf(sig.b)
	r, c, err := c.use(name, &pe, dk)
	if err != nil {
		return err
	}
	defer r.leaveData(dk)
	off, err := span(r, sig, name, idx, 1, pe)
	if err != nil {
		return err
	}
	o, err := signalAMO(r, name, op)
	if err != nil {
		return err
	}
	_, err = r.trFor(sig.b, pe).Atomic(c.q, o, 8, pe, off, v, 0)
	return err
}
