package ibgda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Ringer is the CPU-assisted doorbell mode (GOSHMEM_IBGDA_DOORBELL=cpu): for
// hosts where the NIC's UAR page cannot be mapped into the GPU (the NVIDIA
// driver allows the mapping only with PeerMappingOverride=1), GPU threads
// still build the WQEs and publish them in the doorbell record, but their
// 8-byte doorbell store goes to a host-pinned stand-in page nobody reads;
// one host goroutine watches each QP's doorbell record and performs the
// doorbell store to the real UAR register itself.
//
// What it rings: the doorbell record's send counter is the only value the
// posters publish in order (qp.h: publication is in reservation order, the
// record never moves backwards), whereas the stand-in doorbell word may be
// overwritten out of order by concurrent publishers and loses values. So
// for every change of the record the ringer stores the doorbell in the
// producer-counter form {opmod_idx_opcode = counter << 8, qpn_ds = qpn << 8}
// (DoorbellForCounter), the form NVSHMEM's IBGDA rings. Doorbells of one QP
// are therefore strictly in order, and the last one rung always covers the
// last WQE published; several publications between two looks are announced
// by one doorbell (coalesced, never dropped).
// Ref: NVSHMEM ibgda_ring_db (prod_idx in the doorbell's index field) and
// NVSHMEM's CPU-assisted IBGDA mode.
//
// The doorbell records must be host-readable (queues in host memory).
type Ringer struct {
	mu    sync.Mutex
	qps   []*ringQP
	stop  chan struct{}
	done  chan struct{}
	rings atomic.Uint64
}

// RingQP is one QP the Ringer serves.
type RingQP struct {
	Name  string // for messages (optional)
	QPN   uint32
	DBRec []byte // the QP's 8-byte doorbell record ([RcvDBR], [SndDBR], big-endian)
	// Ring performs the 8-byte doorbell store (the UAR's BlueFlame
	// register on a ConnectX: an MMIO store with the ordering it needs;
	// the soft NIC's doorbell word in tests). v is the 8 bytes in memory
	// order, as a little-endian uint64 (as the device header stores it).
	Ring func(v uint64)
}

type ringQP struct {
	RingQP
	last uint16
}

// NewRinger returns a stopped Ringer for qps.
func NewRinger(qps []RingQP) (*Ringer, error) {
	r := &Ringer{}
	for _, q := range qps {
		if len(q.DBRec) < 8 || q.Ring == nil {
			return nil, fmt.Errorf("ibgda: ringer: QP %#x needs an 8-byte doorbell record and a Ring function", q.QPN)
		}
		r.qps = append(r.qps, &ringQP{RingQP: q, last: uint16(loadBE32(q.DBRec[4*SndDBR:]))})
	}
	if len(r.qps) == 0 {
		return nil, errors.New("ibgda: ringer without QPs")
	}
	return r, nil
}

// DoorbellForCounter is the doorbell the Ringer stores for a doorbell
// record at counter pi on QP qpn: the first 8 bytes of a ctrl segment with
// wqe_index = pi, opcode 0, qpn and ds 0, big-endian fields, returned as the
// little-endian uint64 of those bytes.
func DoorbellForCounter(pi uint16, qpn uint32) uint64 {
	var b [8]byte
	binary.BigEndian.PutUint32(b[0:], uint32(pi)<<8)
	binary.BigEndian.PutUint32(b[4:], qpn<<8)
	return binary.LittleEndian.Uint64(b[:])
}

// decodeDoorbell splits a doorbell word into its wqe index and QPN.
func decodeDoorbell(v uint64) (idx uint16, qpn uint32) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], v)
	return uint16(binary.BigEndian.Uint32(b[0:]) >> 8), binary.BigEndian.Uint32(b[4:]) >> 8
}

// Rings returns how many doorbells the Ringer has stored.
func (r *Ringer) Rings() uint64 { return r.rings.Load() }

// Start runs the ringer's goroutine (on an OS thread of its own).
func (r *Ringer) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stop != nil {
		return
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	go r.run(r.stop, r.done)
}

// Stop rings what is still published but not rung, ends the goroutine and
// waits for it.
func (r *Ringer) Stop() {
	r.mu.Lock()
	stop, done := r.stop, r.done
	r.stop = nil
	r.mu.Unlock()
	if stop == nil {
		return
	}
	close(stop)
	<-done
}

// sweep rings every QP whose doorbell record moved; reports whether any did.
func (r *Ringer) sweep() bool {
	work := false
	for _, q := range r.qps {
		pi := uint16(loadBE32(q.DBRec[4*SndDBR:])) // acquire: the WQE stores are visible
		if pi == q.last {
			continue
		}
		q.Ring(DoorbellForCounter(pi, q.QPN))
		q.last = pi
		r.rings.Add(1)
		work = true
	}
	return work
}

func (r *Ringer) run(stop, done chan struct{}) {
	defer close(done)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	idle := 0
	for {
		select {
		case <-stop:
			r.sweep()
			return
		default:
		}
		if r.sweep() {
			idle = 0
			continue
		}
		// Back off when idle, as the soft NIC does: the first 64 idle
		// sweeps yield, later ones sleep 20 us (a doorbell then waits at
		// most that long plus a sweep).
		idle++
		if idle < 64 {
			runtime.Gosched()
		} else {
			time.Sleep(20 * time.Microsecond)
		}
	}
}
