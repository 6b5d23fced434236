package registrytest

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sync"
	"testing"
)

// FreePort returns a loopback port on which nothing listens (TCP or UDP),
// for a process or server a test starts later on a port it must know in
// advance (serve, HAProxy, an ACME challenge listener), or for a client to
// find closed.
//
// It is drawn from outside the kernel's ephemeral range
// (net.ipv4.ip_local_port_range). A port that net.Listen(":0") gave is
// free only until that listener closes, and every listen(:0) and outgoing
// connection on the machine draws from the ephemeral range: with other
// packages' tests running alongside (hundreds of httptest servers), one of
// them can take such a port before the test's server binds it, which then
// fails to start. Outside the range the kernel hands out nothing by
// itself, and one test process never gets the same port twice.
func FreePort(t testing.TB) int {
	t.Helper()
	portsMu.Lock()
	defer portsMu.Unlock()
	lo, hi := ephemeralRange()
	// Clear of the well-known and registered services below 10000, and of
	// 10000-10010, where 'terraform login' listens for its code.
	spans := [][2]int{{10011, lo - 1}, {hi + 1, 65535}}
	total := 0
	for _, s := range spans {
		total += max(0, s[1]-s[0]+1)
	}
	for try := 0; total > 0 && try < 1000; try++ {
		n, p := rand.IntN(total), 0
		for _, s := range spans {
			w := max(0, s[1]-s[0]+1)
			if n < w {
				p = s[0] + n
				break
			}
			n -= w
		}
		if portsGiven[p] || !bindable(p) {
			continue
		}
		portsGiven[p] = true
		return p
	}
	t.Fatalf("no free loopback port outside the ephemeral range %d-%d", lo, hi)
	return 0
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)

// bindable reports whether 127.0.0.1:p is free for both TCP and UDP.
func bindable(p int) bool {
	addr := fmt.Sprintf("127.0.0.1:%d", p)
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	ln.Close()
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return false
	}
	pc.Close()
	return true
}

// ephemeralRange is the kernel's range for the ports it picks itself
// (Linux's default when it cannot be read).
func ephemeralRange() (lo, hi int) {
	lo, hi = 32768, 60999
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var l, h int
		if _, err := fmt.Sscan(string(b), &l, &h); err == nil && l > 0 && h >= l {
			lo, hi = l, h
		}
	}
	return lo, hi
}
