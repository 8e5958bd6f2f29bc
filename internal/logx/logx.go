// Package logx is the one path of goshmem's diagnostics (GOSHMEM_INFO
// lines, warnings, the proxy's statistics): to the *slog.Logger a program
// passes to shmem.Init (shmem.WithLogger), as records with attributes, or
// without one as text lines on stderr, one write per line.
package logx

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
)

// Logger sends each message to a *slog.Logger or writes its text line.
// The nil *Logger writes to os.Stderr. A Logger belongs to one runtime
// (made at Init, dropped at Finalize); it holds no global state.
type Logger struct {
	sl *slog.Logger
	w  io.Writer
}

// New returns a Logger that sends records to sl, or, when sl is nil,
// writes text lines to w (os.Stderr when w is nil).
func New(sl *slog.Logger, w io.Writer) *Logger {
	if sl == nil && w == nil {
		w = os.Stderr
	}
	return &Logger{sl: sl, w: w}
}

// Slog is the *slog.Logger records go to (nil: text lines).
func (l *Logger) Slog() *slog.Logger {
	if l == nil {
		return nil
	}
	return l.sl
}

// Log records one message: line, the text written without a
// *slog.Logger ("goshmem: info: ...\n", byte for byte), or msg with
// attrs at level.
func (l *Logger) Log(level slog.Level, line, msg string, attrs ...slog.Attr) {
	switch {
	case l == nil:
		_, _ = io.WriteString(os.Stderr, line)
	case l.sl != nil:
		l.sl.LogAttrs(context.Background(), level, msg, attrs...)
	default:
		_, _ = io.WriteString(l.w, line)
	}
}

// Info is Log at slog.LevelInfo.
func (l *Logger) Info(line, msg string, attrs ...slog.Attr) {
	l.Log(slog.LevelInfo, line, msg, attrs...)
}

// Warn is Log at slog.LevelWarn.
func (l *Logger) Warn(line, msg string, attrs ...slog.Attr) {
	l.Log(slog.LevelWarn, line, msg, attrs...)
}

// PE is the attribute naming the PE a message is about.
func PE(pe int) slog.Attr { return slog.Int("pe", pe) }

// Switch is a Logger made before the program's *slog.Logger is known (a
// bootstrap exists before the runtime): text lines on w until Set gives
// it a *slog.Logger. It is safe for concurrent use. The zero Switch
// writes to os.Stderr.
type Switch struct {
	w  io.Writer
	sl atomic.Pointer[slog.Logger]
}

// NewSwitch returns a Switch writing text lines to w (os.Stderr when nil).
func NewSwitch(w io.Writer) *Switch { return &Switch{w: w} }

// Set sends the later messages to sl as records (nil: text lines again).
func (s *Switch) Set(sl *slog.Logger) { s.sl.Store(sl) }

// Log is Logger.Log through the *slog.Logger of Set, or as a text line.
func (s *Switch) Log(level slog.Level, line, msg string, attrs ...slog.Attr) {
	New(s.sl.Load(), s.w).Log(level, line, msg, attrs...)
}
