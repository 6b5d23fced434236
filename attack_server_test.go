package main

// ATTACK TESTS (security review of 'airgap serve', branch atk-server).
// Each test attacks the real binary on loopback and asserts the behaviour
// the appliance should have; a failure reproduces a finding of the review.

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/verify"
)

// attackServe imports the standard fixture set and starts serve on it.
func attackServe(t *testing.T, extra ...string) (addr string, tc *tls.Config, proc *os.Process, cat *dist.Catalog) {
	t.Helper()
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, err := verify.PublicArmor(signer)
	if err != nil {
		t.Fatal(err)
	}
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set := bundletest.Standard(t, filepath.Join(work, "set"), signer)
	bf := filepath.Join(work, "set.bundle")
	set.WriteBundleFile(t, bf, signer, bundle.CompressionZstd)
	storeDir := filepath.Join(work, "store")
	mustRun(t, work, nil, airgapBin, "import", "--keyring", keyring, "--store", storeDir, bf)
	base, caFile, proc := startServeProc(t, storeDir, extra...)
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

// TestAttackServeIdleConnections: one client opens many connections, asks
// one cheap request on each and leaves them idle. net/http keeps each for
// IdleTimeout (120 s) and the appliance sets no cap on connections, so the
// client alone decides serve's file descriptors and memory (and, at
// LimitNOFILE, locks every other engineer out).
func TestAttackServeIdleConnections(t *testing.T) {
	addr, tc, proc, _ := attackServe(t)
	const n = 3000
	time.Sleep(time.Second)
	rss0, fd0 := vmRSS(t, proc.Pid), openFDs(t, proc.Pid)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := tls.Dial("tcp", addr, tc)
		if err != nil {
			t.Logf("connection %d refused: %v", i, err)
			break
		}
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			c.Close()
			t.Logf("connection %d: %v", i, err)
			break
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		conns = append(conns, c)
	}
	time.Sleep(2 * time.Second)
	rss1, fd1 := vmRSS(t, proc.Pid), openFDs(t, proc.Pid)
	t.Logf("%d idle connections held by one client: serve fds %d -> %d, RSS %.1f -> %.1f MiB (%.1f KiB a connection)",
		len(conns), fd0, fd1, float64(rss0)/(1<<20), float64(rss1)/(1<<20), float64(rss1-rss0)/1024/float64(max(len(conns), 1)))
	if fd1-fd0 > 1024 {
		t.Errorf("one client holds %d of serve's file descriptors: no cap on connections (per client or in total)", fd1-fd0)
	}
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

// TestAttackServeStalledReader: a client pipelines package downloads on a
// few connections and never reads. With no write timeout and no progress
// deadline, each handler blocks in the write for ever, holding its
// connection, its goroutine and an open store file well past every timeout
// the server has (IdleTimeout is 120 s); nginx's send_timeout would close
// them after 60 s without progress.
func TestAttackServeStalledReader(t *testing.T) {
	if testing.Short() {
		t.Skip("waits past IdleTimeout (about 2 minutes)")
	}
	addr, tc, proc, cat := attackServe(t)
	p := cat.Providers[0]
	pk := p.Packages[0]
	req := fmt.Sprintf("GET /blobs/sha256/%s/%s HTTP/1.1\r\nHost: localhost\r\n\r\n", pk.Digest.Hex(), pk.Filename)
	const conns = 20
	var cs []net.Conn
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for i := 0; i < conns; i++ {
		raw, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		raw.(*net.TCPConn).SetReadBuffer(4 << 10) // a small window: the server's writes stall sooner
		c := tls.Client(raw, tc)
		if err := c.Handshake(); err != nil {
			t.Fatal(err)
		}
		c.Write([]byte(strings.Repeat(req, 400))) // ~26 MB of answers asked for, none read
		cs = append(cs, c)
	}
	time.Sleep(5 * time.Second)
	early := blobFDs(t, proc.Pid)
	wait := server.IdleTimeout + 10*time.Second
	t.Logf("%d stalled connections: serve holds %d store files open; waiting %v", conns, early, wait)
	time.Sleep(wait)
	late, fds := blobFDs(t, proc.Pid), openFDs(t, proc.Pid)
	t.Logf("after %v: %d store files and %d file descriptors still open", wait, late, fds)
	if late > 0 {
		t.Errorf("%d downloads to clients that read nothing for %v are still open (store files held): no write progress timeout", late, wait)
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

// TestAttackServeProbes: hostile requests serve must refuse or answer
// harmlessly. The first case reproduces a finding: an origin with any
// ":<suffix>" is accepted as that origin.
func TestAttackServeProbes(t *testing.T) {
	addr, tc, _, cat := attackServe(t)
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

// TestAttackServeMetricsStarved (refused, kept as a guard): /metrics is on
// the main listener by default and promhttp serves at most 4 scrapes at a
// time; four connections that pipeline scrapes and never read do not hold
// the slots, because promhttp's Timeout buffers the answer and frees its
// slot before the write blocks.
func TestAttackServeMetricsStarved(t *testing.T) {
	addr, tc, _, _ := attackServe(t)
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
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	resp, err := cl.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	t.Logf("a scrape while four clients stall: %s (%d bytes)", resp.Status, len(body))
	if resp.StatusCode != 200 {
		t.Errorf("Prometheus' scrape got %s: four stalled clients hold every /metrics slot", resp.Status)
	}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestAttackServeSNIFlood (refused, kept as a guard): 4,000 handshakes
// with distinct, long server names. The "name not covered" warning is
// logged at most 256 times, no certificate is issued for any of them
// (nothing new under STORE/tls), and serve's memory stays flat.
func TestAttackServeSNIFlood(t *testing.T) {
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set := bundletest.Standard(t, filepath.Join(work, "set"), signer)
	bf := filepath.Join(work, "set.bundle")
	set.WriteBundleFile(t, bf, signer, bundle.CompressionZstd)
	storeDir := filepath.Join(work, "store")
	mustRun(t, work, nil, airgapBin, "import", "--keyring", keyring, "--store", storeDir, bf)
	port := freePort(t)
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	cmd := exec.Command(airgapBin, "serve", "--store", storeDir, "--listen", addr, "--hostname", "localhost")
	cmd.Env = baseEnv()
	logs := &syncBuf{}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() }()
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
	files0, rss0 := tlsFiles(), vmRSS(t, cmd.Process.Pid)
	hello(1000, 3000)
	time.Sleep(time.Second)
	warned := strings.Count(logs.String(), "does not cover")
	files1, rss1 := tlsFiles(), vmRSS(t, cmd.Process.Pid)
	t.Logf("4,000 distinct SNI names: %d warnings, STORE/tls entries %d -> %d, RSS %.1f -> %.1f MiB", warned, files0, files1, float64(rss0)/(1<<20), float64(rss1)/(1<<20))
	if warned > 256 || files1 != files0 || rss1-rss0 > 16<<20 {
		t.Errorf("SNI flood: %d warnings, %d new files in STORE/tls, RSS +%d", warned, files1-files0, rss1-rss0)
	}
}

// TestAttackServeSlowloris (refused, kept as a guard): a connection that
// never sends a ClientHello, and one that sends its request a byte a
// second, are both closed by ReadHeaderTimeout.
func TestAttackServeSlowloris(t *testing.T) {
	addr, tc, _, _ := attackServe(t)
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

// TestAttackServeMetricsExposed: with the default configuration any
// client on the network reads /metrics on the main listener: which
// provider and module versions the site's engineers download, and serve's
// open file descriptors and memory, live feedback for the connection
// attacks above. The operator should have to ask for that.
func TestAttackServeMetricsExposed(t *testing.T) {
	addr, tc, _, cat := attackServe(t)
	p := cat.Providers[0]
	pk := p.Packages[0]
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	for _, path := range []string{"/blobs/sha256/" + pk.Digest.Hex() + "/" + pk.Filename, "/metrics"} {
		resp, err := cl.Get("https://" + addr + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if path == "/metrics" && resp.StatusCode == 200 {
			for _, l := range strings.Split(string(body), "\n") {
				if strings.HasPrefix(l, "airgap_downloads_total{") || strings.HasPrefix(l, "process_open_fds") {
					t.Logf("any client reads: %s", l)
				}
			}
			t.Errorf("/metrics answers any client on the main listener by default (%d bytes)", len(body))
		}
	}
}

// TestAttackServeDownloadCountInflated: every 206 answer counts as a
// download in airgap_downloads_total, so any client makes any version look
// popular (or hides real use in noise) with cheap one-byte Range requests.
func TestAttackServeDownloadCountInflated(t *testing.T) {
	addr, tc, _, cat := attackServe(t)
	p := cat.Providers[0]
	pk := p.Packages[0]
	cl := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: tc}}
	const n = 50
	for i := 0; i < n; i++ {
		req, _ := http.NewRequest("GET", "https://"+addr+"/blobs/sha256/"+pk.Digest.Hex()+"/"+pk.Filename, nil)
		req.Header.Set("Range", "bytes=0-0")
		resp, err := cl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := cl.Get("https://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "airgap_downloads_total{") && strings.Contains(l, p.Version) {
			t.Logf("after %d one-byte Range requests (%d bytes sent in all): %s", n, n, l)
			if strings.HasSuffix(l, fmt.Sprint(" ", n)) {
				t.Errorf("%d one-byte ranges counted as %d downloads", n, n)
			}
		}
	}
}
