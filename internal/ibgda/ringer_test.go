package ibgda

import (
	"encoding/binary"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rungRig is a rig whose NIC reacts only to the doorbell word (the UAR
// stand-in) that a Ringer writes: the CPU-assisted doorbell mode against
// the soft NIC. ring wraps the store so that tests can break it.
type rungRig struct {
	*rig
	ringer *Ringer
	mu     sync.Mutex
	rung   []uint16 // every doorbell index the Ringer stored, in order
}

func newRungRig(t *testing.T, sq, cqes uint32, fault func(store func(uint64), v uint64)) *rungRig {
	r := &rungRig{rig: &rig{nic: NewSoftNIC(), remote: aligned(256)}}
	r.cfg = QPConfig{QPN: 0x42, SQ: SQ{Buf: aligned(int(sq) * SendWQEBB), WQEBBs: sq}, DBRec: aligned(8),
		DB: aligned(8), CQ: aligned(int(cqes) * CQESize), CQEs: cqes, CQDBRec: aligned(4), DoorbellDriven: true}
	InitCQ(r.cfg.CQ)
	require.NoError(t, r.nic.RegisterMR(7, r.remote, AccessAll))
	require.NoError(t, r.nic.AddQP(r.cfg))
	uar := (*uint64)(unsafe.Pointer(&r.cfg.DB[0]))
	store := func(v uint64) { atomic.StoreUint64(uar, v) }
	var err error
	r.ringer, err = NewRinger([]RingQP{{QPN: r.cfg.QPN, DBRec: r.cfg.DBRec, Ring: func(v uint64) {
		idx, _ := decodeDoorbell(v)
		r.mu.Lock()
		r.rung = append(r.rung, idx)
		r.mu.Unlock()
		if fault != nil {
			fault(store, v)
			return
		}
		store(v)
	}}})
	require.NoError(t, err)
	r.nic.Start()
	r.ringer.Start()
	t.Cleanup(func() { r.ringer.Stop(); r.nic.Stop() })
	return r
}

// tryNext is rig.next with a bound and no failure: ok false when no CQE
// arrived within d.
func (r *rig) tryNext(d time.Duration) (CQE, bool) {
	deadline := time.Now().Add(d)
	slot := r.cfg.CQ[(r.ci%uint64(r.cfg.CQEs))*CQESize:][:CQESize]
	for {
		op := byte(loadU32(slot[60:]) >> 24)
		if op>>4 != CQEInvalid && uint64(op&1) == (r.ci/uint64(r.cfg.CQEs))&1 {
			break
		}
		if time.Now().After(deadline) {
			return CQE{}, false
		}
		time.Sleep(10 * time.Microsecond)
	}
	c, _ := ParseCQE(slot)
	r.ci++
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(r.ci))
	storeU32(r.cfg.CQDBRec, binary.LittleEndian.Uint32(b[:]))
	return c, true
}

func TestDoorbellForCounter(t *testing.T) {
	v := DoorbellForCounter(0x1234, 0xabcdef)
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	// ctrl's first 8 bytes: opmod_idx_opcode = BE(idx << 8), qpn_ds = BE(qpn << 8)
	assert.Equal(t, []byte{0x00, 0x12, 0x34, 0x00, 0xab, 0xcd, 0xef, 0x00}, b[:])
	idx, qpn := decodeDoorbell(v)
	assert.Equal(t, uint16(0x1234), idx)
	assert.Equal(t, uint32(0xabcdef), qpn)
}

// The Ringer against a doorbell-driven soft NIC: every WQE executes (66000
// WQEs: 257 laps of a 256-WQEBB ring, past the 16-bit index wrap), the
// doorbells it stored are strictly increasing (mod 2^16, each at most a
// ring ahead) and the last one announces the last WQE published.
func TestRingerRingsInOrderAndNeverDrops(t *testing.T) {
	r := newRungRig(t, 256, 16, nil)
	const n = 66000
	for i := 0; i < n; i++ {
		fm := uint8(0)
		if i%8 == 7 || i == n-1 {
			fm = CtrlCQUpdate
		}
		r.post(t, WQE{Opcode: OpcodeRDMAWrite, FmCeSe: fm, RAddr: r.addr(8 * (i % 32)), RKey: 7,
			Inline: binary.LittleEndian.AppendUint64(nil, uint64(i))}, 0)
		if fm != 0 {
			c := r.next(t)
			require.Equal(t, uint8(CQEReq), c.Opcode, "WQE %d", i)
			require.Equal(t, uint16(r.pi-1), c.WQECounter, "WQE %d", i)
		}
	}
	for i := n - 32; i < n; i++ {
		assert.Equal(t, uint64(i), binary.LittleEndian.Uint64(r.remote[8*(i%32):]))
	}
	require.NoError(t, r.nic.Err())
	assert.Zero(t, r.nic.Stats().BadDoorbells.Load())
	r.mu.Lock()
	rung := append([]uint16(nil), r.rung...)
	r.mu.Unlock()
	require.NotEmpty(t, rung)
	prev := uint16(0)
	for i, idx := range rung {
		d := uint16(idx - prev)
		require.True(t, d > 0 && d <= 256, "doorbell %d: index %d after %d (not in order)", i, idx, prev)
		prev = idx
	}
	assert.Equal(t, uint16(r.pi), rung[len(rung)-1], "the last doorbell announces the last WQE")
	assert.Equal(t, uint64(len(rung)), r.ringer.Rings())
}

// A broken ringer is caught: a dropped doorbell leaves the WQE unexecuted
// (no CQE), one rung out of order and one rung before publication are
// recorded as the NIC's error.
func TestRingerFaultsAreCaught(t *testing.T) {
	signaledNOP := WQE{Opcode: OpcodeNOP, FmCeSe: CtrlCQUpdate}
	t.Run("dropped", func(t *testing.T) {
		var calls atomic.Int32
		r := newRungRig(t, 64, 16, func(store func(uint64), v uint64) {
			if calls.Add(1) != 2 { // the second doorbell never reaches the UAR
				store(v)
			}
		})
		r.post(t, signaledNOP, 0)
		_, ok := r.tryNext(5 * time.Second)
		require.True(t, ok, "first WQE")
		r.post(t, signaledNOP, 0)
		_, ok = r.tryNext(100 * time.Millisecond)
		assert.False(t, ok, "a WQE whose doorbell was dropped must not execute")
	})
	t.Run("out of order", func(t *testing.T) {
		var prev atomic.Uint64
		var r *rungRig
		r = newRungRig(t, 64, 16, func(store func(uint64), v uint64) {
			store(v)
			if p := prev.Swap(v); p != 0 {
				idx, _ := decodeDoorbell(v)
				for deadline := time.Now().Add(5 * time.Second); r.nic.Status()[0].Executed < uint64(idx) &&
					time.Now().Before(deadline); {
					time.Sleep(100 * time.Microsecond) // the NIC acts on v first
				}
				store(p) // then sees the older doorbell
			}
		})
		r.post(t, signaledNOP, 0)
		r.next(t)
		r.post(t, signaledNOP, 0)
		r.next(t)
		deadline := time.Now().Add(5 * time.Second)
		for r.nic.Err() == nil && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		require.Error(t, r.nic.Err())
		assert.Contains(t, r.nic.Err().Error(), "QP 0x42: doorbell went backwards to WQEBB 1 after the NIC was rung up to 2 (rung out of order)")
		assert.NotZero(t, r.nic.Stats().BadDoorbells.Load())
	})
	t.Run("before publication", func(t *testing.T) {
		r := newRungRig(t, 64, 16, func(store func(uint64), v uint64) {
			idx, qpn := decodeDoorbell(v)
			store(DoorbellForCounter(idx+4, qpn)) // announces WQEBBs not yet in the record
		})
		r.post(t, signaledNOP, 0)
		deadline := time.Now().Add(5 * time.Second)
		for r.nic.Err() == nil && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
		require.Error(t, r.nic.Err())
		assert.Contains(t, r.nic.Err().Error(), "doorbell announces WQEBB 5 beyond the doorbell record 1")
		_, ok := r.tryNext(50 * time.Millisecond)
		assert.False(t, ok, "a bad doorbell is ignored")
	})
}

func TestRingerErrors(t *testing.T) {
	_, err := NewRinger(nil)
	assert.ErrorContains(t, err, "without QPs")
	_, err = NewRinger([]RingQP{{QPN: 5, DBRec: make([]byte, 4), Ring: func(uint64) {}}})
	assert.ErrorContains(t, err, "QP 0x5 needs an 8-byte doorbell record")
	n := NewSoftNIC()
	err = n.AddQP(QPConfig{QPN: 9, SQ: SQ{Buf: aligned(64), WQEBBs: 1}, DBRec: aligned(8), CQ: aligned(64), CQEs: 1,
		CQDBRec: aligned(4), DoorbellDriven: true})
	assert.ErrorContains(t, err, "QP 0x9 is doorbell-driven but has no doorbell word")
}
