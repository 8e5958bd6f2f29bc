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
