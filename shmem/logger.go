package shmem

import "log/slog"

// WithLogger sends everything goshmem reports to l: the GOSHMEM_INFO lines,
// warnings (a GOSHMEM_ variable that is not one of goshmem's), the GPU
// proxy's statistics, GlobalExit's message, and the bootstrap's messages
// (an abort, a connection the tcp rendezvous refused). Records carry
// attributes: pe, and where they apply backend, setting, value, source
// and code. Without this option those reports are text lines on stderr,
// as "goshmem: info: ..." and "goshmem: warning: ...". l is used from
// Init to Finalize. Before Init nothing has l: the rendezvous of
// NewUniqueID reports refused connections on stderr.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger = l } }
