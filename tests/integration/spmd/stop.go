package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// ctxLeave is -mode ctx-leave: every PE runs under WithContext, and PE 1's
// context is cancelled while it is blocked (-fault-wait wait: WaitUntil;
// barrier: BarrierAll; lock: Lock.Set behind PE 0). PE 1's blocked call
// and its later calls must return context.Canceled and its Finalize nil;
// every other PE, blocked waiting for PE 1 (PE 0 in WaitUntil, the others
// in the same call as PE 1), must fail naming PE 1 as a PE that left.
// Each PE prints "ctx-leave: PE <me>: ok: <error>" or what went wrong.
func ctxLeave() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := shmem.Init(append(initOpts(), shmem.WithContext(ctx))...); err != nil {
		fmt.Fprintf(os.Stderr, "spmd: Init: %+v\n", err)
		return 1
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	t := &T{name: "ctx-leave", me: me, n: n}
	if n < 2 {
		fmt.Fprintln(os.Stderr, "spmd: ctx-leave needs at least 2 PEs")
		_ = shmem.Finalize()
		return 2
	}
	var first error
	t.run(func(t *T) {
		flag, err := shmem.Alloc[int64](1)
		t.Must("Alloc", err)
		l, err := shmem.NewLock()
		t.Must("NewLock", err)
		if *faultWait == "lock" && me == 0 {
			t.Must("PE 0 takes the lock", l.Set())
		}
		t.Must("BarrierAll", shmem.BarrierAll())
		blocked := func() error {
			switch {
			case me == 0:
				return shmem.WaitUntil(flag, 0, shmem.CmpEQ, 1)
			case *faultWait == "barrier":
				return shmem.BarrierAll()
			case *faultWait == "lock":
				return l.Set()
			}
			return shmem.WaitUntil(flag, 0, shmem.CmpEQ, 1)
		}
		if me == 1 {
			time.AfterFunc(300*time.Millisecond, cancel)
			first = blocked()
			t.Is("PE 1's blocked call", first, context.Canceled)
			t.Is("a Put after the context is done", shmem.Put(flag, 0, []int64{1}, 0), context.Canceled)
			t.Is("a BarrierAll after the context is done", shmem.BarrierAll(), context.Canceled)
			t.Must("Finalize after the context is done", shmem.Finalize())
			t.Is("a call after Finalize", shmem.Quiet(), shmem.ErrFinalized)
		} else {
			first = blocked()
			msg := fmt.Sprint(first)
			left := first != nil && strings.Contains(msg, "PE 1 (pid ") && strings.Contains(msg, "left")
			// A PE in the barrier with PE 1 may instead see PE 0, which
			// found PE 1 gone first, enter Finalize's barrier: the
			// collective then fails as a mismatch.
			mismatch := me != 0 && *faultWait == "barrier" && errors.Is(first, shmem.ErrNotSymmetric)
			t.True("the blocked call fails naming PE 1 as left: "+msg, left || mismatch)
			// The world team's barrier in Finalize fails (PE 1 left); what
			// counts is that Finalize returns.
			fmt.Printf("ctx-leave: PE %d: Finalize: %v\n", me, shmem.Finalize())
		}
	})
	if t.fails > 0 {
		exitSync()
		return 1
	}
	fmt.Printf("ctx-leave: PE %d: ok: %v\n", me, first)
	exitSync()
	return 0
}

// ctxStep is -mode ctx-step: every PE but PE 1 calls BarrierAllContext
// with a deadline that passes before PE 1 arrives. Their barrier must fail
// with context.DeadlineExceeded and their next BarrierAll as out of step;
// PE 1 must fail within its next two BarrierAll calls (never pass both
// with the PEs a barrier apart) and its third as out of step. Finalize
// then reports the failure on every PE and ends the job.
func ctxStep() int {
	if err := shmem.Init(initOpts()...); err != nil {
		fmt.Fprintf(os.Stderr, "spmd: Init: %+v\n", err)
		return 1
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	t := &T{name: "ctx-step", me: me, n: n}
	if n < 2 {
		fmt.Fprintln(os.Stderr, "spmd: ctx-step needs at least 2 PEs")
		_ = shmem.Finalize()
		return 2
	}
	outOfStepErr := func(what string, err error) {
		t.Is(what, err, shmem.ErrNotSymmetric, fmt.Sprintf("PE %d: ", me), "team world is out of step since")
		// errors.As names this PE and the call, not the sync's step.
		op := "BarrierAll"
		if strings.Contains(what, "Team.Barrier") {
			op = "Team.Barrier"
		}
		if err == nil {
			return
		}
		if e := (*shmem.Error)(nil); !errors.As(err, &e) {
			t.Errorf("%s: errors.As finds no *shmem.Error in %v", what, err)
		} else if e.PE != me || e.Op != op {
			t.Errorf("%s: errors.As gives PE %d, Op %q, want PE %d, Op %s: %v", what, e.PE, e.Op, me, op, err)
		}
	}
	var first error
	t.run(func(t *T) {
		if me == 1 {
			time.Sleep(time.Second)
			first = shmem.BarrierAll()
			second := shmem.BarrierAll()
			if first == nil && second == nil {
				t.Errorf("two BarrierAll calls passed after a cancelled one (the PEs are a barrier apart)")
			}
			if first == nil {
				first = second
			} else {
				outOfStepErr("the BarrierAll after a failed one", second)
			}
			outOfStepErr("the third BarrierAll", shmem.BarrierAll())
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		first = shmem.BarrierAllContext(ctx)
		t.Is("BarrierAllContext while PE 1 is late", first, context.DeadlineExceeded)
		outOfStepErr("the BarrierAll after it", shmem.BarrierAll())
		outOfStepErr("a Team.Barrier on the world team", shmem.TeamWorld.Barrier())
	})
	err := shmem.Finalize()
	if !errors.Is(err, shmem.ErrNotSymmetric) {
		t.Errorf("Finalize of a job out of step: got %v, want ErrNotSymmetric", err)
	}
	if t.fails > 0 {
		exitSync()
		return 1
	}
	fmt.Printf("ctx-step: PE %d: ok: %v\n", me, first)
	exitSync()
	return 0
}
