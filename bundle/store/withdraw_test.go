package store_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
)

// withdrawBundle is a signed bundle that carries nothing and withdraws ws;
// the manifest is written as given (not validated), as a hostile exporter
// could.
func (f *fixture) withdrawBundle(t *testing.T, ws, rs []dist.Withdrawal, cat dist.Catalog) []byte {
	t.Helper()
	if cat.Providers == nil {
		cat.Providers = []dist.ProviderVersion{}
	}
	if cat.Modules == nil {
		cat.Modules = []dist.ModuleVersion{}
	}
	m := &bundle.Manifest{Format: bundle.FormatVersion, Tool: "test", Catalog: cat, Withdraw: ws, Reinstate: rs}
	p := filepath.Join(t.TempDir(), "w.bundle")
	bundletest.WriteSignedManifest(t, p, m, nil, f.signer)
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestWithdrawHostileAndOrder(t *testing.T) {
	f := newFixture(t)
	root := filepath.Join(t.TempDir(), "store")
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	rnd := f.manif.Catalog.Providers[0] // a provider the store has
	before := snapshot(t, root)
	for name, ws := range map[string][]dist.Withdrawal{
		"no reason":     {{Kind: "provider", Addr: rnd.Addr(), Versions: []string{rnd.Version}}},
		"bad kind":      {{Kind: "thing", Addr: rnd.Addr(), Versions: []string{rnd.Version}, Reason: "x"}},
		"short address": {{Kind: "provider", Addr: "hashicorp/random", Versions: []string{rnd.Version}, Reason: "x"}},
		"constraint":    {{Kind: "provider", Addr: rnd.Addr(), Versions: []string{">= 1.0"}, Reason: "x"}},
		"blank reason":  {{Kind: "provider", Addr: rnd.Addr(), Versions: []string{rnd.Version}, Reason: " \n\t "}},
		"too many":      {{Kind: "provider", Addr: rnd.Addr(), Versions: manyVersions(dist.MaxWithdrawals + 1), Reason: "x"}},
	} {
		_, err := store.Import(root, bytes.NewReader(f.withdrawBundle(t, ws, nil, dist.Catalog{})), store.ImportOptions{Keyring: f.keyring})
		if err == nil || !errors.Is(err, bundle.ErrManifest) || !strings.Contains(err.Error(), "the store was not changed") {
			t.Errorf("%s: %v", name, err)
		}
		sameTree(t, before, snapshot(t, root))
	}

	// A valid withdrawal, and the re-import refused naming it.
	w := []dist.Withdrawal{{Kind: "provider", Addr: rnd.Addr(), Versions: []string{rnd.Version}, Reason: "bad build"}}
	res, err := store.Import(root, bytes.NewReader(f.withdrawBundle(t, w, nil, dist.Catalog{})), store.ImportOptions{Keyring: f.keyring})
	if err != nil || len(res.Withdrew) != 1 {
		t.Fatalf("withdrawal: %v %+v", err, res)
	}
	inv, _ := store.LoadInventory(root)
	if len(inv.Withdrawn) != 1 || inv.Withdrawn[0].Reason != "bad build" || inv.Withdrawn[0].Signer.Fingerprint == "" {
		t.Errorf("withdrawn = %+v", inv.Withdrawn)
	}
	for _, p := range inv.Catalog.Providers {
		if p.Key() == rnd.Key() {
			t.Error("the withdrawn version is still in the catalog")
		}
	}
	before = snapshot(t, root)
	_, err = store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring})
	if !errors.Is(err, store.ErrWithdrawn) || !strings.Contains(err.Error(), "bad build") {
		t.Errorf("re-import: %v", err)
	}
	sameTree(t, before, snapshot(t, root))
	// The same withdrawal again changes nothing.
	if res, err := store.Import(root, bytes.NewReader(f.withdrawBundle(t, w, nil, dist.Catalog{})), store.ImportOptions{Keyring: f.keyring}); err != nil || !res.Unchanged {
		t.Errorf("repeated withdrawal: %v %+v", err, res)
	}
}

func manyVersions(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "1.0." + strconv.Itoa(i)
	}
	return out
}
