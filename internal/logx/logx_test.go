package logx

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Capture is a slog.Handler that keeps every record.
type capture struct {
	mu      sync.Mutex
	records []slog.Record
}

func (c *capture) Enabled(context.Context, slog.Level) bool { return true }
func (c *capture) Handle(_ context.Context, r slog.Record) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.records = append(c.records, r.Clone())
	return nil
}
func (c *capture) WithAttrs([]slog.Attr) slog.Handler { return c }
func (c *capture) WithGroup(string) slog.Handler      { return c }

func TestText(t *testing.T) {
	var b bytes.Buffer
	l := New(nil, &b)
	l.Info("goshmem: info: PE 0: x\n", "x", PE(0))
	l.Warn("goshmem: warning: y\n", "y", slog.String("setting", "GOSHMEM_Y"))
	assert.Equal(t, "goshmem: info: PE 0: x\ngoshmem: warning: y\n", b.String(), "the lines, byte for byte")
	assert.Nil(t, l.Slog())
	assert.Nil(t, (*Logger)(nil).Slog())
}

func TestSlog(t *testing.T) {
	var c capture
	var b bytes.Buffer
	l := New(slog.New(&c), &b)
	l.Info("goshmem: info: PE 3: x\n", "x", PE(3), slog.String("backend", "shm"))
	l.Warn("goshmem: warning: y\n", "y", slog.String("setting", "GOSHMEM_Y"))
	assert.Empty(t, b.String(), "nothing written with a *slog.Logger")
	require.Len(t, c.records, 2)
	assert.Equal(t, slog.LevelInfo, c.records[0].Level)
	assert.Equal(t, "x", c.records[0].Message)
	attrs := map[string]string{}
	c.records[0].Attrs(func(a slog.Attr) bool { attrs[a.Key] = a.Value.String(); return true })
	assert.Equal(t, map[string]string{"pe": "3", "backend": "shm"}, attrs)
	assert.Equal(t, slog.LevelWarn, c.records[1].Level)
}

// TestSwitch: text lines until Set, records after, lines again after
// Set(nil).
func TestSwitch(t *testing.T) {
	var b bytes.Buffer
	c := &capture{}
	s := NewSwitch(&b)
	s.Log(slog.LevelError, "goshmem: PE 0: a\n", "a", PE(0))
	s.Set(slog.New(c))
	s.Log(slog.LevelError, "goshmem: PE 0: b\n", "b", PE(0))
	s.Set(nil)
	s.Log(slog.LevelError, "goshmem: PE 0: c\n", "c", PE(0))
	assert.Equal(t, "goshmem: PE 0: a\ngoshmem: PE 0: c\n", b.String())
	require.Len(t, c.records, 1)
	assert.Equal(t, "b", c.records[0].Message)
	assert.Equal(t, slog.LevelError, c.records[0].Level)
}
