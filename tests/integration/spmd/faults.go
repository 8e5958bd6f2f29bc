//go:build goshmem_faults

package main

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/goshmem/goshmem/shmem"
)

func init() { faultModes["heap-diverge"] = heapDiverge }

// heapDiverge (-mode heap-diverge): PE 1's host heap allocator gets one
// block the others do not have; the next Alloc, the same call everywhere,
// must fail on every PE with ErrNotSymmetric naming the offsets, hand
// nothing out, and leave the runtime usable. Prints "heap-diverge: PE n:
// ok: <error>" per PE.
func heapDiverge() int {
	if err := shmem.Init(initOpts()...); err != nil {
		fmt.Fprintf(os.Stderr, "spmd: Init: %+v\n", err)
		return 1
	}
	me := shmem.MyPE()
	fail := func(format string, args ...any) int {
		fmt.Printf("heap-diverge: PE %d: FAIL: %s\n", me, fmt.Sprintf(format, args...))
		_ = shmem.Finalize()
		return 1
	}
	if me == 1 {
		if err := shmem.FaultDivergeHeap(4096); err != nil {
			return fail("%v", err)
		}
	}
	a, err := shmem.Alloc[int64](16)
	if err == nil {
		return fail("Alloc after the heaps diverged succeeded at length %d", a.Len())
	}
	if !errors.Is(err, shmem.ErrNotSymmetric) || !strings.Contains(err.Error(), "heaps diverged") ||
		!strings.Contains(err.Error(), "returned heap offset") {
		return fail("want ErrNotSymmetric naming the offsets, got %v", err)
	}
	if a.Len() != 0 {
		return fail("the failed Alloc returned an array of length %d", a.Len())
	}
	if err := shmem.BarrierAll(); err != nil {
		return fail("BarrierAll after the refused Alloc: %v", err)
	}
	fmt.Printf("heap-diverge: PE %d: ok: %v\n", me, err)
	if err := shmem.Finalize(); err != nil {
		return fail("Finalize: %v", err)
	}
	return 0
}
