package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
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
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
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
// access file whose login block names a Dex on https (its own CA, the
// login block's ca_file), and the audit log.
type loginFixture struct {
	store, access, audit string
	base, caFile, host   string
	logs                 *lockedBuffer
	dex                  *dexIdP
	pool                 *x509.CertPool // the appliance's CA and Dex's
}

func newLoginFixture(t *testing.T, lifetime string, extra ...string) *loginFixture {
	t.Helper()
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	f := &loginFixture{store: exportImport(t, in, e2eManifest)}
	dir := t.TempDir()
	dexPort, tlsDir := freePort(t), t.TempDir()
	dexCA, _ := testCA(t, tlsDir, "127.0.0.1")
	secret := "dex-client-secret-" + randomWord(t)
	secretFile := filepath.Join(dir, "oidc-secret")
	os.WriteFile(secretFile, []byte(secret+"\n"), 0o600)
	f.access, f.audit = filepath.Join(dir, "access.hcl"), filepath.Join(dir, "audit.jsonl")
	os.WriteFile(f.access, []byte(loginAccess(dexIssuer(dexPort, true), secretFile, dexCA, lifetime)), 0o600)
	f.base, f.caFile, _, f.logs = startServeLogged(t, f.store, append([]string{"--access", f.access, "--audit-log", f.audit, "--log-format", "json"}, extra...)...)
	f.host = strings.TrimSuffix(strings.TrimPrefix(f.base, "https://"), "/")
	f.dex = startDex(t, dexOptions{port: dexPort, tlsDir: tlsDir, secret: secret, redirectURIs: []string{f.base + "oauth/callback"}, users: []dexUser{alice, outsider}})
	pem, _ := os.ReadFile(f.caFile)
	f.pool = f.dex.pool.Clone()
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
// password form (who: a user), and back. It returns the last answer.
func (f *loginFixture) signIn(t *testing.T, br *http.Client, start string, who *dexUser) (*http.Response, string) {
	t.Helper()
	resp, body := browserGet(t, br, start)
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
		resp, body = browserGet(t, br, u.Scheme+"://"+u.Host+next)
	}
	if who != nil {
		// Dex's password form, posted back to its own URL.
		form := url.Values{"login": {who.email}, "password": {who.password}}
		r, err := br.PostForm(resp.Request.URL.String(), form)
		if err != nil {
			t.Fatalf("posting Dex's login form: %v", err)
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		resp, body = r, string(b)
	}
	return resp, body
}

func browserGet(t *testing.T, cl *http.Client, u string) (*http.Response, string) {
	t.Helper()
	resp, err := cl.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(b)
}

// noBrowserEnv makes sure no browser opens: the programs both clients try
// (xdg-open, x-www-browser, www-browser through Go's browser packages, and
// OpenTofu's $BROWSER) are stubs first on PATH that record the URL and
// fail, and there is no display. The clients then print the URL to open.
func noBrowserEnv(t *testing.T) (env []string, launched string) {
	t.Helper()
	dir := t.TempDir()
	launched = filepath.Join(dir, "launched")
	stub := "#!/bin/sh\necho \"$0 $*\" >> " + launched + "\nexit 1\n"
	for _, n := range []string{"xdg-open", "x-www-browser", "www-browser", "sensible-browser", "gnome-open", "kde-open", "open"} {
		os.WriteFile(filepath.Join(dir, n), []byte(stub), 0o755)
	}
	return []string{"PATH=" + dir + ":" + os.Getenv("PATH"), "BROWSER=" + filepath.Join(dir, "xdg-open"), "DISPLAY=", "WAYLAND_DISPLAY="}, launched
}

// cliLogin runs 'BIN login HOST' with env: it answers "yes", waits for the
// URL the CLI prints, hands it to person (who signs in with it), and waits
// for the CLI to end (at most 60 s; it is killed if finish is false, as
// when the sign-in was refused and the CLI would wait forever). It returns
// what the CLI printed.
func cliLogin(t *testing.T, bin, host string, env []string, person func(authURL string), finish bool) (string, error) {
	t.Helper()
	cmd := exec.Command(bin, "login", host)
	cmd.Env = append(baseEnv(), env...)
	cmd.Stdin = strings.NewReader("yes\n")
	cmd.Dir = t.TempDir()
	out := &lockedBuffer{}
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

// clientEnv is the environment of a person's CLI: their home (where the
// credentials file goes: ~/.terraform.d, which 'terraform login' does not
// create, as the configuration says), the client configuration for tool
// and mode (what 'airgap client-config' prints), the appliance's CA, no
// browser.
func (f *loginFixture) clientEnv(t *testing.T, tool, mode, home string) (env []string, cfg string) {
	t.Helper()
	os.MkdirAll(filepath.Join(home, ".terraform.d"), 0o700)
	// As on a machine that trusts the appliance's CA: client-config sees
	// login.v1 in its discovery document.
	cfg, stderr, code := runSplit(t, "", []string{"SSL_CERT_FILE=" + f.caFile}, "client-config", "--url", f.base, "--tool", tool, "--mode", mode, "--store", f.store)
	if code != 0 || !strings.Contains(stderr, "checked:") {
		t.Fatalf("client-config: %d %s", code, stderr)
	}
	rc := filepath.Join(t.TempDir(), "cli.rc")
	os.WriteFile(rc, []byte(cfg), 0o600)
	nb, _ := noBrowserEnv(t)
	env = append([]string{"HOME=" + home, "TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + f.caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}, nb...)
	return env, cfg
}

// TestLoginWithClients: terraform 1.11 and 1.15.9 and tofu 1.11 and 1.12,
// unchanged, sign in with 'login' through the appliance and Dex in
// registry mode (one login per origin, as the configuration says), store
// the token, and 'init' installs what the person's group allows and
// answers the rest as missing.
func TestLoginWithClients(t *testing.T) {
	clients := matrixClients(t)
	f := newLoginFixture(t, "12h")
	for _, c := range clients {
		t.Run(c.String(), func(t *testing.T) {
			home := t.TempDir()
			env, cfg := f.clientEnv(t, c.tool, "registry", home)
			for _, h := range []string{"registry.terraform.io", "registry.opentofu.org"} {
				if !strings.Contains(cfg, "#   "+c.tool+" login "+h+"\n") || !strings.Contains(cfg, `"login.v1"`) {
					t.Fatalf("the configuration does not say to run '%s login %s':\n%s", c.tool, h, cfg)
				}
			}
			for _, h := range []string{"registry.terraform.io", "registry.opentofu.org"} {
				out, err := cliLogin(t, c.bin, h, env, func(u string) {
					resp, body := f.signIn(t, f.browser(), u, nil)
					if resp.StatusCode != 200 || !strings.HasPrefix(resp.Request.URL.String(), "http://localhost:100") {
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
			if c.tool == "tofu" {
				project = strings.Replace(onlyRandom, `"hashicorp/random"`, `"registry.terraform.io/hashicorp/random"`, 1)
			}
			if _, out, err := initProject(t, c.bin, project, env); err != nil {
				t.Fatalf("%s init with the login token: %v\n%s", c, err, out)
			}
			denied := onlyLocal
			if c.tool == "tofu" {
				denied = tofuLocal
			}
			_, out, err := initProject(t, c.bin, denied, env)
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
