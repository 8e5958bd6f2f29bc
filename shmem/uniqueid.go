package shmem

import (
	"os"

	tcpboot "github.com/goshmem/goshmem/internal/bootstrap/tcp"
)

// UniqueID names one job's rendezvous, for programs that start their PEs
// themselves (a Go service, a test, a framework with its own launcher):
// one process calls NewUniqueID, carries the ID to the others over the
// program's own channel (it marshals to and from text), and every process
// calls Init(WithUniqueID(id, rank, npes)).
//
// The ID holds the rendezvous address and a random secret: every
// connection to the rendezvous proves knowledge of the secret (an
// HMAC-SHA256 challenge both ways; the secret itself never crosses the
// wire), so only holders of the ID can join. Carry it over a trusted
// channel. The zero UniqueID is invalid.
//
// Ref: NVSHMEM nvshmemx_get_uniqueid / nvshmemx_set_attr_uniqueid_args.
type UniqueID struct {
	id tcpboot.UniqueID
}

// UniqueIDOption configures NewUniqueID.
type UniqueIDOption func(*uidConfig)

type uidConfig struct{ addr string }

// WithListenAddr makes NewUniqueID listen at addr (host:port, port 0 for
// any free one) instead of GOSHMEM_BOOTSTRAP_ADDR or the default route's
// address. The host must be one the other PEs can reach (no wildcard).
func WithListenAddr(addr string) UniqueIDOption { return func(c *uidConfig) { c.addr = addr } }

// NewUniqueID opens a rendezvous for a new job in this process and returns
// its ID. It listens on exactly one address: WithListenAddr's, else
// GOSHMEM_BOOTSTRAP_ADDR (host:port; port 0 picks a free port), else a free
// port on the source address of this machine's default route (the first
// non-loopback address of an interface that is up when there is none, and
// 127.0.0.1 when there is no such interface either: a job on this machine
// only). The rendezvous is served by goroutines of this process until every
// PE of the job has finalized, so this process must outlive the job's Init
// and Finalize; it is usually one of the PEs (any rank).
func NewUniqueID(opts ...UniqueIDOption) (UniqueID, error) {
	var c uidConfig
	for _, o := range opts {
		o(&c)
	}
	id, err := tcpboot.NewUniqueID(c.addr, os.Stderr)
	if err != nil {
		return UniqueID{}, err
	}
	return UniqueID{id: id}, nil
}

// MarshalText encodes the ID (address and secret) as one line of
// URL-safe text, "goshmem-uid-v1:..." (encoding.TextMarshaler).
func (u UniqueID) MarshalText() ([]byte, error) { return u.id.MarshalText() }

// UnmarshalText decodes what MarshalText wrote (encoding.TextUnmarshaler);
// on error u is unchanged.
func (u *UniqueID) UnmarshalText(text []byte) error { return u.id.UnmarshalText(text) }

// String names the rendezvous address only (the secret stays out of logs).
func (u UniqueID) String() string { return u.id.String() }

// WithUniqueID makes Init join the job of id as PE rank of npes, instead of
// choosing a bootstrap from the environment. Every PE of the job passes
// the same id and npes and its own rank in [0, npes). Bad input (two PEs
// with one rank, a rank outside [0, npes), PEs that disagree on npes, a PE
// that never comes or dies meanwhile, an unreachable rendezvous) fails
// Init on every PE within GOSHMEM_BOOTSTRAP_TIMEOUT (default 60 s).
func WithUniqueID(id UniqueID, rank, npes int) Option {
	return func(c *config) { c.uid = &uidJoin{id: id.id, rank: rank, npes: npes} }
}

type uidJoin struct {
	id         tcpboot.UniqueID
	rank, npes int
}
