package tcpboot

import (
	"crypto/rand"
	"encoding/base64"
	"io"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/goshmem/goshmem/internal/errs"
)

// secretLen is the unique ID's random secret.
const secretLen = 32

// uidPrefix starts a unique ID's text form (the version is in it).
const uidPrefix = "goshmem-uid-v1:"

// UniqueID names one job's rendezvous: the address of its server and the
// job's random secret. Its text form carries both; whoever holds it can
// join the job, so carry it only over the program's own trusted channel.
type UniqueID struct {
	Addr   string
	Secret [secretLen]byte
}

// IsZero reports whether u was never made by NewUniqueID or parsed.
func (u UniqueID) IsZero() bool { return u.Addr == "" }

// MarshalText is "goshmem-uid-v1:" and the unpadded URL-safe base64 of
// the secret followed by the address.
func (u UniqueID) MarshalText() ([]byte, error) {
	if u.IsZero() {
		return nil, errs.New(errs.ErrInvalidArgument, -1, "UniqueID.MarshalText", "the zero UniqueID (make one with NewUniqueID)")
	}
	raw := append(u.Secret[:], u.Addr...)
	return []byte(uidPrefix + base64.RawURLEncoding.EncodeToString(raw)), nil
}

// UnmarshalText parses what MarshalText wrote.
func (u *UniqueID) UnmarshalText(text []byte) error {
	op := "UniqueID.UnmarshalText"
	s := strings.TrimSpace(string(text))
	if !strings.HasPrefix(s, uidPrefix) {
		return errs.New(errs.ErrInvalidArgument, -1, op, "%q does not start with %q: not a goshmem unique ID (or one of another version)", clip(s), uidPrefix)
	}
	raw, err := base64.RawURLEncoding.DecodeString(s[len(uidPrefix):])
	if err != nil {
		return errs.New(errs.ErrInvalidArgument, -1, op, "the unique ID's body is not base64url (%v): cut or altered in transit?", err)
	}
	if len(raw) <= secretLen {
		return errs.New(errs.ErrInvalidArgument, -1, op, "the unique ID is %d bytes, want more than %d: cut in transit?", len(raw), secretLen)
	}
	addr := string(raw[secretLen:])
	if err := checkAddr(addr, false); err != nil {
		return errs.Wrap(err, -1, op, "the unique ID's address")
	}
	var v UniqueID
	copy(v.Secret[:], raw[:secretLen])
	v.Addr = addr
	*u = v
	return nil
}

// String is the address only: the secret stays out of logs.
func (u UniqueID) String() string {
	if u.IsZero() {
		return "goshmem unique ID (zero)"
	}
	return "goshmem unique ID for " + u.Addr
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// hostedServers are the rendezvous this process serves (made by
// NewUniqueID), so that its own PE waits for them at Finalize.
var hostedServers sync.Map // UniqueID -> *server

func hosted(addr string, key []byte) *server {
	var u UniqueID
	u.Addr = addr
	if len(key) != secretLen {
		return nil
	}
	copy(u.Secret[:], key)
	if s, ok := hostedServers.Load(u); ok {
		return s.(*server)
	}
	return nil
}

// NewUniqueID opens a rendezvous in this process and returns its ID. It
// listens at addr (host:port; port 0 picks a free one) or, when addr is
// "", at GOSHMEM_BOOTSTRAP_ADDR when set, else on port 0 of DefaultHost.
// The server runs on goroutines of this process until every PE of the job
// has finalized: this process must outlive the job's bootstrap (it is
// usually one of the PEs).
func NewUniqueID(addr string, stderr io.Writer) (UniqueID, error) {
	op := "NewUniqueID"
	if addr == "" {
		addr = strings.TrimSpace(os.Getenv("GOSHMEM_BOOTSTRAP_ADDR"))
	}
	if addr == "" {
		addr = net.JoinHostPort(DefaultHost(), "0")
	}
	if err := checkAddr(addr, true); err != nil {
		return UniqueID{}, errs.Wrap(err, -1, op, "listen address")
	}
	host, _, _ := net.SplitHostPort(addr)
	if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
		return UniqueID{}, errs.Hint(errs.ErrInvalidArgument, "name one address of this machine that every PE can reach",
			-1, op, "listen address %q is a wildcard: the unique ID must carry an address other PEs can connect to", addr)
	}
	var u UniqueID
	if _, err := rand.Read(u.Secret[:]); err != nil {
		return UniqueID{}, errs.Wrap(err, -1, op, "random secret")
	}
	if stderr == nil {
		stderr = os.Stderr
	}
	s, err := listen(addr, u.Secret[:], stderr)
	if err != nil {
		return UniqueID{}, errs.Hint(errs.ErrInvalidArgument, "choose the address with GOSHMEM_BOOTSTRAP_ADDR (host:port, port 0 for any free one)",
			-1, op, "cannot listen at %s: %v", addr, err)
	}
	// The ID carries the address asked for, with the port the listener got
	// (a host name stays a name: other PEs may resolve it differently).
	_, port, _ := net.SplitHostPort(s.Addr())
	u.Addr = net.JoinHostPort(host, port)
	hostedServers.Store(u, s)
	go func() {
		<-s.done
		hostedServers.Delete(u)
	}()
	return u, nil
}

// DefaultHost is the address NewUniqueID listens on when not told: the
// source address of this machine's default route, else the first
// non-loopback address of an interface that is up, else 127.0.0.1 (a job
// on this machine only).
func DefaultHost() string {
	// A UDP "connection" sends nothing; it only picks the route.
	if c, err := net.Dial("udp", "192.0.2.1:9"); err == nil {
		ip := c.LocalAddr().(*net.UDPAddr).IP
		_ = c.Close()
		if !ip.IsLoopback() && !ip.IsUnspecified() {
			return ip.String()
		}
	}
	ifs, _ := net.Interfaces()
	for _, v6 := range []bool{false, true} {
		for _, ifc := range ifs {
			if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
				continue
			}
			addrs, _ := ifc.Addrs()
			for _, a := range addrs {
				ipn, ok := a.(*net.IPNet)
				if !ok || !ipn.IP.IsGlobalUnicast() || (ipn.IP.To4() == nil) != v6 {
					continue
				}
				return ipn.IP.String()
			}
		}
	}
	return "127.0.0.1"
}

// UIDConfig is the Config of a PE joining the job of u.
func UIDConfig(u UniqueID, rank, npes int) (Config, error) {
	if u.IsZero() {
		return Config{}, errs.Hint(errs.ErrInvalidArgument, "make the ID with shmem.NewUniqueID on one process and pass its text to every PE",
			rank, "WithUniqueID", "the zero UniqueID")
	}
	cfg := Config{Rank: rank, Size: npes, Addr: u.Addr, Key: append([]byte(nil), u.Secret[:]...),
		Source: "unique ID", LocalRank: -1, LocalSize: -1, Timeout: DefaultTimeout}
	if v := strings.TrimSpace(os.Getenv("GOSHMEM_BOOTSTRAP_TIMEOUT")); v != "" {
		c, err := parseTimeout(v)
		if err != nil {
			return cfg, errs.Wrap(err, rank, "WithUniqueID", "GOSHMEM_BOOTSTRAP_TIMEOUT")
		}
		cfg.Timeout = c
	}
	return cfg, nil
}
