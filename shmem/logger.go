package shmem

import "log/slog"

// WithLogger sends everything goshmem reports to l: the GOSHMEM_INFO lines,
// warnings (a GOSHMEM_ variable that is not one of goshmem's), the GPU
// proxy's statistics and GlobalExit's message. Records carry attributes:
// pe, and where they apply backend, setting, value and source. Without
// this option those reports are text lines on stderr, as "goshmem: info:
// ..." and "goshmem: warning: ...". l is used from Init to Finalize.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }
