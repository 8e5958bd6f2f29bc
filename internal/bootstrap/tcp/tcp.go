// Package tcpboot is a bootstrap.Bootstrap over plain TCP, for jobs that
// no MPI launcher starts: a shell loop, torchrun, Slurm's srun, Kubernetes.
// Each process knows its rank and the job size (FromEnv reads them from
// GOSHMEM_RANK/GOSHMEM_NPES, torchrun's or Slurm's variables) and one
// rendezvous address; one process serves the rendezvous there (PE 0 in the
// environment-driven form, the process that called NewUniqueID in the
// embedded form), and every PE, that one included, connects to it.
//
// The server admits a connection only after it proves knowledge of the
// job's secret (an HMAC-SHA256 challenge; the secret never crosses the
// wire), and proves its own knowledge back; it refuses and reports on
// stderr any other connection without disturbing the job. Bad input (two
// PEs with one rank, a rank outside [0, size), PEs that disagree on the
// size, a PE that dies or never comes) fails Init on every PE within the
// bootstrap timeout, naming the PE.
//
// Collectives go through the server: every PE sends its part, the server
// answers every PE (a star; the bootstrap carries only setup data, never
// the data path). A PE whose connection closes fails the next collective
// of every other PE, naming it.
package tcpboot

import (
	"crypto/hmac"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"runtime"
	"sync"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/logx"
)

// DefaultTimeout bounds the rendezvous when Config.Timeout is 0
// (GOSHMEM_BOOTSTRAP_TIMEOUT's default).
const DefaultTimeout = 60 * time.Second

// Timing of a PE. The PE waits reportGrace past its own deadline for the
// server's verdict (which names the missing PEs); abortWait bounds how long
// Abort waits for the server to tell the other PEs; byeWait bounds
// Finalize's wait for the server to close the connection.
const (
	reportGrace = 2 * time.Second
	abortWait   = 2 * time.Second
	byeWait     = 5 * time.Second
)

// Config is one PE's view of the job.
type Config struct {
	Rank, Size int
	// Addr is the rendezvous, host:port.
	Addr string
	// Key is the job's secret (GOSHMEM_BOOTSTRAP_TOKEN, or the unique
	// ID's); empty authenticates nothing.
	Key []byte
	// Serve makes this PE open the rendezvous at Addr (PE 0 of an
	// environment-driven job).
	Serve bool
	// Timeout bounds the rendezvous (0: DefaultTimeout).
	Timeout time.Duration
	// Why and Source say, for GOSHMEM_INFO, why this bootstrap runs and
	// where rank, size and address came from.
	Why, Source string
	// LocalRank and LocalSize are what the launcher said about this
	// node (LOCAL_RANK, LOCAL_WORLD_SIZE), -1 when it did not.
	LocalRank, LocalSize int
	// NodeKey overrides this process's node identity (tests emulating
	// several nodes in one process); "" uses NodeKey().
	NodeKey string
	// Stderr receives abort and refusal messages (os.Stderr when nil).
	Stderr io.Writer
	// Exit ends the process on an abort (os.Exit when nil; tests).
	Exit func(code int)
}

// boot is one PE's tcp bootstrap.
type boot struct {
	cfg   Config
	rank  int
	size  int
	nodes []int
	srv   *server      // the rendezvous, when this PE serves it
	log   *logx.Switch // abort messages: cfg.Stderr, or SetLogger's
	conn  net.Conn

	wmu sync.Mutex // frame writes
	cmu sync.Mutex // collectives and Finalize
	seq uint64
	fin bool

	results  chan []byte   // the reader's collective results
	abortAck chan struct{} // the server told every PE of our abort
	dead     chan struct{} // closed when the reader has ended
	readErr  error         // why, set before dead is closed
}

var (
	_ bootstrap.Bootstrap = (*boot)(nil)
	_ bootstrap.Logged    = (*boot)(nil)
)

