// Package fabric is goshmem's own minimal cgo binding to libfabric (1.14+;
// 1.17 here): one RDM endpoint with an address vector, a completion queue
// whose entries carry an integer context, memory registration, RMA
// (fi_writemsg, fi_read) and atomics (fi_atomicmsg, fi_fetch_atomicmsg,
// fi_compare_atomicmsg). It is the only package that says import "C" for
// libfabric; the transport (internal/transport/ofi) builds goshmem's
// semantics on it.
//
// fi_getinfo may offer one entry per address of each interface (tcp,
// sockets); Open binds the one Pick chooses, never blindly the first.
//
// Errors come in libfabric's two tiers: a call returns a negative fi_errno
// (an Errno here, EAGAIN included), and a failure found later surfaces as a
// completion-queue error entry (CQReadErr).
//
// Every call may be made from any goroutine: the domain is opened with
// FI_THREAD_SAFE. The binding keeps no Go pointer in C: callers pass C or
// mmap'd memory for anything the provider touches after the call returns.
//
// # Loading
//
// Building needs no libfabric headers or library: abi.h declares the part
// of libfabric's ABI the binding uses, and Library (libfabric.so.1) is
// opened with dlopen on the first Providers, Open, OpenSelect or
// OpenTriggered (or Load), never at package init, so a program that uses
// no libfabric transport never loads it. A missing or too old library is
// an error matching ErrNoLibrary that names the library, what asked for it
// and what dlopen said. The hot calls go through the provider's ops tables,
// as libfabric's own inline wrappers do: no lookup or lock per call.
package fabric

