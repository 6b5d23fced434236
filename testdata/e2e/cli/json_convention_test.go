package cli

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestJSONViolations: the checker itself finds what it must.
func TestJSONViolations(t *testing.T) {
	t.Parallel()
	var doc any
	json.Unmarshal([]byte(`{"ok":true,"Checks":{"KeysExpired":null},"blobs_removed":null,"startup":4000000,"took_ms":1.5,"time":"2026-01-01T00:00:00+02:00","list":[{"x":null}]}`), &doc)
	got := strings.Join(harness.JSONViolations("$", doc), "\n")
	for _, w := range []string{"$.Checks: key is not snake_case", "$.Checks.KeysExpired: null", "$.blobs_removed: null", "$.startup: the duration", "$.took_ms: the duration 1.5 is not an integer", "$.time: the time", "$.list[0].x: null"} {
		if !strings.Contains(got, w) {
			t.Errorf("the checker misses %q; it found:\n%s", w, got)
		}
	}
}
