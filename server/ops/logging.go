package ops

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
)

// ErrConfig marks an invalid serve configuration (a flag, the --config
// file, an AIRGAP_ variable); the message names the setting.
var ErrConfig = errors.New("invalid configuration")

// NewLogger returns a logger writing format ("text" or "json", as
// --log-format) to w at level. Pass a *slog.LevelVar to change the level
// later (SIGHUP). Any verb may use it. Both handlers escape what they did
// not write: the JSON handler escapes control characters, the text handler
// quotes any value holding spaces, '=', quotes or non-printable characters.
//
// The lines are slog's TextHandler's and JSONHandler's, byte for byte;
// records of plain values (lineHandler), which is nearly every access
// line, are formatted by a faster path that writes the same bytes.
func NewLogger(w io.Writer, format string, level slog.Leveler) (*slog.Logger, error) {
	opt := &slog.HandlerOptions{Level: level}
	switch format {
	case "text", "":
		return slog.New(&lineHandler{Handler: slog.NewTextHandler(w, opt), w: w, fast: true}), nil
	case "json":
		return slog.New(&lineHandler{Handler: slog.NewJSONHandler(w, opt), w: w, json: true, fast: true}), nil
	}
	return nil, fmt.Errorf("%w: --log-format %q: want text or json", ErrConfig, format)
}

// lineHandler is slog's text or JSON handler with a fast path: a record
// whose message, keys and string values are plain (printable ASCII other
// than space, '"', '\\' and '=', so that neither handler escapes or quotes
// them) and whose values are strings, integers and floats in the range
// both handlers print without an exponent is formatted here, into a
// pooled buffer, and written with one Write; anything else goes to slog's
// handler. The output is the same bytes either way (TestLineHandlerSameBytes
// and FuzzLineHandler compare them): slog's general path costs about 2 µs
// per access line, mostly in dispatch and, for JSON, in encoding/json's
// float formatting; this one about a quarter of that. w must take one line
// per Write from several goroutines (LogWriter, an *os.File).
type lineHandler struct {
	slog.Handler
	w    io.Writer
	json bool
	fast bool // false once attributes or groups are added (WithAttrs)
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &lineHandler{Handler: h.Handler.WithAttrs(as), w: h.w, json: h.json}
}

func (h *lineHandler) WithGroup(name string) slog.Handler {
	return &lineHandler{Handler: h.Handler.WithGroup(name), w: h.w, json: h.json}
}

var lineBufs = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Handle writes r and, if w buffers (LogWriter), writes it out at once:
// only access lines (logAttrs) wait for the next flush, so a start-up,
// reload or error line is in the log as soon as it is logged.
func (h *lineHandler) Handle(ctx context.Context, r slog.Record) error {
	err := h.handle(ctx, r)
	if f, ok := h.w.(interface{ Flush() }); ok {
		f.Flush()
	}
	return err
}

func (h *lineHandler) handle(ctx context.Context, r slog.Record) error {
	if !h.fast {
		return h.Handler.Handle(ctx, r)
	}
	bp := lineBufs.Get().(*[]byte)
	defer lineBufs.Put(bp)
	b, ok := appendHead((*bp)[:0], r.Time, r.Level, r.Message, h.json)
	if ok {
		r.Attrs(func(a slog.Attr) bool {
			b, ok = appendAttr(b, a, h.json)
			return ok
		})
	}
	*bp = b[:0]
	if !ok {
		return h.Handler.Handle(ctx, r)
	}
	_, err := h.w.Write(appendTail(b, h.json))
	return err
}

// logAttrs is Handle of a record made of t, level, msg and attrs, without
// making a slog.Record unless slog has to write it (the access line's
// path: a Record copies attributes past the fifth to the heap).
func (h *lineHandler) logAttrs(ctx context.Context, t time.Time, level slog.Level, msg string, attrs []slog.Attr) error {
	bp := lineBufs.Get().(*[]byte)
	defer lineBufs.Put(bp)
	b, ok := appendHead((*bp)[:0], t, level, msg, h.json)
	for i := 0; ok && i < len(attrs); i++ {
		b, ok = appendAttr(b, attrs[i], h.json)
	}
	*bp = b[:0]
	if !ok || !h.fast {
		r := slog.NewRecord(t, level, msg, 0)
		r.AddAttrs(attrs...)
		return h.Handler.Handle(ctx, r)
	}
	_, err := h.w.Write(appendTail(b, h.json))
	return err
}

