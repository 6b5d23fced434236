package server_test

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/server"
)

// FuzzLoginRequests sends hostile authorization requests, callbacks
// (states, codes, cookies) and token requests to an appliance with a login
// block. Nothing panics, no callback sends a code to the CLI, no token
// request is answered 200, and nothing is stored: every way to a token
// goes through the identity provider, which here cannot be reached.
func FuzzLoginRequests(f *testing.F) {
	e := setupLogin(f)
	e.idp.srv.Close()
	h := server.New(e.st, server.Options{Logger: slog.New(slog.DiscardHandler), Access: e.ac})
	f.Add("/oauth/authorization", "response_type=code&client_id=terraform-cli&redirect_uri=http%3A%2F%2Flocalhost%3A10001%2Flogin&state=s&code_challenge=E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM&code_challenge_method=S256", "", "")
	f.Add("/oauth/callback", "code=c&state=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "__Host-airgap_signin=x", "")
	f.Add("/oauth/token", "", "", "grant_type=authorization_code&code=x&code_verifier=0123456789012345678901234567890123456789012&redirect_uri=http%3A%2F%2Flocalhost%3A10001%2Flogin")
	f.Add("/oauth/signin", "next=//evil.example/", "", "")
	f.Add("/oauth/signout", "", "__Host-airgap_session=airgap_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", "csrf=x")
	f.Fuzz(func(t *testing.T, path, query, cookie, form string) {
		if !strings.HasPrefix(path, "/oauth/") || strings.ContainsAny(path, " \r\n\t#?") || strings.ContainsAny(query, " \r\n\t#") || strings.ContainsAny(cookie, "\r\n") {
			return
		}
		method, body := "GET", ""
		if form != "" {
			method, body = "POST", form
		}
		r, err := http.NewRequest(method, "https://appliance"+path+"?"+query, strings.NewReader(body))
		if err != nil {
			return
		}
		if cookie != "" {
			r.Header.Set("Cookie", cookie)
		}
		if method == "POST" {
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, r)
		loc, _ := url.Parse(rec.Header().Get("Location"))
		if loc != nil && loc.Hostname() == "localhost" {
			t.Fatalf("%s %s?%s sent a code to the CLI: %s", method, path, query, loc)
		}
		if loc != nil && loc.Host != "" && !strings.HasPrefix(rec.Header().Get("Location"), e.idp.issuer) {
			t.Fatalf("%s %s?%s redirected off the appliance: %s", method, path, query, loc)
		}
		if path == "/oauth/token" && rec.Code == 200 {
			t.Fatalf("a token request answered 200: %s", rec.Body)
		}
		if es, _ := os.ReadDir(filepath.Join(e.state, "logins", "tokens")); len(es) != 0 {
			t.Fatalf("%s %s?%s stored a token", method, path, query)
		}
	})
}
