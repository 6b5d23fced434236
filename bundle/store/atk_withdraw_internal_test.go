package store

import (
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// TestWithdrawSaysBytesStillServed: withdrawing
// registry.terraform.io/hashicorp/aws 5.61.0 leaves the same zip served as
// registry.opentofu.org/hashicorp/aws 5.61.0 (byte-identical republication):
// the report says so, naming the other address, so the security team does
// not believe the bytes are out of reach.
func TestWithdrawSaysBytesStillServed(t *testing.T) {
	zip := verify.DigestBytes([]byte("the same zip"))
	pv := func(host string) dist.ProviderVersion {
		return dist.ProviderVersion{Host: host, Namespace: "hashicorp", Type: "aws", Version: "5.61.0",
			Packages: []dist.Package{{OS: "linux", Arch: "amd64", Digest: zip}}}
	}
	ix := &Index{Catalog: dist.Catalog{Providers: []dist.ProviderVersion{pv("registry.opentofu.org"), pv("registry.terraform.io")}}}
	m := &bundle.Manifest{Withdraw: []dist.Withdrawal{{Kind: dist.KindProvider, Addr: "registry.terraform.io/hashicorp/aws", Versions: []string{"5.61.0"}, Reason: "compromised"}}}
	withdrew, _ := applyWithdrawals(ix, m, verify.DigestBytes([]byte("b")), verify.Signer{}, time.Unix(0, 0))
	if len(withdrew) != 1 || !strings.Contains(withdrew[0], "still served as provider registry.opentofu.org/hashicorp/aws 5.61.0") {
		t.Errorf("withdrew = %q", withdrew)
	}
	if len(ix.Catalog.Providers) != 1 || ix.Catalog.Providers[0].Host != "registry.opentofu.org" {
		t.Errorf("catalog = %+v", ix.Catalog.Providers)
	}
}
