package journey

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestTofuBuilds makes sure the OpenTofu client is there for the
// end-to-end tests (and builds it once for them).
func TestTofuBuilds(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(harness.TofuBin(t), "version")
	cmd.Env = harness.BaseEnv() // a TF_CLI_CONFIG_FILE naming a missing file makes tofu print a warning first
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("tofu version: %v\n%s", err, out)
	}
	if want := "OpenTofu v" + harness.TofuVersion; !strings.HasPrefix(string(out), want) {
		t.Fatalf("tofu version printed %q, want it to start with %q", out, want)
	}
}
