package bundletest

import (
	"archive/tar"
	"bytes"
	"io"
	"os"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/verify"
)

// WriteSignedManifest writes an uncompressed bundle to path whose manifest is
// m exactly as given — not normalized or validated, so it may contradict
// itself the way an attacker or a broken exporter would write it — validly
// signed by signer, followed by m's carried blobs in the order m lists them,
// read from files. It is how tests build hostile bundles that only the
// consistency check can refuse.
func WriteSignedManifest(t testing.TB, path string, m *bundle.Manifest, files map[verify.Digest]string, signer *openpgp.Entity) {
	t.Helper()
	WriteSignedManifestAt(t, path, m, files, signer, time.Time{})
}

// WriteSignedManifestAt is WriteSignedManifest with the signature dated at
// (zero: now).
func WriteSignedManifestAt(t testing.TB, path string, m *bundle.Manifest, files map[verify.Digest]string, signer *openpgp.Entity, at time.Time) {
	t.Helper()
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var sig bytes.Buffer
	if err := verify.SignDetachedAt(&sig, signer, bytes.NewReader(data), at); err != nil {
		t.Fatal(err)
	}
	out, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	tw := tar.NewWriter(out)
	entry := func(name string, size int64, r io.Reader) {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o444}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.Copy(tw, r); err != nil {
			t.Fatal(err)
		}
	}
	entry(bundle.ManifestName, int64(len(data)), bytes.NewReader(data))
	entry(bundle.SignatureName, int64(sig.Len()), &sig)
	for _, b := range m.Carried() {
		f, err := os.Open(files[b.Digest])
		if err != nil {
			t.Fatalf("blob %s: %v", b.Digest.Short(), err)
		}
		entry(bundle.EntryName(b.Digest), b.Size, f)
		f.Close()
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
}
