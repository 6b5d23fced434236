package hostile

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/ops"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// hostileServe imports the standard fixture set and starts serve on it.
func hostileServe(t *testing.T, extra ...string) (addr string, tc *tls.Config, proc *os.Process, cat *dist.Catalog) {
	t.Helper()
	storeDir, set := harness.ImportStandard(t)
	srv := harness.StartServe(t, storeDir, extra...)
	base, caFile, proc := srv.Base, srv.CAFile, srv.Proc
	pemData, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemData)
	addr = strings.TrimSuffix(strings.TrimPrefix(base, "https://"), "/")
	return addr, &tls.Config{RootCAs: pool, ServerName: "localhost", NextProtos: []string{"http/1.1"}}, proc, &set.Catalog
}

func openFDs(t *testing.T, pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

// dialFrom opens a TLS connection to serve from a loopback source address
// (127.0.0.x: another client as far as serve can tell) and asks /healthz
// on it; nil when serve refused it.
func dialFrom(t *testing.T, src, addr string, tc *tls.Config) net.Conn {
	t.Helper()
	d := &net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := tls.DialWithDialer(d, "tcp", addr, tc)
	if err != nil {
		return nil
	}
	c.SetDeadline(time.Now().Add(5 * time.Second))
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		c.Close()
		return nil
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	c.SetDeadline(time.Time{})
	return c
}

// holdConns opens up to n connections from src and returns those serve
// kept.
func holdConns(t *testing.T, src, addr string, tc *tls.Config, n int) []net.Conn {
	t.Helper()
	var cs []net.Conn
	for i := 0; i < n; i++ {
		if c := dialFrom(t, src, addr, tc); c != nil {
			cs = append(cs, c)
		}
	}
	t.Cleanup(func() {
		for _, c := range cs {
			c.Close()
		}
	})
	return cs
}

// getTLS asks serve for path on a new connection.
func getTLS(t *testing.T, addr string, tc *tls.Config, path string) (*http.Response, []byte) {
	t.Helper()
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	defer cl.CloseIdleConnections()
	resp, err := cl.Get("https://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, body
}

func loopbackAddr(addr string) string {
	_, port, _ := net.SplitHostPort(addr)
	return "127.0.0.1:" + port
}

// TestHostileServeConnections (issue 11 review, finding 1): one client
// opened 3,000 idle TLS connections and serve kept them all (+3,000 file
// descriptors, +154 MiB). Now max-conns-per-ip caps one client address,
// max-conns caps the total, --trusted-proxy addresses (a load balancer
// carrying many clients) are exempt from the per-address cap only, excess
// connections are closed at once, and a freed slot is usable again.
func TestHostileServeConnections(t *testing.T) {
	t.Run("defaults", func(t *testing.T) {
		addr, tc, proc, _ := hostileServe(t)
		addr = loopbackAddr(addr)
		fd0 := openFDs(t, proc.Pid)
		start := time.Now()
		held := holdConns(t, "127.0.0.1", addr, tc, 600)
		time.Sleep(500 * time.Millisecond)
		fd1 := openFDs(t, proc.Pid)
		t.Logf("one client asked for 600 connections: %d kept, serve fds %d -> %d (%v)", len(held), fd0, fd1, time.Since(start).Round(time.Millisecond))
		// The start-up health check may still hold one idle connection.
		if len(held) > ops.DefaultMaxConnsPerIP || len(held) < ops.DefaultMaxConnsPerIP-2 {
			t.Errorf("one client holds %d connections, want max-conns-per-ip's default %d", len(held), ops.DefaultMaxConnsPerIP)
		}
		if fd1-fd0 > ops.DefaultMaxConnsPerIP+8 {
			t.Errorf("one client holds %d of serve's file descriptors", fd1-fd0)
		}
	})
	t.Run("caps", func(t *testing.T) {
		mport := harness.FreePort(t)
		addr, tc, proc, _ := hostileServe(t, "--max-conns", "150", "--max-conns-per-ip", "50",
			"--trusted-proxy", "127.0.0.3", "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", mport))
		addr = loopbackAddr(addr)
		a := holdConns(t, "127.0.0.1", addr, tc, 80)
		proxy := holdConns(t, "127.0.0.3", addr, tc, 80)
		b := holdConns(t, "127.0.0.2", addr, tc, 40)
		t.Logf("max-conns 150, max-conns-per-ip 50: client A kept %d of 80, the trusted proxy %d of 80, client B %d of 40; %d fds", len(a), len(proxy), len(b), openFDs(t, proc.Pid))
		if n := len(a) + len(proxy) + len(b); len(a) > 50 || len(a) < 48 || len(proxy) != 80 || n > 150 || n < 148 {
			t.Errorf("kept %d, %d, %d connections; want 50 (per-address cap), 80 (trusted proxy: exempt), 20 (the total cap)", len(a), len(proxy), len(b))
		}
		// Slots freed by A are B's to take (once serve has seen the closes).
		for _, c := range a {
			c.Close()
		}
		var c net.Conn
		for deadline := time.Now().Add(5 * time.Second); c == nil && time.Now().Before(deadline); {
			if c = dialFrom(t, "127.0.0.2", addr, tc); c == nil {
				time.Sleep(50 * time.Millisecond)
			}
		}
		if c == nil {
			t.Fatal("client B refused after client A closed its connections: slots are not released")
		}
		c.Close()
		m := scrapeMetrics(t, mport)
		perIP, total := harness.MetricValue(m, `airgap_http_connections_refused_total{reason="per_ip"}`), harness.MetricValue(m, `airgap_http_connections_refused_total{reason="total"}`)
		t.Logf("refused: %v per address, %v over the total", perIP, total)
		if perIP < 30 || total < 20 {
			t.Errorf("refusals counted: per_ip %v (want >= 30), total %v (want >= 20)", perIP, total)
		}
	})
}

func scrapeMetrics(t *testing.T, port int) string {
	t.Helper()
	resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/metrics", port))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// blobFDs counts the store files serve has open.
func blobFDs(t *testing.T, pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(filepath.Join(dir, e.Name())); err == nil && strings.Contains(l, "/blobs/") {
			n++
		}
	}
	return n
}

// pipelined opens a connection with a small receive buffer and asks for
// n copies of a package on it at once.
func pipelined(t *testing.T, addr string, tc *tls.Config, path string, n int) *tls.Conn {
	t.Helper()
	// A small window, set before connecting (shrinking it on an open
	// connection makes Linux drop data in flight and stall the connection
	// in retransmission backoff): serve's writes block sooner.
	d := &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
		var err error
		rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
		return err
	}}
	raw, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c := tls.Client(raw, tc)
	if err := c.Handshake(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := c.Write([]byte(strings.Repeat("GET "+path+" HTTP/1.1\r\nHost: localhost\r\n\r\n", n))); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHostileServeStalledReader (issue 11 review, finding 2): clients that
// pipeline package downloads and never read held their connections,
// goroutines and store files forever. Now a connection whose writes make
// no progress for send-timeout (2 s here, 60 s by default) is closed,
// while a slow download that keeps moving, for longer than send-timeout in
// all, completes.
func TestHostileServeStalledReader(t *testing.T) {
	const sendTimeout = 2 * time.Second
	addr, tc, proc, cat := hostileServe(t, "--send-timeout", sendTimeout.String())
	pk := cat.Providers[0].Packages[0]
	path := fmt.Sprintf("/blobs/sha256/%s/%s", pk.Digest.Hex(), pk.Filename)
	reqs := int(16<<20/pk.Size) + 1 // 16 MiB asked for on each: more than socket buffers hold

	// A slow reader: 12 MiB read at full speed but with a pause (shorter
	// than send-timeout) after every 3 MiB, so it takes longer than
	// send-timeout in all and serve's writes block during each pause.
	slowN := int(12<<20/pk.Size) + 1
	slow := pipelined(t, addr, tc, path, slowN)
	slowDone := make(chan error, 1)
	go func() {
		br := bufio.NewReader(slow)
		got := int64(0)
		for i := 0; i < slowN; i++ {
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				slowDone <- fmt.Errorf("answer %d of %d: %v", i+1, slowN, err)
				return
			}
			n, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil || n != pk.Size {
				slowDone <- fmt.Errorf("answer %d: %d of %d bytes: %v", i+1, n, pk.Size, err)
				return
			}
			if got/(3<<20) != (got+n)/(3<<20) {
				time.Sleep(sendTimeout * 3 / 4)
			}
			got += n
		}
		slowDone <- nil
	}()

	const conns = 20
	for i := 0; i < conns; i++ {
		pipelined(t, addr, tc, path, reqs)
	}
	time.Sleep(time.Second)
	early := blobFDs(t, proc.Pid)
	if early < conns {
		t.Fatalf("only %d store files open with %d stalled downloads: the attack did not block serve's writes", early, conns)
	}
	start := time.Now()
	for blobFDs(t, proc.Pid) > 1 && time.Since(start) < 3*sendTimeout+5*time.Second { // the slow reader may hold one
		time.Sleep(100 * time.Millisecond)
	}
	late := blobFDs(t, proc.Pid)
	t.Logf("%d stalled connections held %d store files; %v later %d are open (send-timeout %v)", conns, early, time.Since(start).Round(100*time.Millisecond), late, sendTimeout)
	if late > 1 {
		t.Errorf("%d store files still open %v after their clients stopped reading", late, time.Since(start).Round(time.Second))
	}
	select {
	case err := <-slowDone:
		if err != nil {
			t.Errorf("a slow download that kept moving was cut: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Error("the slow download did not finish in 30 s")
	}
}

// rawExchange sends raw bytes on a new TLS connection and returns what
// serve answers until it closes the connection or 3 s pass.
func rawExchange(t *testing.T, addr string, tc *tls.Config, raw string) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, tc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(3 * time.Second))
	io.WriteString(c, raw)
	b, _ := io.ReadAll(c)
	return string(b)
}

