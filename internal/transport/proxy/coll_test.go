package proxy_test

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/cgo/devhost"
	cudatr "github.com/goshmem/goshmem/internal/transport/cuda"
	"github.com/goshmem/goshmem/internal/transport/proxy"
)

// Device collectives (include/goshmem/coll_data.h) over the proxy: three
// host-mode PEs that reach each other only through their proxies, and a
// mixed team (PEs 0 and 1 by load/store, PE 2 through the proxy). Values are
// checked on every PE after each call; sizes span several scratch chunks.
func TestDeviceCollectivesOverProxy(t *testing.T) {
	for _, mixed := range []bool{false, true} {
		t.Run(fmt.Sprintf("mixed=%v", mixed), func(t *testing.T) {
			const npes = 3
			j := newJob(t, npes, proxy.Config{Workers: 1, Rings: 2, Contexts: 2, Slots: 64}, true)
			if mixed {
				j.pes[0].SetHeapBase(1, uintptr(j.heaps[1]))
				j.pes[1].SetHeapBase(0, uintptr(j.heaps[0]))
			}
			srcOff := uintptr(cudatr.ControlBytes(testTeams))
			dstOff := srcOff + 96<<10
			le := binary.LittleEndian
			var wg sync.WaitGroup
			for me := 0; me < npes; me++ {
				wg.Add(1)
				go func(me int) {
					defer wg.Done()
					runtime.LockOSThread()
					defer runtime.UnlockOSThread()
					pe := j.pes[me]
					src := func(n int) []byte { return j.bytes(me, srcOff, n) }
					dst := func(n int) []byte { return j.bytes(me, dstOff, n) }
					call := func(op, n, root int) bool {
						err := pe.Coll(op, 0, j.addr(me, dstOff), j.addr(me, srcOff), n, root)
						return assert.NoError(t, err, "PE %d op %d n %d", me, op, n)
					}
					val := func(m, i int) int32 { return int32((m*131+i*7)%1000 - 500) }
					for _, n := range []int{1, 7, 3000} {
						// sum reduce of int32: 3000 elements are 5 chunks of scratch
						s := src(4 * n)
						for i := 0; i < n; i++ {
							le.PutUint32(s[4*i:], uint32(val(me, i)))
						}
						if !call(devhost.CollSumReduceInt32, n, 0) {
							return
						}
						bad := 0
						for i := 0; i < n; i++ {
							want := val(0, i) + val(1, i) + val(2, i)
							if int32(le.Uint32(dst(4 * n)[4*i:])) != want {
								bad++
							}
						}
						assert.Zero(t, bad, "PE %d sum_reduce n %d", me, n)

						// max reducescatter: block me of everyone's src
						s = src(4 * n * npes)
						for i := 0; i < n*npes; i++ {
							le.PutUint32(s[4*i:], uint32(val(me, i)))
						}
						if !call(devhost.CollMaxReduceScatter32, n, 0) {
							return
						}
						bad = 0
						for i := 0; i < n; i++ {
							k := me*n + i
							want := max(val(0, k), val(1, k), val(2, k))
							if int32(le.Uint32(dst(4 * n)[4*i:])) != want {
								bad++
							}
						}
						assert.Zero(t, bad, "PE %d max_reducescatter n %d", me, n)

						// byte movers (n bytes per block)
						pat := func(m, i int) byte { return byte(m*37 + i*11 + i>>8 + 1) }
						for root := 0; root < npes; root++ {
							s = src(n)
							for i := range s {
								s[i] = pat(me, i)
							}
							if !call(devhost.CollBroadcastMem, n, root) {
								return
							}
							bad = 0
							for i, b := range dst(n) {
								if b != pat(root, i) {
									bad++
								}
							}
							assert.Zero(t, bad, "PE %d broadcastmem n %d root %d", me, n, root)
						}
						s = src(n)
						for i := range s {
							s[i] = pat(me, i)
						}
						if !call(devhost.CollFCollectMem, n, 0) {
							return
						}
						bad = 0
						for i, b := range dst(n * npes) {
							if b != pat(i/n, i%n) {
								bad++
							}
						}
						assert.Zero(t, bad, "PE %d fcollectmem n %d", me, n)
						s = src(n * npes)
						for i := range s {
							s[i] = pat(me, i)
						}
						if !call(devhost.CollAllToAllMem, n, 0) {
							return
						}
						bad = 0
						for i, b := range dst(n * npes) {
							if b != pat(i/n, me*n+i%n) {
								bad++
							}
						}
						assert.Zero(t, bad, "PE %d alltoallmem n %d", me, n)
					}
					// bfloat16: 256 + 1 + 1 accumulates in float (258, exact), one rounding
					s := src(2)
					le.PutUint16(s, map[bool]uint16{true: 0x4380, false: 0x3f80}[me == 0])
					if call(devhost.CollSumReduceBF16, 1, 0) {
						assert.Equal(t, uint16(0x4381), le.Uint16(dst(2)), "PE %d bfloat16 sum", me)
					}
					assert.NoError(t, pe.Coll(devhost.CollTeamSync, 0, 0, 0, 0, 0))
				}(me)
			}
			wg.Wait()
			for me := 0; me < npes; me++ {
				require.NoError(t, j.proxies[me].Err())
			}
		})
	}
}
