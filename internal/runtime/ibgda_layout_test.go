package runtime

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/cgo/verbs"
	"github.com/goshmem/goshmem/internal/ibgda"
	"github.com/goshmem/goshmem/internal/spin"
)

// layoutIBGDA, the device state both NIC backends share, read back from
// the bytes: the state's table pointers, the (ctx, PE) -> QP index table
// (NoQP for this PE), the key and base tables and each QP struct, for PE 1
// of 3 with 2 contexts.
func TestLayoutIBGDA(t *testing.T) {
	r := &Runtime{Me: 1, NPEs: 3, Policy: spin.Policy{Timeout: 3 * time.Second}}
	const devBase, hostBase = 0x7000_0000, 0x5000_0000
	remote := []int{0, 2}
	img := make([]byte, ibgdaDevBytes(4, 3, 2, 64))
	mem := make([]byte, ibgdaHostBytes(4))
	sp := ibgdaSpec{nctx: 2, remote: remote, heapLKey: 0x11, rkey: []uint32{0x20, 0x21, 0x22},
		remoteBase: []uint64{0xa000, 0xb000, 0xc000}, slotLKey: 0x33, flags: ibgda.StateHostQueues, sqMax: 64,
		heapBase: 0xb000, heapSize: 1 << 20,
		rings: func(i, c, pe int, d *ibgda.QPDesc) error {
			d.QPN, d.SQWQEBBs, d.CQEs = 0x100+uint32(i), 64, 16
			d.SQBuf, d.DBRec, d.DB = 0x9000_0000+uint64(i)<<16, 0x9100_0000+uint64(i)*8, 0x9200_0000+uint64(i)*8
			return nil
		}}
	lay, err := r.layoutIBGDA(sp, &bump{base: devBase}, img, &bump{base: hostBase}, mem)
	require.NoError(t, err)
	le := binary.LittleEndian
	at := func(addr uint64) []byte { return img[addr-devBase:] }
	st := at(lay.stateAddr)
	assert.Equal(t, uint32(ibgda.StateVersion), le.Uint32(st[0:]))
	assert.Equal(t, uint32(1), le.Uint32(st[0x08:]), "my_pe")
	assert.Equal(t, uint32(4), le.Uint32(st[0x14:]), "n_qps")
	assert.Equal(t, uint64(0xb000), le.Uint64(st[0x20:]), "heap_base")
	qps, qpIndex, rkey, base := le.Uint64(st[0x30:]), le.Uint64(st[0x38:]), le.Uint64(st[0x40:]), le.Uint64(st[0x48:])
	for c := 0; c < 2; c++ {
		want := []uint32{uint32(2 * c), ibgda.NoQP, uint32(2*c + 1)}
		for pe := 0; pe < 3; pe++ {
			assert.Equal(t, want[pe], le.Uint32(at(qpIndex+4*uint64(c*3+pe))), "QP index of ctx %d PE %d", c, pe)
		}
	}
	for pe := 0; pe < 3; pe++ {
		assert.Equal(t, sp.rkey[pe], le.Uint32(at(rkey+4*uint64(pe))))
		assert.Equal(t, sp.remoteBase[pe], le.Uint64(at(base+8*uint64(pe))))
	}
	require.Len(t, lay.qps, 4)
	for i, d := range lay.qps {
		assert.Equal(t, ibgda.EncodeQP(d), at(qps + uint64(i)*ibgda.QPStructSize)[:ibgda.QPStructSize], "QP %d", i)
		assert.Equal(t, uint32(0x33), d.ScratchLKey)
		assert.Equal(t, uint64(3e9), d.TimeoutNS)
		assert.NotZero(t, d.SQNBB)
	}
	assert.Equal(t, "ctx 1 -> PE 2", lay.names[0x103])
	assert.Equal(t, rkey, lay.rkeyTab)
	assert.Equal(t, uint32(0x11), le.Uint32(at(lay.lkeyTab)), "the QPs' lkey table")
	assert.Equal(t, lay.regs, le.Uint64(st[0x88:]), "the registered-buffer table")
	assert.Equal(t, make([]byte, ibgda.RegsSize), at(lay.regs)[:ibgda.RegsSize], "empty: n = 0, every slot free")
	*lay.report = 7
	assert.Equal(t, uint64(7), le.Uint64(mem[le.Uint64(st[0x80:])-hostBase:]), "report word in the host block")

	sp.sqMax = 32
	_, err = r.layoutIBGDA(sp, &bump{base: devBase}, img, &bump{base: hostBase}, mem)
	assert.ErrorContains(t, err, "SQ of 64 WQEBBs, layout sized for 32")
}

// mergeRanges: rdma-core's queue pages (several QPs share doorbell-record
// pages) are registered with the GPU once each: overlapping and touching
// ranges merge, disjoint ones stay apart, in address order.
func TestMergeRanges(t *testing.T) {
	buf := make([]byte, 10*4096)
	at := func(page, n int) verbs.HostRange {
		return verbs.HostRange{P: unsafe.Pointer(&buf[page*4096]), N: n * 4096}
	}
	got := mergeRanges([]verbs.HostRange{at(5, 1), at(0, 2), at(1, 1), at(2, 1), at(7, 2), at(8, 1), at(5, 1)})
	assert.Equal(t, []verbs.HostRange{at(0, 3), at(5, 1), at(7, 2)}, got)
}
