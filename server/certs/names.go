package certs

import (
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"os"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/caddyserver/certmagic"
)

// reDNSName is a host name a certificate can carry (RFC 1123 labels).
var reDNSName = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(\.[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?)*$`)

// maxMachineAddrs bounds how many interface addresses the local certificate
// covers (hosts with many container interfaces would otherwise get one
// certificate each).
const maxMachineAddrs = 16

// withMachineNames adds the names other machines reach this one by: its
// host name, its fully qualified name, and its non-loopback, non-link-local
// addresses. Without them a certificate for localhost only would fail every
// client on another machine, and nothing would say why. Lookups are bounded
// to 2 s; names that cannot be found are left out.
func withMachineNames(names []string) []string {
	out := append([]string{}, names...)
	add := func(n string) {
		n = strings.TrimSuffix(strings.ToLower(n), ".")
		if n == "" || n == "localhost" || len(n) > 253 || (net.ParseIP(n) == nil && !reDNSName.MatchString(n)) || !certmagic.SubjectQualifiesForCert(n) {
			return // e.g. a host name with "_": no certificate can name it
		}
		for _, have := range out {
			if strings.EqualFold(have, n) {
				return
			}
		}
		out = append(out, n)
	}
	if h, err := os.Hostname(); err == nil {
		add(h)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		if cname, err := net.DefaultResolver.LookupCNAME(ctx, h); err == nil && strings.Contains(strings.TrimSuffix(cname, "."), ".") {
			add(cname)
		}
		cancel()
	}
	addrs, _ := net.InterfaceAddrs()
	n := 0
	for _, a := range addrs {
		ipn, ok := a.(*net.IPNet)
		if !ok || ipn.IP.IsLoopback() || ipn.IP.IsLinkLocalUnicast() || ipn.IP.IsLinkLocalMulticast() || n >= maxMachineAddrs {
			continue
		}
		add(ipn.IP.String())
		n++
	}
	return out
}

// MachineNames is names with the machine's own names and addresses added,
// as the built-in CA's certificates cover them.
func MachineNames(names []string) []string { return withMachineNames(names) }

// sniWatch wraps getCert to log, once per name, a client that asks for a
// name the certificates of st do not cover (as of the latest reload): its
// handshake fails on the client side, where the server operator cannot
// see it. At most 256 names are remembered; names are logged quoted (they
// come from the network).
func sniWatch(getCert func(*tls.ClientHelloInfo) (*tls.Certificate, error), st *Setup, log *slog.Logger) func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	if log == nil || getCert == nil {
		return getCert
	}
	var mu sync.Mutex
	warned := map[string]bool{}
	return func(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
		asked := strings.ToLower(hello.ServerName)
		if asked == "" && hello.Conn != nil {
			if host, _, err := net.SplitHostPort(hello.Conn.LocalAddr().String()); err == nil {
				asked = host
			}
		}
		covered := *st.covered.Load()
		if asked != "" && !covered[asked] {
			mu.Lock()
			first := !warned[asked] && len(warned) < 256
			warned[asked] = true
			mu.Unlock()
			if first {
				log.Warn("TLS: a client asked for a name the certificate does not cover; its handshake will fail",
					"asked", fmt.Sprintf("%q", asked), "covered", strings.Join(st.coveredNames(), ","),
					"hint", "restart with --hostname "+fmt.Sprintf("%q", asked)+" (repeatable) if clients use that name")
			}
		}
		return getCert(hello)
	}
}

// coveredNames lists the names certificates are maintained for, sorted.
func (t *Setup) coveredNames() []string {
	m := *t.covered.Load()
	out := make([]string, 0, len(m))
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
