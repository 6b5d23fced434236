package ops

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestObjectStoreReplicaStartLog: a bucket replica says "the store is
// empty" at start only when the bucket holds no index: over an imported
// store it logs the catalog it serves instead.
func TestObjectStoreReplicaStartLog(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	root, keyring, _ := harness.OpsStore(t)
	work := filepath.Dir(root)
	empty, _ := startS3Replica(t, s, s.Addr("empty"))
	if !strings.Contains(empty.Logs.String(), "the store is empty") {
		t.Errorf("a replica over a prefix with no index does not say the store is empty:\n%s", empty.Logs.String())
	}
	addr := s.Addr("site")
	harness.MustRun(t, work, s.Env(), harness.Bin, "import", "--keyring", keyring, "--store", addr, filepath.Join(work, "site.bundle"))
	r, _ := startS3Replica(t, s, addr)
	logs := r.Logs.String()
	if strings.Contains(logs, "the store is empty") || !strings.Contains(logs, "msg=serving") || strings.Contains(logs, "provider_versions=0 ") {
		t.Errorf("a replica over an imported store:\n%s", logs)
	}
}
