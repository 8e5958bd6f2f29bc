package shmem_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// initFor initializes a 1-PE job that the test finalizes itself; the
// cleanup finalizes it if the test did not.
func initFor(t *testing.T, opts ...shmem.Option) {
	t.Helper()
	opts = append([]shmem.Option{shmem.WithSymmetricSize(testHeap)}, opts...)
	require.NoError(t, shmem.Init(opts...))
	t.Cleanup(func() {
		if shmem.MyPE() >= 0 {
			assert.NoError(t, shmem.Finalize())
		}
	})
}

// blockedCalls are calls that block on a 1-PE job until something ends
// them: each returns the error of its blocking call. setup runs first, in
// the test's goroutine; the call runs in another goroutine.
type blockedCall struct {
	name  string
	setup func(t *testing.T) func(ctx context.Context) error
}

func blockedCalls() []blockedCall {
	word := func(t *testing.T) shmem.Array[uint64] { return alloc[uint64](t, 8) }
	return []blockedCall{
		{"WaitUntil", func(t *testing.T) func(context.Context) error {
			a := word(t)
			return func(ctx context.Context) error { return shmem.WaitUntilContext(ctx, a, 3, shmem.CmpEQ, 1) }
		}},
		{"SignalWaitUntil", func(t *testing.T) func(context.Context) error {
			a := word(t)
			return func(ctx context.Context) error {
				_, err := shmem.SignalWaitUntilContext(ctx, a, 0, shmem.CmpGE, 5)
				return err
			}
		}},
		{"WaitUntilAll", func(t *testing.T) func(context.Context) error {
			a := word(t)
			return func(ctx context.Context) error {
				return shmem.WaitUntilAllContext(ctx, a, 0, 8, nil, shmem.CmpNE, 0)
			}
		}},
		{"WaitUntilAny", func(t *testing.T) func(context.Context) error {
			a := word(t)
			return func(ctx context.Context) error {
				i, err := shmem.WaitUntilAnyContext(ctx, a, 0, 8, nil, shmem.CmpNE, 0)
				assert.Equal(t, -1, i)
				return err
			}
		}},
		{"WaitUntilSome", func(t *testing.T) func(context.Context) error {
			a := word(t)
			return func(ctx context.Context) error {
				got, err := shmem.WaitUntilSomeContext(ctx, a, 0, 8, nil, shmem.CmpNE, 0)
				assert.Empty(t, got)
				return err
			}
		}},
		{"WaitUntilAllVector", func(t *testing.T) func(context.Context) error {
			a := word(t)
			return func(ctx context.Context) error {
				return shmem.WaitUntilAllVectorContext(ctx, a, 0, 8, nil, shmem.CmpEQ, []uint64{1, 2, 3, 4, 5, 6, 7, 8})
			}
		}},
		{"WaitUntilAnyVector", func(t *testing.T) func(context.Context) error {
			a := word(t)
			return func(ctx context.Context) error {
				i, err := shmem.WaitUntilAnyVectorContext(ctx, a, 0, 8, nil, shmem.CmpEQ, []uint64{1, 2, 3, 4, 5, 6, 7, 8})
				assert.Equal(t, -1, i)
				return err
			}
		}},
		{"WaitUntilSomeVector", func(t *testing.T) func(context.Context) error {
			a := word(t)
			return func(ctx context.Context) error {
				got, err := shmem.WaitUntilSomeVectorContext(ctx, a, 0, 8, nil, shmem.CmpEQ, []uint64{1, 2, 3, 4, 5, 6, 7, 8})
				assert.Empty(t, got)
				return err
			}
		}},
		{"Lock.Set", func(t *testing.T) func(context.Context) error {
			// The PE holds the lock; a second Set waits for its Clear.
			l, err := shmem.NewLock()
			require.NoError(t, err)
			require.NoError(t, l.Set())
			return func(ctx context.Context) error { return l.SetContext(ctx) }
		}},
	}
}

// TestFinalizeWhileBlocked is the regression test of Finalize called while
// another goroutine is blocked in a call: the call used to go on reading
// the unmapped heap and kill the process ("fatal error: fault" in
// WaitUntil's load). Now it returns ErrFinalized, and Finalize returns nil
// once it has left.
func TestFinalizeWhileBlocked(t *testing.T) {
	for _, tc := range blockedCalls() {
		t.Run(tc.name, func(t *testing.T) {
			initFor(t)
			call := tc.setup(t)
			done := make(chan error, 2)
			started := make(chan struct{}, 2)
			for _, ctx := range []context.Context{context.Background(), context.TODO()} {
				go func() {
					started <- struct{}{}
					done <- call(ctx)
				}()
			}
			<-started
			<-started
			time.Sleep(20 * time.Millisecond) // let them block (either way the outcome is the same)
			require.NoError(t, shmem.Finalize())
			for range 2 {
				err := <-done
				require.ErrorIs(t, err, shmem.ErrFinalized)
			}
		})
	}
}

