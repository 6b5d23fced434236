package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// framingMux answers the paths the HTTPServer tests and the fuzz target use,
// one per way a handler can shape its answer.
func framingMux() http.Handler {
	big := bytes.Repeat([]byte("0123456789abcdef"), (holdMax+100)/16)
	m := http.NewServeMux()
	m.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) { // declared length, as the registry answers
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "11")
		w.Write([]byte(`{"ok":true}`))
	})
	m.HandleFunc("/small", func(w http.ResponseWriter, r *http.Request) { // no length, fits the hold buffer
		io.WriteString(w, "<html>hello</html>")
	})
	m.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) { // no length, too big to hold
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write(big[:100])
		w.Write(big[100:])
	})
	m.HandleFunc("/file", func(w http.ResponseWriter, r *http.Request) { // Range and HEAD via net/http
		http.ServeContent(w, r, "f.bin", time.Unix(1, 0), bytes.NewReader(big))
	})
	m.HandleFunc("/empty", func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) })
	m.HandleFunc("/short", func(w http.ResponseWriter, r *http.Request) { // declares more than it writes
		w.Header().Set("Content-Length", "10")
		io.WriteString(w, "12345")
	})
	m.HandleFunc("/inject", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Echo", "a\r\nSet-Cookie: evil=1")
		w.Header()["Bad Key"] = []string{"x"}
	})
	m.HandleFunc("/panic", func(w http.ResponseWriter, r *http.Request) { panic("handler bug") })
	m.HandleFunc("/flush", func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "part1")
		w.(http.Flusher).Flush()
		io.WriteString(w, "part2")
	})
	return m
}

// startHTTP serves h on loopback, plain or over TLS with a test certificate.
func startHTTP(t *testing.T, h http.Handler, useTLS bool, tweak func(*HTTPServer)) (*HTTPServer, string, *http.Client) {
	t.Helper()
	hs := NewHTTPServer(h, nil)
	if tweak != nil {
		tweak(hs)
	}
	cl := &http.Client{Transport: &http.Transport{}}
	if useTLS {
		ca, err := LoadOrCreateCA(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		der, err := ca.Sign(&key.PublicKey, nil, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		hs.TLSConfig = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}
		HTTP1Only(hs.TLSConfig)
		pool := x509.NewCertPool()
		pool.AddCert(ca.Cert)
		cl.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}, ForceAttemptHTTP2: true}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	t.Cleanup(func() {
		hs.Close()
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve returned %v, want http.ErrServerClosed", err)
		}
	})
	return hs, ln.Addr().String(), cl
}

// exchange writes raw request bytes on one connection and reads answers
// with net/http's response parser.
func exchange(t *testing.T, addr, raw string, n int) []*http.Response {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	var out []*http.Response
	for i := 0; i < n; i++ {
		method := "GET"
		if strings.HasPrefix(raw, "HEAD") {
			method = "HEAD"
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("answer %d to %q: %v", i+1, raw, err)
		}
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("answer %d body to %q: %v", i+1, raw, err)
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		out = append(out, resp)
	}
	return out
}

func bodyOf(r *http.Response) string {
	b, _ := io.ReadAll(r.Body)
	return string(b)
}

