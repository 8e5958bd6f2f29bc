package shmem_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// records is a slog.Handler that keeps every record.
type records struct {
	mu   sync.Mutex
	list []slog.Record
}

func (h *records) Enabled(context.Context, slog.Level) bool { return true }
func (h *records) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.list = append(h.list, r.Clone())
	return nil
}
func (h *records) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *records) WithGroup(string) slog.Handler      { return h }

// attrs is r's attributes as strings.
func attrs(r slog.Record) map[string]string {
	m := map[string]string{}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	return m
}

// stderrOf runs fn with os.Stderr redirected to a pipe and returns what
// fn wrote there.
func stderrOf(t *testing.T, fn func()) string {
	t.Helper()
	pr, pw, err := os.Pipe()
	require.NoError(t, err)
	old := os.Stderr
	os.Stderr = pw
	var out strings.Builder
	done := make(chan struct{})
	go func() { _, _ = io.Copy(&out, pr); close(done) }()
	defer func() {
		os.Stderr = old
		_ = pw.Close()
		<-done
		_ = pr.Close()
	}()
	fn()
	os.Stderr = old
	_ = pw.Close()
	<-done
	return out.String()
}

// misspelled is GOSHMEM_SYMMETRIC_SIZE misspelled (spelled in two parts
// so that internal/env's scan of the repository does not flag it).
const misspelled = "GOSHMEM_" + "SYMETRIC_SIZE"

// TestWithLogger: with WithLogger, GOSHMEM_INFO's lines and the warning
// about a misspelled GOSHMEM_ variable arrive as records with their
// attributes, and nothing is written to stderr.
func TestWithLogger(t *testing.T) {
	t.Setenv("GOSHMEM_INFO", "1")
	t.Setenv(misspelled, "1M")
	var h records
	out := stderrOf(t, func() {
		require.NoError(t, shmem.Init(shmem.WithSymmetricSize(testHeap), shmem.WithLogger(slog.New(&h))))
		require.NoError(t, shmem.Finalize())
	})
	assert.Empty(t, out, "nothing on stderr")
	var warned, transport, setting, job bool
	for _, r := range h.list {
		a := attrs(r)
		switch {
		case r.Level == slog.LevelWarn:
			warned = true
			assert.Equal(t, "not a goshmem variable", r.Message)
			assert.Equal(t, "GOSHMEM_SYMETRIC_SIZE", a["setting"])
			assert.Equal(t, "GOSHMEM_SYMMETRIC_SIZE", a["closest"])
		case a["setting"] == "GOSHMEM_INFO":
			setting = true
			assert.Equal(t, "1", a["value"])
			assert.Equal(t, "environment", a["source"])
			assert.Equal(t, "0", a["pe"])
		case strings.Contains(r.Message, "transport shm"):
			transport = true
			assert.Equal(t, "0", a["pe"])
			assert.NotEmpty(t, a["backend"], "the backend that reports")
		case strings.Contains(r.Message, "1 PEs, bootstrap"):
			job = true
			assert.Equal(t, "1", a["npes"])
		}
		assert.False(t, strings.HasPrefix(r.Message, "goshmem:"), "a record's message has no text-line prefix: %q", r.Message)
		assert.NotContains(t, r.Message, "\n")
	}
	assert.True(t, warned, "the warning about GOSHMEM_SYMETRIC_SIZE")
	assert.True(t, setting, "the settings")
	assert.True(t, transport, "the transport line")
	assert.True(t, job, "the job line")
}

// TestInfoLinesOnStderr: without WithLogger the same reports are text
// lines on stderr.
func TestInfoLinesOnStderr(t *testing.T) {
	t.Setenv("GOSHMEM_INFO", "1")
	t.Setenv(misspelled, "1M")
	out := stderrOf(t, func() {
		require.NoError(t, shmem.Init(shmem.WithSymmetricSize(testHeap)))
		require.NoError(t, shmem.Finalize())
	})
	assert.Contains(t, out, "goshmem: warning: GOSHMEM_SYMETRIC_SIZE is not a goshmem variable; did you mean GOSHMEM_SYMMETRIC_SIZE?\n")
	assert.Regexp(t, `(?m)^goshmem: info: GOSHMEM_INFO +     = 1 +\(environment\) `, out)
	assert.Regexp(t, `(?m)^goshmem: info: 1 PEs, bootstrap `, out)
	for _, l := range strings.SplitAfter(out, "\n") {
		if l != "" {
			assert.Regexp(t, `^goshmem: (info|warning): .*\n$`, l)
		}
	}
}
