package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/server/acl"
	"github.com/airgap/airgap/server/ops"
	"github.com/airgap/airgap/server/protocol"
	"github.com/airgap/airgap/verify"
)

// clock is a settable clock for access control tests.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// accessEnv is a server over the standard fixtures (plus a module without
// a subdirectory) with an access file.
type accessEnv struct {
	root, access string
	st           *store.Store
	ac           *access.AccessControl
	ts           *httptest.Server
	clock        *clock
	tokens       map[string]string // name -> secret
	logs         *bytes.Buffer
	metrics      *ops.Metrics
	audit        string
}

// tokens: name -> allow patterns. anonymous: patterns or nil.
func setupAccess(t testing.TB, tokens map[string][]string, anonymous []string) *accessEnv {
	t.Helper()
	signer := bundletest.Key(t, "site")
	dir := t.TempDir()
	set := bundletest.Standard(t, dir, signer)
	plain := filepath.Join(dir, "net.tar.gz")
	bundletest.WriteModuleArchive(t, plain, map[string]string{"main.tf": "output \"x\" { value = 1 }\n"})
	set.AddModule(t, dist.ModuleVersion{Host: "site.example", Namespace: "net", Name: "web", System: "aws", Version: "2.0.0", Source: "https://site.example/web.tar.gz"}, plain)
	return setupAccessSet(t, set, signer, tokens, anonymous)
}

// setupAccessSet is setupAccess over the given set.
func setupAccessSet(t testing.TB, set *bundletest.Set, signer *openpgp.Entity, tokens map[string][]string, anonymous []string) *accessEnv {
	t.Helper()
	root, st := importSet(t, set, signer)
	var err error
	e := &accessEnv{root: root, st: st, access: filepath.Join(t.TempDir(), "access.hcl"), tokens: map[string]string{},
		clock: &clock{t: time.Date(2026, 11, 24, 12, 0, 30, 0, time.UTC)}, logs: &bytes.Buffer{}}
	for name, allow := range tokens {
		sec, err := acl.AddToken(e.access, name, allow, time.Time{}, e.clock.now())
		if err != nil {
			t.Fatal(err)
		}
		e.tokens[name] = sec
	}
	if anonymous != nil {
		if err := acl.SetAnonymous(e.access, anonymous); err != nil {
			t.Fatal(err)
		}
	}
	if len(tokens) == 0 && anonymous == nil {
		os.WriteFile(e.access, []byte("# nobody\n"), 0o600)
	}
	e.ac, err = access.NewAccessControl(access.AccessOptions{File: e.access, TLSDir: store.TLSDir(root), Now: e.clock.now})
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(&syncWriter{w: e.logs}, nil))
	e.metrics = ops.NewMetrics(ops.MetricsOptions{Version: "test", Catalog: st.Catalog})
	e.audit = filepath.Join(t.TempDir(), "audit.jsonl")
	al, err := access.OpenAuditLog(e.audit, 0, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { al.Close() })
	srv := server.New(st, server.Options{Logger: log, Access: e.ac})
	h := ops.Observe(srv, ops.ObserveOptions{Log: log, Metrics: e.metrics, Catalog: st.Catalog, Audit: al})
	e.ts = httptest.NewTLSServer(h)
	t.Cleanup(e.ts.Close)
	return e
}

