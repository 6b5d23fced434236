package harness

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/verify"
)

// ImportStandard imports the standard fixture set into a new store.
func ImportStandard(t *testing.T) (storeDir string, set *bundletest.Set) {
	t.Helper()
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, err := verify.PublicArmor(signer)
	if err != nil {
		t.Fatal(err)
	}
	keyring := filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set = bundletest.Standard(t, filepath.Join(work, "set"), signer)
	bf := filepath.Join(work, "set.bundle")
	set.WriteBundleFile(t, bf, signer, bundle.CompressionZstd)
	storeDir = filepath.Join(work, "store")
	MustRun(t, work, nil, Bin, "import", "--keyring", keyring, "--store", storeDir, bf)
	return storeDir, set
}
