package symmetric

import (
	"fmt"
	"math"
	"math/bits"
	"strconv"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// Unlimited is what ShmFree reports for a tmpfs mounted without a size
// limit (size=0): only RAM and swap bound it, and CheckFree accepts any
// total.
const Unlimited = math.MaxUint64

// hintCapacity is the hint on CheckCapacity's error.
const hintCapacity = "lower GOSHMEM_SYMMETRIC_SIZE, or enlarge /dev/shm " +
	"(mount -o remount,size=<bytes> /dev/shm; docker: --shm-size)"

// CheckFree reports whether the symmetric heaps of one node's PEs, of
// nodeSizes bytes each, fit in free bytes of the tmpfs at dir (what
// ShmFree(dir) read). It depends on nothing but its arguments, so PEs that
// call it with the same values reach the same verdict.
//
// The rule: regions are sparse, so creating them commits nothing, but every
// byte of them may be touched later, and a first touch that finds the tmpfs
// full is a SIGBUS, not an error. So the committed total the job can touch,
// the sum of nodeSizes, must fit in what is free, before any of it is
// touched. (Other jobs' sparse regions on the node are invisible to statfs
// until touched; the check cannot see them.)
//
// The error wraps ErrShmCapacity and also matches errs.ErrHeapExhausted
// under the standard library's errors.Is; it names the PE count, the total,
// the per-PE size and the free space, with a hint.
func CheckFree(dir string, nodeSizes []uint64, free uint64) error {
	if free == Unlimited {
		return nil
	}
	var need uint64
	overflow := false
	for _, s := range nodeSizes {
		var carry uint64
		need, carry = bits.Add64(need, s, 0)
		overflow = overflow || carry != 0
	}
	if !overflow && need <= free {
		return nil
	}
	pes := fmt.Sprintf("the %d PEs of the node need", len(nodeSizes))
	if len(nodeSizes) == 1 {
		pes = "the 1 PE of the node needs"
	}
	total := fmt.Sprintf("%d bytes (%s)", need, fmtBytes(need))
	if overflow {
		total = "more than 2^64 bytes"
	}
	each := fmt.Sprintf("GOSHMEM_SYMMETRIC_SIZE=%d each", nodeSizes[0])
	for _, s := range nodeSizes {
		if s != nodeSizes[0] {
			each = fmt.Sprintf("heaps of %v bytes", nodeSizes)
			break
		}
	}
	err := errs.New(ErrShmCapacity, -1, "symmetric heap capacity",
		"%s %s of symmetric heap in %s (%s); %s has %d bytes (%s) free",
		pes, total, dir, each, dir, free, fmtBytes(free))
	err = errors.WithDetailf(err, "the heaps are reserved sparsely: a PE that touched its heap beyond "+
		"what %s holds would die with SIGBUS", dir)
	return errors.WithHint(errs.Mark(err, errs.ErrHeapExhausted), hintCapacity)
}

// CheckCapacity is CheckFree with the free space of the tmpfs at dir read
// now (ShmFree). Call it before any PE of the node touches its region: a
// touched page is no longer free and would be counted twice.
func CheckCapacity(dir string, nodeSizes []uint64) error {
	free, err := ShmFree(dir)
	if err != nil {
		return err
	}
	return CheckFree(dir, nodeSizes, free)
}

// fmtBytes writes n in binary units with at most one decimal ("1 GiB",
// "1.5 MiB", "100 bytes").
func fmtBytes(n uint64) string {
	const units = "KMGTPE"
	if n < 1<<10 {
		return strconv.FormatUint(n, 10) + " bytes"
	}
	i, v := -1, float64(n)
	for v >= 1<<10 && i+1 < len(units) {
		v /= 1 << 10
		i++
	}
	s := strconv.FormatFloat(v, 'f', 1, 64)
	if len(s) > 2 && s[len(s)-2:] == ".0" {
		s = s[:len(s)-2]
	}
	return s + " " + units[i:i+1] + "iB"
}