// TestFinalizeRacesCalls runs puts, gets, atomics, waits, barriers and
// allocations in several goroutines while Finalize runs: every call returns nil or
// ErrFinalized, and nothing faults (run it under -race).
func TestFinalizeRacesCalls(t *testing.T) {
	for round := range 5 {
		initFor(t)
		a := alloc[int64](t, 16)
		sig := alloc[uint64](t, 1)
		l, err := shmem.NewLock()
		require.NoError(t, err)
		var wg sync.WaitGroup
		errc := make(chan error, 64)
		loop := func(f func(i int) error) {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					if err := f(i); err != nil {
						errc <- err
						return
					}
				}
			}()
		}
		loop(func(i int) error { return shmem.P(a, i%16, int64(i), 0) })
		loop(func(i int) error { _, err := shmem.G(a, i%16, 0); return err })
		loop(func(i int) error { return shmem.Put(a, 0, []int64{1, 2, 3}, 0) })
		loop(func(i int) error { _, err := shmem.AtomicFetchAdd(a, 15, 1, 0); return err })
		loop(func(i int) error { return shmem.Quiet() })
		loop(func(i int) error { return shmem.BarrierAll() })
		kept := a.Local()
		loop(func(i int) error { _ = kept[i%16]; return shmem.WaitUntil(a, 15, shmem.CmpGE, 0) })
		loop(func(i int) error {
			if err := l.Set(); err != nil {
				return err
			}
			return l.Clear()
		})
		loop(func(i int) error { _, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpEQ, 1); return err })
		loop(func(i int) error {
			b, err := shmem.Alloc[int64](1 + i%8)
			if err != nil {
				return err
			}
			return b.Free()
		})
		loop(func(i int) error {
			b, err := shmem.AllocWithHints[int32](1+i%8, shmem.AllocHint(0))
			if err != nil {
				return err
			}
			_, err = shmem.Realloc(b, 0)
			return err
		})
		time.Sleep(time.Duration(round) * 5 * time.Millisecond)
		require.NoError(t, shmem.Finalize(), "round %d", round)
		wg.Wait()
		close(errc)
		n := 0
		for err := range errc {
			require.ErrorIs(t, err, shmem.ErrFinalized, "round %d", round)
			n++
		}
		require.Equal(t, 11, n)
	}
}

// TestLocalAfterFinalize: a slice kept from Local reads zeros after
// Finalize, and writing it does not fault.
func TestLocalAfterFinalize(t *testing.T) {
	initFor(t)
	a := alloc[int64](t, 1024)
	kept := a.Local()
	for i := range kept {
		kept[i] = int64(i + 1)
	}
	require.NoError(t, shmem.Finalize())
	assert.Nil(t, a.Local(), "Local after Finalize")
	sum := int64(0)
	for _, x := range kept {
		sum += x
	}
	assert.Zero(t, sum, "the kept slice reads zeros")
	kept[7] = 42
	assert.Equal(t, int64(42), kept[7], "and takes writes")
}

// TestCallsAfterFinalize: every call after Finalize returns an error
// matching ErrFinalized (and ErrNotInitialized).
func TestCallsAfterFinalize(t *testing.T) {
	initFor(t)
	a := alloc[int64](t, 4)
	l, err := shmem.NewLock()
	require.NoError(t, err)
	require.NoError(t, shmem.Finalize())
	_, gErr := shmem.G(a, 0, 0)
	_, allocErr := shmem.Alloc[int64](4)
	_, lockErr := shmem.NewLock()
	_, sigErr := shmem.SignalWaitUntilContext(context.Background(), shmem.Array[uint64]{}, 0, shmem.CmpEQ, 0)
	for name, err := range map[string]error{
		"Put":         shmem.Put(a, 0, []int64{1}, 0),
		"G":           gErr,
		"WaitUntil":   shmem.WaitUntil(a, 0, shmem.CmpEQ, 0),
		"SignalWait":  sigErr,
		"BarrierAll":  shmem.BarrierAll(),
		"BarrierCtx":  shmem.BarrierAllContext(context.Background()),
		"TeamBarrier": shmem.TeamWorld.BarrierContext(context.Background()),
		"Quiet":       shmem.Quiet(),
		"Alloc":       allocErr,
		"NewLock":     lockErr,
		"Lock.Set":    l.Set(),
		"Lock.Clear":  l.Clear(),
		"Free":        a.Free(),
		"Finalize":    shmem.Finalize(),
	} {
		require.ErrorIs(t, err, shmem.ErrFinalized, name)
		require.ErrorIs(t, err, shmem.ErrNotInitialized, name)
	}
}

