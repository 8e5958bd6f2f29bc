package symmetric

import (
	"fmt"
	"slices"
	"sort"
	"sync"

	errors "github.com/goshmem/goshmem/internal/xerrors"
)

// DefaultMinAlign is the allocator's minimum alignment (and size granule)
// when NewAllocator is given 0: one cache line.
const DefaultMinAlign = 64

// hintRaiseSize is the hint on ErrHeapExhausted.
const hintRaiseSize = "raise GOSHMEM_SYMMETRIC_SIZE (the per-PE symmetric heap size in bytes)"

// Block is a range [Off, Off+Size) of the heap.
type Block struct {
	Off, Size uint64
}

// Stats is a snapshot of an Allocator.
type Stats struct {
	Total       uint64 // managed bytes (the size given to NewAllocator rounded down to minAlign)
	Used        uint64 // bytes in live blocks (sizes rounded up to minAlign)
	Free        uint64 // bytes available to Alloc
	LargestFree uint64 // size of the largest free block
	Quarantined uint64 // bytes freed while quarantine was on and not yet released
	Blocks      int    // live blocks
	FreeBlocks  int    // free blocks (maximal: no two are adjacent)
}

// Allocator is a deterministic first-fit offset allocator over [0, Total).
//
// Given the same sequence of NewAllocator/Alloc/Free/SetQuarantine/Release
// calls it returns the same offsets, on any machine: it depends on nothing
// but its arguments. Every offset and every block size is a multiple of the
// minimum alignment; request sizes are rounded up to it.
//
// Alloc takes the lowest-addressed free block that fits (O(free blocks));
// Free finds its neighbours by binary search and coalesces with both
// (O(log free blocks) plus a slice shift). Neither allocates in the steady
// state.
//
// An Allocator is safe for concurrent use.
type Allocator struct {
	mu       sync.Mutex
	total    uint64
	minAlign uint64

	free      []Block           // sorted by Off; no overlap; no two adjacent
	freeBytes uint64            //
	used      map[uint64]uint64 // live block start -> size
	usedBytes uint64            //

	quarantine bool              // Free parks blocks in quar instead of free
	quar       map[uint64]uint64 // quarantined block start -> size
	quarBytes  uint64            //
}

// NewAllocator returns an allocator over [0, size). minAlign must be a
// power of two (0 means DefaultMinAlign); size is rounded down to a
// multiple of minAlign and must not round to 0.
func NewAllocator(size uint64, minAlign uint64) (*Allocator, error) {
	if minAlign == 0 {
		minAlign = DefaultMinAlign
	}
	if !isPow2(minAlign) {
		return nil, invalidArg(ErrInvalidAlign, "NewAllocator: minAlign %d is not a power of two", minAlign)
	}
	total := size &^ (minAlign - 1)
	if total == 0 {
		return nil, invalidArg(ErrInvalidSize,
			"NewAllocator: size %d is smaller than the minimum alignment %d", size, minAlign)
	}
	return &Allocator{
		total:     total,
		minAlign:  minAlign,
		free:      []Block{{Off: 0, Size: total}},
		freeBytes: total,
		used:      make(map[uint64]uint64),
		quar:      make(map[uint64]uint64),
	}, nil
}

// MinAlign returns the allocator's minimum alignment and size granule.
func (a *Allocator) MinAlign() uint64 { return a.minAlign }

// Total returns the number of bytes the allocator manages.
func (a *Allocator) Total() uint64 { return a.total }

