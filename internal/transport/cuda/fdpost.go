package cudatr

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/errs"
)

// The node's PEs pass the file descriptors of their GPU heap chunks to
// each other as SCM_RIGHTS messages over Unix datagram sockets, as NCCL
// and NVSHMEM do for CUDA VMM handles. Sending a descriptor needs no
// ptrace access to the peer, so it works under Yama's ptrace_scope 1
// (Ubuntu's default: only a process's descendants may be attached, and a
// job's PEs are siblings) and under container seccomp profiles that refuse
// pidfd_getfd(2) and process_vm_readv(2).
//
// Each PE binds a socket in the abstract namespace (no file, gone with the
// process) under a name made of its pid and a random nonce, which its
// Setup record carries. A chunk's owner sends one message to every node
// peer: a header (the sender's PE, a sequence number that grows with each
// message it sends, the preparation's generation, the chunk's offset and
// size, and whether it was prepared) and the descriptor. A background
// goroutine keeps draining the socket into per-sender queues, so a sender
// never waits for a receiver to reach the call that consumes its message
// (the kernel queues at most net.unix.max_dgram_qlen datagrams, 10 by
// default, and a growth has every node peer send before any takes). The
// kernel attaches the sender's credentials: a message from another user
// is dropped, and one whose pid is not the PE's it names is refused when
// taken. A PE sends to each peer over a socket of its own, connected to
// the peer's at the first send: once the peer's socket closes, sends fail
// rather than reach a socket bound to the same name later (by another
// user, who can read the name in /proc/net/unix). Taking a message closes
// that sender's earlier messages still queued here (a growth that failed
// elsewhere, a preparation dropped before this PE took it): a sender's
// messages are taken in the order it sent them.

// postHdr is the length of a message's header: magic, sender PE,
// sequence number, generation, chunk offset, chunk size, status.
const postHdr = 48

const postMagic = 0x66687367 // "gshf"

// Message statuses.
const (
	postChunk  = 1 // a chunk, with its descriptor (size 0: nothing to add, no descriptor)
	postFailed = 2 // this generation's preparation failed here: no chunk
)

// postSendWait bounds a send to a peer whose socket queue is full (its
// draining goroutine is not running: the process is stopped).
const postSendWait = 10 * time.Second

// postMsg is one message received (fd -1: none; lost: the kernel
// dropped its descriptor, MSG_CTRUNC, as when the descriptor table is full).
type postMsg struct {
	pid                       int
	seq, gen, off, size, stat uint64
	fd                        int
	lost                      bool
}

// post is a PE's socket and the messages received from each PE.
type post struct {
	fd     int           // the socket, non-blocking, bound to its name
	conn   *net.UnixConn // a duplicate of fd, for the draining goroutine's waits
	nonce  uint64
	me     int
	mu     sync.Mutex
	got    map[int][]postMsg // per sending PE, in arrival order
	seq    uint64            // the last sequence number given out
	wake   chan struct{}     // closed (and replaced) when got grows or the post closes
	to     map[string]int    // per peer's socket name, a socket connected to it
	closed bool
	done   chan struct{} // the draining goroutine returned
}

// postName is the abstract address of the socket of process pid with
// nonce.
func postName(pid int, nonce uint64) string {
	return fmt.Sprintf("@goshmem-gpu-heap-%d-%016x", pid, nonce)
}

// newPost binds this PE's socket and starts draining it.
func newPost(me int) (*post, error) {
	var nb [8]byte
	if _, err := rand.Read(nb[:]); err != nil {
		return nil, errors.Wrap(err, "nonce for the GPU heap's descriptor socket")
	}
	p := &post{fd: -1, nonce: binary.LittleEndian.Uint64(nb[:]) | 1, me: me, got: map[int][]postMsg{}, to: map[string]int{},
		wake: make(chan struct{}), done: make(chan struct{})}
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return nil, errors.Wrap(err, "socket(AF_UNIX, SOCK_DGRAM) for the GPU heap's descriptors")
	}
	name := postName(os.Getpid(), p.nonce)
	if err = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_PASSCRED, 1); err == nil {
		err = unix.Bind(fd, &unix.SockaddrUnix{Name: name})
	}
	if err != nil {
		_ = unix.Close(fd)
		return nil, errors.Wrapf(err, "binding the GPU heap's descriptor socket %s", name)
	}
	// the poller gets a duplicate (for drainLoop's waits); takers read fd
	p.fd = fd
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		_ = unix.Close(fd)
		return nil, errors.Wrap(err, "dup of the GPU heap's descriptor socket")
	}
	f := os.NewFile(uintptr(dup), name)
	c, err := net.FileConn(f)
	_ = f.Close()
	if err == nil {
		var ok bool
		if p.conn, ok = c.(*net.UnixConn); !ok {
			_ = c.Close()
			err = errors.Newf("%T, not a Unix socket", c)
		}
	}
	if err != nil {
		_ = unix.Close(fd)
		return nil, errors.Wrapf(err, "polling the GPU heap's descriptor socket %s", name)
	}
	go p.drainLoop()
	return p, nil
}

