package tcpboot

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"io"

	errors "github.com/goshmem/goshmem/internal/xerrors"
)

// The wire protocol. Every connection starts with a mutual HMAC-SHA256
// challenge over the job's secret (the unique ID's random secret, or
// GOSHMEM_BOOTSTRAP_TOKEN): the server greets with a nonce, the client
// answers with its own nonce, its rank and size and a MAC of both nonces,
// and the server, if the MAC holds, accepts with a MAC of its own, so a
// PE never joins a foreign rendezvous either. The secret never crosses the
// wire. After that, frames: a type byte, a 4-byte little-endian length,
// the payload.
//
//	server: greeting = magic nonceS
//	client: hello    = magic nonceC rank(int32) size(int32) HMAC(k, "client" nonceS nonceC rank size)
//	server: frameAccepted HMAC(k, "server" nonceC nonceS rank size) | frameRefused reason
//	client: frameJoin; then frameColl / frameAbort / frameBye
//	server: frameRoster | frameError; then frameResult / frameAbort / frameAbortAck
const (
	magic    = "GSHMTCP1" // protocol name and version
	nonceLen = 32
	macLen   = sha256.Size

	greetingLen = len(magic) + nonceLen
	helloLen    = len(magic) + nonceLen + 8 + macLen
)

// Frame types.
const (
	frameAccepted byte = iota + 1 // server: MAC proving the server knows the secret
	frameRefused                  // server: why this connection is refused (text)
	frameJoin                     // client: join details (joinInfo)
	frameRoster                   // server: every rank's node (int32 each)
	frameError                    // server: the job failed (text); the connection ends
	frameColl                     // client: one collective's contribution (collHeader + data)
	frameResult                   // server: one collective's result (seq, ok, data or text)
	frameAbort                    // client: abort (code, text); server: abort by a PE (rank, code, text)
	frameAbortAck                 // server: every PE has been told of this PE's abort
	frameBye                      // client: this PE finalizes; the server closes the connection
)

// Limits on what a peer may make this process allocate: a frame before
// the handshake is a fixed size; join details are small; collectives carry
// setup data (a few KiB per PE in practice).
const (
	maxJoinFrame = 4 << 10
	maxFrame     = 1 << 30
)

func newNonce() ([]byte, error) {
	n := make([]byte, nonceLen)
	if _, err := rand.Read(n); err != nil {
		return nil, errors.Wrap(err, "bootstrap/tcp: random nonce")
	}
	return n, nil
}

// proof is the MAC one side sends: label, both nonces (the sender's peer's
// first), rank and size.
func proof(key []byte, label string, first, second []byte, rank, size int32) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	m.Write(first)
	m.Write(second)
	var rs [8]byte
	binary.LittleEndian.PutUint32(rs[0:], uint32(rank))
	binary.LittleEndian.PutUint32(rs[4:], uint32(size))
	m.Write(rs[:])
	return m.Sum(nil)
}

// writeFrame writes one frame with a single Write (TCP_NODELAY is on: one
// segment per small frame).
func writeFrame(w io.Writer, typ byte, payload []byte) error {
	buf := make([]byte, 5+len(payload))
	buf[0] = typ
	binary.LittleEndian.PutUint32(buf[1:], uint32(len(payload)))
	copy(buf[5:], payload)
	_, err := w.Write(buf)
	return err
}

// readFrame reads one frame of at most max payload bytes.
func readFrame(r io.Reader, max int) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.LittleEndian.Uint32(hdr[1:])
	if uint64(n) > uint64(max) {
		return 0, nil, errors.Newf("frame of %d bytes (type %d) exceeds the limit of %d", n, hdr[0], max)
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return 0, nil, err
	}
	return hdr[0], p, nil
}

// enc appends fixed-size and length-prefixed fields.
type enc []byte

func (e enc) u32(v uint32) enc { return binary.LittleEndian.AppendUint32(e, v) }
func (e enc) u64(v uint64) enc { return binary.LittleEndian.AppendUint64(e, v) }
func (e enc) str(s string) enc { return append(e.u32(uint32(len(s))), s...) }

