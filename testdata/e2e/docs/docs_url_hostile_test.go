package docs

import (
	"bufio"
	"encoding/pem"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// plainSniffer is a listener that hands TLS connections on and reads a
// plain-text request itself, keeping its Authorization header: what a
// network observer would see of a request sent in the clear.
type plainSniffer struct {
	net.Listener
	mu   sync.Mutex
	seen []string
}

func (l *plainSniffer) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		br := bufio.NewReader(c)
		b, err := br.Peek(1)
		if err == nil && b[0] == 0x16 { // a TLS handshake
			return &peeked{c, br}, nil
		}
		if req, err := http.ReadRequest(br); err == nil {
			l.mu.Lock()
			l.seen = append(l.seen, req.Header.Get("Authorization"))
			l.mu.Unlock()
		}
		c.Close()
	}
}

type peeked struct {
	net.Conn
	r *bufio.Reader
}

func (p *peeked) Read(b []byte) (int, error) { return p.r.Read(b) }

// TestDocsURLHostileAppliance: 'airgap docs --url' against a hostile
// appliance (a TLS server on loopback that answers as it likes): a page
// named on the same host and port but over http:// is refused, and the
// token is never sent in the clear (it was: the check compared the host
// only); answers over the bounds, slow answers and terminal escapes in
// what it says are bounded and escaped.
func TestDocsURLHostileAppliance(t *testing.T) {
	t.Parallel()
	var base string
	mode := "plain"
	var mu sync.Mutex
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		m := mode
		mu.Unlock()
		switch {
		case r.URL.Path == "/ui/docs/pages.json" && m == "plain":
			fmt.Fprintf(w, `{"provider":"registry.terraform.io/acme/x","version":"1.0.0","summary":"s","pages":[{"page":"resources/x","raw":%q,"size":10}]}`,
				strings.Replace(base, "https://", "http://", 1)+"ui/raw")
		case r.URL.Path == "/ui/docs/pages.json" && m == "escape":
			w.WriteHeader(403)
			fmt.Fprint(w, `{"errors":["nope \u001b]0;owned\u0007 \u001b[2J"]}`)
		case r.URL.Path == "/ui/docs/pages.json" && m == "huge":
			w.Write([]byte(`{"pages":[`))
			chunk := []byte(strings.Repeat(`{"page":"a","raw":"b","size":1},`, 1000))
			for range 400 { // 12 MiB, over the 8 MiB read
				w.Write(chunk)
			}
		case r.URL.Path == "/ui/docs/pages.json" && m == "slow":
			w.Write([]byte(`{"pages":[`))
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
			case <-time.After(40 * time.Second):
			}
		}
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sniff := &plainSniffer{Listener: ln}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener = sniff
	srv.StartTLS()
	defer srv.Close()
	base = srv.URL + "/"
	ca := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o644)
	tok := filepath.Join(t.TempDir(), "token")
	secret := "airgap_" + strings.Repeat("S", 43)
	os.WriteFile(tok, []byte(secret+"\n"), 0o600)
	run := func(m string) (string, string, int, time.Duration) {
		mu.Lock()
		mode = m
		mu.Unlock()
		start := time.Now()
		out, errOut, code := harness.RunSplit(t, "", nil, "docs", "--url", base, "--ca", ca, "--token-file", tok, "acme/x", "x")
		return out, errOut, code, time.Since(start)
	}
	_, errOut, code, _ := run("plain")
	sniff.mu.Lock()
	seen := append([]string(nil), sniff.seen...)
	sniff.mu.Unlock()
	if len(seen) > 0 {
		t.Errorf("the token went over plain http: %q", seen)
	}
	if code != 1 || !strings.Contains(errOut, "the appliance named a page outside it") {
		t.Errorf("a page named over http on the same host (exit %d):\n%s", code, errOut)
	}
	withUser := strings.Replace(base, "https://", "https://u:p@", 1)
	if _, e, c := harness.RunSplit(t, "", nil, "docs", "--url", withUser, "--ca", ca, "--token-file", tok, "acme/x", "x"); c != 2 || !strings.Contains(e, "--url takes no user name or password") {
		t.Errorf("--url with a user name (exit %d):\n%s", c, e)
	}
	_, errOut, code, _ = run("escape")
	if code != 1 || strings.ContainsAny(errOut, "\x1b\x07") || !strings.Contains(errOut, `\x1b]0;owned`) {
		t.Errorf("the appliance's refusal with terminal escapes (exit %d):\n%q", code, errOut)
	}
	_, errOut, code, _ = run("huge")
	if code != 1 || !strings.Contains(errOut, "more than this reads") {
		t.Errorf("a 12 MiB answer (exit %d):\n%s", code, errOut)
	}
	_, errOut, code, took := run("slow")
	if code != 1 || took > 35*time.Second {
		t.Errorf("an answer that never ends: exit %d after %s\n%s", code, took, errOut)
	}
	t.Logf("an answer that never ends: refused after %s: %s", took.Round(time.Second), strings.TrimSpace(errOut))
}
