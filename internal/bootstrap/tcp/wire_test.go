package tcpboot

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWireRoundTrip(t *testing.T) {
	j := joinInfo{timeoutMs: 1234, pid: 42, host: "h", nodeKey: "k|x"}
	got, err := decodeJoin(j.encode())
	require.NoError(t, err)
	assert.Equal(t, j, got)

	c := coll{seq: 7, op: opBcast, root: -3, n: 5, data: []byte("abcde")}
	gc, err := decodeColl(c.encode())
	require.NoError(t, err)
	assert.Equal(t, c, gc)

	r := result{seq: 9, ok: true, data: []byte{1, 2}}
	gr, err := decodeResult(r.encode())
	require.NoError(t, err)
	assert.Equal(t, r, gr)

	a := abortMsg{rank: 3, code: -1, msg: "bye"}
	ga, err := decodeAbort(a.encode())
	require.NoError(t, err)
	assert.Equal(t, a, ga)

	var buf bytes.Buffer
	require.NoError(t, writeFrame(&buf, frameColl, []byte("xyz")))
	typ, p, err := readFrame(&buf, 16)
	require.NoError(t, err)
	assert.Equal(t, frameColl, typ)
	assert.Equal(t, []byte("xyz"), p)
	require.NoError(t, writeFrame(&buf, frameColl, make([]byte, 17)))
	_, _, err = readFrame(&buf, 16)
	assert.ErrorContains(t, err, "exceeds the limit of 16")
}

// FuzzDecode: no payload makes a decoder panic or over-read, and whatever
// decodes re-encodes to the same bytes.
func FuzzDecode(f *testing.F) {
	f.Add(joinInfo{timeoutMs: 1, pid: 2, host: "a", nodeKey: "b"}.encode())
	f.Add(coll{seq: 1, op: opAllgather, n: 1, data: []byte{9}}.encode())
	f.Add(abortMsg{rank: 1, code: 2, msg: "m"}.encode())
	f.Add([]byte{0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, p []byte) {
		if j, err := decodeJoin(p); err == nil {
			assert.Equal(t, p, j.encode())
		}
		if a, err := decodeAbort(p); err == nil {
			assert.Equal(t, p, a.encode())
		}
		if c, err := decodeColl(p); err == nil {
			assert.Equal(t, p, c.encode())
		}
		_, _ = decodeResult(p)
		_, _, _ = readFrame(bytes.NewReader(p), 64)
	})
}
