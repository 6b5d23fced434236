package server_test

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist/osfile"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/ops"
)

// loginEnv is an appliance with a login block whose identity provider is a
// fakeIdP, on loopback TLS, with its audit log.
type loginEnv struct {
	root, access, audit, state string
	st                         *store.Store
	ac                         *access.AccessControl
	ts                         *httptest.Server
	idp                        *fakeIdP
	clock                      *clock
	logs                       *bytes.Buffer
	pool                       *x509.CertPool
}

const loginGroups = `
group "platform" {
  allow = ["registry.terraform.io/**"]
}

user "dave@site.example" {
  allow = ["registry.opentofu.org/**"]
}
`

func setupLogin(t testing.TB) *loginEnv {
	t.Helper()
	signer := bundletest.Key(t, "site")
	set := bundletest.Standard(t, t.TempDir(), signer)
	e := &loginEnv{clock: &clock{t: time.Now().UTC()}, logs: &bytes.Buffer{}, idp: newFakeIdP(t)}
	e.root, e.st = importSet(t, set, signer)
	e.state = store.StateDir(e.root)
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret")
	os.WriteFile(secret, []byte("s3cret\n"), 0o600)
	e.access = filepath.Join(dir, "access.hcl")
	os.WriteFile(e.access, fmt.Appendf(nil, "login {\n  issuer = %q\n  client_id = \"airgap\"\n  client_secret_file = %q\n  ca_file = %q\n  token_lifetime = \"1h\"\n}\n%s",
		e.idp.issuer, secret, e.idp.caFile, loginGroups), 0o600)
	var err error
	e.ac, err = access.NewAccessControl(access.AccessOptions{File: e.access, TLSDir: store.TLSDir(e.root), StateDir: e.state, Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	e.audit = filepath.Join(dir, "audit.jsonl")
	al, err := access.OpenAuditLog(e.audit, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.Close() })
	log := slog.New(slog.NewJSONHandler(&syncWriter{w: e.logs}, nil))
	srv := server.New(e.st, server.Options{Logger: log, Access: e.ac})
	e.ts = httptest.NewTLSServer(ops.Observe(srv, ops.ObserveOptions{Log: log, Catalog: e.st.Catalog, Audit: al}))
	t.Cleanup(e.ts.Close)
	e.pool = x509.NewCertPool()
	e.pool.AddCert(e.ts.Certificate())
	e.pool.AddCert(e.idp.srv.Certificate())
	return e
}

// browser is a person's browser: cookies, both CAs, and it stops at the
// CLI's localhost listener (nothing listens there in these tests).
func (e *loginEnv) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	tr := e.ts.Client().Transport.(*http.Transport).Clone()
	tr.TLSClientConfig.RootCAs = e.pool
	return &http.Client{Jar: jar, Transport: tr, Timeout: 20 * time.Second, CheckRedirect: func(req *http.Request, via []*http.Request) error {
		if req.URL.Hostname() == "localhost" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

func challenge(verifier string) string {
	s := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(s[:])
}

const (
	cliRedirect = "http://localhost:10005/login"
	cliVerifier = "0123456789abcdef0123456789abcdef-verifier.~_x"
)

// authorizeURL is what 'terraform login' opens.
func (e *loginEnv) authorizeURL(mod func(url.Values)) string {
	q := url.Values{"response_type": {"code"}, "client_id": {access.LoginClientID}, "redirect_uri": {cliRedirect},
		"state": {"cli-state-1"}, "code_challenge": {challenge(cliVerifier)}, "code_challenge_method": {"S256"}}
	if mod != nil {
		mod(q)
	}
	return e.ts.URL + "/oauth/authorization?" + q.Encode()
}

// visit GETs u in br and returns the last answer and its body.
func visit(t *testing.T, br *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := br.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// cliCode runs the browser's part of 'terraform login' and returns the
// code the appliance sends to the CLI's listener.
func (e *loginEnv) cliCode(t *testing.T, br *http.Client) string {
	t.Helper()
	resp, body := visit(t, br, e.authorizeURL(nil))
	if resp.StatusCode == http.StatusOK {
		resp, body = e.allow(t, br, body, "allow")
	}
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc == nil || !strings.HasPrefix(loc.String(), cliRedirect+"?") || loc.Query().Get("state") != "cli-state-1" {
		t.Fatalf("the sign-in did not end at the CLI's listener: %s %s\n%s", resp.Status, resp.Header.Get("Location"), body)
	}
	return loc.Query().Get("code")
}

var consentRe = regexp.MustCompile(`name="consent" value="([^"]+)"`)

// allow presses the consent page's button (action: allow or deny), as
// the person does before the appliance issues the CLI's code.
func (e *loginEnv) allow(t *testing.T, br *http.Client, page, action string) (*http.Response, string) {
	t.Helper()
	m := consentRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no consent form on the page:\n%s", page)
	}
	resp, err := br.PostForm(e.ts.URL+"/oauth/consent", url.Values{"consent": {html.UnescapeString(m[1])}, "action": {action}})
	if err != nil {
		t.Fatalf("posting the consent form: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// exchange is the CLI's token request.
func (e *loginEnv) exchange(t *testing.T, code, verifier, redirect string) (int, map[string]any) {
	t.Helper()
	return e.tokenRequest(t, url.Values{"grant_type": {"authorization_code"}, "code": {code}, "code_verifier": {verifier}, "redirect_uri": {redirect}, "client_id": {access.LoginClientID}})
}

// tokenRequest posts a form to the token endpoint.
func (e *loginEnv) tokenRequest(t *testing.T, form url.Values) (int, map[string]any) {
	t.Helper()
	resp, err := e.ts.Client().PostForm(e.ts.URL+"/oauth/token", form)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc map[string]any
	json.NewDecoder(resp.Body).Decode(&doc)
	return resp.StatusCode, doc
}

// login runs 'terraform login' to the end and returns the token.
func (e *loginEnv) login(t *testing.T) string {
	t.Helper()
	code := e.cliCode(t, e.browser())
	status, doc := e.exchange(t, code, cliVerifier, cliRedirect)
	tok, _ := doc["access_token"].(string)
	if status != 200 || !strings.HasPrefix(tok, "airgap_") || doc["token_type"] != "bearer" {
		t.Fatalf("the token request: %d %v", status, doc)
	}
	return tok
}

// get sends a GET with a bearer token.
func (e *loginEnv) get(t *testing.T, path, token string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", e.ts.URL+path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// stored counts the state's login files: tokens, codes, used sign-ins.
func (e *loginEnv) stored(t *testing.T) (tokens, codes, used int) {
	t.Helper()
	n := func(sub string) int {
		es, _ := os.ReadDir(filepath.Join(e.state, "logins", sub))
		return len(es)
	}
	return n("tokens"), n("codes"), n("used")
}

// auditEvents returns the audit log's event lines.
func (e *loginEnv) auditEvents(t *testing.T) []map[string]any {
	t.Helper()
	b, _ := os.ReadFile(e.audit)
	r, _ := os.ReadFile(e.audit + ".refusals") // refusals have a file of their own
	b = append(b, r...)
	var out []map[string]any
	for _, l := range strings.Split(string(b), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["event"] != nil {
			out = append(out, m)
		}
	}
	return out
}

func hasEvent(evs []map[string]any, kv ...string) bool {
	for _, e := range evs {
		ok := true
		for i := 0; i+1 < len(kv); i += 2 {
			if fmt.Sprint(e[kv[i]]) != kv[i+1] {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

const (
	tfRandom = "/v1/providers/hashicorp/random/versions"                            // registry.terraform.io: the group's
	tofuNull = "/origin/registry.opentofu.org/v1/providers/hashicorp/null/versions" // registry.opentofu.org: dave's only
)

// TestLoginFlow: the CLI's flow to the end: discovery advertises login.v1,
// the authorization request goes to the IdP with our own state, nonce and
// PKCE, the callback sends a one-time code to the CLI, the token request
// with the verifier returns a token that reads what the person's group
// allows and answers the rest as missing; the login is audited.
func TestLoginFlow(t *testing.T) {
	e := setupLogin(t)
	resp, body := e.get(t, "/.well-known/terraform.json", "")
	var disco map[string]any
	json.Unmarshal([]byte(body), &disco)
	lv1, _ := disco["login.v1"].(map[string]any)
	if resp.StatusCode != 200 || lv1["client"] != access.LoginClientID || lv1["authz"] != "/oauth/authorization" || lv1["token"] != "/oauth/token" ||
		fmt.Sprint(lv1["ports"]) != "[10000 10010]" || fmt.Sprint(lv1["grant_types"]) != "[authz_code]" {
		t.Fatalf("discovery: %s %s", resp.Status, body)
	}
	var idpReq url.Values
	e.idp.set(func(d *fakeIdP) { d.onAuth = func(q url.Values) error { idpReq = q; return nil } })
	tok := e.login(t)
	if idpReq.Get("client_id") != "airgap" || idpReq.Get("code_challenge_method") != "S256" || idpReq.Get("nonce") == "" ||
		idpReq.Get("redirect_uri") != e.ts.URL+"/oauth/callback" || idpReq.Get("state") == "cli-state-1" || !strings.Contains(idpReq.Get("scope"), "openid") {
		t.Errorf("the authorization request to the IdP: %v", idpReq)
	}
	if r, b := e.get(t, tfRandom, tok); r.StatusCode != 200 {
		t.Errorf("the login token on an address its group allows: %s %s", r.Status, b)
	}
	r1, b1 := e.get(t, tofuNull, tok)
	r2, b2 := e.get(t, "/origin/registry.opentofu.org/v1/providers/hashicorp/nothere/versions", tok)
	if r1.StatusCode != 404 || strings.Replace(b1, "null", "nothere", 1) != b2 || r2.StatusCode != 404 {
		t.Errorf("outside the rules: %s %s; missing: %s %s", r1.Status, b1, r2.Status, b2)
	}
	tokens, codes, _ := e.stored(t)
	if tokens != 1 || codes != 0 {
		t.Errorf("the state holds %d tokens and %d codes, want 1 and 0", tokens, codes)
	}
	evs := e.auditEvents(t)
	if !hasEvent(evs, "event", "login", "user", "carol@site.example", "via", "cli", "groups", "[platform]") ||
		!hasEvent(evs, "event", "refused", "reason", "out_of_scope", "address", "registry.opentofu.org/hashicorp/null", "user", "carol@site.example") {
		t.Errorf("audit events: %v", evs)
	}
	if b, _ := os.ReadFile(e.audit); strings.Contains(string(b), strings.TrimPrefix(tok, "airgap_")) || strings.Contains(e.logs.String(), strings.TrimPrefix(tok, "airgap_")) {
		t.Error("the token's secret is in the audit log or the log")
	}
	// A user block adds to the groups.
	e.idp.signInAs("dave@site.example", "platform")
	dave := e.login(t)
	if r, _ := e.get(t, tofuNull, dave); r.StatusCode != 200 {
		t.Errorf("a user block's address: %s", r.Status)
	}
	// An unverified address gets no user block.
	e.idp.set(func(d *fakeIdP) { d.claims["email_verified"] = false })
	unverified := e.login(t)
	if r, _ := e.get(t, tofuNull, unverified); r.StatusCode != 404 {
		t.Errorf("a user block for an unverified address applied: %s", r.Status)
	}
}

// TestLoginRefusals: every way a sign-in can go wrong is refused with a
// page that says so, an audit line, and nothing stored.
func TestLoginRefusals(t *testing.T) {
	e := setupLogin(t)
	page := func(t *testing.T, u string, br *http.Client, status int, want string) {
		t.Helper()
		resp, body := visit(t, br, u)
		if resp.StatusCode != status || !strings.Contains(body, want) || resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("%s: %s, want %d and %q:\n%s", u, resp.Status, status, want, body)
		}
		if tokens, codes, _ := e.stored(t); tokens+codes != 0 {
			t.Errorf("%s: the state holds %d tokens and %d codes", u, tokens, codes)
		}
	}
	t.Run("authorization requests", func(t *testing.T) {
		e.clock.add(time.Hour) // the failure limiter forgets the cases before
		var asked bool
		e.idp.set(func(d *fakeIdP) { d.onAuth = func(url.Values) error { asked = true; return nil } })
		defer e.idp.set(func(d *fakeIdP) { d.onAuth = nil })
		for _, c := range []struct {
			name string
			mod  func(url.Values)
			want string
		}{
			{"a port outside the range", func(q url.Values) { q.Set("redirect_uri", "http://localhost:9999/login") }, "with a port from 10000 to 10010"},
			{"another host", func(q url.Values) { q.Set("redirect_uri", "http://evil.example:10001/login") }, "is not http://localhost:PORT/login"},
			{"another path", func(q url.Values) { q.Set("redirect_uri", "http://localhost:10001/steal") }, "is not http://localhost:PORT/login"},
			{"https", func(q url.Values) { q.Set("redirect_uri", "https://localhost:10001/login") }, "is not http://localhost:PORT/login"},
			{"no PKCE", func(q url.Values) { q.Del("code_challenge"); q.Del("code_challenge_method") }, "PKCE"},
			{"plain PKCE", func(q url.Values) { q.Set("code_challenge_method", "plain") }, "PKCE"},
			{"implicit grant", func(q url.Values) { q.Set("response_type", "token") }, "authorization code grant"},
			{"another client", func(q url.Values) { q.Set("client_id", "evil") }, "is not the one"},
			{"no state", func(q url.Values) { q.Del("state") }, "no state"},
		} {
			asked = false
			page(t, e.authorizeURL(c.mod), e.browser(), 400, c.want)
			if asked {
				t.Errorf("%s: the browser was sent to the IdP", c.name)
			}
		}
	})
	// The callback: hand-made, altered, from another browser, replayed.
	t.Run("a state the appliance did not make", func(t *testing.T) {
		e.clock.add(time.Hour) // the failure limiter forgets the cases before
		page(t, e.ts.URL+"/oauth/callback?code=x&state=forged", e.browser(), 400, "was not made by this appliance")
	})
	// The sign-in up to the IdP's answer, without following it.
	stop := e.browser()
	stop.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), e.ts.URL+"/oauth/callback") || req.URL.Hostname() == "localhost" {
			return http.ErrUseLastResponse
		}
		return nil
	}
	callback := func() string {
		resp, _ := visit(t, stop, e.authorizeURL(nil))
		return resp.Header.Get("Location")
	}
	t.Run("altered state", func(t *testing.T) {
		e.clock.add(time.Hour) // the failure limiter forgets the cases before
		cb, _ := url.Parse(callback())
		q := cb.Query()
		st := []byte(q.Get("state"))
		st[len(st)/2] ^= 1
		q.Set("state", string(st))
		cb.RawQuery = q.Encode()
		page(t, cb.String(), stop, 400, "was not made by this appliance")
	})
	t.Run("another browser", func(t *testing.T) {
		e.clock.add(time.Hour) // the failure limiter forgets the cases before
		page(t, callback(), e.browser(), 400, "started in another browser")
	})
	t.Run("too late", func(t *testing.T) {
		e.clock.add(time.Hour) // the failure limiter forgets the cases before
		cb := callback()
		e.clock.add(11 * time.Minute)
		defer e.clock.add(-11 * time.Minute)
		page(t, cb, stop, 400, "must be completed within 10m")
	})
	t.Run("replayed", func(t *testing.T) {
		e.clock.add(time.Hour) // the failure limiter forgets the cases before
		cb := callback()
		resp, body := visit(t, stop, cb)
		if resp.StatusCode != http.StatusOK || !strings.Contains(body, `name="consent"`) {
			t.Fatalf("the first use: %s %s", resp.Status, body)
		}
		os.RemoveAll(filepath.Join(e.state, "logins", "codes")) // (the CLI would exchange it)
		os.MkdirAll(filepath.Join(e.state, "logins", "codes"), 0o700)
		page(t, cb, stop, 400, "already completed")
		// A new code of the IdP for the same state (its authorization
		// request driven again) is refused too.
		u, _ := url.Parse(cb)
		again := e.idp.issuer + "/auth?" + url.Values{"state": {u.Query().Get("state")}, "nonce": {"n"}, "code_challenge": {"c"}, "code_challenge_method": {"S256"},
			"redirect_uri": {e.ts.URL + "/oauth/callback"}, "client_id": {"airgap"}}.Encode()
		resp, _ = visit(t, stop, again)
		page(t, resp.Header.Get("Location"), stop, 400, "already completed")
	})
	for _, c := range []struct {
		name, reason string
		status       int
		set          func(*fakeIdP)
		want         string
	}{
		{"the IdP says no", "idp_refused", 403, func(d *fakeIdP) { d.authErr = "access_denied" }, "answered access_denied"},
		{"another nonce", "nonce", 400, func(d *fakeIdP) { d.mutate = func(c map[string]any) { c["nonce"] = "replayed" } }, "another nonce"},
		{"no nonce", "nonce", 400, func(d *fakeIdP) { d.mutate = func(c map[string]any) { delete(c, "nonce") } }, "another nonce"},
		{"another audience", "audience", 502, func(d *fakeIdP) { d.mutate = func(c map[string]any) { c["aud"] = "another-client" } }, "expected audience"},
		{"another issuer", "issuer", 502, func(d *fakeIdP) { d.mutate = func(c map[string]any) { c["iss"] = "https://evil.example" } }, "different provider"},
		{"expired", "expired", 502, func(d *fakeIdP) { d.mutate = func(c map[string]any) { c["exp"] = time.Now().Add(-time.Minute).Unix() } }, "clocks"},
		{"a key the IdP does not publish", "signature", 502, func(d *fakeIdP) { d.wrongKey = true }, "signature"},
		{"an answer of 2 MiB", "idp_answer", 502, func(d *fakeIdP) { d.bigToken = true }, "could not be read"},
		// Discovery lists the algorithms an attacker would like; only
		// public-key signatures by the published keys count.
		{"an unsigned ID token", "signature", 502, func(d *fakeIdP) { d.alg, d.algs = "none", []string{"none", "HS256", "RS256"} }, "ID token was refused"},
		{"an ID token keyed by the client secret", "signature", 502, func(d *fakeIdP) { d.alg, d.algs = "HS256", []string{"HS256", "RS256"} }, "ID token was refused"},
		{"2 MiB of published keys", "signature", 502, func(d *fakeIdP) { d.bigKeys = true }, "larger than 1048576 bytes"},
		{"no group or user block", "no_rules", 403, func(d *fakeIdP) {
			d.claims = map[string]any{"sub": "x", "email": "eve@site.example", "groups": []string{"visitors"}}
		},
			"the groups visitors. None of them has a group block"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e.clock.add(time.Hour) // the failure limiter forgets the cases before
			e.idp.set(c.set)
			defer e.idp.reset()
			page(t, e.authorizeURL(nil), e.browser(), c.status, c.want)
			if !hasEvent(e.auditEvents(t), "event", "login_refused", "reason", c.reason) {
				t.Errorf("no login_refused audit line with reason %s", c.reason)
			}
		})
	}
	// The catalog's sign-in refuses the same way.
	e.idp.set(func(d *fakeIdP) { d.claims = map[string]any{"sub": "y", "email": "eve@site.example"} })
	page(t, e.ts.URL+"/oauth/signin?next=/", e.browser(), 403, "gives you no access")
	// Bad states count against the address, as bad tokens do.
	e.clock.add(time.Hour)
	for range 10 {
		visit(t, e.browser(), e.ts.URL+"/oauth/callback?code=x&state=forged")
	}
	if resp, body := visit(t, e.browser(), e.ts.URL+"/oauth/callback?code=x&state=forged"); resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "Too many failed sign-ins") {
		t.Errorf("the 11th bad state from one address: %s\n%s", resp.Status, body)
	}
}

// TestLoginTokenRequests: the token request: a code works once, within a
// minute, with its redirect URI and the verifier of its challenge; each
// failure says why (RFC 6749's JSON, which x/oauth2 shows the CLI's user)
// and issues nothing.
func TestLoginTokenRequests(t *testing.T) {
	e := setupLogin(t)
	for _, c := range []struct {
		name, verifier, redirect string
		wait                     time.Duration
		want                     string
	}{
		{"a wrong verifier", strings.Repeat("v", 43), cliRedirect, 0, "does not match"},
		{"a short verifier", "short", cliRedirect, 0, "malformed"},
		{"another redirect URI", cliVerifier, "http://localhost:10006/login", 0, "redirect URI differs"},
		{"an expired code", cliVerifier, cliRedirect, 61 * time.Second, "unknown, already used or expired"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code := e.cliCode(t, e.browser())
			e.clock.add(c.wait)
			defer e.clock.add(-c.wait)
			status, doc := e.exchange(t, code, c.verifier, c.redirect)
			if status != 400 || doc["error"] != "invalid_grant" || !strings.Contains(fmt.Sprint(doc["error_description"]), c.want) {
				t.Errorf("%d %v, want invalid_grant: %s", status, doc, c.want)
			}
			// The code is gone either way.
			if status, doc := e.exchange(t, code, cliVerifier, cliRedirect); status != 400 || !strings.Contains(fmt.Sprint(doc["error_description"]), "already used") {
				t.Errorf("the code again: %d %v", status, doc)
			}
		})
	}
	code := e.cliCode(t, e.browser())
	if status, _ := e.exchange(t, code, cliVerifier, cliRedirect); status != 200 {
		t.Fatalf("the token request: %d", status)
	}
	if status, doc := e.exchange(t, code, cliVerifier, cliRedirect); status != 400 || doc["error"] != "invalid_grant" {
		t.Errorf("a code used twice: %d %v", status, doc)
	}
	if tokens, _, _ := e.stored(t); tokens != 1 {
		t.Errorf("%d tokens stored, want 1", tokens)
	}
	// Other grants, clients, and a body that is not a form (from an
	// address not blocked by the failures above, which the limiter
	// forgets in time).
	e.clock.add(time.Hour)
	form := func(v url.Values) (int, map[string]any) { return e.tokenRequest(t, v) }
	if status, doc := form(url.Values{"grant_type": {"password"}}); status != 400 || doc["error"] != "unsupported_grant_type" {
		t.Errorf("a password grant: %d %v", status, doc)
	}
	if status, doc := form(url.Values{"grant_type": {"authorization_code"}, "client_id": {"evil"}}); status != 401 || doc["error"] != "invalid_client" {
		t.Errorf("another client: %d %v", status, doc)
	}
	resp, _ := e.ts.Client().Post(e.ts.URL+"/oauth/token", "application/x-www-form-urlencoded", strings.NewReader(strings.Repeat("a=b&", 8<<10)))
	if resp.StatusCode != 400 {
		t.Errorf("a form over 16 KiB: %s", resp.Status)
	}
	if resp, _ := e.get(t, "/oauth/token", ""); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /oauth/token: %s", resp.Status)
	}
}

// TestLoginTokenLifetime: login tokens expire after token_lifetime (the
// 401 says to log in again), are revoked by the token verbs' function
// (the refusal names them), and revocation and a narrowed group apply at
// once.
func TestLoginTokenLifetime(t *testing.T) {
	e := setupLogin(t)
	tok := e.login(t)
	e.clock.add(time.Hour)
	resp, body := e.get(t, tfRandom, tok)
	if resp.StatusCode != 401 || !strings.Contains(body, "carol@site.example expired at") || !strings.Contains(body, "terraform login") {
		t.Errorf("an expired login token: %s %s", resp.Status, body)
	}
	e.clock.add(-time.Hour)
	if r, _ := e.get(t, tfRandom, tok); r.StatusCode != 200 {
		t.Fatalf("before it expires: %s", r.Status)
	}
	list, err := access.LoginTokens(e.root)
	if err != nil || len(list) != 1 || list[0].User != "carol@site.example" || list[0].Via != "cli" || fmt.Sprint(list[0].Groups) != "[platform]" {
		t.Fatalf("LoginTokens: %v %+v", err, list)
	}
	revoked, err := access.RevokeLoginTokens(e.root, "CAROL@site.example", "", "tester", time.Now())
	if err != nil || len(revoked) != 1 {
		t.Fatalf("RevokeLoginTokens: %v %v", err, revoked)
	}
	// Another process revoked it: this one sees it at its next scan (Watch
	// does one a second); here, at once, as the file is gone.
	deadline := time.Now().Add(3 * time.Second)
	for {
		resp, body = e.get(t, tfRandom, tok)
		if resp.StatusCode == 401 || time.Now().After(deadline) {
			break
		}
		e.ac.ScanLogins()
		time.Sleep(50 * time.Millisecond)
	}
	if resp.StatusCode != 401 || !strings.Contains(body, "was revoked") {
		t.Errorf("a revoked login token: %s %s", resp.Status, body)
	}
	if !hasEvent(e.auditEvents(t), "event", "refused", "reason", "revoked", "user", "carol@site.example") {
		t.Errorf("the revoked token's attempt is not audited under its name: %v", e.auditEvents(t))
	}
	// A group narrowed in the access file narrows every token of it.
	tok = e.login(t)
	b, _ := os.ReadFile(e.access)
	os.WriteFile(e.access, bytes.Replace(b, []byte(`"registry.terraform.io/**"`), []byte(`"registry.terraform.io/example/**"`), 1), 0o600)
	if _, err := e.ac.Reload(); err != nil {
		t.Fatal(err)
	}
	if r, _ := e.get(t, tfRandom, tok); r.StatusCode != 404 {
		t.Errorf("after the group was narrowed: %s", r.Status)
	}
}

// TestLoginReplicasAndRestart: two appliances over one store accept a
// login token either issued, at once, and a new process (a restart) too.
func TestLoginReplicasAndRestart(t *testing.T) {
	e := setupLogin(t)
	other, err := access.NewAccessControl(access.AccessOptions{File: e.access, TLSDir: store.TLSDir(e.root), StateDir: e.state})
	if err != nil {
		t.Fatal(err)
	}
	ts2 := httptest.NewTLSServer(server.New(e.st, server.Options{Logger: slog.New(slog.DiscardHandler), Access: other}))
	defer ts2.Close()
	tok := e.login(t) // issued by the first
	req, _ := http.NewRequest("GET", ts2.URL+tfRandom, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	resp, err := ts2.Client().Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("the second replica refused the first's login token: %v %v", err, resp)
	}
	resp.Body.Close()
	// A download URL signed by one for a login token works on the other.
	_, body := e.get(t, "/v1/providers/hashicorp/random/3.6.0/download/linux/amd64", tok)
	var dl struct {
		DownloadURL string `json:"download_url"`
	}
	json.Unmarshal([]byte(body), &dl)
	resp, err = ts2.Client().Get(ts2.URL + dl.DownloadURL)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("a URL signed for a login token by the first replica, on the second: %v %v", err, resp)
	}
	resp.Body.Close()
}

// TestLoginIdPUnreachable: with the IdP gone, login tokens already issued
// keep working, and a sign-in fails with a page and a log line that name
// the IdP and the error, at the start (an appliance that never reached it)
// and at the code exchange; nothing is stored.
func TestLoginIdPUnreachable(t *testing.T) {
	e := setupLogin(t)
	tok := e.login(t)
	stop := e.browser()
	stop.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), e.ts.URL+"/oauth/callback") {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, _ := visit(t, stop, e.authorizeURL(nil))
	callback := resp.Header.Get("Location")
	e.idp.srv.Close()
	for name, u := range map[string]string{"the code exchange": callback} {
		resp, body := visit(t, stop, u)
		if resp.StatusCode != 502 || !strings.Contains(body, "could not reach the identity provider at "+e.idp.issuer) {
			t.Errorf("%s with the IdP gone: %s\n%s", name, resp.Status, body)
		}
	}
	// A restarted appliance (the discovery document not cached).
	ac, err := access.NewAccessControl(access.AccessOptions{File: e.access, TLSDir: store.TLSDir(e.root), StateDir: e.state})
	if err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	ts := httptest.NewTLSServer(server.New(e.st, server.Options{Logger: slog.New(slog.NewJSONHandler(&syncWriter{w: &logs}, nil)), Access: ac}))
	defer ts.Close()
	resp, err = ts.Client().Get(ts.URL + strings.TrimPrefix(e.authorizeURL(nil), e.ts.URL))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 502 || !strings.Contains(string(body), e.idp.issuer) || !strings.Contains(string(body), "tokens you already have keep working") {
		t.Errorf("a sign-in with the IdP gone: %s\n%s", resp.Status, body)
	}
	if !strings.Contains(logs.String(), `"msg":"sign-in failed: the identity provider cannot be reached`) || !strings.Contains(logs.String(), `"issuer":"`+e.idp.issuer+`"`) {
		t.Errorf("the log line does not name the IdP:\n%s", logs.String())
	}
	if r, _ := e.get(t, tfRandom, tok); r.StatusCode != 200 {
		t.Errorf("a login token with the IdP gone: %s", r.Status)
	}
	if tokens, codes, _ := e.stored(t); tokens != 1 || codes != 0 {
		t.Errorf("the state holds %d tokens and %d codes, want 1 and 0", tokens, codes)
	}
}

// TestLoginCatalogSession: the catalog signs in through the IdP: a session
// cookie (Secure, HttpOnly, SameSite=Lax, the login token, expiring with
// it) shows what the person may read; sign-out revokes it; a cross-site
// sign-out is refused; Basic with a token still works for scripts.
func TestLoginCatalogSession(t *testing.T) {
	e := setupLogin(t)
	br := e.browser()
	resp, body := visit(t, br, e.ts.URL+"/ui/providers/registry.terraform.io/hashicorp/random")
	if resp.StatusCode != 200 || resp.Request.URL.Path != "/ui/providers/registry.terraform.io/hashicorp/random" || !strings.Contains(body, "hashicorp/random") {
		t.Fatalf("signing in from a provider page ended at %s %s", resp.Request.URL, resp.Status)
	}
	u, _ := url.Parse(e.ts.URL)
	var session *http.Cookie
	for _, c := range br.Jar.Cookies(u) {
		if c.Name == "__Host-airgap_session" {
			session = c
		}
	}
	if session == nil {
		t.Fatal("no session cookie")
	}
	// The cookie as the appliance set it (the jar keeps only name and value).
	signin := e.browser()
	signin.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if req.URL.Host == u.Host && req.URL.Path == "/" {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, _ = visit(t, signin, e.ts.URL+"/oauth/signin?next=%2F")
	set := resp.Header.Get("Set-Cookie")
	for _, want := range []string{"__Host-airgap_session=airgap_", "Path=/", "HttpOnly", "Secure", "SameSite=Lax", "Max-Age=3600"} {
		if !strings.Contains(set, want) {
			t.Errorf("the session cookie %q lacks %s", set, want)
		}
	}
	resp, body = visit(t, br, e.ts.URL+"/")
	if resp.StatusCode != 200 || !strings.Contains(body, `Signed in as <b id="person">carol@site.example</b> (groups: platform)`) ||
		!strings.Contains(body, `data-addr="registry.terraform.io/hashicorp/random"`) || strings.Contains(body, `data-addr="registry.opentofu.org/hashicorp/null"`) {
		t.Errorf("the catalog signed in: %s\n%s", resp.Status, body)
	}
	if strings.Contains(body, strings.TrimPrefix(session.Value, "airgap_")) {
		t.Error("the page shows the session's token")
	}
	// A sign-out from another site is refused (with the cookie a browser
	// would send, and without the page's form value, or from another
	// Origin); the page's sign-out works.
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if csrf == nil {
		t.Fatalf("the page has no sign-out form:\n%s", body)
	}
	for _, c := range []struct{ origin, form string }{{"null", "x=1"}, {"https://evil.example", "csrf=" + csrf[1]}, {"", "csrf=forged"}} {
		req, _ := http.NewRequest("POST", e.ts.URL+"/oauth/signout", strings.NewReader(c.form))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if c.origin != "" {
			req.Header.Set("Origin", c.origin)
		}
		req.AddCookie(session)
		if resp, err := e.ts.Client().Do(req); err != nil || resp.StatusCode != 403 {
			t.Errorf("a sign-out from another site (Origin %q, %s): %v %v", c.origin, c.form, err, resp)
		}
	}
	if r, _ := e.get(t, tfRandom, session.Value); r.StatusCode != 200 {
		t.Fatalf("the session's token after refused sign-outs: %s", r.Status)
	}
	resp, err := br.PostForm(e.ts.URL+"/oauth/signout", url.Values{"csrf": {csrf[1]}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "You are signed out") {
		t.Errorf("sign-out: %s %s", resp.Status, b)
	}
	if r, _ := e.get(t, tfRandom, session.Value); r.StatusCode != 401 {
		t.Errorf("the session's token after sign-out: %s", r.Status)
	}
	if !hasEvent(e.auditEvents(t), "event", "token_revoked", "user", "carol@site.example", "by", "signed out") {
		t.Errorf("sign-out is not audited: %v", e.auditEvents(t))
	}
	// The revoked cookie is dropped and the browser sent to sign in again.
	noFollow := &http.Client{Transport: br.Transport, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, _ := http.NewRequest("GET", e.ts.URL+"/", nil)
	req.AddCookie(session)
	resp, err = noFollow.Do(req)
	if err != nil || resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/oauth/signin?next=%2F" || !strings.Contains(resp.Header.Get("Set-Cookie"), "Max-Age=0") {
		t.Errorf("the catalog with a revoked session: %v %v %v", err, resp.Status, resp.Header)
	}
	// Scripts: Basic with a login token as the password.
	tok := e.login(t)
	req, _ = http.NewRequest("GET", e.ts.URL+"/", nil)
	req.SetBasicAuth("me", tok)
	resp, err = e.ts.Client().Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("the catalog with Basic and a login token: %v %v", err, resp)
	}
}

// TestLoginRevokeKeepsOwner: root revoking a login token ('airgap token
// revoke --store' run by the operator) leaves the record to the user serve
// runs as, which must read it to refuse the token under its name.
func TestLoginRevokeKeepsOwner(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give the file away")
	}
	e := setupLogin(t)
	e.login(t)
	tokens := filepath.Join(e.state, "logins", "tokens")
	if err := os.Chown(tokens, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	revoked, err := access.RevokeLoginTokens(e.root, "carol@site.example", "", "root", time.Now())
	if err != nil || len(revoked) != 1 {
		t.Fatalf("RevokeLoginTokens: %v %v", err, revoked)
	}
	es, _ := os.ReadDir(tokens)
	for _, de := range es {
		fi, _ := de.Info()
		uid, _, _ := osfile.Owner(fi)
		if strings.HasSuffix(de.Name(), ".revoked") && (uid != 65534 || fi.Mode().Perm() != 0o600) {
			t.Errorf("%s: uid %d, mode %v", de.Name(), uid, fi.Mode())
		}
	}
}

// TestLoginOnePersonCannotFillTheState: one person who signs in again and
// again (a script driving the identity provider's form) leaves at most
// 20 live and 100 ended records, not one per sign-in: each would be kept
// 30 days, and 50,000 of them lock everyone out of signing in. Their
// newest token works; the replaced ones are refused, the forgotten ones as
// unknown.
func TestLoginOnePersonCannotFillTheState(t *testing.T) {
	e := setupLogin(t)
	const logins = 160
	var toks []string
	start := time.Now()
	for range logins {
		toks = append(toks, e.login(t))
		e.clock.add(time.Second) // (tokens are ordered by their creation, to the second)
	}
	took := time.Since(start)
	t.Logf("%d sign-ins of one person in %v (%v each): 50,000 would take %v", logins, took, took/logins, took/logins*50000)
	tokens, _, _ := e.stored(t)
	if tokens > 120 {
		t.Errorf("one person's %d sign-ins left %d token records (want at most 20 live + 100 ended)", logins, tokens)
	}
	if r, body := e.get(t, tfRandom, toks[logins-1]); r.StatusCode != 200 {
		t.Errorf("the newest token: %s %s", r.Status, body)
	}
	for _, i := range []int{0, logins - 21} {
		if r, _ := e.get(t, tfRandom, toks[i]); r.StatusCode != 401 {
			t.Errorf("token %d of %d (replaced): %s", i, logins, r.Status)
		}
	}
	// Someone else still signs in.
	e.idp.signInAs("erin@site.example", "platform")
	defer e.idp.reset()
	if r, body := e.get(t, tfRandom, e.login(t)); r.StatusCode != 200 {
		t.Errorf("another person's token: %s %s", r.Status, body)
	}
}

// TestLoginCodesLeftUnexchanged: codes nobody exchanged (a person's script
// signing in without a CLI, 10,001 of them within the sweep's 11 minutes)
// stop counting against the 10,000 outstanding once expired: the next
// person's 'terraform login' still works.
func TestLoginCodesLeftUnexchanged(t *testing.T) {
	e := setupLogin(t)
	dir := filepath.Join(e.state, "logins", "codes")
	old := time.Now().Add(-3 * time.Minute)
	for i := range 10_001 {
		p := filepath.Join(dir, fmt.Sprintf("%064x.json", i))
		if err := os.WriteFile(p, []byte(`{}`), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	if r, body := e.get(t, tfRandom, e.login(t)); r.StatusCode != 200 {
		t.Errorf("a login after 10,001 expired codes: %s %s", r.Status, body)
	}
	if _, codes, _ := e.stored(t); codes > 1 {
		t.Errorf("%d codes left", codes)
	}
}

// TestLoginLifetimeShortened: a token_lifetime shortened in the access
// file shortens the login tokens already issued (an operator tightening
// it after an incident expects no 12-hour token to outlive the new 10
// minutes); lengthened, it lengthens none.
func TestLoginLifetimeShortened(t *testing.T) {
	e := setupLogin(t)
	tok := e.login(t)
	setLifetime := func(d string) {
		b, _ := os.ReadFile(e.access)
		b = regexp.MustCompile(`token_lifetime = "[^"]*"`).ReplaceAll(b, []byte(`token_lifetime = "`+d+`"`))
		os.WriteFile(e.access, b, 0o600)
		if _, err := e.ac.Reload(); err != nil {
			t.Fatal(err)
		}
	}
	e.clock.add(20 * time.Minute)
	if r, _ := e.get(t, tfRandom, tok); r.StatusCode != 200 {
		t.Fatalf("within its hour: %s", r.Status)
	}
	setLifetime("10m")
	if r, body := e.get(t, tfRandom, tok); r.StatusCode != 401 || !strings.Contains(body, "expired") {
		t.Errorf("20 minutes old, token_lifetime now 10m: %s %s", r.Status, body)
	}
	setLifetime("48h")
	e.clock.add(time.Hour)
	if r, _ := e.get(t, tfRandom, tok); r.StatusCode != 401 {
		t.Errorf("80 minutes old, issued for an hour, token_lifetime now 48h: %s", r.Status)
	}
}

// TestLoginManyGroups: a person in many groups that have a block (60,
// of 44-character names) completes 'terraform login': the consent page's
// grant, which carries their groups, is read back whole (it was over the
// 4 KiB unseal read, so every Allow was "not valid"); and the token has
// every group.
func TestLoginManyGroups(t *testing.T) {
	e := setupLogin(t)
	var groups []string
	var blocks strings.Builder
	for i := range 60 {
		g := fmt.Sprintf("engineering-platform-infrastructure-team-%02d", i)
		groups = append(groups, g)
		fmt.Fprintf(&blocks, "group %q {\n  allow = [\"registry.terraform.io/**\"]\n}\n", g)
	}
	b, _ := os.ReadFile(e.access)
	os.WriteFile(e.access, append(b, blocks.String()...), 0o600)
	if _, err := e.ac.Reload(); err != nil {
		t.Fatal(err)
	}
	e.idp.set(func(d *fakeIdP) { d.claims = map[string]any{"sub": "x", "email": "eve@site.example", "groups": groups} })
	tok := e.login(t)
	if r, _ := e.get(t, tfRandom, tok); r.StatusCode != 200 {
		t.Errorf("the login token of a person in 60 groups: %s", r.Status)
	}
	if !hasEvent(e.auditEvents(t), "event", "login", "user", "eve@site.example", "via", "cli") {
		t.Errorf("no login event: %v", e.auditEvents(t))
	}
}
