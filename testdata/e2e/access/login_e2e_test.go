package access

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// Single sign-on with the real clients and a real IdP: 'terraform login' /
// 'tofu login' through the appliance and Dex, then 'init' with the login
// token.

// The people of the test IdP. kilgore is Dex's mockCallback user (groups
// ["authors"]); the others sign in with Dex's password form.
var (
	kilgore  = "kilgore@kilgore.trout"
	alice    = dexUser{"alice@site.example", "alice-password"}
	outsider = dexUser{"nobody@site.example", "nobody-password"}
)

// loginAccess is the access file of the fixtures: the group of Dex's mock
// user reads registry.terraform.io, alice's user block
// registry.opentofu.org, and nobody else anything.
func loginAccess(issuer, secretFile, caFile, lifetime string) string {
	ca := ""
	if caFile != "" {
		ca = fmt.Sprintf("  ca_file            = %q\n", caFile)
	}
	return fmt.Sprintf(`login {
  issuer             = %q
  client_id          = "airgap"
  client_secret_file = %q
%s  token_lifetime     = %q
}

group "authors" {
  allow = ["registry.terraform.io/**"]
}

user "alice@site.example" {
  allow = ["registry.opentofu.org/**"]
}
`, issuer, secretFile, ca, lifetime)
}

// loginFixture: a store exported from the stand-in internet, served with an
// access file whose login block names a Dex (on https with its own CA, the
// login block's ca_file, unless plainIdP), and the audit log.
type loginFixture struct {
	store, access, audit string
	base, caFile, host   string
	logs                 *harness.LockedBuffer
	serve                *os.Process
	dex                  *dexIdP
	pool                 *x509.CertPool // the appliance's CA and Dex's
}

// loginOptions configure newLoginFixture.
type loginOptions struct {
	lifetime string // token_lifetime (default 12h)
	plainIdP bool   // Dex over http on loopback (a browser needs no CA for it)
	onlyMock bool   // Dex with the mock connector only (no page to pick one)
	serve    []string
	before   func(store string) // called before serve starts
}

func newLoginFixture(t *testing.T, opt loginOptions) *loginFixture {
	t.Helper()
	if opt.lifetime == "" {
		opt.lifetime = "12h"
	}
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	f := &loginFixture{store: harness.ExportImport(t, in, harness.E2EManifest)}
	dir := t.TempDir()
	dexPort, tlsDir, dexCA := harness.FreePort(t), "", ""
	if !opt.plainIdP {
		tlsDir = t.TempDir()
		dexCA, _ = testCA(t, tlsDir, "127.0.0.1")
	}
	secret := "dex-client-secret-" + randomWord(t)
	secretFile := filepath.Join(dir, "oidc-secret")
	os.WriteFile(secretFile, []byte(secret+"\n"), 0o600)
	f.access, f.audit = filepath.Join(dir, "access.hcl"), filepath.Join(dir, "audit.jsonl")
	os.WriteFile(f.access, []byte(loginAccess(dexIssuer(dexPort, !opt.plainIdP), secretFile, dexCA, opt.lifetime)), 0o600)
	if opt.before != nil {
		opt.before(f.store)
	}
	srv := harness.StartServe(t, f.store, append([]string{"--access", f.access, "--audit-log", f.audit, "--log-format", "json"}, opt.serve...)...)
	f.base, f.caFile, f.serve, f.logs = srv.Base, srv.CAFile, srv.Proc, srv.Logs
	f.host = strings.TrimSuffix(strings.TrimPrefix(f.base, "https://"), "/")
	f.dex = startDex(t, dexOptions{port: dexPort, tlsDir: tlsDir, secret: secret, redirectURIs: []string{f.base + "oauth/callback"},
		users: []dexUser{alice, outsider}, onlyMock: opt.onlyMock})
	pem, _ := os.ReadFile(f.caFile)
	f.pool = x509.NewCertPool()
	if f.dex.pool != nil {
		f.pool = f.dex.pool.Clone()
	}
	f.pool.AppendCertsFromPEM(pem)
	return f
}

// browser is a person's browser: it keeps cookies and trusts the
// appliance's and the IdP's CAs. It follows redirects (to the CLI's
// localhost listener too) and never runs a script.
func (f *loginFixture) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: f.pool}}}
}

var (
	dexConnectorRe = regexp.MustCompile(`href="(/dex/auth/(mock|local)\?[^"]+)"`)
	loginURLRe     = regexp.MustCompile(`https://\S+/oauth/authorization\?\S+`)
)

