package e2e

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/ibgda"
)

const (
	lkey = 0x1111
	rkey = 0x2222
)

// startNIC registers env's regions and QPs [0, nqp) with a new SoftNIC.
func startNIC(t *testing.T, e *env, nqp int) *ibgda.SoftNIC {
	nic := ibgda.NewSoftNIC()
	require.NoError(t, nic.RegisterMR(lkey, e.local(), ibgda.AccessLocalRead|ibgda.AccessLocalWrite))
	require.NoError(t, nic.RegisterMR(rkey, e.remote(),
		ibgda.AccessRemoteRead|ibgda.AccessRemoteWrite|ibgda.AccessRemoteAtomic))
	for q := 0; q < nqp; q++ {
		require.NoError(t, nic.AddQP(e.qpConfig(q)))
	}
	nic.Start()
	t.Cleanup(nic.Stop)
	return nic
}

func val(t, i int, salt uint64) uint64 { return uint64(t+1)<<40 ^ uint64(i)<<8 ^ salt }

func TestQPLayout(t *testing.T) {
	assert.Equal(t, uintptr(168), qpStructSize(), "goshmemi_ibgda_qp_t size (GOSHMEMI_IBGDA_QP_SIZE)")
}

// N host threads (stand-ins for GPU threads) share 4 QPs with small rings
// (SQ 64 WQEBBs, CQ 16 CQEs: many wraps and laps), post every operation
// kind through the device header, and the SoftNIC executes the bytes.
func TestEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		name         string
		threads, nqp int
		sq, cq       uint32
		iters        int
	}{
		{"1thread-1qp", 1, 1, 64, 16, 200},
		{"8threads-4qps", 8, 4, 64, 16, 200},
		{"8threads-1qp-tiny-rings", 8, 1, 64, 4, 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := newEnv(tc.nqp, tc.sq, tc.cq, tc.threads, tc.iters, lkey, rkey)
			require.NoError(t, err)
			defer e.free()
			require.True(t, e.qpVersionOK())
			nic := startNIC(t, e, tc.nqp)
			require.NoError(t, e.runThreads(tc.nqp))

			l := e.layout()
			rem, loc := e.remote(), e.local()
			word := func(b []byte, w uint64) uint64 { return binary.LittleEndian.Uint64(b[w*8:]) }
			wordBE := func(b []byte, w uint64) uint64 { return binary.BigEndian.Uint64(b[w*8:]) }
			I := uint64(tc.iters)
			var faTotal, casTotal uint64
			seen := map[uint64]bool{}
			for th := 0; th < tc.threads; th++ {
				TI := uint64(th) * I
				lastSet := uint64(0)
				adds := uint64(0)
				for i := 0; i < tc.iters; i++ {
					require.Equal(t, val(th, i, 0xa), word(rem, uint64(l.slot_a)+TI+uint64(i)), "inline put t%d i%d", th, i)
					require.Equal(t, val(th, i, 0xb), word(rem, uint64(l.slot_b)+TI+uint64(i)), "pointer put t%d i%d", th, i)
					require.Equal(t, val(th, i, 0xc), word(rem, uint64(l.slot_c)+TI+uint64(i)), "put_signal data t%d i%d", th, i)
					old := wordBE(loc, uint64(l.fetch)+TI+uint64(i))
					require.False(t, seen[old], "fetch-add returned %d twice", old)
					seen[old] = true
					if i%2 == 0 {
						adds++
					} else {
						lastSet = uint64(i) + 1
					}
				}
				assert.Equal(t, adds, wordBE(rem, uint64(l.sig_add)+uint64(th)), "SIGNAL_ADD word of thread %d (BE)", th)
				assert.Equal(t, lastSet, word(rem, uint64(l.sig_set)+uint64(th)), "SIGNAL_SET word of thread %d", th)
				lastWarpIter := ((tc.iters - 1) / 8) * 8
				for lane := 0; lane < 32; lane++ {
					assert.Equal(t, val(th, lastWarpIter, 0x100+uint64(lane)),
						word(rem, uint64(l.warp)+uint64(th)*32+uint64(lane)), "warp lane %d of thread %d", lane, th)
				}
				faTotal += e.faOps(th)
				casTotal += e.casOK(th)
			}
			assert.Equal(t, faTotal, wordBE(rem, uint64(l.counter)), "fetch-add counter (BE)")
			for v := uint64(0); v < faTotal; v++ {
				assert.True(t, seen[v], "fetch-add value %d never returned", v)
			}
			assert.Equal(t, casTotal, wordBE(rem, uint64(l.cas)), "compare-swap counter (BE)")
			assert.Zero(t, e.peErr(), "PE error word")
			s := nic.Stats()
			assert.Zero(t, s.ErrCQEs.Load())
			assert.Zero(t, s.BadDoorbells.Load())
			assert.NotZero(t, s.Doorbells.Load())
			t.Logf("WQEs %d, CQEs %d (selective completion), doorbells seen %d",
				s.WQEs.Load(), s.CQEs.Load(), s.Doorbells.Load())
			assert.Less(t, s.CQEs.Load(), s.WQEs.Load()/2, "most WQEs are unsignaled")
		})
	}
}

