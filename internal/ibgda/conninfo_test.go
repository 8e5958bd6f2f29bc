package ibgda

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func testConnInfo() ConnInfo {
	ci := ConnInfo{PE: 2, NCtx: 3, NPEs: 4, LID: 0x1234, Eth: true, GIDIndex: 3, MTU: 5,
		HeapRKey: 0xdeadbeef, HeapBase: 0x7f00_1234_5000, HeapSize: 1 << 30}
	for i := range ci.GID {
		ci.GID[i] = byte(0xf0 + i)
	}
	ci.QPN = make([]uint32, 12)
	for c := 0; c < 3; c++ {
		for pe := 0; pe < 4; pe++ {
			ci.QPN[c*4+pe] = 0x100 + uint32(c)<<4 + uint32(pe)
		}
		ci.QPN[c*4+2] = NoQP // itself
	}
	return ci
}

func TestConnInfoRoundTrip(t *testing.T) {
	ci := testConnInfo()
	b, err := ci.Encode()
	require.NoError(t, err)
	require.Len(t, b, ConnInfoSize(3, 4))
	assert.Equal(t, 64+4*12, len(b))
	le := binary.LittleEndian
	// a few fields at their documented offsets (the record crosses machines)
	assert.Equal(t, uint32(0x474f4942), le.Uint32(b[0:]))
	assert.Equal(t, uint16(0x1234), le.Uint16(b[20:]))
	assert.Equal(t, uint32(0xdeadbeef), le.Uint32(b[40:]))
	assert.Equal(t, uint32(0x100+2<<4+3), le.Uint32(b[64+4*(2*4+3):]))

	got, err := DecodeConnInfo(b, 2, 3, 4)
	require.NoError(t, err)
	assert.Equal(t, ci, got)
	assert.Equal(t, uint32(0x113), got.QPNFor(1, 3))
	assert.Equal(t, uint32(NoQP), got.QPNFor(0, 2))
}

func TestConnInfoErrors(t *testing.T) {
	ci := testConnInfo()
	ci.QPN = ci.QPN[:5]
	_, err := ci.Encode()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PE 2: 5 QPNs for 3 contexts x 4 PEs (want 12)")

	ci = testConnInfo()
	b, err := ci.Encode()
	require.NoError(t, err)
	_, err = DecodeConnInfo(b[:len(b)-4], 2, 3, 4)
	assert.ErrorContains(t, err, "connection record of PE 2 is 108 bytes, want 112")
	_, err = DecodeConnInfo(b, 1, 3, 4)
	assert.ErrorContains(t, err, "in PE 1's place says PE 2")
	_, err = DecodeConnInfo(b[:ConnInfoSize(2, 4)], 2, 2, 4)
	assert.ErrorContains(t, err, "3 contexts x 4 PEs; want PE 2, 2 x 4")
	bad := append([]byte(nil), b...)
	bad[4] = 9
	_, err = DecodeConnInfo(bad, 2, 3, 4)
	assert.ErrorContains(t, err, "version 9")
}
