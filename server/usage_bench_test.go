package server_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/protocol"
)

// BenchmarkBlobDownload measures what counting adds to serving one whole
// 64 KiB package through the handler (no TLS, no network): the same
// server without usage, and with it (the counter only; its file is
// written once an hour here, off the request path as in serve).
func BenchmarkBlobDownload(b *testing.B) {
	e := setup(b)
	var path string
	for _, p := range e.st.Catalog().Providers {
		if p.Type == "random" {
			pk, _ := p.Package("linux", "amd64")
			path = "/blobs/sha256/" + pk.Digest.Hex() + "/" + pk.Filename
		}
	}
	quiet := slog.New(slog.DiscardHandler)
	u := protocol.StartUsage(e.root, protocol.UsageOptions{Interval: time.Hour, Log: quiet})
	defer u.Close()
	for _, c := range []struct {
		name string
		h    http.Handler
	}{
		{"off", server.New(e.st, server.Options{Logger: quiet})},
		{"counting", server.New(e.st, server.Options{Logger: quiet, Usage: u})},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := httptest.NewRequest("GET", path, nil)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				w := &discardWriter{h: http.Header{}} // io.Copy: net/http's copy path without TLS
				for pb.Next() {
					clear(w.h)
					c.h.ServeHTTP(w, req)
				}
			})
		})
	}
}
