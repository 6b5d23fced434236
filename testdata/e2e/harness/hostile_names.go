package harness

import (
	"os"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/verify"
)

// OpenBundle opens the bundle at path, checked against keyring, for the
// test to read; it is closed when the test ends.
func OpenBundle(t *testing.T, path, keyring string) *bundle.Reader {
	t.Helper()
	kr, err := verify.ReadKeyringFile(keyring)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	br, err := bundle.NewReader(f, kr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { br.Close() })
	return br
}
