package tcpboot

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/errs"
)

// syncBuf is a goroutine-safe stderr for the PEs of one test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	a := ln.Addr().String()
	require.NoError(t, ln.Close())
	return a
}

// pe is one goroutine PE's config; rank 0 serves unless serve is false.
type peCfg struct {
	rank, size int
	key        string
	node       string
	timeout    time.Duration
}

// start runs New for every config on its own goroutine and returns the
// bootstraps and errors by index.
func start(t *testing.T, addr string, stderr io.Writer, cfgs []peCfg) ([]bootstrap.Bootstrap, []error) {
	t.Helper()
	bs := make([]bootstrap.Bootstrap, len(cfgs))
	es := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for i, c := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			to := c.timeout
			if to == 0 {
				to = 10 * time.Second
			}
			bs[i], es[i] = New(Config{Rank: c.rank, Size: c.size, Addr: addr, Key: []byte(c.key),
				Serve: c.rank == 0 && i == 0, Timeout: to, NodeKey: c.node, Stderr: stderr, Source: "test",
				LocalRank: -1, LocalSize: -1,
				Exit: func(code int) { t.Errorf("PE %d: unexpected exit %d", c.rank, code) }})
		}()
	}
	wg.Wait()
	return bs, es
}

func job(n int, key string) []peCfg {
	c := make([]peCfg, n)
	for r := range c {
		c[r] = peCfg{rank: r, size: n, key: key, node: "n"}
	}
	return c
}

// each runs f on every PE concurrently and returns the errors by rank.
func each(bs []bootstrap.Bootstrap, f func(b bootstrap.Bootstrap) error) []error {
	es := make([]error, len(bs))
	var wg sync.WaitGroup
	for i, b := range bs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			es[i] = f(b)
		}()
	}
	wg.Wait()
	return es
}

func finalizeAll(t *testing.T, bs []bootstrap.Bootstrap) {
	t.Helper()
	for r, err := range each(bs, func(b bootstrap.Bootstrap) error { return b.Finalize() }) {
		assert.NoError(t, err, "Finalize on PE %d", r)
	}
}

func TestCollectives(t *testing.T) {
	var stderr syncBuf
	cfgs := job(4, "tok")
	for r := range cfgs {
		cfgs[r].node = []string{"a", "a", "b", "b"}[r]
	}
	bs, es := start(t, freeAddr(t), &stderr, cfgs)
	for r, err := range es {
		require.NoError(t, err, "New on PE %d", r)
	}
	for r, b := range bs {
		assert.Equal(t, "tcp", b.Name())
		assert.Equal(t, r, b.Rank())
		assert.Equal(t, 4, b.Size())
		assert.Equal(t, []int{0, 0, 1, 1}, b.Node(), "PE %d", r)
	}
	for round := range 3 {
		outs := make([][]byte, 4)
		es := each(bs, func(b bootstrap.Bootstrap) error {
			in := []byte{byte(b.Rank()), byte(round), 0xAB}
			out, err := b.Allgather(in)
			outs[b.Rank()] = out
			return err
		})
		for r := range 4 {
			require.NoError(t, es[r])
			assert.Equal(t, []byte{0, byte(round), 0xAB, 1, byte(round), 0xAB, 2, byte(round), 0xAB, 3, byte(round), 0xAB}, outs[r])
		}
		bufs := make([][]byte, 4)
		es = each(bs, func(b bootstrap.Bootstrap) error {
			buf := []byte{byte(b.Rank()), 9}
			err := b.Bcast(buf, 2)
			bufs[b.Rank()] = buf
			return err
		})
		for r := range 4 {
			require.NoError(t, es[r])
			assert.Equal(t, []byte{2, 9}, bufs[r])
		}
		for r, err := range each(bs, func(b bootstrap.Bootstrap) error { return b.Barrier() }) {
			require.NoError(t, err, "Barrier on PE %d", r)
		}
	}
	// Empty Allgather and a 1 MiB one.
	big := bytes.Repeat([]byte{7}, 1<<20)
	for r, err := range each(bs, func(b bootstrap.Bootstrap) error {
		out, err := b.Allgather(big)
		if err == nil && len(out) != 4<<20 {
			err = fmt.Errorf("%d bytes", len(out))
		}
		return err
	}) {
		require.NoError(t, err, "PE %d", r)
	}
	info := bs[0].(*boot).Info()
	assert.Contains(t, strings.Join(info, "\n"), "served by this process")
	finalizeAll(t, bs)
	_, err := bs[1].Allgather([]byte{1})
	assert.ErrorIs(t, err, errs.ErrInvalidArgument, "a collective after Finalize")
	assert.Error(t, bs[1].Finalize(), "Finalize twice")
	assert.Empty(t, stderr.String())
}

