package access

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync/atomic"
)

// TrustedProxies is the set of peers whose X-Forwarded-For header is
// believed (--trusted-proxy: balancers that terminate HTTP and append the
// client to it), and of load balancers that pass TLS through
// (--passthrough-proxy), whose X-Forwarded-For is never believed: it
// reaches serve as the client wrote it. Both carry many clients on one
// address, so both are exempt from the per-address limits. The zero value
// and nil trust nobody. Set and SetPassthrough may be called at any time
// (SIGHUP).
type TrustedProxies struct {
	p    atomic.Pointer[[]netip.Prefix]
	pass atomic.Pointer[[]netip.Prefix]
}

// ParseTrustedProxies parses addresses ("10.0.0.5") and CIDR prefixes
// ("10.0.0.0/8", "fd00::/8").
func ParseTrustedProxies(list []string) (*TrustedProxies, error) {
	t := &TrustedProxies{}
	return t, t.Set(list)
}

// Set replaces the list of trusted proxies.
func (t *TrustedProxies) Set(list []string) error {
	ps, err := ParsePrefixes(list)
	if err == nil {
		t.p.Store(&ps)
	}
	return err
}

// SetPassthrough replaces the list of passthrough balancers.
func (t *TrustedProxies) SetPassthrough(list []string) error {
	ps, err := ParsePrefixes(list)
	if err == nil {
		t.pass.Store(&ps)
	}
	return err
}

// ParsePrefixes parses addresses and CIDR prefixes.
func ParsePrefixes(list []string) ([]netip.Prefix, error) {
	var ps []netip.Prefix
	for _, s := range list {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("%q: %v", s, err)
			}
			ps = append(ps, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("%q is not an IP address or CIDR prefix", s)
		}
		a = a.Unmap()
		ps = append(ps, netip.PrefixFrom(a, a.BitLen()))
	}
	return ps, nil
}

func (t *TrustedProxies) trusts(a netip.Addr) bool {
	return t != nil && inPrefixes(t.p.Load(), a)
}

// CarriesMany reports whether a is a trusted proxy or a passthrough
// balancer: an address many clients share, exempt from the per-address
// connection cap and failed-attempt limit.
func (t *TrustedProxies) CarriesMany(a netip.Addr) bool {
	return t != nil && (inPrefixes(t.p.Load(), a) || inPrefixes(t.pass.Load(), a))
}

func inPrefixes(ps *[]netip.Prefix, a netip.Addr) bool {
	if ps == nil {
		return false
	}
	a = a.Unmap()
	for _, p := range *ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// maxForwardHops bounds how many X-Forwarded-For entries are examined.
const maxForwardHops = 16

// ClientAddr returns the client's IP address and the connection peer's.
// When the peer is trusted, X-Forwarded-For is walked from the right (the
// last entry of the last header line: a proxy appends its client there,
// HAProxy as a line of its own, nginx at the end of the one line),
// skipping trusted proxies, and the first other address is the client; an
// entry that is not an IP address stops the walk (the last trusted hop is
// then the client), and so do maxForwardHops trusted entries. Entries left
// of the client are the client's own text and are never read, however many
// it sends. Both results are parsed IP addresses, never client text. Cost:
// at most maxForwardHops address parses, no allocation.
func (t *TrustedProxies) ClientAddr(r *http.Request) (client, peer string) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	pa, err := netip.ParseAddr(host)
	if err != nil {
		return "unknown", "unknown"
	}
	if pa.Is4() {
		peer = host // already canonical: ParseAddr takes no other IPv4 form
	} else {
		pa = pa.Unmap()
		peer = pa.String()
	}
	if !t.trusts(pa) {
		return peer, peer
	}
	lines := r.Header.Values("X-Forwarded-For")
	cur, n := pa, 0
	for i := len(lines) - 1; i >= 0; i-- {
		rest := lines[i]
		for {
			if n == maxForwardHops {
				return cur.String(), peer
			}
			j := strings.LastIndexByte(rest, ',')
			a, err := netip.ParseAddr(strings.TrimSpace(rest[j+1:]))
			if err != nil {
				return cur.String(), peer
			}
			cur, n = a.Unmap(), n+1
			if !t.trusts(cur) {
				return cur.String(), peer
			}
			if j < 0 {
				break
			}
			rest = rest[:j]
		}
	}
	return cur.String(), peer
}

// AddrKey is the address a client counts under for per-address limits:
// itself, or for IPv6 its /64, the block one host usually holds.
func AddrKey(ip netip.Addr) netip.Addr {
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			return p.Addr()
		}
	}
	return ip
}