// The exclusive owner (goshmemi_ibgda_excl_*) posts batches through the
// one-pass path and the exact path (batch longer than its bound, ring
// near full), on QPs with and without the sq_nbb shadow; every put lands,
// and a batch with an invalid op announces nothing (posters.c).
func TestExclusiveOwner(t *testing.T) {
	for _, tc := range []struct {
		name     string
		q, batch int
		sq       uint32
	}{
		{"batch4-sq64", 0, 4, 64},       // 4 x 5 WQEBBs <= 32: one pass while the ring has room
		{"batch16-sq64", 1, 16, 64},     // 16 x 5 > 32: the exact path
		{"batch16-sq1024", 1, 16, 1024}, // one pass, waits only near a full ring
	} {
		t.Run(tc.name, func(t *testing.T) {
			const iters = 2000
			e, err := newEnv(2, tc.sq, 16, 1, iters, lkey, rkey)
			require.NoError(t, err)
			defer e.free()
			nic := startNIC(t, e, 2)
			require.NoError(t, e.exclRun(tc.q, tc.batch))
			l := e.layout()
			rem := e.remote()
			word := func(w uint64) uint64 { return binary.LittleEndian.Uint64(rem[w*8:]) }
			for i := 0; i < iters; i++ {
				if i%2 == 0 {
					require.Equal(t, val(0, i, 0xe), word(uint64(l.slot_a)+uint64(i)), "inline put %d", i)
				} else {
					require.Equal(t, val(0, i, 0xf), word(uint64(l.slot_b)+uint64(i)), "data-pointer put %d", i)
				}
			}
			assert.Equal(t, val(0, iters, 0xe), word(uint64(l.slot_c)), "shared-path put after excl_end")
			for w := uint64(0); w < 12; w++ {
				assert.Equal(t, uint64(0x5a5a5a5a5a5a5a5a), word(uint64(l.warp)+w), "100-byte inline put, word %d", w)
			}
			assert.Equal(t, uint64(0x5a5a5a5a), word(uint64(l.warp)+12)&0xffffffff, "100-byte inline put, last 4 bytes")
			assert.Zero(t, e.qpErr(tc.q), "QP error word")
			s := nic.Stats()
			assert.Zero(t, s.ErrCQEs.Load())
			assert.Zero(t, s.BadDoorbells.Load())
		})
	}
}

// ctx quiet polls only its QP's CQ; PE-wide quiet polls every QP's.
func TestQuietScope(t *testing.T) {
	e, err := newEnv(2, 64, 16, 1, 16, lkey, rkey)
	require.NoError(t, err)
	defer e.free()
	startNIC(t, e, 2)
	require.NoError(t, e.scopeCheck(0, 1))
}

