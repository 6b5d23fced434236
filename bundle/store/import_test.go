package store_test

import (
	"archive/tar"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
	"github.com/klauspost/compress/zstd"
)

func snapshot(t *testing.T, root string) map[string]string { return bundletest.Snapshot(t, root) }

func sameTree(t *testing.T, before, after map[string]string) { bundletest.SameTree(t, before, after) }

type entry struct {
	hdr  tar.Header
	data []byte
}

func readEntries(t *testing.T, b []byte) []entry {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	var out []entry
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		d, _ := io.ReadAll(tr)
		out = append(out, entry{*h, d})
	}
}

func writeEntries(t *testing.T, es []entry) []byte {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for _, e := range es {
		h := e.hdr
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		tw.Write(e.data)
	}
	tw.Close()
	return b.Bytes()
}

func compress(t *testing.T, b []byte) []byte {
	var out bytes.Buffer
	zw, _ := zstd.NewWriter(&out)
	zw.Write(b)
	zw.Close()
	return out.Bytes()
}

type fixture struct {
	dir     string
	signer  *openpgp.Entity
	keyring openpgp.EntityList
	good    []byte // uncompressed good bundle
	manif   *bundle.Manifest
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	dir := t.TempDir()
	signer := bundletest.Key(t, "site")
	set := bundletest.Standard(t, filepath.Join(dir, "src"), signer)
	var b bytes.Buffer
	m := set.WriteBundle(t, &b, signer, bundle.CompressionNone)
	return &fixture{dir: dir, signer: signer, keyring: openpgp.EntityList{signer}, good: b.Bytes(), manif: m}
}

// seededStore returns a store that already holds one other bundle.
func (f *fixture) seededStore(t *testing.T) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "store")
	set := bundletest.NewSet()
	set.AddProvider(bundletest.BuildProvider(t, filepath.Join(t.TempDir(), "p"), bundletest.Provider{
		Host: "registry.terraform.io", Namespace: "hashicorp", Type: "tls", Version: "4.0.5",
		Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"),
	}))
	var b bytes.Buffer
	set.WriteBundle(t, &b, f.signer, bundle.CompressionZstd)
	if _, err := store.Import(root, &b, store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestImportRoundTripAndIdempotent(t *testing.T) {
	f := newFixture(t)
	root := f.seededStore(t)
	for _, comp := range []string{"none", "zstd"} {
		data := f.good
		if comp == "zstd" {
			data = compress(t, f.good)
		}
		res, err := store.Import(root, bytes.NewReader(data), store.ImportOptions{Keyring: f.keyring})
		if err != nil {
			t.Fatal(err)
		}
		if comp == "none" {
			if res.Unchanged || res.BlobsAdded != len(f.manif.Blobs) || len(res.Added) != 3 {
				t.Fatalf("first import: %+v", res)
			}
		} else if !res.Unchanged {
			t.Fatalf("re-import should change nothing: %+v", res)
		}
	}
	before := snapshot(t, root)
	res, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring})
	if err != nil || !res.Unchanged {
		t.Fatalf("re-import: %+v %v", res, err)
	}
	sameTree(t, before, snapshot(t, root))

	st, err := store.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	cat := st.Catalog()
	if len(cat.Providers) != 3 || len(cat.Modules) != 1 || len(st.Index().Imports) != 2 {
		t.Fatalf("catalog: %d providers, %d modules, %d imports", len(cat.Providers), len(cat.Modules), len(st.Index().Imports))
	}
	for d := range cat.Blobs() {
		fi, err := os.Stat(store.BlobPath(root, d))
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o444 {
			t.Errorf("blob %s mode %v, want 0444", d.Short(), fi.Mode())
		}
		if got := bundletest.FileDigest(t, store.BlobPath(root, d)); got != d {
			t.Errorf("blob %s holds %s", d, got)
		}
	}
}

