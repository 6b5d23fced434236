package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/server"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestUsageNamesWhatIsMissing: every verb's command-line error names the
// flag or argument that is missing, shows the verb's usage, exits 2, prints
// nothing on stdout and leaves nothing behind; 'airgap' alone is a usage
// error too (exit 2, the usage on stderr), while 'airgap --help' is not.
func TestUsageNamesWhatIsMissing(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"import", "--store", "s", "b.bundle"}, []string{"missing --keyring (required)"}},
		{[]string{"import", "--keyring", "k", "b.bundle"}, []string{"missing --store (required)"}},
		{[]string{"import", "--keyring", "k", "--store", "s"}, []string{"missing the BUNDLE argument"}},
		{[]string{"verify", "b.bundle"}, []string{"missing --keyring (required)"}},
		{[]string{"verify", "--keyring", "k"}, []string{"missing the BUNDLE argument"}},
		{[]string{"verify", "--keyring", "k", "a", "b"}, []string{"takes one BUNDLE, but was given 2"}},
		{[]string{"inventory"}, []string{"missing --store (required)"}},
		{[]string{"gc"}, []string{"missing --store (required)"}},
		{[]string{"prune", "--keep", "2"}, []string{"missing --store (required)"}},
		{[]string{"prune", "--store", "s"}, []string{"give exactly one of --keep N, --older-than DURATION, --unused-for DURATION or ADDRESS@VERSION"}},
		{[]string{"ca"}, []string{"missing --store (required)"}},
		{[]string{"client-config"}, []string{"missing --url (required)"}},
		{[]string{"push", "--store", "s"}, []string{"missing --to (required)"}},
		{[]string{"split", "b.bundle"}, []string{"missing --sign-key (required)"}},
		{[]string{"join", "--keyring", "k", "b.bundle.000"}, []string{"missing --out (required)"}},
		{[]string{"keygen"}, []string{"missing --out (required)"}},
		{[]string{"approve", "b.bundle"}, []string{"missing --key and --keyring (required)"}},
		{[]string{"approve", "--key", "k", "--keyring", "k"}, []string{"missing the BUNDLE argument"}},
		{[]string{"keys"}, []string{"airgap keys retire --store DIR"}},
		{[]string{"keys", "retire", "--store", "s", "registry.terraform.io/hashicorp"}, []string{"give --store DIR, the namespace and the key's fingerprint"}},
		{[]string{"keys", "retire", "--store", "s", "registry.terraform.io/hashicorp", "ABCD"}, []string{"is not a key fingerprint"}},
		{[]string{"keys", "revkoe"}, []string{`did you mean "revoke"?`}},
		{[]string{"audit"}, []string{"missing --log (required)"}},
		{[]string{"mirror-dir", "--store", "s"}, []string{"missing --out (required)"}},
		{[]string{"export", "--manifest", "m.hcl", "--out", "b.bundle"}, []string{"missing --sign-key (required unless --dry-run)"}},
		{[]string{"export", "--manifest", "m.hcl"}, []string{"missing --sign-key and --out (required unless --dry-run)"}},
		{[]string{"export", "--sign-key", "k", "--out", "b"}, []string{"give exactly one of --manifest FILE or --from DIR"}},
		{[]string{"serve", "extra"}, []string{"takes no arguments"}},
		{[]string{"serve"}, []string{"no store: give --store DIR"}},
	}
	for _, c := range cases {
		stdout, stderr, code := harness.RunSplit(t, work, nil, c.args...)
		if code != 2 || stdout != "" {
			t.Errorf("airgap %s: exit %d, stdout %q; want 2 and nothing", strings.Join(c.args, " "), code, stdout)
		}
		want := append(c.want, "airgap "+c.args[0]+": ", "hint: run 'airgap help "+c.args[0]+"'")
		if c.args[0] != "serve" {
			want = append(want, "usage: airgap "+c.args[0]+" ")
		}
		for _, w := range want {
			if !strings.Contains(stderr, w) {
				t.Errorf("airgap %s: stderr lacks %q:\n%s", strings.Join(c.args, " "), w, stderr)
			}
		}
	}
	if ents, _ := os.ReadDir(work); len(ents) != 0 {
		t.Errorf("usage errors left %d file(s)", len(ents))
	}
	stdout, stderr, code := harness.RunSplit(t, work, nil)
	if code != 2 || stdout != "" || !strings.Contains(stderr, "Usage: airgap COMMAND") {
		t.Errorf("airgap with no arguments: exit %d, stdout %q, stderr %q; want 2 and the usage on stderr", code, stdout, stderr)
	}
	if stdout, _, code := harness.RunSplit(t, work, nil, "--help"); code != 0 || !strings.Contains(stdout, "Usage: airgap COMMAND") {
		t.Errorf("airgap --help: exit %d, stdout %q", code, stdout)
	}
}

