// Package progress shows how a long operation is going: a live status line
// on a terminal (redrawn five times a second, cut to the terminal's width)
// and plain lines otherwise (at most one every ten seconds, so logs stay
// short). export, import, verify, split and join all use it.
//
// With UseJSON (airgap's --log-format json) every line becomes one slog
// JSON record instead: messages at info, the status every ten seconds as a
// "progress" record, and no terminal redrawing at all.
//
// It never reads input; the strings it prints come from the caller, which
// must make untrusted names printable first. Memory is constant.
package progress

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/airgap/airgap/dist"
	"golang.org/x/term"
)

// jsonLog, when set by UseJSON, receives every line as a JSON record.
var jsonLog atomic.Pointer[slog.Logger]

// UseJSON makes every Line of this process write slog JSON records to w
// (one per line) instead of text: for log collectors, with --log-format
// json.
func UseJSON(w io.Writer) { jsonLog.Store(slog.New(slog.NewJSONHandler(w, nil))) }

// JSON returns the JSON logger UseJSON set, or nil.
func JSON() *slog.Logger { return jsonLog.Load() }

// Line is one live status line on w (stderr, usually).
type Line struct {
	mu     sync.Mutex
	w      io.Writer
	fd     int
	tty    bool
	status func(elapsed time.Duration) string
	start  time.Time
	last   time.Time
	plain  time.Duration
	done   chan struct{}
	wg     sync.WaitGroup
}

// Start begins showing status() on w. On a terminal the line is redrawn
// every 200 ms; otherwise status() is printed as a plain line every 10 s.
// status returns "" while there is nothing to show yet.
func Start(w *os.File, status func(elapsed time.Duration) string) *Line {
	l := &Line{w: w, fd: int(w.Fd()), tty: term.IsTerminal(int(w.Fd())) && JSON() == nil, status: status,
		start: time.Now(), plain: 10 * time.Second, done: make(chan struct{})}
	l.last = l.start
	every := 200 * time.Millisecond
	if !l.tty {
		every = time.Second
	}
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-l.done:
				return
			case <-t.C:
				l.mu.Lock()
				l.tick()
				l.mu.Unlock()
			}
		}
	}()
	return l
}

func (l *Line) tick() {
	if l.tty {
		l.draw()
		return
	}
	if time.Since(l.last) >= l.plain {
		l.last = time.Now()
		if s := l.status(time.Since(l.start)); s != "" {
			if j := JSON(); j != nil {
				j.Info("progress", "status", s)
			} else {
				fmt.Fprintln(l.w, s)
			}
		}
	}
}

func (l *Line) draw() {
	s := l.status(time.Since(l.start))
	if s == "" {
		return
	}
	if width, _, err := term.GetSize(l.fd); err == nil && width > 4 && len([]rune(s)) > width-1 {
		s = string([]rune(s)[:width-2]) + "…"
	}
	fmt.Fprintf(l.w, "\r\033[K%s", s)
}

// Logf prints a line above the status line.
func (l *Line) Logf(format string, a ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.tty {
		fmt.Fprint(l.w, "\r\033[K")
	}
	// Log lines carry registry-supplied strings: escape control characters
	// (the JSON handler escapes them itself).
	if j := JSON(); j != nil {
		j.Info(fmt.Sprintf(format, a...))
	} else {
		fmt.Fprintln(l.w, dist.PrintableLines(fmt.Sprintf(format, a...)))
	}
	select {
	case <-l.done: // stopped: no status line any more
	default:
		if l.tty {
			l.draw()
		}
	}
}

// Stop removes the status line. It is safe to call more than once.
func (l *Line) Stop() {
	l.mu.Lock()
	select {
	case <-l.done:
		l.mu.Unlock()
		return
	default:
		close(l.done)
	}
	l.mu.Unlock()
	l.wg.Wait()
	if l.tty {
		fmt.Fprint(l.w, "\r\033[K")
	}
}

// Counter counts the bytes that pass through a reader or writer.
type Counter struct{ n atomic.Int64 }

// N is the count so far.
func (c *Counter) N() int64 { return c.n.Load() }

// Write counts p; a Counter can be the target of an io.TeeReader.
func (c *Counter) Write(p []byte) (int, error) {
	c.n.Add(int64(len(p)))
	return len(p), nil
}

// Reader counts what is read from r.
func (c *Counter) Reader(r io.Reader) io.Reader { return &countReader{r: r, c: c} }

type countReader struct {
	r io.Reader
	c *Counter
}

func (r *countReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	r.c.n.Add(int64(n))
	return n, err
}

// Bytes is a status function for a byte stream of total bytes (0 if
// unknown): "import site.bundle  120.0 MiB of 240.0 MiB (50%)  80.0 MiB/s  ETA 2s".
func Bytes(label string, total int64, done func() int64) func(time.Duration) string {
	return func(el time.Duration) string {
		n := done()
		rate := float64(n) / max(el.Seconds(), 0.001)
		s := fmt.Sprintf("%s  %s", label, Size(n))
		if total > 0 {
			s += fmt.Sprintf(" of %s (%d%%)", Size(total), n*100/total)
		}
		s += fmt.Sprintf("  %s/s", Size(int64(rate)))
		if total > 0 && rate > 0 && n < total {
			s += "  ETA " + time.Duration(float64(total-n)/rate*float64(time.Second)).Round(time.Second).String()
		}
		return s
	}
}

// Size formats a byte count: 512 B, 1.5 KiB, 240.0 MiB.
func Size(n int64) string { return dist.HumanSize(n) }

// Stream runs fn, which reads a stream of total bytes (0 if unknown)
// through the Counter it is given, with a Bytes line on w.
func Stream(w *os.File, label string, total int64, fn func(c *Counter) error) error {
	var c Counter
	l := Start(w, Bytes(label, total, c.N))
	defer l.Stop()
	return fn(&c)
}
