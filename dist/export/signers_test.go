package export

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/verify"
)

// The bundle is signed no earlier than the newest SHA256SUMS signature it
// carries, even with an older SOURCE_DATE_EPOCH (deterministically: the
// same inputs give the same time); a publisher signature from the future
// is refused; an approved key must sign a provider of the export.
func TestSignatures(t *testing.T) {
	signed := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	pub := bundletest.KeyAt(t, "publisher", signed) // its signatures are dated at its creation
	set := bundletest.NewSet()
	set.AddProvider(bundletest.BuildProvider(t, filepath.Join(t.TempDir(), "p"), bundletest.Provider{Host: "registry.terraform.io",
		Namespace: "hashicorp", Type: "random", Version: "3.6.0", Platforms: []string{"linux_amd64"}, Signer: pub}))
	m := set.Manifest(t)
	epoch := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := signed.Add(30 * 24 * time.Hour)
	keys, at, decls, err := signatures(m, set.Files, epoch, now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !at.Equal(signed) || len(decls) != 0 || len(keys) != 1 || keys[0].Fingerprint != verify.Fingerprint(pub) || keys[0].Namespace != "registry.terraform.io/hashicorp" {
		t.Errorf("sign time %v, keys %+v, declarations %+v", at, keys, decls)
	}
	if _, at, _, _ := signatures(m, set.Files, signed.Add(time.Hour), now, nil); !at.Equal(signed.Add(time.Hour)) {
		t.Errorf("a later SOURCE_DATE_EPOCH is kept: %v", at)
	}
	if _, at, _, _ := signatures(m, set.Files, time.Time{}, now, nil); !at.IsZero() {
		t.Errorf("without SOURCE_DATE_EPOCH the bundle is signed now: %v", at)
	}
	_, _, decls, err = signatures(m, set.Files, epoch, now, []string{verify.Fingerprint(pub)})
	if err != nil || len(decls) != 1 || decls[0] != (bundle.PublisherKeyDecl{Namespace: "registry.terraform.io/hashicorp", Fingerprint: verify.Fingerprint(pub)}) {
		t.Errorf("declarations %+v, %v", decls, err)
	}
	if _, _, _, err := signatures(m, set.Files, epoch, now, []string{strings.Repeat("A", 40)}); err == nil || !strings.Contains(err.Error(), "no provider of this export is signed by that key") {
		t.Errorf("an unused approval: %v", err)
	}
	if _, _, _, err := signatures(m, set.Files, epoch, signed.Add(-48*time.Hour), nil); err == nil || !strings.Contains(err.Error(), "in the future") {
		t.Errorf("a SHA256SUMS signature from the future: %v", err)
	}
}
