package cli

import (
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// listFiles is every file under dir, relative, for "nothing was left".
func listFiles(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil && p != dir {
			rel, _ := filepath.Rel(dir, p)
			out[rel] = true
		}
		return nil
	})
	return out
}

// TestCLIMistakes runs the real binary through the mistakes a user makes
// and checks each is refused with its own message, the right exit code, no
// stdout document and no file left behind.
func TestCLIMistakes(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	in := registrytest.World(t)
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	write := func(name, content string) {
		os.MkdirAll(filepath.Dir(filepath.Join(work, name)), 0o755)
		if err := os.WriteFile(filepath.Join(work, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("ok.hcl", "platforms = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {}\n")
	write("typo-plat.hcl", "platforms = [\"linux_amd64\", \"darwn_arm64\"]\nprovider \"hashicorp/random\" {}\n")
	write("typo-block.hcl", "platforms = [\"linux_amd64\"]\nproviders \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n")
	write("typo-attr.hcl", "provider \"hashicorp/random\" {\n  version = \"3.6.2\"\n}\n")
	write("resource.hcl", "provider \"hashicorp/random\" {}\nresource \"x\" \"y\" {}\n")
	write("top-attr.hcl", "platform = [\"linux_amd64\"]\nprovider \"hashicorp/random\" {}\n")
	write("empty.hcl", "platforms = [\"linux_amd64\"]\n")
	write("notf/README.md", "no terraform here\n")
	write("proj/main.tf", "variable \"v\" {\n  const = true\n}\nmodule \"m\" {\n  source = \"example/${var.v}/aws\"\n}\n")
	write("text.bundle", "hello, I am a text file\n")
	write("doc.pdf", "%PDF-1.7\n...")
	write("empty.bundle", "")
	write("zip.bundle", "PK\x03\x04rest of a zip")
	os.Mkdir(filepath.Join(work, "emptystore"), 0o755)

	// A port with nothing listening.
	closed := fmt.Sprintf("127.0.0.1:%d", harness.FreePort(t))
	// A TLS server this machine does not trust, and one it does that answers 404.
	ts := httptest.NewTLSServer(http.NotFoundHandler())
	defer ts.Close()
	write("ts-ca.pem", string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})))
	trustTS := []string{"SSL_CERT_FILE=" + filepath.Join(work, "ts-ca.pem")}

	out := []string{"--out", "b.bundle", "--sign-key", "k/site.key.asc", "--cache", "cache"}
	cases := []struct {
		name string
		env  []string
		args []string
		code int
		want []string // in stderr
	}{
		{"platform typo among good ones", online, append([]string{"export", "--manifest", "ok.hcl", "--platform", "linux_amd64", "--platform", "linux_amd46"}, out...), 2,
			[]string{`unknown platform "linux_amd46"`, `did you mean "linux_amd64"?`}},
		{"platform typo in the manifest", online, append([]string{"export", "--manifest", "typo-plat.hcl"}, out...), 1,
			[]string{"typo-plat.hcl:1:1", `did you mean "darwin_arm64"?`}},
		{"platform typo, dry run", online, []string{"export", "--manifest", "ok.hcl", "--dry-run", "--platform", "lnux_amd64"}, 2,
			[]string{`did you mean "linux_amd64"?`}},
		{"unknown block", online, append([]string{"export", "--manifest", "typo-block.hcl"}, out...), 1,
			[]string{"typo-block.hcl:2:1", `Did you mean "provider"?`}},
		{"unknown attribute", online, append([]string{"export", "--manifest", "typo-attr.hcl"}, out...), 1,
			[]string{"typo-attr.hcl:2:3", `Did you mean "versions"?`}},
		{"terraform block in a manifest", online, append([]string{"export", "--manifest", "resource.hcl"}, out...), 1,
			[]string{"resource.hcl:2:1", `"resource"`}},
		{"unknown top-level attribute", online, append([]string{"export", "--manifest", "top-attr.hcl"}, out...), 1,
			[]string{"top-attr.hcl:1:1", `Did you mean "platforms"?`}},
		{"empty manifest", online, append([]string{"export", "--manifest", "empty.hcl"}, out...), 1,
			[]string{"nothing to export", "--allow-empty"}},
		{"--from a folder without Terraform files", online, append([]string{"export", "--from", "notf"}, out...), 1,
			[]string{"has no .tf or .tf.json file", "hint:"}},
		{"keygen without terminal or passphrase", nil, []string{"keygen", "--out", "k/new"}, 1,
			[]string{"AIRGAP_PASSPHRASE", "--no-passphrase"}},
		{"--since a bundle that is not there", online, append([]string{"export", "--manifest", "ok.hcl", "--since", "old.bundle"}, out...), 1,
			[]string{"--since", "old.bundle", "no such file"}},
		{"--out in a folder that is not there", online, []string{"export", "--manifest", "ok.hcl", "--out", "nodir/b.bundle", "--sign-key", "k/site.key.asc", "--cache", "cache"}, 1,
			[]string{"nodir", "does not exist", "nothing was downloaded"}},
		{"--jobs 0", online, append([]string{"export", "--manifest", "ok.hcl", "--jobs", "0"}, out...), 2,
			[]string{"--jobs 0"}},
		{"import with a keyring that is not there", nil, []string{"import", "--keyring", "site.pub.asc", "--store", "newstore", "b.bundle"}, 1,
			[]string{"keyring", "no such file", "PREFIX.pub.asc"}},
		{"verify with a keyring that is not a key", nil, []string{"verify", "--keyring", "text.bundle", "text.bundle"}, 1,
			[]string{"keyring text.bundle", "PREFIX.pub.asc"}},
		{"misspelt flag", online, []string{"export", "--manifest", "ok.hcl", "--dryrun"}, 2,
			[]string{"unknown flag: --dryrun", "did you mean --dry-run?"}},
		{"keygen with a weak key size", nil, []string{"keygen", "--out", "k/weak", "--bits", "2048", "--no-passphrase"}, 2,
			[]string{"--bits 2048", "3072 to 8192"}},
		{"verify a text file", nil, []string{"verify", "--keyring", "k/site.pub.asc", "text.bundle"}, 1,
			[]string{"not an airgap bundle", "looks like text"}},
		{"verify a PDF", nil, []string{"verify", "--keyring", "k/site.pub.asc", "doc.pdf"}, 1,
			[]string{"not an airgap bundle", "a PDF document"}},
		{"verify an empty file", nil, []string{"verify", "--keyring", "k/site.pub.asc", "empty.bundle"}, 1,
			[]string{"not an airgap bundle", "an empty file"}},
		{"import a zip", nil, []string{"import", "--keyring", "k/site.pub.asc", "--store", "newstore", "zip.bundle"}, 1,
			[]string{"a zip archive", "the store was not changed"}},
		{"client-config --mode typo", nil, []string{"client-config", "--url", "https://" + closed + "/", "--mode", "mirrors"}, 2,
			[]string{`unknown --mode "mirrors"`, `did you mean "mirror"?`}},
		{"client-config, server down", nil, []string{"client-config", "--url", "https://" + closed + "/"}, 1,
			[]string{"connection refused", "nothing is listening"}},
		{"client-config, untrusted CA", nil, []string{"client-config", "--url", ts.URL}, 1,
			[]string{"does not trust the appliance's CA", "SSL_CERT_FILE"}},
		{"client-config, not an appliance", trustTS, []string{"client-config", "--url", ts.URL}, 1,
			[]string{"404", "is " + ts.URL + "/ an airgap appliance"}},
		{"client-config, empty store", nil, []string{"client-config", "--url", "https://x/", "--store", "emptystore"}, 1,
			[]string{"serves nothing", "airgap import --keyring"}},
		{"client-config, missing store", nil, []string{"client-config", "--url", "https://x/", "--store", "nostore"}, 1,
			[]string{"no such file", "--keyring"}},
		{"help for an unknown verb", nil, []string{"help", "exprot"}, 2,
			[]string{`no command "exprot"`, `did you mean "export"?`}},
		{"unknown verb", nil, []string{"improt"}, 2,
			[]string{`did you mean "import"?`}},
		{"single-dash long flag", nil, []string{"verify", "-json", "--keyring", "k/site.pub.asc", "b.bundle"}, 2,
			[]string{"two dashes", "use --json"}},
		// -var and -var-file take terraform's spelling; export's other flags do not.
		{"single-dash --from beside -var", nil, []string{"export", "-from", ".", "-var", "a=b", "--dry-run"}, 2,
			[]string{"two dashes", "use --from"}},
		{"--var with a manifest", nil, []string{"export", "--manifest", "ok.hcl", "-var", "env=prod", "--dry-run"}, 2,
			[]string{"--var and --var-file set variables of a --from project"}},
		{"--var without =", nil, []string{"export", "--from", ".", "-var", "env", "--dry-run"}, 2,
			[]string{`--var "env": want NAME=VALUE`}},
		{"--var-file missing", nil, []string{"export", "--from", "proj", "-var-file=nope.tfvars", "--dry-run", "--cache", "cache"}, 1,
			[]string{"--var-file nope.tfvars: no such file"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := listFiles(t, work)
			stdout, stderr, code := harness.RunSplit(t, work, c.env, c.args...)
			if code != c.code {
				t.Errorf("exit %d, want %d\n%s", code, c.code, stderr)
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if stdout != "" {
				t.Errorf("a failed command printed on stdout:\n%s", stdout)
			}
			for f := range listFiles(t, work) {
				if !before[f] && !strings.HasPrefix(f, "cache") {
					t.Errorf("a failed command left %s", f)
				}
			}
		})
	}

	// keygen --no-passphrase works and says the key is unprotected.
	_, stderr, code := harness.RunSplit(t, work, nil, "keygen", "--out", "k/plain", "--no-passphrase")
	if code != 0 || !strings.Contains(stderr, "NOT protected") {
		t.Errorf("keygen --no-passphrase: %d %s", code, stderr)
	}
	// --allow-empty makes an empty export deliberate.
	if _, stderr, code := harness.RunSplit(t, work, online, "export", "--manifest", "empty.hcl", "--allow-empty", "--out", "empty-ok.bundle", "--sign-key", "k/site.key.asc", "--cache", "cache"); code != 0 {
		t.Errorf("--allow-empty: %d %s", code, stderr)
	}
}

// TestDryRunIsThePlan: the dry run lists what the export writes, module
// dependencies included, as JSON too; platform gaps are listed.
func TestDryRunIsThePlan(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	in := registrytest.World(t)
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte("platforms = [\"linux_amd64\", \"windows_amd64\"]\nprovider \"hashicorp/random\" {}\nmodule \"example/vpc/aws\" {}\n"), 0o644)
	stdout, stderr, code := harness.RunSplit(t, work, online, "export", "--manifest", "m.hcl", "--dry-run", "--json", "--cache", "cache")
	if code != 0 {
		t.Fatalf("dry run: %d %s", code, stderr)
	}
	var plan struct {
		DryRun bool `json:"dry_run"`
		Plan   []struct{ Kind, Address, Version string }
		Gaps   []string `json:"platform_gaps"`
	}
	if err := json.Unmarshal([]byte(stdout), &plan); err != nil || !plan.DryRun {
		t.Fatalf("--dry-run --json: %v\n%s", err, stdout)
	}
	got := map[string]bool{}
	for _, p := range plan.Plan {
		got[p.Kind+" "+p.Address+" "+p.Version] = true
	}
	for _, w := range []string{"module registry.terraform.io/example/vpc/aws 1.0.0", "module registry.terraform.io/example/subnet/aws 2.1.0",
		"provider registry.terraform.io/hashicorp/null 3.2.2", "provider registry.terraform.io/hashicorp/random 3.6.2"} {
		if !got[w] {
			t.Errorf("the plan lacks %s: %v", w, got)
		}
	}
	if len(plan.Gaps) != 1 || !strings.Contains(plan.Gaps[0], "hashicorp/null 3.2.2: windows_amd64") {
		t.Errorf("gaps: %v", plan.Gaps)
	}
	if !strings.Contains(stderr, "dry run: fetching module") {
		t.Errorf("the dry run did not say it fetches modules: %s", stderr)
	}
	// The real export writes exactly what the plan listed.
	stdout, stderr, code = harness.RunSplit(t, work, online, "export", "--manifest", "m.hcl", "--json", "--cache", "cache", "--out", "b.bundle", "--sign-key", "k/site.key.asc")
	var res struct {
		Providers int      `json:"provider_versions"`
		Modules   int      `json:"module_versions"`
		Gaps      []string `json:"platform_gaps"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil || res.Providers != 2 || res.Modules != 2 || len(res.Gaps) != 1 {
		t.Errorf("export --json: %d %v %+v\n%s\n%s", code, err, res, stdout, stderr)
	}
	// import --json says what was added, then that it was all there.
	stdout = harness.MustRunStdout(t, work, "import", "--keyring", "k/site.pub.asc", "--store", "store", "--json", "b.bundle")
	var imp struct {
		Added     []string `json:"added"`
		Unchanged bool     `json:"unchanged"`
	}
	if err := json.Unmarshal([]byte(stdout), &imp); err != nil || len(imp.Added) != 4 || imp.Unchanged {
		t.Errorf("import --json: %v %s", err, stdout)
	}
	stdout = harness.MustRunStdout(t, work, "import", "--keyring", "k/site.pub.asc", "--store", "store", "--json", "b.bundle")
	if err := json.Unmarshal([]byte(stdout), &imp); err != nil || !imp.Unchanged {
		t.Errorf("import --json again: %v %s", err, stdout)
	}
	// split --json and join --json.
	stdout = harness.MustRunStdout(t, work, "split", "--size", "1MiB", "--sign-key", "k/site.key.asc", "--json", "b.bundle")
	var ix struct {
		Parts []struct{ Name string }
	}
	if err := json.Unmarshal([]byte(stdout), &ix); err != nil || len(ix.Parts) != 1 || ix.Parts[0].Name != "b.bundle.001" {
		t.Errorf("split --json: %v %s", err, stdout)
	}
	stdout = harness.MustRunStdout(t, work, "join", "--keyring", "k/site.pub.asc", "--out", "joined.bundle", "--json", "b.bundle.000")
	var joined struct {
		OK    bool `json:"ok"`
		Parts int  `json:"parts"`
	}
	if err := json.Unmarshal([]byte(stdout), &joined); err != nil || !joined.OK || joined.Parts != len(ix.Parts) {
		t.Errorf("join --json: %v %s", err, stdout)
	}
}

// TestServeWarnsOnEmptyStore: serving an empty store is allowed (the
// import can come later) but says so at start.
func TestServeWarnsOnEmptyStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "store"), 0o755)
	logs := harness.Serve(t, harness.ServeOptions{Raw: true, Dir: dir, Args: []string{"--store", "store", "--listen", "127.0.0.1:0"}}).Logs
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if s := logs.String(); strings.Contains(s, "level=WARN") && strings.Contains(s, "the store is empty") {
			if !strings.Contains(s, "airgap import --keyring") {
				t.Errorf("the warning has no hint: %s", s)
			}
			return
		}
	}
	t.Fatalf("no empty-store warning at start:\n%s", logs.String())
}

// TestTofuClientConfig: the file 'client-config --tool tofu' writes names
// TF_CLI_CONFIG_FILE, and the real tofu, pointed at it that way, installs a
// provider from the appliance with the internet unreachable.
func TestTofuClientConfig(t *testing.T) {
	t.Parallel()
	tofu := harness.TofuBin(t)
	work := t.TempDir()
	in := registrytest.World(t)
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte("platforms = [\"linux_amd64\"]\nprovider \"registry.opentofu.org/hashicorp/local\" {}\n"), 0o644)
	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc", "--out", "b.bundle", "--cache", "cache")
	storeDir := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", storeDir, "b.bundle")
	srv := harness.StartServe(t, storeDir)
	base, caFile := srv.Base, srv.CAFile
	cfg := harness.MustRunStdout(t, work, "client-config", "--url", base, "--store", storeDir, "--tool", "tofu")
	if !strings.Contains(cfg, "TF_CLI_CONFIG_FILE") || strings.Contains(cfg, "TOFU_CLI_CONFIG_FILE") {
		t.Errorf("the tofu config names the wrong variable:\n%s", cfg)
	}
	rc := filepath.Join(work, "tofu.rc")
	os.WriteFile(rc, []byte(cfg), 0o644)
	proj := filepath.Join(work, "proj")
	os.MkdirAll(proj, 0o755)
	os.WriteFile(filepath.Join(proj, "main.tf"), []byte("terraform {\n  required_providers {\n    local = { source = \"hashicorp/local\" }\n  }\n}\n"), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	out := harness.MustRun(t, proj, offline, tofu, "init", "-input=false", "-no-color")
	if !strings.Contains(out, "Installed hashicorp/local v2.5.1") {
		t.Errorf("tofu init with the generated config:\n%s", out)
	}
}

// TestFromMessagesNameTheCall: 'export --from DIR' has no manifest, so its
// messages name the project's module call at FILE:LINE and never tell the
// user to add to "the manifest": the note about a module that calls
// another without a host, and a fetch that fails.
func TestFromMessagesNameTheCall(t *testing.T) {
	t.Parallel()
	in := registrytest.World(t)
	work := t.TempDir()
	os.MkdirAll(filepath.Join(work, "infra"), 0o755)
	os.WriteFile(filepath.Join(work, "infra", "main.tf"), []byte("module \"vpc\" {\n  source  = \"example/vpc/aws\"\n  version = \"1.0.0\"\n}\n"), 0o644)
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
	call := "module registry.terraform.io/example/vpc/aws 1.0.0 (" + filepath.Join("infra", "main.tf") + ":1)"
	out := harness.MustRun(t, work, online, harness.Bin, "export", "--from", "infra", "--dry-run", "--cache", "cache")
	for _, want := range []string{"note: " + call + " calls example/subnet/aws without a host",
		`for OpenTofu clients export module "registry.opentofu.org/example/subnet/aws" too: --from infra reads the project's own module calls, so name it in a manifest`} {
		if !strings.Contains(out, want) {
			t.Errorf("export --from does not say %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "to the manifest") {
		t.Errorf("export --from speaks of a manifest it does not have:\n%s", out)
	}
	in.Block("github.com")
	out, err := harness.CmdRun(t, work, online, harness.Bin, "export", "--from", "infra", "--dry-run", "--cache", "cache2")
	if err == nil || !strings.Contains(out, call+": fetching git::https://github.com/") {
		t.Errorf("a failed fetch for export --from does not name the call (%v):\n%s", err, out)
	}
}