// TestMismatch: PEs that pass different lengths or roots all get the same
// error, and the job goes on.
func TestMismatch(t *testing.T) {
	bs, es := start(t, freeAddr(t), io.Discard, job(3, "k"))
	for _, err := range es {
		require.NoError(t, err)
	}
	for r, err := range each(bs, func(b bootstrap.Bootstrap) error {
		_, err := b.Allgather(make([]byte, 1+b.Rank()))
		return err
	}) {
		require.Error(t, err, "PE %d", r)
		assert.Contains(t, err.Error(), "Allgather lengths differ between PEs: [1 2 3]")
	}
	for r, err := range each(bs, func(b bootstrap.Bootstrap) error { return b.Bcast(make([]byte, 2), b.Rank()) }) {
		require.Error(t, err, "PE %d", r)
		assert.Contains(t, err.Error(), "Bcast roots differ between PEs: [0 1 2]")
	}
	for r, err := range each(bs, func(b bootstrap.Bootstrap) error { return b.Bcast(make([]byte, 2), 5) }) {
		require.Error(t, err, "PE %d", r)
		assert.Contains(t, err.Error(), "Bcast root 5 is outside [0, 3)")
	}
	for r, err := range each(bs, func(b bootstrap.Bootstrap) error {
		if b.Rank() == 1 {
			return b.Barrier()
		}
		_, err := b.Allgather([]byte{1})
		return err
	}) {
		require.Error(t, err, "PE %d", r)
		assert.Contains(t, err.Error(), "PEs called different collectives: [Allgather Barrier Allgather]")
	}
	for r, err := range each(bs, func(b bootstrap.Bootstrap) error { return b.Barrier() }) {
		require.NoError(t, err, "PE %d: the job goes on after a mismatch", r)
	}
	finalizeAll(t, bs)
}

// TestBadInput: every bad input fails New on every PE, with a message
// that says what is wrong.
func TestBadInput(t *testing.T) {
	short := 1500 * time.Millisecond
	tests := []struct {
		name string
		cfgs []peCfg
		want []string // per PE, a substring of its error
		is   error
	}{
		{"duplicate rank", []peCfg{{rank: 0, size: 3}, {rank: 1, size: 3}, {rank: 1, size: 3}},
			[]string{"two PEs have rank 1"}, errs.ErrInvalidArgument},
		{"rank out of range", []peCfg{{rank: 0, size: 2}, {rank: 2, size: 2}},
			[]string{"has rank 2, outside [0, 2)"}, errs.ErrInvalidArgument},
		{"negative rank", []peCfg{{rank: 0, size: 2}, {rank: -1, size: 2}},
			[]string{"has rank -1, outside [0, 2)"}, errs.ErrInvalidArgument},
		{"sizes disagree", []peCfg{{rank: 0, size: 3}, {rank: 1, size: 3}, {rank: 2, size: 4}},
			[]string{"PEs disagree on the job size"}, errs.ErrInvalidArgument},
		{"missing PE", []peCfg{{rank: 0, size: 3, timeout: short}, {rank: 1, size: 3, timeout: short}},
			[]string{"PEs [2] did not join"}, errs.ErrTimeout},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // each waits out the serving PE's grace
			for i := range tc.cfgs {
				tc.cfgs[i].node = "n"
				if tc.cfgs[i].timeout == 0 {
					tc.cfgs[i].timeout = 20 * time.Second
				}
			}
			_, es := start(t, freeAddr(t), io.Discard, tc.cfgs)
			for i, err := range es {
				require.Error(t, err, "PE #%d", i)
				assert.Contains(t, err.Error(), tc.want[0], "PE #%d", i)
				assert.ErrorIs(t, err, tc.is, "PE #%d: %v", i, err)
			}
		})
	}
}