func TestHTTPServerFraming(t *testing.T) {
	_, addr, cl := startHTTP(t, framingMux(), false, nil)
	url := "http://" + addr

	t.Run("keep-alive and pipelining", func(t *testing.T) {
		rs := exchange(t, addr, "GET /json HTTP/1.1\r\nHost: x\r\n\r\nGET /small HTTP/1.1\r\nHost: x\r\n\r\n", 2)
		if got := bodyOf(rs[0]); got != `{"ok":true}` || rs[0].Header.Get("Content-Type") != "application/json" {
			t.Errorf("first answer %q %v", got, rs[0].Header)
		}
		if got := bodyOf(rs[1]); got != "<html>hello</html>" || rs[1].ContentLength != 18 || rs[1].Close {
			t.Errorf("second answer %q length %d close %v", got, rs[1].ContentLength, rs[1].Close)
		}
		if ct := rs[1].Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/html") {
			t.Errorf("sniffed Content-Type %q", ct)
		}
		if rs[1].Header.Get("Date") == "" {
			t.Error("no Date header")
		}
	})
	t.Run("unknown length: chunked on 1.1, close-delimited on 1.0", func(t *testing.T) {
		rs := exchange(t, addr, "GET /big HTTP/1.1\r\nHost: x\r\n\r\nGET /json HTTP/1.1\r\nHost: x\r\n\r\n", 2)
		if len(rs[0].TransferEncoding) != 1 || len(bodyOf(rs[0])) != holdMax+100-(holdMax+100)%16 {
			t.Errorf("1.1: transfer encoding %v", rs[0].TransferEncoding)
		}
		rs = exchange(t, addr, "GET /big HTTP/1.0\r\n\r\n", 1)
		if !rs[0].Close || rs[0].ContentLength != -1 || len(bodyOf(rs[0])) != holdMax+100-(holdMax+100)%16 {
			t.Errorf("1.0: close %v length %d", rs[0].Close, rs[0].ContentLength)
		}
	})
	t.Run("HEAD, 204, Range", func(t *testing.T) {
		rs := exchange(t, addr, "HEAD /file HTTP/1.1\r\nHost: x\r\n\r\n", 1)
		if rs[0].ContentLength <= 0 || bodyOf(rs[0]) != "" {
			t.Errorf("HEAD: length %d", rs[0].ContentLength)
		}
		resp, err := cl.Get(url + "/empty")
		if err != nil || resp.StatusCode != 204 || resp.ContentLength > 0 {
			t.Fatalf("204: %v %v", resp, err)
		}
		req, _ := http.NewRequest("GET", url+"/file", nil)
		req.Header.Set("Range", "bytes=16-31")
		resp, err = cl.Do(req)
		if err != nil || resp.StatusCode != 206 || bodyOf(resp) != "0123456789abcdef" {
			t.Fatalf("Range: %v %v", resp, err)
		}
	})
	t.Run("flush", func(t *testing.T) {
		resp, err := cl.Get(url + "/flush")
		if err != nil || bodyOf(resp) != "part1part2" {
			t.Fatalf("%v %v", resp, err)
		}
	})
	t.Run("short body closes the connection", func(t *testing.T) {
		c, _ := net.Dial("tcp", addr)
		defer c.Close()
		io.WriteString(c, "GET /short HTTP/1.1\r\nHost: x\r\n\r\n")
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		b, err := io.ReadAll(c)
		if err != nil || !strings.HasSuffix(string(b), "\r\n\r\n12345") {
			t.Errorf("got %q %v", b, err)
		}
	})
	t.Run("header injection", func(t *testing.T) {
		rs := exchange(t, addr, "GET /inject HTTP/1.1\r\nHost: x\r\n\r\n", 1)
		if rs[0].Header.Get("Set-Cookie") != "" || rs[0].Header.Get("X-Echo") != "a  Set-Cookie: evil=1" {
			t.Errorf("header %v", rs[0].Header)
		}
	})
	t.Run("request with a body is answered, then the connection closes", func(t *testing.T) {
		rs := exchange(t, addr, "POST /json HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nGET /x", 1)
		if !rs[0].Close || bodyOf(rs[0]) != `{"ok":true}` {
			t.Errorf("close %v", rs[0].Close)
		}
	})
	t.Run("bad requests", func(t *testing.T) {
		for _, tc := range []struct {
			raw  string
			code int
		}{
			{"GET /json HTTP/1.1\r\n\r\n", 400},                             // no Host
			{"GET /json HTTP/1.1\r\nHost: a b\r\n\r\n", 400},                // bad Host
			{"BLAH\r\n\r\n", 400},                                           // not HTTP
			{"GET /json HTTP/1.1\r\nBad Header: x\r\nHost: x\r\n\r\n", 400}, // bad field name
			{"GET /json HTTP/1.1\r\nHost: x\r\nX: " + strings.Repeat("a", 40<<10) + "\r\n\r\n", 431},
			{"GET /json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n", 200}, // answered, then closed
		} {
			rs := exchange(t, addr, tc.raw, 1)
			if rs[0].StatusCode != tc.code || !rs[0].Close {
				t.Errorf("%.40q: %s close %v, want %d", tc.raw, rs[0].Status, rs[0].Close, tc.code)
			}
		}
	})
	t.Run("a panic costs only its connection", func(t *testing.T) {
		if _, err := cl.Get(url + "/panic"); err == nil {
			t.Error("a panicking handler answered")
		}
		if resp, err := cl.Get(url + "/json"); err != nil || resp.StatusCode != 200 {
			t.Errorf("after a panic: %v %v", resp, err)
		}
	})
}