func TestImportRefusesBadBundles(t *testing.T) {
	f := newFixture(t)
	es := readEntries(t, f.good)
	if len(es) < 5 {
		t.Fatalf("fixture has %d entries", len(es))
	}
	other := bundletest.Key(t, "stranger")
	modify := func(fn func([]entry) []entry) []byte {
		cp := make([]entry, len(es))
		for i, e := range es {
			cp[i] = entry{e.hdr, append([]byte(nil), e.data...)}
		}
		return writeEntries(t, fn(cp))
	}
	flip := func(b []byte, off int) []byte {
		c := append([]byte(nil), b...)
		c[off] ^= 0x40
		return c
	}
	// The whole blob, not its first bytes: a SHA256SUMS blob begins with a
	// digest the manifest also names, and the flip then landed elsewhere.
	blobOff := bytes.Index(f.good, es[3].data) + len(es[3].data)/2
	manOff := bytes.Index(f.good, []byte(`"digest": "sha256:`)) + 20
	sigOff := bytes.Index(f.good, es[1].data) + len(es[1].data)/2
	var otherSig bytes.Buffer
	verify.SignDetached(&otherSig, other, bytes.NewReader(es[0].data))
	hugeManifest := func() []byte {
		var b bytes.Buffer
		tw := tar.NewWriter(&b)
		tw.WriteHeader(&tar.Header{Name: bundle.ManifestName, Size: 1 << 30, Mode: 0o444, Typeflag: tar.TypeReg})
		tw.Write(make([]byte, 4096))
		return b.Bytes()
	}
	zstdBomb := func() []byte {
		var out bytes.Buffer
		zw, _ := zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedFastest))
		var tb bytes.Buffer
		tw := tar.NewWriter(&tb)
		tw.WriteHeader(&tar.Header{Name: bundle.ManifestName, Size: bundle.MaxManifestSize - 1, Mode: 0o444, Typeflag: tar.TypeReg})
		zw.Write(tb.Bytes())
		zero := make([]byte, 1<<20)
		for i := 0; i < 256; i++ { // 256 MiB of zeros, a few KiB compressed
			zw.Write(zero)
		}
		zw.Close()
		return out.Bytes()
	}
	insert := func(h tar.Header, data []byte) []byte {
		return modify(func(e []entry) []entry {
			return append(e[:3:3], append([]entry{{h, data}}, e[3:]...)...)
		})
	}
	cases := []struct {
		name string
		data []byte
		want string
		is   error
	}{
		{"flipped blob byte", flip(f.good, blobOff), "digest mismatch", verify.ErrDigestMismatch},
		{"flipped manifest byte", flip(f.good, manOff), "bad signature", verify.ErrBadSignature},
		{"flipped signature byte", flip(f.good, sigOff), "manifest signature", nil},
		{"truncated at 100", f.good[:100], "truncated", bundle.ErrTruncated},
		{"truncated in manifest", f.good[:len(es[0].data)/2+512], "truncated", bundle.ErrTruncated},
		{"truncated in blob", f.good[:blobOff], "truncated", bundle.ErrTruncated},
		{"truncated at a third", f.good[:len(f.good)/3], "truncated", bundle.ErrTruncated},
		{"truncated before end marker", f.good[:len(f.good)-1024], "end-of-archive marker", bundle.ErrTruncated},
		{"truncated zstd", compress(t, f.good)[:len(compress(t, f.good))*2/3], "", nil},
		{"empty file", nil, "empty", bundle.ErrTruncated},
		{"extra entry", modify(func(e []entry) []entry {
			return append(e, entry{tar.Header{Name: "extra.txt", Size: 3, Mode: 0o444, Typeflag: tar.TypeReg}, []byte("hi\n")})
		}), "extra entry", bundle.ErrFormat},
		{"missing blob", modify(func(e []entry) []entry { return append(e[:3:3], e[4:]...) }), "missing or out of order", bundle.ErrFormat},
		{"missing last blob", modify(func(e []entry) []entry { return e[:len(e)-1] }), "missing", bundle.ErrTruncated},
		{"duplicate blob", modify(func(e []entry) []entry { return append(e[:4:4], append([]entry{e[3]}, e[4:]...)...) }), "twice", bundle.ErrFormat},
		{"dotdot entry", insert(tar.Header{Name: "../x", Size: 1, Mode: 0o644, Typeflag: tar.TypeReg}, []byte("x")), "unsafe entry name", bundle.ErrFormat},
		{"absolute entry", insert(tar.Header{Name: "/etc/x", Size: 1, Mode: 0o644, Typeflag: tar.TypeReg}, []byte("x")), "unsafe entry name", bundle.ErrFormat},
		{"symlink", insert(tar.Header{Name: "blobs/sha256/link", Linkname: "/etc/passwd", Mode: 0o777, Typeflag: tar.TypeSymlink}, nil), "is a link", bundle.ErrFormat},
		{"hardlink", insert(tar.Header{Name: "blobs/sha256/hard", Linkname: "/etc/passwd", Mode: 0o644, Typeflag: tar.TypeLink}, nil), "is a link", bundle.ErrFormat},
		{"device", insert(tar.Header{Name: "blobs/sha256/dev", Mode: 0o644, Typeflag: tar.TypeChar, Devmajor: 1, Devminor: 3}, nil), "device", bundle.ErrFormat},
		{"signed by another key", modify(func(e []entry) []entry {
			e[1].data = otherSig.Bytes()
			e[1].hdr.Size = int64(otherSig.Len())
			return e
		}), "not in the keyring", verify.ErrUnknownSigner},
		{"unsigned", modify(func(e []entry) []entry { return append(e[:1:1], e[2:]...) }), "not signed", verify.ErrUnsigned},
		{"absurd manifest", hugeManifest(), "over the", bundle.ErrFormat},
		{"zstd bomb", zstdBomb(), "", nil},
	}
	root := f.seededStore(t)
	before := snapshot(t, root)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := store.Import(root, bytes.NewReader(c.data), store.ImportOptions{Keyring: f.keyring})
			if err == nil {
				t.Fatalf("import accepted a bad bundle: %+v", res)
			}
			if c.want != "" && !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not say %q", err, c.want)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q is not %v", err, c.is)
			}
			sameTree(t, before, snapshot(t, root))
		})
	}
}

