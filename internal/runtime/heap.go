package runtime

import (
	"fmt"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/symmetric"
)

// heapBackend is the host symmetric heap: this PE's region and the
// mappings of its node peers' regions.
type heapBackend struct {
	r       *Runtime
	regions []*symmetric.Region // own at [Me]; node peers mapped; nil otherwise
	bases   []unsafe.Pointer
	name    func(pe int) string
}

func (h *heapBackend) Name() string { return "symmetric heap" }

// Setup creates this PE's region.
func (h *heapBackend) Setup() ([]byte, error) {
	r := h.r
	size := r.HeapLen + HeapOff
	h.regions = make([]*symmetric.Region, r.NPEs)
	h.bases = make([]unsafe.Pointer, r.NPEs)
	h.name = func(pe int) string { return fmt.Sprintf("goshmem-%d-%d-%d", r.pids[0], r.pids[pe], pe) }
	reg, err := symmetric.CreateRegion(h.name(r.Me), size)
	if err != nil {
		return nil, errs.Wrap(errs.Mark(err, errs.ErrHeapExhausted), r.Me, "Init", "symmetric heap of %d bytes", size)
	}
	h.regions[r.Me] = reg
	return nil, nil
}

// Connect maps every node peer's region.
func (h *heapBackend) Connect(_ int, _ [][]byte) ([]byte, bool, error) {
	r := h.r
	size := r.HeapLen + HeapOff
	for pe := 0; pe < r.NPEs; pe++ {
		if pe == r.Me || r.Node[pe] != r.Node[r.Me] {
			continue
		}
		rg, err := symmetric.OpenRegion(h.name(pe), size)
		if err != nil {
			return nil, false, errs.Wrap(err, r.Me, "Init", "mapping the heap of PE %d", pe)
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

// Agreed: every peer has mapped this PE's region, so its name can go.
func (h *heapBackend) Agreed() { _ = h.regions[h.r.Me].Unlink() }

func (h *heapBackend) Drain(string, time.Duration) error { return nil }
func (h *heapBackend) Diagnose() string                  { return "" }
func (h *heapBackend) Info() []string                    { return nil }

// Close unmaps every region (and removes this PE's name if it is still there).
func (h *heapBackend) Close() error {
	for i, rg := range h.regions {
		if rg != nil {
			if i == h.r.Me {
				_ = rg.Unlink()
			}
			_ = rg.Close()
			h.regions[i] = nil
		}
	}
	return nil
}
