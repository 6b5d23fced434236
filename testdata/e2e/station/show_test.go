package station

import (
	"archive/tar"
	"compress/gzip"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestShowSBOMFilesDocs: 'airgap show' beyond gate reports, as the
// station officer reads a bundle before approving it: its SBOM (escaped,
// --raw the exact bytes), a module's files (the list, then one file,
// escaped; a hostile name and content print no control character), and
// the docs each entry brings. A subject the bundle lacks is said plainly.
func TestShowSBOMFilesDocs(t *testing.T) {
	t.Parallel()
	work, site, keyring, _, set := harness.TrustWorld(t)
	mod := filepath.Join(work, "evil.tar.gz")
	bundletest.WriteModuleArchive(t, mod, map[string]string{
		"main.tf":                "variable \"x\" {}\n# \x1b]0;owned\x07\n",
		"odd\x1b[2Jname.tf":      "locals {}\n",
		"modules/sub/outputs.tf": "output \"y\" { value = 1 }\n",
	})
	set.AddModule(t, dist.ModuleVersion{Host: "registry.terraform.io", Namespace: "acme", Name: "evil", System: "aws", Version: "2.0.0"}, mod)
	set.SBOM = true
	path := filepath.Join(work, "show.bundle")
	set.WriteBundleFile(t, path, site, bundle.CompressionZstd)
	show := func(args ...string) (string, string, int) {
		cmd := exec.Command(harness.Bin, append([]string{"show", "--keyring", keyring, path}, args...)...)
		cmd.Env = harness.BaseEnv()
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), harness.ExitCode(err)
	}
	out, errOut, code := show("sbom")
	if code != 0 || !strings.Contains(out, `"bomFormat": "CycloneDX"`) && !strings.Contains(out, `"bomFormat":"CycloneDX"`) || !strings.Contains(errOut, "checked against the bundle's signed manifest") {
		t.Errorf("show sbom: %d\n%.600s\n%s", code, out, errOut)
	}
	raw, _, code := show("sbom", "--raw")
	if code != 0 || raw != out {
		t.Errorf("show sbom --raw: %d, %d bytes (escaped: %d)", code, len(raw), len(out))
	}

	out, errOut, code = show("files", "acme/evil/aws@2.0.0")
	t.Logf("show files:\n%s", out)
	for _, want := range []string{"module registry.terraform.io/acme/evil/aws 2.0.0: archive sha256:", "main.tf", `odd\x1b[2Jname.tf`, "modules/sub/outputs.tf", "3 files"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show files lacks %q: %d\n%s%s", want, code, out, errOut)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("show files printed a control character:\n%q", out)
	}
	out, _, code = show("files", "acme/evil/aws@2.0.0", "main.tf")
	if code != 0 || !strings.Contains(out, `variable "x" {}`) || strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `\x1b]0;owned`) {
		t.Errorf("show files … main.tf: %d\n%q", code, out)
	}
	if out, _, code = show("files", "acme/evil/aws@2.0.0", "main.tf", "--raw"); code != 0 || out != "variable \"x\" {}\n# \x1b]0;owned\x07\n" {
		t.Errorf("show files … main.tf --raw: %d\n%q", code, out)
	}
	if _, errOut, code = show("files", "acme/evil/aws@2.0.0", "nope.tf"); code != 1 || !strings.Contains(errOut, `has no file "nope.tf"`) || !strings.Contains(errOut, "hint:") {
		t.Errorf("show files of a missing file: %d\n%s", code, errOut)
	}
	if _, errOut, code = show("files", "acme/absent/aws@1.0.0"); code != 1 || !strings.Contains(errOut, "carries no module") {
		t.Errorf("show files of a module the bundle lacks: %d\n%s", code, errOut)
	}

	out, errOut, code = show("docs")
	for _, want := range []string{"provider registry.terraform.io/hashicorp/random 3.6.0: ", "module registry.terraform.io/acme/evil/aws 2.0.0: none"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("show docs lacks %q: %d\n%s%s", want, code, out, errOut)
		}
	}
	if _, errOut, code = show("docs", "hashicorp/random@3.6.0"); code != 1 || !strings.Contains(errOut, "no documentation") {
		t.Errorf("show docs of a provider without docs: %d\n%s", code, errOut)
	}
	if _, errOut, code = show("nothing"); code != 2 || !strings.Contains(errOut, "docs [ADDRESS[@VERSION] [NAME]]") || !strings.Contains(errOut, "sbom") {
		t.Errorf("an unknown subject: %d\n%s", code, errOut)
	}
}

// zeros reads as endless zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// TestShowFilesArchiveBomb: 'show files' of a module archive of 1.2 MB
// that unpacks to 1.2 GiB (one file of zeros; the bundle is validly
// signed, its consistency not yet checked, as at the station) refuses at
// once, naming the bound, instead of decompressing it all.
func TestShowFilesArchiveBomb(t *testing.T) {
	t.Parallel()
	w := harness.NewHostileWorld(t)
	p := filepath.Join(w.Work, "bomb.tar.gz")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	gz, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	const n = 1200 << 20
	tw.WriteHeader(&tar.Header{Name: "big.bin", Mode: 0o644, Size: n, Typeflag: tar.TypeReg})
	io.CopyN(tw, zeros{}, n)
	tw.Close()
	gz.Close()
	f.Close()
	d := bundletest.FileDigest(t, p)
	w.Files[d] = p
	fi, _ := os.Stat(p)
	b := w.Write(t, "bomb", dist.Catalog{Providers: []dist.ProviderVersion{}, Modules: []dist.ModuleVersion{
		{Host: "registry.terraform.io", Namespace: "acme", Name: "bomb", System: "aws", Version: "1.0.0", Archive: d, Size: fi.Size()}}})
	start := time.Now()
	_, stderr, code := harness.RunSplit(t, "", nil, "show", "--keyring", w.Keyring, b, "files", "acme/bomb/aws@1.0.0")
	took := time.Since(start)
	t.Logf("show files of a %d KiB archive of 1.2 GiB: exit %d in %s: %s", fi.Size()>>10, code, took.Round(time.Millisecond), strings.TrimSpace(stderr))
	if code != 1 || !strings.Contains(stderr, "holds more than 1.0 GiB of files") || took > 2*time.Second {
		t.Errorf("show files of an archive bomb: exit %d in %s\n%s", code, took, stderr)
	}
}
