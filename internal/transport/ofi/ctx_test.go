package ofi

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/internal/transport"
)

// TestCtxOwnEndpoint: a context queue from NewQueue has its own endpoint;
// while context A has a large transfer outstanding, context B's 8-byte put
// completes and B's quiet returns with A's operations still pending; then
// A's quiet completes them and every byte is checked at the target.
func TestCtxOwnEndpoint(t *testing.T) {
	const rlen = 80 << 20
	const bulk = 64 << 20
	trs, regions := jobCfg1(t, 2, "tcp;ofi_rxm", rlen)
	a := trs[0]
	qa, err := a.NewQueue("ctx A")
	require.NoError(t, err)
	qb, err := a.NewQueue("ctx B")
	require.NoError(t, err)
	require.True(t, a.OwnEndpoint(qa) && a.OwnEndpoint(qb), "each context queue has its own endpoint")
	assert.False(t, a.OwnEndpoint(quiet.NewQueue("default", a.Progress)))
	defer a.CloseQueue(qa)
	defer a.CloseQueue(qb)

	// Warm both endpoints up (connection setup) before measuring.
	for _, q := range []*quiet.Queue{qa, qb} {
		require.NoError(t, a.Put(q, 1, 0, []byte{1}))
		quietQ(t, a, q)
	}
	src := regions[0][8<<20 : 8<<20+bulk]
	for i := range src {
		src[i] = byte(i*13 + i>>16)
	}
	dst := uint64(16 << 20)
	require.NoError(t, a.PutNBI(qa, 1, dst, src))
	issuedA, _ := qa.Counts()

	t0 := time.Now()
	var v [8]byte
	binary.LittleEndian.PutUint64(v[:], 0xb0b)
	require.NoError(t, a.Put(qb, 1, 64, v[:]))
	quietQ(t, a, qb)
	tb := time.Since(t0)
	pendingA := qa.Pending()
	assert.Equal(t, uint64(0xb0b), binary.LittleEndian.Uint64(regions[1][64:]), "B's put landed")

	quietQ(t, a, qa)
	ta := time.Since(t0)
	t.Logf("ctx B put 8 B + quiet: %v with %d of ctx A's %d writes (%d MiB) still pending; ctx A quiet done after %v",
		tb, pendingA, issuedA, bulk>>20, ta)
	assert.NotZero(t, pendingA, "B's quiet waited for A's bulk transfer (B %v, A %v)", tb, ta)
	assert.True(t, bytes.Equal(src, regions[1][dst:dst+bulk]), "A's bulk data at the target after A's quiet")
}

// jobCfg1 is jobCfg that fails on any New error.
func jobCfg1(t *testing.T, n int, prov string, rlen int) ([]*Transport, [][]byte) {
	trs, regions, errsOut := jobCfg(t, n, prov, rlen, nil)
	for pe, err := range errsOut {
		require.NoError(t, err, "PE %d", pe)
	}
	return trs, regions
}

// TestCtxQuietScopes: operations of two context queues and the primary
// endpoint complete on their own queues; a scope over all of them (the
// PE-wide quiet) waits for every one.
func TestCtxQuietScopes(t *testing.T) {
	trs, regions := job(t, 2, "tcp;ofi_rxm")
	a := trs[0]
	qs := []*quiet.Queue{quiet.NewQueue("default", a.Progress)}
	for i := 0; i < 2; i++ {
		q, err := a.NewQueue(fmt.Sprintf("ctx %d", i))
		require.NoError(t, err)
		qs = append(qs, q)
	}
	all := quiet.NewScope("PE-wide")
	for _, q := range qs {
		all.Add(q)
	}
	payload := make([]byte, 3*chunkSize+5)
	for i, q := range qs {
		for j := range payload {
			payload[j] = byte(j + 31*i)
		}
		require.NoError(t, a.Put(q, 1, uint64(i)<<20, payload))
		old, err := a.Atomic(q, transport.AMOAdd, 8, 1, 3<<20+8*uint64(i), 5, 0)
		require.NoError(t, err)
		assert.Equal(t, uint64(0), old)
	}
	require.NoError(t, all.Quiet(a.testPolicy(), nil))
	for i, q := range qs {
		assert.Zero(t, q.Pending(), q.Name())
		for j := range payload {
			payload[j] = byte(j + 31*i)
		}
		assert.True(t, bytes.Equal(payload, regions[1][i<<20:i<<20+len(payload)]), "queue %d's data", i)
		assert.Equal(t, uint64(5), binary.LittleEndian.Uint64(regions[1][3<<20+8*i:]))
	}
	for _, q := range qs[1:] {
		a.CloseQueue(q)
		assert.False(t, a.OwnEndpoint(q), "closed")
	}
}