// New joins the job: it opens the rendezvous when cfg.Serve, connects to
// cfg.Addr (retrying until cfg.Timeout), authenticates both ways, and
// waits until every PE has joined. It fails on every PE alike when the
// PEs' ranks or sizes are wrong, when a PE never joins or dies meanwhile,
// and when the rendezvous cannot be reached, all within cfg.Timeout.
func New(cfg Config) (bootstrap.Bootstrap, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.Stderr == nil {
		cfg.Stderr = os.Stderr
	}
	if cfg.Exit == nil {
		cfg.Exit = os.Exit
	}
	if cfg.NodeKey == "" {
		cfg.NodeKey = NodeKey()
	}
	b := &boot{cfg: cfg, rank: cfg.Rank, size: cfg.Size, log: logx.NewSwitch(cfg.Stderr),
		results: make(chan []byte, 1), abortAck: make(chan struct{}, 1), dead: make(chan struct{})}
	deadline := time.Now().Add(cfg.Timeout)
	if cfg.Serve {
		srv, err := listen(cfg.Addr, cfg.Key, cfg.Stderr)
		if err != nil {
			return nil, errs.Hint(errs.ErrInvalidArgument,
				"GOSHMEM_BOOTSTRAP_ADDR (or MASTER_ADDR:MASTER_PORT) must be a free port on an address of PE 0's machine; under torchrun, whose agent holds MASTER_PORT, give goshmem a port of its own in GOSHMEM_BOOTSTRAP_ADDR",
				cfg.Rank, "bootstrap tcp", "PE 0 cannot listen at %s: %v", cfg.Addr, err)
		}
		b.srv = srv
	} else if s := hosted(cfg.Addr, cfg.Key); s != nil {
		b.srv = s
	}
	if err := b.join(deadline); err != nil {
		if b.conn != nil {
			_ = b.conn.Close()
		}
		if cfg.Serve {
			// Stay a moment so that PEs connecting late learn why.
			select {
			case <-b.srv.done:
			case <-time.After(failGrace):
			}
			b.srv.closeListener()
		}
		return nil, err
	}
	go b.read()
	return b, nil
}

// join connects and authenticates, then waits for the node table.
func (b *boot) join(deadline time.Time) error {
	cfg := b.cfg
	op := "bootstrap tcp"
	var lastErr error
	delay := 5 * time.Millisecond
	for {
		conn, err := b.handshake(deadline)
		if err == nil {
			b.conn = conn
			break
		}
		var fatal *fatalError
		if errors.As(err, &fatal) {
			return fatal.err
		}
		lastErr = err
		if time.Now().Add(delay).After(deadline) {
			return errs.Hint(errs.ErrTimeout,
				"check that PE 0 (or the process that made the unique ID) runs and that GOSHMEM_BOOTSTRAP_ADDR / MASTER_ADDR:MASTER_PORT names its address; raise GOSHMEM_BOOTSTRAP_TIMEOUT if PEs start far apart",
				cfg.Rank, op, "could not reach the rendezvous at %s within %v: %v", cfg.Addr, cfg.Timeout, lastErr)
		}
		time.Sleep(delay)
		delay = min(2*delay, 250*time.Millisecond)
	}
	_ = b.conn.SetDeadline(deadline.Add(reportGrace))
	typ, p, err := readFrame(b.conn, maxFrame)
	if err != nil {
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return errs.New(errs.ErrTimeout, cfg.Rank, op, "the rendezvous at %s did not complete within %v (waiting for the other PEs)", cfg.Addr, cfg.Timeout)
		}
		return errs.New(nil, cfg.Rank, op, "the rendezvous at %s closed the connection before every PE joined (%v): its process ended?", cfg.Addr, err)
	}
	switch typ {
	case frameError:
		return serverError(cfg.Rank, op, p)
	case frameRoster:
	default:
		return errs.New(nil, cfg.Rank, op, "the rendezvous at %s sent frame type %d instead of the node table", cfg.Addr, typ)
	}
	d := dec{b: p}
	nodes := make([]int, b.size)
	for r := range nodes {
		nodes[r] = int(d.u32())
	}
	if err := d.err("node table"); err != nil {
		return errs.Wrap(err, cfg.Rank, op, "from %s", cfg.Addr)
	}
	b.nodes = nodes
	_ = b.conn.SetDeadline(time.Time{})
	return nil
}

// serverError turns a frameError payload into this PE's error.
func serverError(rank int, op string, p []byte) error {
	if len(p) == 0 {
		return errs.New(nil, rank, op, "the job failed (no reason given)")
	}
	msg := string(p[1:])
	switch p[0] {
	case failInvalid:
		return errs.New(errs.ErrInvalidArgument, rank, op, "%s", msg)
	case failTimeout:
		return errs.Hint(errs.ErrTimeout, "start every PE, or raise GOSHMEM_BOOTSTRAP_TIMEOUT", rank, op, "%s", msg)
	}
	return errs.New(nil, rank, op, "%s", msg)
}

