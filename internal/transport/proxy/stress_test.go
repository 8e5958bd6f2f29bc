package proxy_test

import (
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/cgo/devhost"
	"github.com/goshmem/goshmem/internal/transport"
	"github.com/goshmem/goshmem/internal/transport/proxy"
)

// streamBackend models the CUDA backend's timing: every call returns at
// once and runs later, in submission order, on one "stream" goroutine, so
// an inline payload is read from its ring slot when the copy runs, and the
// completion counter lands only after everything before it. A slot freed
// before its copy ran, or a producer that waits for anything the stream
// does not write, shows up here as a wrong value or a hang.
type streamBackend struct {
	inner proxy.Backend
	q     chan func() error
	done  chan struct{}
	mu    sync.Mutex
	err   error
}

func newStreamBackend(inner proxy.Backend) *streamBackend {
	s := &streamBackend{inner: inner, q: make(chan func() error, 1<<16), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		n := 0
		for f := range s.q {
			if err := f(); err != nil {
				s.mu.Lock()
				if s.err == nil {
					s.err = err
				}
				s.mu.Unlock()
			}
			if n++; n%64 == 0 {
				runtime.Gosched() // a slow stream: the worker runs ahead of it
			}
		}
	}()
	return s
}

func (s *streamBackend) queue(f func() error) error { s.q <- f; return nil }
func (s *streamBackend) Name() string               { return "stream model" }
func (s *streamBackend) Put(pe int, dst, src uint64, n int) error {
	return s.queue(func() error { return s.inner.Put(pe, dst, src, n) })
}
func (s *streamBackend) PutAddr(pe int, dst, src uint64, n int) error {
	return s.queue(func() error { return s.inner.PutAddr(pe, dst, src, n) })
}
func (s *streamBackend) GetAddr(pe int, src, dst uint64, n int) error {
	return s.queue(func() error { return s.inner.GetAddr(pe, src, dst, n) })
}
func (s *streamBackend) PutInline(pe int, dst uint64, data proxy.Ptr, n int) error {
	return s.queue(func() error { return s.inner.PutInline(pe, dst, data, n) })
}
func (s *streamBackend) Get(pe int, src, dst uint64, n int) error {
	return s.queue(func() error { return s.inner.Get(pe, src, dst, n) })
}
func (s *streamBackend) GetReply(pe int, src uint64, n int, out proxy.Ptr) error {
	return s.queue(func() error { return s.inner.GetReply(pe, src, n, out) })
}
func (s *streamBackend) Atomic(pe int, off uint64, op transport.AMO, width int, v, cmp uint64, out proxy.Ptr) error {
	return s.queue(func() error { return s.inner.Atomic(pe, off, op, width, v, cmp, out) })
}
func (s *streamBackend) WriteWord(p proxy.Ptr, v uint64) error {
	return s.queue(func() error { return s.inner.WriteWord(p, v) })
}
func (s *streamBackend) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}
func (s *streamBackend) Close() error {
	close(s.q)
	<-s.done
	return s.inner.Close()
}

// TestRateRowShape runs the message-rate row of `goshmem-perf proxy`
// (bench/proxy px_rate: every CTA's thread posts 8-byte nbi puts on the
// default context, then quiets) with its shape (64 producers, R=4 rings,
// T=1 worker, B=1/4/16) on rings of 16 slots behind a stream-ordered
// backend, with every fourth request a fetch-add (reply slots reused
// across laps: the ack rule) and a compare-swap now and then (two slots).
// It must finish (a watchdog fails it instead of hanging), deliver every
// value, and, on the tuned protocol, never need the host-resident
// consumer index: producers wait for space on the ring's completion
// counter in GPU memory (many waiting CTAs polling the host index over
// PCIe slow the worker's own submissions; docs/proxy.md).
func TestRateRowShape(t *testing.T) {
	for _, tc := range []struct {
		workers, batch int
		mode           string
	}{{1, 1, "tuned"}, {1, 4, "tuned"}, {1, 16, "tuned"}, {2, 4, "tuned"}, {1, 4, "baseline"}} {
		t.Run(fmt.Sprintf("T%dR4B%d/%s", tc.workers, tc.batch, tc.mode), func(t *testing.T) {
			const producers, perProducer, slots = 64, 60, 16
			j := newJob(t, 2, proxy.Config{Workers: tc.workers, Rings: 4, Contexts: 3, Slots: slots, Batch: tc.batch, Mode: tc.mode}, false)
			j.start(t, 0, func(b proxy.Backend) proxy.Backend { return newStreamBackend(b) })
			j.start(t, 1, nil)
			fin := make(chan struct{})
			wg := j.goProducers(producers, func(g int, pe *devhost.PE) {
				for k := 1; k <= perProducer; k++ {
					var err error
					switch {
					case k%16 == 0:
						var old uint64
						old, err = pe.AMO64(devhost.AMOCompareSwap, j.sym(uintptr(8192+8*g)), uint64(k), uint64(k-16), 1)
						if err == nil && old != uint64(k-16) {
							err = fmt.Errorf("compare-swap %d saw %d", k, old)
						}
					case k%4 == 0:
						_, err = pe.AMO64(devhost.AMOFetchAdd, j.sym(4096), 1, 0, 1)
					default:
						err = pe.P64(j.sym(uintptr(8*g)), uint64(k), 1)
					}
					if err != nil {
						t.Errorf("producer %d request %d: %v", g, k, err)
						return
					}
				}
				if err := pe.Quiet(0); err != nil {
					t.Errorf("producer %d quiet: %v", g, err)
				}
			})
			go func() { wg.Wait(); close(fin) }()
			select {
			case <-fin:
			case <-time.After(60 * time.Second):
				t.Fatalf("producers still waiting after 60 s: proxy protocol deadlock")
			}
			require.NoError(t, j.proxies[0].Err())
			fetchAdds, lastP, lastCAS := 0, 0, 0
			for k := 1; k <= perProducer; k++ {
				switch {
				case k%16 == 0:
					lastCAS = k
				case k%4 == 0:
					fetchAdds++
				default:
					lastP = k
				}
			}
			assert.Equal(t, uint64(producers*fetchAdds), j.u64(1, 4096), "every fetch-add applied once")
			for g := 0; g < producers; g++ {
				assert.Equal(t, uint64(lastP), j.u64(1, uintptr(8*g)), "producer %d's last p", g)
				assert.Equal(t, uint64(lastCAS), j.u64(1, uintptr(8192+8*g)), "producer %d's compare-swaps", g)
			}
			p := j.proxies[0]
			defer func() {
				require.NoError(t, p.Close()) // the statistics are final once the workers stopped
				reqs, chains := p.Served()
				assert.Equal(t, uint64(producers*perProducer), reqs, "requests served")
				assert.LessOrEqual(t, chains, reqs)
				assert.GreaterOrEqual(t, chains*uint64(tc.batch), reqs, "at most B requests per chain")
				assert.Contains(t, p.Stats(), "proxy worker 0: ")
			}()
			for i := 0; i < p.NumRings(); i++ {
				ctx, _ := p.RingOf(i)
				if ctx != 0 {
					continue
				}
				done := p.DoneWord(i)
				assert.Greater(t, done, uint64(4*slots), "ring %d went around several times", i)
				if tc.mode == "baseline" {
					assert.Equal(t, done, p.TailWord(i), "baseline ring %d: host consumer index kept", i)
				} else {
					assert.Zero(t, p.TailWord(i), "tuned ring %d: the host consumer index is never needed", i)
				}
			}
		})
	}
}
