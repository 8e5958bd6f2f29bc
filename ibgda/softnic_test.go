package ibgda

import (
	"encoding/binary"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rig is one QP on a SoftNIC with Go-side posting (EncodeWQE): it checks the
// NIC against hand-built bytes, including malformed WQEs the C encoders
// never produce.
type rig struct {
	nic    *SoftNIC
	cfg    QPConfig
	pi, ci uint64
	remote []byte
}

func newRig(t *testing.T, sq, cqes uint32) *rig {
	r := &rig{nic: NewSoftNIC(), remote: aligned(256)}
	r.cfg = QPConfig{QPN: 0x42, SQ: SQ{Buf: aligned(int(sq) * SendWQEBB), WQEBBs: sq}, DBRec: aligned(8),
		DB: aligned(8), CQ: aligned(int(cqes) * CQESize), CQEs: cqes, CQDBRec: aligned(4)}
	for i := uint32(0); i < cqes; i++ {
		r.cfg.CQ[i*CQESize+63] = CQEInvalid << 4
	}
	require.NoError(t, r.nic.RegisterMR(7, r.remote, AccessAll))
	require.NoError(t, r.nic.AddQP(r.cfg))
	r.nic.Start()
	t.Cleanup(r.nic.Stop)
	return r
}

func (r *rig) addr(off int) uint64 { return uint64(uintptr(unsafe.Pointer(&r.remote[off]))) }

// post encodes w at the producer index and publishes it in the doorbell record.
func (r *rig) post(t *testing.T, w WQE, rawDS uint8) {
	w.Index, w.QPN = uint16(r.pi), r.cfg.QPN
	ds, err := EncodeWQE(r.cfg.SQ, w)
	require.NoError(t, err)
	if rawDS != 0 { // a lying ds: the NIC fetches only what ds covers
		r.cfg.SQ.seg(w.Index, 0)[7] = rawDS
		ds = rawDS
	}
	r.pi += uint64(dsToWQEBB(uint32(ds)))
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(r.pi)&0xffff)
	storeU32(r.cfg.DBRec[4:], binary.LittleEndian.Uint32(b[:]))
}

// next waits for the next CQE (owner bit of the lap) and consumes it.
func (r *rig) next(t *testing.T) CQE {
	deadline := time.Now().Add(5 * time.Second)
	slot := r.cfg.CQ[(r.ci%uint64(r.cfg.CQEs))*CQESize:][:CQESize]
	for {
		op := byte(loadU32(slot[60:]) >> 24)
		if op>>4 != CQEInvalid && uint64(op&1) == (r.ci/uint64(r.cfg.CQEs))&1 {
			break
		}
		require.True(t, time.Now().Before(deadline), "no CQE %d", r.ci)
		time.Sleep(10 * time.Microsecond)
	}
	c, err := ParseCQE(slot)
	require.NoError(t, err)
	r.ci++
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(r.ci))
	storeU32(r.cfg.CQDBRec, binary.LittleEndian.Uint32(b[:]))
	return c
}

func TestSoftNICSelectiveCompletionAndLaps(t *testing.T) {
	r := newRig(t, 8, 4)
	var sig []uint16
	for i := 0; i < 40; i++ { // 5 laps of the SQ, 10 of the CQ (every other WQE signaled)
		fm := uint8(0)
		if i%2 == 1 {
			fm = CtrlCQUpdate
			sig = append(sig, uint16(r.pi))
		}
		r.post(t, WQE{Opcode: OpcodeRDMAWrite, FmCeSe: fm, RAddr: r.addr(8 * (i % 16)), RKey: 7,
			Inline: binary.LittleEndian.AppendUint64(nil, uint64(i))}, 0)
		if fm != 0 {
			c := r.next(t)
			assert.Equal(t, uint8(CQEReq), c.Opcode)
			assert.Equal(t, sig[len(sig)-1], c.WQECounter)
			assert.Equal(t, r.cfg.QPN, c.QPN)
		}
	}
	for i := 24; i < 40; i++ {
		assert.Equal(t, uint64(i), binary.LittleEndian.Uint64(r.remote[8*(i%16):]))
	}
}

func TestSoftNICMalformed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		w     WQE
		rawDS uint8
		synd  uint8
	}{
		{"bad opcode", WQE{Opcode: 0x3e}, 0, SyndromeLocalQPOpErr},
		{"ds inconsistent with inline length", WQE{Opcode: OpcodeRDMAWrite, RKey: 7, Inline: make([]byte, 40)}, 3, SyndromeLocalLengthErr},
		{"unknown rkey", WQE{Opcode: OpcodeRDMAWrite, RKey: 99, Inline: make([]byte, 8)}, 0, SyndromeRemoteAccessErr},
		{"address out of range", WQE{Opcode: OpcodeRDMAWrite, RKey: 7, RAddr: 1, Inline: make([]byte, 8)}, 0, SyndromeRemoteAccessErr},
		{"unknown lkey", WQE{Opcode: OpcodeRDMARead, RKey: 7, SGEs: []DataSeg{{8, 55, 0x1000}}}, 0, SyndromeLocalProtErr},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 8, 4)
			if tc.name == "address out of range" {
				tc.w.RAddr = r.addr(250)
			} else if tc.w.RAddr == 0 {
				tc.w.RAddr = r.addr(0)
			}
			at := uint16(r.pi)
			r.post(t, tc.w, tc.rawDS) // unsignaled: errors always complete
			c := r.next(t)
			assert.Equal(t, uint8(CQEReqErr), c.Opcode)
			assert.Equal(t, tc.synd, c.Syndrome)
			assert.Equal(t, at, c.WQECounter)
			flushAt := uint16(r.pi)
			r.post(t, WQE{Opcode: OpcodeNOP}, 0) // unsignaled, but flushed with an error CQE
			c = r.next(t)
			assert.Equal(t, uint8(SyndromeWRFlushErr), c.Syndrome)
			assert.Equal(t, flushAt, c.WQECounter)
		})
	}
}