// drainLoop moves every message that arrives into p.got until the post
// closes.
func (p *post) drainLoop() {
	defer close(p.done)
	rc, err := p.conn.SyscallConn()
	if err != nil {
		return
	}
	_ = rc.Read(func(uintptr) bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.closed {
			return true
		}
		p.drain()
		return false // wait until the socket is readable again
	})
}

// drain receives every queued message into p.got; the caller holds p.mu.
// Because takers drain too before they look, a message that was sent
// before a taker's drain is found by it.
func (p *post) drain() {
	var hdr [postHdr + 1]byte
	oob := make([]byte, unix.CmsgSpace(4)+unix.CmsgSpace(unix.SizeofUcred))
	uid := uint32(os.Getuid())
	added := false
	for {
		n, oobn, flags, _, err := unix.Recvmsg(p.fd, hdr[:], oob, unix.MSG_DONTWAIT|unix.MSG_CMSG_CLOEXEC)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			break
		}
		var fds []int
		var cred *unix.Ucred
		if cms, err := unix.ParseSocketControlMessage(oob[:oobn]); err == nil {
			for i := range cms {
				if r, err := unix.ParseUnixRights(&cms[i]); err == nil {
					fds = append(fds, r...)
				} else if c, err := unix.ParseUnixCredentials(&cms[i]); err == nil {
					cred = c
				}
			}
		}
		le := binary.LittleEndian
		ok := n == postHdr && flags&unix.MSG_TRUNC == 0 && cred != nil && cred.Uid == uid && le.Uint32(hdr[0:]) == postMagic
		// a message whose descriptor was dropped is kept without it, so
		// that its taker fails at once rather than wait for it
		lost := flags&unix.MSG_CTRUNC != 0 || len(fds) > 1
		if !ok || lost {
			for _, fd := range fds {
				_ = unix.Close(fd)
			}
		}
		if !ok {
			continue
		}
		m := postMsg{pid: int(cred.Pid), seq: le.Uint64(hdr[8:]), gen: le.Uint64(hdr[16:]), off: le.Uint64(hdr[24:]),
			size: le.Uint64(hdr[32:]), stat: le.Uint64(hdr[40:]), fd: -1, lost: lost}
		if len(fds) == 1 && !lost {
			m.fd = fds[0]
		}
		from := int(le.Uint32(hdr[4:]))
		p.got[from] = append(p.got[from], m)
		added = true
	}
	if added {
		close(p.wake)
		p.wake = make(chan struct{})
	}
}

// nextSeq numbers a chunk's messages (the same number to every peer).
func (p *post) nextSeq() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.seq++
	return p.seq
}

// changed is closed once a message arrives after the call.
func (p *post) changed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.wake
}

// connTo returns the socket connected to the socket named name,
// connecting one at the first call (EBADF: the post is closed).
func (p *post) connTo(name string) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return -1, unix.EBADF
	}
	if s, ok := p.to[name]; ok {
		return s, nil
	}
	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return -1, err
	}
	if err := unix.Connect(s, &unix.SockaddrUnix{Name: name}); err != nil {
		_ = unix.Close(s)
		return -1, err
	}
	p.to[name] = s
	return s, nil
}