func statusLine(s string) string {
	l, _, _ := strings.Cut(s, "\r\n")
	return l
}

// TestHostileServeProbes: hostile requests serve must refuse or answer
// harmlessly. The first case is finding 3 of the review: an origin with any
// ":<suffix>" in a path was accepted as that origin.
func TestHostileServeProbes(t *testing.T) {
	addr, tc, _, cat := hostileServe(t)
	p := cat.Providers[0]
	pk := p.Packages[0]
	blob := "/blobs/sha256/" + pk.Digest.Hex() + "/" + pk.Filename
	get := func(path string, hdr ...string) string {
		return rawExchange(t, addr, tc, "GET "+path+" HTTP/1.1\r\nHost: localhost\r\n"+strings.Join(hdr, "")+"Connection: close\r\n\r\n")
	}
	t.Run("origin-port-suffix", func(t *testing.T) {
		for _, path := range []string{
			"/origin/" + p.Host + ":not-a-port-" + strings.Repeat("x", 4000) + "/.well-known/terraform.json",
			"/mirror/" + p.Host + ":junk/" + p.Namespace + "/" + p.Type + "/index.json",
		} {
			if got := statusLine(get(path)); !strings.Contains(got, " 404 ") {
				t.Errorf("GET %.60s…: %s, want 404 (no such origin)", path, got)
			}
		}
	})
	cases := []struct{ name, raw, want string }{
		{"smuggling TE+CL", "POST /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /ca.pem HTTP/1.1\r\nHost: localhost\r\n\r\n", " 405 "},
		{"GET with body is closed", "GET /healthz HTTP/1.1\r\nHost: localhost\r\nContent-Length: 100000\r\n\r\n", " 200 "},
		{"expect 100-continue", "GET /healthz HTTP/1.1\r\nHost: localhost\r\nExpect: 100-continue\r\nContent-Length: 5\r\n\r\n", " 200 "},
		{"CONNECT", "CONNECT other.example:443 HTTP/1.1\r\nHost: other.example:443\r\n\r\n", " 405 "},
		{"absolute form", "GET https://other.example/healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", " 200 "},
		{"dotdot encoded", "GET /blobs/sha256/%2e%2e/%2e%2e/index.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", " 404 "},
		{"backslash", "GET /blobs/sha256/..\\..\\index.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", " 404 "},
		{"NUL", "GET /blobs/sha256/%00 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", " 404 "},
		{"header too large", "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX: " + strings.Repeat("a", 40<<10) + "\r\n\r\n", " 431 "},
		{"OCI bad n", "GET /v2/registry.terraform.io/hashicorp/random/tags/list?n=-1 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", " 40"},
		{"OCI short digest", "GET /v2/registry.terraform.io/hashicorp/random/blobs/sha256:abc HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", " 40"},
		{"OCI other algorithm", "GET /v2/registry.terraform.io/hashicorp/random/manifests/sha512:" + strings.Repeat("a", 128) + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", " 404 "},
		{"OCI uppercase digest", "GET /v2/registry.terraform.io/hashicorp/random/blobs/sha256:" + strings.ToUpper(pk.Digest.Hex()) + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", " 40"},
		{"blob filename injection", "GET " + "/blobs/sha256/" + pk.Digest.Hex() + "/x%0d%0aSet-Cookie:%20a=b HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n", " 200 "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := rawExchange(t, addr, tc, c.raw)
			if !strings.Contains(statusLine(got), c.want) {
				t.Errorf("%s: got %q, want %q", c.name, statusLine(got), c.want)
			}
			if strings.Contains(got, "Set-Cookie") || strings.Contains(got, "BEGIN CERTIFICATE") && c.name == "smuggling TE+CL" {
				t.Errorf("%s: %q", c.name, got)
			}
		})
	}
	t.Run("multi-range", func(t *testing.T) {
		n := int(min(pk.Size, 6000))
		rs := strings.TrimSuffix(strings.Repeat("0-0,", n), ",")
		got := get(blob, "Range: bytes="+rs+"\r\n")
		t.Logf("%d one-byte ranges (request ~%d KiB): %s, answer %d KiB", n, len(rs)>>10, statusLine(got), len(got)>>10)
	})
}

// TestHostileServeMetricsStarved: with /metrics on the main listener
// (metrics-listen = "main") promhttp serves at most 4 scrapes at a time;
// four connections that pipeline scrapes and never read do not hold the
// slots, because promhttp's Timeout buffers the answer and frees its slot
// before the write blocks.
func TestHostileServeMetricsStarved(t *testing.T) {
	addr, tc, _, _ := hostileServe(t, "--metrics-listen", "main")
	var cs []net.Conn
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for i := 0; i < 4; i++ {
		raw, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		raw.(*net.TCPConn).SetReadBuffer(4 << 10)
		c := tls.Client(raw, tc)
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(strings.Repeat("GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n", 300)))
		cs = append(cs, c)
	}
	time.Sleep(3 * time.Second)
	resp, body := getTLS(t, addr, tc, "/metrics")
	t.Logf("a scrape while four clients stall: %s (%d bytes)", resp.Status, len(body))
	if resp.StatusCode != 200 {
		t.Errorf("Prometheus' scrape got %s: four stalled clients hold every /metrics slot", resp.Status)
	}
}