// dec reads what enc wrote; the first short read sets bad and every later
// read returns zero values.
type dec struct {
	b   []byte
	bad bool
}

func (d *dec) take(n int) []byte {
	if d.bad || n < 0 || n > len(d.b) {
		d.bad = true
		return nil
	}
	v := d.b[:n]
	d.b = d.b[n:]
	return v
}

func (d *dec) u32() uint32 {
	b := d.take(4)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b)
}

func (d *dec) u64() uint64 {
	b := d.take(8)
	if b == nil {
		return 0
	}
	return binary.LittleEndian.Uint64(b)
}

func (d *dec) u8() byte {
	b := d.take(1)
	if b == nil {
		return 0
	}
	return b[0]
}

func (d *dec) str() string {
	n := d.u32()
	if n > uint32(len(d.b)) {
		d.bad = true
		return ""
	}
	return string(d.take(int(n)))
}

// err reports a malformed payload (short, or bytes left over).
func (d *dec) err(what string) error {
	if d.bad || len(d.b) != 0 {
		return errors.Newf("malformed %s frame", what)
	}
	return nil
}

// joinInfo is what a PE tells the server once authenticated.
type joinInfo struct {
	timeoutMs uint64 // this PE's GOSHMEM_BOOTSTRAP_TIMEOUT
	pid       uint32
	host      string // hostname, for messages
	nodeKey   string // equal for PEs that can share memory (nodeKey())
}

func (j joinInfo) encode() []byte {
	return enc(nil).u64(j.timeoutMs).u32(j.pid).str(j.host).str(j.nodeKey)
}

func decodeJoin(p []byte) (joinInfo, error) {
	d := dec{b: p}
	j := joinInfo{timeoutMs: d.u64(), pid: d.u32(), host: d.str(), nodeKey: d.str()}
	return j, d.err("join")
}

// Collective kinds.
const (
	opBarrier byte = iota + 1
	opAllgather
	opBcast
)

func opName(op byte) string {
	switch op {
	case opBarrier:
		return "Barrier"
	case opAllgather:
		return "Allgather"
	case opBcast:
		return "Bcast"
	}
	return "unknown collective"
}

// coll is one PE's contribution to one collective: the data is every
// PE's input for Allgather, the root's buffer for Bcast (empty elsewhere).
type coll struct {
	seq  uint64
	op   byte
	root int32
	n    uint64 // the length this PE passed
	data []byte
}

func (c coll) encode() []byte {
	e := enc(make([]byte, 0, 21+len(c.data))).u64(c.seq)
	e = append(e, c.op)
	e = e.u32(uint32(c.root)).u64(c.n)
	return append(e, c.data...)
}

func decodeColl(p []byte) (coll, error) {
	d := dec{b: p}
	c := coll{seq: d.u64(), op: d.u8(), root: int32(d.u32()), n: d.u64()}
	if d.bad {
		return c, errors.New("malformed collective frame")
	}
	c.data = d.b
	return c, nil
}

// result is the server's answer to one collective.
type result struct {
	seq  uint64
	ok   bool
	data []byte // the result, or the error's text
}

func (r result) encode() []byte {
	e := enc(make([]byte, 0, 9+len(r.data))).u64(r.seq)
	ok := byte(0)
	if r.ok {
		ok = 1
	}
	return append(append(e, ok), r.data...)
}

func decodeResult(p []byte) (result, error) {
	d := dec{b: p}
	r := result{seq: d.u64(), ok: d.u8() == 1}
	if d.bad {
		return r, errors.New("malformed result frame")
	}
	r.data = d.b
	return r, nil
}

// abortMsg is an abort: from a PE to the server (rank unused), or from
// the server to every other PE.
type abortMsg struct {
	rank int32
	code int32
	msg  string
}

func (a abortMsg) encode() []byte {
	return enc(nil).u32(uint32(a.rank)).u32(uint32(a.code)).str(a.msg)
}

func decodeAbort(p []byte) (abortMsg, error) {
	d := dec{b: p}
	a := abortMsg{rank: int32(d.u32()), code: int32(d.u32()), msg: d.str()}
	return a, d.err("abort")
}
