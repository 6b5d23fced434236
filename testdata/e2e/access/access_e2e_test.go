package access

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"

	"github.com/airgap/airgap/testdata/e2e/harness"

	cdpfetch "github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/chromedp"

	"github.com/airgap/airgap/dist/registrytest"
)

// accessFixture is a store exported from the stand-in internet, an access
// file with tokens, and 'airgap serve --access --audit-log' over them.
type accessFixture struct {
	store, access, audit string
	base, caFile, host   string
	logs                 *harness.LockedBuffer
	tokens               map[string]string // name -> secret
	tokenFiles           map[string]string // name -> file holding it
}

// newAccessFixture creates the tokens with the real 'airgap token create'
// (name -> allow patterns) and starts serve.
func newAccessFixture(t *testing.T, manifest string, tokens map[string][]string, extra ...string) *accessFixture {
	t.Helper()
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	f := &accessFixture{store: harness.ExportImport(t, in, manifest), tokens: map[string]string{}, tokenFiles: map[string]string{}}
	dir := t.TempDir()
	f.access, f.audit = filepath.Join(dir, "access.hcl"), filepath.Join(dir, "audit.jsonl")
	for name, allow := range tokens {
		args := []string{"token", "create", "--access", f.access, "--name", name}
		for _, a := range allow {
			args = append(args, "--allow", a)
		}
		out := harness.MustRunStdout(t, "", args...)
		f.tokens[name] = strings.TrimSpace(out)
		f.tokenFiles[name] = filepath.Join(dir, name+".token")
		os.WriteFile(f.tokenFiles[name], []byte(out), 0o600)
	}
	srv := harness.StartServe(t, f.store, append([]string{"--access", f.access, "--audit-log", f.audit, "--log-format", "json"}, extra...)...)
	f.base, f.caFile, f.logs = srv.Base, srv.CAFile, srv.Logs
	f.host = strings.TrimSuffix(strings.TrimPrefix(f.base, "https://"), "/")
	return f
}

// clientConfig writes 'airgap client-config' for tool and mode (with the
// named token's file, when token is not "") and returns the offline
// environment that uses it.
func (f *accessFixture) clientConfig(t *testing.T, tool, mode, token string, env ...string) []string {
	t.Helper()
	args := []string{"client-config", "--url", f.base, "--tool", tool, "--mode", mode, "--store", f.store}
	if token != "" {
		args = append(args, "--token-file", f.tokenFiles[token])
	}
	cfg := harness.MustRunStdout(t, "", args...) // the configuration; stderr says whether --url was checked
	if token != "" && !strings.Contains(cfg, f.tokens[token]) {
		t.Fatalf("client-config --token-file did not write the token:\n%s", cfg)
	}
	rc := filepath.Join(t.TempDir(), "cli.rc")
	os.WriteFile(rc, []byte(cfg), 0o600)
	return append([]string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + f.caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}, env...)
}

// tokenEnv is the TF_TOKEN_ variables for the origins, set to a token.
func tokenEnv(secret string) []string {
	return []string{"TF_TOKEN_registry_terraform_io=" + secret, "TF_TOKEN_registry_opentofu_org=" + secret}
}

// initProject runs init for a project source in a new directory.
func initProject(t *testing.T, bin, src string, env []string) (string, string, error) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "project")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(src), 0o644)
	out, err := harness.CmdRun(t, dir, env, bin, "init", "-input=false", "-no-color")
	return dir, out, err
}

// oneLine joins a client's wrapped error text into one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

const (
	onlyRandom = "terraform {\n  required_providers {\n    random = {\n      source  = \"hashicorp/random\"\n      version = \"~> 3.5\"\n    }\n  }\n}\n"
	onlyLocal  = "terraform {\n  required_providers {\n    local = {\n      source  = \"registry.opentofu.org/hashicorp/local\"\n      version = \"2.5.1\"\n    }\n  }\n}\n"
	tofuLocal  = "terraform {\n  required_providers {\n    local = {\n      source  = \"hashicorp/local\"\n      version = \"2.5.1\"\n    }\n  }\n}\n" // OpenTofu's registry
	onlyModule = "module \"vpc\" {\n  source  = \"example/vpc/aws\"\n  version = \"1.0.0\"\n}\n"
)

