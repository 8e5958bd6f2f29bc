package memord

import (
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStoreRelease(t *testing.T) {
	var w64 uint64
	var w32 [2]uint32
	StoreRelease64(&w64, 0x0123456789abcdef)
	assert.Equal(t, uint64(0x0123456789abcdef), atomic.LoadUint64(&w64))
	StoreRelease32(&w32[1], 0xdeadbeef)
	assert.Equal(t, uint32(0xdeadbeef), atomic.LoadUint32(&w32[1]))
	assert.Zero(t, w32[0], "neighbour untouched")
	StoreStoreFence()
}

// TestMessagePassing is the litmus test the primitives exist for: data
// written before a release store of the flag is seen by a reader that saw
// the flag with an acquire load.
func TestMessagePassing(t *testing.T) {
	const rounds = 20000
	data := make([]uint64, 64)
	var flag uint64
	var wg sync.WaitGroup
	wg.Add(1)
	bad := 0
	go func() {
		defer wg.Done()
		for r := uint64(1); r <= rounds; r++ {
			for atomic.LoadUint64(&flag) != r {
			}
			for i := range data {
				if atomic.LoadUint64(&data[i]) != r {
					bad++
				}
			}
			StoreRelease64(&flag, r+rounds)
		}
	}()
	for r := uint64(1); r <= rounds; r++ {
		for i := range data {
			atomic.StoreUint64(&data[i], r) // the "put"
		}
		StoreStoreFence()
		StoreRelease64(&flag, r)
		for atomic.LoadUint64(&flag) != r+rounds {
		}
	}
	wg.Wait()
	require.Zero(t, bad, "reader saw the flag before the data")
}