// TestUnreachable: no process serves the rendezvous.
func TestUnreachable(t *testing.T) {
	_, es := start(t, freeAddr(t), io.Discard, []peCfg{{rank: 1, size: 2, timeout: 500 * time.Millisecond}})
	require.Error(t, es[0])
	assert.ErrorIs(t, es[0], errs.ErrTimeout)
	assert.Contains(t, es[0].Error(), "could not reach the rendezvous at 127.0.0.1:")
}

// TestListenBusy: PE 0 cannot open the rendezvous where asked.
func TestListenBusy(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	_, es := start(t, ln.Addr().String(), io.Discard, []peCfg{{rank: 0, size: 1}})
	require.Error(t, es[0])
	assert.Contains(t, es[0].Error(), "PE 0 cannot listen at "+ln.Addr().String())
}

// rawJoin authenticates and joins like a PE, and returns the connection.
func rawJoin(t *testing.T, addr string, key string, rank, size int) net.Conn {
	t.Helper()
	var c net.Conn
	var err error
	for range 200 {
		if c, err = net.Dial("tcp", addr); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NoError(t, err)
	greet := make([]byte, greetingLen)
	_, err = io.ReadFull(c, greet)
	require.NoError(t, err)
	nonceC, _ := newNonce()
	hello := enc(append([]byte(magic), nonceC...)).u32(uint32(rank)).u32(uint32(size))
	hello = append(hello, proof([]byte(key), "goshmem tcp bootstrap client", greet[len(magic):], nonceC, int32(rank), int32(size))...)
	_, err = c.Write(hello)
	require.NoError(t, err)
	typ, _, err := readFrame(c, maxJoinFrame)
	require.NoError(t, err)
	require.Equal(t, frameAccepted, typ)
	require.NoError(t, writeFrame(c, frameJoin, joinInfo{timeoutMs: 10000, pid: 1, host: "raw", nodeKey: "n"}.encode()))
	return c
}

// TestDiesDuringBootstrap: a PE joins and dies before the others are all
// there: every PE fails, naming it.
func TestDiesDuringBootstrap(t *testing.T) {
	addr := freeAddr(t)
	var es []error
	done := make(chan struct{})
	go func() {
		_, es = start(t, addr, io.Discard, []peCfg{{rank: 0, size: 4, key: "k", node: "n"}, {rank: 1, size: 4, key: "k", node: "n"}})
		close(done)
	}()
	c := rawJoin(t, addr, "k", 2, 4)
	require.NoError(t, c.Close())
	<-done
	for i, err := range es {
		require.Error(t, err, "PE #%d", i)
		assert.Contains(t, err.Error(), "PE 2 (host raw, pid 1) left during the bootstrap", "PE #%d", i)
	}
}

// TestDeadPeer: after the bootstrap, a PE whose connection closes fails
// the next collective of every other PE, naming it.
func TestDeadPeer(t *testing.T) {
	bs, es := start(t, freeAddr(t), io.Discard, job(3, "k"))
	for _, err := range es {
		require.NoError(t, err)
	}
	require.NoError(t, bs[2].(*boot).conn.Close()) // PE 2 "dies"
	for r, err := range each(bs[:2], func(b bootstrap.Bootstrap) error { return b.Barrier() }) {
		require.Error(t, err, "PE %d", r)
		assert.Contains(t, err.Error(), "PE 2 (host ", "PE %d", r)
		assert.Contains(t, err.Error(), "is gone", "PE %d", r)
	}
	_ = bs[1].Finalize()
	_ = bs[0].Finalize()
}

// TestDeadPeerWhileWaiting: the others already wait in a collective when
// the PE dies.
func TestDeadPeerWhileWaiting(t *testing.T) {
	bs, es := start(t, freeAddr(t), io.Discard, job(3, "k"))
	for _, err := range es {
		require.NoError(t, err)
	}
	errc := make(chan []error)
	go func() { errc <- each(bs[:2], func(b bootstrap.Bootstrap) error { return b.Barrier() }) }()
	time.Sleep(100 * time.Millisecond)
	require.NoError(t, bs[2].(*boot).conn.Close())
	for r, err := range <-errc {
		require.Error(t, err, "PE %d", r)
		assert.Contains(t, err.Error(), "PE 2 (host ", "PE %d", r)
	}
	_ = bs[1].Finalize()
	_ = bs[0].Finalize()
}

// TestServerDies: PE 0 (the server) goes away; the others' next
// collective fails and says the rendezvous ended.
func TestServerDies(t *testing.T) {
	bs, es := start(t, freeAddr(t), io.Discard, job(2, "k"))
	for _, err := range es {
		require.NoError(t, err)
	}
	b1 := bs[1].(*boot)
	// Cut PE 1 off as if PE 0's process had ended.
	s := bs[0].(*boot).srv
	_ = s.ln.Close()
	require.NoError(t, bs[0].(*boot).conn.Close())
	err := b1.Barrier()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PE 0 (host ")
}

// TestServerProcessDies: the server's process ends (every connection
// drops at once): every PE's next collective fails, naming PE 0.
func TestServerProcessDies(t *testing.T) {
	bs, es := start(t, freeAddr(t), io.Discard, job(3, "k"))
	for _, err := range es {
		require.NoError(t, err)
	}
	bs[0].(*boot).srv.kill()
	for r, err := range each(bs[1:], func(b bootstrap.Bootstrap) error { return b.Barrier() }) {
		require.Error(t, err, "PE %d", r+1)
		assert.Contains(t, err.Error(), "(served by PE 0) ended", "PE %d", r+1)
		assert.Contains(t, err.Error(), "PE 0 has ended or failed", "PE %d", r+1)
	}
}

// TestForeignConnections: connections that are not PEs of the job (a
// port scanner, another protocol, a peer with the wrong token, one that
// says nothing) are refused and reported; the job completes.
func TestForeignConnections(t *testing.T) {
	addr := freeAddr(t)
	var stderr syncBuf
	var bs []bootstrap.Bootstrap
	var es []error
	done := make(chan struct{})
	go func() {
		bs, es = start(t, addr, &stderr, []peCfg{{rank: 0, size: 2, key: "right", node: "n"}})
		close(done)
	}()
	dial := func() net.Conn {
		for {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				return c
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	// 1. connects and closes.
	c := dial()
	_ = c.Close()
	// 2. speaks HTTP.
	c = dial()
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n" + strings.Repeat("x", helloLen)))
	typ, p, err := readAfterGreeting(c)
	require.NoError(t, err)
	assert.Equal(t, frameRefused, typ)
	assert.Contains(t, string(p), "not goshmem's bootstrap protocol")
	_ = c.Close()
	// 3. the protocol with the wrong secret.
	c = dial()
	greet := make([]byte, greetingLen)
	_, err = io.ReadFull(c, greet)
	require.NoError(t, err)
	hello := enc(append([]byte(magic), make([]byte, nonceLen)...)).u32(1).u32(2)
	hello = append(hello, proof([]byte("wrong"), "goshmem tcp bootstrap client", greet[len(magic):], make([]byte, nonceLen), 1, 2)...)
	_, _ = c.Write(hello)
	typ, p, err = readFrame(c, maxJoinFrame)
	require.NoError(t, err)
	assert.Equal(t, frameRefused, typ)
	assert.Contains(t, string(p), "proof of the job's secret is wrong")
	_ = c.Close()
	// 4. a right secret but a malformed join.
	c = dial()
	_, err = io.ReadFull(c, greet)
	require.NoError(t, err)
	hello = enc(append([]byte(magic), make([]byte, nonceLen)...)).u32(1).u32(2)
	hello = append(hello, proof([]byte("right"), "goshmem tcp bootstrap client", greet[len(magic):], make([]byte, nonceLen), 1, 2)...)
	_, _ = c.Write(hello)
	typ, _, err = readFrame(c, maxJoinFrame)
	require.NoError(t, err)
	require.Equal(t, frameAccepted, typ)
	require.NoError(t, writeFrame(c, frameJoin, []byte{1, 2, 3}))
	typ, p, err = readFrame(c, maxJoinFrame)
	require.NoError(t, err)
	assert.Equal(t, frameRefused, typ)
	assert.Contains(t, string(p), "malformed join")
	_ = c.Close()
	// 5. one that stays silent while the job completes.
	silent := dial()
	defer silent.Close()

	// A real PE with the wrong token is refused and told why.
	_, wrong := start(t, addr, io.Discard, []peCfg{{rank: 1, size: 2, key: "wrong", node: "n"}})
	require.Error(t, wrong[0])
	assert.Contains(t, wrong[0].Error(), "refused this PE")
	assert.ErrorIs(t, wrong[0], errs.ErrInvalidArgument)

	// The job's own PE 1 joins; the job runs.
	b1, e1 := start(t, addr, io.Discard, []peCfg{{rank: 1, size: 2, key: "right", node: "n"}})
	<-done
	require.NoError(t, es[0])
	require.NoError(t, e1[0])
	all := []bootstrap.Bootstrap{bs[0], b1[0]}
	for r, err := range each(all, func(b bootstrap.Bootstrap) error { return b.Barrier() }) {
		require.NoError(t, err, "PE %d", r)
	}
	// Each refusal is reported by its connection's own goroutine: on a
	// loaded machine the first one's report may still be on its way.
	const refusal = "goshmem: bootstrap tcp: refused a connection from 127.0.0.1:"
	for end := time.Now().Add(10 * time.Second); strings.Count(stderr.String(), refusal) < 5 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	out := stderr.String()
	assert.Equal(t, 5, strings.Count(out, refusal), "stderr:\n%s", out)
	assert.Contains(t, out, "closed without a handshake")
	assert.Contains(t, out, "not goshmem's bootstrap protocol")
	assert.Contains(t, out, "proof of the job's secret is wrong")
	assert.Contains(t, out, "malformed join")
	assert.Contains(t, strings.Join(bs[0].(*boot).Info(), "\n"), "refused 5 connection(s)")
	finalizeAll(t, all)
}

func readAfterGreeting(c net.Conn) (byte, []byte, error) {
	greet := make([]byte, greetingLen)
	if _, err := io.ReadFull(c, greet); err != nil {
		return 0, nil, err
	}
	return readFrame(c, maxJoinFrame)
}

// TestForeignServer: a PE that reaches a process that is not its job's
// rendezvous (another job's, or an impostor's) fails instead of joining.
func TestForeignServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write(append([]byte(magic), make([]byte, nonceLen)...))
			_, _ = io.ReadFull(c, make([]byte, helloLen))
			_ = writeFrame(c, frameAccepted, make([]byte, macLen)) // cannot prove the secret
			_ = c.Close()
		}
	}()
	_, es := start(t, ln.Addr().String(), io.Discard, []peCfg{{rank: 1, size: 2, key: "k"}})
	require.Error(t, es[0])
	assert.Contains(t, es[0].Error(), "is not this job's rendezvous")

	// Not goshmem at all.
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln2.Close()
	go func() {
		c, err := ln2.Accept()
		if err == nil {
			_, _ = c.Write([]byte("SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n" + strings.Repeat(" ", greetingLen)))
			time.Sleep(time.Second)
			_ = c.Close()
		}
	}()
	_, es = start(t, ln2.Addr().String(), io.Discard, []peCfg{{rank: 1, size: 2, key: "k"}})
	require.Error(t, es[0])
	assert.Contains(t, es[0].Error(), "is not goshmem's bootstrap")
}

// TestAbort: an abort by one PE ends every PE with its exit status.
func TestAbort(t *testing.T) {
	var stderr syncBuf
	addr := freeAddr(t)
	codes := make(chan [2]int, 3)
	bs := make([]bootstrap.Bootstrap, 3)
	es := make([]error, 3)
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			bs[r], es[r] = New(Config{Rank: r, Size: 3, Addr: addr, Key: []byte("k"), Serve: r == 0, Timeout: 10 * time.Second,
				NodeKey: "n", Stderr: &stderr, Source: "test",
				Exit: func(code int) { codes <- [2]int{r, code} }})
		}()
	}
	wg.Wait()
	for _, err := range es {
		require.NoError(t, err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		bs[1].Abort(7, "something broke")
	}()
	<-done
	got := map[int]int{}
	for range 3 {
		select {
		case c := <-codes:
			got[c[0]] = c[1]
		case <-time.After(10 * time.Second):
			t.Fatalf("exits so far: %v", got)
		}
	}
	assert.Equal(t, map[int]int{0: 7, 1: 7, 2: 7}, got)
	out := stderr.String()
	assert.Contains(t, out, "goshmem: PE 1: something broke")
	assert.Contains(t, out, "goshmem: PE 0: the job was aborted by PE 1 (exit status 7): something broke")
	assert.Contains(t, out, "goshmem: PE 2: the job was aborted by PE 1 (exit status 7): something broke")
}

