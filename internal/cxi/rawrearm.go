package cxi

import (
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/cgo/fabric"
	"github.com/goshmem/goshmem/internal/errs"
)

// RawRearm is the provider's own re-arm cost, with nothing of the monitor
// around it: a C loop (fabric.WorkSet.BenchRearm) on an endpoint of its
// own that re-arms records of the barrier's shape (8-byte FI_OP_WRITE
// records at thresholds 1..records on one trigger counter, completions on
// one completion counter; here written to this endpoint itself) iters
// times, once resetting both counters every epoch (fi_cntr_set x2 +
// FI_QUEUE_WORK per record: what the monitor did per instance before it
// raised thresholds instead) and once with raised thresholds (a reset
// only when the thresholds would pass budget.CounterMax). Only the
// provider calls are timed; the release and wait between epochs are not.
func RawRearm(pe int, cfg Config, records, iters int) (reset, raised fabric.RearmCost, err error) {
	if records < 1 || records > MaxRounds || iters < 1 {
		return reset, raised, errs.New(errs.ErrInvalidArgument, pe, "cxi: RawRearm",
			"%d records x %d epochs: want 1 <= records <= %d, epochs >= 1", records, iters, MaxRounds)
	}
	if cfg.Budget == (Budget{}) {
		cfg.Budget = Slingshot11
	}
	if cfg.Engine == EngineSoftware {
		return reset, raised, errs.New(errs.ErrNotSupported, pe, "cxi: RawRearm", "the software engine has no provider deferred work to time")
	}
	ep, _, err := openEndpoint(pe, EngineFabric, cfg.Provider)
	if err != nil {
		return reset, raised, err
	}
	defer ep.Close()
	mem, err := unix.Mmap(-1, 0, 4096, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		return reset, raised, errs.Wrap(err, pe, "cxi: RawRearm", "mmap")
	}
	defer unix.Munmap(mem)
	base := unsafe.Pointer(&mem[0])
	mr, err := ep.Register(base, 4096, fabric.AccessRemote|fabric.AccessLocal, 0x7261)
	if err != nil {
		return reset, raised, err
	}
	defer mr.Close()
	name, err := ep.Name()
	if err != nil {
		return reset, raised, err
	}
	addrs, err := ep.InsertAddrs(name, 1)
	if err != nil {
		return reset, raised, err
	}
	if err := ep.StartProgress(); err != nil {
		return reset, raised, err
	}
	trig, err := ep.OpenCounter()
	if err != nil {
		return reset, raised, err
	}
	defer trig.Close()
	comp, err := ep.OpenCounter()
	if err != nil {
		return reset, raised, err
	}
	defer comp.Close()
	ws, err := ep.NewWorkSet(trig, comp, records)
	if err != nil {
		return reset, raised, err
	}
	defer ws.Free()
	rbase := uint64(0)
	if ep.Attr.MRMode&fabric.MRVirtAddr != 0 {
		rbase = uint64(uintptr(base))
	}
	for k := 0; k < records; k++ {
		ws.SetWrite(k, uint64(k+1), false, unsafe.Add(base, 8*k), 8, mr.Desc, addrs[0], rbase+uint64(2048+8*k), mr.Key, 0)
	}
	span := uint64(records)
	if reset, err = ws.BenchRearm(span, cfg.Budget.CounterMax, true, iters); err != nil {
		return reset, raised, errs.Wrap(err, pe, "cxi: RawRearm", "reset")
	}
	if raised, err = ws.BenchRearm(span, cfg.Budget.CounterMax, false, iters); err != nil {
		return reset, raised, errs.Wrap(err, pe, "cxi: RawRearm", "raised thresholds")
	}
	return reset, raised, nil
}