// fatalError is a handshake failure not worth retrying.
type fatalError struct{ err error }

func (f *fatalError) Error() string { return f.err.Error() }

// handshake makes one connection and authenticates it both ways.
func (b *boot) handshake(deadline time.Time) (net.Conn, error) {
	cfg := b.cfg
	op := "bootstrap tcp"
	d := net.Dialer{Deadline: deadline}
	conn, err := d.Dial("tcp", cfg.Addr)
	if err != nil {
		return nil, err
	}
	fail := func(err error) (net.Conn, error) {
		_ = conn.Close()
		return nil, err
	}
	hd := time.Now().Add(handshakeTimeout)
	if deadline.Before(hd) {
		hd = deadline
	}
	_ = conn.SetDeadline(hd)
	greet := make([]byte, greetingLen)
	if _, err := io.ReadFull(conn, greet); err != nil {
		return fail(errors.Wrapf(err, "reading the greeting from %s", cfg.Addr))
	}
	if string(greet[:len(magic)]) != magic {
		return fail(&fatalError{errs.New(errs.ErrInvalidArgument, cfg.Rank, op,
			"the process at %s is not goshmem's bootstrap (it greeted with %q)", cfg.Addr, printable(greet[:len(magic)]))})
	}
	nonceS := greet[len(magic):]
	nonceC, err := newNonce()
	if err != nil {
		return fail(&fatalError{err})
	}
	rank, size := int32(cfg.Rank), int32(cfg.Size)
	hello := append([]byte(magic), nonceC...)
	hello = enc(hello).u32(uint32(rank)).u32(uint32(size))
	hello = append(hello, proof(cfg.Key, "goshmem tcp bootstrap client", nonceS, nonceC, rank, size)...)
	if _, err := conn.Write(hello); err != nil {
		return fail(err)
	}
	typ, p, err := readFrame(conn, maxJoinFrame)
	if err != nil {
		return fail(errors.Wrapf(err, "reading the handshake answer from %s", cfg.Addr))
	}
	switch typ {
	case frameRefused:
		return fail(&fatalError{errs.Hint(errs.ErrInvalidArgument,
			"every PE must have the same GOSHMEM_BOOTSTRAP_TOKEN (or the same unique ID)",
			cfg.Rank, op, "the rendezvous at %s refused this PE: %s", cfg.Addr, printable(p))})
	case frameAccepted:
		if !hmac.Equal(p, proof(cfg.Key, "goshmem tcp bootstrap server", nonceC, nonceS, rank, size)) {
			return fail(&fatalError{errs.Hint(errs.ErrInvalidArgument,
				"every PE must have the same GOSHMEM_BOOTSTRAP_TOKEN (or the same unique ID); another job may be using this address",
				cfg.Rank, op, "the process at %s is not this job's rendezvous: its proof of the job's secret is wrong", cfg.Addr)})
		}
	default:
		return fail(&fatalError{errs.New(errs.ErrInvalidArgument, cfg.Rank, op,
			"the process at %s answered the handshake with frame type %d", cfg.Addr, typ)})
	}
	host, _ := os.Hostname()
	j := joinInfo{timeoutMs: uint64(max(time.Until(deadline), 0) / time.Millisecond), pid: uint32(os.Getpid()), host: host, nodeKey: cfg.NodeKey}
	if len(j.encode()) > maxJoinFrame {
		j.nodeKey = j.nodeKey[:maxJoinFrame/2]
		j.host = ""
	}
	if err := writeFrame(conn, frameJoin, j.encode()); err != nil {
		return fail(err)
	}
	return conn, nil
}