func TestSinglePE(t *testing.T) {
	bs, es := start(t, freeAddr(t), io.Discard, job(1, ""))
	require.NoError(t, es[0])
	out, err := bs[0].Allgather([]byte{5})
	require.NoError(t, err)
	assert.Equal(t, []byte{5}, out)
	assert.Contains(t, strings.Join(bs[0].(*boot).Info(), "\n"), "NOT authenticated")
	require.NoError(t, bs[0].Finalize())
}

func lookupFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestFromEnv(t *testing.T) {
	tests := []struct {
		name    string
		env     map[string]string
		rank    int
		size    int
		addr    string
		source  string
		wantErr string
	}{
		{"goshmem", map[string]string{"GOSHMEM_RANK": "2", "GOSHMEM_NPES": "4", "GOSHMEM_BOOTSTRAP_ADDR": "10.0.0.1:5000", "RANK": "9", "WORLD_SIZE": "10"},
			2, 4, "10.0.0.1:5000", "GOSHMEM_RANK/GOSHMEM_NPES", ""},
		{"torchrun", map[string]string{"RANK": "1", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4", "MASTER_ADDR": "node0", "MASTER_PORT": "29500"},
			1, 8, "node0:29500", "RANK/WORLD_SIZE (torchrun)", ""},
		{"slurm", map[string]string{"SLURM_PROCID": "3", "SLURM_NTASKS": "6", "SLURM_LOCALID": "1", "GOSHMEM_BOOTSTRAP_ADDR": "[fe80::1%eth0]:7000"},
			3, 6, "[fe80::1%eth0]:7000", "SLURM_PROCID/SLURM_NTASKS (Slurm)", ""},
		{"address override", map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "a", "MASTER_PORT": "1", "GOSHMEM_BOOTSTRAP_ADDR": "b:2"},
			0, 2, "b:2", "RANK/WORLD_SIZE (torchrun)", ""},
		{"rank without size", map[string]string{"GOSHMEM_RANK": "1", "GOSHMEM_BOOTSTRAP_ADDR": "a:1"}, 0, 0, "", "", "GOSHMEM_RANK is set but GOSHMEM_NPES is not"},
		{"size without rank", map[string]string{"WORLD_SIZE": "2", "MASTER_ADDR": "a", "MASTER_PORT": "1"}, 0, 0, "", "", "WORLD_SIZE is set but RANK is not"},
		{"bad rank", map[string]string{"GOSHMEM_RANK": "one", "GOSHMEM_NPES": "2", "GOSHMEM_BOOTSTRAP_ADDR": "a:1"}, 0, 0, "", "", `GOSHMEM_RANK="one" is not an integer`},
		{"bad size", map[string]string{"GOSHMEM_RANK": "0", "GOSHMEM_NPES": "0", "GOSHMEM_BOOTSTRAP_ADDR": "a:1"}, 0, 0, "", "", `GOSHMEM_NPES="0" is not a job size`},
		{"no rank", map[string]string{"GOSHMEM_BOOTSTRAP_ADDR": "a:1"}, 0, 0, "", "", "no rank and size"},
		{"no address", map[string]string{"GOSHMEM_RANK": "0", "GOSHMEM_NPES": "2", "MASTER_ADDR": "a"}, 0, 0, "", "", "no rendezvous address"},
		{"bad address", map[string]string{"GOSHMEM_RANK": "0", "GOSHMEM_NPES": "2", "GOSHMEM_BOOTSTRAP_ADDR": "nocolon"}, 0, 0, "", "", "is not host:port"},
		{"port 0", map[string]string{"GOSHMEM_RANK": "0", "GOSHMEM_NPES": "2", "GOSHMEM_BOOTSTRAP_ADDR": "a:0"}, 0, 0, "", "", "is not a number in 1-65535"},
		{"bad timeout", map[string]string{"GOSHMEM_RANK": "0", "GOSHMEM_NPES": "2", "GOSHMEM_BOOTSTRAP_ADDR": "a:1", "GOSHMEM_BOOTSTRAP_TIMEOUT": "soon"}, 0, 0, "", "", `"soon" is not a positive duration`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := FromEnv(lookupFrom(tc.env))
			if tc.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.wantErr)
				assert.ErrorIs(t, err, errs.ErrInvalidArgument)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.rank, cfg.Rank)
			assert.Equal(t, tc.size, cfg.Size)
			assert.Equal(t, tc.addr, cfg.Addr)
			assert.True(t, strings.HasPrefix(cfg.Source, tc.source), cfg.Source)
			assert.Equal(t, tc.rank == 0, cfg.Serve)
			assert.Equal(t, DefaultTimeout, cfg.Timeout)
		})
	}
	cfg, err := FromEnv(lookupFrom(map[string]string{"RANK": "1", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4",
		"MASTER_ADDR": "h", "MASTER_PORT": "1", "GOSHMEM_BOOTSTRAP_TOKEN": "s3cret", "GOSHMEM_BOOTSTRAP_TIMEOUT": "5s"}))
	require.NoError(t, err)
	assert.Equal(t, []byte("s3cret"), cfg.Key)
	assert.Equal(t, 5*time.Second, cfg.Timeout)
	assert.Equal(t, 1, cfg.LocalRank)
	assert.Equal(t, 4, cfg.LocalSize)
}

