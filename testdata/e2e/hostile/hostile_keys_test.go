package hostile

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// TestHostilePublisherKeys (finding 3): a bundle validly signed by the site
// key that brings registry.terraform.io/hashicorp/random with SHA256SUMS
// signed by a new key, or signed "in 2099", or is itself signed in 2099, or
// declares a key for a namespace it carries nothing of. Each imported in
// silence before; now verify (against the store's inventory) and import
// refuse each, naming what is wrong, and the store stays as it was.
func TestHostilePublisherKeys(t *testing.T) {
	t.Parallel()
	w := harness.NewHostileWorld(t)
	const tf = "registry.terraform.io"
	pub := bundletest.Key(t, "publisher")
	evil := bundletest.Key(t, "evil publisher")
	future := bundletest.KeyAt(t, "future publisher", time.Date(2099, 1, 1, 0, 0, 0, 0, time.UTC))
	random := w.Provider(t, "random", tf, "random", "3.6.0", pub, 4<<10, "linux_amd64")
	root := filepath.Join(w.Work, "store")
	harness.MustRun(t, w.Work, nil, harness.Bin, "import", "--keyring", w.Keyring, "--store", root, w.WriteAt(t, "seed", dist.Catalog{Providers: []dist.ProviderVersion{random}}, nil, time.Time{}))
	have := filepath.Join(w.Work, "have.json")
	os.WriteFile(have, []byte(harness.MustRunStdout(t, w.Work, "inventory", "--store", root, "--json")), 0o644)
	before := bundletest.Snapshot(t, root)

	newKey := w.Provider(t, "random-evil", tf, "random", "3.6.1", evil, 4<<10, "linux_amd64")
	dated := w.Provider(t, "random-2099", tf, "random", "3.6.2", future, 4<<10, "linux_amd64")
	null := w.Provider(t, "null", tf, "null", "3.2.2", pub, 4<<10, "linux_amd64")
	cases := []struct {
		name   string
		cat    dist.Catalog
		decls  []bundle.PublisherKeyDecl
		at     time.Time
		verify []string // in verify --against's output (exit 4, the forecast refusing, unless failed)
		failed bool     // verify itself fails (not only the import)
		imp    []string // in import's message
	}{
		{name: "new key for a pinned namespace", cat: dist.Catalog{Providers: []dist.ProviderVersion{newKey}},
			verify: []string{"publisher key refused", verify.GroupFingerprint(verify.Fingerprint(evil)), verify.GroupFingerprint(verify.Fingerprint(pub))},
			imp:    []string{"namespace registry.terraform.io/hashicorp", verify.GroupFingerprint(verify.Fingerprint(evil)), "evil publisher", verify.GroupFingerprint(verify.Fingerprint(pub)), "--accept-publisher-key"}},
		{name: "SHA256SUMS signed in 2099", cat: dist.Catalog{Providers: []dist.ProviderVersion{dated}}, failed: true,
			verify: []string{"dated 2099-01-01", "more than a day after this machine's clock"},
			imp:    []string{"dated 2099-01-01"}},
		{name: "bundle signed in 2099", cat: dist.Catalog{Providers: []dist.ProviderVersion{null}}, at: time.Date(2099, 6, 1, 0, 0, 0, 0, time.UTC), failed: true,
			verify: []string{"the bundle's signature is dated 2099-06-01", "clock"},
			imp:    []string{"the bundle's signature is dated 2099-06-01"}},
		{name: "declaration for another namespace", cat: dist.Catalog{Providers: []dist.ProviderVersion{null}}, failed: true,
			decls:  []bundle.PublisherKeyDecl{{Namespace: "registry.terraform.io/victim", Fingerprint: verify.Fingerprint(pub)}},
			verify: []string{"publisher key declaration for registry.terraform.io/victim", "no provider of that namespace"},
			imp:    []string{"publisher key declaration for registry.terraform.io/victim"}},
		{name: "declaration of a key that signs nothing here", cat: dist.Catalog{Providers: []dist.ProviderVersion{newKey}}, failed: true,
			decls:  []bundle.PublisherKeyDecl{{Namespace: "registry.terraform.io/hashicorp", Fingerprint: verify.Fingerprint(future)}},
			verify: []string{"no provider of that namespace in the bundle is signed by it"},
			imp:    []string{"no provider of that namespace in the bundle is signed by it"}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := w.WriteAt(t, fmt.Sprint("hostile-", i), tc.cat, tc.decls, tc.at)
			out, err := harness.CmdRun(t, w.Work, nil, harness.Bin, "verify", "--keyring", w.Keyring, "--against", have, "--strict", path)
			// Verified, but the forecast says the import refuses: 4.
			if tc.failed && harness.ExitCode(err) != 1 || !tc.failed && harness.ExitCode(err) != 4 {
				t.Errorf("verify --strict: exit %d:\n%s", harness.ExitCode(err), out)
			}
			for _, s := range tc.verify {
				if !strings.Contains(out, s) {
					t.Errorf("verify's output lacks %q:\n%s", s, out)
				}
			}
			out, err = harness.CmdRun(t, w.Work, nil, harness.Bin, "import", "--keyring", w.Keyring, "--store", root, path)
			if harness.ExitCode(err) != 1 {
				t.Errorf("import accepted it:\n%s", out)
			}
			for _, s := range append(tc.imp, "the store was not changed") {
				if !strings.Contains(out, s) {
					t.Errorf("import's message lacks %q:\n%s", s, out)
				}
			}
			bundletest.SameTree(t, before, bundletest.Snapshot(t, root))
		})
	}
}