// read is the PE's one reader: collective results to the waiting
// collective, aborts of other PEs end this process.
func (b *boot) read() {
	var err error
	for {
		var typ byte
		var p []byte
		typ, p, err = readFrame(b.conn, maxFrame)
		if err != nil {
			break
		}
		switch typ {
		case frameResult:
			select {
			case b.results <- p:
				continue
			default:
				err = errors.New("a collective result arrived that no collective waits for")
			}
		case frameAbortAck:
			select {
			case b.abortAck <- struct{}{}:
			default:
			}
			continue
		case frameAbort:
			a, derr := decodeAbort(p)
			if derr != nil {
				a = abortMsg{code: 1, msg: derr.Error()}
			}
			b.say(fmt.Sprintf("the job was aborted by PE %d (exit status %d): %s", a.rank, a.code, a.msg), slog.Int("code", int(a.code)))
			b.cfg.Exit(int(a.code))
			err = errors.Newf("the job was aborted by PE %d", a.rank)
		case frameError:
			err = serverError(b.rank, "bootstrap tcp", p)
		default:
			err = errors.Newf("unexpected frame type %d from the rendezvous", typ)
		}
		break
	}
	b.readErr = err
	close(b.dead)
}

// Name returns "tcp".
func (b *boot) Name() string { return "tcp" }

// Rank returns this PE's rank.
func (b *boot) Rank() int { return b.rank }

// Size returns the number of PEs.
func (b *boot) Size() int { return b.size }

// Node returns a copy of the node of every rank: ranks whose processes
// share a host, its boot and its mount and PID namespaces (NodeKey) have
// one number, in order of first appearance.
func (b *boot) Node() []int { return append([]int(nil), b.nodes...) }

// collective sends this PE's part and waits for the server's answer.
func (b *boot) collective(op byte, root int, n int, data []byte) ([]byte, error) {
	name := opName(op)
	b.cmu.Lock()
	defer b.cmu.Unlock()
	if b.fin {
		return nil, errs.New(errs.ErrInvalidArgument, b.rank, "bootstrap tcp", "%s after Finalize", name)
	}
	b.seq++
	c := coll{seq: b.seq, op: op, root: int32(root), n: uint64(n), data: data}
	if err := b.write(frameColl, c.encode()); err != nil {
		return nil, b.connErr(name, err)
	}
	var p []byte
	select {
	case p = <-b.results:
	case <-b.dead:
		select {
		case p = <-b.results:
		default:
			return nil, b.connErr(name, b.readErr)
		}
	}
	r, err := decodeResult(p)
	if err != nil {
		return nil, errs.Wrap(err, b.rank, "bootstrap tcp", "%s", name)
	}
	if r.seq != b.seq {
		return nil, errs.New(nil, b.rank, "bootstrap tcp", "%s: the result of collective #%d arrived for #%d", name, r.seq, b.seq)
	}
	if !r.ok {
		return nil, errs.New(nil, b.rank, "bootstrap tcp", "%s: %s", name, r.data)
	}
	return r.data, nil
}

func (b *boot) connErr(op string, err error) error {
	who := "PE 0"
	if b.cfg.Source == "unique ID" {
		who = "the process that made the unique ID"
	}
	return errs.Hint(nil, who+" serves the bootstrap: it must run until every PE has finalized",
		b.rank, "bootstrap tcp", "%s: the connection to the rendezvous at %s (served by %s) ended: %v: %s has ended or failed",
		op, b.cfg.Addr, who, err, who)
}

func (b *boot) write(typ byte, p []byte) error {
	b.wmu.Lock()
	defer b.wmu.Unlock()
	return writeFrame(b.conn, typ, p)
}

// Allgather returns every rank's in, concatenated in rank order; lengths
// that differ between PEs are an error on every PE.
func (b *boot) Allgather(in []byte) ([]byte, error) {
	out, err := b.collective(opAllgather, 0, len(in), in)
	if err != nil {
		return nil, err
	}
	if len(out) != len(in)*b.size {
		return nil, errs.New(nil, b.rank, "bootstrap tcp", "Allgather: %d bytes back for %d x %d", len(out), b.size, len(in))
	}
	return out, nil
}

// Barrier returns once every PE has entered it.
func (b *boot) Barrier() error {
	_, err := b.collective(opBarrier, 0, 0, nil)
	return err
}

// Bcast overwrites buf on every PE with root's buf. Lengths and roots
// that differ, or a root outside [0, Size()), are an error on every PE.
func (b *boot) Bcast(buf []byte, root int) error {
	var data []byte
	if root == b.rank {
		data = buf
	}
	out, err := b.collective(opBcast, root, len(buf), data)
	if err != nil {
		return err
	}
	copy(buf, out)
	return nil
}