// Alloc reserves n bytes aligned to align and returns the block's offset.
// align 0 means the minimum alignment; a smaller power of two is raised to
// it. The block's size is n rounded up to the minimum alignment (see Size).
//
// Errors: n == 0 → ErrInvalidSize; align not a power of two →
// ErrInvalidAlign; no free block fits → ErrHeapExhausted, naming the
// request, the largest free block and the total free, with a hint.
func (a *Allocator) Alloc(n uint64, align uint64) (off uint64, err error) {
	if n == 0 {
		return 0, invalidArg(ErrInvalidSize, "alloc of 0 bytes")
	}
	if align == 0 {
		align = a.minAlign
	} else if !isPow2(align) {
		return 0, invalidArg(ErrInvalidAlign, "alloc of %d bytes: alignment %d is not a power of two", n, align)
	}
	align = max(align, a.minAlign)

	a.mu.Lock()
	defer a.mu.Unlock()

	if n <= a.total { // else: cannot fit, and rounding could overflow
		sz := (n + a.minAlign - 1) &^ (a.minAlign - 1)
		for i := range a.free {
			b := a.free[i]
			start := b.Off
			if rem := start & (align - 1); rem != 0 {
				pad := align - rem
				if pad >= b.Size {
					continue
				}
				start += pad
			}
			end := b.Off + b.Size
			if end-start < sz {
				continue
			}
			a.carve(i, start, sz)
			a.used[start] = sz
			a.usedBytes += sz
			a.freeBytes -= sz
			return start, nil
		}
	}
	return 0, a.exhausted(n, align)
}

// carve removes [start, start+sz) from free block i, which contains it.
func (a *Allocator) carve(i int, start, sz uint64) {
	b := a.free[i]
	lead := start - b.Off
	tail := b.Off + b.Size - (start + sz)
	switch {
	case lead == 0 && tail == 0:
		a.free = slices.Delete(a.free, i, i+1)
	case lead == 0:
		a.free[i] = Block{Off: start + sz, Size: tail}
	case tail == 0:
		a.free[i].Size = lead
	default:
		a.free[i].Size = lead
		a.free = slices.Insert(a.free, i+1, Block{Off: start + sz, Size: tail})
	}
}

// exhausted builds the ErrHeapExhausted error; a.mu is held.
func (a *Allocator) exhausted(n, align uint64) error {
	var largest uint64
	for _, b := range a.free {
		largest = max(largest, b.Size)
	}
	err := errors.Wrapf(ErrHeapExhausted,
		"alloc of %d bytes (align %d): largest free block is %d bytes, %d of %d bytes free",
		n, align, largest, a.freeBytes, a.total)
	if a.quarBytes > 0 {
		err = errors.WithDetailf(err, "%d bytes are held in quarantine until Release", a.quarBytes)
	}
	return errors.WithHint(err, hintRaiseSize)
}

// Free releases the live block that starts at off and returns its size.
// The block coalesces with free neighbours on both sides. With quarantine
// on, the block is instead held back until Release.
//
// An offset that is not the start of a live block (a double free, an
// offset inside a block, an offset never returned by Alloc) gives
// ErrNotAllocated; the message says what the offset is.
func (a *Allocator) Free(off uint64) (size uint64, err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	sz, ok := a.used[off]
	if !ok {
		return 0, a.notAllocated("free", off)
	}
	delete(a.used, off)
	a.usedBytes -= sz
	if a.quarantine {
		a.quar[off] = sz
		a.quarBytes += sz
		return sz, nil
	}
	a.insertFree(off, sz)
	return sz, nil
}

// insertFree returns [off, off+sz) to the free list, coalescing.
func (a *Allocator) insertFree(off, sz uint64) {
	// i: the first free block after off.
	i := sort.Search(len(a.free), func(j int) bool { return a.free[j].Off > off })
	joinPrev := i > 0 && a.free[i-1].Off+a.free[i-1].Size == off
	joinNext := i < len(a.free) && off+sz == a.free[i].Off
	switch {
	case joinPrev && joinNext:
		a.free[i-1].Size += sz + a.free[i].Size
		a.free = slices.Delete(a.free, i, i+1)
	case joinPrev:
		a.free[i-1].Size += sz
	case joinNext:
		a.free[i].Off = off
		a.free[i].Size += sz
	default:
		a.free = slices.Insert(a.free, i, Block{Off: off, Size: sz})
	}
	a.freeBytes += sz
}

