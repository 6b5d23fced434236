package harness

import (
	"strings"
	"testing"
)

// CreateToken runs 'airgap token create' and returns the secret.
func CreateToken(t *testing.T, access, name string, allow ...string) string {
	t.Helper()
	args := []string{"token", "create", "--access", access, "--name", name}
	for _, a := range allow {
		args = append(args, "--allow", a)
	}
	out, err := CmdRunSplit(t, Bin, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}
