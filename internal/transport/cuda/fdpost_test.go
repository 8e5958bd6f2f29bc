package cudatr

import (
	"os"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/errs"
)

// The descriptor post (fdpost.go) between two PEs of this process.

func openFDs(t *testing.T) int {
	t.Helper()
	es, err := os.ReadDir("/proc/self/fd")
	require.NoError(t, err)
	return len(es)
}

func memfd(t *testing.T) int {
	t.Helper()
	fd, err := unix.MemfdCreate("fdpost-test", unix.MFD_CLOEXEC)
	require.NoError(t, err)
	t.Cleanup(func() { _ = unix.Close(fd) })
	return fd
}

func ino(t *testing.T, fd int) uint64 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Fstat(fd, &st))
	return st.Ino
}

func twoPosts(t *testing.T) (a, b *post) {
	t.Helper()
	a, err := newPost(0)
	require.NoError(t, err)
	b, err = newPost(1)
	require.NoError(t, err)
	t.Cleanup(func() {
		assert.NoError(t, a.close())
		assert.NoError(t, b.close())
	})
	return a, b
}

func bySeq(seq uint64) func(*postMsg) bool { return func(m *postMsg) bool { return m.seq == seq } }

// A descriptor sent is the same file on the other side; messages the
// receiver skips over are closed when it takes a later one, and close
// closes what was never taken.
func TestPostSendTake(t *testing.T) {
	a, b := twoPosts(t)
	pid := os.Getpid()
	var files []int
	for range 3 {
		files = append(files, memfd(t))
	}
	// a descriptor in flight is in no process's table; a's first send
	// connects a socket to b's
	held := openFDs(t) + 1
	for i, fd := range files {
		require.NoError(t, a.send(1, pid, b.nonce, postMsg{seq: a.nextSeq(), off: uint64(i) << 21, size: 2 << 20, stat: postChunk}, fd))
	}
	m, ok, err := b.take(0, pid, bySeq(3), 0)
	require.NoError(t, err)
	require.True(t, ok)
	assert.Equal(t, ino(t, files[2]), ino(t, m.fd), "the descriptor received is the file sent")
	assert.Equal(t, []uint64{4 << 20, 2 << 20, postChunk}, []uint64{m.off, m.size, m.stat})
	closeFD(m.fd)
	assert.Equal(t, held, openFDs(t), "messages 1 and 2 closed when 3 was taken")
	_, ok, err = b.take(0, pid, bySeq(1), 0)
	assert.NoError(t, err)
	assert.False(t, ok, "a message skipped over is gone")

	require.NoError(t, a.send(1, pid, b.nonce, postMsg{seq: a.nextSeq(), stat: postChunk, size: 2 << 20}, files[0]))
	m, ok, err = b.take(0, pid, bySeq(4), 0)
	require.NoError(t, err)
	require.True(t, ok, "a message sent before take is found without waiting")
	closeFD(m.fd)
	_, ok, err = b.take(0, pid, bySeq(4), 0)
	require.NoError(t, err)
	assert.False(t, ok, "a message is taken once")

	require.NoError(t, a.send(1, pid, b.nonce, postMsg{seq: a.nextSeq(), stat: postChunk}, files[1]))
	require.NoError(t, b.close())
	require.NoError(t, a.close())
	assert.Equal(t, held-5, openFDs(t), "close closed the sockets of each post and the descriptor never taken")
	_, _, err = b.take(0, pid, bySeq(5), 0)
	assert.ErrorIs(t, err, errs.ErrFinalized)
}

// More messages than the kernel queues (net.unix.max_dgram_qlen) before
// any take: the draining goroutine keeps the sender from waiting.
func TestPostManyBeforeTake(t *testing.T) {
	a, b := twoPosts(t)
	pid := os.Getpid()
	fd := memfd(t)
	const n = 200
	for range n {
		require.NoError(t, a.send(1, pid, b.nonce, postMsg{seq: a.nextSeq(), stat: postChunk}, fd))
	}
	m, ok, err := b.take(0, pid, bySeq(n), 0)
	require.NoError(t, err)
	require.True(t, ok)
	closeFD(m.fd)
}

