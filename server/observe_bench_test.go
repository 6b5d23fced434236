package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airgap/airgap/server"
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
		{"metrics", server.Observe(h, server.ObserveOptions{Log: quiet, Metrics: server.NewMetrics(server.MetricsOptions{})})},
		{"metrics+accesslog-text", server.Observe(h, server.ObserveOptions{Log: text, Metrics: server.NewMetrics(server.MetricsOptions{})})},
		{"metrics+accesslog-json", server.Observe(h, server.ObserveOptions{Log: json, Metrics: server.NewMetrics(server.MetricsOptions{})})},
		{"metrics+accesslog-slogjson", server.Observe(h, server.ObserveOptions{Log: slogJSON, Metrics: server.NewMetrics(server.MetricsOptions{})})},
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
