package ops_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airgap/airgap/server/ops"
)

// BenchmarkObserve measures what Observe adds to one small JSON answer:
// metrics only (access lines off, as at --log-level warn), and metrics
// plus an access line as serve writes it (ops.NewLogger, text and JSON)
// or as slog's own JSON handler would, each written to io.Discard (serve's
// LogWriter turns the write(2) per line into an append).
func BenchmarkObserve(b *testing.B) {
	body := []byte(`{"versions":[]}`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	req := httptest.NewRequest("GET", "/v1/providers/hashicorp/aws/versions", nil)
	req.Header.Set("User-Agent", "Terraform/1.11.0 (+https://www.terraform.io)")
	quiet := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	slogJSON := slog.New(slog.NewJSONHandler(io.Discard, nil))
	text, _ := ops.NewLogger(io.Discard, "text", slog.LevelInfo)
	json, _ := ops.NewLogger(io.Discard, "json", slog.LevelInfo)
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", h},
		{"metrics", ops.Observe(h, ops.ObserveOptions{Log: quiet, Metrics: ops.NewMetrics(ops.MetricsOptions{})})},
		{"metrics+accesslog-text", ops.Observe(h, ops.ObserveOptions{Log: text, Metrics: ops.NewMetrics(ops.MetricsOptions{})})},
		{"metrics+accesslog-json", ops.Observe(h, ops.ObserveOptions{Log: json, Metrics: ops.NewMetrics(ops.MetricsOptions{})})},
		{"metrics+accesslog-slogjson", ops.Observe(h, ops.ObserveOptions{Log: slogJSON, Metrics: ops.NewMetrics(ops.MetricsOptions{})})},
	} {
		b.Run(c.name, func(b *testing.B) {
			w := httptest.NewRecorder()
			b.ReportAllocs()
			for b.Loop() {
				w.Body.Reset()
				c.h.ServeHTTP(w, req)
			}
		})
	}
}