// signIn follows a sign-in URL in br as a person would: through the
// appliance to Dex, where they pick the mock connector (who: "") or the
// password form (who: a user), and back. It returns the last answer; at
// the CLI's listener that may be none (cliClosed): terraform closes it as
// soon as it has the code, sometimes before its page is sent.
func (f *loginFixture) signIn(t *testing.T, br *http.Client, start string, who *dexUser) (*http.Response, string) {
	t.Helper()
	resp, body := browserGet(t, br, start)
	if resp == nil {
		return nil, body
	}
	if strings.HasPrefix(resp.Request.URL.String(), f.dex.issuer+"/auth?") && resp.StatusCode == 200 {
		// Dex's page to pick a connector (it has two): the link.
		want := "mock"
		if who != nil {
			want = "local"
		}
		var next string
		for _, m := range dexConnectorRe.FindAllStringSubmatch(body, -1) {
			if m[2] == want {
				next = html.UnescapeString(m[1])
			}
		}
		if next == "" {
			t.Fatalf("Dex's connector page has no %s link:\n%s", want, body)
		}
		u, _ := url.Parse(f.dex.issuer)
		if resp, body = browserGet(t, br, u.Scheme+"://"+u.Host+next); resp == nil {
			return nil, body
		}
	}
	if who != nil {
		// Dex's password form, posted back to its own URL.
		form := url.Values{"login": {who.email}, "password": {who.password}}
		r, err := br.PostForm(resp.Request.URL.String(), form)
		if cliClosed(err) {
			return nil, cliClosedPage
		}
		if err != nil {
			t.Fatalf("posting Dex's login form: %v", err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		resp, body = r, string(b)
	}
	if resp != nil && resp.StatusCode == http.StatusOK && strings.Contains(body, `name="consent"`) {
		// A command-line login: the appliance asks before it issues the
		// CLI's code; the person allows it.
		return f.consent(t, br, body, "allow")
	}
	return resp, body
}

var consentRe = regexp.MustCompile(`name="consent" value="([^"]+)"`)

// consent presses a button (allow or deny) of the consent page the
// appliance shows before it issues a command-line login's code.
func (f *loginFixture) consent(t *testing.T, br *http.Client, page, action string) (*http.Response, string) {
	t.Helper()
	m := consentRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no consent form on the page:\n%s", page)
	}
	r, err := br.PostForm(f.base+"oauth/consent", url.Values{"consent": {html.UnescapeString(m[1])}, "action": {action}})
	if cliClosed(err) {
		return nil, cliClosedPage
	}
	if err != nil {
		t.Fatalf("posting the consent form: %v", err)
	}
	b, _ := io.ReadAll(r.Body)
	r.Body.Close()
	return r, string(b)
}

// cliClosedPage is what signIn returns when the CLI closed its listener
// without a page.
const cliClosedPage = "(the CLI closed its listener before answering)"

// cliClosed reports whether err is the CLI's listener hanging up on the
// browser.
func cliClosed(err error) bool {
	var ue *url.Error
	return errors.As(err, &ue) && strings.HasPrefix(ue.URL, "http://localhost:100")
}

// browserGet GETs u; at the CLI's listener that hung up, it returns no
// answer and cliClosedPage.
func browserGet(t *testing.T, cl *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := cl.Get(u)
	if cliClosed(err) {
		return nil, cliClosedPage
	}
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// noBrowserEnv makes sure no browser opens: the programs both clients try
// (xdg-open, x-www-browser, www-browser through Go's browser packages, and
// OpenTofu's $BROWSER, here browser-env) are stubs first on PATH that
// record the URL and fail, and there is no display. The clients then print
// the URL to open.
func noBrowserEnv(t *testing.T) (env []string, launched string) {
	t.Helper()
	dir := t.TempDir()
	launched = filepath.Join(dir, "launched")
	stub := "#!/bin/sh\necho \"$0 $*\" >> " + launched + "\nexit 1\n"
	for _, n := range []string{"xdg-open", "x-www-browser", "www-browser", "sensible-browser", "gnome-open", "kde-open", "open", "browser-env"} {
		os.WriteFile(filepath.Join(dir, n), []byte(stub), 0o755)
	}
	return []string{"PATH=" + dir + ":" + os.Getenv("PATH"), "BROWSER=" + filepath.Join(dir, "browser-env"), "DISPLAY=", "WAYLAND_DISPLAY="}, launched
}

// cliLogin runs 'BIN login HOST' with env: it answers "yes", waits for the
// URL the CLI prints, hands it to person (who signs in with it), and waits
// for the CLI to end (at most 60 s; it is killed if finish is false, as
// when the sign-in was refused and the CLI would wait forever). It returns
// what the CLI printed.
func cliLogin(t *testing.T, bin, host string, env []string, person func(authURL string), finish bool) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, "login", host)
	cmd.Env = append(harness.BaseEnv(), env...)
	cmd.Stdin = strings.NewReader("yes\n")
	cmd.Dir = t.TempDir()
	out := &harness.LockedBuffer{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	deadline := time.After(30 * time.Second)
	var authURL string
	for authURL == "" {
		select {
		case err := <-done:
			return plain(out.String()), fmt.Errorf("%s login ended before printing a URL: %v", bin, err)
		case <-deadline:
			cmd.Process.Kill()
			<-done
			return plain(out.String()), fmt.Errorf("%s login printed no URL in 30 s", bin)
		case <-time.After(20 * time.Millisecond):
		}
		authURL = loginURLRe.FindString(out.String())
	}
	person(authURL)
	if !finish {
		cmd.Process.Kill()
		<-done
		return plain(out.String()), nil
	}
	select {
	case err := <-done:
		return plain(out.String()), err
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		<-done
		return plain(out.String()), fmt.Errorf("%s login did not end within 60 s of the sign-in", bin)
	}
}

// credentialsFile reads the credentials.tfrc.json the CLI wrote under
// home: host -> token.
func credentialsFile(t *testing.T, home string) (map[string]string, string) {
	t.Helper()
	var path string
	filepath.WalkDir(home, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "credentials.tfrc.json" {
			path = p
		}
		return nil
	})
	if path == "" {
		t.Fatalf("no credentials.tfrc.json under %s", home)
	}
	b, _ := os.ReadFile(path)
	var doc struct {
		Credentials map[string]struct{ Token string }
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v\n%s", path, err, b)
	}
	out := map[string]string{}
	for h, c := range doc.Credentials {
		out[h] = c.Token
	}
	return out, path
}