// send sends m, numbered by nextSeq, and its descriptor fd (when >= 0)
// to PE pe's socket (process pid, nonce).
func (p *post) send(pe, pid int, nonce uint64, m postMsg, fd int) error {
	var hdr [postHdr]byte
	le := binary.LittleEndian
	le.PutUint32(hdr[0:], postMagic)
	le.PutUint32(hdr[4:], uint32(p.me))
	le.PutUint64(hdr[8:], m.seq)
	le.PutUint64(hdr[16:], m.gen)
	le.PutUint64(hdr[24:], m.off)
	le.PutUint64(hdr[32:], m.size)
	le.PutUint64(hdr[40:], m.stat)
	var oob []byte
	if fd >= 0 {
		oob = unix.UnixRights(fd)
	}
	name := postName(pid, nonce)
	deadline := time.Now().Add(postSendWait)
	nap := 20 * time.Microsecond
	for {
		s, err := p.connTo(name)
		if err == nil {
			err = unix.Sendmsg(s, hdr[:], oob, nil, 0)
		}
		switch {
		case err == nil:
			return nil
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN && time.Now().Before(deadline):
			time.Sleep(nap)
			nap = min(2*nap, time.Millisecond)
			continue
		case err == unix.EBADF:
			return errs.New(errs.ErrFinalized, p.me, "GPU heap", "the descriptor socket is closed (sending to PE %d)", pe)
		case err == unix.EAGAIN:
			return errs.New(errs.ErrTimeout, p.me, "GPU heap", "PE %d (pid %d) took no descriptor for %v: its socket's queue is full (is the process stopped?)",
				pe, pid, postSendWait)
		case err == unix.ECONNREFUSED || err == unix.ENOENT || err == unix.ENOTCONN:
			return errs.Hint(errs.ErrNotSupported, "run the node's PEs in one network namespace (the GPU heap's descriptors travel over abstract Unix sockets)",
				p.me, "GPU heap", "PE %d (pid %d) has no descriptor socket %s here: its process has exited, or it is in another network namespace", pe, pid, name)
		default:
			return errs.Wrap(errs.Mark(err, errs.ErrNotSupported), p.me, "GPU heap", "sending a GPU heap chunk's descriptor to PE %d (pid %d)", pe, pid)
		}
	}
}

// take returns the first message from PE pe (process pid) that match
// accepts, and closes pe's messages before it. With wait 0 it reports
// found false when no such message has arrived (after draining the
// socket); else it waits up to wait for one (ErrTimeout), less when pe's
// process is gone (checked every 100 ms).
func (p *post) take(pe, pid int, match func(*postMsg) bool, wait time.Duration) (postMsg, bool, error) {
	var tick *time.Ticker
	var deadline time.Time
	for {
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			return postMsg{}, false, errs.New(errs.ErrFinalized, p.me, "GPU heap", "the descriptor socket is closed")
		}
		p.drain()
		q := p.got[pe]
		for i := range q {
			if !match(&q[i]) {
				continue
			}
			m := q[i]
			for _, old := range q[:i] {
				closeFD(old.fd)
			}
			p.got[pe] = append(q[:0:0], q[i+1:]...)
			p.mu.Unlock()
			if m.pid != pid {
				closeFD(m.fd)
				return postMsg{}, false, errs.New(errs.ErrInvalidArgument, p.me, "GPU heap",
					"a descriptor message naming PE %d came from pid %d, not PE %d's pid %d", pe, m.pid, pe, pid)
			}
			return m, true, nil
		}
		wake := p.wake
		p.mu.Unlock()
		if wait <= 0 {
			return postMsg{}, false, nil
		}
		if tick == nil {
			tick = time.NewTicker(100 * time.Millisecond)
			defer tick.Stop()
			deadline = time.Now().Add(wait)
		}
		select {
		case <-wake:
		case <-tick.C:
			if gone(pid) {
				return postMsg{}, false, errs.New(errs.ErrTimeout, p.me, "GPU heap",
					"PE %d (pid %d) exited before it sent its GPU heap chunk's descriptor", pe, pid)
			}
			if time.Now().After(deadline) {
				return postMsg{}, false, errs.New(errs.ErrTimeout, p.me, "GPU heap",
					"PE %d (pid %d) sent no GPU heap chunk descriptor within %v", pe, pid, wait)
			}
		}
	}
}

// gone reports whether process pid (not this one) has exited.
func gone(pid int) bool { return pid != os.Getpid() && unix.Kill(pid, 0) == unix.ESRCH }

func closeFD(fd int) {
	if fd >= 0 {
		_ = unix.Close(fd)
	}
}

// close stops the draining goroutine, closes the socket and every
// descriptor received and not taken.
func (p *post) close() error {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	close(p.wake)
	p.mu.Unlock()
	err := p.conn.Close() // wakes drainLoop
	<-p.done
	for _, q := range p.got {
		for _, m := range q {
			closeFD(m.fd)
		}
	}
	p.got = nil
	for _, s := range p.to {
		_ = unix.Close(s)
	}
	p.to = nil
	if cerr := unix.Close(p.fd); err == nil {
		err = cerr
	}
	return err
}