// notAllocated explains why off is not a live block start; a.mu is held.
// This is the error path, so it may scan.
func (a *Allocator) notAllocated(op string, off uint64) error {
	var why string
	switch {
	case off >= a.total:
		why = fmt.Sprintf("offset %d is beyond the heap (size %d)", off, a.total)
	case a.quar[off] != 0: // block sizes are never 0
		why = fmt.Sprintf("offset %d was already freed (block of %d bytes in quarantine): double free",
			off, a.quar[off])
	default:
		i := sort.Search(len(a.free), func(j int) bool { return a.free[j].Off > off })
		if i > 0 && off < a.free[i-1].Off+a.free[i-1].Size {
			b := a.free[i-1]
			if off == b.Off {
				why = fmt.Sprintf("offset %d is the start of free space [%d, %d): double free, or never allocated",
					off, b.Off, b.Off+b.Size)
			} else {
				why = fmt.Sprintf("offset %d lies in free space [%d, %d): double free, or never allocated",
					off, b.Off, b.Off+b.Size)
			}
			break
		}
		for start, sz := range a.used {
			if start < off && off < start+sz {
				why = fmt.Sprintf("offset %d is inside the live block [%d, %d); %s takes the block's start",
					off, start, start+sz, op)
				break
			}
		}
		for start, sz := range a.quar {
			if start < off && off < start+sz {
				why = fmt.Sprintf("offset %d is inside the quarantined block [%d, %d): use after free",
					off, start, start+sz)
				break
			}
		}
		if why == "" {
			why = fmt.Sprintf("offset %d is not the start of a live block", off)
		}
	}
	return errors.Wrapf(ErrNotAllocated, "%s: %s", op, why)
}

// Size returns the size of the live block that starts at off (the request
// rounded up to the minimum alignment), and whether there is one.
func (a *Allocator) Size(off uint64) (uint64, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	sz, ok := a.used[off]
	return sz, ok
}

// Stats returns a snapshot of the allocator's accounting.
func (a *Allocator) Stats() Stats {
	a.mu.Lock()
	defer a.mu.Unlock()
	var largest uint64
	for _, b := range a.free {
		largest = max(largest, b.Size)
	}
	return Stats{
		Total:       a.total,
		Used:        a.usedBytes,
		Free:        a.freeBytes,
		LargestFree: largest,
		Quarantined: a.quarBytes,
		Blocks:      len(a.used),
		FreeBlocks:  len(a.free),
	}
}

// SetQuarantine turns quarantine on or off. While it is on, Free does not
// return blocks to the free list but holds them until Release, so a stale
// offset is never handed out again and a use after free can be caught (by
// poisoning the freed bytes and checking them at Release, or by Free's
// diagnosis of a second free). Turning it off does not release the blocks
// already held.
func (a *Allocator) SetQuarantine(on bool) {
	a.mu.Lock()
	a.quarantine = on
	a.mu.Unlock()
}

// Quarantined returns the blocks held in quarantine, sorted by offset.
func (a *Allocator) Quarantined() []Block {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.quarantinedLocked()
}

func (a *Allocator) quarantinedLocked() []Block {
	bs := make([]Block, 0, len(a.quar))
	for off, sz := range a.quar {
		bs = append(bs, Block{Off: off, Size: sz})
	}
	slices.SortFunc(bs, func(x, y Block) int {
		switch {
		case x.Off < y.Off:
			return -1
		case x.Off > y.Off:
			return 1
		}
		return 0
	})
	return bs
}

// Release returns every quarantined block to the free list (in offset
// order, so the result is deterministic) and returns how many bytes that
// freed.
func (a *Allocator) Release() uint64 {
	a.mu.Lock()
	defer a.mu.Unlock()
	released := a.quarBytes
	for _, b := range a.quarantinedLocked() {
		a.insertFree(b.Off, b.Size)
	}
	clear(a.quar)
	a.quarBytes = 0
	return released
}