func TestConfigured(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want bool
	}{
		{map[string]string{}, false},
		{map[string]string{"GOSHMEM_RANK": "0"}, true},
		{map[string]string{"GOSHMEM_BOOTSTRAP_ADDR": "a:1"}, true},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2"}, false},
		{map[string]string{"RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "a"}, true},
		{map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2"}, false},
		{map[string]string{"SLURM_PROCID": "0", "MASTER_ADDR": "a"}, true},
		{map[string]string{"GOSHMEM_RANK": ""}, false},
	}
	for _, tc := range tests {
		got, why := Configured(lookupFrom(tc.env))
		assert.Equal(t, tc.want, got, "%v", tc.env)
		assert.Equal(t, tc.want, why != "", "%v: %q", tc.env, why)
	}
}

func TestNodeKey(t *testing.T) {
	k := NodeKey()
	assert.NotEmpty(t, k)
	assert.Equal(t, k, NodeKey(), "stable within a process")
	assert.Contains(t, k, "mnt:[", "the mount namespace is part of the identity")
	assert.Contains(t, k, "pid:[", "the PID namespace is part of the identity")
}

func TestUniqueIDText(t *testing.T) {
	u := UniqueID{Addr: "[::1]:4242"}
	for i := range u.Secret {
		u.Secret[i] = byte(i)
	}
	text, err := u.MarshalText()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(text), uidPrefix))
	var v UniqueID
	require.NoError(t, v.UnmarshalText(text))
	assert.Equal(t, u, v)
	assert.NotContains(t, u.String(), string(text[len(uidPrefix):]), "String keeps the secret out")

	_, err = UniqueID{}.MarshalText()
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	for _, bad := range []string{"", "hello", uidPrefix, uidPrefix + "!!!!", uidPrefix + "AAAA", string(text[:len(text)-3]) + "@@@"} {
		err := v.UnmarshalText([]byte(bad))
		require.Error(t, err, "%q", bad)
		assert.ErrorIs(t, err, errs.ErrInvalidArgument, "%q", bad)
	}
	assert.Equal(t, u, v, "a failed parse leaves the ID as it was")
}