// TestAccessControlWithClients: real terraform 1.11 and tofu 1.11 against
// 'airgap serve --access': with TF_TOKEN_ variables (registry mode) and
// with the credentials blocks 'client-config --token-file' writes (mirror
// mode) they install what their token allows; without a token, with a
// wrong one, or for an address outside the token's rules they fail with
// the messages docs/access-control.md documents. Nothing they did leaks a secret into
// the logs or the audit log, which names the token of every package.
func TestAccessControlWithClients(t *testing.T) {
	t.Parallel()
	tf, tofu := harness.TerraformBin(t), harness.TofuBin(t)
	f := newAccessFixture(t, harness.E2EManifest, map[string][]string{
		"full":    {"**"},
		"tf-only": {"registry.terraform.io/**"},
	})
	wrong := "airgap_" + strings.Repeat("W", 43)

	for _, c := range []struct {
		name, tool, mode, token, project string
		env                              []string
	}{
		{"terraform registry TF_TOKEN_", "terraform", "registry", "", harness.E2EProject, tokenEnv(f.tokens["full"])},
		{"terraform mirror credentials", "terraform", "mirror", "full", harness.E2EProject, nil},
		{"tofu registry TF_TOKEN_", "tofu", "registry", "", harness.E2ETofuProject, tokenEnv(f.tokens["full"])},
		{"tofu mirror credentials", "tofu", "mirror", "full", harness.E2ETofuProject, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := tf
			if c.tool == "tofu" {
				bin = tofu
			}
			dir, out, err := initProject(t, bin, c.project, f.clientConfig(t, c.tool, c.mode, c.token, c.env...))
			if err != nil {
				t.Fatalf("%s init with the token: %v\n%s", c.tool, err, out)
			}
			if _, err := os.Stat(filepath.Join(dir, ".terraform", "modules", "modules.json")); err != nil {
				t.Errorf("no modules installed: %v", err)
			}
		})
	}

	// What the clients say without a token, with a wrong one, and for an
	// address outside the token's rules (as for one the appliance lacks).
	type failure struct {
		name, tool, mode, token, project string
		env                              []string
		want                             []string
	}
	for _, c := range []failure{
		{"terraform provider no token", "terraform", "registry", "", onlyRandom, nil,
			[]string{"Error: Failed to query available provider packages", "Could not retrieve the list of available versions for provider hashicorp/random: host registry.terraform.io requires authentication credentials"}},
		{"terraform provider wrong token", "terraform", "registry", "", onlyRandom, tokenEnv(wrong),
			[]string{"Could not retrieve the list of available versions for provider hashicorp/random: host registry.terraform.io rejected the given authentication credentials"}},
		{"terraform module no token", "terraform", "registry", "", onlyModule, nil,
			[]string{"Error: Error accessing remote module registry", "Failed to retrieve available versions for module \"vpc\" (main.tf:1) from registry.terraform.io: error looking up module versions: 401 Unauthorized."}},
		{"terraform mirror no token", "terraform", "mirror", "", onlyRandom, nil,
			[]string{"Could not retrieve the list of available versions for provider hashicorp/random: host " + f.host + " rejected the given authentication credentials"}},
		{"terraform outside the rules", "terraform", "registry", "", onlyLocal, tokenEnv(f.tokens["tf-only"]),
			[]string{"Could not retrieve the list of available versions for provider registry.opentofu.org/hashicorp/local: provider registry registry.opentofu.org does not have a provider named registry.opentofu.org/hashicorp/local"}},
		{"tofu provider no token", "tofu", "registry", "", tofuLocal, nil,
			[]string{"Error: Failed to resolve provider packages", "Could not resolve provider hashicorp/local: host registry.opentofu.org requires authentication credentials"}},
		{"tofu provider wrong token", "tofu", "registry", "", tofuLocal, tokenEnv(wrong),
			[]string{"Could not resolve provider hashicorp/local: host registry.opentofu.org rejected the given authentication credentials"}},
		{"tofu module no token", "tofu", "registry", "", strings.Replace(onlyModule, "example/vpc/aws", "registry.terraform.io/example/vpc/aws", 1), nil,
			[]string{"error looking up module versions: 401 Unauthorized"}},
		{"tofu mirror no token", "tofu", "mirror", "", tofuLocal, nil,
			[]string{"host " + f.host + " rejected the given authentication credentials"}},
		{"tofu outside the rules", "tofu", "registry", "", tofuLocal, tokenEnv(f.tokens["tf-only"]),
			[]string{"provider registry registry.opentofu.org does not have a provider named registry.opentofu.org/hashicorp/local"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			bin := tf
			if c.tool == "tofu" {
				bin = tofu
			}
			_, out, err := initProject(t, bin, c.project, f.clientConfig(t, c.tool, c.mode, c.token, c.env...))
			if err == nil {
				t.Fatalf("init succeeded:\n%s", out)
			}
			t.Logf("%s says:\n%s", c.tool, out)
			for _, w := range c.want {
				if !strings.Contains(oneLine(out), oneLine(w)) {
					t.Errorf("the output lacks %q", w)
				}
			}
		})
	}

	// An expired token: the clients say the host rejected the credentials;
	// serve's log says it expired.
	t.Run("expired token", func(t *testing.T) {
		out := harness.MustRun(t, "", nil, harness.Bin, "token", "create", "--access", f.access, "--name", "brief", "--allow", "**", "--expires", "2s")
		sec := strings.TrimSpace(out[:strings.Index(out, "\n")])
		time.Sleep(3500 * time.Millisecond) // expired, and the file reloaded
		_, out, err := initProject(t, tf, onlyRandom, f.clientConfig(t, "terraform", "registry", "", tokenEnv(sec)...))
		if err == nil || !strings.Contains(oneLine(out), "host registry.terraform.io rejected the given authentication credentials") {
			t.Errorf("expired token: %v\n%s", err, out)
		}
		harness.WaitLog(t, f.logs, "the expired token", func(r map[string]any) bool { return r["auth"] == "expired" && r["token"] == "brief" })
	})

	// The audit log names the token of every package, never a secret.
	sum := harness.MustRun(t, "", nil, harness.Bin, "audit", "--log", f.audit, "--json")
	var doc struct {
		OK     bool
		Tokens []struct {
			Token     string
			Downloads int
			Addresses []struct{ Address string }
		}
	}
	if err := json.Unmarshal([]byte(sum), &doc); err != nil || !doc.OK {
		t.Fatalf("airgap audit --json: %v\n%s", err, sum)
	}
	var addrs []string
	for _, tk := range doc.Tokens {
		if tk.Token == "full" {
			for _, a := range tk.Addresses {
				addrs = append(addrs, a.Address)
			}
		}
	}
	for _, want := range []string{"registry.terraform.io/hashicorp/random", "registry.opentofu.org/hashicorp/local", "registry.terraform.io/example/vpc/aws", "registry.opentofu.org/example/tofu/aws"} {
		if !harness.Contains(addrs, want) {
			t.Errorf("the audit log has no download of %s by token full: %v", want, addrs)
		}
	}
	auditText, _ := os.ReadFile(f.audit)
	for name, sec := range f.tokens {
		for what, text := range map[string]string{"serve's log": f.logs.String(), "the audit log": string(auditText)} {
			if strings.Contains(text, strings.TrimPrefix(sec, "airgap_")) {
				t.Errorf("token %s's secret is in %s", name, what)
			}
		}
	}
	if !strings.Contains(f.logs.String(), `"token":"full"`) {
		t.Error("the access lines do not name the token")
	}
}