// clientEnvAt is clientEnv for the appliance at base (another replica).
func (f *loginFixture) clientEnvAt(t *testing.T, base, tool, mode, home string) (env []string, cfg string) {
	t.Helper()
	saved := f.base
	f.base = base
	defer func() { f.base = saved }()
	return f.clientEnv(t, tool, mode, home)
}

// clientEnv is the environment of a person's CLI: their home, with the
// client configuration for tool and mode (what 'airgap client-config'
// prints) saved where the configuration says (~/.terraformrc, ~/.tofurc:
// with TF_CLI_CONFIG_FILE the clients would not read the tokens 'login'
// stores) and ~/.terraform.d (where they go; 'terraform login' does not
// create it), the appliance's CA, no browser.
func (f *loginFixture) clientEnv(t *testing.T, tool, mode, home string) (env []string, cfg string) {
	t.Helper()
	os.MkdirAll(filepath.Join(home, ".terraform.d"), 0o700)
	// As on a machine that trusts the appliance's CA: client-config sees
	// login.v1 in its discovery document.
	cfg, stderr, code := harness.RunSplit(t, "", []string{"SSL_CERT_FILE=" + f.caFile}, "client-config", "--url", f.base, "--tool", tool, "--mode", mode, "--store", f.store)
	if code != 0 || !strings.Contains(stderr, "checked:") {
		t.Fatalf("client-config: %d %s", code, stderr)
	}
	rc := filepath.Join(home, ".terraformrc")
	if tool == "tofu" {
		rc = filepath.Join(home, ".tofurc")
	}
	if !strings.Contains(cfg, "Save it as ~/."+strings.TrimPrefix(filepath.Base(rc), ".")) || !strings.Contains(cfg, "do not point TF_CLI_CONFIG_FILE at it") {
		t.Errorf("the configuration does not say where to save it:\n%s", cfg)
	}
	os.WriteFile(rc, []byte(cfg), 0o600)
	nb, launched := noBrowserEnv(t)
	t.Cleanup(func() {
		if b, err := os.ReadFile(launched); err == nil {
			t.Logf("the %s CLI tried to open a browser (a stub that failed): %s", tool, strings.TrimSpace(string(b)))
		}
	})
	env = append([]string{"HOME=" + home, "SSL_CERT_FILE=" + f.caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}, nb...)
	return env, cfg
}

