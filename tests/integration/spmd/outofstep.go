package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// outOfStep is -mode coll-mismatch / coll-timeout: a job whose world team
// falls out of step, which no check of the suite may do (the runner's own
// collectives would fail after it).
//
// coll-mismatch: PE 0 calls Alloc where every other PE calls BarrierAll.
// Every PE must get ErrNotSymmetric naming the other call, and its next
// BarrierAll must fail as out of step.
//
// coll-timeout (GOSHMEM_TIMEOUT set): PE 1 enters BarrierAll twice the
// timeout late. Every other PE's BarrierAll times out naming PE 1; within
// the next two BarrierAll calls every PE fails (none passes silently with
// the PEs a barrier apart), and the third is out of step everywhere.
//
// In both, Finalize must still end the job and report the failure. Each PE
// prints "<mode>: PE <me>: ok: <its first error>" or what went wrong; the
// exit status is 0 only when every expectation of this PE held.
func outOfStep(mode string) int {
	if err := shmem.Init(initOpts()...); err != nil {
		fmt.Fprintf(os.Stderr, "spmd: Init: %+v\n", err)
		return 1
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	t := &T{name: mode, me: me, n: n}
	if n < 2 {
		fmt.Fprintln(os.Stderr, "spmd: "+mode+" needs at least 2 PEs")
		_ = shmem.Finalize()
		return 2
	}
	var first error // what this PE's first failing call returned, printed
	t.run(func(t *T) {
		outOfStepErr := func(what string, err error) {
			t.Is(what, err, shmem.ErrNotSymmetric, fmt.Sprintf("PE %d: ", me), "team world is out of step since")
		}
		switch mode {
		case "coll-mismatch":
			var err error
			defer func() { first = err }()
			if me == 0 {
				_, err = shmem.Alloc[int64](16)
				t.Is("Alloc where the others call BarrierAll", err, shmem.ErrNotSymmetric, "PE 0: Alloc: ", "called Barrier here")
			} else {
				err = shmem.BarrierAll()
				t.Is("BarrierAll where PE 0 calls Alloc", err, shmem.ErrNotSymmetric, fmt.Sprintf("PE %d: Barrier: ", me), "PE 0 called Alloc here")
			}
			outOfStepErr("the next BarrierAll", shmem.BarrierAll())
		case "coll-timeout":
			d, err := time.ParseDuration(os.Getenv("GOSHMEM_TIMEOUT"))
			t.Must("parse GOSHMEM_TIMEOUT", err)
			if me == 1 {
				time.Sleep(2 * d)
			}
			first = shmem.BarrierAll()
			switch {
			case me == 1:
			case errors.Is(first, shmem.ErrNotSymmetric) && strings.Contains(first.Error(), "has finalized; it will never answer"):
				// The partner this PE waits for timed out first and has
				// finalized: the wait ends at once, naming it.
			case t.Is("BarrierAll while PE 1 is late", first, shmem.ErrTimeout, "not arrived at sync #"):
				msg := first.Error()
				t.True("the timeout names PE 1 among the PEs that have not arrived: "+msg,
					strings.Contains(msg, "PE 1 has not") || strings.Contains(msg, "PEs 1 ") || strings.Contains(msg, "PEs 1,"))
			}
			second := shmem.BarrierAll()
			if first == nil {
				defer func() { first = second }()
			}
			if first == nil && second == nil {
				t.Errorf("two BarrierAll calls passed after a timed-out one (the PEs are a barrier apart)")
			}
			if first != nil {
				outOfStepErr("the BarrierAll after a failed one", second)
			}
			outOfStepErr("the third BarrierAll", shmem.BarrierAll())
		}
	})
	err := shmem.Finalize()
	t.Is("Finalize of a job out of step", err, shmem.ErrNotSymmetric, "out of step")
	if shmem.MyPE() != -1 {
		t.Errorf("still initialized after Finalize")
	}
	if t.fails > 0 {
		exitSync()
		return 1
	}
	fmt.Printf("%s: PE %d: ok: %v\n", mode, me, first)
	exitSync()
	return 0
}
