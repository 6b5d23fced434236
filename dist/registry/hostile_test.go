package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// hostile serves h over TLS on loopback and counts requests and connections.
type hostile struct {
	srv   *httptest.Server
	reqs  atomic.Int64
	conns atomic.Int64
}

func newHostile(t *testing.T, h http.HandlerFunc) *hostile {
	t.Helper()
	hs := &hostile{}
	hs.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hs.reqs.Add(1)
		h(w, r)
	}))
	hs.srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			hs.conns.Add(1)
		}
	}
	hs.srv.StartTLS()
	t.Cleanup(hs.srv.Close)
	return hs
}

func testClient(tr http.RoundTripper) *Client {
	c := New(Options{Transport: tr})
	c.Backoff = time.Millisecond
	return c
}

func endless(w http.ResponseWriter, r *http.Request) {
	buf := make([]byte, 32<<10)
	for r.Context().Err() == nil {
		if _, err := w.Write(buf); err != nil {
			return
		}
	}
}

// TestRetryClasses: transient errors (5xx, 429, dropped connections) are
// retried; every permanent one fails at the first attempt.
func TestRetryClasses(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		name      string
		h         http.HandlerFunc
		url       func(base string) string
		wantReqs  int64 // requests the handler saw
		wantErr   error
		wantInMsg string
	}{
		{"503 is transient", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "busy", http.StatusServiceUnavailable) }, nil, 4, ErrStatus, "503"},
		{"429 is transient", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "slow down", http.StatusTooManyRequests) }, nil, 4, ErrStatus, "429"},
		{"404 is permanent", http.NotFound, nil, 1, ErrStatus, "404"},
		{"403 is permanent", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no", http.StatusForbidden) }, nil, 1, ErrStatus, "403"},
		{"a redirect loop is permanent", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, r.URL.Path, http.StatusFound) },
			nil, maxRedirects + 1, ErrTooManyRedirects, "redirect loop"},
		{"a redirect to ftp is permanent", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Location", "ftp://example.com/x.zip")
			w.WriteHeader(http.StatusFound)
		}, nil, 1, ErrUnsupportedScheme, `"ftp"`},
		{"an ftp URL is never requested", nil, func(string) string { return "ftp://127.0.0.1/x.zip" }, 0, ErrUnsupportedScheme, `"ftp"`},
		{"an endless body stops at the limit", endless, nil, 1, ErrTooLarge, "limit of 1.0 MiB"},
		{"a stated size over the limit is refused", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "2097152")
			w.Write(make([]byte, 1024))
		}, nil, 1, ErrTooLarge, "2.0 MiB"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := tc.h
			if h == nil {
				h = http.NotFound
			}
			hs := newHostile(t, h)
			c := testClient(hs.srv.Client().Transport)
			u := hs.srv.URL + "/p/x.zip"
			if tc.url != nil {
				u = tc.url(hs.srv.URL)
			}
			for _, kind := range []string{"Download", "DownloadResumable", "Fetch"} {
				before := hs.reqs.Load()
				dir := t.TempDir()
				var err error
				switch kind {
				case "Download":
					_, _, err = c.Download(ctx, u, filepath.Join(dir, "f"), 1<<20)
				case "DownloadResumable":
					_, _, err = c.DownloadResumable(ctx, u, filepath.Join(dir, "f"), 1<<20)
				case "Fetch":
					_, err = c.Fetch(ctx, u, 1<<20)
				}
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantInMsg) || !strings.Contains(err.Error(), u) {
					t.Errorf("%s: err = %v, want %v mentioning %q and the URL", kind, err, tc.wantErr, tc.wantInMsg)
				}
				if got := hs.reqs.Load() - before; got != tc.wantReqs {
					t.Errorf("%s: %d requests, want %d", kind, got, tc.wantReqs)
				}
				if errors.Is(err, ErrTooLarge) && kind != "Fetch" {
					if _, serr := os.Stat(filepath.Join(dir, "f")); serr == nil {
						t.Errorf("%s: the file of a download over the limit was kept", kind)
					}
				}
			}
		})
	}
}

// TestUntrustedCertificateIsPermanent: a TLS certificate the client does
// not trust fails after one connection, with x509's reason.
func TestUntrustedCertificateIsPermanent(t *testing.T) {
	hs := newHostile(t, http.NotFound)
	c := testClient(http.DefaultTransport.(*http.Transport).Clone()) // does not trust the test CA
	_, _, err := c.DownloadResumable(context.Background(), hs.srv.URL+"/x.zip", filepath.Join(t.TempDir(), "f"), 1<<20)
	if err == nil || !strings.Contains(err.Error(), "certificate") || !strings.Contains(err.Error(), "hint: ") {
		t.Fatalf("err = %v, want a certificate error", err)
	}
	if n := hs.conns.Load(); n != 1 {
		t.Errorf("%d connections, want 1 (no retries)", n)
	}
}

// TestDroppedConnectionsAreTransient: a server that accepts and closes
// connections is retried.
func TestDroppedConnectionsAreTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted atomic.Int64
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			conn.Close()
		}
	}()
	c := testClient(nil)
	_, err = c.Fetch(context.Background(), "http://"+ln.Addr().String()+"/x", 1<<20)
	if err == nil || !Transient(err) {
		t.Fatalf("err = %v, want a transient error", err)
	}
	if n := accepted.Load(); n < int64(c.Retries+1) {
		t.Errorf("%d connections, want at least %d (retries)", n, c.Retries+1)
	}
}