// TestLoginWithClients: terraform 1.11 and 1.15.9 and tofu 1.11 and 1.12,
// unchanged, sign in with 'login' through the appliance and Dex in
// registry mode (one login per origin, as the configuration says), store
// the token, and 'init' installs what the person's group allows and
// answers the rest as missing.
func TestLoginWithClients(t *testing.T) {
	t.Parallel()
	clients := harness.MatrixClients(t)
	f := newLoginFixture(t, loginOptions{})
	for _, c := range clients {
		t.Run(c.String(), func(t *testing.T) {
			home := t.TempDir()
			env, cfg := f.clientEnv(t, c.Tool, "registry", home)
			for _, h := range []string{"registry.terraform.io", "registry.opentofu.org"} {
				if !strings.Contains(cfg, "#   "+c.Tool+" login "+h+"\n") || !strings.Contains(cfg, `"login.v1"`) {
					t.Fatalf("the configuration does not say to run '%s login %s':\n%s", c.Tool, h, cfg)
				}
			}
			for _, h := range []string{"registry.terraform.io", "registry.opentofu.org"} {
				out, err := cliLogin(t, c.Bin, h, env, func(u string) {
					resp, body := f.signIn(t, f.browser(), u, nil)
					if resp != nil && (resp.StatusCode != 200 || !strings.HasPrefix(resp.Request.URL.String(), "http://localhost:100")) {
						t.Errorf("the sign-in ended at %s (%d):\n%s", resp.Request.URL, resp.StatusCode, body)
					}
					t.Logf("%s login %s: the browser ended at the CLI's page: %s", c, h, oneLine(stripTags(body)))
				}, true)
				if err != nil {
					t.Fatalf("%s login %s: %v\n%s", c, h, err, out)
				}
				t.Logf("%s login %s printed:\n%s", c, h, out)
				if !strings.Contains(out, "Success!") {
					t.Errorf("%s login %s did not say it succeeded", c, h)
				}
			}
			creds, path := credentialsFile(t, home)
			for _, h := range []string{"registry.terraform.io", "registry.opentofu.org"} {
				if !strings.HasPrefix(creds[h], "airgap_") || len(creds[h]) != 50 {
					t.Errorf("%s has no login token for %s: %v", path, h, creds)
				}
			}
			t.Logf("%s stored its tokens in %s", c, path)
			project := onlyRandom
			if c.Tool == "tofu" {
				project = strings.Replace(onlyRandom, `"hashicorp/random"`, `"registry.terraform.io/hashicorp/random"`, 1)
			}
			if _, out, err := initProject(t, c.Bin, project, env); err != nil {
				t.Fatalf("%s init with the login token: %v\n%s", c, err, out)
			}
			denied := onlyLocal
			if c.Tool == "tofu" {
				denied = tofuLocal
			}
			_, out, err := initProject(t, c.Bin, denied, env)
			if err == nil || !strings.Contains(oneLine(out), "does not have a provider named registry.opentofu.org/hashicorp/local") {
				t.Errorf("%s init of a provider outside the person's rules: %v (want it answered as missing)\n%s", c, err, out)
			}
			t.Logf("%s init outside the rules says:\n%s", c, out)
		})
	}
	// Each login is one login line of the audit log, naming the person
	// and the group, never a secret.
	waitAudit(t, f.audit, "the logins", func(e map[string]any) bool {
		return e["event"] == "login" && e["user"] == kilgore && e["via"] == "cli" && fmt.Sprint(e["groups"]) == "[authors]"
	})
}

// plain drops a terminal's color codes from a client's output.
func plain(s string) string { return regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(s, "") }

// stripTags makes an HTML page readable in a log line.
func stripTags(s string) string { return regexp.MustCompile(`<[^>]*>`).ReplaceAllString(s, " ") }

