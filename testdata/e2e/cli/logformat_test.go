package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestLogFormatJSONEveryVerb: --log-format json turns a verb's messages and
// its final error into slog JSON records on stderr, one per line, for log
// collectors; a wrong value is a usage error.
func TestLogFormatJSONEveryVerb(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	stdout, stderr, code := harness.RunSplit(t, dir, nil, "inventory", "--store", "missing-store", "--log-format", "json")
	if code != 1 || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 1 {
		t.Fatalf("stderr has %d lines, want one JSON record:\n%s", len(lines), stderr)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatalf("stderr is not a JSON record: %v\n%s", err, stderr)
	}
	if rec["level"] != "ERROR" || rec["msg"] != "airgap inventory failed" || !strings.Contains(rec["error"].(string), "hint:") {
		t.Errorf("record %v", rec)
	}
	_, stderr, code = harness.RunSplit(t, dir, nil, "verify", "--keyring", "k", "--log-format", "xml", "b")
	if code != 2 || !strings.Contains(stderr, `--log-format "xml": want text or json`) {
		t.Errorf("--log-format xml: exit %d\n%s", code, stderr)
	}
	stdout, _, _ = harness.RunSplit(t, dir, nil, "help", "export")
	if !strings.Contains(stdout, "--log-format") {
		t.Errorf("help export does not list --log-format:\n%s", stdout)
	}
}
