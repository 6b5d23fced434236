package store_test

import (
	"bytes"
	"crypto"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/verify"
)

// TestExpiredSiteKey: the bundle's own signature is judged as of its
// creation too. A site key that expired after it signed the bundle (the
// bundle sat on a shelf, or the offline clock runs ahead) does not stop the
// import; a revoked one does.
func TestExpiredSiteKey(t *testing.T) {
	made := time.Now().Add(-60 * 24 * time.Hour).Truncate(time.Second)
	site, err := openpgp.NewEntity("old site", "", "", &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048,
		DefaultHash: crypto.SHA256, Time: func() time.Time { return made }, KeyLifetimeSecs: 30 * 86400})
	if err != nil {
		t.Fatal(err)
	}
	// Its publisher signed before the bundle was (a bundle cannot carry a
	// signature made after it).
	pub, err := openpgp.NewEntity("old publisher", "", "", &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048,
		DefaultHash: crypto.SHA256, Time: func() time.Time { return made }})
	if err != nil {
		t.Fatal(err)
	}
	set := bundletest.NewSet()
	set.AddProvider(bundletest.BuildProvider(t, filepath.Join(t.TempDir(), "src"), bundletest.Provider{Host: "registry.terraform.io",
		Namespace: "hashicorp", Type: "random", Version: "3.6.0", Platforms: []string{"linux_amd64"}, Signer: pub}))
	var b bytes.Buffer
	set.WriteBundleAt(t, &b, site, bundle.CompressionZstd, made.Add(10*24*time.Hour))
	kr, err := verify.ReadKeyring(bytes.NewReader([]byte(bundletest.Armor(t, site))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Import(filepath.Join(t.TempDir(), "store"), bytes.NewReader(b.Bytes()), store.ImportOptions{Keyring: kr}); err != nil {
		t.Fatalf("a bundle signed while its key was valid: %v", err)
	}
	if err := site.RevokeKey(packet.KeySuperseded, "rotated", nil); err != nil {
		t.Fatal(err)
	}
	kr, err = verify.ReadKeyring(bytes.NewReader([]byte(bundletest.Armor(t, site))))
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "store2")
	if _, err := store.Import(root, bytes.NewReader(b.Bytes()), store.ImportOptions{Keyring: kr}); !errors.Is(err, verify.ErrKeyRevoked) ||
		!strings.Contains(err.Error(), "hint: the site key that signed the bundle has been revoked") {
		t.Fatalf("a bundle signed by a key revoked since: %v", err)
	}
}