// SetLogger sends this PE's abort messages, and the refusals of the
// rendezvous it serves, to l instead of cfg.Stderr. A rendezvous of
// NewUniqueID (made before Init) keeps its stderr.
func (b *boot) SetLogger(l *slog.Logger) {
	b.log.Set(l)
	if b.cfg.Serve && b.srv != nil {
		b.srv.log.Set(l)
	}
}

// say is one of this PE's abort messages, as the line "goshmem: PE
// <rank>: <msg>".
func (b *boot) say(msg string, attrs ...slog.Attr) {
	attrs = append(attrs, logx.PE(b.rank), slog.String("backend", "bootstrap"))
	b.log.Log(slog.LevelError, fmt.Sprintf("goshmem: PE %d: %s\n", b.rank, msg), msg, attrs...)
}

// Abort prints "goshmem: PE <rank>: <msg>", has the server tell every
// other PE (each prints who aborted and exits with code), waits up to
// abortWait for that, and exits with code. It does not return.
func (b *boot) Abort(code int, msg string) {
	b.say(msg, slog.Int("code", code))
	if err := b.write(frameAbort, abortMsg{code: int32(code), msg: msg}.encode()); err == nil {
		select {
		case <-b.abortAck:
		case <-b.dead:
		case <-time.After(abortWait):
			b.say(fmt.Sprintf("the rendezvous did not confirm the abort within %v", abortWait))
		}
	}
	b.cfg.Exit(code)
	runtime.Goexit() // only reached when Exit returns (tests)
}

// Finalize leaves the job: it tells the server and closes the connection.
// The PE that serves the rendezvous then waits (up to the bootstrap
// timeout) until every other PE has left, so that its exit cannot cut
// them off. Every later call fails.
func (b *boot) Finalize() error {
	b.cmu.Lock()
	defer b.cmu.Unlock()
	if b.fin {
		return errs.New(errs.ErrInvalidArgument, b.rank, "bootstrap tcp", "Finalize after Finalize")
	}
	b.fin = true
	if err := b.write(frameBye, nil); err == nil {
		select {
		case <-b.dead:
		case <-time.After(byeWait):
		}
	}
	_ = b.conn.Close()
	if b.srv == nil {
		return nil
	}
	select {
	case <-b.srv.done:
		return nil
	case <-time.After(b.cfg.Timeout):
		b.srv.closeListener()
		return errs.New(errs.ErrTimeout, b.rank, "bootstrap tcp",
			"PEs %v had not finalized %v after this PE, which serves the bootstrap", b.srv.pendingPEs(), b.cfg.Timeout)
	}
}

// Info describes the bootstrap for GOSHMEM_INFO.
func (b *boot) Info() []string {
	lines := []string{}
	if b.cfg.Why != "" {
		lines = append(lines, "bootstrap tcp: "+b.cfg.Why)
	}
	where := "served by PE 0"
	if b.srv != nil {
		where = "served by this process"
	} else if !b.cfg.Serve && b.cfg.Source == "unique ID" {
		where = "served by the process that made the unique ID"
	}
	auth := "authenticated by GOSHMEM_BOOTSTRAP_TOKEN"
	switch {
	case b.cfg.Source == "unique ID":
		auth = "authenticated by the unique ID's secret"
	case len(b.cfg.Key) == 0:
		auth = "NOT authenticated (no GOSHMEM_BOOTSTRAP_TOKEN: any process that reaches the address can join)"
	}
	lines = append(lines, fmt.Sprintf("bootstrap tcp: rank and size from %s; rendezvous %s (%s), %s", b.cfg.Source, b.cfg.Addr, where, auth))
	if b.srv != nil {
		if n := b.srv.refused.Load(); n > 0 {
			lines = append(lines, fmt.Sprintf("bootstrap tcp: refused %d connection(s) (each reported on stderr)", n))
		}
	}
	if b.cfg.LocalSize >= 0 {
		lr, ls := bootstrap.LocalRank(b)
		line := fmt.Sprintf("bootstrap tcp: the launcher says local rank %d of %d; goshmem's node grouping gives %d of %d", b.cfg.LocalRank, b.cfg.LocalSize, lr, ls)
		if ls != b.cfg.LocalSize {
			line += " (they differ: goshmem groups by host, boot and namespaces)"
		}
		lines = append(lines, line)
	}
	return lines
}
