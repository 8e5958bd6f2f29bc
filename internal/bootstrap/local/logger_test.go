package local

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
)

// TestAbortToLogger: after SetLogger, Abort's message is a record of the
// program's logger, with the PE and the exit code, and the job's stderr
// gets nothing; other PEs of the job keep their stderr.
func TestAbortToLogger(t *testing.T) {
	var stderr syncBuffer
	var logged bytes.Buffer
	bs, err := NewJob(2, Stderr(&stderr))
	require.NoError(t, err)
	bs[0].(bootstrap.Logged).SetLogger(slog.New(slog.NewTextHandler(&logged, nil)))
	for r, b := range bs {
		done := make(chan struct{})
		go func() {
			defer close(done)
			b.Abort(4, "stop")
		}()
		<-done
		if r == 0 {
			assert.Empty(t, stderr.String(), "PE 0's message went to its logger")
		}
	}
	assert.Contains(t, logged.String(), `level=ERROR msg=stop pe=0 backend=bootstrap code=4`)
	assert.Equal(t, "goshmem: PE 1: stop\n", stderr.String(), "PE 1 has no logger")
}