// TestFenceOrder: many puts, a fence, then a signal (an atomic set), from
// a context queue, with the provider's own write order (sockets: FI_ORDER_WAW),
// the native FI_FENCE (sockets, its order ignored) and the waiting fallback
// (tcp;ofi_rxm). A watcher polls the target's signal word; when
// it sees a round's signal, every byte of that round's data must be there.
func TestFenceOrder(t *testing.T) {
	for _, tc := range []struct{ prov, name string }{{"sockets", "ordered"}, {"sockets", "fi-fence"}, {"tcp;ofi_rxm", "wait"}} {
		prov := tc.prov
		t.Run(strings.ReplaceAll(prov, ";", "+")+"/"+tc.name, func(t *testing.T) {
			trs, regions := job(t, 2, prov)
			a := trs[0]
			if tc.name == "fi-fence" {
				a.ordered = false // use FI_FENCE although the provider also keeps WAW order
			}
			t.Logf("%s: writes ordered by the provider: %v; native FI_FENCE: %v", prov, a.OrderedWrites(), a.NativeFence())
			switch tc.name {
			case "fi-fence":
				require.True(t, a.NativeFence(), "sockets offers FI_FENCE in its caps")
			case "ordered":
				require.True(t, a.OrderedWrites(), "sockets reports FI_ORDER_WAW and a max_order_waw_size above every segment")
			case "wait":
				// With FI_ATOMIC, tcp;ofi_rxm orders RMA writes among
				// themselves and atomics among themselves (FI_ORDER_RMA_WAW,
				// FI_ORDER_ATOMIC_WAW) but not a write before an atomic.
				require.False(t, a.OrderedWrites() || a.NativeFence(), "tcp;ofi_rxm: no FI_ORDER_WAW, no FI_FENCE")
			}
			q, err := a.NewQueue("ctx")
			require.NoError(t, err)
			defer a.CloseQueue(q)
			const rounds, puts, size = 40, 16, 8 << 10
			sig := regions[1][0:8]
			var bad atomic.Int64
			stop := make(chan struct{})
			done := make(chan int)
			go func() { // the target's view
				seen := 0
				for stopping := false; ; {
					select {
					case <-stop:
						stopping = true
					default:
					}
					s := int(atomic.LoadUint64((*uint64)(unsafePtr(sig))))
					if s > seen {
						seen = s
						// Every byte is from round s or a later one (later
						// rounds may already be overwriting: rounds only grow).
						for i := 0; i < puts*size; i++ {
							if int(regions[1][4096+i]) < s {
								bad.Add(1)
								break
							}
						}
					}
					if stopping {
						done <- seen
						return
					}
				}
			}()
			buf := make([]byte, size)
			for r := 1; r <= rounds; r++ {
				for i := range buf {
					buf[i] = byte(r)
				}
				for p := 0; p < puts; p++ {
					require.NoError(t, a.Put(q, 1, uint64(4096+p*size), buf))
				}
				require.NoError(t, a.Fence(q))
				_, err := a.Atomic(q, transport.AMOSet, 8, 1, 0, uint64(r), 0)
				require.NoError(t, err)
				if r%4 == 0 {
					quietQ(t, a, q)
				}
			}
			close(stop)
			seen := <-done
			assert.Equal(t, rounds, seen, "the last signal observed")
			assert.Zero(t, bad.Load(), "rounds whose signal was visible before their data")
		})
	}
}

