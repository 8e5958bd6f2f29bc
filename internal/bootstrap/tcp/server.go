package tcpboot

import (
	"crypto/hmac"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/goshmem/goshmem/internal/logx"
)

// Server timing. A connection has handshakeTimeout to authenticate and
// join; the server outlives a failed rendezvous by failGrace so PEs that
// connect late still learn why; writes to a PE that stopped reading fail
// after writeTimeout (the PE is then taken as gone).
const (
	handshakeTimeout = 10 * time.Second
	failGrace        = 2 * time.Second
	writeTimeout     = 30 * time.Second
	maxHandshakes    = 256 // unauthenticated connections in flight
)

// Kinds of a frameError's first byte: which sentinel the PEs report.
const (
	failInvalid byte = iota + 1 // bad input: ranks, sizes
	failTimeout                 // a PE did not join in time
	failOther                   // a PE died during the rendezvous
)

// server is the rendezvous: it authenticates connections, admits one PE
// per rank, hands out the node table, and relays the collectives (a star:
// every PE sends its part, the server answers every PE). It runs on
// goroutines of the process that opened it (PE 0 of an env-launched job,
// or the process that called NewUniqueID), and ends once every PE has
// finalized or gone.
type server struct {
	ln  net.Listener
	key []byte
	log *logx.Switch // refused connections: stderr, or the runtime's logger

	events chan event
	done   chan struct{} // closed when the server has ended
	slots  chan struct{} // handshakes in flight

	refused atomic.Int64
	mu      sync.Mutex
	missing []int             // PEs not yet finalized, once running (for Finalize's error)
	conns   map[net.Conn]bool // admitted connections (for kill)
}

type memberState int

const (
	stJoined memberState = iota
	stBye
	stGone
)

// member is one admitted PE.
type member struct {
	rank, size int
	info       joinInfo
	conn       net.Conn
	addr       string
	state      memberState
	why        string // stGone: how its connection ended
	pending    *coll
}

func (m *member) String() string {
	return fmt.Sprintf("PE %d (host %s, pid %d)", m.rank, m.info.host, m.info.pid)
}

type eventKind int

const (
	evJoin eventKind = iota
	evFrame
	evClosed
)

type event struct {
	kind    eventKind
	m       *member
	typ     byte
	payload []byte
	err     error
}

// listen opens the rendezvous at addr (exactly there: no other address
// or interface) and starts serving.
func listen(addr string, key []byte, stderr io.Writer) (*server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	return serve(ln, key, stderr), nil
}

func serve(ln net.Listener, key []byte, stderr io.Writer) *server {
	s := &server{
		ln:     ln,
		key:    append([]byte(nil), key...),
		log:    logx.NewSwitch(stderr),
		events: make(chan event),
		done:   make(chan struct{}),
		slots:  make(chan struct{}, maxHandshakes),
	}
	go s.accept()
	go s.run()
	return s
}

// Addr is the address the server listens on (the port filled in).
func (s *server) Addr() string { return s.ln.Addr().String() }

func (s *server) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			select {
			case <-s.done:
				return
			case <-time.After(10 * time.Millisecond): // EMFILE and the like
			}
			continue
		}
		select {
		case s.slots <- struct{}{}:
			go func() {
				s.handshake(c)
				<-s.slots
			}()
		default:
			s.report(c.RemoteAddr().String(), fmt.Sprintf("%d unauthenticated connections already in flight", maxHandshakes))
			_ = c.Close()
		}
	}
}

// report prints one refused connection; the job goes on.
func (s *server) report(addr, why string) {
	s.refused.Add(1)
	msg := fmt.Sprintf("bootstrap tcp: refused a connection from %s: %s", addr, why)
	s.log.Log(slog.LevelWarn, "goshmem: "+msg+"\n", msg, slog.String("backend", "bootstrap"), slog.String("addr", addr))
}

func (s *server) refuse(c net.Conn, why string) {
	s.report(c.RemoteAddr().String(), why)
	_ = writeFrame(c, frameRefused, []byte(why))
	_ = c.Close()
}

