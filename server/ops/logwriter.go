package ops

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// LogWriter is serve's log output (--log-file, or stderr): lines are
// gathered in memory and written out when 64 KiB are pending, every
// 100 ms, and at Close, so that an access line costs an append instead of
// a write(2) per request (NewLogger's handler flushes after every other
// line, so those are in the log at once). It is safe for concurrent use;
// each Write must be whole lines (slog's handlers write one record per
// call).
//
// Nothing is lost on the way out or across a log rotation: Close (serve
// calls it after the drain that follows SIGTERM) writes out what is
// pending, and Reopen (SIGHUP, after logrotate moved the file) writes the
// pending lines to the old file before it opens the path again. A write
// that fails (a full disk) drops the lines it held and counts them: the
// first failure is said once on stderr, and once writes work again the
// log gets one line with the count. A crash loses at most the last 100 ms
// of lines. Memory: at most logMaxPending bytes are pending; a writer that
// finds that many waits for the write in progress (a disk slower than the
// log), so lines are never dropped for speed.
type LogWriter struct {
	path string // "" for stderr

	mu     sync.Mutex // guards buf and closed
	buf    []byte
	closed bool

	flushMu sync.Mutex // one write out at a time, in order; guards the rest
	out     *os.File
	spare   []byte
	dropped int64 // lines dropped since the last good write
	failing error // the failure that dropped them
	total   int64 // lines dropped in all
	// recovered lines were dropped before the last write, which worked:
	// sayRecovered tells the log.
	recovered    int64
	recoveredErr error

	notice func(dropped int64, err error) // says in the log that lines were dropped
	stop   chan struct{}
	done   chan struct{}
}

const (
	logFlushSize  = 64 << 10
	logFlushEvery = 100 * time.Millisecond
	logMaxPending = 4 << 20
)

// OpenLogWriter opens path for appending (created 0640 if absent), or
// stderr if path is "", and starts the 100 ms flusher.
func OpenLogWriter(path string) (*LogWriter, error) {
	out, err := openLog(path)
	if err != nil {
		return nil, err
	}
	w := &LogWriter{path: path, out: out, buf: make([]byte, 0, logFlushSize*2), spare: make([]byte, 0, logFlushSize*2),
		stop: make(chan struct{}), done: make(chan struct{})}
	go w.flusher()
	return w, nil
}

func openLog(path string) (*os.File, error) {
	if path == "" {
		return os.Stderr, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o640)
	if err != nil {
		return nil, fmt.Errorf("--log-file: %w", err)
	}
	return f, nil
}

func (w *LogWriter) flusher() {
	defer close(w.done)
	t := time.NewTicker(logFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C:
			w.Flush()
		}
	}
}

// Write appends p (whole lines) to what is pending. It writes out when
// 64 KiB are pending and no other write is in progress, and waits for one
// when logMaxPending are. After Close it writes p to stderr at once.
func (w *LogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.flushMu.Lock()
		w.writeOut(p)
		w.flushMu.Unlock()
		w.sayRecovered()
		return len(p), nil
	}
	w.buf = append(w.buf, p...)
	n := len(w.buf)
	w.mu.Unlock()
	switch {
	case n >= logMaxPending:
		w.Flush()
	case n >= logFlushSize && w.flushMu.TryLock():
		w.flushLocked()
		w.flushMu.Unlock()
		w.sayRecovered()
	}
	return len(p), nil
}

// Flush writes out what is pending.
func (w *LogWriter) Flush() {
	w.flushMu.Lock()
	w.flushLocked()
	w.flushMu.Unlock()
	w.sayRecovered()
}

// flushLocked swaps the pending buffer for the spare one and writes it
// out; the caller holds flushMu.
func (w *LogWriter) flushLocked() {
	w.mu.Lock()
	b := w.buf
	w.buf = w.spare[:0]
	w.mu.Unlock()
	if len(b) > 0 {
		w.writeOut(b)
	}
	w.spare = b[:0]
}

// writeOut writes b to the file; on failure it counts the lines of b that
// did not make it and says so on stderr the first time. The caller holds
// flushMu.
func (w *LogWriter) writeOut(b []byte) {
	n, err := w.out.Write(b)
	if err == nil {
		if w.dropped > 0 {
			w.recovered, w.recoveredErr = w.recovered+w.dropped, w.failing
			w.dropped, w.failing = 0, nil
		}
		return
	}
	lost := int64(bytes.Count(b[n:], []byte{'\n'}))
	if n < len(b) && b[len(b)-1] != '\n' {
		lost++
	}
	if w.dropped == 0 && w.out != os.Stderr {
		fmt.Fprintf(os.Stderr, "airgap serve: cannot write the log to %s: %v; dropping log lines until it works again (the log will say how many)\n", w.path, err)
	}
	w.dropped += lost
	w.total += lost
	w.failing = err
}

// sayRecovered writes, once a write worked after some failed, one line
// into the log with the number of lines dropped. The caller does not hold
// flushMu (the line goes through Write).
func (w *LogWriter) sayRecovered() {
	w.flushMu.Lock()
	n, err, notice := w.recovered, w.recoveredErr, w.notice
	w.recovered, w.recoveredErr = 0, nil
	w.flushMu.Unlock()
	if n > 0 && notice != nil {
		notice(n, err)
	}
}

// SetNotice makes l the logger that says how many lines were dropped.
func (w *LogWriter) SetNotice(l *slog.Logger) {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.notice = func(n int64, err error) {
		l.Warn("log lines were dropped: the log could not be written", "dropped", n, "err", err.Error())
	}
}

// droppedLines is the number of log lines dropped because writes failed.
func (w *LogWriter) droppedLines() int64 {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	return w.total
}

// Reopen writes out what is pending and opens the log file again at path
// (after logrotate moved it away; a different path moves the log there, ""
// to stderr). If the path cannot be opened, the log stays where it was.
func (w *LogWriter) Reopen(path string) error {
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	w.flushLocked()
	out, err := openLog(path)
	if err != nil {
		return err
	}
	if w.out != os.Stderr {
		w.out.Close()
	}
	w.out, w.path = out, path
	return nil
}

// Close writes out what is pending, stops the flusher and closes the file
// (not stderr). Lines written after Close go to stderr at once.
func (w *LogWriter) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return nil
	}
	w.closed = true
	w.mu.Unlock()
	close(w.stop)
	<-w.done
	w.Flush()
	w.flushMu.Lock()
	defer w.flushMu.Unlock()
	if w.total > 0 && w.out != os.Stderr {
		fmt.Fprintf(os.Stderr, "airgap serve: %d log line(s) in all were dropped because the log could not be written\n", w.total)
	}
	if w.out == os.Stderr {
		return nil
	}
	err := w.out.Sync()
	if cerr := w.out.Close(); err == nil {
		err = cerr
	}
	w.out = os.Stderr
	return err
}

var _ io.Writer = (*LogWriter)(nil)
