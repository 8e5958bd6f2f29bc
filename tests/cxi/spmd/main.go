// Command spmd is the multi-process CXI check run by tests/cxi under
// mpirun: shmem.Init with shmem.WithCXI exchanges the endpoint addresses
// over the MPI bootstrap and starts each PE's monitor; then the
// GPU-triggered barrier and active messages run across processes over
// real libfabric deferred work (sockets provider), from the Go API and
// from the device header compiled for the host (an OS thread as the "GPU
// thread"). The GPU's counter write is forwarded by the monitor
// (emulation). Every value is asserted; the last line is
// "cxi-spmd: PE p: PASS" or the process exits 1.
//
// CXI_SPMD_BOARD names a file of at least 4096 zero bytes that every PE
// maps (the PEs run on one host): the device header's barriers record
// their arrivals there, and each PE checks after every barrier that all
// had arrived.
package main

import (
	"fmt"
	"os"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/cgo/cxihost"
	"github.com/goshmem/goshmem/internal/cxi"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/shmem"
)

const (
	barriers = 60
	amPerPE  = 20
	skew     = 20 * time.Millisecond
)

func main() {
	if os.Getenv("FI_SOCKETS_PE_WAITTIME") == "" {
		os.Setenv("FI_SOCKETS_PE_WAITTIME", "0")
	}
	if err := shmem.Init(shmem.WithSymmetricSize(8<<20), shmem.WithCXI(cxi.Config{AM: true, Timeout: 20 * time.Second})); err != nil {
		fmt.Fprintln(os.Stderr, "cxi-spmd: Init:", err)
		os.Exit(1)
	}
	me := shmem.MyPE()
	err := run(me, shmem.NPEs())
	if err != nil {
		shmem.GlobalExit(1, fmt.Sprintf("cxi-spmd: PE %d: FAIL: %v", me, err))
	}
	if err := shmem.Finalize(); err != nil {
		fmt.Fprintf(os.Stderr, "cxi-spmd: PE %d: Finalize: %v\n", me, err)
		os.Exit(1)
	}
	fmt.Printf("cxi-spmd: PE %d: PASS\n", me)
}