// TestAccessOCIWithTofu: tofu's OCI mode with the oci_credentials block
// 'client-config --mode oci --token-file' writes installs providers and
// oci:// modules; without it, tofu fails with the message docs/access-control.md
// documents.
func TestAccessOCIWithTofu(t *testing.T) {
	t.Parallel()
	tofu := harness.TofuBin(t)
	f := newAccessFixture(t, harness.E2EManifest, map[string][]string{"full": {"**"}})
	project := strings.ReplaceAll(harness.OCIProject, "HOST", f.host)
	dir, out, err := initProject(t, tofu, project, f.clientConfig(t, "tofu", "oci", "full"))
	if err != nil || strings.Count(out, "(verified checksum)") != 2 {
		t.Fatalf("tofu init in OCI mode with oci_credentials: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, ".terraform", "modules", "tofu", "main.tf")); err != nil {
		t.Errorf("oci:// module not installed: %v", err)
	}
	harness.WaitLog(t, f.logs, "an OCI bearer", func(r map[string]any) bool { return r["auth_by"] == "oci_bearer" && r["token"] == "full" })
	// The packages and module zips fetched over OCI are audited too.
	audit, _ := os.ReadFile(f.audit)
	if n := strings.Count(string(audit), `"via":"oci"`); n < 5 || !strings.Contains(string(audit), `"token":"full"`) {
		t.Errorf("%d OCI downloads in the audit log (2 providers and 3 modules fetched):\n%s", n, audit)
	}
	// Without credentials: modules, then providers alone.
	for _, p := range []string{project, strings.Replace(onlyRandom, "hashicorp/random", "registry.terraform.io/hashicorp/random", 1)} {
		_, out, err = initProject(t, tofu, p, f.clientConfig(t, "tofu", "oci", ""))
		t.Logf("tofu without oci_credentials says:\n%s", out)
		if err == nil || !strings.Contains(oneLine(out), `GET "https://`+f.host+`/v2/token?service=airgap": response status code 401: unauthorized: this appliance requires a token: add an oci_credentials block`) {
			t.Errorf("tofu init in OCI mode without credentials: %v", err)
		}
	}
}

// TestAccessUseRegistryCredentials: OpenTofu 1.12 fetches a module whose
// download answer says use_registry_credentials with its token (and the
// signed URL), older clients with the signed URL alone.
func TestAccessUseRegistryCredentials(t *testing.T) {
	t.Parallel()
	tofu12 := tofu112Bin(t)
	f := newAccessFixture(t, harness.E2EManifest, map[string][]string{"full": {"**"}})
	_, out, err := initProject(t, tofu12, harness.E2ETofuProject, f.clientConfig(t, "tofu", "registry", "", tokenEnv(f.tokens["full"])...))
	if err != nil {
		t.Fatalf("tofu 1.12 init: %v\n%s", err, out)
	}
	// example/tofu/aws has no subdirectory: fetched directly, with the token.
	harness.WaitLog(t, f.logs, "the archive fetched with the token", func(r map[string]any) bool {
		p, _ := r["path"].(string)
		return strings.HasPrefix(p, "/archives/") && r["auth_by"] == "signed_url+token" && r["module"] == "registry.opentofu.org/example/tofu/aws"
	})
	// example/sub/aws lives in a subdirectory: go-getter, signed URL only.
	harness.WaitLog(t, f.logs, "the subdirectory module by signed URL", func(r map[string]any) bool {
		p, _ := r["path"].(string)
		return strings.HasPrefix(p, "/archives/") && r["auth_by"] == "signed_url" && r["module"] == "registry.terraform.io/example/sub/aws"
	})
}

// tofu112Version is the OpenTofu release with use_registry_credentials.
const tofu112Version = "1.12.6"

func tofu112Bin(t *testing.T) string {
	t.Helper()
	bin, errText := harness.BuildFromModule("github.com/opentofu/opentofu", tofu112Version, "./cmd/tofu", "tofu-"+tofu112Version, "")
	if errText != "" {
		t.Fatalf("tofu %s is required (use_registry_credentials) and could not be built: %s", tofu112Version, errText)
	}
	return bin
}

// TestAccessExpiredDownloadURL: a package URL from a download answer works
// without a token until it expires, then is refused with a message that
// says so; a fresh answer has a fresh URL.
func TestAccessExpiredDownloadURL(t *testing.T) {
	f := newAccessFixture(t, harness.E2EManifest, map[string][]string{"full": {"**"}}, "--download-url-ttl", "2s")
	cl, _, _ := harness.CAClient(t, f.store)
	const dl = "v1/providers/hashicorp/random/3.6.2/download/linux/amd64"
	signed := func() string {
		resp, body := harness.HTTPGet(t, cl, f.base+dl, "Authorization", "Bearer "+f.tokens["full"])
		var d struct {
			DownloadURL string `json:"download_url"`
		}
		if resp.StatusCode != 200 || json.Unmarshal(body, &d) != nil {
			t.Fatalf("download answer: %s %s", resp.Status, body)
		}
		return harness.ResolveRef(f.base+dl, d.DownloadURL)
	}
	u := signed()
	if resp, _ := harness.HTTPGet(t, cl, u); resp.StatusCode != 200 {
		t.Fatalf("the fresh URL: %s", resp.Status)
	}
	time.Sleep(3500 * time.Millisecond) // TTL 2 s + a 1 s bucket
	resp, body := harness.HTTPGet(t, cl, u)
	if resp.StatusCode != 403 || !strings.Contains(string(body), "expired at") {
		t.Errorf("the expired URL: %s %s", resp.Status, body)
	}
	if u2 := signed(); u2 == u {
		t.Error("no fresh URL after the expiry")
	} else if resp, _ := harness.HTTPGet(t, cl, u2); resp.StatusCode != 200 {
		t.Errorf("the new URL: %s", resp.Status)
	}
	// The query (and so the signature) never reaches the access log.
	q, _ := url.Parse(u)
	if strings.Contains(f.logs.String(), q.Query().Get("sig")) {
		t.Error("a URL signature is in the access log")
	}
}

// TestCatalogInBrowserWithToken: the catalog page of 'airgap serve
// --access' in headless Chromium. Without credentials the browser is not
// asked for any yet: it shows a page saying how to sign in (any user name,
// the token as the password), which has no accessibility violation. Its
// "Sign in with a token" link makes the browser ask; answering with the
// token (as a person would in the browser's prompt, here through the
// DevTools Fetch domain) shows the page with only what the token may read,
// and never the token.
func TestCatalogInBrowserWithToken(t *testing.T) {
	work := t.TempDir()
	root, _, _ := harness.OpsStore(t)
	access := filepath.Join(work, "access.hcl")
	sec := strings.TrimSpace(harness.MustRun(t, "", nil, harness.Bin, "token", "create", "--access", access, "--name", "tofu-team", "--allow", "registry.opentofu.org/**"))
	sec = sec[:strings.Index(sec, "\n")]
	srv := harness.StartServe(t, root, "--access", access)
	base, caFile := srv.Base, srv.CAFile
	ctx, cancel := harness.NewChromium(t, base, caFile, work)
	defer cancel()
	eval := harness.JSEval(t, ctx)
	// Every request is paused by the DevTools Fetch domain (and continued
	// as is), and every credentials prompt is answered with the token, as
	// a person would answer the browser's prompt; the prompts are counted.
	if err := chromedp.Do(ctx); err != nil { // starts the browser: its target exists from here
		t.Fatal(err)
	}
	tgt := chromedp.FromContext(ctx).Target
	auths := cdp.Events(ctx, tgt, cdpfetch.AuthRequired)
	paused := cdp.Events(ctx, tgt, cdpfetch.RequestPaused)
	var prompts atomic.Int32
	go func() {
		for ev, err := range auths {
			if err != nil {
				return
			}
			prompts.Add(1)
			chromedp.Call(ctx, cdpfetch.ContinueWithAuth, cdpfetch.ContinueWithAuthParams{RequestID: ev.RequestID,
				AuthChallengeResponse: &cdpfetch.AuthChallengeResponse{Response: cdpfetch.AuthChallengeResponseResponseProvideCredentials, Username: "me", Password: sec}})
		}
	}()
	go func() {
		for ev, err := range paused {
			if err != nil {
				return
			}
			chromedp.Call(ctx, cdpfetch.ContinueRequest, cdpfetch.ContinueRequestParams{RequestID: ev.RequestID})
		}
	}()
	yes := true
	if _, err := chromedp.Call(ctx, cdpfetch.Enable, cdpfetch.EnableParams{HandleAuthRequests: &yes}); err != nil {
		t.Fatal(err)
	}
	// No credentials: the page says how to sign in before anything asks.
	if err := chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#signin"))); err != nil {
		t.Fatalf("loading the catalog without a token: %v", err)
	}
	if how := eval(`document.querySelector("#how").innerText`); !strings.Contains(how, "any user name") || !strings.Contains(how, "your token as the password") {
		t.Errorf("the sign-in page says %q", how)
	}
	if n := prompts.Load(); n != 0 {
		t.Errorf("the browser was asked for credentials %d times before the page said how to sign in", n)
	}
	harness.AxeCheck(t, ctx, base+" (sign in)")
	// Its link asks; the answer opens the catalog, and every page after it.
	if err := chromedp.Do(ctx, chromedp.Click(chromedp.CSS("#signin")), chromedp.WaitVisible(chromedp.CSS("#signed-in"))); err != nil {
		t.Fatalf("signing in with the token: %v", err)
	}
	if n := prompts.Load(); n != 1 {
		t.Errorf("the browser was asked for credentials %d times by the sign-in link, want once", n)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(base), chromedp.WaitVisible(chromedp.CSS("#signed-in"))); err != nil {
		t.Fatalf("loading the catalog with the token: %v", err)
	}
	provs := eval(`Array.from(document.querySelectorAll("tr.provider")).map(tr => tr.dataset.addr).join(",")`)
	mods := eval(`Array.from(document.querySelectorAll("tr.module")).map(tr => tr.dataset.addr).join(",")`)
	if provs != "registry.opentofu.org/hashicorp/null" || mods != "" {
		t.Errorf("the page for tofu-team lists providers %q and modules %q; want only registry.opentofu.org/hashicorp/null", provs, mods)
	}
	if who := eval(`document.querySelector("#signed-in").innerText`); !strings.Contains(who, "tofu-team") {
		t.Errorf("signed-in line: %q", who)
	}
	// A detail page outside the token's rules: the not-found page.
	if err := chromedp.Do(ctx, chromedp.Navigate(base+"ui/providers/registry.terraform.io/hashicorp/random")); err != nil {
		t.Fatal(err)
	}
	if text := eval(`document.body.innerText`); !strings.Contains(text, "does not serve") {
		t.Errorf("a provider outside the token's rules shows: %q", text)
	}
	if html := eval(`document.documentElement.outerHTML`); strings.Contains(html, strings.TrimPrefix(sec, "airgap_")) {
		t.Error("the token is in the page")
	}
	saveScreenshot(t, ctx, "catalog-token.png")
}