// handshake authenticates c; an admitted PE is handed to run, and its
// frames after it.
func (s *server) handshake(c net.Conn) {
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	nonceS, err := newNonce()
	if err != nil {
		s.refuse(c, err.Error())
		return
	}
	if _, err := c.Write(append([]byte(magic), nonceS...)); err != nil {
		s.report(c.RemoteAddr().String(), fmt.Sprintf("closed before the handshake (%v)", err))
		_ = c.Close()
		return
	}
	hello := make([]byte, helloLen)
	if n, err := io.ReadFull(c, hello); err != nil {
		why := fmt.Sprintf("closed during the handshake, after %d of %d bytes (%v)", n, helloLen, err)
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout():
			why = fmt.Sprintf("no complete handshake within %v (%d of %d bytes)", handshakeTimeout, n, helloLen)
		case n == 0:
			why = "closed without a handshake"
		}
		s.report(c.RemoteAddr().String(), why)
		_ = c.Close()
		return
	}
	if string(hello[:len(magic)]) != magic {
		s.refuse(c, fmt.Sprintf("not goshmem's bootstrap protocol %s (it sent %q)", magic, printable(hello[:len(magic)])))
		return
	}
	nonceC := hello[len(magic) : len(magic)+nonceLen]
	rs := hello[len(magic)+nonceLen : len(magic)+nonceLen+8]
	rank := int32(uint32(rs[0]) | uint32(rs[1])<<8 | uint32(rs[2])<<16 | uint32(rs[3])<<24)
	size := int32(uint32(rs[4]) | uint32(rs[5])<<8 | uint32(rs[6])<<16 | uint32(rs[7])<<24)
	mac := hello[len(magic)+nonceLen+8:]
	if !hmac.Equal(mac, proof(s.key, "goshmem tcp bootstrap client", nonceS, nonceC, rank, size)) {
		s.refuse(c, "its proof of the job's secret is wrong: not a PE of this job (GOSHMEM_BOOTSTRAP_TOKEN or the unique ID differs)")
		return
	}
	if err := writeFrame(c, frameAccepted, proof(s.key, "goshmem tcp bootstrap server", nonceC, nonceS, rank, size)); err != nil {
		s.report(c.RemoteAddr().String(), fmt.Sprintf("closed during the handshake (%v)", err))
		_ = c.Close()
		return
	}
	typ, p, err := readFrame(c, maxJoinFrame)
	if err == nil && typ != frameJoin {
		err = fmt.Errorf("frame type %d where the join was due", typ)
	}
	var info joinInfo
	if err == nil {
		info, err = decodeJoin(p)
	}
	if err != nil {
		s.refuse(c, fmt.Sprintf("PE %d authenticated but its join failed: %v", rank, err))
		return
	}
	_ = c.SetDeadline(time.Time{})
	s.mu.Lock()
	if s.conns == nil {
		s.conns = map[net.Conn]bool{}
	}
	s.conns[c] = true
	s.mu.Unlock()
	m := &member{rank: int(rank), size: int(size), info: info, conn: c, addr: c.RemoteAddr().String()}
	if !s.send(event{kind: evJoin, m: m}) {
		_ = c.Close()
		return
	}
	for {
		typ, p, err := readFrame(c, maxFrame)
		if err != nil {
			s.send(event{kind: evClosed, m: m, err: err})
			return
		}
		if !s.send(event{kind: evFrame, m: m, typ: typ, payload: p}) {
			return
		}
	}
}

func (s *server) send(e event) bool {
	select {
	case s.events <- e:
		return true
	case <-s.done:
		return false
	}
}

func printable(b []byte) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 || r > 0x7e {
			return '.'
		}
		return r
	}, string(b))
}

