package local

import (
	"bytes"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
)

// collect runs fn on n PEs and returns each PE's result, indexed by rank.
func collect[T any](t *testing.T, n int, fn func(b bootstrap.Bootstrap) (T, error), opts ...Option) ([]T, error) {
	t.Helper()
	res := make([]T, n)
	err := Run(n, func(b bootstrap.Bootstrap) error {
		v, err := fn(b)
		res[b.Rank()] = v
		return err
	}, opts...)
	return res, err
}

func TestNewJob(t *testing.T) {
	for _, n := range []int{1, 2, 5} {
		bs, err := NewJob(n)
		require.NoError(t, err)
		require.Len(t, bs, n)
		for r, b := range bs {
			assert.Equal(t, "local", b.Name())
			assert.Equal(t, r, b.Rank())
			assert.Equal(t, n, b.Size())
			assert.Equal(t, make([]int, n), b.Node())
			lr, ls := bootstrap.LocalRank(b)
			assert.Equal(t, r, lr)
			assert.Equal(t, n, ls)
		}
	}
	for _, n := range []int{0, -1} {
		_, err := NewJob(n)
		require.Error(t, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("local: job of %d PEs, want at least 1", n))
	}
}

// TestSinglePE is the program-started-alone case: every collective
// completes at once, with no other goroutine.
func TestSinglePE(t *testing.T) {
	bs, err := NewJob(1)
	require.NoError(t, err)
	b := bs[0]
	require.NoError(t, b.Barrier())
	out, err := b.Allgather([]byte("xyz"))
	require.NoError(t, err)
	assert.Equal(t, []byte("xyz"), out)
	buf := []byte{9, 8}
	require.NoError(t, b.Bcast(buf, 0))
	assert.Equal(t, []byte{9, 8}, buf)
	require.NoError(t, b.Finalize())
}

func TestAllgatherOrder(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			want := make([]byte, 0, 3*n)
			for r := range n {
				want = append(want, byte(r), byte(10+r), byte(100+r))
			}
			// Several rounds back to back, so fast PEs run ahead into the
			// next round while slow ones still read the previous one.
			const rounds = 20
			got, err := collect(t, n, func(b bootstrap.Bootstrap) ([][]byte, error) {
				var outs [][]byte
				for range rounds {
					r := b.Rank()
					out, err := b.Allgather([]byte{byte(r), byte(10 + r), byte(100 + r)})
					if err != nil {
						return nil, err
					}
					outs = append(outs, out)
				}
				return outs, b.Finalize()
			})
			require.NoError(t, err)
			for r := range n {
				require.Len(t, got[r], rounds)
				for i := range rounds {
					assert.Equal(t, want, got[r][i], "PE %d round %d", r, i)
				}
			}
			// Results are per-PE copies: scribbling on one leaves the others.
			if n > 1 {
				got[0][0][0] = 0xff
				assert.Equal(t, want, got[1][0])
			}
		})
	}
}

func TestAllgatherEmpty(t *testing.T) {
	got, err := collect(t, 3, func(b bootstrap.Bootstrap) ([]byte, error) {
		return b.Allgather(nil)
	})
	require.NoError(t, err)
	for r := range 3 {
		assert.Empty(t, got[r])
	}
}

func TestBcastFromEveryRoot(t *testing.T) {
	for _, n := range []int{1, 2, 3, 8} {
		for root := range n {
			t.Run(fmt.Sprintf("n=%d/root=%d", n, root), func(t *testing.T) {
				got, err := collect(t, n, func(b bootstrap.Bootstrap) ([]byte, error) {
					buf := []byte{byte(b.Rank()), 0xa0 + byte(b.Rank()), 7}
					err := b.Bcast(buf, root)
					if b.Rank() == root {
						// The root reuses its buffer at once; others must
						// not see that.
						buf[2] = 0xee
					}
					if err2 := b.Barrier(); err == nil {
						err = err2
					}
					if b.Rank() == root {
						buf[2] = 7
					}
					return buf, err
				})
				require.NoError(t, err)
				for r := range n {
					assert.Equal(t, []byte{byte(root), 0xa0 + byte(root), 7}, got[r], "PE %d", r)
				}
			})
		}
	}
}

