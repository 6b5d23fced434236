package server_test

import (
	"encoding/base64"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/airgap/airgap/server"
)

// FuzzAuthenticate sends hostile credentials, paths and queries (forged
// signatures, bearers, Basic blobs) to a server with an access file that
// has no anonymous rule. Nothing panics, and nothing protected is answered
// 200 unless the request carries the real token or a real signed URL.
func FuzzAuthenticate(f *testing.F) {
	e := setupAccess(f, map[string][]string{"ci": {"**"}}, nil)
	h := server.New(e.st, server.Options{Logger: slog.New(slog.DiscardHandler), Access: e.ac})
	// A genuine signed URL, as a seed the fuzzer can mutate.
	w := httptest.NewRecorder()
	req := httptest.NewRequest("GET", "/v1/providers/hashicorp/random/3.6.0/download/linux/amd64", nil)
	req.Header.Set("Authorization", "Bearer "+e.tokens["ci"])
	h.ServeHTTP(w, req)
	body, _ := io.ReadAll(w.Body)
	_, rest, _ := strings.Cut(string(body), `"download_url":"`)
	signed, _, _ := strings.Cut(rest, `"`)
	f.Add("Bearer airgap_"+strings.Repeat("A", 43), "/v1/providers/hashicorp/random/versions", "")
	f.Add("Basic Zm9vOmFpcmdhcF8=", "/v2/registry.terraform.io/hashicorp/random/tags/list", "")
	f.Add("Bearer agb1:ci:99999999999:aaaa.bbbb", "/v2/", "")
	p, q, _ := strings.Cut(signed, "?")
	f.Add("", p, q)
	f.Add("", p, strings.Replace(q, "exp=", "exp=9", 1))
	f.Fuzz(func(t *testing.T, auth, path, query string) {
		if !strings.HasPrefix(path, "/") || strings.ContainsAny(path, " \r\n\t#?") || strings.ContainsAny(query, " \r\n\t#") {
			return
		}
		r, err := http.NewRequest("GET", "https://appliance"+path+"?"+query, nil)
		if err != nil {
			return
		}
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		open := path == "/healthz" || path == "/ca.pem" || path == "/.well-known/terraform.json"
		shown := auth
		if b64, ok := strings.CutPrefix(auth, "Basic "); ok {
			dec, _ := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
			shown = string(dec)
		}
		genuine := strings.Contains(shown, e.tokens["ci"]) || path+"?"+query == signed
		if rec.Code == 200 && !open && !genuine {
			t.Fatalf("%s?%s with %q answered 200", path, query, auth)
		}
	})
}