// waitAudit waits for an audit line ok accepts.
func waitAudit(t *testing.T, path, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		r, _ := os.ReadFile(path + ".refusals") // refusals have a file of their own
		b = append(b, r...)
		for _, line := range strings.Split(string(b), "\n") {
			var e map[string]any
			if json.Unmarshal([]byte(line), &e) == nil && ok(e) {
				return e
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("no audit line for %s:\n%s", what, b)
	return nil
}

// TestLoginPeople: terraform 1.11 signs in to the appliance's own name
// (mirror mode), alice through Dex's password form gets her user block,
// someone with no group or user block is told so on the page and gets no
// token; a second serve over the same store (a replica, or a restart)
// accepts a token the first issued; 'token list' shows who, 'token revoke
// --user' ends a person's tokens on every replica, whose refusals the audit
// log keeps under the token's name; 'audit --user' sums up a person.
func TestLoginPeople(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	f := newLoginFixture(t, loginOptions{})
	login := func(t *testing.T, env []string, host string, who *dexUser, finish bool) (string, string) {
		t.Helper()
		var page string
		out, err := cliLogin(t, tf, host, env, func(u string) { _, page = f.signIn(t, f.browser(), u, who) }, finish)
		if err != nil {
			t.Fatalf("terraform login %s: %v\n%s", host, err, out)
		}
		t.Logf("terraform login %s printed:\n%s", host, out)
		return out, page
	}

	// The appliance's own name: discovery's login.v1, the mirror.
	home := t.TempDir()
	env, cfg := f.clientEnv(t, "terraform", "mirror", home)
	if !strings.Contains(cfg, "#   terraform login "+f.host+"\n") {
		t.Fatalf("mirror mode does not say to log in to the appliance:\n%s", cfg)
	}
	login(t, env, f.host, nil, true)
	login(t, env, "registry.terraform.io", nil, true) // its modules
	if _, out, err := initProject(t, tf, onlyRandom, env); err != nil {
		t.Fatalf("init through the mirror with the appliance's login token: %v\n%s", err, out)
	}

	// alice: Dex's password form, her user block (registry.opentofu.org).
	aliceHome := t.TempDir()
	aliceEnv, _ := f.clientEnv(t, "terraform", "registry", aliceHome)
	login(t, aliceEnv, "registry.opentofu.org", &alice, true)
	if _, out, err := initProject(t, tf, onlyLocal, aliceEnv); err != nil {
		t.Errorf("alice's init of what her user block allows: %v\n%s", err, out)
	}

	// Someone the file gives nothing: the page says so, no token.
	outHome := t.TempDir()
	outEnv, _ := f.clientEnv(t, "terraform", "registry", outHome)
	out, page := login(t, outEnv, "registry.terraform.io", &outsider, false)
	if !strings.Contains(page, "This appliance gives you no access") || !strings.Contains(page, "nobody@site.example") || strings.Contains(out, "Success!") {
		t.Errorf("the page for someone with no access:\n%s", stripTags(page))
	}
	t.Logf("the page for nobody@site.example: %s", oneLine(stripTags(page)))
	if b, _ := os.ReadFile(filepath.Join(outHome, ".terraform.d", "credentials.tfrc.json")); len(b) > 0 {
		t.Errorf("someone with no access got a token: %s", b)
	}
	waitAudit(t, f.audit, "the refused login", func(e map[string]any) bool {
		return e["event"] == "login_refused" && e["user"] == outsider.email && e["reason"] == "no_rules"
	})

	// A second serve over the same store accepts kilgore's token.
	srv := harness.StartServe(t, f.store, "--access", f.access, "--audit-log", f.audit, "--log-format", "json")
	base2, logs2 := srv.Base, srv.Logs
	home2 := t.TempDir()
	env2, _ := f.clientEnvAt(t, base2, "terraform", "mirror", home2)
	creds, _ := credentialsFile(t, home)
	host2 := strings.TrimSuffix(strings.TrimPrefix(base2, "https://"), "/")
	b, _ := json.Marshal(map[string]any{"credentials": map[string]any{host2: map[string]string{"token": creds[f.host]}, "registry.terraform.io": map[string]string{"token": creds["registry.terraform.io"]}}})
	os.WriteFile(filepath.Join(home2, ".terraform.d", "credentials.tfrc.json"), b, 0o600) // kilgore's tokens, as 'terraform login' writes them
	if _, out, err := initProject(t, tf, onlyRandom, env2); err != nil {
		t.Fatalf("the second serve with a login token the first issued: %v\n%s", err, out)
	}

	// token list shows who; revoke --user ends kilgore's tokens everywhere.
	list := harness.MustRun(t, "", nil, harness.Bin, "token", "list", "--access", f.access, "--store", f.store)
	t.Logf("airgap token list:\n%s", list)
	for _, want := range []string{"LOGIN TOKEN", kilgore, alice.email, "authors", "cli"} {
		if !strings.Contains(list, want) {
			t.Errorf("token list lacks %q", want)
		}
	}
	rev := harness.MustRun(t, "", nil, harness.Bin, "token", "revoke", "--store", f.store, "--user", strings.ToUpper(kilgore), "--audit-log", f.audit)
	t.Logf("airgap token revoke --user: %s", rev)
	var out1, out2 string
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		var err1, err2 error
		_, out1, err1 = initProject(t, tf, onlyRandom, env)
		_, out2, err2 = initProject(t, tf, onlyRandom, env2)
		if err1 != nil && err2 != nil {
			break
		}
		time.Sleep(300 * time.Millisecond)
	}
	for i, o := range []string{out1, out2} {
		if !strings.Contains(oneLine(o), "rejected the given authentication credentials") {
			t.Errorf("replica %d after revoke --user:\n%s", i+1, o)
		}
	}
	t.Logf("terraform init with a revoked login token says:\n%s", out1)
	waitAudit(t, f.audit, "a revoked login token's attempt under its name", func(e map[string]any) bool {
		tok, _ := e["token"].(string)
		return e["event"] == "refused" && e["reason"] == "revoked" && e["user"] == kilgore && strings.HasPrefix(tok, "login~")
	})
	waitAudit(t, f.audit, "the revocation", func(e map[string]any) bool {
		return e["event"] == "token_revoked" && e["user"] == kilgore && e["by"] != nil
	})
	harness.WaitLog(t, logs2, "the second serve refusing the revoked token", func(r map[string]any) bool { return r["auth"] == "revoked" && r["user"] == kilgore })

	// audit --user: what kilgore fetched, their logins and refusals.
	sum := harness.MustRun(t, "", nil, harness.Bin, "audit", "--log", f.audit, "--user", kilgore)
	t.Logf("airgap audit --user %s:\n%s", kilgore, sum)
	for _, want := range []string{"registry.terraform.io/hashicorp/random", kilgore + ": ", "2 login", "2 token revoked", "refused (revoked "} {
		if !strings.Contains(sum, want) {
			t.Errorf("audit --user lacks %q", want)
		}
	}
	if strings.Contains(sum, alice.email) {
		t.Error("audit --user kilgore shows alice")
	}

	// The IdP goes away: tokens already issued keep working; a sign-in at a
	// serve that has not asked the IdP yet gets a page and a log line that
	// name it.
	f.dex.stop()
	if _, out, err := initProject(t, tf, onlyLocal, aliceEnv); err != nil {
		t.Errorf("alice's init with the IdP gone: %v\n%s", err, out)
	}
	cl, _, _ := harness.CAClient(t, f.store)
	q := url.Values{"response_type": {"code"}, "client_id": {"terraform-cli"}, "redirect_uri": {"http://localhost:10003/login"}, "state": {"s"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}
	resp, body := harness.HTTPGet(t, cl, base2+"oauth/authorization?"+q.Encode())
	if resp.StatusCode != 502 || !strings.Contains(string(body), "could not reach the identity provider at "+f.dex.issuer) {
		t.Errorf("a sign-in with the IdP gone: %s\n%s", resp.Status, body)
	}
	t.Logf("the page with the IdP gone: %s", oneLine(stripTags(string(body[strings.Index(string(body), "<main>"):]))))
	line := harness.WaitLog(t, logs2, "the IdP unreachable", func(r map[string]any) bool {
		return r["reason"] == "idp_unreachable" && r["issuer"] == f.dex.issuer
	})
	t.Logf("serve's log line: %v", line)
}

// TestLoginTokenExpires: a login token stops working after token_lifetime,
// and the clients say so as for any refused token; serve's log and the
// audit log say it expired, and whose it was.
func TestLoginTokenExpires(t *testing.T) {
	tf := harness.TerraformBin(t)
	f := newLoginFixture(t, loginOptions{lifetime: "8s", plainIdP: true, onlyMock: true})
	home := t.TempDir()
	env, _ := f.clientEnv(t, "terraform", "registry", home)
	out, err := cliLogin(t, tf, "registry.terraform.io", env, func(u string) { f.signIn(t, f.browser(), u, nil) }, true)
	if err != nil {
		t.Fatalf("terraform login: %v\n%s", err, out)
	}
	issued := time.Now()
	if _, out, err := initProject(t, tf, onlyRandom, env); err != nil {
		t.Fatalf("init with a fresh login token: %v\n%s", err, out)
	}
	time.Sleep(time.Until(issued.Add(9 * time.Second)))
	_, out, err = initProject(t, tf, onlyRandom, env)
	if err == nil || !strings.Contains(oneLine(out), "host registry.terraform.io rejected the given authentication credentials") {
		t.Errorf("init with an expired login token: %v\n%s", err, out)
	}
	t.Logf("terraform init with an expired login token says:\n%s", out)
	harness.WaitLog(t, f.logs, "the expired login token", func(r map[string]any) bool { return r["auth"] == "expired" && r["user"] == kilgore })
	waitAudit(t, f.audit, "the expired login token", func(e map[string]any) bool {
		return e["event"] == "refused" && e["reason"] == "expired" && e["user"] == kilgore
	})
	// What the 401 says (a module download shows the body; here asked
	// directly).
	creds, _ := credentialsFile(t, home)
	cl, _, _ := harness.CAClient(t, f.store)
	resp, body := harness.HTTPGet(t, cl, f.base+"v1/providers/hashicorp/random/versions", "Authorization", "Bearer "+creds["registry.terraform.io"])
	if resp.StatusCode != 401 || !strings.Contains(string(body), "expired at") || !strings.Contains(string(body), "terraform login") {
		t.Errorf("the 401 of an expired login token: %s %s", resp.Status, body)
	}
	t.Logf("the 401's body: %s", body)
}

// TestLoginFloodMemory: 10,000 authorization requests (a pending sign-in
// each) cost serve no state and little memory: nothing is written under
// STORE/state/logins, and its resident memory grows by less than 32 MiB
// over a warm-up (the bound of TestHostileServeMemory: the flood's own
// garbage at GOGC=400). A pending sign-in lives in the state parameter the
// browser carries, not in serve.
func TestLoginFloodMemory(t *testing.T) {
	f := newLoginFixture(t, loginOptions{plainIdP: true, onlyMock: true})
	cl, _, _ := harness.CAClient(t, f.store)
	cl.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	cl.Transport.(*http.Transport).MaxIdleConnsPerHost = 32
	q := url.Values{"response_type": {"code"}, "client_id": {"terraform-cli"}, "redirect_uri": {"http://localhost:10003/login"},
		"code_challenge": {"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"}, "code_challenge_method": {"S256"}}
	flood := func(n int) {
		var wg sync.WaitGroup
		next := make(chan int)
		for range 32 {
			wg.Go(func() {
				for i := range next {
					u := f.base + "oauth/authorization?" + q.Encode() + "&state=" + strings.Repeat("s", 400) + strconv.Itoa(i)
					resp, err := cl.Get(u)
					if err != nil {
						t.Error(err)
						return
					}
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), f.dex.issuer+"/auth?") {
						t.Errorf("authorization request %d: %s %s", i, resp.Status, resp.Header.Get("Location"))
						return
					}
				}
			})
		}
		for i := range n {
			next <- i
		}
		close(next)
		wg.Wait()
	}
	flood(500)
	before := procStatus(t, f.serve.Pid)
	start := time.Now()
	flood(10000)
	after := procStatus(t, f.serve.Pid)
	t.Logf("10,000 authorization requests in %s: serve's RSS %d -> %d KiB (peak %d KiB)", time.Since(start).Round(time.Millisecond), before["VmRSS"], after["VmRSS"], after["VmHWM"])
	if grew := after["VmHWM"] - before["VmRSS"]; grew > 32<<10 {
		t.Errorf("serve's peak RSS grew by %d KiB over the warm-up, more than 32 MiB", grew)
	}
	for _, sub := range []string{"tokens", "codes", "used"} {
		if es, _ := os.ReadDir(filepath.Join(f.store, "state", "logins", sub)); len(es) != 0 {
			t.Errorf("the flood left %d files in state/logins/%s", len(es), sub)
		}
	}
}