// TestBarrierWaits: PE late marks its arrival just before it enters the
// barrier; every PE must find the mark once its barrier returns (a barrier
// that let a PE out before late entered would not). late sleeps first, so
// such a barrier would be caught rather than win the race by chance.
func TestBarrierWaits(t *testing.T) {
	const n, late = 4, 2
	var lateEntered atomic.Bool
	sawMark, err := collect(t, n, func(b bootstrap.Bootstrap) (bool, error) {
		if b.Rank() == late {
			time.Sleep(50 * time.Millisecond)
			lateEntered.Store(true)
		}
		if err := b.Barrier(); err != nil {
			return false, err
		}
		return lateEntered.Load(), nil
	})
	require.NoError(t, err)
	for r := range n {
		assert.True(t, sawMark[r], "PE %d left the barrier before PE %d entered it", r, late)
	}
}

func TestMismatch(t *testing.T) {
	tests := []struct {
		name string
		fn   func(b bootstrap.Bootstrap) error
		want string
	}{
		{
			name: "allgather lengths",
			fn: func(b bootstrap.Bootstrap) error {
				_, err := b.Allgather(make([]byte, 1+b.Rank()%2))
				return err
			},
			want: "Allgather lengths differ between PEs: [1 2 1]",
		},
		{
			name: "bcast lengths",
			fn: func(b bootstrap.Bootstrap) error {
				return b.Bcast(make([]byte, 4+b.Rank()), 0)
			},
			want: "Bcast lengths differ between PEs: [4 5 6]",
		},
		{
			name: "bcast roots",
			fn: func(b bootstrap.Bootstrap) error {
				return b.Bcast(make([]byte, 4), b.Rank())
			},
			want: "Bcast roots differ between PEs: [0 1 2]",
		},
		{
			name: "bcast root out of range",
			fn: func(b bootstrap.Bootstrap) error {
				return b.Bcast(make([]byte, 4), 3)
			},
			want: "Bcast root 3 is outside [0, 3)",
		},
		{
			name: "different collectives",
			fn: func(b bootstrap.Bootstrap) error {
				if b.Rank() == 1 {
					return b.Barrier()
				}
				_, err := b.Allgather([]byte{1})
				return err
			},
			want: "PEs entered different collectives: [Allgather Barrier Allgather]",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			const n = 3
			errs, err := collect(t, n, func(b bootstrap.Bootstrap) (error, error) {
				err := tt.fn(b)
				// The failed round must not wedge the job: the next
				// collective works on every PE.
				if err2 := b.Barrier(); err2 != nil {
					return err, err2
				}
				return err, nil
			})
			require.NoError(t, err, "collectives after a failed round")
			for r := range n {
				require.Error(t, errs[r], "PE %d", r)
				assert.Contains(t, errs[r].Error(), fmt.Sprintf("local: PE %d: ", r))
				assert.Contains(t, errs[r].Error(), tt.want, "PE %d", r)
			}
		})
	}
}

func TestAbortUnblocksOthers(t *testing.T) {
	const n, aborter = 4, 2
	var stderr syncBuffer
	errs, err := collect(t, n, func(b bootstrap.Bootstrap) (error, error) {
		if err := b.Barrier(); err != nil {
			return nil, err
		}
		if b.Rank() == aborter {
			time.Sleep(20 * time.Millisecond) // let the others block first
			b.Abort(3, "boom")
			panic("Abort returned")
		}
		return b.Barrier(), nil
	}, Stderr(&stderr))

	// Run reports the aborting PE's own abort.
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrAborted))
	assert.Contains(t, err.Error(), "job aborted by PE 2 (code 3): boom")
	assert.NotContains(t, err.Error(), "Abort returned")
	assert.Equal(t, "goshmem: PE 2: boom\n", stderr.String())

	for r := range n {
		if r == aborter {
			continue
		}
		require.Error(t, errs[r], "PE %d", r)
		assert.True(t, errors.Is(errs[r], ErrAborted), "PE %d: %v", r, errs[r])
		assert.Equal(t, fmt.Sprintf("local: PE %d: Barrier: job aborted by PE 2 (code 3): boom", r), errs[r].Error())
	}
}

