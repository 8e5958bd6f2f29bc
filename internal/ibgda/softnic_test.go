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

// blockingRegion is a Region whose writes block until release is closed:
// the soft NIC's copy into a GPU heap when the copy kernel cannot run while
// the user's kernel spins waiting for the NIC (a stream or module-loading
// deadlock), seen from the NIC.
type blockingRegion struct {
	mem     []byte
	entered chan struct{}
	release chan struct{}
}

func (b *blockingRegion) ReadAt(dst []byte, off uint64) error {
	copy(dst, b.mem[off:])
	return nil
}

func (b *blockingRegion) WriteAt(src []byte, off uint64) error {
	select {
	case b.entered <- struct{}{}:
	default:
	}
	<-b.release
	copy(b.mem[off:], src)
	return nil
}

func (b *blockingRegion) Atomic8(uint64, bool, uint64, uint64) (uint64, error) {
	return 0, nil
}

// A Region write that never returns while a "kernel" spins waiting for its
// effect: with a timeout the NIC says which QP and which operation are
// stuck (Err, Status) instead of hanging silently; once the write returns,
// the NIC carries on.
func TestSoftNICTimeoutNamesStuckRegionOp(t *testing.T) {
	nic := NewSoftNIC()
	nic.SetTimeout(50 * time.Millisecond)
	reg := &blockingRegion{mem: make([]byte, 64), entered: make(chan struct{}, 1), release: make(chan struct{})}
	const base = 0x7000_0000
	require.NoError(t, nic.RegisterRegion(9, base, 64, reg, AccessAll))
	r := &rig{nic: nic}
	r.cfg = QPConfig{Name: "ctx 0 -> PE 1", QPN: 0x1000, SQ: SQ{Buf: aligned(8 * SendWQEBB), WQEBBs: 8},
		DBRec: aligned(8), DB: aligned(8), CQ: aligned(4 * CQESize), CQEs: 4, CQDBRec: aligned(4)}
	InitCQ(r.cfg.CQ)
	require.NoError(t, nic.AddQP(r.cfg))
	nic.Start()
	t.Cleanup(nic.Stop)

	// the "kernel": an unsignaled inline write, then a spin on its effect
	r.post(t, WQE{Opcode: OpcodeRDMAWrite, RAddr: base + 8, RKey: 9, Inline: []byte{1, 2, 3, 4, 5, 6, 7, 8}}, 0)
	<-reg.entered
	deadline := time.Now().Add(5 * time.Second)
	for nic.Err() == nil {
		require.True(t, time.Now().Before(deadline), "no error after 5 s for a write stuck for longer than the 50 ms timeout")
		time.Sleep(5 * time.Millisecond)
	}
	msg := nic.Err().Error()
	assert.Contains(t, msg, "QP 0x1000 (ctx 0 -> PE 1)")
	assert.Contains(t, msg, "RDMA write (wqe 0) of 8 bytes, rkey 0x9")
	assert.Contains(t, msg, "has not finished after 50ms")
	st := nic.Status()
	require.Len(t, st, 1)
	assert.Equal(t, uint16(1), st[0].Published)
	assert.Zero(t, st[0].Executed)
	assert.Contains(t, st[0].Busy, "RDMA write")
	assert.Contains(t, st[0].String(), "doorbell record 1")

	close(reg.release) // the copy gets to run: the NIC goes on
	r.post(t, WQE{Opcode: OpcodeNOP, FmCeSe: CtrlCQUpdate}, 0)
	c := r.next(t)
	assert.Equal(t, uint8(CQEReq), c.Opcode)
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, reg.mem[8:16])
	st = nic.Status()
	assert.Equal(t, uint64(2), st[0].Executed)
	assert.Empty(t, st[0].Busy)
}

// A poster that stops consuming CQEs: with a timeout the NIC reports the
// full CQ, naming the QP.
func TestSoftNICTimeoutCQFull(t *testing.T) {
	nic := NewSoftNIC()
	nic.SetTimeout(30 * time.Millisecond)
	r := &rig{nic: nic, remote: aligned(64)}
	r.cfg = QPConfig{QPN: 0x77, SQ: SQ{Buf: aligned(16 * SendWQEBB), WQEBBs: 16}, DBRec: aligned(8), DB: aligned(8),
		CQ: aligned(2 * CQESize), CQEs: 2, CQDBRec: aligned(4)}
	InitCQ(r.cfg.CQ)
	require.NoError(t, nic.AddQP(r.cfg))
	nic.Start()
	t.Cleanup(nic.Stop)
	for i := 0; i < 3; i++ { // 3 signaled NOPs into a 2-entry CQ nobody consumes
		r.post(t, WQE{Opcode: OpcodeNOP, FmCeSe: CtrlCQUpdate}, 0)
	}
	deadline := time.Now().Add(5 * time.Second)
	for nic.Err() == nil {
		require.True(t, time.Now().Before(deadline), "no error for a CQ full for longer than the timeout")
		time.Sleep(5 * time.Millisecond)
	}
	assert.Contains(t, nic.Err().Error(), "QP 0x77: its CQ (2 entries) stayed full")
	r.next(t) // consume: the third CQE gets written
	r.next(t)
	c := r.next(t)
	assert.Equal(t, uint16(2), c.WQECounter)
}