func FuzzUniqueIDText(f *testing.F) {
	u := UniqueID{Addr: "10.1.2.3:5"}
	text, _ := u.MarshalText()
	f.Add(string(text))
	f.Add(uidPrefix + "AAAA")
	f.Fuzz(func(t *testing.T, s string) {
		var v UniqueID
		if err := v.UnmarshalText([]byte(s)); err != nil {
			return
		}
		again, err := v.MarshalText()
		require.NoError(t, err)
		var w UniqueID
		require.NoError(t, w.UnmarshalText(again))
		assert.Equal(t, v, w)
	})
}

// TestUniqueIDJob: one goroutine makes the ID; PEs join with its text.
func TestUniqueIDJob(t *testing.T) {
	u, err := NewUniqueID("127.0.0.1:0", io.Discard)
	require.NoError(t, err)
	text, err := u.MarshalText()
	require.NoError(t, err)
	bs := make([]bootstrap.Bootstrap, 3)
	es := make([]error, 3)
	var wg sync.WaitGroup
	for r := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var v UniqueID
			if es[r] = v.UnmarshalText(text); es[r] != nil {
				return
			}
			cfg, err := UIDConfig(v, 2-r, 3) // ranks in any order
			if es[r] = err; err != nil {
				return
			}
			cfg.NodeKey = "n"
			bs[r], es[r] = New(cfg)
		}()
	}
	wg.Wait()
	for r, err := range es {
		require.NoError(t, err, "PE #%d", r)
	}
	for r, err := range each(bs, func(b bootstrap.Bootstrap) error { return b.Barrier() }) {
		require.NoError(t, err, "PE #%d", r)
	}
	assert.Contains(t, strings.Join(bs[0].(*boot).Info(), "\n"), "authenticated by the unique ID's secret")
	finalizeAll(t, bs)

	_, err = NewUniqueID("0.0.0.0:0", io.Discard)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument, "a wildcard address cannot be carried in an ID")
	_, err = UIDConfig(UniqueID{}, 0, 1)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
}

func TestDefaultHost(t *testing.T) {
	h := DefaultHost()
	assert.NotNil(t, net.ParseIP(h), "%q is an IP address", h)
}
