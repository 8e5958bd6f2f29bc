package fabric

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/errs"
)

// Candidate is one entry fi_getinfo offers for an endpoint: for tcp and
// sockets one per address of each interface (Ref: fi_getinfo(3) src_addr,
// domain_attr->name).
type Candidate struct {
	// Domain is the entry's domain name: the interface for tcp and
	// sockets ("eth0"), the device for verbs or cxi ("mlx5_0", "cxi0").
	Domain string
	// Addr is the source IP address the endpoint would bind, with the
	// IPv6 scope id as its zone ("fe80::1%4"); invalid for providers that
	// address otherwise (shm, cxi).
	Addr netip.Addr
}

// Interface is one network interface of this host (net.Interfaces), for
// Select.Iface and for messages.
type Interface struct {
	Name  string
	Addrs []netip.Addr
}

// Select says which of the provider's addresses an endpoint binds. The
// zero value takes the best address of any interface, loopback included.
type Select struct {
	// Iface keeps only addresses of this interface (or entries of this
	// domain name); "" keeps all.
	Iface string
	// Remote says some peer is on another node: loopback and IPv6
	// link-local addresses (whose scope id means nothing on another
	// host) cannot be reached, so they are never bound.
	Remote bool
}

// Address classes, best first; unusable is never chosen.
const (
	classOther    = iota // not an IP address: the provider's own addressing
	classIPv4            // IPv4 off loopback and link-local
	classIPv6            // IPv6 off loopback and link-local
	classIPv4Link        // 169.254/16
	classLoopback        // 127/8, ::1: one node only
	classIPv6Link        // fe80::/10 with a scope id: one node only
	unusable
)

// classify ranks a candidate address and says why it is unusable.
func classify(a netip.Addr, s Select) (int, string) {
	if a.Is4In6() {
		a = a.Unmap()
	}
	switch {
	case !a.IsValid():
		return classOther, ""
	case a.IsLoopback():
		if s.Remote {
			return unusable, "loopback, and some peer is on another node"
		}
		return classLoopback, ""
	case a.Is6() && a.IsLinkLocalUnicast():
		if a.Zone() == "" {
			return unusable, "IPv6 link-local without a scope id"
		}
		if s.Remote {
			return unusable, "IPv6 link-local, and some peer is on another node (a scope id is local to a host)"
		}
		return classIPv6Link, ""
	case a.IsLinkLocalUnicast():
		return classIPv4Link, ""
	case a.Is4():
		return classIPv4, ""
	}
	return classIPv6, ""
}

// Pick returns the index of the candidate an endpoint should bind: of
// those on s.Iface (all when it is ""), the first of the best class:
// IPv4 off loopback, then other IPv6, IPv4 link-local, loopback (only
// when no peer is Remote) and scoped IPv6 link-local (likewise); an
// unscoped IPv6 link-local address is never chosen. Within a class
// libfabric's order stands. A candidate without an IP address (shm, cxi)
// is as good as an IPv4 one. ifaces are this host's interfaces, for
// s.Iface and the errors, which match errs.ErrInvalidArgument for a bad
// s.Iface and errs.ErrNotSupported when no address is usable.
func Pick(cands []Candidate, ifaces []Interface, s Select) (int, error) {
	var on func(Candidate) bool
	if s.Iface != "" {
		i := slices.IndexFunc(ifaces, func(f Interface) bool { return f.Name == s.Iface })
		if i < 0 && !slices.ContainsFunc(cands, func(c Candidate) bool { return c.Domain == s.Iface }) {
			return -1, errs.Mark(errors.Newf("interface %q does not exist (this host has %s)",
				s.Iface, listIfaces(ifaces)), errs.ErrInvalidArgument)
		}
		var addrs []netip.Addr
		if i >= 0 {
			addrs = ifaces[i].Addrs
		}
		on = func(c Candidate) bool {
			return c.Domain == s.Iface || (c.Addr.IsValid() && slices.Contains(addrs, c.Addr.WithZone("")))
		}
	}
	best, bestClass := -1, unusable
	var why []string
	for i, c := range cands {
		if on != nil && !on(c) {
			continue
		}
		cl, reason := classify(c.Addr, s)
		if cl == unusable {
			why = append(why, fmt.Sprintf("%s on %s: %s", c.Addr, c.Domain, reason))
			continue
		}
		if cl < bestClass {
			best, bestClass = i, cl
		}
	}
	if best >= 0 {
		return best, nil
	}
	offered := "the provider offers " + listCands(cands)
	if len(why) > 0 {
		offered = strings.Join(distinct(why), "; ")
	}
	if s.Iface != "" {
		return -1, errs.Mark(errors.Newf("interface %q has no address the peers can reach (%s; this host has %s)",
			s.Iface, offered, listIfaces(ifaces)), errs.ErrInvalidArgument)
	}
	return -1, errs.Mark(errors.Newf("no address the peers can reach (%s; this host has %s)",
		offered, listIfaces(ifaces)), errs.ErrNotSupported)
}

// distinct keeps the first of each string (libfabric lists an address
// once per set of attributes it offers there).
func distinct(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// sockaddrAddr reads the IP address of a Linux struct sockaddr_in or
// sockaddr_in6 (the IPv6 scope id as its zone); invalid for anything else.
func sockaddrAddr(b []byte) netip.Addr {
	if len(b) < 2 {
		return netip.Addr{}
	}
	switch binary.NativeEndian.Uint16(b) { // sa_family
	case unix.AF_INET:
		if len(b) >= 8 { // family, port, sin_addr
			return netip.AddrFrom4([4]byte(b[4:8]))
		}
	case unix.AF_INET6:
		if len(b) >= 28 { // family, port, flowinfo, sin6_addr, sin6_scope_id
			a := netip.AddrFrom16([16]byte(b[8:24]))
			if id := binary.NativeEndian.Uint32(b[24:28]); id != 0 {
				a = a.WithZone(strconv.FormatUint(uint64(id), 10))
			}
			return a
		}
	}
	return netip.Addr{}
}

// listIfaces writes "lo (127.0.0.1, ::1), eth0 (192.0.2.2), ifb0 (no address)".
func listIfaces(ifaces []Interface) string {
	if len(ifaces) == 0 {
		return "no interfaces"
	}
	parts := make([]string, len(ifaces))
	for i, f := range ifaces {
		if len(f.Addrs) == 0 {
			parts[i] = f.Name + " (no address)"
			continue
		}
		as := make([]string, len(f.Addrs))
		for j, a := range f.Addrs {
			as[j] = a.String()
		}
		parts[i] = f.Name + " (" + strings.Join(as, ", ") + ")"
	}
	return "interfaces " + strings.Join(parts, ", ")
}

// listCands writes each distinct candidate once: "192.0.2.2 on eth0, ...".
func listCands(cands []Candidate) string {
	if len(cands) == 0 {
		return "no address"
	}
	var parts []string
	for _, c := range cands {
		p := c.Domain
		if c.Addr.IsValid() {
			p = c.Addr.String() + " on " + c.Domain
		}
		if !slices.Contains(parts, p) {
			parts = append(parts, p)
		}
	}
	return strings.Join(parts, ", ")
}