func TestHTTPServerTLS(t *testing.T) {
	_, addr, cl := startHTTP(t, framingMux(), true, nil)
	for i := 0; i < 3; i++ { // on one kept-alive connection
		resp, err := cl.Get("https://" + addr + "/json")
		if err != nil {
			t.Fatal(err)
		}
		if resp.ProtoMajor != 1 || resp.TLS == nil || bodyOf(resp) != `{"ok":true}` {
			t.Fatalf("answer %s tls %v", resp.Proto, resp.TLS != nil)
		}
		resp.Body.Close()
	}
	// Plain HTTP to the TLS port gets a readable hint, not garbage.
	rs := exchange(t, addr, "GET /json HTTP/1.1\r\nHost: x\r\n\r\n", 1)
	if rs[0].StatusCode != 400 || !strings.Contains(bodyOf(rs[0]), "https://") {
		t.Errorf("plain HTTP on the TLS port: %s", rs[0].Status)
	}
}

func TestHTTPServerTimeouts(t *testing.T) {
	_, addr, _ := startHTTP(t, framingMux(), false, func(hs *HTTPServer) {
		hs.IdleTimeout = 300 * time.Millisecond
		hs.ReadHeaderTimeout = 300 * time.Millisecond
	})
	for _, raw := range []string{"", "GET /json HTTP/1.1\r\nHost: x\r\n"} { // idle; half a request
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		io.WriteString(c, raw)
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		start := time.Now()
		n, err := c.Read(make([]byte, 1))
		if n != 0 || err != io.EOF {
			t.Errorf("%q: read %d %v, want EOF", raw, n, err)
		}
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("%q: cut after %v", raw, d)
		}
		c.Close()
	}
}