// TestHostileServeSNIFlood: 4,000 handshakes
// with distinct, long server names. The "name not covered" warning is
// logged at most 256 times, no certificate is issued for any of them
// (nothing new under STORE/tls), and serve's memory stays flat.
func TestHostileServeSNIFlood(t *testing.T) {
	storeDir, _ := harness.ImportStandard(t)
	port := harness.FreePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	srv := harness.Serve(t, harness.ServeOptions{Store: storeDir, Port: port, Interrupt: true})
	cmd, logs := srv.Cmd, srv.Logs
	insecure := &tls.Config{InsecureSkipVerify: true}
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := tls.Dial("tcp", addr, insecure)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
	tlsFiles := func() int {
		n := 0
		filepath.WalkDir(filepath.Join(storeDir, "tls"), func(string, os.DirEntry, error) error { n++; return nil })
		return n
	}
	hello := func(from, n int) {
		for i := from; i < from+n; i++ {
			name := fmt.Sprintf("n%d.%s.example", i, strings.Repeat("a", 60))
			c, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, ServerName: name})
			if err == nil { // names not covered fail the handshake ("internal error")
				c.Close()
			}
		}
	}
	hello(0, 1000) // warm-up: buffers and the collector's heap target
	time.Sleep(time.Second)
	files0, rss0 := tlsFiles(), harness.VMRSS(t, cmd.Process.Pid)
	hello(1000, 3000)
	time.Sleep(time.Second)
	warned := strings.Count(logs.String(), "does not cover")
	files1, rss1 := tlsFiles(), harness.VMRSS(t, cmd.Process.Pid)
	t.Logf("4,000 distinct SNI names: %d warnings, STORE/tls entries %d -> %d, RSS %.1f -> %.1f MiB", warned, files0, files1, float64(rss0)/(1<<20), float64(rss1)/(1<<20))
	if warned > 256 || files1 != files0 || rss1-rss0 > 16<<20 {
		t.Errorf("SNI flood: %d warnings, %d new files in STORE/tls, RSS +%d", warned, files1-files0, rss1-rss0)
	}
}