// Without a timeout nothing is tracked and nothing is reported.
func TestSoftNICNoTimeoutNoError(t *testing.T) {
	r := newRig(t, 8, 4)
	r.post(t, WQE{Opcode: OpcodeNOP, FmCeSe: CtrlCQUpdate}, 0)
	r.next(t)
	assert.NoError(t, r.nic.Err())
	assert.Nil(t, r.nic.busy.Load())
	st := r.nic.Status()
	require.Len(t, st, 1)
	assert.Equal(t, uint64(1), st[0].CQEs)
	assert.Equal(t, uint32(1), st[0].Consumed)
}

// TestSoftNICDrain: Drain returns once every published WQE has executed
// (unsignaled writes: no CQE to wait for), and with the NIC stopped it
// times out with ErrNotDrained naming the QP that is behind.
func TestSoftNICDrain(t *testing.T) {
	r := newRig(t, 64, 8)
	for i := 0; i < 40; i++ {
		r.post(t, WQE{Opcode: OpcodeRDMAWrite, RAddr: r.addr(8 * (i % 16)), RKey: 7,
			Inline: binary.LittleEndian.AppendUint64(nil, uint64(1000+i))}, 0)
		if i%8 == 7 { // stay within the ring: nothing signaled, so let the NIC catch up
			require.NoError(t, r.nic.Drain(5*time.Second))
		}
	}
	require.NoError(t, r.nic.Drain(5*time.Second))
	for i := 24; i < 40; i++ {
		assert.Equal(t, uint64(1000+i), binary.LittleEndian.Uint64(r.remote[8*(i%16):]), "word %d", i%16)
	}

	s := newRig(t, 64, 8)
	s.nic.Stop()
	s.post(t, WQE{Opcode: OpcodeRDMAWrite, RAddr: s.addr(0), RKey: 7, Inline: make([]byte, 8)}, 0)
	err := s.nic.Drain(20 * time.Millisecond)
	require.ErrorIs(t, err, ErrNotDrained)
	assert.Contains(t, err.Error(), "QP 0x42")
	assert.Contains(t, err.Error(), "doorbell record 1")
}

// A local region registered after Start (a buffer registered while the
// NIC runs) is the local side of RDMA writes and reads under its key, which
// KeyUses counts; inline writes count in Stats.InlineWrites and name no
// key; after DeregisterMR the key fails with a local protection error.
func TestSoftNICRegisterLocalWhileRunning(t *testing.T) {
	r := newRig(t, 8, 4)
	local := aligned(64)
	for i := range local {
		local[i] = byte(i + 1)
	}
	require.NoError(t, r.nic.RegisterMR(9, local, AccessLocalRead|AccessLocalWrite))
	la := uint64(uintptr(unsafe.Pointer(&local[0])))
	r.post(t, WQE{Opcode: OpcodeRDMAWrite, FmCeSe: CtrlCQUpdate, RAddr: r.addr(0), RKey: 7, SGEs: []DataSeg{{32, 9, la}}}, 0)
	assert.Equal(t, uint8(CQEReq), r.next(t).Opcode)
	assert.Equal(t, local[:32], r.remote[:32], "written from the registered region")
	r.post(t, WQE{Opcode: OpcodeRDMARead, FmCeSe: CtrlCQUpdate, RAddr: r.addr(100), RKey: 7, SGEs: []DataSeg{{16, 9, la + 40}}}, 0)
	assert.Equal(t, uint8(CQEReq), r.next(t).Opcode)
	assert.Equal(t, r.remote[100:116], local[40:56], "read into the registered region")
	assert.Equal(t, uint64(2), r.nic.KeyUses(9))
	assert.Equal(t, uint64(2), r.nic.KeyUses(7), "the remote key, once per WQE")
	assert.Zero(t, r.nic.Stats().InlineWrites.Load())
	r.post(t, WQE{Opcode: OpcodeRDMAWrite, FmCeSe: CtrlCQUpdate, RAddr: r.addr(200), RKey: 7, Inline: []byte{1, 2, 3}}, 0)
	assert.Equal(t, uint8(CQEReq), r.next(t).Opcode)
	assert.Equal(t, uint64(1), r.nic.Stats().InlineWrites.Load())

	require.NoError(t, r.nic.DeregisterMR(9))
	assert.Error(t, r.nic.DeregisterMR(9), "twice")
	assert.Zero(t, r.nic.KeyUses(9))
	r.post(t, WQE{Opcode: OpcodeRDMAWrite, RAddr: r.addr(0), RKey: 7, SGEs: []DataSeg{{8, 9, la}}}, 0)
	c := r.next(t)
	assert.Equal(t, uint8(CQEReqErr), c.Opcode)
	assert.Equal(t, uint8(SyndromeLocalProtErr), c.Syndrome, "a deregistered key")
}