func TestDeltaNeedsBase(t *testing.T) {
	f := newFixture(t)
	m := *f.manif
	m.Delta = &bundle.Delta{Base: "sha256:" + strings.Repeat("ab", 32), BaseBundles: []string{"base-2026-10.bundle"}}
	m.Blobs = append([]bundle.Blob(nil), f.manif.Blobs...)
	for i := range m.Blobs {
		if m.Blobs[i].Role == dist.RoleProviderPackage {
			m.Blobs[i].Omitted = true
			break
		}
	}
	var b bytes.Buffer
	bw, err := bundle.NewWriter(&b, &m, f.signer, bundle.WriterOptions{Compression: bundle.CompressionNone})
	if err != nil {
		t.Fatal(err)
	}
	br, err := bundle.NewReader(bytes.NewReader(f.good), f.keyring)
	if err != nil {
		t.Fatal(err)
	}
	for {
		blob, rd, err := br.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if len(bw.Remaining()) > 0 && bw.Remaining()[0].Digest == blob.Digest {
			if err := bw.WriteBlob(blob.Digest, rd); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	root := f.seededStore(t)
	before := snapshot(t, root)
	_, err = store.Import(root, bytes.NewReader(b.Bytes()), store.ImportOptions{Keyring: f.keyring})
	if !errors.Is(err, store.ErrBlobMissing) || !strings.Contains(err.Error(), "base-2026-10.bundle") {
		t.Fatalf("delta into a store without its base: %v", err)
	}
	sameTree(t, before, snapshot(t, root))
	// With the base imported, the delta applies.
	if _, err := store.Import(root, bytes.NewReader(f.good), store.ImportOptions{Keyring: f.keyring}); err != nil {
		t.Fatal(err)
	}
	res, err := store.Import(root, bytes.NewReader(b.Bytes()), store.ImportOptions{Keyring: f.keyring})
	if err != nil || !res.Delta {
		t.Fatalf("delta after base: %+v %v", res, err)
	}
}

func TestDeterministicBundle(t *testing.T) {
	signer := bundletest.Key(t, "site")
	at := time.Unix(1767225600, 0)
	for _, comp := range []bundle.Compression{bundle.CompressionNone, bundle.CompressionZstd, bundle.CompressionAuto} {
		// Two sets built independently from the same inputs.
		var out [2]bytes.Buffer
		for i := range out {
			set := bundletest.Standard(t, t.TempDir(), signer)
			set.WriteBundleAt(t, &out[i], signer, comp, at)
		}
		if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
			t.Fatalf("%s: same inputs gave different bundles", comp)
		}
		if comp != bundle.CompressionNone {
			continue
		}
		es := readEntries(t, out[0].Bytes())
		if es[0].hdr.ModTime.Unix() != at.Unix() || es[2].hdr.Mode != 0o444 || es[2].hdr.Uid != 0 || es[2].hdr.Uname != "" {
			t.Fatalf("tar headers not fixed: %+v", es[2].hdr)
		}
	}
}
