package check_test

import (
	"archive/tar"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/docs"
	"github.com/airgap/airgap/verify"
)

// docsBlob packs files as a docs tar into dir and returns its digest and
// record.
func docsBlob(t *testing.T, set *bundletest.Set, dir string, files map[string]string) *dist.ProviderDocs {
	t.Helper()
	src := t.TempDir()
	for n, c := range files {
		bundletest.WriteFile(t, filepath.Join(src, filepath.FromSlash(n)), []byte(c))
	}
	r, _ := os.OpenRoot(src)
	defer r.Close()
	var b bytes.Buffer
	st, err := docs.Pack(r, &b, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	d := addRaw(t, set, dir, b.Bytes(), dist.RoleProviderDocs)
	return &dist.ProviderDocs{Source: "https://github.com/hashicorp/terraform-provider-random", Ref: "v3.6.0", Dir: "docs", Archive: d, Pages: st.Pages, Files: st.Files, Bytes: st.Bytes}
}

func addRaw(t *testing.T, set *bundletest.Set, dir string, b []byte, role string) verify.Digest {
	d := verify.DigestBytes(b)
	p := filepath.Join(dir, d.Hex())
	os.WriteFile(p, b, 0o644)
	set.Files[d], set.Roles[d] = p, role
	return d
}

// The Checker reads docs blobs: a docs tar Pack wrote with the counts the
// catalog states passes; other counts, a tar with a link or a name that is
// not a page, a module document that does not parse, and docs in a
// format-2 manifest are refused.
func TestCheckDocs(t *testing.T) {
	site := bundletest.Key(t, "site")
	bp := bundletest.BuildProvider(t, t.TempDir(), bundletest.Provider{Host: "registry.terraform.io", Namespace: "hashicorp", Type: "random",
		Version: "3.6.0", Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher")})
	dir := t.TempDir()
	build := func(edit func(set *bundletest.Set, pv *dist.ProviderVersion)) (*bundletest.Set, dist.Catalog) {
		set := bundletest.NewSet()
		set.AddProvider(bp)
		pv := bp.ProviderVersion
		pv.Docs = docsBlob(t, set, dir, map[string]string{"index.md": "# random\n", "resources/id.md": "# random_id\n"})
		edit(set, &pv)
		return set, dist.Catalog{Providers: []dist.ProviderVersion{pv}}
	}
	set, cat := build(func(*bundletest.Set, *dist.ProviderVersion) {})
	if err := checkCatalog(t, set, cat, site, openpgp.EntityList{site}); err != nil {
		t.Fatalf("a good docs tar: %v", err)
	}
	hostile := func(hs ...*tar.Header) []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		for _, h := range hs {
			tw.WriteHeader(h)
			tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
		}
		tw.Close()
		return b.Bytes()
	}
	for name, c := range map[string]struct {
		edit func(*bundletest.Set, *dist.ProviderVersion)
		want string
	}{
		"other counts": {func(_ *bundletest.Set, pv *dist.ProviderVersion) { pv.Docs.Pages = 1 }, "the catalog says 1 pages"},
		"a link": {func(set *bundletest.Set, pv *dist.ProviderVersion) {
			delete(set.Files, pv.Docs.Archive)
			pv.Docs.Archive = addRaw(t, set, dir, hostile(&tar.Header{Name: "a.md", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd", Mode: 0o644}), dist.RoleProviderDocs)
		}, "not a regular file"},
		"a script": {func(set *bundletest.Set, pv *dist.ProviderVersion) {
			delete(set.Files, pv.Docs.Archive)
			pv.Docs.Archive = addRaw(t, set, dir, hostile(&tar.Header{Name: "run.sh", Typeflag: tar.TypeReg, Mode: 0o644, Size: 2, Format: tar.FormatUSTAR}), dist.RoleProviderDocs)
			pv.Docs.Pages, pv.Docs.Files, pv.Docs.Bytes = 0, 1, 2
		}, "neither a markdown page nor an image"},
	} {
		t.Run(name, func(t *testing.T) {
			set, cat := build(c.edit)
			if err := checkCatalog(t, set, cat, site, openpgp.EntityList{site}); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	// A format-2 manifest cannot carry docs.
	set, cat = build(func(*bundletest.Set, *dist.ProviderVersion) {})
	set.Catalog = cat
	m := set.Manifest(t)
	m.Format = 2
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "only format 3 has") {
		t.Errorf("format 2 with docs: %v", err)
	}
	// Missing docs are a record without a blob.
	m.Format = bundle.FormatVersion
	m.Catalog.Providers[0].Docs = &dist.ProviderDocs{Missing: "no tag v3.6.0"}
	m.Blobs = nil
	for d, r := range set.Roles {
		if r != dist.RoleProviderDocs {
			fi, _ := os.Stat(set.Files[d])
			m.Blobs = append(m.Blobs, bundle.Blob{Digest: d, Size: fi.Size(), Role: r})
		}
	}
	m.Normalize()
	if err := m.Validate(); err != nil {
		t.Errorf("missing docs: %v", err)
	}
}
