package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/certs"
)

// stdServer is the appliance's HTTP server (server.NewHTTPServer) serving h
// over TLS on loopback, as 'airgap serve' runs it.
type stdServer struct {
	hs   *http.Server
	addr string
	cl   *http.Client
	tls  *tls.Config // for raw connections
}

func startStd(t *testing.T, h http.Handler, tweak func(*http.Server)) *stdServer {
	t.Helper()
	st, err := certs.New(context.Background(), certs.Options{Mode: certs.ModeLocal, Dir: t.TempDir(), Names: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(st.Stop)
	hs := server.NewHTTPServer(h, nil)
	hs.TLSConfig = st.Config
	server.HTTP1Only(hs.TLSConfig)
	if tweak != nil {
		tweak(hs)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- hs.ServeTLS(ln, "", "") }()
	t.Cleanup(func() {
		hs.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("ServeTLS returned %v, want http.ErrServerClosed", err)
		}
	})
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(st.CAPEM)
	tc := &tls.Config{RootCAs: pool, ServerName: "127.0.0.1"}
	return &stdServer{hs: hs, addr: ln.Addr().String(), tls: tc,
		cl: &http.Client{Transport: &http.Transport{TLSClientConfig: tc, ForceAttemptHTTP2: true}}}
}

// raw opens a TLS connection and writes req on it.
func (s *stdServer) raw(t *testing.T, req string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := tls.Dial("tcp", s.addr, s.tls)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		t.Fatal(err)
	}
	return c, bufio.NewReader(c)
}

// closedWithin reports whether the server closes c within d (reading and
// discarding whatever it still sends).
func closedWithin(c net.Conn, br *bufio.Reader, d time.Duration) (time.Duration, bool) {
	start := time.Now()
	c.SetReadDeadline(start.Add(d))
	_, err := io.Copy(io.Discard, br)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return time.Since(start), false
	}
	return time.Since(start), true
}

// TestStdServerTimeouts: a connection that sends nothing, one that sends
// half a request, and one left idle after a request are all cut.
func TestStdServerTimeouts(t *testing.T) {
	s := startStd(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }), func(hs *http.Server) {
		hs.ReadHeaderTimeout = 300 * time.Millisecond
		hs.IdleTimeout = 600 * time.Millisecond
	})
	t.Run("nothing sent after the TLS handshake", func(t *testing.T) {
		c, br := s.raw(t, "")
		if d, ok := closedWithin(c, br, 3*time.Second); !ok {
			t.Errorf("a silent connection was still open after %v", d)
		}
	})
	t.Run("no TLS handshake", func(t *testing.T) {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if d, ok := closedWithin(c, bufio.NewReader(c), 3*time.Second); !ok {
			t.Errorf("a connection without a handshake was still open after %v", d)
		}
	})
	t.Run("half a request", func(t *testing.T) {
		c, br := s.raw(t, "GET /x HTTP/1.1\r\nHost: x\r\n")
		if d, ok := closedWithin(c, br, 3*time.Second); !ok {
			t.Errorf("a half-sent request was still open after %v", d)
		}
	})
	t.Run("idle after a request", func(t *testing.T) {
		// The idle time is measured from the request's write, which comes
		// before the server's answer and so before its idle timer starts:
		// measured from reading the answer, a client stalled for 200 ms
		// in between (a loaded machine) saw the cut come "early".
		c, br := s.raw(t, "")
		sent := time.Now()
		if _, err := io.WriteString(c, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil || bodyOf(resp) != "ok" || resp.Close {
			t.Fatalf("%v %v", resp, err)
		}
		d, ok := closedWithin(c, br, 3*time.Second)
		if !ok {
			t.Errorf("an idle connection was still open after %v", d)
		}
		if d := time.Since(sent); d < 400*time.Millisecond {
			t.Errorf("an idle connection was cut %v after its request, before the idle timeout", d)
		}
	})
}

func bodyOf(r *http.Response) string {
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	return string(b)
}

