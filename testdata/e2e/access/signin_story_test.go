package access

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestClientConfigWarnsCLIConfigEnv: with TF_CLI_CONFIG_FILE set, terraform
// reads neither ~/.terraformrc nor the tokens 'terraform login' stores, so
// client-config warns (on stderr; the configuration on stdout is unchanged)
// and says what to do, for a sign-in appliance and for one without.
func TestClientConfigWarnsCLIConfigEnv(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	s := harness.StartServe(t, root)
	rc := filepath.Join(t.TempDir(), "team.tfrc")
	set := []string{"SSL_CERT_FILE=" + s.CAFile, "TF_CLI_CONFIG_FILE=" + rc}

	stdout, stderr, code := harness.RunSplit(t, "", set, "client-config", "--url", s.Base, "--login")
	if code != 0 || !strings.Contains(stderr, "warning: TF_CLI_CONFIG_FILE is set ("+rc+")") ||
		!strings.Contains(stderr, "nor the tokens 'terraform login' stores") || !strings.Contains(stderr, "hint: unset TF_CLI_CONFIG_FILE") {
		t.Errorf("client-config --login with TF_CLI_CONFIG_FILE set: %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "do not point TF_CLI_CONFIG_FILE at it") || !strings.Contains(stdout, "#   terraform login registry.terraform.io\n") {
		t.Errorf("the login configuration's advice:\n%s", stdout)
	}
	_, stderr, code = harness.RunSplit(t, "", set, "client-config", "--url", s.Base)
	if code != 0 || !strings.Contains(stderr, "warning: TF_CLI_CONFIG_FILE is set ("+rc+"): terraform reads that file only, not ~/.terraformrc") {
		t.Errorf("client-config with TF_CLI_CONFIG_FILE set: %d\n%s", code, stderr)
	}
	_, stderr, code = harness.RunSplit(t, "", set[:1], "client-config", "--url", s.Base, "--login")
	if code != 0 || strings.Contains(stderr, "warning") {
		t.Errorf("client-config without TF_CLI_CONFIG_FILE warns: %d\n%s", code, stderr)
	}
}

// TestDocsURLWarnsCLIConfigEnv: 'airgap docs --url' reads the person's
// login token as terraform does, so with TF_CLI_CONFIG_FILE set it warns
// that the tokens 'terraform login' stores are read by nothing: when no
// token is found, and when the appliance refuses the one the file holds.
// Without the variable (a home with no tokens), no such warning.
func TestDocsURLWarnsCLIConfigEnv(t *testing.T) {
	t.Parallel()
	root, _, _ := harness.OpsStore(t)
	work := t.TempDir()
	access := filepath.Join(work, "access.hcl")
	harness.MustRun(t, "", nil, harness.Bin, "token", "create", "--access", access, "--name", "ci", "--allow", "**")
	s := harness.StartServe(t, root, "--access", access)
	host := strings.TrimSuffix(strings.TrimPrefix(s.Base, "https://"), "/")
	rc := filepath.Join(work, "team.tfrc")
	os.WriteFile(rc, []byte("# no credentials\n"), 0o600)
	home := []string{"HOME=" + work, "SSL_CERT_FILE=" + s.CAFile}
	const warn = "warning: TF_CLI_CONFIG_FILE is set (" // + the file
	_, stderr, code := harness.RunSplit(t, work, append(home, "TF_CLI_CONFIG_FILE="+rc), "docs", "--url", s.Base, "--search", "random_string")
	if code != 1 || !strings.Contains(stderr, warn+rc+"): with it set, terraform, tofu and airgap read that file only, not the tokens 'terraform login' stores") ||
		!strings.Contains(stderr, "hint: unset TF_CLI_CONFIG_FILE") || !strings.Contains(stderr, "asks for a token, and none was found") {
		t.Errorf("docs --url with TF_CLI_CONFIG_FILE set and no token: %d\n%s", code, stderr)
	}
	// A stale token in the file: refused, and the warning says why a new
	// login did not help.
	os.WriteFile(rc, []byte(fmt.Sprintf("credentials %q {\n  token = %q\n}\n", host, "airgap_"+strings.Repeat("A", 43))), 0o600)
	_, stderr, code = harness.RunSplit(t, work, append(home, "TF_CLI_CONFIG_FILE="+rc), "docs", "--url", s.Base, "--search", "random_string")
	if code != 1 || !strings.Contains(stderr, warn+rc+")") || !strings.Contains(stderr, "did not take your token") {
		t.Errorf("docs --url with TF_CLI_CONFIG_FILE set and a refused token: %d\n%s", code, stderr)
	}
	_, stderr, code = harness.RunSplit(t, work, home, "docs", "--url", s.Base, "--search", "random_string")
	if code != 1 || strings.Contains(stderr, "TF_CLI_CONFIG_FILE") || !strings.Contains(stderr, "asks for a token, and none was found") {
		t.Errorf("docs --url without TF_CLI_CONFIG_FILE: %d\n%s", code, stderr)
	}
}
