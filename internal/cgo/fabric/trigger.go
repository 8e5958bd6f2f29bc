package fabric

/*
#include <stdlib.h>
#include "trigger.h"
*/
import "C"

import (
	"fmt"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// Counters and deferred work (Ref: fi_cntr(3), fi_trigger(3)).
//
// A deferred-work record is (triggering counter, threshold, operation,
// completion counter), queued on the domain with fi_control(FI_QUEUE_WORK):
// when the triggering counter reaches the threshold the provider runs the
// operation and adds one to the completion counter. Providers differ
// (libfabric 1.17, as tested here): sockets implements
// FI_OP_WRITE and FI_OP_CNTR_ADD and lacks FI_FLUSH_WORK/FI_CANCEL_WORK;
// tcp, ofi_rxm, udp, shm accept the FI_TRIGGER flag but ignore it and return
// -FI_ENOSYS for FI_QUEUE_WORK; cxi implements all of it on Slingshot.

// CapTrigger is FI_TRIGGER in Attr.Caps.
const CapTrigger = uint64(C.GOSHMEMI_FI_TRIGGER)

// More error numbers a deferred-work caller tells apart.
const (
	ENOSYS    = Errno(C.GOSHMEMI_FI_ENOSYS)
	EINVAL    = Errno(C.GOSHMEMI_FI_EINVAL)
	ETIMEDOUT = Errno(C.GOSHMEMI_FI_ETIMEDOUT)
)

// ErrNoDeferredWork says the provider cannot queue deferred work; it also
// matches errs.ErrNotSupported.
var ErrNoDeferredWork = errors.New("fabric: provider does not implement deferred work (FI_TRIGGER / FI_QUEUE_WORK)")

// OpenTriggered opens an endpoint that asks for FI_TRIGGER and checks that
// the provider really runs deferred work: it must report FI_TRIGGER in its
// capabilities (others accept the flag and ignore it) and a probe record
// (a deferred FI_OP_CNTR_ADD, released by a host fi_cntr_add) must run.
// Otherwise the error matches ErrNoDeferredWork and errs.ErrNotSupported.
func OpenTriggered(prov string) (*Endpoint, error) {
	e, err := open(prov, CapTrigger, Select{}, forCXI)
	if err != nil {
		if errors.Is(err, ErrNoProvider) && !errors.Is(err, ErrNoLibrary) {
			return nil, noDeferred(prov, err)
		}
		return nil, err
	}
	if e.Attr.Caps&CapTrigger == 0 {
		e.Close()
		return nil, noDeferred(prov, errors.Newf("fabric: provider %q does not report FI_TRIGGER in info->caps", prov))
	}
	if err := e.probeDeferredWork(); err != nil {
		e.Close()
		return nil, noDeferred(prov, err)
	}
	return e, nil
}

func noDeferred(prov string, cause error) error {
	err := errors.Wrapf(cause, "fabric: provider %q", prov)
	err = errors.WithHint(err, "deferred work runs on the cxi provider (Slingshot) and on sockets (set GOSHMEM_OFI_PROVIDER=sockets); "+
		"or allow the software engine with GOSHMEM_CXI_ENGINE=software")
	return errs.Mark(errs.Mark(err, ErrNoDeferredWork), errs.ErrNotSupported)
}

// probeDeferredWork queues "when trig >= 1, add 5 to target" and releases it.
func (e *Endpoint) probeDeferredWork() error {
	trig, err := e.OpenCounter()
	if err != nil {
		return err
	}
	defer trig.Close()
	target, err := e.OpenCounter()
	if err != nil {
		return err
	}
	defer target.Close()
	w := NewWork()
	if err := e.QueueCntrAdd(w, trig, 1, nil, target, 5); err != nil {
		w.Free()
		return err
	}
	// The record stays owned by the provider until it ran: freed only then.
	if err := trig.Add(1); err != nil {
		return err
	}
	deadline := time.Now().Add(2 * time.Second)
	for target.Read() != 5 {
		if time.Now().After(deadline) {
			return errors.Newf("fabric: probe: deferred FI_OP_CNTR_ADD did not run within 2s (target counter = %d)", target.Read())
		}
		time.Sleep(50 * time.Microsecond)
	}
	w.Free()
	return nil
}

// Counter is a libfabric completion counter (FI_CNTR_EVENTS_COMP).
type Counter struct {
	c *C.struct_goshmemi_fid_cntr
}

// OpenCounter opens a counter on the endpoint's domain.
func (e *Endpoint) OpenCounter() (*Counter, error) {
	c := &Counter{}
	if rc := C.goshmemi_fab_cntr_open(e.f, &c.c); rc != 0 {
		return nil, errors.Wrap(Errno(-rc), "fabric: fi_cntr_open")
	}
	return c, nil
}

// Close closes the counter (retire the work that uses it first).
func (c *Counter) Close() error {
	if c == nil || c.c == nil {
		return nil
	}
	rc := C.goshmemi_fab_cntr_close(c.c)
	c.c = nil
	if rc != 0 {
		return errors.Wrap(Errno(-rc), "fabric: fi_close(cntr)")
	}
	return nil
}

// Read returns the success count (fi_cntr_read; drives manual progress).
func (c *Counter) Read() uint64 { return uint64(C.goshmemi_fab_cntr_read(c.c)) }

// ReadErr returns the error count (fi_cntr_readerr).
func (c *Counter) ReadErr() uint64 { return uint64(C.goshmemi_fab_cntr_readerr(c.c)) }

// Add adds v (fi_cntr_add); deferred work whose threshold it reaches runs.
func (c *Counter) Add(v uint64) error {
	if rc := C.goshmemi_fab_cntr_add(c.c, C.uint64_t(v)); rc != 0 {
		return errors.Wrapf(Errno(-rc), "fabric: fi_cntr_add(%d)", v)
	}
	return nil
}

// Set sets the count to v (fi_cntr_set).
func (c *Counter) Set(v uint64) error {
	if rc := C.goshmemi_fab_cntr_set(c.c, C.uint64_t(v)); rc != 0 {
		return errors.Wrapf(Errno(-rc), "fabric: fi_cntr_set(%d)", v)
	}
	return nil
}

// Wait polls until the count reaches threshold (each fi_cntr_read drives
// manual progress) and fails with ErrTimeout after timeout. fi_cntr_wait
// is not used: the sockets provider's returns early without a wait object.
func (c *Counter) Wait(threshold uint64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for spins := 0; ; spins++ {
		if v := c.Read(); v >= threshold {
			return nil
		}
		if e := c.ReadErr(); e != 0 {
			return errors.Newf("fabric: counter error count %d while waiting for %d", e, threshold)
		}
		if spins > 64 {
			if time.Now().After(deadline) {
				return errs.New(errs.ErrTimeout, -1, "fabric: counter wait", "count %d < threshold %d after %v", c.Read(), threshold, timeout)
			}
			time.Sleep(20 * time.Microsecond)
		}
	}
}

// CXIExtCompiled reports whether this build can call the CXI counter
// extension (fi_cxi_ext.h). It is always true: abi.h declares its ops
// table, and MMIO finds out at run time whether the provider has it.
func CXIExtCompiled() bool { return C.goshmemi_fab_cxi_ext_compiled() != 0 }

// MMIO returns the counter's MMIO region, the address a GPU (or CPU) writes
// a value to in order to add it to the counter without the host
// (fi_cxi_cntr_add). Only the cxi provider has it; elsewhere the error
// matches errs.ErrNotSupported.
// Ref: libfabric prov/cxi/include/fi_cxi_ext.h (FI_CXI_COUNTER_OPS, get_mmio_addr).
func (c *Counter) MMIO() (unsafe.Pointer, uintptr, error) {
	var (
		addr unsafe.Pointer
		n    C.size_t
	)
	if rc := C.goshmemi_fab_cxi_cntr_mmio(c.c, &addr, &n); rc != 0 {
		err := errors.Wrapf(Errno(-rc), "fabric: fi_open_ops(%q) on a counter", "cxi_counter_ops")
		return nil, 0, errs.Mark(errors.WithHint(err,
			"the counter MMIO extension (fi_cxi_ext.h) needs the cxi provider on a Slingshot NIC; "+
				"elsewhere goshmem forwards the GPU's trigger word with fi_cntr_add (emulation)"), errs.ErrNotSupported)
	}
	return addr, uintptr(n), nil
}

// Work is one deferred-work record in C memory. The provider may keep
// pointers into it until the work ran: Free it only after it completed (its
// completion counter counted it) or was cancelled.
type Work struct {
	w *C.goshmemi_dwork
}

// NewWork allocates a record (C memory; never moved by Go).
func NewWork() *Work {
	return &Work{w: (*C.goshmemi_dwork)(C.calloc(1, C.size_t(unsafe.Sizeof(C.goshmemi_dwork{}))))}
}

// Free releases the record.
func (w *Work) Free() {
	if w != nil && w.w != nil {
		C.free(unsafe.Pointer(w.w))
		w.w = nil
	}
}

// Ctx is the context a completion-queue entry of this work carries
// (&work.context), so a poller can tell deferred completions apart.
func (w *Work) Ctx() uint64 { return uint64(uintptr(unsafe.Pointer(&w.w.work.context))) }

func cntr(c *Counter) *C.struct_goshmemi_fid_cntr {
	if c == nil {
		return nil
	}
	return c.c
}

func queueErr(rc C.int, what string) error {
	if rc == 0 {
		return nil
	}
	err := errors.Wrapf(Errno(-rc), "fabric: fi_control(FI_QUEUE_WORK, %s)", what)
	if Errno(-rc) == ENOSYS || Errno(-rc) == EOPNOTSUPP {
		return errs.Mark(errs.Mark(err, ErrNoDeferredWork), errs.ErrNotSupported)
	}
	return err
}

// QueueWrite queues a deferred RMA write of n bytes at buf (C memory, read
// when the work runs) to dest's raddr, released when trig reaches
// threshold; comp (nil: none) counts its completion.
func (e *Endpoint) QueueWrite(w *Work, trig *Counter, threshold uint64, comp *Counter, buf unsafe.Pointer, n uint64,
	desc unsafe.Pointer, dest, raddr, key, flags uint64) error {
	rc := C.goshmemi_fab_queue_write(e.f, w.w, trig.c, C.uint64_t(threshold), cntr(comp), buf, C.size_t(n), desc,
		C.goshmemi_fi_addr_t(dest), C.uint64_t(raddr), C.uint64_t(key), C.uint64_t(flags))
	return queueErr(rc, fmt.Sprintf("FI_OP_WRITE %d B, threshold %d", n, threshold))
}

// QueueCntrAdd queues "when trig reaches threshold, add v to target".
func (e *Endpoint) QueueCntrAdd(w *Work, trig *Counter, threshold uint64, comp, target *Counter, v uint64) error {
	rc := C.goshmemi_fab_queue_cntr_add(e.f, w.w, trig.c, C.uint64_t(threshold), cntr(comp), target.c, C.uint64_t(v))
	return queueErr(rc, fmt.Sprintf("FI_OP_CNTR_ADD %d, threshold %d", v, threshold))
}

// FlushWork asks the provider to drop all queued work (FI_FLUSH_WORK);
// sockets returns ENOSYS.
func (e *Endpoint) FlushWork() error {
	if rc := C.goshmemi_fab_flush_work(e.f); rc != 0 {
		return errors.Wrap(Errno(-rc), "fabric: fi_control(FI_FLUSH_WORK)")
	}
	return nil
}

// CancelWork cancels one queued record (FI_CANCEL_WORK); sockets returns ENOSYS.
func (e *Endpoint) CancelWork(w *Work) error {
	if rc := C.goshmemi_fab_cancel_work(e.f, w.w); rc != 0 {
		return errors.Wrap(Errno(-rc), "fabric: fi_control(FI_CANCEL_WORK)")
	}
	return nil
}

// WorkSet is a fixed group of deferred writes sharing one trigger counter
// and one completion counter, built once (C memory) and re-armed as a
// whole with one cgo call: the records of one instance of a monitor slot.
// Record i runs when the trigger counter reaches base + its relative
// threshold; its completion adds one to the completion counter, or to the
// trigger counter for a chain record (it releases the record after it).
// The provider owns the records from Arm until they ran: re-arm only after
// the completion counter showed every record completed.
type WorkSet struct {
	s *C.goshmemi_dwork_set
	n int
}

// NewWorkSet makes a set of n records on trig and comp (Set fills them).
func (e *Endpoint) NewWorkSet(trig, comp *Counter, n int) (*WorkSet, error) {
	if n < 1 {
		return nil, errors.Newf("fabric: a work set of %d records: want n >= 1", n)
	}
	s := C.goshmemi_fab_set_new(e.f, trig.c, comp.c, C.int(n))
	if s == nil {
		return nil, errors.Wrapf(Errno(C.GOSHMEMI_FI_ENOMEM), "fabric: work set of %d records", n)
	}
	return &WorkSet{s: s, n: n}, nil
}

// Len is the number of records.
func (s *WorkSet) Len() int { return s.n }

// SetWrite builds record i (nothing is queued): a write of n bytes at buf
// (C memory, read when the work runs) to dest's raddr, at relative
// threshold rel; chain: its completion goes to the trigger counter.
func (s *WorkSet) SetWrite(i int, rel uint64, chain bool, buf unsafe.Pointer, n uint64, desc unsafe.Pointer, dest, raddr, key, flags uint64) {
	if i < 0 || i >= s.n {
		panic(fmt.Sprintf("fabric: WorkSet.SetWrite: record %d of %d", i, s.n))
	}
	ch := C.int(0)
	if chain {
		ch = 1
	}
	C.goshmemi_fab_set_write(s.s, C.int(i), C.uint64_t(rel), ch, buf, C.size_t(n), desc, C.goshmemi_fi_addr_t(dest),
		C.uint64_t(raddr), C.uint64_t(key), C.uint64_t(flags))
}

// Arm queues every record at threshold base + rel with
// fi_control(FI_QUEUE_WORK), after resetting both counters to 0
// (fi_cntr_set) when reset is true (base must then be 0).
func (s *WorkSet) Arm(base uint64, reset bool) error { return s.arm(base, reset, 0) }

// ArmTimed is Arm that adds the time spent in the provider's calls (a C
// clock around them, nothing else) to *spent.
func (s *WorkSet) ArmTimed(base uint64, reset bool, spent *time.Duration) error {
	err := s.arm(base, reset, 1)
	*spent += time.Duration(s.s.ns)
	return err
}

func (s *WorkSet) arm(base uint64, reset bool, timed C.int) error {
	rs := C.int(0)
	if reset {
		rs = 1
	}
	rc := C.goshmemi_fab_set_arm(s.s, C.uint64_t(base), rs, timed)
	if rc == 0 {
		return nil
	}
	if s.s.failed < 0 {
		return errors.Wrap(Errno(-rc), "fabric: fi_cntr_set(0) before a re-arm")
	}
	return queueErr(rc, fmt.Sprintf("FI_OP_WRITE record %d of %d, threshold base %d", int(s.s.failed), s.n, base))
}

// Free releases the records (after they ran, or when none is armed).
func (s *WorkSet) Free() {
	if s != nil && s.s != nil {
		C.goshmemi_fab_set_free(s.s)
		s.s = nil
	}
}

// RearmCost is what BenchRearm measured: the raw provider calls of a re-arm.
type RearmCost struct {
	Set, Queue time.Duration // total time in fi_cntr_set and in fi_control(FI_QUEUE_WORK)
	Slowest    time.Duration // the slowest epoch's arm
	Median     time.Duration // the median epoch's arm (within ~9%: a log histogram)
	Epochs     int
	Resets     int // epochs that reset the counters (fi_cntr_set x2)
}

// PerRecord is the mean raw re-arm cost per record (sets included).
func (c RearmCost) PerRecord(n int) time.Duration {
	if c.Epochs == 0 || n == 0 {
		return 0
	}
	return (c.Set + c.Queue) / time.Duration(c.Epochs*n)
}

// BenchRearm times, in C with nothing but the provider calls in the timed
// region, iters re-arms of the set: each epoch arms (fi_cntr_set x2 when
// reset, or only when the raised thresholds would pass cmax; then
// fi_control(FI_QUEUE_WORK) per record), then releases the records with
// fi_cntr_add(trig, span - chains) and waits for them (untimed). span is
// the trigger count an instance ends at (triggers + chain records). The
// set must be built and nothing of it armed.
func (s *WorkSet) BenchRearm(span, cmax uint64, reset bool, iters int) (RearmCost, error) {
	var out [6]C.uint64_t
	rs := C.int(0)
	if reset {
		rs = 1
	}
	rc := C.goshmemi_fab_set_bench(s.s, C.uint64_t(span), C.uint64_t(cmax), rs, C.int(iters), &out[0])
	c := RearmCost{Set: time.Duration(out[0]), Queue: time.Duration(out[1]), Slowest: time.Duration(out[2]),
		Epochs: int(out[3]), Resets: int(out[4]), Median: time.Duration(out[5])}
	if rc != 0 {
		if Errno(-rc) == ETIMEDOUT {
			return c, errs.New(errs.ErrTimeout, -1, "fabric: BenchRearm", "released records did not complete within 5 s (epoch %d)", c.Epochs)
		}
		return c, errors.Wrapf(Errno(-rc), "fabric: BenchRearm epoch %d", c.Epochs)
	}
	return c, nil
}
