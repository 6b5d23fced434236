package harness

import (
	"os"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
)

// WriteWithdrawBundle writes a bundle, signed by signer, that carries
// nothing and withdraws ws.
func WriteWithdrawBundle(t *testing.T, path string, signer *openpgp.Entity, ws ...dist.Withdrawal) {
	t.Helper()
	WriteCurationBundle(t, path, signer, ws, nil)
}

// WriteCurationBundle writes a signed bundle that only withdraws ws and
// reinstates rs.
func WriteCurationBundle(t *testing.T, path string, signer *openpgp.Entity, ws, rs []dist.Withdrawal) {
	t.Helper()
	wm := &bundle.Manifest{Format: bundle.FormatVersion, Tool: "airgap test",
		Catalog: dist.Catalog{Providers: []dist.ProviderVersion{}, Modules: []dist.ModuleVersion{}}, Withdraw: ws, Reinstate: rs}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	bw, err := bundle.NewWriter(f, wm, signer, bundle.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.WriteFiles(nil); err != nil {
		t.Fatal(err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
}
