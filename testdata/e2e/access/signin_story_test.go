package access

import (
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
