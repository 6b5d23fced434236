package ops_test

import (
	"errors"
	"io"
	"net"
	"net/netip"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/airgap/airgap/server/ops"
)

// limited listens on loopback through LimitConns and accepts in the
// background; accepted connections are sent on the returned channel.
func limited(t *testing.T, lim ops.ConnLimits) (string, chan net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	l := ops.LimitConns(ln, lim)
	ch := make(chan net.Conn, 1024)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	}()
	return ln.Addr().String(), ch
}

// kept dials n connections from src and counts those the listener kept
// open (a refused one reads EOF at once).
func kept(t *testing.T, src, addr string, n int) (held []net.Conn) {
	t.Helper()
	for i := 0; i < n; i++ {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		if _, err := c.Read(make([]byte, 1)); errors.Is(err, os.ErrDeadlineExceeded) {
			held = append(held, c) // still open
		}
	}
	return held
}

func TestLimitConns(t *testing.T) {
	var refused atomic.Int32
	addr, _ := limited(t, ops.ConnLimits{Max: 12, PerIP: 5,
		Exempt:  func(a netip.Addr) bool { return a == netip.MustParseAddr("127.0.0.3") },
		Refused: func(string) { refused.Add(1) }})
	a := kept(t, "127.0.0.1", addr, 8)
	p := kept(t, "127.0.0.3", addr, 6)
	b := kept(t, "127.0.0.2", addr, 4)
	if len(a) != 5 || len(p) != 6 || len(b) != 1 || refused.Load() != 3+3 {
		t.Fatalf("kept %d, %d, %d; refused %d: want 5 (per address), 6 (exempt), 1 (total 12), 6 refused", len(a), len(p), len(b), refused.Load())
	}
}

func TestLimitConnsReleases(t *testing.T) {
	addr, accepted := limited(t, ops.ConnLimits{Max: 100, PerIP: 2})
	held := kept(t, "127.0.0.1", addr, 3)
	if len(held) != 2 {
		t.Fatalf("kept %d, want 2", len(held))
	}
	// The server closes one of its connections: the slot is free again.
	(<-accepted).Close()
	if again := kept(t, "127.0.0.1", addr, 1); len(again) != 1 {
		t.Fatal("no slot after the server closed a connection")
	}
}

// TestSendTimeout: a write to a client that reads nothing fails after
// SendTimeout; a client that reads slowly, pausing for less than
// SendTimeout each time, gets everything however long it takes in all.
func TestSendTimeout(t *testing.T) {
	// Userspace sees a write progress only once the kernel's send buffer
	// (up to 4 MiB on loopback) has drained to its low-water mark, so a
	// reader must move about 2 MiB per SendTimeout to count as moving: at
	// the default 60 s, about 35 KiB/s.
	const timeout = time.Second
	addr, accepted := limited(t, ops.ConnLimits{SendTimeout: timeout})
	dial := func() (client, srv net.Conn) {
		c, err := smallWindow.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, <-accepted
	}
	chunk := make([]byte, 64<<10)

	_, stalled := dial()
	start := time.Now()
	var err error
	for err == nil && time.Since(start) < 10*time.Second {
		_, err = stalled.Write(chunk)
	}
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("writing to a client that reads nothing: %v after %v", err, time.Since(start))
	}
	t.Logf("a stalled write failed after %v", time.Since(start).Round(10*time.Millisecond))

	slow, srv := dial()
	const total = 16 << 20
	done := make(chan error, 1)
	go func() {
		for sent := 0; sent < total; sent += len(chunk) {
			if _, err := srv.Write(chunk); err != nil {
				srv.Close()
				done <- err
				return
			}
		}
		done <- srv.Close()
	}()
	start = time.Now()
	buf := make([]byte, 32<<10)
	got, pauses := 0, 0
	for {
		n, err := slow.Read(buf)
		if got/(4<<20) != (got+n)/(4<<20) {
			time.Sleep(timeout * 3 / 4) // the writer blocks, but not for SendTimeout
			pauses++
		}
		got += n
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("slow reader after %d bytes: %v (writer: %v)", got, err, <-done)
		}
	}
	if err := <-done; err != nil || got != total {
		t.Fatalf("slow reader: %d of %d bytes, writer: %v", got, total, err)
	}
	t.Logf("a slow reader got %d MiB in %v, pausing %d times for %v", got>>20, time.Since(start).Round(10*time.Millisecond), pauses, timeout*3/4)
	if time.Since(start) < 2*timeout {
		t.Error("the slow reader was not slower than SendTimeout: the test proves nothing")
	}
}