// TestImportCreatesStoreVisibly: importing into a directory that is not
// there (a typo in --store) says on a line of its own that it created a new
// store, in text and JSON; an import into an existing store does not; a
// failed import into a new directory leaves nothing behind, not even the
// directory.
func TestImportCreatesStoreVisibly(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	os.WriteFile(filepath.Join(work, "site.pub.asc"), []byte(pub), 0o644)
	other, _ := verify.PublicArmor(bundletest.Key(t, "other"))
	os.WriteFile(filepath.Join(work, "other.pub.asc"), []byte(other), 0o644)
	bundletest.Standard(t, filepath.Join(t.TempDir(), "set"), signer).WriteBundleFile(t, filepath.Join(work, "b.bundle"), signer, bundle.CompressionZstd)

	stdout, stderr, code := harness.RunSplit(t, work, nil, "import", "--keyring", "site.pub.asc", "--store", "stroe", "b.bundle")
	if want := "created a new store in " + filepath.Join(work, "stroe") + " "; code != 0 || !strings.HasPrefix(stdout, want) {
		t.Errorf("import into a new directory: exit %d, stdout does not start with %q:\n%s%s", code, want, stdout, stderr)
	}
	stdout, _, _ = harness.RunSplit(t, work, nil, "import", "--keyring", "site.pub.asc", "--store", "stroe", "b.bundle")
	if strings.Contains(stdout, "created") {
		t.Errorf("an import into an existing store says it created one:\n%s", stdout)
	}
	stdout, _, _ = harness.RunSplit(t, work, nil, "import", "--keyring", "site.pub.asc", "--store", "json-store", "--json", "b.bundle")
	var doc struct {
		OK      bool `json:"ok"`
		Created bool `json:"store_created"`
	}
	if err := json.Unmarshal([]byte(stdout), &doc); err != nil || !doc.OK || !doc.Created {
		t.Errorf("import --json into a new directory: %v %s", err, stdout)
	}

	// Refused (wrong keyring) inside the store's import: nothing is left.
	before := listFiles(t, work)
	_, stderr, code = harness.RunSplit(t, work, nil, "import", "--keyring", "other.pub.asc", "--store", "new/deeper/store", "b.bundle")
	if code != 1 || !strings.Contains(stderr, "the store was not changed") {
		t.Errorf("import with the wrong keyring: exit %d\n%s", code, stderr)
	}
	os.Mkdir(filepath.Join(work, "empty"), 0o755)
	before["empty"] = true
	_, stderr, code = harness.RunSplit(t, work, nil, "import", "--keyring", "other.pub.asc", "--store", "empty", "b.bundle")
	if code != 1 {
		t.Errorf("import with the wrong keyring into an empty directory: exit %d\n%s", code, stderr)
	}
	after := listFiles(t, work)
	for f := range after {
		if !before[f] {
			t.Errorf("a failed import left %s", f)
		}
	}
}

// TestClientConfigChecksURL: with --store the origins come from the store,
// and the URL is still checked: a URL where nothing answers, or an
// appliance serving something else, prints the configuration with a plain
// warning on stderr; the store's own appliance is confirmed.
func TestClientConfigChecksURL(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	os.WriteFile(filepath.Join(work, "site.pub.asc"), []byte(pub), 0o644)
	bundletest.Standard(t, filepath.Join(work, "set"), signer).WriteBundleFile(t, filepath.Join(work, "b.bundle"), signer, bundle.CompressionZstd)
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "site.pub.asc", "--store", "store", "b.bundle")
	other := bundletest.NewSet()
	other.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, "other"), bundletest.Provider{Host: "registry.example.com", Namespace: "corp",
		Type: "x", Version: "1.0.0", Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher")}))
	other.WriteBundleFile(t, filepath.Join(work, "other.bundle"), signer, bundle.CompressionZstd)
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "site.pub.asc", "--store", "other-store", "other.bundle")

	closed := fmt.Sprintf("https://127.0.0.1:%d/", harness.FreePort(t))
	stdout, stderr, code := harness.RunSplit(t, work, nil, "client-config", "--url", closed, "--store", "store")
	if code != 0 || !strings.Contains(stdout, closed) || !strings.Contains(stderr, "warning: could not confirm that "+closed+" is this store's appliance") ||
		!strings.Contains(stderr, "connection refused") || !strings.Contains(stderr, "check --url") {
		t.Errorf("nothing at --url: exit %d\nstderr: %s", code, stderr)
	}
	srv := harness.StartServe(t, filepath.Join(work, "store"))
	base, caFile := srv.Base, srv.CAFile
	_, stderr, code = harness.RunSplit(t, work, []string{"SSL_CERT_FILE=" + caFile}, "client-config", "--url", base, "--store", "store")
	if code != 0 || !strings.Contains(stderr, "checked: "+base+" answers as the airgap appliance of this store") {
		t.Errorf("the store's own appliance: exit %d\nstderr: %s", code, stderr)
	}
	srv2 := harness.StartServe(t, filepath.Join(work, "other-store"))
	otherBase, otherCA := srv2.Base, srv2.CAFile
	_, stderr, code = harness.RunSplit(t, work, []string{"SSL_CERT_FILE=" + otherCA}, "client-config", "--url", otherBase, "--store", "store")
	if code != 0 || !strings.Contains(stderr, "serves other origins") || !strings.Contains(stderr, "warning:") {
		t.Errorf("another appliance at --url: exit %d\nstderr: %s", code, stderr)
	}
}

