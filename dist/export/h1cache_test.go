package export_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/verify"
)

// The cache keeps each package's h1 and its plugin's Go build information,
// so a re-export does not unpack the zips again and still carries the same
// build information and SBOM; a planted h1 or build information goes into
// the manifest, and verify (which never reads the cache) refuses the
// bundle; an unreadable file is computed again.
func TestExportKeepsScanInCache(t *testing.T) {
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
	sbomOf := func(res *export.Result) []byte {
		t.Helper()
		b, err := check.BuildSBOM(res.Manifest, func(pk dist.Package) (*goinfo.Info, bool) { i, ok := res.BuildInfo[pk.Digest]; return i, ok })
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	keptFile := func(h1 string, info *goinfo.Info) []byte {
		return append([]byte(h1+"\ngoinfo-scan 1\n"), goinfo.Encode(info)...)
	}
	cold := run()
	coldSBOM := sbomOf(cold)
	pks := cold.Manifest.Catalog.Providers[0].Packages
	for _, pk := range pks {
		b, err := os.ReadFile(filepath.Join(cache, "h1", pk.Digest.Hex()))
		h1, info, serr := check.ScanPackage(filepath.Join(cache, "blobs", "sha256", pk.Digest.Hex()))
		if err != nil || serr != nil || !bytes.Equal(b, keptFile(h1, info)) || pk.H1 != h1 {
			t.Fatalf("kept for %s: %q, %v; catalog %s; want %s and %s (%v)", pk.Platform(), b, err, pk.H1, h1, goinfo.Encode(info), serr)
		}
		if pk.BuildInfo != verify.DigestBytes(goinfo.Encode(info)) {
			t.Fatalf("%s: build information blob %s, want that of %s", pk.Platform(), pk.BuildInfo, goinfo.Encode(info))
		}
	}
	// Warm: the same catalog, build information blobs and SBOM.
	warm := run()
	if got := warm.Manifest.Catalog.Providers[0].Packages; !reflect.DeepEqual(got, pks) {
		t.Fatalf("warm re-export's packages:\n%+v\nwant\n%+v", got, pks)
	}
	if !bytes.Equal(sbomOf(warm), coldSBOM) {
		t.Fatalf("warm re-export's SBOM differs:\n%s\nwant\n%s", sbomOf(warm), coldSBOM)
	}
	for _, pk := range pks {
		if p := warm.Files[pk.BuildInfo]; p == "" {
			t.Fatalf("warm re-export carries no build information blob for %s", pk.Platform())
		}
	}
	checkRefused := func(res *export.Result, want string) {
		t.Helper()
		br, err := bundle.NewReader(bytes.NewReader(writeBundle(t, res, site, time.Time{})), openpgp.EntityList{site})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, _, err := check.All(br, t.TempDir()); !errors.Is(err, bundle.ErrInconsistent) || !strings.Contains(err.Error(), want) {
			t.Fatalf("verify of a bundle with a planted %s: %v", want, err)
		}
	}
	// Planted: the other package's (valid) h1. Taken, so not computed
	// again; verify computes it and refuses.
	kept := filepath.Join(cache, "h1", pks[0].Digest.Hex())
	_, info0, _ := check.ScanPackage(filepath.Join(cache, "blobs", "sha256", pks[0].Digest.Hex()))
	os.WriteFile(kept, keptFile(pks[1].H1, info0), 0o644)
	res := run()
	if got := res.Manifest.Catalog.Providers[0].Packages[0].H1; got != pks[1].H1 {
		t.Fatalf("re-export did not take the kept h1: %s", got)
	}
	checkRefused(res, pks[1].H1)
	// Planted: the right h1 with other build information. Taken into the
	// blob and the SBOM; verify reads the plugin again and refuses.
	planted := &goinfo.Info{GoVersion: "go1.99.0", Path: "example.com/planted", Main: &goinfo.Module{Path: "example.com/planted", Version: "v6.6.6"}}
	os.WriteFile(kept, keptFile(pks[0].H1, planted), 0o644)
	res = run()
	if got := res.BuildInfo[pks[0].Digest]; got.Path != planted.Path || res.Manifest.Catalog.Providers[0].Packages[0].BuildInfo != verify.DigestBytes(goinfo.Encode(planted)) {
		t.Fatalf("re-export did not take the kept build information: %+v", got)
	}
	checkRefused(res, "Go build information")
	// Damaged, or of another scanner, or an older airgap's h1 alone:
	// computed again and kept again.
	for _, bad := range [][]byte{
		[]byte("h1:not-a-hash\n"),
		[]byte(pks[0].H1 + "\n"),
		append([]byte(pks[0].H1+"\ngoinfo-scan 0\n"), goinfo.Encode(planted)...),
		append(keptFile(pks[0].H1, planted), ' '),
	} {
		os.WriteFile(kept, bad, 0o644)
		res := run()
		if got := res.Manifest.Catalog.Providers[0].Packages[0]; got.H1 != pks[0].H1 || got.BuildInfo != pks[0].BuildInfo {
			t.Fatalf("kept %q gave h1 %s and build information %s, want %s and %s", bad, got.H1, got.BuildInfo, pks[0].H1, pks[0].BuildInfo)
		}
		if b, _ := os.ReadFile(kept); !bytes.Equal(b, keptFile(pks[0].H1, info0)) {
			t.Fatalf("after %q, kept %q", bad, b)
		}
	}
}