// write sends one frame to m; a PE that cannot take it is gone.
func (s *server) write(m *member, typ byte, p []byte) {
	if m.state != stJoined {
		return
	}
	_ = m.conn.SetWriteDeadline(time.Now().Add(writeTimeout))
	if err := writeFrame(m.conn, typ, p); err != nil {
		m.state, m.why = stGone, fmt.Sprintf("a write to it failed (%v)", err)
		_ = m.conn.Close()
	}
}

// loop state, owned by run.
type phase int

const (
	phRendezvous phase = iota
	phRunning
	phFailed
)

// run owns every member and answers every event, one at a time.
func (s *server) run() {
	var (
		ph       = phRendezvous
		size     = -1
		members  []*member // by rank, once size is known
		failure  []byte    // phFailed: the frameError payload
		timer    *time.Timer
		timerC   <-chan time.Time
		deadline time.Time // phRendezvous: the earliest joined PE's own deadline
		broken   string    // phRunning: why no collective can complete
	)
	stop := func() {
		if timer != nil {
			timer.Stop()
		}
		_ = s.ln.Close()
		for _, m := range members {
			if m != nil && m.state == stJoined {
				_ = m.conn.Close()
			}
		}
		close(s.done)
	}
	fail := func(kind byte, msg string) {
		ph = phFailed
		failure = append([]byte{kind}, msg...)
		for _, m := range members {
			if m != nil {
				s.write(m, frameError, failure)
				if m.state == stJoined {
					m.state = stGone
					_ = m.conn.Close()
				}
			}
		}
		if timer != nil {
			timer.Stop()
		}
		timer = time.NewTimer(failGrace)
		timerC = timer.C
	}
	live := func() bool {
		for _, m := range members {
			if m.state == stJoined {
				return true
			}
		}
		return false
	}
	updateMissing := func() {
		var miss []int
		for _, m := range members {
			if m.state == stJoined {
				miss = append(miss, m.rank)
			}
		}
		s.mu.Lock()
		s.missing = miss
		s.mu.Unlock()
	}
	for {
		var e event
		select {
		case e = <-s.events:
		case <-timerC:
			if ph == phRendezvous {
				var miss []int
				for r, m := range members {
					if m == nil {
						miss = append(miss, r)
					}
				}
				msg := fmt.Sprintf("PEs %v did not join the rendezvous at %s within GOSHMEM_BOOTSTRAP_TIMEOUT (%d of %d joined)",
					miss, s.Addr(), size-len(miss), size)
				if n := s.refused.Load(); n > 0 {
					msg += fmt.Sprintf("; %d connection(s) were refused (wrong token or not goshmem: see PE 0's stderr)", n)
				}
				fail(failTimeout, msg)
				continue
			}
			stop() // phFailed: the grace has passed
			return
		}
		m := e.m
		if e.kind != evJoin && (m.rank < 0 || m.rank >= len(members) || members[m.rank] != m) {
			// A connection that was refused at its join: already closed.
			_ = m.conn.Close()
			continue
		}
		switch e.kind {
		case evJoin:
			switch ph {
			case phFailed:
				_ = writeFrame(m.conn, frameError, failure)
				_ = m.conn.Close()
				continue
			case phRunning:
				msg := fmt.Sprintf("rank %d, size %d: the job is already running with all %d PEs", m.rank, m.size, size)
				s.report(m.addr, msg)
				_ = writeFrame(m.conn, frameError, append([]byte{failInvalid}, msg...))
				_ = m.conn.Close()
				continue
			}
			if size < 0 {
				if m.size < 1 {
					msg := fmt.Sprintf("PE with rank %d (host %s, pid %d) says the job has %d PEs; want at least 1", m.rank, m.info.host, m.info.pid, m.size)
					members = []*member{}
					_ = writeFrame(m.conn, frameError, append([]byte{failInvalid}, msg...))
					_ = m.conn.Close()
					fail(failInvalid, msg)
					continue
				}
				size = m.size
				members = make([]*member, size)
			}
			// The rendezvous ends at the earliest deadline of the PEs that
			// joined, so its verdict reaches each before its own runs out.
			if d := time.Now().Add(time.Duration(m.info.timeoutMs) * time.Millisecond); timer == nil || d.Before(deadline) {
				deadline = d
				if timer != nil {
					timer.Stop()
				}
				timer = time.NewTimer(time.Until(deadline))
				timerC = timer.C
			}
			var msg string
			switch {
			case m.size != size:
				first := firstMember(members)
				msg = fmt.Sprintf("PEs disagree on the job size: %s says %d PEs, %s says %d", first, size, m, m.size)
			case m.rank < 0 || m.rank >= size:
				msg = fmt.Sprintf("PE on host %s (pid %d) has rank %d, outside [0, %d)", m.info.host, m.info.pid, m.rank, size)
			case members[m.rank] != nil:
				msg = fmt.Sprintf("two PEs have rank %d: %s and host %s pid %d", m.rank, members[m.rank], m.info.host, m.info.pid)
			}
			if msg != "" {
				_ = writeFrame(m.conn, frameError, append([]byte{failInvalid}, msg...))
				_ = m.conn.Close()
				fail(failInvalid, msg)
				continue
			}
			members[m.rank] = m
			if firstMember(members) != nil && countJoined(members) == size {
				ph = phRunning
				timer.Stop()
				timerC = nil
				keys := make([]string, size)
				for r, mm := range members {
					keys[r] = mm.info.nodeKey
				}
				ids := numberByFirstAppearance(keys)
				roster := enc(nil)
				for _, id := range ids {
					roster = roster.u32(uint32(id))
				}
				for _, mm := range members {
					s.write(mm, frameRoster, roster)
				}
				updateMissing()
			}
		case evClosed:
			if m.state != stJoined || ph == phFailed {
				break
			}
			m.state, m.why = stGone, fmt.Sprintf("its bootstrap connection closed (%v): the process ended or failed", e.err)
			_ = m.conn.Close()
			if ph == phRendezvous {
				fail(failOther, fmt.Sprintf("%s left during the bootstrap: %s", m, m.why))
				continue
			}
			if broken == "" {
				broken = fmt.Sprintf("%s is gone: %s", m, m.why)
			}
			s.complete(members, broken)
		case evFrame:
			if ph == phFailed || m.state != stJoined {
				break
			}
			switch e.typ {
			case frameColl:
				c, err := decodeColl(e.payload)
				if err != nil || ph != phRunning || m.pending != nil {
					if broken == "" {
						broken = fmt.Sprintf("%s sent a collective out of turn", m)
					}
				} else {
					m.pending = &c
				}
				s.complete(members, broken)
			case frameAbort:
				a, err := decodeAbort(e.payload)
				if err != nil {
					a = abortMsg{code: 1, msg: "malformed abort"}
				}
				a.rank = int32(m.rank)
				for _, o := range members {
					if o != nil && o != m {
						s.write(o, frameAbort, a.encode())
					}
				}
				s.write(m, frameAbortAck, nil)
			case frameBye:
				m.state = stBye
				_ = m.conn.Close()
				if ph == phRendezvous {
					fail(failOther, fmt.Sprintf("%s finalized during the bootstrap", m))
					continue
				}
				if broken == "" {
					broken = fmt.Sprintf("%s has finalized", m)
				}
				s.complete(members, broken)
			default:
				if broken == "" {
					broken = fmt.Sprintf("%s sent an unknown frame (type %d)", m, e.typ)
				}
				s.complete(members, broken)
			}
		}
		if ph == phRunning {
			for _, mm := range members {
				if mm.state == stGone && broken == "" {
					broken = fmt.Sprintf("%s is gone: %s", mm, mm.why)
				}
			}
			if broken != "" {
				s.complete(members, broken)
			}
			updateMissing()
			if !live() {
				stop()
				return
			}
		}
	}
}