// TestHostileServeSlowloris: a connection that
// never sends a ClientHello, and one that sends its request a byte a
// second, are both closed by ReadHeaderTimeout.
func TestHostileServeSlowloris(t *testing.T) {
	addr, tc, _, _ := hostileServe(t)
	var wg sync.WaitGroup
	check := func(name string, c net.Conn, drip func()) {
		defer wg.Done()
		defer c.Close()
		start := time.Now()
		c.SetDeadline(time.Now().Add(3 * server.ReadHeaderTimeout))
		done := make(chan struct{})
		go func() { io.Copy(io.Discard, c); close(done) }()
		if drip != nil {
			go drip()
		}
		<-done
		if took := time.Since(start); took > server.ReadHeaderTimeout+3*time.Second {
			t.Errorf("%s: closed after %v, want about %v", name, took, server.ReadHeaderTimeout)
		}
	}
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tc2, err := tls.Dial("tcp", addr, tc)
	if err != nil {
		t.Fatal(err)
	}
	wg.Add(2)
	go check("no ClientHello", raw, nil)
	go check("a byte a second", tc2, func() {
		for _, b := range []byte("GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n") {
			if _, err := tc2.Write([]byte{b}); err != nil {
				return
			}
			time.Sleep(time.Second)
		}
	})
	wg.Wait()
}

