package journey

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestFindTerraformNew: the suite finds Terraform 1.15.9 from any clone —
// $AIRGAP_TEST_TERRAFORM_NEW, then the project's archive beside the clone
// (unpacked into the cache and checked against its SHA256SUMS), then the
// cache — and where none has it, says which release to download and which
// variable to set. (Stand-in binaries that print a version: the lookup,
// not Terraform, is under test.)
func TestFindTerraformNew(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	fake := func(name, version string) string {
		p := filepath.Join(work, name)
		os.WriteFile(p, []byte("#!/bin/sh\necho '{\"terraform_version\":\""+version+"\"}'\n"), 0o755)
		return p
	}
	right, old := fake("tf-new", harness.TerraformNewVersion), fake("tf-old", "1.11.4")
	shared, cache, nothing := filepath.Join(work, "shared"), filepath.Join(work, "cache"), filepath.Join(work, "nothing")
	os.MkdirAll(shared, 0o755)
	name := "terraform-" + harness.TerraformNewVersion + "-linux-amd64"
	xz, err := exec.Command("xz", "-c", right).Output()
	if err != nil {
		t.Fatalf("xz (Debian package xz-utils): %v", err)
	}
	os.WriteFile(filepath.Join(shared, name+".xz"), xz, 0o644)
	sum, _ := harness.FileSHA256(right)
	os.WriteFile(filepath.Join(shared, "SHA256SUMS"), []byte(sum+"  "+name+"\n"), 0o644)

	want := func(what, env, shared, cache, wantBin string, wantErr ...string) {
		t.Helper()
		bin, errText := harness.FindTerraformNew(env, shared, cache)
		if wantBin != "" && (bin != wantBin || errText != "") {
			t.Errorf("%s: found %q (%s), want %s", what, bin, errText, wantBin)
		}
		for _, w := range wantErr {
			if !strings.Contains(errText, w) {
				t.Errorf("%s: the message does not say %q:\n%s", what, w, errText)
			}
		}
	}
	cached := filepath.Join(cache, "terraform-"+harness.TerraformNewVersion)
	want("the variable", right, shared, cache, right)
	want("the variable naming another version", old, shared, cache, "", "is Terraform 1.11.4, not "+harness.TerraformNewVersion, harness.TerraformNewEnv)
	want("the project's archive", "", shared, cache, cached)
	if got, _ := harness.FileSHA256(cached); got != sum {
		t.Errorf("the unpacked copy has sha256 %s, want %s", got, sum)
	}
	want("the cache (no archive beside the clone)", "", nothing, cache, cached)
	os.Remove(cached)
	want("nothing", "", nothing, cache, "", harness.TerraformNewEnv+" is not set", "does not hold it", "not in the test cache",
		"hint: download Terraform "+harness.TerraformNewVersion, harness.TerraformNewRelease, "set "+harness.TerraformNewEnv+"=", "make test-clients")

	// An archive that does not unpack to what SHA256SUMS says is refused,
	// and nothing is left in the cache.
	os.WriteFile(filepath.Join(shared, "SHA256SUMS"), []byte(strings.Repeat("0", 64)+"  "+name+"\n"), 0o644)
	want("a corrupt archive", "", shared, cache, "", "SHA256SUMS says "+strings.Repeat("0", 64))
	if ents, _ := os.ReadDir(cache); len(ents) != 0 {
		t.Errorf("a refused unpack left %v in the cache", ents)
	}
}
