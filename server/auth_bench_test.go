package server_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/acl"
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

// BenchmarkLoginToken compares, on one server, an access-file token and a
// login token (single sign-on) of the same rules on every request of a
// cached answer: what looking a login token up costs besides the access
// file's map.
func BenchmarkLoginToken(b *testing.B) {
	e := setupLogin(b)
	now := time.Now().UTC().Truncate(time.Second)
	login, err := access.IssueLoginToken(e.root, &access.LoginToken{User: "bench@site.example", Subject: "bench", Issuer: e.idp.issuer,
		Groups: []string{"platform"}, Via: "cli", Created: now, Expires: now.Add(24 * time.Hour)})
	if err != nil {
		b.Fatal(err)
	}
	file, err := acl.AddToken(e.access, "bench", []string{"registry.terraform.io/**"}, time.Time{}, now)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.ac.Reload(); err != nil {
		b.Fatal(err)
	}
	h := server.New(e.st, server.Options{Logger: slog.New(slog.DiscardHandler), Access: e.ac})
	for _, p := range []string{"/mirror/registry.terraform.io/hashicorp/random/3.6.0.json", "/v1/providers/hashicorp/random/versions"} {
		for _, c := range []struct{ name, token string }{{"access-file", file}, {"login", login}} {
			b.Run(p+"/"+c.name, func(b *testing.B) {
				req := httptest.NewRequest("GET", p, nil)
				req.Header.Set("Authorization", "Bearer "+c.token)
				w := &discardWriter{h: http.Header{}}
				h.ServeHTTP(w, req)
				if w.h.Get("Content-Type") != "application/json" {
					b.Fatalf("%s with the %s token: %v", p, c.name, w.h)
				}
				b.ReportAllocs()
				for b.Loop() {
					clear(w.h)
					h.ServeHTTP(w, req)
				}
			})
		}
	}
}