// Check verifies the allocator's invariants and returns the first
// violation: the free list is sorted, its blocks are non-empty, aligned,
// inside the heap, neither overlapping nor adjacent; live, free and
// quarantined blocks tile [0, Total) exactly; the byte counters match.
// It is O(blocks log blocks) and allocates; it is meant for tests and
// fuzzing.
func (a *Allocator) Check() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	var freeSum uint64
	for i, b := range a.free {
		if b.Size == 0 {
			return errors.Newf("symmetric: check: free block %d at %d is empty", i, b.Off)
		}
		if b.Off%a.minAlign != 0 || b.Size%a.minAlign != 0 {
			return errors.Newf("symmetric: check: free block [%d, %d) is not aligned to %d", b.Off, b.Off+b.Size, a.minAlign)
		}
		if b.Off+b.Size > a.total || b.Off+b.Size < b.Off {
			return errors.Newf("symmetric: check: free block [%d, %d) exceeds the heap (size %d)", b.Off, b.Off+b.Size, a.total)
		}
		if i > 0 {
			p := a.free[i-1]
			switch pe := p.Off + p.Size; {
			case p.Off >= b.Off:
				return errors.Newf("symmetric: check: free list not sorted at %d: %d then %d", i, p.Off, b.Off)
			case pe > b.Off:
				return errors.Newf("symmetric: check: free blocks [%d, %d) and [%d, %d) overlap", p.Off, pe, b.Off, b.Off+b.Size)
			case pe == b.Off:
				return errors.Newf("symmetric: check: free blocks [%d, %d) and [%d, %d) are adjacent (not coalesced)", p.Off, pe, b.Off, b.Off+b.Size)
			}
		}
		freeSum += b.Size
	}
	if freeSum != a.freeBytes {
		return errors.Newf("symmetric: check: free blocks sum to %d, counter says %d", freeSum, a.freeBytes)
	}

	type tagged struct {
		Block
		kind string
	}
	all := make([]tagged, 0, len(a.free)+len(a.used)+len(a.quar))
	for _, b := range a.free {
		all = append(all, tagged{b, "free"})
	}
	var usedSum, quarSum uint64
	for off, sz := range a.used {
		all = append(all, tagged{Block{off, sz}, "live"})
		usedSum += sz
	}
	for off, sz := range a.quar {
		all = append(all, tagged{Block{off, sz}, "quarantined"})
		quarSum += sz
	}
	if usedSum != a.usedBytes {
		return errors.Newf("symmetric: check: live blocks sum to %d, counter says %d", usedSum, a.usedBytes)
	}
	if quarSum != a.quarBytes {
		return errors.Newf("symmetric: check: quarantined blocks sum to %d, counter says %d", quarSum, a.quarBytes)
	}
	if got := a.usedBytes + a.freeBytes + a.quarBytes; got != a.total {
		return errors.Newf("symmetric: check: used %d + free %d + quarantined %d = %d, want total %d",
			a.usedBytes, a.freeBytes, a.quarBytes, got, a.total)
	}
	slices.SortFunc(all, func(x, y tagged) int {
		switch {
		case x.Off < y.Off:
			return -1
		case x.Off > y.Off:
			return 1
		}
		return 0
	})
	var next uint64
	for _, b := range all {
		if b.Size == 0 || b.Off%a.minAlign != 0 || b.Size%a.minAlign != 0 {
			return errors.Newf("symmetric: check: %s block [%d, %d) is empty or not aligned to %d",
				b.kind, b.Off, b.Off+b.Size, a.minAlign)
		}
		if b.Off != next {
			return errors.Newf("symmetric: check: %s block [%d, %d) does not start where the previous block ends (%d)",
				b.kind, b.Off, b.Off+b.Size, next)
		}
		next = b.Off + b.Size
	}
	if next != a.total {
		return errors.Newf("symmetric: check: blocks end at %d, want total %d", next, a.total)
	}
	return nil
}

func isPow2(x uint64) bool { return x != 0 && x&(x-1) == 0 }

// invalidArg wraps sentinel with a message.
func invalidArg(sentinel error, format string, args ...any) error {
	return errors.Wrapf(sentinel, format, args...)
}
