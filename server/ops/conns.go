package ops

import (
	"errors"
	"net"
	"net/netip"
	"os"
	"sync"
	"time"

	"github.com/airgap/airgap/server/access"
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
	// connection closed at accept, before it is closed.
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
//     is moved forward before a write (unless it is still more than 15/16
//     of SendTimeout away; see arm) and again whenever a timed-out write
//     had sent something, so a download that moves never times out (as
//     nginx's send_timeout), and one whose client stopped reading is
//     closed, releasing its goroutine and the store file it held.
//     Progress is what the kernel takes into its send buffer, and a
//     stalled receiver still lets it take a little after each timeout, so
//     a client that reads nothing is cut about three SendTimeouts after it
//     stopped, plus up to 5 s for crypto/tls's close_notify (measured at
//     SendTimeout 10 s: 35 s). Like nginx's send_timeout, this bounds
//     stalls, not speed: a client that takes a few KiB per SendTimeout
//     keeps its connection as long as it goes on.
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
			// Counted before the close, so that a client that has seen
			// its connection refused finds the refusal already counted.
			if l.lim.Refused != nil {
				l.lim.Refused(reason)
			}
			c.Close()
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
	return access.AddrKey(ip), false
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

	// The write deadlines, with SendTimeout set; mu guards them. Conn's
	// write deadline is always the earlier of armed and callerWD (a zero
	// one not counting), and applied is what was last given to it.
	mu       sync.Mutex
	callerWD time.Time // the deadline the conn's user set (zero: none)
	armed    time.Time // the send deadline (zero: never armed)
	applied  time.Time
}

// Write arms the send deadline and writes, going on after a timed-out
// write that sent something.
func (c *limitConn) Write(p []byte) (int, error) {
	if c.l.lim.SendTimeout <= 0 {
		return c.Conn.Write(p)
	}
	written := 0
	force := false
	for {
		c.arm(force)
		n, err := c.Conn.Write(p[written:])
		written += n
		// A timed-out write that sent something made progress: go on.
		if err == nil || n == 0 || !errors.Is(err, os.ErrDeadlineExceeded) {
			return written, err
		}
		force = true
	}
}

// arm moves the send deadline to now plus SendTimeout for a write starting
// now, unless it is still more than 15/16 of SendTimeout away: net/http
// clears the write deadline after every answer and a small answer is one
// write, so arming on each write cost two timer updates per request (about
// 0.5 µs, 4 % of a cached answer's CPU). A write thus has at least 15/16
// of SendTimeout to make progress, and never more than SendTimeout.
func (c *limitConn) arm(force bool) {
	d := c.l.lim.SendTimeout
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if force || c.armed.Sub(now) <= d-d/16 {
		c.armed = now.Add(d)
	}
	c.applyLocked()
}

// applyLocked gives Conn the earlier of the two deadlines, if that is not
// what it has already.
func (c *limitConn) applyLocked() error {
	dl := c.armed
	if !c.callerWD.IsZero() && (dl.IsZero() || c.callerWD.Before(dl)) {
		dl = c.callerWD
	}
	if dl.Equal(c.applied) {
		return nil
	}
	c.applied = dl
	return c.Conn.SetWriteDeadline(dl)
}

// SetWriteDeadline sets the user's write deadline; the send deadline
// still applies whenever it is earlier, so clearing the user's deadline
// (net/http does after every answer) never disarms the send timeout.
func (c *limitConn) SetWriteDeadline(t time.Time) error {
	if c.l.lim.SendTimeout <= 0 {
		return c.Conn.SetWriteDeadline(t)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.callerWD = t
	return c.applyLocked()
}

// SetDeadline sets both deadlines, the write one as SetWriteDeadline does.
func (c *limitConn) SetDeadline(t time.Time) error {
	if err := c.Conn.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

func (c *limitConn) Close() error {
	c.once.Do(func() { c.l.release(c.key, c.exempt) })
	return c.Conn.Close()
}