// TestStdServerRequests: what net/http does for the appliance at the edges
// of HTTP: header limit, Expect, bodies, plain HTTP on the TLS port.
func TestStdServerRequests(t *testing.T) {
	e := setup(t)
	s := startStd(t, server.New(e.st, server.Options{}), nil)
	t.Run("headers over the limit: 431", func(t *testing.T) {
		_, br := s.raw(t, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", server.MaxHeaderBytes+8<<10)+"\r\n\r\n")
		resp, err := http.ReadResponse(br, nil)
		if err != nil || resp.StatusCode != http.StatusRequestHeaderFieldsTooLarge || !resp.Close {
			t.Errorf("%v %v", resp, err)
		}
		// Just under the limit is fine.
		_, br = s.raw(t, "GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: "+strings.Repeat("a", server.MaxHeaderBytes-1<<10)+"\r\n\r\n")
		if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != 200 {
			t.Errorf("headers under the limit: %v %v", resp, err)
		}
	})
	t.Run("unknown Expect: 417", func(t *testing.T) {
		_, br := s.raw(t, "GET /healthz HTTP/1.1\r\nHost: x\r\nExpect: teapot\r\n\r\n")
		if resp, err := http.ReadResponse(br, nil); err != nil || resp.StatusCode != http.StatusExpectationFailed {
			t.Errorf("%v %v", resp, err)
		}
	})
	// A body announced and never sent must not hold the connection: the
	// answer comes, then the connection closes at once.
	for _, hdr := range []string{"Content-Length: 10", "Transfer-Encoding: chunked", "Content-Length: 10\r\nExpect: 100-continue"} {
		t.Run("announced body, "+hdr, func(t *testing.T) {
			c, br := s.raw(t, "GET /healthz HTTP/1.1\r\nHost: x\r\n"+hdr+"\r\n\r\n")
			resp, err := http.ReadResponse(br, nil)
			if err != nil || resp.StatusCode != 200 || !resp.Close {
				t.Fatalf("%v %v", resp, err)
			}
			bodyOf(resp)
			if d, ok := closedWithin(c, br, 3*time.Second); !ok || d > time.Second {
				t.Errorf("connection still open %v after the answer (closed: %v)", d, ok)
			}
		})
	}
	t.Run("POST: 405", func(t *testing.T) {
		resp, err := s.cl.Post("https://"+s.addr+"/v1/providers/hashicorp/random/versions", "text/plain", strings.NewReader("x"))
		if err != nil || resp.StatusCode != 405 {
			t.Errorf("%v %v", resp, err)
		}
	})
	t.Run("plain HTTP on the TLS port", func(t *testing.T) {
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil || resp.StatusCode != 400 || !strings.Contains(bodyOf(resp), "HTTPS") {
			t.Errorf("%v %v", resp, err)
		}
	})
	t.Run("HTTP/1.1 over TLS, kept alive", func(t *testing.T) {
		for i := 0; i < 3; i++ {
			resp, err := s.cl.Get("https://" + s.addr + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtoMajor != 1 || resp.TLS == nil || resp.TLS.NegotiatedProtocol != "http/1.1" || resp.StatusCode != 200 {
				t.Fatalf("answer %s, ALPN %q", resp.Proto, resp.TLS.NegotiatedProtocol)
			}
			bodyOf(resp)
		}
	})
	t.Run("package: HEAD and Range", func(t *testing.T) {
		pk := e.set.Catalog.Providers[0].Packages[0]
		u := "https://" + s.addr + "/blobs/sha256/" + pk.Digest.Hex() + "/" + pk.Filename
		resp, err := s.cl.Get(u)
		if err != nil || resp.StatusCode != 200 {
			t.Fatal(resp, err)
		}
		full := bodyOf(resp)
		req, _ := http.NewRequest("HEAD", u, nil)
		resp, err = s.cl.Do(req)
		if err != nil || resp.StatusCode != 200 || resp.ContentLength != int64(len(full)) || bodyOf(resp) != "" {
			t.Fatalf("HEAD: %v %v", resp, err)
		}
		req, _ = http.NewRequest("GET", u, nil)
		req.Header.Set("Range", "bytes=100-199")
		resp, err = s.cl.Do(req)
		if err != nil || resp.StatusCode != 206 || bodyOf(resp) != full[100:200] {
			t.Fatalf("Range: %v %v", resp, err)
		}
	})
}

// TestStdServerShutdown: Shutdown closes idle connections at once, refuses
// new ones, and waits for a download in flight to finish.
func TestStdServerShutdown(t *testing.T) {
	release := make(chan struct{})
	var started sync.WaitGroup
	started.Add(1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/slow" {
			w.Header().Set("Content-Length", "8")
			io.WriteString(w, "1234")
			w.(http.Flusher).Flush()
			started.Done()
			<-release
			io.WriteString(w, "5678")
			return
		}
		io.WriteString(w, "ok")
	})
	s := startStd(t, h, nil)
	idle, idleBR := s.raw(t, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
	if resp, err := http.ReadResponse(idleBR, nil); err != nil || bodyOf(resp) != "ok" {
		t.Fatal(resp, err)
	}
	slow := make(chan string)
	go func() {
		resp, err := s.cl.Get("https://" + s.addr + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		b, err := io.ReadAll(resp.Body)
		slow <- fmt.Sprint(string(b), " ", err)
	}()
	started.Wait()
	done := make(chan error)
	go func() { done <- s.hs.Shutdown(context.Background()) }()
	if d, ok := closedWithin(idle, idleBR, 5*time.Second); !ok {
		t.Errorf("idle connection still open %v into Shutdown", d)
	}
	if c, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
		c.Close()
		t.Error("a new connection was accepted during Shutdown")
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a download in flight", err)
	case <-time.After(300 * time.Millisecond):
	}
	close(release)
	if got := <-slow; got != "12345678 <nil>" {
		t.Errorf("download in flight: %q", got)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
