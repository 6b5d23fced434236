package export_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/registrytest"
)

// The cache keeps each package's h1, so a re-export does not unpack the
// zips again; a planted h1 goes into the manifest, and verify refuses the
// bundle; an unreadable one is recomputed.
func TestExportKeepsH1InCache(t *testing.T) {
	in := registrytest.World(t)
	site := bundletest.Key(t, "site")
	cache := t.TempDir()
	spec := writeSpec(t, "platforms = [\"linux_amd64\", \"darwin_arm64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n")
	run := func() *export.Result {
		t.Helper()
		req, err := export.ParseSpec(spec, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := export.Run(context.Background(), req, options(t, in, cache, site))
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	pks := run().Manifest.Catalog.Providers[0].Packages
	for _, pk := range pks {
		b, err := os.ReadFile(filepath.Join(cache, "h1", pk.Digest.Hex()))
		if want, _ := dist.H1(filepath.Join(cache, "blobs", "sha256", pk.Digest.Hex())); err != nil || strings.TrimSpace(string(b)) != want || pk.H1 != want {
			t.Fatalf("kept h1 of %s: %q, %v; catalog %s; want %s", pk.Platform(), b, err, pk.H1, want)
		}
	}
	// Planted: the other package's (valid) h1.
	kept := filepath.Join(cache, "h1", pks[0].Digest.Hex())
	os.WriteFile(kept, []byte(pks[1].H1+"\n"), 0o644)
	res := run()
	if got := res.Manifest.Catalog.Providers[0].Packages[0].H1; got != pks[1].H1 {
		t.Fatalf("re-export did not take the kept h1: %s", got)
	}
	br, err := bundle.NewReader(bytes.NewReader(writeBundle(t, res, site, time.Time{})), openpgp.EntityList{site})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := bundle.CheckAll(br, t.TempDir()); !errors.Is(err, bundle.ErrInconsistent) || !strings.Contains(err.Error(), pks[1].H1) {
		t.Fatalf("verify of a bundle with a planted h1: %v", err)
	}
	// Damaged: recomputed and kept again.
	os.WriteFile(kept, []byte("h1:not-a-hash\n"), 0o644)
	if got := run().Manifest.Catalog.Providers[0].Packages[0].H1; got != pks[0].H1 {
		t.Fatalf("a damaged kept h1 gave %s, want %s", got, pks[0].H1)
	}
	if b, _ := os.ReadFile(kept); strings.TrimSpace(string(b)) != pks[0].H1 {
		t.Fatalf("kept h1 not rewritten: %q", b)
	}
}