// TestSegmentation: with the largest message forced to 1000 bytes, puts,
// zero-copy puts and gets of 10,000+ bytes are split into messages of at
// most 1000 bytes (counted on the queue) and the data is exact.
func TestSegmentation(t *testing.T) {
	trs, regions, errsOut := jobCfg(t, 2, "tcp;ofi_rxm", regionLen, func(pe int, c *Config) { c.MaxMsgSize = 1000 })
	for _, err := range errsOut {
		require.NoError(t, err)
	}
	a := trs[0]
	assert.Equal(t, uint64(1000), a.seg)
	q := quiet.NewQueue("seg", a.Progress)
	const n = 10_500
	src := make([]byte, n)
	for i := range src {
		src[i] = byte(i * 7)
	}
	i0, _ := q.Counts()
	require.NoError(t, a.Put(q, 1, 4096, src))
	quietQ(t, a, q)
	i1, _ := q.Counts()
	assert.Equal(t, uint64(11), i1-i0, "put of %d bytes in 1000-byte messages", n)
	assert.Equal(t, src, regions[1][4096:4096+n])

	copy(regions[0][1<<20:], src)
	require.NoError(t, a.PutNBI(q, 1, 65536, regions[0][1<<20:1<<20+n]))
	quietQ(t, a, q)
	i2, _ := q.Counts()
	assert.Equal(t, uint64(11), i2-i1, "zero-copy put segmented too")
	assert.Equal(t, src, regions[1][65536:65536+n])

	got := make([]byte, n)
	require.NoError(t, a.Get(q, got, 1, 4096))
	assert.Equal(t, src, got)
	got2 := make([]byte, n)
	require.NoError(t, a.GetNBI(q, got2, 1, 65536))
	quietQ(t, a, q)
	i3, _ := q.Counts()
	assert.Equal(t, uint64(11), i3-i2, "get_nbi segmented")
	assert.Equal(t, src, got2)
}

// TestUnreachablePeer: PE 1 publishes an address nobody listens on; Init
// fails on every PE (ConnectTimeout bounds its wait), naming PE 1.
func TestUnreachablePeer(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(rec []byte) // the sockaddr at rec[24:]
		limit time.Duration
	}{
		{"refused", func(rec []byte) { rec[24+2], rec[24+3] = 0, 1 }, 2 * time.Second}, // port 1
		{"no-answer", func(rec []byte) { copy(rec[24+4:], []byte{192, 0, 2, 254}) }, 1 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, errsOut := jobCfg(t, 3, "tcp;ofi_rxm", regionLen, func(pe int, c *Config) {
				c.ConnectTimeout = tc.limit
				c.mangle = func(me int, rec []byte) {
					if me == 1 {
						tc.edit(rec)
					}
				}
			})
			for pe, err := range errsOut {
				require.Error(t, err, "PE %d", pe)
				t.Logf("PE %d: %v", pe, err)
				assert.Contains(t, err.Error(), "reach PE 1", "PE %d's error names the unreachable PE", pe)
				assert.NotEmpty(t, errors.FlattenHints(err))
			}
		})
	}
}

// TestDeadPeer: PE 1's endpoint goes away (as when its process is killed:
// the kernel closes its sockets); PE 0's puts and gets to it end in an
// error naming PE 1 within the timeout, never a hang.
func TestDeadPeer(t *testing.T) {
	trs, _, errsOut := jobCfg(t, 2, "tcp;ofi_rxm", regionLen, func(pe int, c *Config) { c.Timeout = 3 * time.Second })
	for _, err := range errsOut {
		require.NoError(t, err)
	}
	a := trs[0]
	q := quiet.NewQueue("ctx", a.Progress)
	require.NoError(t, a.Put(q, 1, 0, []byte{1, 2, 3}))
	quietQ(t, a, q)
	require.NoError(t, trs[1].Close())

	var err error
	for i := 0; i < 100 && err == nil; i++ {
		if err = a.Put(q, 1, 0, make([]byte, 4096)); err == nil {
			s := quiet.NewScope("PE-wide")
			s.Add(q)
			err = s.Quiet(a.testPolicy3s(), nil)
		}
		if err == nil {
			var b [8]byte
			err = a.Get(q, b[:], 1, 0)
		}
	}
	require.Error(t, err, "operations to a closed peer kept succeeding")
	t.Logf("%v", err)
	assert.Contains(t, err.Error(), "PE 1")
	assert.True(t, errors.Is(err, errs.ErrTimeout), "a dead peer ends in ErrTimeout: %v", err)
}

func (t *Transport) testPolicy3s() spin.Policy { return spin.For(1, 2, 3*time.Second) }

func unsafePtr(b []byte) unsafe.Pointer { return unsafe.Pointer(&b[0]) }
