package dist

import (
	"strings"
	"testing"

	"github.com/airgap/airgap/verify"
)

// A bundle that carries a version again without docs (an older airgap's,
// docs = false, a fetch that failed) keeps the docs the store has; one
// with docs brings them.
func TestMergeKeepsDocs(t *testing.T) {
	d := verify.Digest("sha256:" + strings.Repeat("ab", 32))
	pv := ProviderVersion{Host: "registry.terraform.io", Namespace: "h", Type: "r", Version: "1.0.0", Shasums: "s"}
	have := pv
	have.Docs = &ProviderDocs{Archive: d, Pages: 3, Files: 3, Dir: "docs"}
	for name, next := range map[string]*ProviderDocs{"none": nil, "missing": {Missing: "no tag"}} {
		c := &Catalog{Providers: []ProviderVersion{have}}
		n := pv
		n.Docs = next
		c.Merge(&Catalog{Providers: []ProviderVersion{n}})
		if got := c.Providers[0].Docs; got == nil || got.Archive != d {
			t.Errorf("%s: the store's docs became %+v", name, got)
		}
	}
	c := &Catalog{Providers: []ProviderVersion{pv}}
	n := have
	c.Merge(&Catalog{Providers: []ProviderVersion{n}})
	if got := c.Providers[0].Docs; got == nil || got.Archive != d {
		t.Errorf("docs a bundle brings for a version the store has: %+v", got)
	}
	if Thousands(1482) != "1,482" || Thousands(1234567) != "1,234,567" || Thousands(12) != "12" {
		t.Errorf("Thousands: %s %s", Thousands(1482), Thousands(1234567))
	}
}