/*
#cgo CFLAGS: -O2 -Wall
#cgo LDFLAGS: -ldl -lpthread
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// ErrNoProvider is returned by Open when no provider matches the request.
var ErrNoProvider = errors.New("fabric: no matching libfabric provider")

// Errno is a libfabric error number (positive; calls return its negative).
type Errno int

// Errors a caller acts on.
const (
	EAGAIN     = Errno(C.GOSHMEMI_FI_EAGAIN)
	EAVAIL     = Errno(C.GOSHMEMI_FI_EAVAIL)
	ENODATA    = Errno(C.GOSHMEMI_FI_ENODATA)
	EOPNOTSUPP = Errno(C.GOSHMEMI_FI_EOPNOTSUPP)
)

func (e Errno) Error() string {
	return fmt.Sprintf("%s (fi_errno %d)", C.GoString(C.goshmemi_fab_strerror(C.int(e))), int(e))
}

func errno(rc C.ssize_t) error {
	if rc >= 0 {
		return nil
	}
	return Errno(-rc)
}

// Capability and attribute bits Attr reports (Ref: fi_getinfo(3)).
const (
	CapAtomic       = uint64(C.GOSHMEMI_FI_ATOMIC)
	OrderWAW        = uint64(C.GOSHMEMI_FI_ORDER_WAW)
	OrderRAW        = uint64(C.GOSHMEMI_FI_ORDER_RAW)
	OrderAtomicWAW  = uint64(C.GOSHMEMI_FI_ORDER_ATOMIC_WAW)
	OrderRMAWAW     = uint64(C.GOSHMEMI_FI_ORDER_RMA_WAW)
	MRLocal         = uint64(C.GOSHMEMI_FI_MR_LOCAL)
	MRVirtAddr      = uint64(C.GOSHMEMI_FI_MR_VIRT_ADDR)
	ProgressManual  = int(C.GOSHMEMI_FI_PROGRESS_MANUAL)
	FlagDelivery    = uint64(C.GOSHMEMI_FI_DELIVERY_COMPLETE)
	FlagInject      = uint64(C.GOSHMEMI_FI_INJECT)
	FlagFence       = uint64(C.GOSHMEMI_FI_FENCE)
	AccessRemote    = uint64(C.GOSHMEMI_FI_REMOTE_READ | C.GOSHMEMI_FI_REMOTE_WRITE)
	AccessLocal     = uint64(C.GOSHMEMI_FI_READ | C.GOSHMEMI_FI_WRITE)
	CapFence        = uint64(C.GOSHMEMI_FI_FENCE)
	AddrUnspecified = ^uint64(0)
)

// Datatypes and atomic ops (Ref: fi_atomic(3)).
const (
	Uint8  = int(C.GOSHMEMI_FI_UINT8)
	Uint16 = int(C.GOSHMEMI_FI_UINT16)
	Uint32 = int(C.GOSHMEMI_FI_UINT32)
	Uint64 = int(C.GOSHMEMI_FI_UINT64)

	OpSum   = int(C.GOSHMEMI_FI_SUM)
	OpBand  = int(C.GOSHMEMI_FI_BAND)
	OpBor   = int(C.GOSHMEMI_FI_BOR)
	OpBxor  = int(C.GOSHMEMI_FI_BXOR)
	OpRead  = int(C.GOSHMEMI_FI_ATOMIC_READ)
	OpWrite = int(C.GOSHMEMI_FI_ATOMIC_WRITE)
	OpCswap = int(C.GOSHMEMI_FI_CSWAP)
)

// Atomic call kinds.
const (
	KindAtomic  = 0 // fi_atomicmsg: no result
	KindFetch   = 1 // fi_fetch_atomicmsg
	KindCompare = 2 // fi_compare_atomicmsg
)

// Attr describes the opened provider.
type Attr struct {
	Provider, Fabric, Domain string
	Caps, MsgOrder           uint64
	MaxMsgSize, InjectSize   uint64
	MRMode, MRKeySize        uint64
	DataProgress             int
	Atomic                   bool
	// Source is the IP address the endpoint is bound to (Pick); invalid
	// for providers that address otherwise.
	Source netip.Addr
	// MaxOrderWAWSize is the largest write for which the provider keeps
	// write-after-write data order (ep_attr max_order_waw_size; Ref:
	// fi_endpoint(3)): with OrderWAW in MsgOrder, writes and atomic writes
	// up to this size are placed at the target in the order posted.
	MaxOrderWAWSize uint64
}

// Fence reports whether the endpoint honours FlagFence (FI_FENCE in caps).
func (a Attr) Fence() bool { return a.Caps&CapFence != 0 }

// MREndpoint reports whether registrations are bound to one endpoint
// (FI_MR_ENDPOINT), so a context endpoint cannot use the parent's.
func (a Attr) MREndpoint() bool { return a.MRMode&uint64(C.GOSHMEMI_FI_MR_ENDPOINT) != 0 }

// Endpoint is one opened RDM endpoint with its fabric, domain, address
// vector and completion queue.
type Endpoint struct {
	f    *C.goshmemi_fab
	Attr Attr
}

// Providers lists the providers fi_getinfo offers for RDM endpoints with RMA
// on this machine, comma-separated ("tcp;ofi_rxm, shm, sockets, ...").
func Providers() string {
	if err := Load(""); err != nil {
		return "none (" + err.Error() + ")"
	}
	var buf [1024]C.char
	if rc := C.goshmemi_fab_providers(&buf[0], C.size_t(len(buf))); rc != 0 {
		return "none (" + Errno(-rc).Error() + ")"
	}
	return C.GoString(&buf[0])
}

// Open opens an endpoint on provider prov ("tcp;ofi_rxm"; "" = libfabric's
// choice), asking for atomics first and settling for RMA without them. It
// binds the address Pick chooses with the zero Select.
func Open(prov string) (*Endpoint, error) { return open(prov, 0, Select{}, forEndpoint) }

// OpenSelect is Open binding the address Pick chooses under s (an
// interface, whether peers are on other nodes).
func OpenSelect(prov string, s Select) (*Endpoint, error) { return open(prov, 0, s, forOFI) }

// open is OpenSelect asking for extraCaps as well (FI_TRIGGER: OpenTriggered);
// who is what asked for libfabric, for the error when it cannot be loaded.
func open(prov string, extraCaps uint64, s Select, who string) (*Endpoint, error) {
	if err := Load(who); err != nil {
		return nil, err
	}
	cprov := C.CString(prov)
	defer C.free(unsafe.Pointer(cprov))
	var (
		f     *C.goshmemi_fab
		a     C.goshmemi_fab_attr
		where [64]C.char
		list  *C.struct_goshmemi_fi_info
	)
	// Atomics and FI_FENCE where the provider has them; each is optional
	// (fi_getinfo answers -FI_ENODATA when a capability is missing).
	var rc C.int
	for _, want := range []C.int{C.GOSHMEMI_WANT_ATOMIC | C.GOSHMEMI_WANT_FENCE, C.GOSHMEMI_WANT_ATOMIC, C.GOSHMEMI_WANT_FENCE, 0} {
		if rc = C.goshmemi_fab_getinfo(cprov, want, C.uint64_t(extraCaps), &list); rc != -C.GOSHMEMI_FI_ENODATA {
			break
		}
	}
	if rc != 0 {
		err := errors.Wrapf(Errno(-rc), "fabric: fi_getinfo for provider %q", prov)
		if rc == -C.GOSHMEMI_FI_ENODATA {
			err = errs.Mark(errors.WithHint(err,
				fmt.Sprintf("set GOSHMEM_OFI_PROVIDER to one of: %s", Providers())), ErrNoProvider)
		}
		return nil, err
	}
	defer C.goshmemi_fi_freeinfo(list)
	var (
		infos []*C.struct_goshmemi_fi_info
		cands []Candidate
	)
	for i := list; i != nil; i = i.next {
		infos = append(infos, i)
		cands = append(cands, candidate(i))
	}
	pick, err := Pick(cands, hostInterfaces(), s)
	if err != nil {
		return nil, errors.Wrapf(err, "fabric: provider %q", prov)
	}
	if rc = C.goshmemi_fab_open_info(infos[pick], &f, &a, &where[0], C.size_t(len(where))); rc != 0 {
		return nil, errors.Wrapf(Errno(-rc), "fabric: %s for provider %q", C.GoString(&where[0]), prov)
	}
	return &Endpoint{f: f, Attr: Attr{
		Source:       cands[pick].Addr,
		Provider:     C.GoString(&a.prov[0]),
		Fabric:       C.GoString(&a.fabric[0]),
		Domain:       C.GoString(&a.domain[0]),
		Caps:         uint64(a.caps),
		MsgOrder:     uint64(a.msg_order),
		MaxMsgSize:   uint64(a.max_msg_size),
		InjectSize:   uint64(a.inject_size),
		MRMode:       uint64(a.mr_mode),
		MRKeySize:    uint64(a.mr_key_size),
		DataProgress: int(a.data_progress),
		Atomic:       a.has_atomic != 0,

		MaxOrderWAWSize: uint64(a.max_order_waw_size),
	}}, nil
}

// candidate describes one fi_getinfo entry for Pick.
func candidate(i *C.struct_goshmemi_fi_info) Candidate {
	var c Candidate
	if i.domain_attr != nil && i.domain_attr.name != nil {
		c.Domain = C.GoString(i.domain_attr.name)
	}
	switch i.addr_format {
	case C.GOSHMEMI_FI_SOCKADDR, C.GOSHMEMI_FI_SOCKADDR_IN, C.GOSHMEMI_FI_SOCKADDR_IN6:
		if i.src_addr != nil && i.src_addrlen > 0 {
			c.Addr = sockaddrAddr(C.GoBytes(i.src_addr, C.int(i.src_addrlen)))
		}
	}
	return c
}

// hostInterfaces lists this host's network interfaces and their addresses
// (none where the OS will not say).
func hostInterfaces() []Interface {
	nifs, err := net.Interfaces()
	if err != nil {
		return nil
	}
	out := make([]Interface, 0, len(nifs))
	for _, n := range nifs {
		f := Interface{Name: n.Name}
		addrs, _ := n.Addrs()
		for _, a := range addrs {
			if ipn, ok := a.(*net.IPNet); ok {
				if ip, ok := netip.AddrFromSlice(ipn.IP); ok {
					f.Addrs = append(f.Addrs, ip.Unmap())
				}
			}
		}
		out = append(out, f)
	}
	return out
}

// Close releases the endpoint and everything opened with it (close MRs first).
func (e *Endpoint) Close() {
	if e.f != nil {
		C.goshmemi_fab_close(e.f)
		e.f = nil
	}
}

// Name returns the endpoint's address, to be exchanged with the peers.
func (e *Endpoint) Name() ([]byte, error) {
	var buf [256]byte
	n := C.size_t(len(buf))
	if rc := C.goshmemi_fab_getname(e.f, unsafe.Pointer(&buf[0]), &n); rc != 0 {
		return nil, errors.Wrap(Errno(-rc), "fabric: fi_getname")
	}
	return append([]byte(nil), buf[:n]...), nil
}

// InsertAddrs inserts count addresses of size bytes each (concatenated in
// addrs) into the address vector; with FI_AV_TABLE the i-th gets fi_addr i.
func (e *Endpoint) InsertAddrs(addrs []byte, count int) ([]uint64, error) {
	out := make([]C.goshmemi_fi_addr_t, count)
	caddrs := C.CBytes(addrs)
	defer C.free(caddrs)
	if rc := C.goshmemi_fab_av_insert(e.f, caddrs, C.size_t(count), &out[0]); rc != 0 {
		return nil, errors.Wrapf(Errno(-rc), "fabric: fi_av_insert of %d addresses", count)
	}
	res := make([]uint64, count)
	for i, a := range out {
		res[i] = uint64(a)
	}
	return res, nil
}

// MR is a registered memory region.
type MR struct {
	mr   *C.struct_goshmemi_fid_mr
	Desc unsafe.Pointer // local descriptor (C-owned)
	Key  uint64         // remote key
}

// Register registers [p, p+n) (C or mmap'd memory) with the given access
// bits and requested key (ignored under FI_MR_PROV_KEY).
func (e *Endpoint) Register(p unsafe.Pointer, n uint64, access, key uint64) (*MR, error) {
	m := &MR{}
	var desc unsafe.Pointer
	var rkey C.uint64_t
	if rc := C.goshmemi_fab_mr_reg(e.f, p, C.size_t(n), C.uint64_t(access), C.uint64_t(key), &m.mr, &desc, &rkey); rc != 0 {
		return nil, errors.Wrapf(Errno(-rc), "fabric: fi_mr_reg of %d bytes", n)
	}
	m.Desc, m.Key = desc, uint64(rkey)
	return m, nil
}

// Close deregisters the region.
func (m *MR) Close() error {
	if m == nil || m.mr == nil {
		return nil
	}
	rc := C.goshmemi_fab_mr_close(m.mr)
	m.mr = nil
	if rc != 0 {
		return errors.Wrap(Errno(-rc), "fabric: fi_close(mr)")
	}
	return nil
}

// Write posts an RMA write of n bytes at buf to dest's raddr (flags: e.g.
// FlagDelivery, FlagInject; FI_COMPLETION is always added). ctx is returned
// by the completion. buf must be C memory unless flags has FlagInject.
func (e *Endpoint) Write(buf unsafe.Pointer, n uint64, desc unsafe.Pointer, dest, raddr, key, ctx, flags uint64) error {
	return errno(C.goshmemi_fab_write(e.f, buf, C.size_t(n), desc, C.goshmemi_fi_addr_t(dest), C.uint64_t(raddr), C.uint64_t(key), C.uint64_t(ctx), C.uint64_t(flags)))
}

// Read posts an RMA read of n bytes from src's raddr into buf (C memory).
func (e *Endpoint) Read(buf unsafe.Pointer, n uint64, desc unsafe.Pointer, src, raddr, key, ctx uint64) error {
	return errno(C.goshmemi_fab_read(e.f, buf, C.size_t(n), desc, C.goshmemi_fi_addr_t(src), C.uint64_t(raddr), C.uint64_t(key), C.uint64_t(ctx)))
}

// Atomic posts an atomic of the given kind; operand, compare and result
// point into C memory (compare/result may be nil when kind does not use them).
func (e *Endpoint) Atomic(kind int, operand, compare, result, desc unsafe.Pointer, dt, op int, dest, raddr, key, ctx, flags uint64) error {
	return errno(C.goshmemi_fab_atomic(e.f, C.int(kind), operand, compare, result, desc, C.int(dt), C.int(op),
		C.goshmemi_fi_addr_t(dest), C.uint64_t(raddr), C.uint64_t(key), C.uint64_t(ctx), C.uint64_t(flags)))
}

// QueryAtomic reports whether the provider implements op on dt for kind.
func (e *Endpoint) QueryAtomic(kind, dt, op int) bool {
	return C.goshmemi_fab_query_atomic(e.f, C.int(kind), C.int(dt), C.int(op)) == 0
}

// CQRead reads up to len(ctxs) completions without blocking, returning their
// contexts; EAVAIL means an error entry waits (CQReadErr). It also drives
// the provider's progress (FI_PROGRESS_MANUAL).
func (e *Endpoint) CQRead(ctxs []uint64) (int, error) {
	rc := C.goshmemi_fab_cq_read(e.f, (*C.uint64_t)(unsafe.Pointer(&ctxs[0])), C.size_t(len(ctxs)))
	if rc < 0 {
		return 0, Errno(-rc)
	}
	return int(rc), nil
}

// CQSRead is CQRead that blocks up to timeoutMS for a completion (when the
// CQ has a wait object; otherwise it does not block).
func (e *Endpoint) CQSRead(ctxs []uint64, timeoutMS int) (int, error) {
	rc := C.goshmemi_fab_cq_sread(e.f, (*C.uint64_t)(unsafe.Pointer(&ctxs[0])), C.size_t(len(ctxs)), C.int(timeoutMS))
	if rc < 0 {
		return 0, Errno(-rc)
	}
	return int(rc), nil
}

// CQError is a completion-queue error entry.
type CQError struct {
	Ctx       uint64
	Err       Errno
	ProvErrno int
	Msg       string
}

func (c *CQError) Error() string {
	return fmt.Sprintf("fabric: completion error: %v (provider errno %d: %s)", c.Err, c.ProvErrno, strings.TrimSpace(c.Msg))
}

// CQReadErr reads one error entry; ok is false when none is waiting.
func (e *Endpoint) CQReadErr() (*CQError, bool) {
	var (
		ctx     C.uint64_t
		err, pe C.int
		msg     [256]C.char
	)
	if rc := C.goshmemi_fab_cq_readerr(e.f, &ctx, &err, &pe, &msg[0], C.size_t(len(msg))); rc != 0 {
		return nil, false
	}
	return &CQError{Ctx: uint64(ctx), Err: Errno(err), ProvErrno: int(pe), Msg: C.GoString(&msg[0])}, true
}

// Completion is one completion: the operation's context, and for an error
// entry its fi_errno, provider errno and text.
type Completion = C.goshmemi_comp

// Ctx is the completed operation's context.
func Ctx(c *Completion) uint64 { return uint64(c.ctx) }

// Failed returns the error of an error entry, or nil.
func Failed(c *Completion) *CQError {
	if c.err == 0 {
		return nil
	}
	return &CQError{Ctx: uint64(c.ctx), Err: Errno(c.err), ProvErrno: int(c.prov_errno), Msg: C.GoString(&c.msg[0])}
}

// Poll fills buf with completions: first those the progress thread reaped,
// then fresh ones read from the CQ (driving the provider's progress).
func (e *Endpoint) Poll(buf []Completion) int {
	return int(C.goshmemi_fab_poll(e.f, &buf[0], C.int(len(buf)), 0))
}

// PollClaim is Poll by a thread that polls in a loop waiting for data from
// the peers (a spinning wait): it claims the endpoint, so the progress
// thread stays off it (rather than being woken by every message the caller
// is about to read itself, and contending for the provider's lock) until
// Release, or for the linger time after the last PollClaim (SetLinger).
func (e *Endpoint) PollClaim(buf []Completion) int {
	return int(C.goshmemi_fab_poll(e.f, &buf[0], C.int(len(buf)), 1))
}

// Release ends a claim (PollClaim) and wakes the progress thread, which
// drives the endpoint again. It costs nothing without a claim.
func (e *Endpoint) Release() { C.goshmemi_fab_release(e.f) }

// Claimed reports whether a claim is held: PollClaim without Release
// since (a lapsed claim, past the linger time, still counts).
func (e *Endpoint) Claimed() bool { return C.goshmemi_fab_claimed(e.f) != 0 }

// StartProgress starts the progress thread: a C pthread that drives the
// provider (blocking in fi_cq_sread where the CQ has a wait object) so RMA
// aimed at this process lands while Go code computes. It is a C thread so
// that it never needs a Go P: with GOMAXPROCS=1 and a goroutine spinning
// in a wait, a Go progress goroutine would stall until preemption.
func (e *Endpoint) StartProgress() error {
	if rc := C.goshmemi_fab_start_progress(e.f); rc != 0 {
		return errors.Newf("fabric: pthread_create: errno %d", -rc)
	}
	return nil
}

// SetLinger sets the longest a claim (PollClaim) keeps the progress thread
// off the endpoint after its last claiming poll, should Release not come
// (the claiming thread preempted); default 1 ms, at most 1 s; 0 ignores
// claims.
func (e *Endpoint) SetLinger(d time.Duration) {
	if d < 0 {
		d = 0
	}
	C.goshmemi_fab_set_linger(e.f, C.uint64_t(d))
}

// ProgressStats returns the progress thread's rounds spent staying off the
// endpoint (a claim held), its rounds driving the provider, and how many
// claims took it out of a blocking read.
func (e *Endpoint) ProgressStats() (defers, rounds, kicks uint64) {
	var d, r, k C.uint64_t
	C.goshmemi_fab_progress_stats(e.f, &d, &r, &k)
	return uint64(d), uint64(r), uint64(k)
}

// StopProgress stops and joins the progress thread (Close does it too).
func (e *Endpoint) StopProgress() {
	if e.f != nil {
		C.goshmemi_fab_stop_progress(e.f)
	}
}

// OpenCtx opens a context endpoint: a second endpoint with its own
// completion queue in e's domain, bound to e's address vector (so it
// reaches every peer that e reaches, by the same fi_addr, without an
// address exchange: peers' RMA still targets their primary endpoints).
// e's progress thread polls its queue too. Close it before e. It may use
// e's memory registrations unless Attr.MREndpoint().
func (e *Endpoint) OpenCtx() (*Endpoint, error) {
	var (
		f     *C.goshmemi_fab
		where [64]C.char
	)
	if rc := C.goshmemi_fab_ctx_open(e.f, &f, &where[0], C.size_t(len(where))); rc != 0 {
		return nil, errors.Wrapf(Errno(-rc), "fabric: %s", C.GoString(&where[0]))
	}
	return &Endpoint{f: f, Attr: e.Attr}, nil
}

// AddrString prints an endpoint address as the provider writes it
// ("fi_sockaddr_in://10.0.0.1:4242"), for error messages.
func (e *Endpoint) AddrString(addr []byte) string {
	if len(addr) == 0 {
		return ""
	}
	var buf [128]C.char
	caddr := C.CBytes(addr)
	defer C.free(caddr)
	C.goshmemi_fab_straddr(e.f, caddr, &buf[0], C.size_t(len(buf)))
	return C.GoString(&buf[0])
}
