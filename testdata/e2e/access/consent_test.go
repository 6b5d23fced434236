package access

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"crypto/tls"
)

// TestLoginConsent: a person whose IdP session is live and who follows a
// crafted 'terraform login' link gets a page that names the port and
// themselves and issues nothing until they press Allow (RFC 8252 §8.6);
// the form works once, only in the browser that signed in, only from the
// appliance's own page; Deny tells the CLI access_denied.
func TestLoginConsent(t *testing.T) {
	f := newLoginFixture(t, loginOptions{plainIdP: true, onlyMock: true})
	codes := filepath.Join(f.store, "state", "logins", "codes")
	countCodes := func() int { e, _ := os.ReadDir(codes); return len(e) }
	// A browser that stops at the CLI's listener (nothing listens there).
	browser := func() *http.Client {
		jar, _ := cookiejar.New(nil)
		return &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.pool}},
			CheckRedirect: func(req *http.Request, _ []*http.Request) error {
				if req.URL.Hostname() == "localhost" && req.URL.Port() == "10007" {
					return http.ErrUseLastResponse
				}
				return nil
			}}
	}
	verifier := "consent-test-verifier-0123456789abcdef0123456789"
	sum := sha256.Sum256([]byte(verifier))
	link := f.base + "oauth/authorization?" + url.Values{"response_type": {"code"}, "client_id": {"terraform-cli"},
		"redirect_uri": {"http://localhost:10007/login"}, "state": {"attacker-state"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}.Encode()
	start := func(br *http.Client) string {
		t.Helper()
		resp, body := browserGet(t, br, link)
		if resp == nil || resp.StatusCode != 200 || !strings.Contains(body, `name="consent"`) {
			loc := ""
			if resp != nil {
				loc = resp.Header.Get("Location")
			}
			t.Fatalf("following a terraform login link with a live IdP session: no consent page (%v, Location %q):\n%.2000s", resp, loc, body)
		}
		for _, want := range []string{"localhost port 10007", kilgore, "terraform login", "Allow", "Deny"} {
			if !strings.Contains(body, want) {
				t.Errorf("the consent page does not say %q:\n%s", want, body)
			}
		}
		if n := countCodes(); n != 0 {
			t.Fatalf("%d codes issued before the person allowed anything", n)
		}
		// No other site may frame it (a click on Allow through a
		// transparent frame), nor post its form elsewhere.
		if resp.Header.Get("X-Frame-Options") != "DENY" || !strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") ||
			resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("the consent page's headers: X-Frame-Options %q, CSP %q, Cache-Control %q", resp.Header.Get("X-Frame-Options"),
				resp.Header.Get("Content-Security-Policy"), resp.Header.Get("Cache-Control"))
		}
		return body
	}

	// Deny: the CLI hears access_denied, and no code exists.
	br := browser()
	resp, _ := f.consent(t, br, start(br), "deny")
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.Contains(loc, "error=access_denied") || strings.Contains(loc, "code=") {
		t.Errorf("deny: %s, Location %q", resp.Status, loc)
	}
	if n := countCodes(); n != 0 {
		t.Errorf("deny issued %d codes", n)
	}

	// The form from another browser (the attacker's, without the sign-in
	// cookie), or posted from another site, issues nothing.
	br = browser()
	page := start(br)
	if resp, body := f.consent(t, browser(), page, "allow"); resp.StatusCode != http.StatusBadRequest || countCodes() != 0 {
		t.Errorf("the consent form posted from another browser: %s (%d codes)\n%.500s", resp.Status, countCodes(), body)
	}
	m := consentRe.FindStringSubmatch(page)
	req, _ := http.NewRequest("POST", f.base+"oauth/consent", strings.NewReader(url.Values{"consent": {m[1]}, "action": {"allow"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if resp, err := br.Do(req); err != nil || resp.StatusCode != http.StatusBadRequest || countCodes() != 0 {
		t.Errorf("the consent form posted from another site: %v %v (%d codes)", resp, err, countCodes())
	}

	// Allow: one code, for the CLI's listener; the same form again is
	// refused.
	resp, _ = f.consent(t, br, page, "allow")
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Host != "localhost:10007" || loc.Query().Get("code") == "" || loc.Query().Get("state") != "attacker-state" {
		t.Fatalf("allow: %s, Location %v", resp.Status, loc)
	}
	if n := countCodes(); n != 1 {
		t.Errorf("allow issued %d codes, want 1", n)
	}
	if resp, _ := f.consent(t, br, page, "allow"); resp.StatusCode != http.StatusBadRequest || countCodes() != 1 {
		t.Errorf("the consent form used twice: %s (%d codes)", resp.Status, countCodes())
	}
	waitAudit(t, f.audit, "the denied login", func(e map[string]any) bool {
		return e["event"] == "login_refused" && e["reason"] == "declined" && e["user"] == kilgore
	})
}