// TestHostileServeMetricsNotExposed (finding 4): /metrics tells whoever
// reads it which versions the site's engineers download, and serve's open
// file descriptors and memory (live feedback for a connection attack). By
// default it is served nowhere; with --metrics-listen ADDR only there
// (plain HTTP, for a management network); on the main listener only when
// the operator asks with --metrics-listen main.
func TestHostileServeMetricsNotExposed(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		want int
	}{
		{"default", nil, 404},
		{"own listener", []string{"--metrics-listen", fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))}, 404},
		{"main", []string{"--metrics-listen", "main"}, 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr, tc, _, _ := hostileServe(t, c.args...)
			resp, body := getTLS(t, addr, tc, "/metrics")
			if resp.StatusCode != c.want || c.want == 200 && !strings.Contains(string(body), "airgap_build_info") {
				t.Errorf("/metrics on the main listener (%v): %s, want %d", c.args, resp.Status, c.want)
			}
		})
	}
}

// TestHostileServeDownloadCount (finding 5): every 206 counted as a
// download, so any client made any version look popular (or hid real use
// in noise) with one-byte Range requests. Now a download counts once its
// whole body went out in a 200.
func TestHostileServeDownloadCount(t *testing.T) {
	mport := harness.FreePort(t)
	addr, tc, _, cat := hostileServe(t, "--metrics-listen", fmt.Sprintf("127.0.0.1:%d", mport))
	p := cat.Providers[0]
	pk := p.Packages[0]
	url := "https://" + addr + "/blobs/sha256/" + pk.Digest.Hex() + "/" + pk.Filename
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	get := func(rng string) {
		req, _ := http.NewRequest("GET", url, nil)
		if rng != "" {
			req.Header.Set("Range", rng)
		}
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	series := fmt.Sprintf(`airgap_downloads_total{address=%q,kind="provider",version=%q}`, p.Addr(), p.Version)
	const n = 50
	for i := 0; i < n; i++ {
		get("bytes=0-0")
	}
	get(fmt.Sprintf("bytes=0-%d", pk.Size-1)) // the whole file, but as a 206
	if v := harness.MetricValue(scrapeMetrics(t, mport), series); v > 0 {
		t.Errorf("%d one-byte ranges and one whole range counted as %v downloads", n, v)
	}
	get("")
	var v float64
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if v = harness.MetricValue(scrapeMetrics(t, mport), series); v == 1 {
			break
		}
	}
	if v != 1 {
		t.Errorf("%s = %v after one whole download, want 1", series, v)
	}
}
