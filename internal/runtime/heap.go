package runtime

import (
	"encoding/binary"
	"fmt"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/collectives"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/symmetric"
)

// heapBackend is the host symmetric heap: this PE's region and the
// mappings of its node peers' regions. Regions never have a name in
// /dev/shm (symmetric.CreateAnon: an O_TMPFILE file); peers open the
// owner's descriptor through /proc/<pid>/fd, and the owner closes it once
// every peer has mapped (Agreed). A job killed at any point leaves
// nothing behind: the memory goes with the last process that maps it.
type heapBackend struct {
	r       *Runtime
	regions []*symmetric.Region // own at [Me]; node peers mapped; nil otherwise
	bases   []unsafe.Pointer
}

func (h *heapBackend) Name() string { return "symmetric heap" }

// Setup creates this PE's region and reads /dev/shm's free space before
// any region is touched. Record: free bytes, then the region's handle.
func (h *heapBackend) Setup() ([]byte, error) {
	r := h.r
	size := r.RegionSize()
	h.regions = make([]*symmetric.Region, r.NPEs)
	h.bases = make([]unsafe.Pointer, r.NPEs)
	free, err := symmetric.ShmFree(symmetric.ShmDir)
	if err != nil {
		return nil, errs.Wrap(err, r.Me, "Init", "free space of %s", symmetric.ShmDir)
	}
	reg, err := symmetric.CreateAnon(size)
	if err != nil {
		return nil, errs.Wrap(errs.Mark(err, errs.ErrHeapExhausted), r.Me, "Init", "symmetric heap of %d bytes and %d bytes of team slots",
			HeapOff+r.HeapLen, r.Teams.Size())
	}
	h.regions[r.Me] = reg
	rec := binary.LittleEndian.AppendUint64(nil, free)
	return append(rec, reg.Handle().Marshal()...), nil
}

// Connect checks that the node's PEs together fit in /dev/shm (the
// regions are sparse: a heap that does not fit would die of SIGBUS at a
// first touch, not fail here) and maps every node peer's region. Every PE
// computes the same verdict from the same records; the node's lowest PE
// reports it, so the error comes once.
func (h *heapBackend) Connect(_ int, recs [][]byte) ([]byte, bool, error) {
	r := h.r
	size := r.RegionSize()
	var sizes []uint64
	minFree := uint64(symmetric.Unlimited)
	lowest := -1
	for pe, rec := range recs {
		if len(rec) != 8+symmetric.HandleSize {
			return nil, false, errs.New(errs.ErrNotSymmetric, r.Me, "Init", "PE %d sent a %d-byte heap record", pe, len(rec))
		}
		if r.Node[pe] != r.Node[r.Me] {
			continue
		}
		if lowest < 0 {
			lowest = pe
		}
		sizes = append(sizes, size)
		minFree = min(minFree, binary.LittleEndian.Uint64(rec))
	}
	if err := symmetric.CheckFree(symmetric.ShmDir, sizes, minFree); err != nil {
		if r.Me == lowest {
			return nil, false, errors.WithHint(errs.Wrap(err, r.Me, "Init",
				"node %d: each PE's region holds the heap and %d bytes of team slots (GOSHMEM_MAX_TEAMS=%d)",
				r.Node[r.Me], r.Teams.Size(), r.Teams.MaxTeams),
				fmt.Sprintf("a lower GOSHMEM_MAX_TEAMS also shrinks every region (%d bytes per team slot)", collectives.SlotSize))
		}
		return nil, true, nil // the node's lowest PE reports it; nothing is mapped
	}
	for pe, rec := range recs {
		if pe == r.Me || r.Node[pe] != r.Node[r.Me] {
			continue
		}
		hd, err := symmetric.ParseRegionHandle(rec[8:])
		if err != nil {
			return nil, false, errs.Wrap(err, r.Me, "Init", "heap record of PE %d", pe)
		}
		rg, err := symmetric.OpenHandle(hd, size)
		if err != nil {
			return nil, false, errs.Wrap(err, r.Me, "Init", "mapping the heap of PE %d (pid %d)", pe, hd.PID)
		}
		h.regions[pe] = rg
	}
	for pe, rg := range h.regions {
		if rg != nil {
			h.bases[pe] = unsafe.Pointer(unsafe.SliceData(rg.Bytes()))
		}
	}
	return nil, true, nil
}

// Agreed: every peer has mapped this PE's region, so its descriptor can
// go (the mappings keep the memory).
func (h *heapBackend) Agreed() { _ = h.regions[h.r.Me].CloseHandle() }

func (h *heapBackend) Drain(string, time.Duration) error { return nil }
func (h *heapBackend) Diagnose() string                  { return "" }
func (h *heapBackend) Info() []string                    { return nil }

// Close retires every region, this PE's and its node peers', instead of
// unmapping them: slices the program kept from Array.Local stay readable
// (they read zeros), and an RMA call over shm that runs on past Finalize
// (shmem counts those only with native backends) writes or reads zero
// pages and never faults.
func (h *heapBackend) Close() error {
	for i, rg := range h.regions {
		if rg != nil {
			_ = rg.Retire()
			h.regions[i] = nil
		}
	}
	return nil
}
