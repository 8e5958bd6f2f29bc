package ibgda

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// aligned returns n zeroed bytes, 8-byte aligned (backed by []uint64).
func aligned(n int) []byte {
	w := make([]uint64, (n+7)/8+1)
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), n)
}

func TestLittleEndianHost(t *testing.T) {
	var x uint32 = 1
	require.Equal(t, byte(1), *(*byte)(unsafe.Pointer(&x)), "SoftNIC's record access assumes a little-endian host")
}

func TestWQERoundTrip(t *testing.T) {
	cases := []WQE{
		{Opcode: OpcodeNOP, FmCeSe: CtrlCQUpdate},
		{Opcode: OpcodeRDMAWrite, RAddr: 0x7f0012345678, RKey: 0xabc, Inline: []byte{}},
		{Opcode: OpcodeRDMAWrite, RAddr: 1, RKey: 2, Inline: []byte("0123456789abcdefghijklmnopqrstuvwxyz-0123456789")},
		{Opcode: OpcodeRDMAWrite, RAddr: 1, RKey: 2, SGEs: []DataSeg{{8, 3, 0x1000}}},
		{Opcode: OpcodeRDMARead, RAddr: 1, RKey: 2, SGEs: []DataSeg{{4096, 3, 0x1000}, {4, 5, 0x2000}}},
		{Opcode: OpcodeAtomicFA, RAddr: 8, RKey: 2, SwapAdd: 1, SGEs: []DataSeg{{8, 3, 0x1000}}},
		{Opcode: OpcodeAtomicCS, RAddr: 8, RKey: 2, SwapAdd: 5, Compare: 4, SGEs: []DataSeg{{8, 3, 0x1000}}},
	}
	for _, ring := range []uint32{2, 4, 64} {
		for _, idx := range []uint16{0, 1, 0xfffe, 0xffff} {
			for _, w := range cases {
				q := SQ{Buf: make([]byte, ring*SendWQEBB), WQEBBs: ring}
				w.Index, w.QPN = idx, 0xabcdef
				ds, err := EncodeWQE(q, w)
				if dsToWQEBB(uint32(ds)) > ring || err != nil {
					continue
				}
				got, err := DecodeWQE(q, idx, dsToWQEBB(uint32(ds)))
				require.NoError(t, err)
				w.DS = ds
				assert.Equal(t, w, got, "ring %d idx %#x opcode %#x", ring, idx, w.Opcode)
			}
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	q := SQ{Buf: make([]byte, 4*SendWQEBB), WQEBBs: 4}
	enc := func(w WQE) { _, err := EncodeWQE(q, w); require.NoError(t, err) }
	synd := func(idx uint16, avail uint32) uint8 {
		_, err := DecodeWQE(q, idx, avail)
		var de *DecodeError
		require.ErrorAs(t, err, &de)
		return de.Syndrome
	}
	enc(WQE{Opcode: 0x3f})
	assert.Equal(t, uint8(SyndromeLocalQPOpErr), synd(0, 1), "bad opcode")
	enc(WQE{Opcode: OpcodeNOP, Index: 7})
	assert.Equal(t, uint8(SyndromeLocalQPOpErr), synd(0, 1), "index mismatch")
	enc(WQE{Opcode: OpcodeRDMAWrite, Inline: make([]byte, 100)})
	assert.Equal(t, uint8(SyndromeLocalLengthErr), synd(0, 1), "WQE past the doorbell record")
	q.Buf[7] = 4 // ds says 4, inline needs 2+7
	assert.Equal(t, uint8(SyndromeLocalLengthErr), synd(0, 4), "inline length vs ds")
	enc(WQE{Opcode: OpcodeAtomicFA, SGEs: []DataSeg{{4, 1, 8}}})
	assert.Equal(t, uint8(SyndromeLocalLengthErr), synd(0, 4), "atomic result of 4 bytes")
	q.Buf[7] = 0
	assert.Equal(t, uint8(SyndromeLocalLengthErr), synd(0, 4), "ds 0")
}

func TestCQERoundTrip(t *testing.T) {
	for _, c := range []CQE{
		{Opcode: CQEReq, Owner: 1, WQECounter: 0xffff, QPN: 0xabcdef, WQEOpcode: OpcodeRDMAWrite, ByteCnt: 8},
		{Opcode: CQEReqErr, WQECounter: 3, QPN: 1, WQEOpcode: OpcodeAtomicFA, Syndrome: SyndromeRemoteAccessErr, VendorErrSynd: 0x88},
	} {
		b := make([]byte, CQESize)
		EncodeCQE(b, c)
		got, err := ParseCQE(b)
		require.NoError(t, err)
		assert.Equal(t, c, got)
	}
	b := make([]byte, CQESize)
	b[63] = CQEInvalid << 4
	_, err := ParseCQE(b)
	assert.Error(t, err)
}

// FuzzDecodeWQE: arbitrary ring bytes never panic the decoder; a WQE that
// decodes re-encodes to a WQE that decodes to the same value.
func FuzzDecodeWQE(f *testing.F) {
	q := SQ{Buf: make([]byte, 4*SendWQEBB), WQEBBs: 4}
	_, _ = EncodeWQE(q, WQE{Opcode: OpcodeRDMAWrite, Index: 3, QPN: 9, Inline: []byte("hello, wrap")})
	f.Add(append([]byte(nil), q.Buf...), uint16(3), uint32(2))
	clear(q.Buf)
	_, _ = EncodeWQE(q, WQE{Opcode: OpcodeAtomicCS, Index: 1, SGEs: []DataSeg{{8, 1, 8}}})
	f.Add(append([]byte(nil), q.Buf...), uint16(1), uint32(1))
	f.Fuzz(func(t *testing.T, ring []byte, idx uint16, avail uint32) {
		buf := make([]byte, 4*SendWQEBB)
		copy(buf, ring)
		q := SQ{Buf: buf, WQEBBs: 4}
		w, err := DecodeWQE(q, idx, avail)
		if err != nil {
			return
		}
		require.LessOrEqual(t, w.WQEBBs(), avail)
		q2 := SQ{Buf: make([]byte, len(buf)), WQEBBs: 4}
		ds, err := EncodeWQE(q2, w)
		if err != nil {
			return // e.g. a NOP with ds > 1 has no canonical form
		}
		w2, err := DecodeWQE(q2, idx, dsToWQEBB(uint32(ds)))
		require.NoError(t, err)
		if w.Opcode != OpcodeNOP {
			require.Equal(t, w.DS, ds)
		}
		w2.DS = w.DS
		require.Equal(t, w, w2)
	})
}

// FuzzParseCQE: arbitrary 64 bytes never panic the parser; what parses
// re-encodes to bytes that parse to the same CQE.
func FuzzParseCQE(f *testing.F) {
	b := make([]byte, CQESize)
	EncodeCQE(b, CQE{Opcode: CQEReqErr, Syndrome: 0x13, QPN: 5, WQECounter: 9})
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := ParseCQE(b)
		if err != nil {
			return
		}
		b2 := make([]byte, CQESize)
		EncodeCQE(b2, c)
		c2, err := ParseCQE(b2)
		require.NoError(t, err)
		require.Equal(t, c, c2)
		require.Equal(t, binary.BigEndian.Uint16(b[0x3c:]), c.WQECounter)
	})
}