// smallWindow dials with a 4 KiB receive buffer, set before connecting:
// shrinking it on an open connection makes Linux drop data already in
// flight, and the connection then stalls in retransmission backoff.
var smallWindow = &net.Dialer{Control: func(_, _ string, rc syscall.RawConn) error {
	var err error
	rc.Control(func(fd uintptr) { err = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4<<10) })
	return err
}}

// TestSendTimeoutAndCallerDeadlines: the send deadline is armed lazily
// (not on every write), so the deadlines the conn's user sets must still
// hold as set: an earlier one of the user's cuts a stalled write at its own
// time (crypto/tls bounds close_notify this way), clearing it restores the
// send timeout rather than leaving no deadline, and net/http's clearing
// after each answer never turns the send timeout off.
func TestSendTimeoutAndCallerDeadlines(t *testing.T) {
	const timeout = 600 * time.Millisecond
	addr, accepted := limited(t, ops.ConnLimits{SendTimeout: timeout})
	stalled := func() net.Conn {
		c, err := smallWindow.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return <-accepted
	}
	chunk := make([]byte, 64<<10)
	// fill writes until one fails, and says how long the failing write
	// took (the earlier ones fill the kernel's buffers and return). A
	// write that sent part of its bytes before a timeout made progress and
	// goes on, so it fails one or more timeouts after it began (three on a
	// loaded machine, where the kernel drains the buffer in bits).
	// A write that never times out is cut by closing the conn after 10 s,
	// which fails the check (the error is then not a timeout).
	fill := func(c net.Conn) (time.Duration, error) {
		watchdog := time.AfterFunc(10*time.Second, func() { c.Close() })
		defer watchdog.Stop()
		for {
			last := time.Now()
			if _, err := c.Write(chunk); err != nil {
				return time.Since(last), err
			}
		}
	}
	check := func(name string, took time.Duration, err error, lo, hi time.Duration) {
		t.Helper()
		if !errors.Is(err, os.ErrDeadlineExceeded) || took < lo || took > hi {
			t.Errorf("%s: %v after %v, want a timeout between %v and %v", name, err, took.Round(time.Millisecond), lo, hi)
		}
	}

	// net/http clears the write deadline after every answer: the send
	// timeout stays armed.
	c := stalled()
	c.Write([]byte("x"))
	c.SetWriteDeadline(time.Time{})
	took, err := fill(c)
	check("after a clear", took, err, timeout/2, 6*timeout)

	// An earlier deadline of the user's wins over the send timeout. Timed
	// from setting it: the write that fails is the one under way at the
	// deadline, which begins whenever filling the buffers ends (later than
	// 50 ms in, if the filling goroutine is held up on a loaded machine).
	c = stalled()
	c.Write([]byte("x"))
	set := time.Now()
	c.SetWriteDeadline(set.Add(100 * time.Millisecond))
	_, err = fill(c)
	check("user's earlier deadline", time.Since(set), err, 50*time.Millisecond, timeout/2)

	// A later one does not stretch the send timeout.
	c = stalled()
	c.SetWriteDeadline(time.Now().Add(time.Hour))
	took, err = fill(c)
	check("user's later deadline", took, err, timeout/2, 6*timeout)

	// Clearing the user's deadline brings the send timeout back.
	c = stalled()
	c.SetWriteDeadline(time.Now().Add(50 * time.Millisecond))
	c.SetWriteDeadline(time.Time{})
	took, err = fill(c)
	check("user's deadline cleared", took, err, timeout/2, 6*timeout)

	// blocked fills c in the background and returns once its writes are
	// under way; the answer comes on the channel.
	type result struct {
		took time.Duration
		err  error
	}
	blocked := func(c net.Conn) chan result {
		res := make(chan result, 1)
		go func() { took, err := fill(c); res <- result{took, err} }()
		time.Sleep(timeout / 4)
		return res
	}

	// Set and cleared by another goroutine while a write is blocked, the
	// user's deadline leaves the send timeout in force.
	c = stalled()
	res := blocked(c)
	c.SetWriteDeadline(time.Now().Add(timeout / 2)) // earlier than the armed one
	c.SetWriteDeadline(time.Time{})
	r := <-res
	check("user's deadline set and cleared during a write", r.took, r.err, timeout/2, 6*timeout)

	// A deadline in the past interrupts a write already blocked.
	c = stalled()
	res = blocked(c)
	start := time.Now()
	c.SetDeadline(time.Unix(1, 0))
	select {
	case r := <-res:
		check("past deadline on a blocked write", time.Since(start), r.err, 0, timeout/2)
	case <-time.After(5 * time.Second):
		t.Fatal("a deadline in the past did not interrupt a blocked write")
	}
}