// TestCallContext: each per-call Context form ends with an error matching
// ctx.Err() when ctx is cancelled or its deadline passes, and the runtime
// stays usable afterwards.
func TestCallContext(t *testing.T) {
	start(t)
	for _, tc := range blockedCalls() {
		t.Run(tc.name, func(t *testing.T) {
			call := tc.setup(t)
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- call(ctx) }()
			time.Sleep(10 * time.Millisecond) // let it block (either way the outcome is the same)
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)

			dctx, dcancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer dcancel()
			require.ErrorIs(t, call(dctx), context.DeadlineExceeded)

			require.ErrorIs(t, call(ctx), context.Canceled, "a ctx already done ends the call at once")
			usable(t)
		})
	}
	t.Run("barriers", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		require.NoError(t, shmem.BarrierAllContext(ctx))
		require.NoError(t, shmem.TeamWorld.BarrierContext(ctx))
		cancel()
		require.ErrorIs(t, shmem.BarrierAllContext(ctx), context.Canceled)
		require.ErrorIs(t, shmem.TeamWorld.BarrierContext(ctx), context.Canceled)
		usable(t)
	})
}

// TestWithContext: when the PE's context is done, a blocked call returns
// an error matching ctx.Err(), so does every later call but Finalize, and
// Finalize returns nil; calls after it return ErrFinalized.
func TestWithContext(t *testing.T) {
	for _, tc := range blockedCalls() {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			initFor(t, shmem.WithContext(ctx))
			call := tc.setup(t)
			a := alloc[int64](t, 2)
			done := make(chan error, 1)
			go func() { done <- call(context.Background()) }()
			time.Sleep(10 * time.Millisecond) // let it block (either way the outcome is the same)
			cancel()
			require.ErrorIs(t, <-done, context.Canceled)
			require.ErrorIs(t, shmem.Put(a, 0, []int64{1}, 0), context.Canceled)
			require.ErrorIs(t, shmem.BarrierAll(), context.Canceled)
			_, err := shmem.Alloc[int64](2)
			require.ErrorIs(t, err, context.Canceled)
			require.ErrorIs(t, shmem.Quiet(), context.Canceled)
			require.NoError(t, shmem.Finalize())
			require.ErrorIs(t, shmem.Put(a, 0, []int64{1}, 0), shmem.ErrFinalized)
		})
	}
	t.Run("never done", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		initFor(t, shmem.WithContext(ctx))
		usable(t)
		require.NoError(t, shmem.Finalize())
		cancel() // after Finalize: nothing to stop
		initFor(t)
		usable(t)
		require.NoError(t, shmem.Finalize())
	})
}

// TestWaitContextNoAlloc: a Context wait whose condition holds allocates
// nothing more than the plain form.
func TestWaitContextNoAlloc(t *testing.T) {
	start(t)
	a := alloc[uint64](t, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	plain := testing.AllocsPerRun(100, func() { _ = shmem.WaitUntil(a, 0, shmem.CmpEQ, 0) })
	withCtx := testing.AllocsPerRun(100, func() { _ = shmem.WaitUntilContext(ctx, a, 0, shmem.CmpEQ, 0) })
	assert.Equal(t, plain, withCtx)
}

// The wait and barrier rows with and without a context that is never
// done: a context must not slow a wait that is satisfied at once or a
// barrier.
func BenchmarkWaitUntil(b *testing.B) {
	start(b)
	a := alloc[uint64](b, 1)
	b.ResetTimer()
	for range b.N {
		if err := shmem.WaitUntil(a, 0, shmem.CmpEQ, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkWaitUntilContext(b *testing.B) {
	start(b)
	a := alloc[uint64](b, 1)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ResetTimer()
	for range b.N {
		if err := shmem.WaitUntilContext(ctx, a, 0, shmem.CmpEQ, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBarrierAll(b *testing.B) {
	start(b)
	b.ResetTimer()
	for range b.N {
		if err := shmem.BarrierAll(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBarrierAllContext(b *testing.B) {
	start(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b.ResetTimer()
	for range b.N {
		if err := shmem.BarrierAllContext(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
