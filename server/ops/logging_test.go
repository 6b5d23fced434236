package ops

import (
	"bytes"
	"context"
	"log/slog"
	"math"
	"testing"
	"time"
)

// lineBoth formats r with the fast path and with slog's own handler.
func lineBoth(t *testing.T, r slog.Record, json bool) (fast, ref []byte, took bool) {
	t.Helper()
	var a, b bytes.Buffer
	la, _ := NewLogger(&a, map[bool]string{true: "json", false: "text"}[json], slog.LevelDebug)
	var h slog.Handler = slog.NewTextHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})
	if json {
		h = slog.NewJSONHandler(&b, &slog.HandlerOptions{Level: slog.LevelDebug})
	}
	if err := la.Handler().Handle(context.Background(), r.Clone()); err != nil {
		t.Fatal(err)
	}
	if err := h.Handle(context.Background(), r.Clone()); err != nil {
		t.Fatal(err)
	}
	_, took = appendLine(nil, r, json)
	return a.Bytes(), b.Bytes(), took
}

func accessRecord(at time.Time, path, ua string, status int, dur float64) slog.Record {
	r := slog.NewRecord(at, slog.LevelInfo, "request", 0)
	r.AddAttrs(slog.String("client", "203.0.113.7"), slog.String("peer", "10.0.0.1"), slog.String("method", "GET"),
		slog.String("host", "registry.site.example:8443"), slog.String("path", path), slog.Int("status", status),
		slog.Int64("bytes", 1234567), slog.Float64("dur_ms", dur), slog.String("client_name", "terraform"),
		slog.String("client_version", "1.11.0"), slog.String("user_agent", ua))
	return r
}

// The fast path writes exactly slog's bytes, and takes the access lines
// it is for; what it leaves (quoting, escaping, exponents, other kinds)
// slog writes.
func TestLineHandlerSameBytes(t *testing.T) {
	at := time.Date(2026, 11, 24, 23, 9, 26, 123456789, time.UTC)
	cases := []struct {
		name string
		r    slog.Record
		fast bool
	}{
		{"access line", accessRecord(at, "/v1/providers/hashicorp/aws/versions", "curl/8.0", 200, 0.123), true},
		{"whole ms", accessRecord(at, "/x", "x", 404, 12), true},
		{"zero duration", accessRecord(at, "/x", "x", 200, 0), true},
		{"slow", accessRecord(at, "/x", "x", 200, 123456.789), true},
		{"no fraction of time", accessRecord(at.Truncate(time.Second), "/x", "x", 200, 1), true},
		{"time zone", accessRecord(at.In(time.FixedZone("X", 3600+1800)), "/x", "x", 200, 1), true},
		{"space in user agent", accessRecord(at, "/x", "Terraform/1.11.0 (+https://www.terraform.io)", 200, 1), false},
		{"quote in path", accessRecord(at, `/x"y`, "x", 200, 1), false},
		{"equals in path", accessRecord(at, "/x=y", "x", 200, 1), false},
		{"control character", accessRecord(at, "/x\x01", "x", 200, 1), false},
		{"non-ASCII", accessRecord(at, "/é", "x", 200, 1), false},
		{"tiny float", accessRecord(at, "/x", "x", 200, 1e-5), false},
		{"huge float", accessRecord(at, "/x", "x", 200, 1e22), false},
		{"NaN", accessRecord(at, "/x", "x", 200, math.NaN()), false},
		{"negative", accessRecord(at, "/x", "x", 200, -2.5), true},
	}
	for _, c := range cases {
		for _, json := range []bool{false, true} {
			fast, ref, took := lineBoth(t, c.r, json)
			if !bytes.Equal(fast, ref) {
				t.Errorf("%s (json %v):\n got %q\nwant %q", c.name, json, fast, ref)
			}
			if took != c.fast && !(c.name == "NaN" && json) {
				t.Errorf("%s (json %v): fast path taken %v, want %v", c.name, json, took, c.fast)
			}
		}
	}
	// Attributes added with With go through slog.
	var a, b bytes.Buffer
	la, _ := NewLogger(&a, "json", slog.LevelInfo)
	lb := slog.New(slog.NewJSONHandler(&b, nil))
	la.With("component", "x").Info("request", "path", "/x")
	lb.With("component", "x").Info("request", "path", "/x")
	if !bytes.Equal(bytes.SplitN(a.Bytes(), []byte(`"level"`), 2)[1], bytes.SplitN(b.Bytes(), []byte(`"level"`), 2)[1]) {
		t.Errorf("With:\n got %s\nwant %s", a.Bytes(), b.Bytes())
	}
}

// FuzzLineHandler: for any strings, numbers and time, the logger writes
// slog's bytes.
func FuzzLineHandler(f *testing.F) {
	f.Add("/v1/providers/a/b/versions", "Terraform/1.11.0", "GET", int64(200), 0.5, int64(1700000000123456789), uint8(0))
	f.Add("/x y", "\x00", "", int64(-1), 1e-7, int64(0), uint8(1))
	f.Fuzz(func(t *testing.T, path, ua, method string, n int64, dur float64, ns int64, lvl uint8) {
		at := time.Unix(0, ns).In(time.FixedZone("Z", int(lvl)*900-3600*12))
		r := slog.NewRecord(at, slog.Level(int(lvl%24)-8), method, 0)
		r.AddAttrs(slog.String("path", path), slog.String(method, ua), slog.Int64("bytes", n), slog.Float64("dur_ms", dur))
		for _, json := range []bool{false, true} {
			if json && (math.IsInf(dur, 0) || math.IsNaN(dur)) {
				continue // slog's JSON handler writes an error in its place; no fast path either way
			}
			fast, ref, _ := lineBoth(t, r, json)
			if !bytes.Equal(fast, ref) {
				t.Fatalf("json %v:\n got %q\nwant %q", json, fast, ref)
			}
		}
	})
}
