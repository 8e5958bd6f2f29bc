package fabric

import (
	"encoding/binary"
	"net/netip"
	"strings"
	"testing"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/errs"
)

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

// tcpList is what tcp;ofi_rxm's fi_getinfo listed on a host with eth0
// (IPv4, a ULA and a link-local IPv6 address) and lo, in its order.
var (
	tcpList = []Candidate{
		{"eth0", ip("fe80::fc:ff:fe00:1%4")},
		{"eth0", ip("fd00::2")},
		{"eth0", ip("192.0.2.2")},
		{"lo", ip("127.0.0.1")},
		{"lo", ip("::1")},
	}
	hostIfaces = []Interface{
		{"lo", []netip.Addr{ip("127.0.0.1"), ip("::1")}},
		{"eth0", []netip.Addr{ip("192.0.2.2"), ip("fd00::2"), ip("fe80::fc:ff:fe00:1")}},
		{"ifb0", nil},
	}
)

func TestPick(t *testing.T) {
	tests := []struct {
		name   string
		cands  []Candidate
		ifaces []Interface
		sel    Select
		want   int // index into cands; -1: an error
		errIs  error
		errHas []string
	}{
		{name: "IPv4 before the link-local and ULA addresses listed first", cands: tcpList, ifaces: hostIfaces, want: 2},
		{name: "IPv4 across nodes too", cands: tcpList, ifaces: hostIfaces, sel: Select{Remote: true}, want: 2},
		{name: "IPv6 ULA when there is no IPv4 address", cands: []Candidate{
			{"eth0", ip("fe80::1%2")}, {"lo", ip("127.0.0.1")}, {"eth0", ip("2001:db8::5")},
		}, sel: Select{Remote: true}, want: 2},
		{name: "unscoped link-local never, loopback on one node", cands: []Candidate{
			{"eth0", ip("fe80::1")}, {"lo", ip("127.0.0.1")},
		}, want: 1},
		{name: "scoped link-local on one node after loopback", cands: []Candidate{
			{"eth0", ip("fe80::1%2")}, {"lo", ip("::1")},
		}, want: 1},
		{name: "scoped link-local on one node when alone", cands: []Candidate{
			{"eth0", ip("fe80::1%2")}, {"eth0", ip("fe80::1")},
		}, want: 0},
		{name: "IPv4 link-local before loopback", cands: []Candidate{
			{"lo", ip("127.0.0.1")}, {"eth1", ip("169.254.3.4")},
		}, want: 1},
		{name: "libfabric's order within a class", cands: []Candidate{
			{"ib0", ip("10.1.0.7")}, {"eth0", ip("192.0.2.2")},
		}, want: 0},
		{name: "IPv4-mapped counts as IPv4", cands: []Candidate{
			{"eth0", ip("2001:db8::5")}, {"eth0", ip("::ffff:192.0.2.2")},
		}, sel: Select{Remote: true}, want: 1},
		{name: "not IP (cxi, shm): the first", cands: []Candidate{{"cxi0", netip.Addr{}}, {"cxi1", netip.Addr{}}}, want: 0},

		{name: "iface by address", cands: tcpList, ifaces: hostIfaces, sel: Select{Iface: "lo"}, want: 3},
		{name: "iface by domain name", cands: []Candidate{{"cxi0", netip.Addr{}}, {"cxi1", netip.Addr{}}},
			sel: Select{Iface: "cxi1"}, want: 1},
		{name: "iface whose addresses libfabric names by another domain (verbs on ib0)", cands: []Candidate{
			{"mlx5_0", ip("192.0.2.2")}, {"mlx5_1", ip("10.1.0.7")},
		}, ifaces: []Interface{{"eth0", []netip.Addr{ip("192.0.2.2")}}, {"ib0", []netip.Addr{ip("10.1.0.7")}}},
			sel: Select{Iface: "ib0"}, want: 1},
		{name: "iface eth0: its IPv4 address of the three", cands: tcpList, ifaces: hostIfaces,
			sel: Select{Iface: "eth0"}, want: 2},

		{name: "iface does not exist", cands: tcpList, ifaces: hostIfaces, sel: Select{Iface: "eth9"}, want: -1,
			errIs: errs.ErrInvalidArgument, errHas: []string{`interface "eth9" does not exist`, "lo (127.0.0.1, ::1)", "eth0 (192.0.2.2, fd00::2, fe80::fc:ff:fe00:1)", "ifb0 (no address)"}},
		{name: "iface without an address", cands: tcpList, ifaces: hostIfaces, sel: Select{Iface: "ifb0"}, want: -1,
			errIs: errs.ErrInvalidArgument, errHas: []string{`interface "ifb0" has no address the peers can reach`, "the provider offers fe80::fc:ff:fe00:1%4 on eth0, fd00::2 on eth0"}},
		{name: "iface loopback across nodes", cands: tcpList, ifaces: hostIfaces, sel: Select{Iface: "lo", Remote: true}, want: -1,
			errIs: errs.ErrInvalidArgument, errHas: []string{"127.0.0.1 on lo: loopback, and some peer is on another node", "::1 on lo: loopback"}},
		{name: "only loopback and link-local across nodes", cands: []Candidate{
			{"eth0", ip("fe80::1%2")}, {"lo", ip("127.0.0.1")}, {"lo", ip("127.0.0.1")},
		}, ifaces: hostIfaces, sel: Select{Remote: true}, want: -1,
			errIs: errs.ErrNotSupported, errHas: []string{"no address the peers can reach", "fe80::1%2 on eth0: IPv6 link-local, and some peer is on another node", "127.0.0.1 on lo: loopback"}},
		{name: "only unscoped link-local", cands: []Candidate{{"eth0", ip("fe80::1")}}, want: -1,
			errIs: errs.ErrNotSupported, errHas: []string{"fe80::1 on eth0: IPv6 link-local without a scope id", "no interfaces"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Pick(tc.cands, tc.ifaces, tc.sel)
			if tc.want < 0 {
				require.Error(t, err)
				assert.Equal(t, -1, got)
				assert.True(t, errors.Is(err, tc.errIs), "%v matches %v", err, tc.errIs)
				for _, s := range tc.errHas {
					assert.Contains(t, err.Error(), s)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got, "chose %v", tc.cands[got])
		})
	}
}

// TestPickDistinctReasons: libfabric lists each address once per set of
// attributes; the error names each once.
func TestPickDistinctReasons(t *testing.T) {
	c := []Candidate{{"eth0", ip("fe80::1")}, {"eth0", ip("fe80::1")}}
	_, err := Pick(append(c, c...), nil, Select{})
	require.Error(t, err)
	assert.Equal(t, 1, strings.Count(err.Error(), "fe80::1 on eth0"), err.Error())
}

func TestSockaddrAddr(t *testing.T) {
	in := make([]byte, 16)
	binary.NativeEndian.PutUint16(in, unix.AF_INET)
	binary.BigEndian.PutUint16(in[2:], 4242)
	copy(in[4:], []byte{192, 0, 2, 2})
	assert.Equal(t, ip("192.0.2.2"), sockaddrAddr(in))

	in6 := make([]byte, 28)
	binary.NativeEndian.PutUint16(in6, unix.AF_INET6)
	copy(in6[8:], ip("fe80::fc:ff:fe00:1").AsSlice())
	assert.Equal(t, ip("fe80::fc:ff:fe00:1"), sockaddrAddr(in6), "scope id 0: no zone")
	binary.NativeEndian.PutUint32(in6[24:], 4)
	assert.Equal(t, ip("fe80::fc:ff:fe00:1%4"), sockaddrAddr(in6))

	assert.False(t, sockaddrAddr(nil).IsValid())
	assert.False(t, sockaddrAddr(in6[:20]).IsValid(), "short sockaddr_in6")
	other := make([]byte, 16)
	binary.NativeEndian.PutUint16(other, unix.AF_UNIX)
	assert.False(t, sockaddrAddr(other).IsValid())
}

// TestOpenBindsPicked: the endpoint Open makes is bound to the address
// Pick chose from the provider's list (not simply the first entry).
func TestOpenBindsPicked(t *testing.T) {
	ep, err := OpenSelect("tcp;ofi_rxm", Select{Iface: "lo"})
	if err != nil {
		t.Skipf("tcp;ofi_rxm on lo: %v", err)
	}
	defer ep.Close()
	assert.True(t, ep.Attr.Source.IsLoopback(), "bound to %v", ep.Attr.Source)
	name, err := ep.Name()
	require.NoError(t, err)
	assert.Contains(t, ep.AddrString(name), ep.Attr.Source.String())

	_, err = OpenSelect("tcp;ofi_rxm", Select{Iface: "goshmem-no-such-if"})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrInvalidArgument))
	assert.Contains(t, err.Error(), "lo (", "the error lists this host's interfaces")
}