// procStatus reads a process's memory figures (KiB) from /proc.
func procStatus(t *testing.T, pid int) map[string]int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, l := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(l, ":")
		if f := strings.Fields(v); ok && len(f) == 2 && f[1] == "kB" {
			out[k], _ = strconv.ParseInt(f[0], 10, 64)
		}
	}
	return out
}

// TestCatalogSignInBrowser: headless Chromium opens the catalog page of an
// appliance with single sign-on and is sent through Dex and back: the page
// says who signed in and lists what their group allows; the session cookie
// is Secure, HttpOnly, SameSite=Lax and expires with the login token; Sign
// out revokes it.
func TestCatalogSignInBrowser(t *testing.T) {
	f := newLoginFixture(t, loginOptions{plainIdP: true, onlyMock: true})
	work := t.TempDir()
	ctx, cancel := harness.NewChromium(t, f.base, f.caFile, work)
	defer cancel()
	eval := harness.JSEval(t, ctx)
	start := time.Now()
	if err := chromedp.Do(ctx, chromedp.Navigate(f.base), chromedp.WaitVisible(chromedp.CSS("#person"))); err != nil {
		t.Fatalf("signing in to the catalog through Dex: %v", err)
	}
	if who := eval(`document.querySelector("#signed-in").innerText`); !strings.Contains(who, "Signed in as "+kilgore+" (groups: authors)") {
		t.Errorf("the signed-in line: %q", who)
	}
	provs := eval(`Array.from(document.querySelectorAll("tr.provider")).map(tr => tr.dataset.addr).join(",")`)
	if !strings.Contains(provs, "registry.terraform.io/hashicorp/random") || strings.Contains(provs, "registry.opentofu.org") {
		t.Errorf("the page for kilgore lists providers %q; want registry.terraform.io's only", provs)
	}
	if cfg := eval(`document.querySelector("pre.client-config").innerText`); !strings.Contains(cfg, "terraform login registry.terraform.io") || !strings.Contains(cfg, `"login.v1"`) {
		t.Errorf("the page's configuration does not say how to log in:\n%s", cfg)
	}
	// One story: the page says what the configuration says (save it as
	// ~/.terraformrc, not through TF_CLI_CONFIG_FILE).
	if adv := eval(`document.querySelector("#login-advice").innerText`); !strings.Contains(adv, "~/.terraformrc") || !strings.Contains(adv, "not through TF_CLI_CONFIG_FILE") {
		t.Errorf("the page's sign-in advice: %q", adv)
	}
	var session *network.Cookie
	res, err := chromedp.Call(ctx, storage.GetCookies, storage.GetCookiesParams{})
	if err == nil {
		for _, c := range res.Cookies {
			if c.Name == "__Host-airgap_session" {
				session = c
			}
		}
	}
	if session == nil {
		t.Fatalf("the session cookie: %v %v", err, res)
	}
	exp := time.Unix(int64(session.Expires), 0)
	if !session.Secure || !session.HTTPOnly || session.SameSite != network.CookieSameSiteLax || session.Path != "/" ||
		exp.Before(start.Add(12*time.Hour-time.Minute)) || exp.After(time.Now().Add(12*time.Hour+time.Minute)) {
		t.Errorf("the session cookie: secure %v, httponly %v, samesite %s, path %s, expires %s", session.Secure, session.HTTPOnly, session.SameSite, session.Path, exp)
	}
	if html := eval(`document.documentElement.outerHTML`); strings.Contains(html, strings.TrimPrefix(session.Value, "airgap_")) {
		t.Error("the page shows the session's token")
	}
	if got := eval(`document.cookie`); strings.Contains(got, "airgap_session") {
		t.Errorf("the page's script can read the session cookie: %q", got)
	}
	saveScreenshot(t, ctx, "catalog-sso.png")
	// The consent page a 'terraform login' link leads to (the IdP session
	// is live): axe-core at zero violations, as every other page, at the
	// desktop size and a phone's. Nothing listens on the CLI's port; the
	// test presses nothing.
	sum := sha256.Sum256([]byte("axe-consent-verifier-0123456789abcdef0123456789"))
	link := f.base + "oauth/authorization?" + url.Values{"response_type": {"code"}, "client_id": {"terraform-cli"},
		"redirect_uri": {"http://localhost:10009/login"}, "state": {"axe"},
		"code_challenge": {base64.RawURLEncoding.EncodeToString(sum[:])}, "code_challenge_method": {"S256"}}.Encode()
	for _, size := range [][2]int64{{1280, 1000}, {375, 800}} {
		if err := chromedp.Do(ctx, chromedp.EmulateViewport(size[0], size[1]), chromedp.Navigate(link), chromedp.WaitVisible(chromedp.CSS("#consent-heading"))); err != nil {
			t.Fatalf("the consent page: %v", err)
		}
		harness.AxeCheck(t, ctx, fmt.Sprintf("the consent page (%dx%d)", size[0], size[1]))
	}
	saveScreenshot(t, ctx, "consent.png")
	if err := chromedp.Do(ctx, chromedp.EmulateViewport(1280, 1000), chromedp.Navigate(f.base), chromedp.WaitVisible(chromedp.CSS("#person"))); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#sign-out")), chromedp.WaitVisible(chromedp.CSS("#login-heading"))); err != nil {
		t.Fatalf("signing out: %v", err)
	}
	if text := eval(`document.body.innerText`); !strings.Contains(text, "You are signed out") {
		t.Errorf("after sign-out: %q", text)
	}
	cl, _, _ := harness.CAClient(t, f.store)
	if resp, body := harness.HTTPGet(t, cl, f.base+"v1/providers/hashicorp/random/versions", "Authorization", "Bearer "+session.Value); resp.StatusCode != 401 || !strings.Contains(string(body), "was revoked") {
		t.Errorf("the session's token after sign-out: %s %s", resp.Status, body)
	}
}

// saveScreenshot writes the page of ctx as name into $AIRGAP_TEST_ARTIFACTS
// (else the test's temporary directory), when Chromium can take it.
func saveScreenshot(t *testing.T, ctx context.Context, name string) {
	shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		return
	}
	dir := os.Getenv("AIRGAP_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, name), shot, 0o644)
}