// take's wait: a message sent later is found; none ends the wait with
// ErrTimeout; a peer whose process is gone ends it early, naming it.
func TestPostWait(t *testing.T) {
	a, b := twoPosts(t)
	pid := os.Getpid()
	fd := memfd(t)
	go func() {
		time.Sleep(50 * time.Millisecond)
		_ = a.send(1, pid, b.nonce, postMsg{seq: a.nextSeq(), stat: postChunk}, fd)
	}()
	m, ok, err := b.take(0, pid, bySeq(1), 10*time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	closeFD(m.fd)

	_, _, err = b.take(0, pid, bySeq(2), 200*time.Millisecond)
	assert.ErrorIs(t, err, errs.ErrTimeout)

	gone := exitedPID(t)
	start := time.Now()
	_, _, err = b.take(0, gone, bySeq(2), time.Minute)
	assert.ErrorIs(t, err, errs.ErrTimeout)
	assert.ErrorContains(t, err, "exited")
	assert.Less(t, time.Since(start), 30*time.Second, "the wait ended on the peer's exit, not after a minute")
}

// exitedPID is the pid of a process that has exited and been reaped.
func exitedPID(t *testing.T) int {
	t.Helper()
	p, err := os.StartProcess("/bin/true", []string{"true"}, &os.ProcAttr{})
	require.NoError(t, err)
	_, err = p.Wait()
	require.NoError(t, err)
	return p.Pid
}

// A message that names a PE but comes from another process is refused
// at take; a datagram that is not a message is dropped with its
// descriptors; a send to a socket that does not exist names the PE.
func TestPostRefuses(t *testing.T) {
	a, b := twoPosts(t)
	pid := os.Getpid()
	fd := memfd(t)
	held := openFDs(t) + 1 // and a's socket connected to b's
	require.NoError(t, a.send(1, pid, b.nonce, postMsg{seq: a.nextSeq(), stat: postChunk}, fd))
	_, _, err := b.take(0, pid+1, bySeq(1), 0)
	assert.ErrorIs(t, err, errs.ErrInvalidArgument)
	assert.ErrorContains(t, err, "not PE 0's pid")
	assert.Equal(t, held, openFDs(t), "the refused message's descriptor is closed")

	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(s)
	to := &unix.SockaddrUnix{Name: postName(pid, b.nonce)}
	held = openFDs(t)
	require.NoError(t, unix.Sendmsg(s, []byte("not a goshmem message"), unix.UnixRights(fd), to, 0))
	_, ok, err := b.take(0, pid, func(*postMsg) bool { return true }, 0)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, held, openFDs(t), "the stray datagram's descriptor is closed")

	err = a.send(1, pid, b.nonce+2, postMsg{seq: a.nextSeq(), stat: postChunk}, fd)
	assert.ErrorIs(t, err, errs.ErrNotSupported)
	assert.ErrorContains(t, err, "PE 1")
}

// A peer's socket that closes (its process exited), its name then bound
// by another socket (another user's, which read the name in
// /proc/net/unix): a send to that PE fails and hands the descriptor to
// no one.
func TestPostPeerNameRebound(t *testing.T) {
	a, err := newPost(0)
	require.NoError(t, err)
	defer a.close()
	b, err := newPost(1)
	require.NoError(t, err)
	pid := os.Getpid()
	fd := memfd(t)
	require.NoError(t, a.send(1, pid, b.nonce, postMsg{seq: a.nextSeq(), stat: postChunk}, fd))
	m, ok, err := b.take(0, pid, bySeq(1), time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	closeFD(m.fd)
	require.NoError(t, b.close())

	s, err := unix.Socket(unix.AF_UNIX, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	require.NoError(t, err)
	defer unix.Close(s)
	require.NoError(t, unix.Bind(s, &unix.SockaddrUnix{Name: postName(pid, b.nonce)}))
	for range 2 {
		err = a.send(1, pid, b.nonce, postMsg{seq: a.nextSeq(), stat: postChunk}, fd)
		assert.ErrorIs(t, err, errs.ErrNotSupported)
		assert.ErrorContains(t, err, "PE 1")
	}
	oob := make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := unix.Recvmsg(s, make([]byte, postHdr), oob, unix.MSG_DONTWAIT)
	if err == nil {
		if cms, perr := unix.ParseSocketControlMessage(oob[:oobn]); perr == nil && len(cms) > 0 {
			if fds, perr := unix.ParseUnixRights(&cms[0]); perr == nil {
				for _, fd := range fds {
					_ = unix.Close(fd)
				}
			}
		}
	}
	assert.Equal(t, unix.EAGAIN, err, "the socket now bound at PE 1's name received nothing")
}

// A message whose descriptor does not fit in the receiver's descriptor
// table (RLIMIT_NOFILE reached: the kernel truncates it, MSG_CTRUNC) is
// found without its descriptor, so that its taker fails at once instead
// of waiting for a message that will never come.
func TestPostTableFull(t *testing.T) {
	a, b := twoPosts(t)
	pid := os.Getpid()
	fd := memfd(t)
	require.NoError(t, a.send(1, pid, b.nonce, postMsg{seq: a.nextSeq(), stat: postChunk}, fd)) // connects a's socket now
	m, ok, err := b.take(0, pid, bySeq(1), time.Second)
	require.NoError(t, err)
	require.True(t, ok)
	closeFD(m.fd)

	var lim unix.Rlimit
	require.NoError(t, unix.Getrlimit(unix.RLIMIT_NOFILE, &lim))
	low := lim
	low.Cur = min(lim.Cur, 4096)
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &low))
	var fill []int
	for {
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			break
		}
		fill = append(fill, d)
	}
	err = a.send(1, pid, b.nonce, postMsg{seq: a.nextSeq(), off: 2 << 20, size: 2 << 20, stat: postChunk}, fd)
	if err == nil {
		m, ok, err = b.take(0, pid, bySeq(2), time.Second)
	}
	for _, d := range fill {
		_ = unix.Close(d)
	}
	require.NoError(t, unix.Setrlimit(unix.RLIMIT_NOFILE, &lim))
	require.NoError(t, err)
	require.True(t, ok, "the message came, without its descriptor")
	assert.Equal(t, -1, m.fd)
	assert.True(t, m.lost)
}