// TestHTTPServerShutdown: Shutdown closes idle connections at once, refuses
// new ones, and waits for a download in flight to finish.
func TestHTTPServerShutdown(t *testing.T) {
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
	hs, addr, cl := startHTTP(t, h, false, nil)
	// An idle keep-alive connection.
	idle, _ := net.Dial("tcp", addr)
	defer idle.Close()
	io.WriteString(idle, "GET /x HTTP/1.1\r\nHost: x\r\n\r\n")
	idleBR := bufio.NewReader(idle)
	if resp, err := http.ReadResponse(idleBR, nil); err != nil || bodyOf(resp) != "ok" {
		t.Fatal(resp, err)
	}
	slow := make(chan string)
	go func() {
		resp, err := cl.Get("http://" + addr + "/slow")
		if err != nil {
			slow <- err.Error()
			return
		}
		b, err := io.ReadAll(resp.Body)
		slow <- fmt.Sprint(string(b), " ", err)
	}()
	started.Wait()
	done := make(chan error)
	go func() { done <- hs.Shutdown(context.Background()) }()
	idle.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := idleBR.ReadByte(); err != io.EOF {
		t.Errorf("idle connection during Shutdown: %v, want EOF", err)
	}
	if _, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		t.Error("a new connection was accepted during Shutdown")
	}
	select {
	case err := <-done:
		t.Fatalf("Shutdown returned %v with a download in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	if got := <-slow; got != "12345678 <nil>" {
		t.Errorf("download in flight: %q", got)
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// fakeConn feeds a fuzz input to a conn and keeps what it answers.
type fakeConn struct {
	in  *bytes.Reader
	out bytes.Buffer
}

func (f *fakeConn) Read(p []byte) (int, error)       { return f.in.Read(p) }
func (f *fakeConn) Write(p []byte) (int, error)      { return f.out.Write(p) }
func (f *fakeConn) Close() error                     { return nil }
func (f *fakeConn) LocalAddr() net.Addr              { return &net.TCPAddr{} }
func (f *fakeConn) RemoteAddr() net.Addr             { return &net.TCPAddr{} }
func (f *fakeConn) SetDeadline(time.Time) error      { return nil }
func (f *fakeConn) SetReadDeadline(time.Time) error  { return nil }
func (f *fakeConn) SetWriteDeadline(time.Time) error { return nil }

// errorLog fails the fuzz run on any Error record (the connection loop logs
// its own panics there instead of crashing).
type errorLog struct {
	slog.Handler
	t *testing.T
}

func (e errorLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && !strings.Contains(r.Message, "panic serving") {
		e.t.Errorf("logged: %s", r.Message)
	}
	return nil
}

// FuzzHTTPConn feeds arbitrary bytes to the connection loop: it must not
// crash, and everything it writes must parse as HTTP answers whose framing
// holds (so no answer can bleed into the next).
func FuzzHTTPConn(f *testing.F) {
	for _, s := range []string{
		"GET /json HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /big HTTP/1.1\r\nHost: x\r\n\r\nHEAD /file HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /file HTTP/1.1\r\nHost: x\r\nRange: bytes=1-3,5-9\r\n\r\n",
		"GET /small HTTP/1.0\r\n\r\n",
		"POST /json HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"GET /short HTTP/1.1\r\nHost: x\r\n\r\nGET /empty HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /inject HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
		"GET /flush HTTP/1.1\r\nHost: x\r\n\r\nGET http://y/json HTTP/1.1\r\n\r\n",
		"HEAD * HTTP/1.1\n\n", // found by fuzzing: a 400 to HEAD carried a body
	} {
		f.Add([]byte(s))
	}
	h := framingMux()
	f.Fuzz(func(t *testing.T, in []byte) {
		hs := NewHTTPServer(h, slog.New(errorLog{slog.DiscardHandler, t}))
		fc := &fakeConn{in: bytes.NewReader(in)}
		c := hs.newConn(fc)
		c.serve()
		br := bufio.NewReader(&fc.out)
		reqs := bufio.NewReader(bytes.NewReader(in))
		for i := 0; ; i++ {
			if _, err := br.Peek(1); err == io.EOF {
				return
			}
			// The answer's framing depends on its request (HEAD).
			req, err := http.ReadRequest(reqs)
			if err != nil {
				req = nil
			}
			resp, err := http.ReadResponse(br, req)
			if err != nil {
				t.Fatalf("answer %d does not parse: %v\n%q", i+1, err, fc.out.String())
			}
			n, err := io.Copy(io.Discard, resp.Body)
			last := func() bool { _, err := br.Peek(1); return err == io.EOF }
			if err != nil && !(errors.Is(err, io.ErrUnexpectedEOF) && last()) {
				t.Fatalf("answer %d body: %v", i+1, err)
			}
			if resp.ContentLength >= 0 && n != resp.ContentLength && !last() {
				t.Fatalf("answer %d: %d of %d body bytes, then more answers", i+1, n, resp.ContentLength)
			}
			if resp.Close && !last() {
				t.Fatalf("answer %d says Connection: close, then more answers", i+1)
			}
			if req == nil && !last() {
				t.Fatalf("answer %d to an unparsable request, then more answers", i+1)
			}
			if req != nil && req.ContentLength != 0 && !resp.Close {
				t.Fatalf("answer %d to a request with a body keeps the connection", i+1)
			}
		}
	})
}
