package harness

import (
	"os"
	"path/filepath"
	"testing"
)

// withStation gives the station a key of its own and the store the
// policy: its import.hcl and the stations' keyring beside it.
func (s *station) WithStation(t *testing.T, policy string) string {
	t.Helper()
	MustRun(t, s.Work, nil, Bin, "keys", "generate", "--out", "k/station", "--name", "Transfer station 1 <station1@site.test>", "--no-passphrase")
	os.MkdirAll(s.Store, 0o755)
	pub, _ := os.ReadFile(filepath.Join(s.Work, "k/station.pub.asc"))
	os.WriteFile(filepath.Join(s.Store, "stations.pub.asc"), pub, 0o644)
	os.WriteFile(filepath.Join(s.Store, "import.hcl"), []byte(policy), 0o644)
	return filepath.Join(s.Work, "k/station.key.asc")
}

// inventory writes the store's 'airgap inventory --json' to NAME.json.
func (s *station) Inventory(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join(s.Work, name+".json")
	os.WriteFile(p, []byte(MustRunStdout(t, s.Work, "inventory", "--store", s.Store, "--json")), 0o644)
	return p
}