// appendLine appends r as slog's handler would write it, or reports false
// if r has anything the fast path leaves to slog.
func appendLine(b []byte, r slog.Record, json bool) ([]byte, bool) {
	b, ok := appendHead(b, r.Time, r.Level, r.Message, json)
	if ok {
		r.Attrs(func(a slog.Attr) bool {
			b, ok = appendAttr(b, a, json)
			return ok
		})
	}
	if !ok {
		return b, false
	}
	return appendTail(b, json), true
}

// appendHead appends the time, level and message of a line.
func appendHead(b []byte, t time.Time, level slog.Level, msg string, json bool) ([]byte, bool) {
	t = t.Round(0)
	lvl := level.String()
	if t.IsZero() || t.Year() < 0 || t.Year() >= 10000 || !plain(msg) || !plain(lvl) {
		return b, false
	}
	if json {
		b = append(b, `{"time":"`...)
		b = t.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `","level":"`...)
		b = append(b, lvl...)
		b = append(b, `","msg":"`...)
		b = append(b, msg...)
		return append(b, '"'), true
	}
	b = append(b, "time="...)
	b = appendRFC3339Millis(b, t)
	b = append(b, " level="...)
	b = append(b, lvl...)
	b = append(b, " msg="...)
	return append(b, msg...), true
}

func appendTail(b []byte, json bool) []byte {
	if json {
		b = append(b, '}')
	}
	return append(b, '\n')
}

func appendAttr(b []byte, a slog.Attr, json bool) ([]byte, bool) {
	if !plain(a.Key) {
		return b, false
	}
	if json {
		b = append(b, `,"`...)
		b = append(b, a.Key...)
		b = append(b, `":`...)
	} else {
		b = append(b, ' ')
		b = append(b, a.Key...)
		b = append(b, '=')
	}
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		s := v.String()
		if !plain(s) {
			return b, false
		}
		if json {
			b = append(b, '"')
			b = append(b, s...)
			return append(b, '"'), true
		}
		return append(b, s...), true
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10), true
	case slog.KindFloat64:
		f := v.Float64()
		// encoding/json (slog's JSON handler) writes 'f' format except
		// below 1e-6 and from 1e21; slog's text handler writes 'g', which
		// is the same digits without an exponent in [1e-4, 1e21).
		if abs := math.Abs(f); f != 0 && (abs < 1e-4 || abs >= 1e21) || math.IsNaN(f) {
			return b, false
		}
		if json {
			return strconv.AppendFloat(b, f, 'f', -1, 64), true
		}
		return strconv.AppendFloat(b, f, 'g', -1, 64), true
	}
	return b, false
}

// plain reports whether neither of slog's handlers escapes or quotes s: it
// is not empty and holds only printable ASCII other than space, '"', '\\'
// and '='.
func plain(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !plainByte[s[i]] {
			return false
		}
	}
	return true
}

var plainByte = func() (t [256]bool) {
	for c := '!'; c <= '~'; c++ {
		t[c] = c != '"' && c != '\\' && c != '='
	}
	return t
}()

// appendRFC3339Millis is slog's text handler's time format: RFC 3339 with
// exactly three digits of milliseconds (log/slog's function of the same
// name).
func appendRFC3339Millis(b []byte, t time.Time) []byte {
	const prefixLen = len("2006-01-02T15:04:05.000")
	n := len(b)
	t = t.Truncate(time.Millisecond).Add(time.Millisecond / 10)
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b[:n+prefixLen], b[n+prefixLen+1:]...)
}

// logRecord is l.LogAttrs at info level, stamped at (the end of the
// request: one clock read less), without the caller's program counter,
// which no handler of serve's prints (no AddSource) and which costs a
// stack walk per line. Like LogAttrs it checks the level (which SIGHUP may
// have changed since the request arrived).
func logRecord(l *slog.Logger, at time.Time, msg string, attrs []slog.Attr) {
	ctx := context.Background()
	h := l.Handler()
	if !h.Enabled(ctx, slog.LevelInfo) {
		return
	}
	if lh, ok := h.(*lineHandler); ok {
		lh.logAttrs(ctx, at, slog.LevelInfo, msg, attrs)
		return
	}
	r := slog.NewRecord(at, slog.LevelInfo, msg, 0)
	r.AddAttrs(attrs...)
	h.Handle(ctx, r)
}