// Malformed operations come back as error CQEs that name the QP and the
// syndrome; the QP then flushes everything after.
func TestErrorCQE(t *testing.T) {
	cases := []struct {
		name string
		kind int
		synd uint8
	}{
		{"unknown rkey", 0, ibgda.SyndromeRemoteAccessErr},
		{"unknown lkey", 1, ibgda.SyndromeLocalProtErr},
		{"remote address out of range", 2, ibgda.SyndromeRemoteAccessErr},
		{"misaligned atomic", 3, ibgda.SyndromeRemoteInvalReqErr},
	}
	e, err := newEnv(len(cases), 64, 16, 1, 16, lkey, rkey)
	require.NoError(t, err)
	defer e.free()
	startNIC(t, e, len(cases))
	for q, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, errCQE, e.errorPost(q, tc.kind))
			w := e.qpErr(q)
			assert.Equal(t, e.qpn(q), errQPN(w), "error word names the QP")
			assert.Equal(t, tc.synd, errSyndrome(w), "syndrome")
			assert.Equal(t, uint8(ibgda.CQEReqErr), errCQEOpcode(w))
			assert.Equal(t, errCQE, e.postAfterError(q), "a QP in error stays in error")
			assert.Equal(t, w, e.qpErr(q), "first error wins")
		})
	}
	assert.Equal(t, e.qpn(0), errQPN(e.peErr()), "PE-wide error word keeps the first QP's error")
}

// ibgda.EncodeQP (Go, used by goshmem-perf ibgda and the host setup) writes
// every descriptor field where the C struct has it.
func TestEncodeQPMatchesC(t *testing.T) {
	d := ibgda.QPDesc{QPN: 0xabcdef, SQBuf: 0x1111_0000, SQWQEBBs: 1024, CQEs: 256, DBRec: 0x2222_0000, DB: 0x3333_0000,
		CQBuf: 0x4444_0000, CQDBRec: 0x5555_0000, ErrWord: 0x6666_0000, LKeyTab: 0x7777_0000, RKeyTab: 0x8888_0000,
		NLKeys: 3, NRKeys: 5, ScratchLAddr: 0x9999_0000, ScratchLKey: 0x1234, SQNBB: 0xaaaa_0000, TimeoutNS: 20e9}
	b := ibgda.EncodeQP(d)
	require.Len(t, b, int(qpStructSize()))
	got := qpFieldsByC(b)
	want := map[string]uint64{"version": ibgda.QPVersion, "qpn": 0xabcdef, "sq_buf": 0x1111_0000, "sq_wqebb_cnt": 1024,
		"cq_cqe_cnt": 256, "dbrec": 0x2222_0000, "db": 0x3333_0000, "cq_buf": 0x4444_0000, "cq_dbrec": 0x5555_0000,
		"err_word": 0x6666_0000, "lkey_tab": 0x7777_0000, "rkey_tab": 0x8888_0000, "n_lkeys": 3, "n_rkeys": 5,
		"scratch_laddr": 0x9999_0000, "scratch_lkey": 0x1234, "sq_nbb": 0xaaaa_0000, "sq_ready_idx": 0,
		"timeout_ns": 20e9}
	assert.Equal(t, want, got)
}

// A CQE can name a WQE that the poller's snapshot of sq_ready_idx does not
// cover yet (the NIC fetches up to the doorbell record, stored first): the
// poller leaves it in the CQ instead of consuming it with sq_done_idx
// clamped short of it (a lost completion: a quiet waiting for that WQE would
// hang with every CQE consumed). Also: a CQE below sq_done_idx retires nothing,
// and the 16-bit wqe_counter arithmetic across 2^16. QP 0 reads the WQEBB
// count from the SQ, QP 1 from sq_nbb.
func TestPollCQEPastReady(t *testing.T) {
	e, err := newEnv(2, 8, 4, 1, 1, lkey, rkey)
	require.NoError(t, err)
	defer e.free()
	for q := 0; q < 2; q++ {
		require.NoError(t, e.pollRace(q), "QP %d", q)
	}
}

// Many threads post and quiet one QP in lockstep, as t_rma's 256 threads in
// goshmem_quiet did, with every poller pausing after it loads sq_ready_idx
// (as a GPU poller's PCIe reads of the CQ do) while the others publish NOPs
// the SoftNIC completes: no completion may be lost.
func TestQuietStorm(t *testing.T) {
	const threads, rounds = 8, 150
	e, err := newEnv(2, 64, 16, threads, 16, lkey, rkey)
	require.NoError(t, err)
	defer e.free()
	startNIC(t, e, 2)
	for q := 0; q < 2; q++ {
		require.NoError(t, e.quietStorm(q, threads, rounds, 50_000), "QP %d", q)
	}
}
