package server

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"
)

// Defaults of the connection limits (serve's max-conns, max-conns-per-ip
// and send-timeout settings).
const (
	DefaultMaxConns      = 2048
	DefaultMaxConnsPerIP = 128
	DefaultSendTimeout   = 60 * time.Second
)

// ConnLimits configure LimitConns.
type ConnLimits struct {
	// Max is the number of client connections open at once (0: no cap).
	Max int
	// PerIP is the number of connections one client address holds at once
	// (0: no cap). IPv6 clients are counted by /64, the block one host
	// usually has to itself.
	PerIP int
	// Exempt reports addresses the per-address cap does not apply to
	// (trusted proxies and load balancers, which carry many clients on one
	// address); they still count towards Max.
	Exempt func(netip.Addr) bool
	// SendTimeout closes a connection on which a write made no progress
	// for this long (0: never).
	SendTimeout time.Duration
	// Refused, if set, is called with "total" or "per_ip" for each
	// connection closed at accept.
	Refused func(reason string)
}

// LimitConns wraps a listener so that
//
//   - a connection over Max, or over PerIP for its address, is closed at
//     once after accept rather than left waiting. A gate that stops
//     accepting (golang.org/x/net/netutil.LimitListener) leaves the excess
//     in the kernel's backlog, where legitimate clients queue behind an
//     attacker's connections until their own connect times out, and it has
//     no per-address cap, which is what keeps one client from taking the
//     whole budget; so this is our own (about 100 lines). A refused client
//     sees its connection closed during the TLS handshake: a fast, clear
//     failure it can retry.
//   - each Write must make progress within SendTimeout: the write deadline
//     is moved forward before each write and again whenever a timed-out
//     write had sent something, so a download that moves never times out
//     (as nginx's send_timeout), and one whose client stopped reading is
//     closed, releasing its goroutine and the store file it held.
//
// Bookkeeping is one map entry per client address with connections open,
// so at most Max entries.
func LimitConns(ln net.Listener, lim ConnLimits) net.Listener {
	return &limitListener{Listener: ln, lim: lim, perIP: map[netip.Addr]int{}}
}

type limitListener struct {
	net.Listener
	lim   ConnLimits
	mu    sync.Mutex
	open  int
	perIP map[netip.Addr]int
}

func (l *limitListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key, exempt := l.key(c.RemoteAddr())
		if reason := l.admit(key, exempt); reason != "" {
			c.Close()
			if l.lim.Refused != nil {
				l.lim.Refused(reason)
			}
			continue
		}
		return &limitConn{Conn: c, l: l, key: key, exempt: exempt}, nil
	}
}

// key is the address a connection counts under for the per-address cap.
func (l *limitListener) key(a net.Addr) (netip.Addr, bool) {
	var ip netip.Addr
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ = netip.AddrFromSlice(ta.IP)
	} else if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		ip = ap.Addr()
	}
	ip = ip.Unmap()
	if l.lim.Exempt != nil && ip.IsValid() && l.lim.Exempt(ip) {
		return ip, true
	}
	if ip.Is6() {
		if p, err := ip.Prefix(64); err == nil {
			ip = p.Addr()
		}
	}
	return ip, false
}

func (l *limitListener) admit(key netip.Addr, exempt bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.lim.Max > 0 && l.open >= l.lim.Max {
		return "total"
	}
	if !exempt {
		if l.lim.PerIP > 0 && l.perIP[key] >= l.lim.PerIP {
			return "per_ip"
		}
		l.perIP[key]++
	}
	l.open++
	return ""
}

func (l *limitListener) release(key netip.Addr, exempt bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if !exempt {
		if l.perIP[key]--; l.perIP[key] <= 0 {
			delete(l.perIP, key)
		}
	}
}

type limitConn struct {
	net.Conn
	l      *limitListener
	key    netip.Addr
	exempt bool
	once   sync.Once
}

func (c *limitConn) Write(p []byte) (int, error) {
	d := c.l.lim.SendTimeout
	if d <= 0 {
		return c.Conn.Write(p)
	}
	written := 0
	for {
		c.Conn.SetWriteDeadline(time.Now().Add(d))
		n, err := c.Conn.Write(p[written:])
		written += n
		// A timed-out write that sent something made progress: go on.
		if err == nil || n == 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return written, err
		}
	}
}

func (c *limitConn) Close() error {
	c.once.Do(func() { c.l.release(c.key, c.exempt) })
	return c.Conn.Close()
}
