package server_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/airgap/airgap/server"
)

// discardWriter is a ResponseWriter that keeps nothing (a recorder's
// growing body would dominate the figures).
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}

// BenchmarkCachedAnswer measures one cached JSON answer through the
// server, without an access file and with one (a token on every request;
// the download answer carries URLs signed for it): what a token check
// costs in CPU per request.
func BenchmarkCachedAnswer(b *testing.B) {
	paths := map[string]string{
		"mirror-index":      "/mirror/registry.terraform.io/hashicorp/random/index.json",
		"registry-download": "/v1/providers/hashicorp/random/3.6.0/download/linux/amd64",
	}
	plain := setup(b)
	ae := setupAccess(b, map[string][]string{"bench": {"**"}}, nil)
	gated := server.New(ae.st, server.Options{Logger: slog.New(slog.DiscardHandler), Access: ae.ac})
	for name, p := range paths {
		for _, c := range []struct {
			name  string
			h     http.Handler
			token string
		}{
			{"none", server.New(plain.st, server.Options{Logger: slog.New(slog.DiscardHandler)}), ""},
			{"token", gated, ae.tokens["bench"]},
		} {
			b.Run(name+"/"+c.name, func(b *testing.B) {
				req := httptest.NewRequest("GET", p, nil)
				if c.token != "" {
					req.Header.Set("Authorization", "Bearer "+c.token)
				}
				w := &discardWriter{h: http.Header{}}
				c.h.ServeHTTP(w, req) // render and cache
				b.ReportAllocs()
				for b.Loop() {
					clear(w.h)
					c.h.ServeHTTP(w, req)
				}
			})
		}
	}
}
