package harness

import (
	"os/exec"
	"strings"
	"testing"
)

// CmdRunSplit runs the airgap binary and returns its stdout alone.
func CmdRunSplit(t *testing.T, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = BaseEnv()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Logf("%s %s: %s", name, strings.Join(args, " "), stderr.String())
	}
	return string(out), err
}