type syncWriter struct {
	mu sync.Mutex
	w  *bytes.Buffer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// do sends a GET with the token of name ("" none, "!"+text: that text as a
// bearer) and returns the response and body.
func (e *accessEnv) do(t *testing.T, path, token string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	return e.doAt(t, e.ts.URL, path, token, hdr...)
}

// doAt is do against another server.
func (e *accessEnv) doAt(t *testing.T, base, path, token string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	switch {
	case strings.HasPrefix(token, "!"):
		req.Header.Set("Authorization", "Bearer "+token[1:])
	case token != "":
		sec, ok := e.tokens[token]
		if !ok {
			t.Fatalf("no token %s", token)
		}
		req.Header.Set("Authorization", "Bearer "+sec)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := e.ts.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func providerOf(t *testing.T, st *store.Store, typ string) *dist.ProviderVersion {
	for i, p := range st.Catalog().Providers {
		if p.Type == typ {
			return &st.Catalog().Providers[i]
		}
	}
	t.Fatalf("no provider %s", typ)
	return nil
}

func basic(secret string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte("anyone:"+secret))
}

func TestAccessNeedsAToken(t *testing.T) {
	e := setupAccess(t, map[string][]string{"all": {"**"}}, nil)
	for _, p := range []string{"/v1/providers/hashicorp/random/versions", "/mirror/registry.terraform.io/hashicorp/random/index.json",
		"/v1/modules/example/vpc/aws/versions", "/airgap/v1/origins", "/origin/registry.terraform.io/.well-known/terraform.json", "/nonexistent"} {
		resp, b := e.do(t, p, "")
		if resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != `Bearer realm="airgap"` || !strings.Contains(string(b), "requires a token") {
			t.Errorf("%s without a token: %s %q %s", p, resp.Status, resp.Header.Get("WWW-Authenticate"), b)
		}
		if resp, _ := e.do(t, p, "!"+"airgap_"+strings.Repeat("A", 43)); resp.StatusCode != 401 {
			t.Errorf("%s with a wrong token: %s", p, resp.Status)
		}
	}
	// Open: health, CA, discovery (no catalog data in them).
	resp, b := e.do(t, "/healthz", "")
	if resp.StatusCode != 200 || strings.Contains(string(b), "versions") {
		t.Errorf("/healthz: %s %s (must not count the catalog)", resp.Status, b)
	}
	if resp, _ := e.do(t, "/.well-known/terraform.json", ""); resp.StatusCode != 200 {
		t.Errorf("discovery: %s", resp.Status)
	}
	// With the token, by Bearer and by Basic (password).
	if resp, b := e.do(t, "/v1/providers/hashicorp/random/versions", "all"); resp.StatusCode != 200 {
		t.Fatalf("with the token: %s %s", resp.Status, b)
	}
	if resp, _ := e.do(t, "/v1/providers/hashicorp/random/versions", "", "Authorization", basic(e.tokens["all"])); resp.StatusCode != 200 {
		t.Errorf("token as a Basic password: %s", resp.Status)
	}
	// A token used after its expiry: 401 that says it expired.
	sec, err := acl.AddToken(e.access, "short", []string{"**"}, e.clock.now().Add(time.Hour), e.clock.now())
	if err != nil {
		t.Fatal(err)
	}
	// A token the server does not know makes it look at the file (at most
	// every 100 ms): a new token works at once, without Watch or SIGHUP.
	time.Sleep(150 * time.Millisecond)
	if resp, b := e.do(t, "/v1/providers/hashicorp/random/versions", "!"+sec); resp.StatusCode != 200 {
		t.Fatalf("new token: %s %s", resp.Status, b)
	}
	e.clock.add(time.Hour)
	resp, b = e.do(t, "/v1/providers/hashicorp/random/versions", "!"+sec)
	if resp.StatusCode != 401 || !strings.Contains(string(b), `token \"short\" expired at 2026-11-24T13:00:30Z`) {
		t.Errorf("expired token: %s %s", resp.Status, b)
	}
	// Revoked: refused once the file is reloaded.
	if err := acl.RemoveToken(e.access, "all"); err != nil {
		t.Fatal(err)
	}
	e.ac.Reload()
	if resp, _ := e.do(t, "/v1/providers/hashicorp/random/versions", "all"); resp.StatusCode != 401 {
		t.Errorf("revoked token: %s", resp.Status)
	}
}

// filteredStore is a store whose catalog lacks some addresses: what a
// denied address must look like.
type filteredStore struct {
	*store.Store
	cat *dist.Catalog
}

func (f filteredStore) Catalog() *dist.Catalog { return f.cat }

func without(cat *dist.Catalog, addrs ...string) *dist.Catalog {
	out := &dist.Catalog{Providers: []dist.ProviderVersion{}, Modules: []dist.ModuleVersion{}}
	drop := map[string]bool{}
	for _, a := range addrs {
		drop[a] = true
	}
	for _, p := range cat.Providers {
		if !drop[p.Addr()] {
			out.Providers = append(out.Providers, p)
		}
	}
	for _, m := range cat.Modules {
		if !drop[m.Addr()] {
			out.Modules = append(out.Modules, m)
		}
	}
	return out
}

// TestDeniedIsMissing: for a token that may not read an address, every
// request about it is answered byte for byte (status, headers but Date,
// body) as by an appliance whose catalog lacks it.
func TestDeniedIsMissing(t *testing.T) {
	e := setupAccess(t, map[string][]string{"tf": {"registry.terraform.io/**"}}, nil)
	denied := []string{"registry.opentofu.org/hashicorp/null", "site.example/net/web/aws"}
	missing := server.New(filteredStore{e.st, without(e.st.Catalog(), denied...)}, server.Options{Logger: slog.New(slog.DiscardHandler), Access: e.ac})
	other := httptest.NewTLSServer(missing)
	defer other.Close()
	zip := providerOf(t, e.st, "random").Packages[0].Digest // allowed
	var nullZip, webZip verify.Digest
	for _, p := range e.st.Catalog().Providers {
		if p.Type == "null" {
			nullZip = p.Packages[0].Digest
		}
	}
	for _, m := range e.st.Catalog().Modules {
		if m.Name == "web" {
			webZip = m.Zip
		}
	}
	paths := []string{
		"/v1/providers/hashicorp/null/versions",
		"/v1/providers/hashicorp/null/3.2.2/download/linux/amd64",
		"/origin/registry.opentofu.org/v1/providers/hashicorp/null/versions",
		"/origin/registry.opentofu.org/.well-known/terraform.json",
		"/mirror/registry.opentofu.org/hashicorp/null/index.json",
		"/mirror/registry.opentofu.org/hashicorp/null/3.2.2.json",
		"/origin/site.example/v1/modules/net/web/aws/versions",
		"/origin/site.example/v1/modules/net/web/aws/2.0.0/download",
		"/v1/modules/net/web/aws/versions",
		"/airgap/v1/origins",
		"/ui/providers/registry.opentofu.org/hashicorp/null",
		"/ui/modules/site.example/net/web/aws",
		"/v2/registry.opentofu.org/hashicorp/null/tags/list",
		"/v2/registry.opentofu.org/hashicorp/null/manifests/3.2.2",
		"/v2/site.example/modules/net/web/aws/tags/list",
		"/v2/registry.opentofu.org/hashicorp/null/blobs/" + string(nullZip),
		"/v2/site.example/modules/net/web/aws/blobs/" + string(webZip),
		"/blobs/sha256/" + nullZip.Hex() + "/x.zip",
		"/archives/sha256/" + webZip.Hex() + ".tar.gz",
	}
	get := func(base, p string) (*http.Response, []byte) { return e.doAt(t, base, p, "tf") }
	for _, p := range paths {
		r1, b1 := get(e.ts.URL, p)
		r2, b2 := get(other.URL, p)
		r1.Header.Del("Date")
		r2.Header.Del("Date")
		if r1.StatusCode != r2.StatusCode || !bytes.Equal(b1, b2) || fmt.Sprint(r1.Header) != fmt.Sprint(r2.Header) {
			t.Errorf("%s: denied and missing differ:\n denied: %s %v %s\nmissing: %s %v %s", p, r1.Status, r1.Header, b1, r2.Status, r2.Header, b2)
		}
		if r1.StatusCode == 200 && p != "/airgap/v1/origins" {
			t.Errorf("%s: 200 for a denied address: %s", p, b1)
		}
	}
	// The allowed package is served to the token (unsigned, by its scope).
	if r, _ := get(e.ts.URL, "/blobs/sha256/"+zip.Hex()+"/x.zip"); r.StatusCode != 200 {
		t.Errorf("an allowed package by token: %s", r.Status)
	}
}

func TestDefaultViewFallsThroughDenied(t *testing.T) {
	// Both origins have something; the token may read only OpenTofu's.
	e := setupAccess(t, map[string][]string{"tofu": {"registry.opentofu.org/**"}}, nil)
	var doc struct{ Versions []struct{ Version string } }
	resp, b := e.do(t, "/v1/providers/hashicorp/null/versions", "tofu")
	if resp.StatusCode != 200 || json.Unmarshal(b, &doc) != nil || len(doc.Versions) != 1 {
		t.Fatalf("default view of an allowed OpenTofu provider: %s %s", resp.Status, b)
	}
	// registry.terraform.io as Host: no terraform.io scope, default view.
	if resp, _ := e.do(t, "/v1/providers/hashicorp/random/versions", "tofu", "Host", "registry.terraform.io"); resp.StatusCode != 404 {
		t.Errorf("terraform.io's random under its own Host: %s", resp.Status)
	}
	var od protocol.OriginsDoc
	_, b = e.do(t, "/airgap/v1/origins", "tofu")
	json.Unmarshal(b, &od)
	if fmt.Sprint(od.Origins) != "[registry.opentofu.org]" || od.Providers != 1 || od.Modules != 0 {
		t.Errorf("origins for the token: %s", b)
	}
}

// downloadURL asks for a download answer and returns its download_url
// resolved against the request.
func (e *accessEnv) downloadURL(t *testing.T, path, token string) string {
	t.Helper()
	resp, b := e.do(t, path, token)
	var d dist.ProviderDownload
	if resp.StatusCode != 200 || json.Unmarshal(b, &d) != nil {
		t.Fatalf("%s: %s %s", path, resp.Status, b)
	}
	base, _ := url.Parse(e.ts.URL + path)
	ref, _ := url.Parse(d.DownloadURL)
	return base.ResolveReference(ref).String()
}

func TestSignedDownloadURLs(t *testing.T) {
	e := setupAccess(t, map[string][]string{"a": {"registry.terraform.io/**"}, "b": {"**"}}, nil)
	const dl = "/v1/providers/hashicorp/random/3.6.0/download/linux/amd64"
	u := e.downloadURL(t, dl, "a")
	if !strings.Contains(u, "?tok=a&exp=") || !strings.Contains(u, "&sig=") {
		t.Fatalf("download_url is not signed: %s", u)
	}
	get := func(u string) (*http.Response, []byte) {
		resp, err := e.ts.Client().Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, b
	}
	if resp, _ := get(u); resp.StatusCode != 200 {
		t.Fatalf("the signed URL without a token: %s", resp.Status)
	}
	// The same bucket gives the same bytes (cacheable); another token its own URL.
	if u2 := e.downloadURL(t, dl, "a"); u2 != u {
		t.Errorf("two answers in one bucket differ:\n%s\n%s", u, u2)
	}
	if ub := e.downloadURL(t, dl, "b"); ub == u || !strings.Contains(ub, "tok=b&") {
		t.Errorf("token b got %s", ub)
	}
	// Bound to its path: the signature on another blob's path is refused.
	pu, _ := url.Parse(u)
	other := providerOf(t, e.st, "random").Packages[1].Digest
	pu.Path = "/blobs/sha256/" + other.Hex() + "/x.zip"
	if resp, b := get(pu.String()); resp.StatusCode != 403 || !strings.Contains(string(b), "not valid") {
		t.Errorf("a signature moved to another path: %s %s", resp.Status, b)
	}
	// Bound to its expiry: a later exp with the same signature is refused.
	pu, _ = url.Parse(u)
	q := pu.Query()
	q.Set("exp", fmt.Sprint(e.clock.now().Add(24*time.Hour).Unix()))
	pu.RawQuery = q.Encode()
	if resp, _ := get(pu.String()); resp.StatusCode != 403 {
		t.Errorf("a stretched expiry: %s", resp.Status)
	}
	// After its expiry: refused, saying so; a fresh answer has a new URL.
	e.clock.add(access.DefaultURLTTL + 2*time.Minute)
	resp, b := get(u)
	if resp.StatusCode != 403 || !strings.Contains(string(b), "expired at") {
		t.Errorf("an expired URL: %s %s", resp.Status, b)
	}
	u3 := e.downloadURL(t, dl, "a")
	if u3 == u {
		t.Fatal("the cached answer outlived its bucket")
	}
	if resp, _ := get(u3); resp.StatusCode != 200 {
		t.Errorf("the fresh URL: %s", resp.Status)
	}
	// A URL whose token was revoked stops working at once.
	acl.RemoveToken(e.access, "a")
	e.ac.Reload()
	if resp, b := get(u3); resp.StatusCode != 403 || !strings.Contains(string(b), "its token was revoked") {
		t.Errorf("a URL of a revoked token: %s %s", resp.Status, b)
	}
	// Unsigned and without a token: 401, whether the blob exists or not.
	if resp, _ := get(e.ts.URL + "/blobs/sha256/" + other.Hex()); resp.StatusCode != 401 {
		t.Errorf("an unsigned download without a token: %s", resp.Status)
	}
}

func TestModuleDownloadAnswers(t *testing.T) {
	e := setupAccess(t, map[string][]string{"all": {"**"}}, nil)
	// Without a subdirectory: use_registry_credentials for OpenTofu >= 1.12.
	resp, b := e.do(t, "/origin/site.example/v1/modules/net/web/aws/2.0.0/download", "all")
	var d map[string]any
	json.Unmarshal(b, &d)
	loc, _ := d["location"].(string)
	if resp.StatusCode != 200 || d["use_registry_credentials"] != true || !strings.Contains(loc, ".tar.gz?tok=all&exp=") || resp.Header.Get("X-Terraform-Get") != loc {
		t.Errorf("module without subdir: %s %s %q", resp.Status, b, resp.Header.Get("X-Terraform-Get"))
	}
	// OpenTofu 1.12 sends the token to the location too: accepted.
	if r, _ := e.do(t, loc, "all"); r.StatusCode != 200 {
		t.Errorf("the location with the token: %s", r.Status)
	}
	// With one: the //subdir before the signed query, and no direct mode.
	_, b = e.do(t, "/v1/modules/example/vpc/aws/1.0.0/download", "all")
	d = nil
	json.Unmarshal(b, &d)
	loc, _ = d["location"].(string)
	if _, ok := d["use_registry_credentials"]; ok || !strings.Contains(loc, ".tar.gz//modules/vpc?tok=all&") {
		t.Errorf("module with a subdir: %s", b)
	}
	// The client strips //subdir before it asks: the signature covers that.
	fetch, _, _ := strings.Cut(loc, "//")
	_, q, _ := strings.Cut(loc, "?")
	r, err := e.ts.Client().Get(e.ts.URL + fetch + "?" + q)
	if err != nil || r.StatusCode != 200 {
		t.Errorf("the archive at the signed location: %v %v", r, err)
	}
	r.Body.Close()
}

func TestFailedAttemptsLimited(t *testing.T) {
	e := setupAccess(t, map[string][]string{"all": {"**"}}, []string{"registry.terraform.io/**"})
	const p = "/v1/providers/hashicorp/random/versions"
	for i := 0; i < 10; i++ {
		if resp, _ := e.do(t, p, "!airgap_"+strings.Repeat("x", 43)); resp.StatusCode != 401 {
			t.Fatalf("bad token %d: %s", i, resp.Status)
		}
	}
	resp, b := e.do(t, p, "all")
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "too many failed") {
		t.Fatalf("after 10 failures, the valid token: %s %q %s", resp.Status, resp.Header.Get("Retry-After"), b)
	}
	// Anonymous requests are not throttled.
	if resp, _ := e.do(t, p, ""); resp.StatusCode != 200 {
		t.Errorf("anonymous while throttled: %s", resp.Status)
	}
	e.clock.add(7 * time.Second)
	if resp, _ := e.do(t, p, "all"); resp.StatusCode != 200 {
		t.Errorf("after the bucket refilled: %s", resp.Status)
	}
}

// TestSecretsNeverShown: the secret is in no log line, metric, answer or
// page, whatever the request; the log names the token.
func TestSecretsNeverShown(t *testing.T) {
	e := setupAccess(t, map[string][]string{"ci": {"**"}}, []string{"registry.terraform.io/**"})
	sec := e.tokens["ci"]
	wrong := "airgap_" + strings.Repeat("Q", 43)
	var bodies bytes.Buffer
	for _, p := range []string{"/", "/?signin", "/ui/providers/registry.terraform.io/hashicorp/random", "/v1/providers/hashicorp/random/versions",
		"/v1/providers/hashicorp/random/3.6.0/download/linux/amd64", "/airgap/v1/origins", "/v2/", "/v2/token", "/nonexistent", "/mirror/registry.terraform.io/hashicorp/random/3.6.0.json"} {
		for _, tok := range []string{"ci", "!" + wrong, ""} {
			resp, b := e.do(t, p, tok)
			bodies.Write(b)
			fmt.Fprint(&bodies, resp.Header)
		}
		resp, b := e.do(t, p, "", "Authorization", basic(sec))
		bodies.Write(b)
		fmt.Fprint(&bodies, resp.Header)
	}
	mrec := httptest.NewRecorder()
	e.metrics.Handler().ServeHTTP(mrec, httptest.NewRequest("GET", "/metrics", nil))
	for what, text := range map[string]string{"logs": e.logs.String(), "answers": bodies.String(), "metrics": mrec.Body.String()} {
		for _, s := range []string{sec, strings.TrimPrefix(sec, acl.SecretPrefix), wrong} {
			if strings.Contains(text, s) {
				t.Errorf("a secret is in the %s", what)
			}
		}
	}
	if !strings.Contains(e.logs.String(), `"token":"ci"`) || !strings.Contains(e.logs.String(), `"auth":"invalid"`) || !strings.Contains(e.logs.String(), `"token":"anonymous"`) {
		t.Errorf("the access lines do not name the token: %s", e.logs.String())
	}
	if !strings.Contains(mrec.Body.String(), `airgap_auth_failures_total{reason="invalid"}`) {
		t.Errorf("no failure metric:\n%s", mrec.Body.String())
	}
}

func TestOCIAuthentication(t *testing.T) {
	e := setupAccess(t, map[string][]string{"tf": {"registry.terraform.io/**"}}, []string{"registry.opentofu.org/**"})
	resp, _ := e.do(t, "/v2/", "")
	host := strings.TrimPrefix(e.ts.URL, "https://")
	if want := `Bearer realm="https://` + host + `/v2/token",service="airgap"`; resp.StatusCode != 401 || resp.Header.Get("WWW-Authenticate") != want {
		t.Fatalf("/v2/ without credentials: %s %q, want challenge %q", resp.Status, resp.Header.Get("WWW-Authenticate"), want)
	}
	bearer := func(auth string) string {
		resp, b := e.do(t, "/v2/token?service=airgap&scope=repository:x:pull", "", "Authorization", auth)
		var d struct {
			Token       string `json:"token"`
			AccessToken string `json:"access_token"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(b, &d) != nil || d.Token == "" || d.Token != d.AccessToken {
			t.Fatalf("/v2/token (%q): %s %s", auth, resp.Status, b)
		}
		if strings.Contains(d.Token, strings.TrimPrefix(e.tokens["tf"], acl.SecretPrefix)) {
			t.Fatal("the bearer contains the token")
		}
		return d.Token
	}
	tf := bearer(basic(e.tokens["tf"]))
	anon := bearer("")
	// One character of the MAC changed, well inside it: replacing the last
	// two with "AA" left about one bearer in a thousand as it was (those
	// that ended in "AA"), which then passed.
	tampered := []byte(tf)
	if i := len(tampered) - 10; tampered[i] == 'A' {
		tampered[i] = 'B'
	} else {
		tampered[i] = 'A'
	}
	if resp, _ := e.do(t, "/v2/token", "", "Authorization", basic("airgap_"+strings.Repeat("z", 43))); resp.StatusCode != 401 {
		t.Errorf("/v2/token with a wrong token: %s", resp.Status)
	}
	cases := []struct {
		auth, path string
		want       int
	}{
		{"Bearer " + tf, "/v2/", 200},
		{"Bearer " + tf, "/v2/registry.terraform.io/hashicorp/random/tags/list", 200},
		{"Bearer " + tf, "/v2/registry.opentofu.org/hashicorp/null/tags/list", 404},
		{"Bearer " + anon, "/v2/registry.opentofu.org/hashicorp/null/tags/list", 200},
		{"Bearer " + anon, "/v2/registry.terraform.io/hashicorp/random/tags/list", 404},
		{"Bearer " + e.tokens["tf"], "/v2/registry.terraform.io/hashicorp/random/tags/list", 200},
		{basic(e.tokens["tf"]), "/v2/registry.terraform.io/hashicorp/random/tags/list", 200},
		{"Bearer " + tf, "/v1/providers/hashicorp/random/versions", 401}, // a /v2/ bearer only works there
		{"Bearer " + string(tampered), "/v2/", 401},
	}
	for _, c := range cases {
		if resp, b := e.do(t, c.path, "", "Authorization", c.auth); resp.StatusCode != c.want {
			t.Errorf("%s with %.20s…: %s %s, want %d", c.path, c.auth, resp.Status, b, c.want)
		}
	}
	// The bearer expires with the URL TTL; then 401 and a new one.
	e.clock.add(access.DefaultURLTTL + time.Second)
	if resp, _ := e.do(t, "/v2/", "", "Authorization", "Bearer "+tf); resp.StatusCode != 401 {
		t.Errorf("an expired bearer: %s", resp.Status)
	}
}

func TestCatalogPageScoped(t *testing.T) {
	e := setupAccess(t, map[string][]string{"tf": {"registry.terraform.io/**"}}, nil)
	// Without a token: a page that says how to sign in, and no Basic
	// challenge yet (a browser would prompt before showing it); its link
	// asks.
	for _, p := range []string{"/", "/ui/providers/registry.terraform.io/hashicorp/random"} {
		resp, b := e.do(t, p, "")
		if resp.StatusCode != 401 || strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") ||
			!strings.Contains(string(b), "any user name") || !strings.Contains(string(b), "your token as the password") || !strings.Contains(string(b), `href="/?signin"`) {
			t.Fatalf("%s without a token: %s %q\n%s", p, resp.Status, resp.Header.Get("WWW-Authenticate"), b)
		}
	}
	resp, _ := e.do(t, "/?signin", "")
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Basic realm="airgap catalog: any user name, your token as the password"`) {
		t.Fatalf("/?signin without a token: %s %q", resp.Status, resp.Header.Get("WWW-Authenticate"))
	}
	// A wrong token: asked again at once, with the reason on the page.
	resp, b := e.do(t, "/", "", "Authorization", basic("airgap_"+strings.Repeat("Q", 43)))
	if resp.StatusCode != 401 || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") || !strings.Contains(string(b), "not valid on this appliance") {
		t.Fatalf("/ with a wrong token: %s %q\n%s", resp.Status, resp.Header.Get("WWW-Authenticate"), b)
	}
	resp, b = e.do(t, "/", "", "Authorization", basic(e.tokens["tf"]))
	page := string(b)
	if resp.StatusCode != 200 || !strings.Contains(page, "registry.terraform.io/hashicorp/random") || strings.Contains(page, "hashicorp/null") ||
		strings.Contains(page, "site.example") || !strings.Contains(page, "<b>tf</b>") {
		t.Errorf("the page for tf: %s\n%s", resp.Status, page)
	}
	// With an anonymous rule: the page opens, and ?signin asks for a token.
	acl.SetAnonymous(e.access, []string{"registry.opentofu.org/**"})
	e.ac.Reload()
	resp, b = e.do(t, "/", "")
	if resp.StatusCode != 200 || !strings.Contains(string(b), "hashicorp/null") || strings.Contains(string(b), "hashicorp/random") || !strings.Contains(string(b), `href="/?signin"`) {
		t.Errorf("the anonymous page: %s %s", resp.Status, b)
	}
	if resp, _ := e.do(t, "/?signin", ""); resp.StatusCode != 401 {
		t.Errorf("sign in without credentials: %s", resp.Status)
	}
}

func TestAuditLogRecords(t *testing.T) {
	e := setupAccess(t, map[string][]string{"ci": {"**"}}, nil)
	u := e.downloadURL(t, "/v1/providers/hashicorp/random/3.6.0/download/linux/amd64", "ci")
	resp, err := e.ts.Client().Get(u)
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	// A range request is recorded as such; SHA256SUMS is not recorded.
	req, _ := http.NewRequest("GET", u, nil)
	req.Header.Set("Range", "bytes=0-99")
	resp, _ = e.ts.Client().Do(req)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	b, _ := os.ReadFile(e.audit)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2 {
		t.Fatalf("audit log has %d lines:\n%s", len(lines), b)
	}
	var rec access.AuditRecord
	json.Unmarshal([]byte(lines[0]), &rec)
	p := providerOf(t, e.st, "random")
	if rec.Token != "ci" || rec.Address != "registry.terraform.io/hashicorp/random" || rec.Version != "3.6.0" || rec.Platform != "linux_amd64" ||
		rec.Bytes != n || rec.Digest != string(p.Packages[0].Digest) && rec.Digest != string(p.Packages[1].Digest) || rec.Status != 200 || rec.Client != "127.0.0.1" || rec.Via != "registry" {
		t.Errorf("audit record: %+v", rec)
	}
	json.Unmarshal([]byte(lines[1]), &rec)
	if rec.Status != 206 || rec.Bytes != 100 {
		t.Errorf("range record: %+v", rec)
	}
}

// TestAuditLogReplicas: several writers (replicas) append to one file and
// rotate it under the lock: every line arrives whole, none is lost.
func TestAuditLogReplicas(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	const writers, each = 4, 300
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		al, err := access.OpenAuditLog(path, 16<<10, 50, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer al.Close()
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				rec := &access.AuditRecord{Time: time.Now().UTC().Format(time.RFC3339), Token: fmt.Sprintf("w%d", w), Client: "10.0.0.1", Kind: "provider",
					Address: "registry.terraform.io/hashicorp/aws", Version: fmt.Sprint(i), Digest: "sha256:" + strings.Repeat("a", 64), Bytes: 1, Status: 200, Via: "registry"}
				if err := al.Write(rec); err != nil {
					t.Error(err)
				}
			}
		}(w)
	}
	wg.Wait()
	sum, err := access.SummarizeAudit(path, access.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Records != writers*each || sum.Skipped != 0 || len(sum.Tokens) != writers || len(sum.Files) < 3 {
		t.Fatalf("%d records in %d files (%d skipped), %d tokens: lines lost or torn", sum.Records, len(sum.Files), sum.Skipped, len(sum.Tokens))
	}
	for _, f := range sum.Files {
		if fi, _ := os.Stat(f); fi.Size() > 16<<10 {
			t.Errorf("%s is %d bytes, over the limit", f, fi.Size())
		}
	}
}
