package cli

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestHCLHintsParse triggers, with the real binary, every message that
// prints HCL to paste (the reinstate block for a withdrawn provider and
// module, the example manifest after a manifest error, the credentials
// block after a 401; push's provider_installation block is checked, and
// used with tofu, by TestPushToDistribution) and checks that each block parses, and that pasting
// it does what the hint says: the reinstate blocks reinstate, the example
// is a manifest export accepts, the credentials block lets export in.
func TestHCLHintsParse(t *testing.T) {
	in := registrytest.World(t)
	in.AddProvider(t, "registry.example.com", "corp", "internal", "1.2.0", []string{"linux_amd64"}, 1024)
	// The site module of the example manifest, on the site's git server.
	in.AddGitRepo(t, "net/vpc", "v1.0.0", map[string]string{"main.tf": "output \"x\" {\n  value = 1\n}\n"})
	work := t.TempDir()
	noCfg := "TF_CLI_CONFIG_FILE=" + filepath.Join(work, "none.tfrc")
	online := append(in.Env(), noCfg)
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	write := func(name, content string) string {
		p := filepath.Join(work, name)
		os.WriteFile(p, []byte(content), 0o644)
		return p
	}
	exportM := func(name, manifest string) (string, string, int) {
		t.Helper()
		b := filepath.Join(work, name+".bundle")
		_, stderr, code := harness.RunSplit(t, work, online, "export", "--manifest", write(name+".hcl", manifest), "--sign-key", "k/site.key.asc", "--out", b, "--cache", "cache")
		return b, stderr, code
	}
	mustExport := func(name, manifest string) string {
		t.Helper()
		b, stderr, code := exportM(name, manifest)
		if code != 0 {
			t.Fatalf("export %s: %d\n%s", name, code, stderr)
		}
		return b
	}
	importB := func(b string) (string, int) {
		_, stderr, code := harness.RunSplit(t, work, nil, "import", "--keyring", "k/site.pub.asc", "--store", "store", b)
		return stderr, code
	}

	// Withdrawn versions: the reinstate hint for a provider and a module.
	const platforms = "platforms = [\"linux_amd64\"]\n"
	provider := mustExport("provider", platforms+"provider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n")
	module := mustExport("module", platforms+"module \"example/vpc/aws\" {\n  versions = \"1.0.0\"\n}\n")
	withdraw := mustExport("withdraw", "withdraw \"hashicorp/random\" {\n  versions = \"3.6.2\"\n  reason   = \"bad build\"\n}\n"+
		"withdraw \"example/vpc/aws\" {\n  module   = true\n  versions = \"1.0.0\"\n  reason   = \"pulled\"\n}\n")
	for _, b := range []string{provider, module, withdraw} {
		if stderr, code := importB(b); code != 0 {
			t.Fatalf("import %s: %d\n%s", b, code, stderr)
		}
	}
	for _, c := range []struct{ name, bundle, manifest string }{
		{"provider", provider, platforms + "provider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n"},
		{"module", module, platforms + "module \"example/vpc/aws\" {\n  versions = \"1.0.0\"\n}\n"},
	} {
		stderr, code := importB(c.bundle)
		blocks := harness.HCLBlocks(t, stderr)
		if code != 1 || len(blocks) != 1 || !strings.Contains(stderr, "withdrew") {
			t.Fatalf("re-importing the withdrawn %s: %d, %d HCL block(s)\n%s", c.name, code, len(blocks), stderr)
		}
		t.Logf("the %s hint:\n%s", c.name, blocks[0])
		harness.ParseHCL(t, "reinstate "+c.name, blocks[0])
		// Pasted into the manifest as it says, it reinstates the version.
		b := mustExport("reinstate-"+c.name, c.manifest+blocks[0])
		if stderr, code := importB(b); code != 0 || !strings.Contains(harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", "store"), "reinstated") {
			t.Errorf("the bundle made with the %s hint's block: %d\n%s", c.name, code, stderr)
		}
	}

	// A manifest error shows an example manifest: it parses, and export
	// accepts it as it is.
	_, stderr, code := exportM("typo", "providers \"hashicorp/random\" {}\n")
	blocks := harness.HCLBlocks(t, stderr)
	if code != 1 || len(blocks) != 1 {
		t.Fatalf("a manifest typo: %d, %d HCL block(s)\n%s", code, len(blocks), stderr)
	}
	harness.ParseHCL(t, "manifest", blocks[0])
	if blocks[0] != export.ManifestExample {
		t.Errorf("the hint's manifest is not export.ManifestExample:\n%s", blocks[0])
	}
	if _, err := export.ParseSpec(write("example.hcl", blocks[0]), nil); err != nil {
		t.Errorf("the example manifest is not a manifest: %v", err)
	}
	if _, stderr, code := harness.RunSplit(t, work, online, "export", "--manifest", "example.hcl", "--dry-run", "--cache", "cache"); code != 0 {
		t.Errorf("export --dry-run of the example manifest: %d\n%s", code, stderr)
	}
	// Its gate and waive blocks, commented out (export looks the scanner
	// up on PATH), are a manifest too once uncommented and the scanner is
	// there.
	i := strings.Index(blocks[0], "\n# gate ")
	if i < 0 {
		t.Fatalf("the example manifest has no commented gate block:\n%s", blocks[0])
	}
	uncommented := blocks[0][:i+1]
	for _, l := range strings.SplitAfter(blocks[0][i+1:], "\n") {
		uncommented += strings.TrimPrefix(l, "# ")
	}
	bin := filepath.Join(work, "bin")
	os.MkdirAll(bin, 0o755)
	os.WriteFile(filepath.Join(bin, "trivy"), []byte("#!/bin/sh\nexit 0\n"), 0o755)
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	if req, err := export.ParseSpec(write("gated.hcl", uncommented), nil); err != nil || len(req.Gates) != 1 || len(req.Waivers) != 1 {
		t.Errorf("the example's gate and waive blocks, uncommented, are not a manifest's: %v\n%s", err, uncommented)
	}

	// A private registry without credentials: the credentials block.
	_, stderr, code = exportM("private", platforms+"provider \"registry.example.com/corp/internal\" {}\n")
	blocks = harness.HCLBlocks(t, stderr)
	if code != 1 || len(blocks) != 1 || !strings.Contains(stderr, "401") {
		t.Fatalf("a private registry without a token: %d, %d HCL block(s)\n%s", code, len(blocks), stderr)
	}
	harness.ParseHCL(t, "credentials", blocks[0])
	rc := write("creds.tfrc", strings.Replace(blocks[0], "TOKEN", registrytest.PrivateToken, 1))
	if _, stderr, code := harness.RunSplit(t, work, append(in.Env(), "TF_CLI_CONFIG_FILE="+rc), "export", "--manifest", "private.hcl", "--dry-run", "--cache", "cache"); code != 0 {
		t.Errorf("export with the credentials block from the hint: %d\n%s", code, stderr)
	}
}

// TestNoOneLineBlocks: no message in the source writes an HCL block with
// two attributes on one line ("{ a = 1  b = 2 }"), which HCL refuses
// ("Invalid single-argument block definition"); blocks go through
// dist.HCLHint.
func TestNoOneLineBlocks(t *testing.T) {
	t.Parallel()
	// (A comma makes it an object, which is valid: { a = 1, b = 2 }.)
	// A block inside a one-line block is refused too.
	oneLine := regexp.MustCompile(`\{ *[a-z_]+ = [^},\n]* [a-z_]+ = |\{ *[a-z_]+ \{`)
	fsys := os.DirFS(harness.Root())
	fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && p != "." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, _ := fs.ReadFile(fsys, p)
		for i, l := range strings.Split(string(src), "\n") {
			if oneLine.MatchString(l) && !strings.HasPrefix(strings.TrimSpace(l), "//") {
				t.Errorf("%s:%d writes a one-line HCL block with several attributes: %s", p, i+1, strings.TrimSpace(l))
			}
		}
		return nil
	})
}
