package access

import (
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestSignInUnregisteredName: a sign-in started on a name whose redirect
// URI is not registered at the identity provider gets serve's page naming
// the exact URI to register and where sign-in works, not the identity
// provider's bare error. Dex has only https://localhost:PORT/oauth/callback.
// With the login block's redirect_uris saying so, a sign-in started at
// https://127.0.0.1:PORT/ (a name serve answers to) gets serve's page;
// before, Dex's "Unregistered redirect_uri" page. Without redirect_uris
// serve judges no name (its own list is not what was registered). The
// registered name still signs in. 'serve --check-config' marks which of
// its URIs are in redirect_uris, in lower case.
func TestSignInUnregisteredName(t *testing.T) {
	t.Parallel()
	f := newLoginFixture(t, loginOptions{onlyMock: true})
	port := f.host[strings.LastIndexByte(f.host, ':')+1:]
	page := func(u, host string) (int, string) {
		req, _ := http.NewRequest("GET", u, nil)
		if host != "" {
			req.Host = host
		}
		resp, err := f.browser().Do(req)
		if err != nil {
			t.Fatalf("GET %s (Host %s): %v", u, host, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, stripTags(string(b))
	}
	// Without redirect_uris serve judges no name: the browser goes on to
	// the identity provider (which refuses what it does not know).
	cl := &http.Client{Timeout: 10 * time.Second, Transport: f.browser().Transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", "https://127.0.0.1:"+port+"/oauth/signin?next=%2F", nil)
	req.Host = "alias.site.example:" + port
	resp0, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp0.Body.Close()
	if loc := resp0.Header.Get("Location"); resp0.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, f.dex.issuer+"/auth?") {
		t.Errorf("without redirect_uris, a sign-in on another name: %s, Location %q", resp0.Status, loc)
	}

	// redirect_uris: only the localhost URI, as at Dex.
	acc, _ := os.ReadFile(f.access)
	with := strings.Replace(string(acc), "  client_id ", "  redirect_uris      = [\""+f.base+"oauth/callback\"]\n  client_id ", 1)
	writeAtomically(t, f.access, with)
	harness.WaitLog(t, f.logs, "the access file's reload", func(r map[string]any) bool { return r["msg"] == "access file reloaded" })
	code, body := page("https://127.0.0.1:"+port+"/oauth/signin?next=%2F", "")
	if code != 400 || !strings.Contains(body, "https://127.0.0.1:"+port+"/oauth/callback, which is not registered there") ||
		!strings.Contains(body, "register https://127.0.0.1:"+port+"/oauth/callback at the identity provider for the client airgap") ||
		!strings.Contains(body, "https://localhost:"+port+"/") || strings.Contains(body, "nregistered redirect") {
		t.Errorf("a sign-in on 127.0.0.1, not in redirect_uris (%d):\n%s", code, body)
	}
	resp, body := f.signIn(t, f.browser(), f.base+"oauth/signin?next=%2F", nil)
	if resp == nil || resp.StatusCode != 200 || !strings.Contains(body, `id="person"`) {
		t.Errorf("the registered name does not sign in: %v\n%.800s", resp, body)
	}

	// (A name given in capitals is listed as browsers send it.)
	_, stderr, _ := harness.RunSplit(t, "", nil, "serve", "--store", f.store, "--access", f.access, "--listen", "127.0.0.1:"+port, "--hostname", "localhost", "--hostname", "Alias.Site.Example", "--check-config")
	if !strings.Contains(stderr, "  https://localhost:"+port+"/oauth/callback  (in redirect_uris)") ||
		!strings.Contains(stderr, "  https://127.0.0.1:"+port+"/oauth/callback  (not in redirect_uris: a sign-in started there gets a page naming it)") ||
		!strings.Contains(stderr, "  https://alias.site.example:"+port+"/oauth/callback  (not in redirect_uris") {
		t.Errorf("serve --check-config with redirect_uris:\n%s", stderr)
	}
}

// TestSignInBehindTrustedProxy: behind a proxy that terminates HTTP (a
// real HAProxy, listed in --trusted-proxy), the name a sign-in starts on
// is the proxy's, which serve's own list does not know: without
// redirect_uris serve does not judge it, and the browser goes on to the
// identity provider with the proxy's name in the redirect URI. (A check
// against serve's own names turned every such sign-in away.)
func TestSignInBehindTrustedProxy(t *testing.T) {
	t.Parallel()
	f := newLoginFixture(t, loginOptions{onlyMock: true, serve: []string{"--trusted-proxy", "127.0.0.1"}})
	port, _ := strconv.Atoi(f.host[strings.LastIndexByte(f.host, ':')+1:])
	proxy := startHTTPProxy(t, f.caFile, port)
	req, _ := http.NewRequest("GET", proxy+"/oauth/signin?next=%2F", nil)
	req.Host = "airgap.site.example"
	cl := &http.Client{Timeout: 10 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, f.dex.issuer+"/auth?") ||
		!strings.Contains(loc, url.QueryEscape("https://airgap.site.example/oauth/callback")) {
		t.Errorf("a sign-in through the trusted proxy: %s, Location %q", resp.Status, loc)
	}
}
