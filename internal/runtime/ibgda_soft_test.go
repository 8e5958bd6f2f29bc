package runtime

import (
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/ibgda"
	"github.com/goshmem/goshmem/internal/spin"
)

// softRig is a softIBGDA without a GPU: one QP in Go memory named as
// startSoftIBGDA names them, and the report word.
func softRig(t *testing.T) (*softIBGDA, ibgda.QPConfig) {
	t.Helper()
	buf := make([]uint64, (8*ibgda.SendWQEBB+4*ibgda.CQESize+3*64)/8+8) // 8-byte aligned
	mem := unsafe.Slice((*byte)(unsafe.Pointer(&buf[0])), len(buf)*8)
	cfg := ibgda.QPConfig{Name: "ctx 0 -> PE 1", QPN: softIBGDAQPN0,
		SQ: ibgda.SQ{Buf: mem[:8*ibgda.SendWQEBB], WQEBBs: 8}, CQ: mem[8*ibgda.SendWQEBB : 8*ibgda.SendWQEBB+4*ibgda.CQESize], CQEs: 4}
	rest := mem[8*ibgda.SendWQEBB+4*ibgda.CQESize:]
	cfg.DBRec, cfg.DB, cfg.CQDBRec = rest[0:8], rest[64:72], rest[128:132]
	ibgda.InitCQ(cfg.CQ)
	s := &softIBGDA{nic: ibgda.NewSoftNIC(), report: new(uint64), names: map[uint32]string{softIBGDAQPN0: "ctx 0 -> PE 1"}}
	require.NoError(t, s.nic.AddQP(cfg))
	return s, cfg
}

// What a timed-out or failed GPU wait says under the soft NIC: nothing
// when nothing happened; the device's report naming the QP, its context
// and PE; and, for a kernel whose doorbell never reached host memory, that
// no doorbell record moved.
func TestSoftIBGDADiagnose(t *testing.T) {
	s, cfg := softRig(t)
	assert.Equal(t, "", s.diagnose(), "no report, no NIC error, nothing rung")

	*s.report = 1<<63 | uint64(ibgda.WaitQuiet)<<56 | uint64(softIBGDAQPN0)<<32 | 2<<16
	d := s.diagnose()
	assert.Contains(t, d, "soft NIC (EMULATION)")
	assert.Contains(t, d, "QP 0x1000: waited longer than GOSHMEM_TIMEOUT for completions (published 2 WQEBBs, completed 0")
	assert.Contains(t, d, "[QP 0x1000 is ctx 0 -> PE 1]")
	assert.Contains(t, d, "no QP was ever rung")

	cfg.DBRec[7] = 2 // the doorbell record (big-endian send counter) says 2, the NIC has not run
	d = s.diagnose()
	assert.Contains(t, d, "QP 0x1000 (ctx 0 -> PE 1): doorbell record 2")
	assert.NotContains(t, d, "no QP was ever rung")
}

// Under the soft NIC with GOSHMEM_TIMEOUT, a GPU wait that does not return
// (a kernel spinning on something the NIC never delivers) ends with
// ErrTimeout naming the kernel and carrying the NIC's view, instead of
// hanging; without a timeout, or without a soft NIC, it just waits.
func TestGPUWaitTimeoutUnderSoftNIC(t *testing.T) {
	s, cfg := softRig(t)
	cfg.DBRec[7] = 1
	r := &Runtime{Me: 3, softNIC: s, Policy: spin.Policy{Timeout: 20 * time.Millisecond}}
	block := make(chan struct{})
	defer close(block)
	name := "t_rma"
	err := r.gpuWait(func() error { <-block; return nil }, &name, "Synchronize")
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrTimeout))
	err = errors.Join(r.kernelError(err, &name, "Synchronize"), errors.New((&ibgdaBackend{r: r}).Diagnose()))
	assert.True(t, errors.Is(err, errs.ErrTimeout))
	msg := err.Error()
	assert.Contains(t, msg, `PE 3: Synchronize: kernel "t_rma" still running after`)
	assert.Contains(t, msg, "GOSHMEM_TIMEOUT=20ms")
	assert.Contains(t, msg, "QP 0x1000 (ctx 0 -> PE 1): doorbell record 1")

	ok := func() error { return nil }
	assert.NoError(t, r.gpuWait(ok, &name, "Synchronize"))
	r.Policy.Timeout = 0
	assert.NoError(t, r.gpuWait(ok, &name, "Synchronize"))
}