// TestReplicasShareAccess: three replicas over one store behind a real
// HAProxy share one access file, one URL key and one audit log. A URL
// signed by one replica downloads from the others; a token created or
// revoked while they run is honoured by all of them within 2 s (no signal);
// a key rotation keeps earlier URLs valid; every package download is one
// whole line in the shared audit log (rotation between writers:
// TestAuditLogReplicas in server/).
func TestReplicasShareAccess(t *testing.T) {
	t.Parallel()
	haproxy, err := exec.LookPath("haproxy")
	if err != nil {
		t.Fatal("haproxy is not on PATH: install Debian's haproxy package (.ci/run does)")
	}
	root, _, _ := harness.OpsStore(t)
	dir := t.TempDir()
	access, audit := filepath.Join(dir, "access.hcl"), filepath.Join(dir, "audit.jsonl")
	create := func(name string) string { return harness.CreateToken(t, access, name, "**") }
	ci := create("ci")
	var reps []*harness.Served
	for i := 0; i < 3; i++ {
		reps = append(reps, harness.StartReplica(t, root, harness.FreePort(t), "--access", access, "--audit-log", audit))
	}
	cl, _, caFile := harness.CAClient(t, root)
	for _, r := range reps {
		harness.WaitHealthy(t, cl, fmt.Sprintf("https://localhost:%d/healthz", r.Port))
	}
	base, _ := harness.StartHAProxy(t, haproxy, caFile, reps)
	harness.WaitHealthy(t, cl, base+"/healthz")
	time.Sleep(600 * time.Millisecond)
	// One connection per request, so HAProxy spreads them over the replicas.
	tr := cl.Transport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	lb := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	const dl = "/v1/providers/hashicorp/random/3.6.0/download/linux/amd64"
	signedVia := func(c *http.Client, b, token string) (int, string) {
		resp, body := harness.HTTPGet(t, c, b+dl, "Authorization", "Bearer "+token)
		var d struct {
			DownloadURL string `json:"download_url"`
		}
		json.Unmarshal(body, &d)
		return resp.StatusCode, harness.ResolveRef(b+dl, d.DownloadURL)
	}
	replicaURL := func(r *harness.Served) string { return fmt.Sprintf("https://localhost:%d", r.Port) }

	downloads := 0
	// A URL signed by each replica downloads from every replica.
	for _, from := range reps {
		code, u := signedVia(cl, replicaURL(from), ci)
		if code != 200 {
			t.Fatalf("download answer from :%d: %d", from.Port, code)
		}
		for _, to := range reps {
			pu, _ := url.Parse(u)
			pu.Host = fmt.Sprintf("localhost:%d", to.Port)
			if resp, _ := harness.HTTPGet(t, cl, pu.String()); resp.StatusCode != 200 {
				t.Errorf("a URL signed by :%d, fetched from :%d: %s", from.Port, to.Port, resp.Status)
			}
			downloads++
		}
	}
	// Through the balancer, answer and download on different replicas.
	for i := 0; i < 12; i++ {
		code, u := signedVia(lb, base, ci)
		if code != 200 {
			t.Fatalf("through the balancer: %d", code)
		}
		if resp, _ := harness.HTTPGet(t, lb, u); resp.StatusCode != 200 {
			t.Errorf("download through the balancer: %s", resp.Status)
		}
		downloads++
	}
	// A token created while they run works on every replica within 2 s.
	late := create("late")
	eachReplica := func(what string, token string, want int) {
		t.Helper()
		for _, r := range reps {
			deadline := time.Now().Add(2 * time.Second)
			for {
				resp, _ := harness.HTTPGet(t, cl, replicaURL(r)+"/v1/providers/hashicorp/random/versions", "Authorization", "Bearer "+token)
				if resp.StatusCode == want {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: replica :%d answers %s 2 s later, want %d", what, r.Port, resp.Status, want)
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}
	eachReplica("a new token", late, 200)
	// A key rotation: earlier URLs stay valid, new ones work everywhere.
	_, before := signedVia(cl, replicaURL(reps[0]), ci)
	harness.MustRun(t, "", nil, harness.Bin, "token", "rotate-url-key", "--store", root)
	time.Sleep(2500 * time.Millisecond) // every replica reads the new key file
	_, after := signedVia(cl, replicaURL(reps[2]), ci)
	if strings.Split(before, "sig=")[1][:8] == strings.Split(after, "sig=")[1][:8] {
		t.Errorf("after the rotation the replicas still sign with the old key:\n%s\n%s", before, after)
	}
	for _, u := range []string{before, after} {
		for _, r := range reps {
			pu, _ := url.Parse(u)
			pu.Host = fmt.Sprintf("localhost:%d", r.Port)
			if resp, _ := harness.HTTPGet(t, cl, pu.String()); resp.StatusCode != 200 {
				t.Errorf("after the rotation, %s on :%d: %s", u[len(u)-20:], r.Port, resp.Status)
			}
			downloads++
		}
	}
	// Revoked: refused by every replica within 2 s, and so are its URLs.
	harness.MustRun(t, "", nil, harness.Bin, "token", "revoke", "--access", access, "ci")
	eachReplica("a revoked token", ci, 401)
	for _, r := range reps {
		pu, _ := url.Parse(after)
		pu.Host = fmt.Sprintf("localhost:%d", r.Port)
		if resp, _ := harness.HTTPGet(t, cl, pu.String()); resp.StatusCode != 403 {
			t.Errorf("a URL of the revoked token on :%d: %s", r.Port, resp.Status)
		}
	}
	// The audit log: one whole line per download, over rotated files.
	out := harness.MustRun(t, "", nil, harness.Bin, "audit", "--log", audit, "--json")
	var sum struct {
		Records int
		Skipped int `json:"skipped_lines"`
		Files   []string
		Tokens  []struct {
			Token     string
			Downloads int
		}
	}
	if err := json.Unmarshal([]byte(out), &sum); err != nil {
		t.Fatalf("audit --json: %v\n%s", err, out)
	}
	if sum.Records != downloads || sum.Skipped != 0 || len(sum.Tokens) != 1 || sum.Tokens[0].Token != "ci" {
		t.Errorf("audit: %d records (want %d), %d skipped, %d files, tokens %+v", sum.Records, downloads, sum.Skipped, len(sum.Files), sum.Tokens)
	}
	t.Logf("%d downloads audited by 3 replicas over %d files", sum.Records, len(sum.Files))
}

// TestAccessHostile attacks the real binary: an access file other users
// may read keeps serve from starting; a broken edit while it runs keeps
// the previous rules (and says so); a client guessing tokens is cut off
// (429) after 10 failures, valid token or not; nothing it sent, and no
// token, reaches the log.
func TestAccessHostile(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	dir := t.TempDir()
	access := filepath.Join(dir, "access.hcl")
	out := harness.MustRunStdout(t, "", "token", "create", "--access", access, "--name", "ci", "--allow", "**")
	ci := strings.TrimSpace(out)
	// Readable by others: refused, with the fix in the message.
	os.Chmod(access, 0o644)
	out, err := harness.CmdRun(t, "", nil, harness.Bin, "serve", "--store", root, "--listen", "127.0.0.1:0", "--access", access)
	if err == nil || !strings.Contains(out, "has mode 0644") || !strings.Contains(out, "chmod 600 "+access) {
		t.Errorf("serve with an access file others may read: %v\n%s", err, out)
	}
	if out, err := harness.CmdRun(t, "", nil, harness.Bin, "token", "list", "--access", access); err == nil || !strings.Contains(out, "chmod 600") {
		t.Errorf("token list of a file others may read: %v\n%s", err, out)
	}
	os.Chmod(access, 0o600)
	out, err = harness.CmdRun(t, "", nil, harness.Bin, "serve", "--store", root, "--access", access, "--check-config")
	if err != nil || !strings.Contains(out, `access`) {
		t.Errorf("--check-config: %v\n%s", err, out)
	}

	srv := harness.StartServe(t, root, "--access", access, "--log-format", "json")
	base, logs := srv.Base, srv.Logs
	cl, _, _ := harness.CAClient(t, root)
	versions := base + "v1/providers/hashicorp/random/versions"
	if resp, _ := harness.HTTPGet(t, cl, versions, "Authorization", "Bearer "+ci); resp.StatusCode != 200 {
		t.Fatalf("with the token: %s", resp.Status)
	}
	// A broken edit (as a person might save it): the previous rules stay.
	writeAtomically(t, access, "token \"ci\" {\n  sha256 = \"nothex\"\n")
	harness.WaitLog(t, logs, "the broken access file", func(r map[string]any) bool {
		return r["msg"] == "the access file changed but does not load; still enforcing the previous one"
	})
	if resp, _ := harness.HTTPGet(t, cl, versions, "Authorization", "Bearer "+ci); resp.StatusCode != 200 {
		t.Errorf("after a broken edit the token stopped working: %s", resp.Status)
	}
	// Guessing: 10 failures, then 429 for every credential from the address.
	guess := "airgap_" + strings.Repeat("G", 43)
	for i := 0; i < 10; i++ {
		if resp, _ := harness.HTTPGet(t, cl, versions, "Authorization", "Bearer "+guess); resp.StatusCode != 401 {
			t.Fatalf("guess %d: %s", i, resp.Status)
		}
	}
	for _, tok := range []string{guess, ci} {
		resp, body := harness.HTTPGet(t, cl, versions, "Authorization", "Bearer "+tok)
		if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" {
			t.Errorf("after 10 failures: %s %s", resp.Status, body)
		}
	}
	harness.WaitLog(t, logs, "the throttling warning", func(r map[string]any) bool {
		return r["msg"] == "too many failed token attempts; refusing credentials from this address for a while" && r["client"] == "127.0.0.1"
	})
	// Oversized credentials: net/http's header limit answers.
	if resp, _ := harness.HTTPGet(t, cl, versions, "Authorization", "Bearer "+strings.Repeat("x", 40<<10)); resp.StatusCode != 431 {
		t.Errorf("a 40 KiB Authorization header: %s", resp.Status)
	}
	for _, s := range []string{strings.TrimPrefix(ci, "airgap_"), strings.TrimPrefix(guess, "airgap_")} {
		if strings.Contains(logs.String(), s) {
			t.Error("a presented secret is in serve's log")
		}
	}
}

// writeAtomically replaces a file as an editor would (mode 0600).
func writeAtomically(t *testing.T, path, text string) {
	t.Helper()
	tmp := path + ".new"
	if err := os.WriteFile(tmp, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestTokenVerbs: the token verbs' output, JSON and mistakes.
func TestTokenVerbs(t *testing.T) {
	t.Parallel()
	access := filepath.Join(t.TempDir(), "access.hcl")
	out := harness.MustRunStdout(t, "", "token", "create", "--access", access, "--name", "ci", "--allow", "registry.terraform.io/hashicorp/*", "--expires", "90d")
	if !strings.HasPrefix(out, "airgap_") || strings.Count(out, "\n") != 1 || len(strings.TrimSpace(out)) != 50 {
		t.Fatalf("token create must print the secret alone on stdout: %q", out)
	}
	if fi, _ := os.Stat(access); fi.Mode().Perm() != 0o600 {
		t.Errorf("the access file was created with mode %v", fi.Mode())
	}
	js := harness.MustRun(t, "", nil, harness.Bin, "token", "list", "--access", access, "--json")
	var doc struct {
		OK     bool
		Tokens []struct {
			Name    string
			Allow   []string
			Expires string
			Expired bool
		}
	}
	if err := json.Unmarshal([]byte(js), &doc); err != nil || !doc.OK || len(doc.Tokens) != 1 || doc.Tokens[0].Name != "ci" || doc.Tokens[0].Expires == "" || doc.Tokens[0].Expired {
		t.Errorf("token list --json: %v\n%s", err, js)
	}
	if strings.Contains(js, strings.TrimPrefix(strings.TrimSpace(out), "airgap_")) {
		t.Error("token list shows the secret")
	}
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"token", "create", "--access", access, "--name", "ci", "--allow", "**"}, 1, "a token of that name exists"},
		{[]string{"token", "create", "--access", access, "--name", "x", "--allow", "hashicorp/aws"}, 1, "has 2 parts"},
		{[]string{"token", "create", "--access", access, "--name", "anonymous", "--allow", "**"}, 1, "reserved"},
		{[]string{"token", "create", "--access", access, "--name", "x", "--allow", "**", "--expires", "soon"}, 2, "want a duration"},
		{[]string{"token", "revoke", "--access", access, "nobody"}, 1, "no such token"},
		{[]string{"token", "revok", "--access", access, "ci"}, 2, `did you mean "revoke"?`},
		{[]string{"token", "revoke", "--access", access, "nobody", "--json"}, 1, `"ok": false`},
	} {
		out, err := harness.CmdRun(t, "", nil, harness.Bin, c.args...)
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		}
		if code != c.code || !strings.Contains(out, c.want) {
			t.Errorf("airgap %s: exit %d (want %d)\n%s\nwant %q", strings.Join(c.args, " "), code, c.code, out, c.want)
		}
	}
	harness.MustRun(t, "", nil, harness.Bin, "token", "anonymous", "--access", access, "--allow", "registry.terraform.io/**")
	if out := harness.MustRun(t, "", nil, harness.Bin, "token", "list", "--access", access); !strings.Contains(out, "(anonymous)") || !strings.Contains(out, "ci") {
		t.Errorf("token list:\n%s", out)
	}
	harness.MustRun(t, "", nil, harness.Bin, "token", "revoke", "--access", access, "ci")
	harness.MustRun(t, "", nil, harness.Bin, "token", "anonymous", "--access", access, "--none")
	if out := harness.MustRun(t, "", nil, harness.Bin, "token", "list", "--access", access, "--json"); !strings.Contains(out, `"tokens": []`) || strings.Contains(out, "anonymous") {
		t.Errorf("after revoking everything:\n%s", out)
	}
}

