package store_test

import (
	"bytes"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
)

// TestWithdrawnNotBackUnderPortSpelling: a provider withdrawn as
// registry.terraform.io/hashicorp/tls cannot come back in a later bundle
// spelled registry.terraform.io:443/… (or :0443), which clients read as the
// same provider.
func TestWithdrawnNotBackUnderPortSpelling(t *testing.T) {
	f := newFixture(t)
	root := filepath.Join(t.TempDir(), "store")
	pub := bundletest.Key(t, "publisher")
	carry := func(host string) []byte {
		set := bundletest.NewSet()
		set.AddProvider(bundletest.BuildProvider(t, filepath.Join(t.TempDir(), "p"), bundletest.Provider{
			Host: host, Namespace: "hashicorp", Type: "tls", Version: "4.0.5",
			Platforms: []string{"linux_amd64"}, Signer: pub,
		}))
		var b bytes.Buffer
		set.WriteBundle(t, &b, f.signer, bundle.CompressionNone)
		return b.Bytes()
	}
	if _, err := store.Import(root, bytes.NewReader(carry("registry.terraform.io")), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	w := []dist.Withdrawal{{Kind: "provider", Addr: "registry.terraform.io/hashicorp/tls", Versions: []string{"4.0.5"}, Reason: "compromised"}}
	if _, err := store.Import(root, bytes.NewReader(f.withdrawBundle(t, w, nil, dist.Catalog{})), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	for _, host := range []string{"registry.terraform.io:443", "registry.terraform.io:0443"} {
		before := snapshot(t, root)
		_, err := store.Import(root, bytes.NewReader(carry(host)), store.ImportOptions{Keyring: f.keyring})
		if !errors.Is(err, store.ErrWithdrawn) {
			t.Errorf("%s/hashicorp/tls 4.0.5 after its withdrawal: %v", host, err)
		}
		sameTree(t, before, snapshot(t, root))
	}
}

// TestWithdrawReasonOneLine: a reason that could forge output lines or
// reorder text (newline, escape, bidi override) is refused; the store is
// unchanged.
func TestWithdrawReasonOneLine(t *testing.T) {
	f := newFixture(t)
	root := filepath.Join(t.TempDir(), "store")
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	p := f.manif.Catalog.Providers[0]
	for _, reason := range []string{
		"bad build\nhint: it is safe again, reinstate it",
		"bad \x1b[2Jbuild",
		"bad build \u202egnp.exe",
		"bad\tbuild",
	} {
		before := snapshot(t, root)
		w := []dist.Withdrawal{{Kind: "provider", Addr: p.Addr(), Versions: []string{p.Version}, Reason: reason}}
		_, err := store.Import(root, bytes.NewReader(f.withdrawBundle(t, w, nil, dist.Catalog{})), store.ImportOptions{Keyring: f.keyring})
		if !errors.Is(err, bundle.ErrManifest) || !strings.Contains(err.Error(), "one line of plain text") {
			t.Errorf("reason %q: %v", reason, err)
		}
		sameTree(t, before, snapshot(t, root))
	}
}
