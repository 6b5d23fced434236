package server_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airgap/airgap/server"
)

// BenchmarkObserve measures what Observe adds to one small JSON answer:
// metrics only (access lines off, as at --log-level warn), and metrics
// plus a JSON access line (written to io.Discard, so the write syscall is
// not counted).
func BenchmarkObserve(b *testing.B) {
	body := []byte(`{"versions":[]}`)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) })
	req := httptest.NewRequest("GET", "/v1/providers/hashicorp/aws/versions", nil)
	req.Header.Set("User-Agent", "Terraform/1.11.0 (+https://www.terraform.io)")
	quiet := slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn}))
	loud := slog.New(slog.NewJSONHandler(io.Discard, nil))
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"bare", h},
		{"metrics", server.Observe(h, server.ObserveOptions{Log: quiet, Metrics: server.NewMetrics(server.MetricsOptions{})})},
		{"metrics+accesslog", server.Observe(h, server.ObserveOptions{Log: loud, Metrics: server.NewMetrics(server.MetricsOptions{})})},
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
