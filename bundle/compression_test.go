package bundle_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/klauspost/compress/zstd"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// realShapedSet is the Standard set plus a provider whose linux_amd64 zip
// holds a real Go executable (this test binary), deflated as registries
// deflate provider binaries, and whose other zip is stored incompressible
// bytes.
func realShapedSet(t *testing.T, signer *openpgp.Entity) (*bundletest.Set, string) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	set := bundletest.Standard(t, filepath.Join(dir, "std"), signer)
	bp := bundletest.BuildProvider(t, filepath.Join(dir, "big"), bundletest.Provider{Host: "registry.terraform.io", Namespace: "hashicorp",
		Type: "big", Version: "1.0.0", Platforms: []string{"linux_amd64", "darwin_arm64"}, Signer: bundletest.Key(t, "publisher"),
		PackageSize: 2 << 20, Binary: exe, BinaryPlatform: "linux_amd64"})
	set.AddProvider(bp)
	return set, bp.Files[dist.ProviderPackageName("big", "1.0.0", "linux", "amd64")]
}

// With auto, text is compressed and zips are stored as raw zstd blocks:
// every compression carries the same tar stream, zstd (one frame) and auto
// (many) decode to it with any zstd decoder, the size stays within 1% of
// zstd's, and each reads back through the reader.
func TestCompressionAuto(t *testing.T) {
	signer := bundletest.Key(t, "site")
	set, deflatedZip := realShapedSet(t, signer)
	out := map[bundle.Compression][]byte{}
	for _, c := range []bundle.Compression{bundle.CompressionNone, bundle.CompressionZstd, bundle.CompressionAuto} {
		var b bytes.Buffer
		set.WriteBundleAt(t, &b, signer, c, time.Unix(1767225600, 0)) // one signature for all
		out[c] = b.Bytes()
	}
	plain := out[bundle.CompressionNone]
	for _, c := range []bundle.Compression{bundle.CompressionZstd, bundle.CompressionAuto} {
		d, err := zstd.NewReader(bytes.NewReader(out[c]))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(d)
		d.Close()
		if err != nil || !bytes.Equal(got, plain) {
			t.Fatalf("%s: does not decode to the plain tar stream (%d bytes, %v; want %d)", c, len(got), err, len(plain))
		}
	}
	auto, zst := len(out[bundle.CompressionAuto]), len(out[bundle.CompressionZstd])
	t.Logf("none %d, zstd %d, auto %d bytes (auto/zstd %.4f)", len(plain), zst, auto, float64(auto)/float64(zst))
	if float64(auto) > 1.01*float64(zst) {
		t.Errorf("auto is %d bytes, more than 1%% over zstd's %d", auto, zst)
	}
	// The deflated zip went in as it is (in raw blocks of 128 KiB, so
	// almost every 16 KiB piece of it is there verbatim); the manifest did
	// not.
	zb, _ := os.ReadFile(deflatedZip)
	pieces, found := 0, 0
	for off := 0; off+16<<10 <= len(zb); off += 16 << 10 {
		pieces++
		if bytes.Contains(out[bundle.CompressionAuto], zb[off:off+16<<10]) {
			found++
		}
	}
	if found < pieces*3/4 {
		t.Errorf("auto stored %d of %d pieces of the deflated zip as they are", found, pieces)
	}
	if bytes.Contains(out[bundle.CompressionAuto], []byte(`"catalog": {`)) {
		t.Error("auto stored the manifest uncompressed")
	}
	for c, b := range out {
		br, err := bundle.NewReader(bytes.NewReader(b), openpgp.EntityList{signer})
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if _, n, _, err := check.All(br, t.TempDir()); err != nil || n != len(set.Files) {
			t.Fatalf("%s: read %d of %d blobs: %v", c, n, len(set.Files), err)
		}
		if br.Compressed() != (c != bundle.CompressionNone) {
			t.Errorf("%s: Compressed() = %v", c, br.Compressed())
		}
		br.Close()
	}
}

// A bundle written before auto existed (the format-1 fixture, one zstd
// frame written by the airgap of its time) still reads and checks.
func TestReadsBundleOfFormat1(t *testing.T) {
	fix := filepath.Join("..", "testdata", "formats", "v1")
	kf, err := os.Open(filepath.Join(fix, "site.pub.asc"))
	if err != nil {
		t.Fatal(err)
	}
	kr, err := openpgp.ReadArmoredKeyRing(kf)
	kf.Close()
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(fix, "site.bundle"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	br, err := bundle.NewReader(f, kr)
	if err != nil {
		t.Fatal(err)
	}
	defer br.Close()
	if br.Manifest().Format != 1 || !br.Compressed() {
		t.Fatalf("fixture: format %d, compressed %v", br.Manifest().Format, br.Compressed())
	}
	rep, n, _, err := check.All(br, t.TempDir())
	if err != nil || n == 0 || rep.H1 == 0 {
		t.Fatalf("format-1 bundle: %d blobs, %+v, %v", n, rep, err)
	}
}

// WriteBlob hashes exactly the bytes it writes (on a goroutine of its own,
// through rotating buffers): a blob of several buffers whose bytes differ
// from its digest in its last buffer only, or that goes on past its size,
// is refused with the digest or size error, and the intact one is
// accepted, in every compression.
func TestWriteBlobHashesWhatItWrites(t *testing.T) {
	signer := bundletest.Key(t, "site")
	set, big := realShapedSet(t, signer)
	data, err := os.ReadFile(big)
	if err != nil {
		t.Fatal(err)
	}
	if len(data) < 2<<20 {
		t.Fatalf("the package is %d bytes: too small to span the copy buffers", len(data))
	}
	d := verify.DigestBytes(data)
	flipped := bytes.Clone(data)
	flipped[len(flipped)-10] ^= 0x01
	for _, c := range []bundle.Compression{bundle.CompressionNone, bundle.CompressionZstd, bundle.CompressionAuto} {
		for _, tc := range []struct {
			what string
			src  []byte
			want error
		}{
			{"a flipped byte", flipped, verify.ErrDigestMismatch},
			{"a longer source", append(bytes.Clone(data), 'x'), verify.ErrSizeMismatch},
			{"the intact bytes", data, nil},
		} {
			bw, err := bundle.NewWriter(io.Discard, set.Manifest(t), signer, bundle.WriterOptions{Compression: c})
			if err != nil {
				t.Fatal(err)
			}
			for _, b := range bw.Remaining() {
				if b.Digest == d {
					break
				}
				f, err := os.Open(set.Files[b.Digest])
				if err != nil {
					t.Fatal(err)
				}
				err = bw.WriteBlob(b.Digest, f)
				f.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			err = bw.WriteBlob(d, bytes.NewReader(tc.src))
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("%s, %s: WriteBlob gave %v, want %v", c, tc.what, err, tc.want)
			}
		}
	}
}