// TestServeHelpEnvironment: 'airgap help serve' lists exactly the AIRGAP_
// variables the configuration loader reads, and each one listed does what
// it says ('serve --check-config' shows the setting taken from it).
func TestServeHelpEnvironment(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	help, _, _ := harness.RunSplit(t, work, nil, "help", "serve")
	_, envPart, _ := strings.Cut(help, "\nEnvironment:\n")
	envPart, _, _ = strings.Cut(envPart, "\n\n")
	listed := regexp.MustCompile(`AIRGAP_[A-Z_]+`).FindAllString(envPart, -1)
	var want []string
	for _, s := range server.EnvSettings() {
		want = append(want, server.EnvName(s))
	}
	if strings.Join(listed, " ") != strings.Join(want, " ") {
		t.Errorf("help serve lists %v, the loader reads %v:\n%s", listed, want, envPart)
	}
	values := map[string]string{"AIRGAP_HOSTNAME": "a.site.test,b.site.test", "AIRGAP_LISTEN": "127.0.0.1:9443", "AIRGAP_METRICS_LISTEN": "127.0.0.1:9444"}
	for _, name := range listed {
		v, ok := values[name]
		if !ok {
			t.Errorf("the test has no value to try %s with", name)
			continue
		}
		stdout, stderr, code := harness.RunSplit(t, work, []string{name + "=" + v}, "serve", "--store", work, "--check-config")
		if code != 0 || !strings.Contains(stdout, "# env "+name) {
			t.Errorf("%s=%s is not taken by serve: %d\n%s%s", name, v, code, stdout, stderr)
		}
	}
}

// TestSmallUntruths: a malformed version constraint says what is wrong
// with it; a private key given as --keyring is refused by every verb that
// reads a keyring, before anything is read or written.
func TestSmallUntruths(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	for name, c := range map[string]struct{ versions, want string }{
		"two commas":  {">= 3.6 ,, <4", `constraint 2 is empty (two commas, or a comma at an end); write e.g. ">= 3.6, < 4.0"`},
		"end comma":   {">= 3.6,", "constraint 2 is empty"},
		"no operator": {">= 3.6, about 4", `"about 4" is not a version constraint: want an operator`},
	} {
		os.WriteFile(filepath.Join(work, "m.hcl"), []byte("provider \"hashicorp/random\" {\n  versions = \""+c.versions+"\"\n}\n"), 0o644)
		// No network is needed: the manifest is refused first.
		_, stderr, code := harness.RunSplit(t, work, nil, "export", "--manifest", "m.hcl", "--dry-run")
		if code != 1 || !strings.Contains(stderr, "m.hcl:1:1") || !strings.Contains(stderr, c.want) {
			t.Errorf("%s: versions %q: exit %d\n%s", name, c.versions, code, stderr)
		}
	}

	signer := bundletest.Key(t, "site")
	bundletest.Standard(t, filepath.Join(t.TempDir(), "set"), signer).WriteBundleFile(t, filepath.Join(work, "b.bundle"), signer, bundle.CompressionZstd)
	before := listFiles(t, work)
	for _, args := range [][]string{
		{"verify", "--keyring", "k/site.key.asc", "b.bundle"},
		{"import", "--keyring", "k/site.key.asc", "--store", "store", "b.bundle"},
		{"join", "--keyring", "k/site.key.asc", "--out", "j.bundle", "b.bundle.000"},
	} {
		stdout, stderr, code := harness.RunSplit(t, work, nil, args...)
		if code != 1 || stdout != "" || !strings.Contains(stderr, "the keyring holds a private key") || !strings.Contains(stderr, "PREFIX.pub.asc") {
			t.Errorf("%s with a private key as --keyring: exit %d\n%s", args[0], code, stderr)
		}
	}
	for f := range listFiles(t, work) {
		if !before[f] {
			t.Errorf("a refused command left %s", f)
		}
	}
}