// TestServerClosedIdleIsTransient: when the server's hang-up reaches a
// fresh connection before the request is written, net/http reports its
// unexported "server closed idle connection" rather than an EOF. The dial
// below hands over a connection only after the server has closed it, which
// and the pause before the write make that case the usual one; it must be judged transient like the EOF.
func TestServerClosedIdleIsTransient(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan struct{}, 1)
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			conn.Close()
			closed <- struct{}{}
		}
	}()
	tr := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
		if err == nil {
			<-closed
		}
		return conn, err
	}}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr}
	seen := 0
	for range 20 {
		// GotConn runs between the dial and the request's write: waiting
		// there lets the connection's reader see the hang-up first.
		trace := &httptrace.ClientTrace{GotConn: func(httptrace.GotConnInfo) { time.Sleep(20 * time.Millisecond) }}
		req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), "GET", "http://"+ln.Addr().String()+"/x", nil)
		resp, err := cl.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatal("a server that hangs up answered")
		}
		if !Transient(err) {
			t.Fatalf("err = %v, judged permanent", err)
		}
		if serverClosedIdle(err) {
			seen++
		}
	}
	if seen == 0 {
		t.Fatal(`never saw net/http's "server closed idle connection" in 20 tries: has its text changed?`)
	}
}

// TestJSONLimits: discovery documents over 1 MiB and registry answers over
// MaxAPIDocumentSize are refused with ErrTooLarge, even without a
// Content-Length.
func TestJSONLimits(t *testing.T) {
	big := func(n int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.(http.Flusher).Flush() // no Content-Length
			w.Write([]byte(`{"versions":[` + strings.Repeat(`{"version":"1.0.0"},`, n/20) + `{"version":"1.0.0"}]}`))
		}
	}
	hs := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/.well-known/terraform.json" {
			big(MaxDiscoverySize+100)(w, r)
			return
		}
		big(MaxAPIDocumentSize+100)(w, r)
	})
	c := testClient(hs.srv.Client().Transport)
	host := strings.TrimPrefix(hs.srv.URL, "https://")
	if _, err := c.Services(context.Background(), host); !errors.Is(err, ErrTooLarge) {
		t.Errorf("discovery: err = %v, want ErrTooLarge", err)
	}
	c2 := testClient(hs.srv.Client().Transport)
	u, _ := url.Parse(hs.srv.URL + "/v1/providers/")
	c2.SetServices(host, map[string]*url.URL{"providers.v1": u})
	if _, err := c2.ProviderVersions(context.Background(), host, "h", "x"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("versions: err = %v, want ErrTooLarge", err)
	}
}

// TestStalledBodyIsResumed: a server that sends part of a body and then
// nothing is cut off after IdleTimeout; the download resumes from what it
// got, and fails once retries are spent. Download and Fetch fail too.
func TestStalledBodyIsResumed(t *testing.T) {
	var ranges atomic.Int64
	hs := newHostile(t, func(w http.ResponseWriter, r *http.Request) {
		var off int64
		if _, err := fmt.Sscanf(r.Header.Get("Range"), "bytes=%d-", &off); err == nil {
			ranges.Add(1)
			w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-999999/1000000", off))
			w.Header().Set("Content-Length", fmt.Sprint(1000000-off))
			w.WriteHeader(http.StatusPartialContent)
		} else {
			w.Header().Set("Content-Length", "1000000")
		}
		w.Write(make([]byte, 1000))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	c := testClient(hs.srv.Client().Transport)
	c.IdleTimeout = 100 * time.Millisecond
	part := filepath.Join(t.TempDir(), "f")
	start := time.Now()
	_, _, err := c.DownloadResumable(context.Background(), hs.srv.URL+"/x.zip", part, 1<<20)
	if err == nil || !strings.Contains(err.Error(), "nothing received for 100ms") {
		t.Fatalf("err = %v, want an idle timeout", err)
	}
	if n := hs.reqs.Load(); n != int64(c.Retries+1) {
		t.Errorf("%d requests, want %d", n, c.Retries+1)
	}
	if n := ranges.Load(); n != int64(c.Retries) {
		t.Errorf("%d range requests, want %d (each retry resumes)", n, c.Retries)
	}
	if fi, err := os.Stat(part); err != nil || fi.Size() != int64(1000*(c.Retries+1)) {
		t.Errorf("partial: %v %v, want %d bytes kept for a later run", fi, err, 1000*(c.Retries+1))
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %s", d)
	}
	_, _, err = c.Download(context.Background(), hs.srv.URL+"/x.tar.gz", filepath.Join(t.TempDir(), "g"), 1<<20)
	if err == nil || !strings.Contains(err.Error(), "nothing received for 100ms") {
		t.Errorf("Download: err = %v, want an idle timeout", err)
	}
	if _, err = c.Fetch(context.Background(), hs.srv.URL+"/SHA256SUMS", 1<<20); err == nil || !strings.Contains(err.Error(), "nothing received for 100ms") {
		t.Errorf("Fetch: err = %v, want an idle timeout", err)
	}
}
