package harness

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPreflight: what 'make test' prints first, from the test binary
// itself. With an empty test cache it lists every tool it will build and
// how long the first run takes; with a wrong Terraform 1.15.9 it stops
// (exit 1) saying what is missing and what to do.
func TestPreflight(t *testing.T) {
	work := t.TempDir()
	fake := func(version string) string {
		p := filepath.Join(work, "terraform-"+version)
		os.WriteFile(p, []byte("#!/bin/sh\necho '{\"terraform_version\":\""+version+"\"}'\n"), 0o755)
		return p
	}
	run := func(tf string) (string, int) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), preflightEnv+"=1", "AIRGAP_TEST_CACHE="+filepath.Join(work, "cache"), TerraformNewEnv+"="+tf)
		out, err := cmd.CombinedOutput()
		return string(out), ExitCode(err)
	}
	out, code := run(fake(TerraformNewVersion))
	if code != 0 || !strings.Contains(out, "terraform "+TerraformNewVersion+": "+filepath.Join(work, "terraform-"+TerraformNewVersion)+" (from "+TerraformNewEnv+")") ||
		!strings.Contains(out, fmt.Sprintf("This first run builds %d tools", len(cacheTools))) || strings.Count(out, " now: ") != len(cacheTools) {
		t.Errorf("preflight with an empty cache: exit %d\n%s", code, out)
	}
	out, code = run(fake("1.11.4"))
	if code != 1 || !strings.Contains(out, "Missing, so the suite would fail:") || !strings.Contains(out, "is Terraform 1.11.4, not "+TerraformNewVersion) {
		t.Errorf("preflight with the wrong Terraform: exit %d\n%s", code, out)
	}
}

// TestMakeTestPreflightFirst runs 'make test' with a wrong Terraform: the
// preflight stops it before go vet (minutes on 2 cores) has run.
func TestMakeTestPreflightFirst(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Skip("no make on PATH")
	}
	work := t.TempDir()
	tf := filepath.Join(work, "terraform")
	os.WriteFile(tf, []byte("#!/bin/sh\necho '{\"terraform_version\":\"1.11.4\"}'\n"), 0o755)
	cmd := exec.Command("make", "test")
	cmd.Dir = Root()
	cmd.Env = append(os.Environ(), "AIRGAP_TEST_CACHE="+filepath.Join(work, "cache"), TerraformNewEnv+"="+tf)
	out, err := cmd.CombinedOutput()
	if ExitCode(err) == 0 || !strings.Contains(string(out), "Missing, so the suite would fail:") {
		t.Fatalf("make test with a wrong Terraform: exit %d\n%s", ExitCode(err), out)
	}
	if strings.Contains(string(out), "go vet") {
		t.Errorf("make test ran go vet before the preflight stopped it:\n%s", out)
	}
}
