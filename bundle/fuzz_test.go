package bundle_test

import (
	"bytes"
	"io"
	"path/filepath"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
)

// FuzzReader feeds arbitrary streams to the reader: it must never panic,
// and must never hand out a blob whose digest it has not checked.
func FuzzReader(f *testing.F) {
	signer := bundletest.Key(f, "site")
	set := bundletest.Standard(f, filepath.Join(f.TempDir(), "src"), signer)
	for _, c := range []bundle.Compression{bundle.CompressionNone, bundle.CompressionZstd, bundle.CompressionAuto} {
		var b bytes.Buffer
		set.WriteBundle(f, &b, signer, c)
		f.Add(b.Bytes())
		f.Add(b.Bytes()[:b.Len()/2])
	}
	f.Add([]byte{})
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd})
	kr := openpgp.EntityList{signer}
	f.Fuzz(func(t *testing.T, data []byte) {
		br, err := bundle.NewReader(bytes.NewReader(data), kr)
		if err != nil {
			return
		}
		defer br.Close()
		for {
			_, rd, err := br.Next()
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, rd); err != nil {
				return
			}
		}
	})
}

// FuzzParseManifest: parsing never panics, and what parses survives a
// marshal/parse round trip unchanged.
func FuzzParseManifest(f *testing.F) {
	signer := bundletest.Key(f, "site")
	set := bundletest.Standard(f, filepath.Join(f.TempDir(), "src"), signer)
	m := set.Manifest(f)
	good, _ := m.Marshal()
	f.Add(good)
	f.Add([]byte(`{"format":2}`))
	f.Add([]byte(`{"format":1,"blobs":[],"catalog":{"providers":[],"modules":[]}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := bundle.ParseManifest(data)
		if err != nil {
			return
		}
		again, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		m2, err := bundle.ParseManifest(again)
		if err != nil {
			t.Fatalf("round trip failed: %v", err)
		}
		third, _ := m2.Marshal()
		if !bytes.Equal(again, third) {
			t.Fatal("marshal is not stable")
		}
	})
}