func run(me, n int) error {
	rank, err := shmem.CXI()
	if err != nil {
		return err
	}
	if rank.PE() != me || rank.NPEs() != n {
		return errors.Newf("CXI rank %d of %d, shmem PE %d of %d", rank.PE(), rank.NPEs(), me, n)
	}
	// 1. Go API barrier: after barrier i every PE has arrived at i
	// (arrivals written to every PE's host array with P before entering).
	arrive, err := shmem.Alloc[int64](n)
	if err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	for i := int64(1); i <= barriers; i++ {
		for pe := 0; pe < n; pe++ {
			if err := shmem.P(arrive, me, i, pe); err != nil {
				return err
			}
		}
		if err := shmem.Quiet(); err != nil {
			return err
		}
		if err := rank.Barrier(); err != nil {
			return errors.Wrapf(err, "Go API barrier %d", i)
		}
		for q, v := range arrive.Local() {
			if v < i {
				return errors.Newf("passed CXI barrier %d while PE %d had arrived only at %d", i, q, v)
			}
		}
	}
	// 2. Go API active messages: a round sends one message to every PE
	// (this one included) and dispatches until every PE's arrived.
	next := make([]uint64, n)
	got := 0
	handlers := map[uint32]cxi.Handler{3: func(m cxi.Msg) {
		if len(m.Args) != 3 || m.Flags != 9 || m.Args[0] != uint64(m.SrcPE) || m.Args[1] != next[m.SrcPE] || m.Args[2] != uint64(me) {
			err = errors.Newf("message %d from PE %d: %+v", next[m.SrcPE], m.SrcPE, m)
		}
		next[m.SrcPE]++
		got++
	}}
	for k := 0; k < amPerPE; k++ {
		for pe := 0; pe < n; pe++ {
			if e := rank.AMSend(pe, 3, 9, uint64(me), uint64(k), uint64(pe)); e != nil {
				return errors.Wrapf(e, "AMSend %d to PE %d", k, pe)
			}
		}
		deadline := time.Now().Add(20 * time.Second)
		for got < (k+1)*n {
			if _, e := rank.Dispatch(handlers); e != nil {
				return e
			}
			if err != nil {
				return err
			}
			if time.Now().After(deadline) {
				return errors.Newf("round %d: %d of %d messages after 20s", k, got, (k+1)*n)
			}
		}
	}
	if got != amPerPE*n {
		return errors.Newf("received %d messages, want %d", got, amPerPE*n)
	}
	// Bad input: a clear error, nothing sent.
	if e := rank.AMSend(n, 3, 0); !errors.Is(e, errs.ErrPEOutOfRange) {
		return errors.Newf("AMSend to PE %d: want ErrPEOutOfRange, got %v", n, e)
	}
	if e := rank.AMSend(0, 3, 0, 1, 2, 3, 4, 5, 6); !errors.Is(e, errs.ErrInvalidArgument) {
		return errors.Newf("AMSend with 6 arguments: want ErrInvalidArgument, got %v", e)
	}
	// 3. The device header compiled for the host, on an OS thread: the
	// same barrier and messages, kernel-side. Each PE records its arrival
	// on the board before entering barrier i and, once the barrier returns,
	// finds every PE's there; PE i mod n sleeps before arriving at barrier
	// i, so a barrier that did not wait for it would be caught.
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	board, err := mapBoard(n)
	if err != nil {
		return err
	}
	defer unix.Munmap(board)
	th := cxihost.NewThread(rank.(*cxi.Rank).State(), me, n)
	res := th.Check(6*n, skew, amPerPE, unsafe.Slice((*uint64)(unsafe.Pointer(&board[0])), len(board)/8))
	th.Close()
	if res.Early != 0 {
		return errors.Newf("device header barrier %d returned while PE %d had arrived only at %d (%d early barriers)",
			res.EarlyIter+1, res.EarlyPE, res.EarlySeen, res.Early)
	}
	if res.RC != 0 {
		return errors.Newf("device header (host mode): GOSHMEMX_CXI code %d after %d barriers, %d messages", res.RC, res.Done, res.AMGot)
	}
	if res.Done != uint64(6*n) || res.AMGot != uint64(amPerPE*n) || res.AMBad != 0 {
		return errors.Newf("device header (host mode): %d barriers, %d messages received, %d bad", res.Done, res.AMGot, res.AMBad)
	}
	// 4. The monitor's counters.
	st := rank.Stats()
	r := cxi.Rounds(n)
	switch {
	case rank.Err() != nil:
		return errors.Wrap(rank.Err(), "monitor")
	case n > 1 && (!st.Deferred || st.Forwarded == 0):
		return errors.Newf("want real deferred work with forwarded triggers: %+v", st)
	case st.BarrierMaxArmed > 2*r:
		return errors.Newf("%d barrier records armed > 2R = %d", st.BarrierMaxArmed, 2*r)
	case st.Overruns != 0:
		return errors.Newf("%d trigger overruns", st.Overruns)
	case shmem.CXIDeviceState() != 0:
		return errors.Newf("device cxi_state %#x without a GPU", shmem.CXIDeviceState())
	}
	fmt.Printf("cxi-spmd: PE %d: %s; %s; %d Go barriers, %d messages, header: %d barriers (slowest %v, shortest skewed %v), %d messages; "+
		"forwarded %d, retired %d, fallbacks %d, max armed %d (barrier %d <= 2R = %d), re-arm %v/op, max monitor gap %v\n",
		me, rank.Engine(), rank.Emulated(), barriers, amPerPE*n, res.Done, res.Max, res.Min, res.AMGot,
		st.Forwarded, st.Retired, st.Fallbacks, st.MaxArmed, st.BarrierMaxArmed, 2*r, perOp(st), st.MaxLoopGap)
	return shmem.BarrierAll()
}

// mapBoard maps CXI_SPMD_BOARD, the arrivals board of the device header's
// barriers (Thread.Check), shared by the PEs of this host.
func mapBoard(n int) ([]byte, error) {
	path := os.Getenv("CXI_SPMD_BOARD")
	if path == "" {
		return nil, errors.New("CXI_SPMD_BOARD is not set: name a file of 4096 zero bytes every PE maps (tests/cxi sets it)")
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return nil, errors.Wrap(err, "CXI_SPMD_BOARD")
	}
	defer f.Close()
	size := n * cxihost.BoardStride * 8
	if st, err := f.Stat(); err != nil || st.Size() < int64(size) {
		return nil, errors.Newf("CXI_SPMD_BOARD %s: want at least %d bytes (%v)", path, size, err)
	}
	b, err := unix.Mmap(int(f.Fd()), 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	return b, errors.Wrap(err, "CXI_SPMD_BOARD: mmap")
}

func perOp(st cxi.Stats) time.Duration {
	if st.ArmOps == 0 {
		return 0
	}
	return st.ArmTime / time.Duration(st.ArmOps)
}