// TestAccessReloadOnSIGHUP: SIGHUP applies a changed access path from the
// --config file; removing the setting keeps access control on (turning it
// off takes a restart) and says so.
func TestAccessReloadOnSIGHUP(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	dir := t.TempDir()
	first, second := filepath.Join(dir, "first.hcl"), filepath.Join(dir, "second.hcl")
	tok := func(file, name string) string {
		out := harness.MustRunStdout(t, "", "token", "create", "--access", file, "--name", name, "--allow", "**")
		return strings.TrimSpace(out)
	}
	a, b := tok(first, "a"), tok(second, "b")
	cfg := filepath.Join(dir, "serve.hcl")
	harness.WriteConfig(t, cfg, "access = \""+first+"\"\nlog-format = \"json\"\n")
	srv := harness.StartServe(t, root, "--config", cfg)
	base, proc, logs := srv.Base, srv.Proc, srv.Logs
	cl, _, _ := harness.CAClient(t, root)
	code := func(secret string) int {
		resp, _ := harness.HTTPGet(t, cl, base+"v1/providers/hashicorp/random/versions", "Authorization", "Bearer "+secret)
		return resp.StatusCode
	}
	if code(a) != 200 || code(b) != 401 {
		t.Fatalf("before SIGHUP: a %d, b %d", code(a), code(b))
	}
	harness.WriteConfig(t, cfg, "access = \""+second+"\"\nlog-format = \"json\"\n")
	proc.Signal(syscall.SIGHUP)
	harness.WaitLog(t, logs, "the reload", func(r map[string]any) bool {
		s, _ := r["applied"].(string)
		return strings.Contains(s, "access="+second+" (1 tokens)")
	})
	if code(a) != 401 || code(b) != 200 {
		t.Errorf("after SIGHUP: a %d, b %d", code(a), code(b))
	}
	harness.WriteConfig(t, cfg, "log-format = \"json\"\n")
	proc.Signal(syscall.SIGHUP)
	harness.WaitLog(t, logs, "the refusal to turn access control off", func(r map[string]any) bool {
		s, _ := r["needs_restart"].(string)
		return strings.Contains(s, "access")
	})
	if code(b) != 200 || code("") != 401 {
		t.Errorf("after removing access from the config: b %d, none %d (access control must stay on)", code(b), code(""))
	}
}