func firstMember(ms []*member) *member {
	for _, m := range ms {
		if m != nil {
			return m
		}
	}
	return nil
}

func countJoined(ms []*member) int {
	n := 0
	for _, m := range ms {
		if m != nil {
			n++
		}
	}
	return n
}

// complete answers the current collective once every PE has sent its
// part; with the job broken (a PE gone or finalized) it fails every
// pending part at once, so no PE waits for one that will never come.
func (s *server) complete(members []*member, broken string) {
	if broken != "" {
		for _, m := range members {
			if m.pending != nil {
				s.write(m, frameResult, result{seq: m.pending.seq, data: []byte(broken)}.encode())
				m.pending = nil
			}
		}
		return
	}
	for _, m := range members {
		if m.pending == nil {
			return
		}
	}
	out, err := combine(members)
	var res result
	if err != nil {
		res = result{data: []byte(err.Error())}
	} else {
		res = result{ok: true, data: out}
	}
	for _, m := range members {
		res.seq = m.pending.seq
		m.pending = nil
		s.write(m, frameResult, res.encode())
	}
}

// combine computes one collective from every PE's part, or says how the
// parts disagree (every PE then gets the same error).
func combine(members []*member) ([]byte, error) {
	p0 := members[0].pending
	ops := make([]string, len(members))
	lens := make([]uint64, len(members))
	roots := make([]int32, len(members))
	sameOp, sameLen, sameRoot, sameSeq := true, true, true, true
	for r, m := range members {
		c := m.pending
		ops[r], lens[r], roots[r] = opName(c.op), c.n, c.root
		sameOp = sameOp && c.op == p0.op
		sameLen = sameLen && c.n == p0.n
		sameRoot = sameRoot && c.root == p0.root
		sameSeq = sameSeq && c.seq == p0.seq
	}
	switch {
	case !sameOp:
		return nil, fmt.Errorf("PEs called different collectives: %v", ops)
	case !sameSeq:
		return nil, fmt.Errorf("PEs are out of step (collective numbers differ)")
	case p0.op != opBarrier && !sameLen:
		return nil, fmt.Errorf("%s lengths differ between PEs: %v", opName(p0.op), lens)
	}
	switch p0.op {
	case opBarrier:
		return nil, nil
	case opAllgather:
		out := make([]byte, 0, int(p0.n)*len(members))
		for _, m := range members {
			if uint64(len(m.pending.data)) != p0.n {
				return nil, fmt.Errorf("%s sent %d bytes for a %d-byte Allgather", m, len(m.pending.data), p0.n)
			}
			out = append(out, m.pending.data...)
		}
		return out, nil
	case opBcast:
		if !sameRoot {
			return nil, fmt.Errorf("Bcast roots differ between PEs: %v", roots)
		}
		if p0.root < 0 || int(p0.root) >= len(members) {
			return nil, fmt.Errorf("Bcast root %d is outside [0, %d)", p0.root, len(members))
		}
		d := members[p0.root].pending.data
		if uint64(len(d)) != p0.n {
			return nil, fmt.Errorf("root %s sent %d bytes for a %d-byte Bcast", members[p0.root], len(d), p0.n)
		}
		return d, nil
	}
	return nil, fmt.Errorf("unknown collective %d", p0.op)
}

// numberByFirstAppearance maps each distinct key to 0, 1, 2 ... in the
// order keys first appear, so rank 0 is on node 0.
func numberByFirstAppearance(keys []string) []int {
	ids := make([]int, len(keys))
	seen := map[string]int{}
	for i, k := range keys {
		id, ok := seen[k]
		if !ok {
			id = len(seen)
			seen[k] = id
		}
		ids[i] = id
	}
	return ids
}

// pendingPEs lists the PEs that have not finalized (sorted).
func (s *server) pendingPEs() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]int(nil), s.missing...)
	sort.Ints(out)
	return out
}

// kill drops the listener and every connection at once, as the end of
// the server's process would (tests).
func (s *server) kill() {
	_ = s.ln.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.conns {
		_ = c.Close()
	}
}

// closeListener stops admitting connections (Finalize past its wait).
func (s *server) closeListener() {
	_ = s.ln.Close()
}