func TestAbortBeforeOthersArrive(t *testing.T) {
	// PE 0 aborts first; the others enter the barrier later and still fail.
	var stderr syncBuffer
	var aborted sync.WaitGroup
	aborted.Add(1)
	errs, _ := collect(t, 3, func(b bootstrap.Bootstrap) (error, error) {
		if b.Rank() == 0 {
			defer aborted.Done()
			b.Abort(1, "early")
		}
		aborted.Wait()
		return b.Barrier(), nil
	}, Stderr(&stderr))
	for r := 1; r < 3; r++ {
		require.Error(t, errs[r])
		assert.True(t, errors.Is(errs[r], ErrAborted))
		assert.Contains(t, errs[r].Error(), "job aborted by PE 0 (code 1): early")
	}
}

func TestFinalize(t *testing.T) {
	bs, err := NewJob(2)
	require.NoError(t, err)
	require.NoError(t, bs[0].Finalize())

	err = bs[0].Finalize()
	require.Error(t, err)
	assert.Equal(t, "local: PE 0: Finalize after PE 0 finalized", err.Error())

	err = bs[0].Barrier()
	require.Error(t, err)
	assert.Equal(t, "local: PE 0: Barrier: called after PE 0 finalized", err.Error())

	// PE 1's collective can never complete: it fails instead of hanging.
	_, err = bs[1].Allgather([]byte{1})
	require.Error(t, err)
	assert.Equal(t, "local: PE 1: Allgather(1 bytes): job broken: PE 0 finalized", err.Error())
	require.NoError(t, bs[1].Finalize())
}

func TestFinalizeWhileOthersWait(t *testing.T) {
	bs, err := NewJob(2)
	require.NoError(t, err)
	errc := make(chan error)
	go func() { errc <- bs[1].Barrier() }()
	time.Sleep(20 * time.Millisecond)
	require.NoError(t, bs[0].Finalize())
	select {
	case err := <-errc:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "PE 0 finalized")
	case <-time.After(5 * time.Second):
		t.Fatal("PE 1 still blocked in Barrier 5 s after PE 0 finalized")
	}
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name string
		fn   func(b bootstrap.Bootstrap) error
		want []string
	}{
		{
			name: "ok",
			fn:   func(b bootstrap.Bootstrap) error { return b.Barrier() },
		},
		{
			name: "one PE fails, others wait for it",
			fn: func(b bootstrap.Bootstrap) error {
				if b.Rank() == 1 {
					return errors.New("bad input")
				}
				return b.Barrier()
			},
			want: []string{
				"PE 1: bad input",
				"PE 0: local: PE 0: Barrier: job broken: PE 1 returned from Run's function",
				"PE 2: local: PE 2: Barrier: job broken: PE 1 returned from Run's function",
			},
		},
		{
			name: "panic",
			fn: func(b bootstrap.Bootstrap) error {
				if b.Rank() == 0 {
					panic("oops")
				}
				return b.Barrier()
			},
			want: []string{"local: PE 0 panicked: oops", "job broken: PE 0 panicked: oops"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Run(3, tt.fn)
			if tt.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			for _, w := range tt.want {
				assert.Contains(t, err.Error(), w)
			}
		})
	}
}

func TestRunBadSize(t *testing.T) {
	err := Run(0, func(bootstrap.Bootstrap) error { return nil })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "want at least 1")
}

// TestConcurrentJobs checks that jobs share nothing.
func TestConcurrentJobs(t *testing.T) {
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = Run(3, func(b bootstrap.Bootstrap) error {
				for range 50 {
					out, err := b.Allgather([]byte{byte(i)})
					if err != nil {
						return err
					}
					if !bytes.Equal(out, []byte{byte(i), byte(i), byte(i)}) {
						return errors.Newf("job %d got %v", i, out)
					}
				}
				return nil
			})
		}()
	}
	wg.Wait()
	for i, err := range errs {
		assert.NoError(t, err, "job %d", i)
	}
}

// syncBuffer is a bytes.Buffer safe for concurrent writers.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
