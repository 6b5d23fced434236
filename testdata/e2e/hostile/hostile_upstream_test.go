package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/progress"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// hostileEnv: the stand-in internet for a subprocess, and no CLI config.
func hostileEnv(in *registrytest.Internet, work string) []string {
	return append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"))
}

// TestColdExportsIdenticalBytes: a manifest in which four addresses on two
// origins serve byte-identical packages (as registry.terraform.io and
// registry.opentofu.org both serve HashiCorp's builds of hashicorp/null).
// Before one download per digest, the downloads raced on one partial file and
// 8 of 10 cold exports failed; now every cold export succeeds and each package
// is fetched once per export.
func TestColdExportsIdenticalBytes(t *testing.T) {
	t.Parallel()
	const runs = 10
	work := t.TempDir()
	in := registrytest.New(t)
	plats := []string{"linux_amd64", "darwin_arm64", "windows_amd64"}
	bp := in.AddProvider(t, "registry.terraform.io", "hashicorp", "null", "3.2.2", plats, 512<<10)
	in.PublishAlso(bp, "registry.opentofu.org", "hashicorp")
	in.PublishAlso(bp, "registry.terraform.io", "mirror")
	in.PublishAlso(bp, "registry.opentofu.org", "mirror")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", "k/site")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte(`platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]
provider "hashicorp/null" {}
provider "registry.opentofu.org/hashicorp/null" {}
provider "mirror/null" {}
provider "registry.opentofu.org/mirror/null" {}
`), 0o644)
	ok := 0
	var failures []string
	for i := range runs {
		out, err := harness.CmdRun(t, work, hostileEnv(in, work), harness.Bin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc",
			"--cache", fmt.Sprintf("cache%d", i), "--out", fmt.Sprintf("b%d.bundle", i), "--jobs", "8")
		if err != nil {
			failures = append(failures, fmt.Sprintf("run %d: %v\n%s", i, err, out))
			continue
		}
		ok++
		harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", fmt.Sprintf("b%d.bundle", i))
		if left, _ := filepath.Glob(filepath.Join(work, fmt.Sprintf("cache%d", i), "partial", "*")); len(left) != 0 {
			t.Errorf("run %d left partial files: %v", i, left)
		}
	}
	t.Logf("%d/%d cold exports succeeded", ok, runs)
	if ok != runs {
		t.Errorf("%d of %d cold exports failed:\n%s", runs-ok, runs, strings.Join(failures, "\n"))
	}
	for _, pk := range bp.Packages {
		if got := in.Downloaded(pk.Filename); got != int32(ok) {
			t.Errorf("%s was downloaded %d times in %d exports, want once per export (four addresses share one download)", pk.Filename, got, ok)
		}
	}
}

// TestEndlessDownload: a server that streams a package forever. The export
// fails at --max-package-size with a message naming the URL, the limit and
// the flag, does not retry, and leaves no partial file to grow on a re-run.
func TestEndlessDownload(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	in := registrytest.New(t)
	bp := in.AddProvider(t, "registry.terraform.io", "evil", "endless", "1.0.0", []string{"linux_amd64"}, 4<<10)
	endless := registrytest.Endless()
	in.Handle(registrytest.PackageURL("registry.terraform.io", "endless", "1.0.0", bp.Packages[0].Filename), endless)
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", "k/site")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte("platforms = [\"linux_amd64\"]\nprovider \"evil/endless\" {}\n"), 0o644)
	start := time.Now()
	out, err := harness.CmdRun(t, work, hostileEnv(in, work), harness.Bin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc",
		"--cache", "cache", "--out", "b.bundle", "--max-package-size", "2MiB")
	t.Logf("export against an endless stream: %v after %s, %d request(s), %s sent by the server\n%s",
		err, time.Since(start).Round(time.Millisecond), endless.Requests.Load(), progress.Size(endless.Sent.Load()), out)
	if harness.ExitCode(err) != 1 {
		t.Fatalf("exit code %d, want 1", harness.ExitCode(err))
	}
	for _, want := range []string{"https://releases.hashicorp.com/", bp.Packages[0].Filename, "limit of 2.0 MiB", "hint:", "--max-package-size"} {
		if !strings.Contains(out, want) {
			t.Errorf("the message lacks %q", want)
		}
	}
	if n := endless.Requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1: a size-limit violation is permanent", n)
	}
	// Only the small verified SHA256SUMS and signature may stay in the cache.
	filepath.Walk(filepath.Join(work, "cache"), func(p string, fi os.FileInfo, err error) error {
		if err == nil && fi.Mode().IsRegular() && (fi.Size() > 64<<10 || !strings.Contains(p, "blobs")) {
			t.Errorf("the failed export left %s (%d bytes) in the cache", p, fi.Size())
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(work, "b.bundle")); err == nil {
		t.Error("a bundle was written")
	}
}

// TestRedirectLoopDownload: a package URL that redirects to itself fails at
// once (one attempt: the first request and 10 redirects), naming the loop.
func TestRedirectLoopDownload(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	in := registrytest.New(t)
	bp := in.AddProvider(t, "registry.terraform.io", "evil", "loop", "1.0.0", []string{"linux_amd64"}, 4<<10)
	loop := registrytest.RedirectLoop()
	in.Handle(registrytest.PackageURL("registry.terraform.io", "loop", "1.0.0", bp.Packages[0].Filename), loop)
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte("platforms = [\"linux_amd64\"]\nprovider \"evil/loop\" {}\n"), 0o644)
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", "k/site")
	out, err := harness.CmdRun(t, work, hostileEnv(in, work), harness.Bin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc",
		"--cache", "cache", "--out", "b.bundle")
	if harness.ExitCode(err) != 1 || !strings.Contains(out, "too many redirects") || !strings.Contains(out, bp.Packages[0].Filename) {
		t.Errorf("exit %d, want 1 and a message naming the redirect loop and the file:\n%s", harness.ExitCode(err), out)
	}
	if n := loop.Requests.Load(); n != 11 {
		t.Errorf("%d requests, want 11 (one attempt: no retries of a permanent error)", n)
	}
}

// noControl fails if out holds a byte or rune that drives a terminal.
func noControl(t *testing.T, what, out string) {
	t.Helper()
	for i, r := range out {
		if r != '\n' && r != '\t' && (r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == '\u202e') {
			t.Errorf("%s: control character %U at %d:\n%q", what, r, i, out)
			return
		}
	}
}

const evil = "\x1b]0;pwned\x07\x1b[2J\u202e"

// TestHostileStringsAreEscaped: registry- and manifest-supplied strings with
// terminal escapes reach export --dry-run, export errors, import and
// inventory escaped.
func TestHostileStringsAreEscaped(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	in := registrytest.New(t)
	// A module location (opentofu-style JSON, so any bytes get through).
	in.AddModule("registry.opentofu.org", "evil", "term", "aws", "1.0.0", "https://archives.example.com/m.tar.gz?x="+evil)
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte("module \"registry.opentofu.org/evil/term/aws\" {}\n"), 0o644)
	// The dry run fetches module archives to list their dependencies, so
	// it fails on this location: the message shows it escaped.
	out, err := harness.CmdRun(t, work, hostileEnv(in, work), harness.Bin, "export", "--manifest", "m.hcl", "--dry-run", "--cache", "cache")
	if err == nil {
		t.Fatalf("a dry run of an unfetchable location succeeded:\n%s", out)
	}
	noControl(t, "export --dry-run", out)
	if !strings.Contains(out, `\x1b]0;pwned`) || !strings.Contains(out, `\u202e`) {
		t.Errorf("export --dry-run does not show the escaped location:\n%s", out)
	}
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", "k/site")
	out, err = harness.CmdRun(t, work, hostileEnv(in, work), harness.Bin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc",
		"--cache", "cache", "--out", "b.bundle")
	if err == nil {
		t.Fatalf("an export of an unfetchable location succeeded:\n%s", out)
	}
	noControl(t, "export error", out)

	// A signing key whose ID carries escapes (and whose armor is garbage):
	// the export fails naming it, escaped.
	bp := in.AddProvider(t, "registry.terraform.io", "evil", "keys", "1.0.0", []string{"linux_amd64"}, 4<<10)
	pk := bp.Packages[0]
	base := "https://" + registrytest.PackageURL("registry.terraform.io", "keys", "1.0.0", "")
	in.Handle("registry.terraform.io/v1/providers/evil/keys/1.0.0/download/linux/amd64", registrytest.JSON(map[string]any{
		"protocols": []string{"5.0"}, "os": "linux", "arch": "amd64", "filename": pk.Filename, "shasum": pk.Digest.Hex(),
		"download_url": base + pk.Filename, "shasums_url": base + bp.ShasumsName, "shasums_signature_url": base + bp.ShasumsName + ".sig",
		"signing_keys": map[string]any{"gpg_public_keys": []map[string]string{{"key_id": "KEY" + evil, "ascii_armor": "not a key" + evil}}},
	}))
	os.WriteFile(filepath.Join(work, "k.hcl"), []byte("platforms = [\"linux_amd64\"]\nprovider \"evil/keys\" {}\n"), 0o644)
	out, err = harness.CmdRun(t, work, hostileEnv(in, work), harness.Bin, "export", "--manifest", "k.hcl", "--sign-key", "k/site.key.asc",
		"--cache", "cache", "--out", "b.bundle")
	if err == nil || !strings.Contains(out, `KEY\x1b]0;pwned\x07`) {
		t.Errorf("export with a hostile key ID: %v, want a failure naming the key, escaped:\n%s", err, out)
	}
	noControl(t, "export error naming a key", out)

	// A validly signed bundle whose signer's name and module source carry
	// escapes: import and inventory show them escaped.
	signer := bundletest.Key(t, "site "+evil)
	bundletest.WriteFile(t, filepath.Join(work, "evil.pub.asc"), []byte(bundletest.Armor(t, signer)))
	set := bundletest.NewSet()
	arch := filepath.Join(work, "mod.tar.gz")
	bundletest.WriteModuleArchive(t, arch, map[string]string{"main.tf": "output \"x\" {\n  value = 1\n}\n"})
	set.AddModule(t, dist.ModuleVersion{Host: "registry.terraform.io", Namespace: "evil", Name: "term", System: "aws", Version: "1.0.0",
		Source: "git::https://example.com/" + evil}, arch)
	set.WriteBundleFile(t, filepath.Join(work, "evil.bundle"), signer, bundle.CompressionZstd)
	out = harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "evil.pub.asc", "--store", "store", "evil.bundle")
	noControl(t, "import", out)
	out = harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", "store")
	noControl(t, "inventory", out)
	if !strings.Contains(out, `example.com/\x1b]0;pwned\x07`) {
		t.Errorf("inventory does not show the escaped source:\n%s", out)
	}
}
