package hostile

import (
	"crypto"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"

	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

func clone(t *testing.T, c dist.Catalog) dist.Catalog {
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	var out dist.Catalog
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestHostileBundles: bundles validly signed by the site key that contradict
// themselves or the store. The real 'airgap verify' and 'airgap import' must
// both refuse each, naming the entry, and leave the store byte for byte as
// it was. Before the consistency check, each of these verified and imported.
func TestHostileBundles(t *testing.T) {
	t.Parallel()
	w := harness.NewHostileWorld(t)
	pub := bundletest.Key(t, "publisher")
	stranger := bundletest.Key(t, "stranger")
	const tf, tofu = "registry.terraform.io", "registry.opentofu.org"
	random := w.Provider(t, "random", tf, "random", "3.6.0", pub, 16<<10, "linux_amd64", "darwin_arm64")
	randomAgain := w.Provider(t, "random-again", tf, "random", "3.6.0", pub, 20<<10, "linux_amd64", "darwin_arm64")
	randomWin := w.Provider(t, "random-win", tf, "random", "3.6.0", pub, 16<<10, "windows_amd64")
	null := w.Provider(t, "null", tofu, "null", "3.2.2", pub, 8<<10, "linux_amd64", "windows_amd64")
	tlsA := w.Provider(t, "tls-a", tf, "tls", "4.0.5", pub, 4<<10, "linux_amd64")
	tlsB := w.Provider(t, "tls-b", tf, "tls", "4.0.5", pub, 6<<10, "linux_amd64")
	vpc := w.Module(t, "vpc", "example", "1.0.0", "# vpc")
	net := w.Module(t, "net", "example", "2.0.0", "# net")
	netOther := w.Module(t, "net", "Example", "2.0.0", "# not net")
	good := dist.Catalog{Providers: []dist.ProviderVersion{random, null}, Modules: []dist.ModuleVersion{vpc}}

	// The store already serves tls 4.0.5 and example/net/aws 2.0.0.
	root := filepath.Join(w.Work, "store")
	seed := w.Write(t, "seed", dist.Catalog{Providers: []dist.ProviderVersion{tlsA}, Modules: []dist.ModuleVersion{net}})
	harness.MustRun(t, w.Work, nil, harness.Bin, "import", "--keyring", w.Keyring, "--store", root, seed)
	before := bundletest.Snapshot(t, root)

	cases := []struct {
		name string
		edit func(c *dist.Catalog)
		want []string // in both verify's and import's message
		// storeOnly: a consistent bundle that only conflicts with the store;
		// verify (which has no store) must pass it.
		storeOnly bool
	}{
		{"duplicate provider version with other packages", func(c *dist.Catalog) {
			c.Providers = append(c.Providers, randomAgain)
		}, []string{"provider registry.terraform.io/hashicorp/random 3.6.0", "listed twice"}, false},
		{"package not in its SHA256SUMS", func(c *dist.Catalog) {
			c.Providers[0].Packages = append(c.Providers[0].Packages, randomWin.Packages[0])
		}, []string{"provider registry.terraform.io/hashicorp/random 3.6.0 windows_amd64", "not listed in its signed SHA256SUMS"}, false},
		{"linux_amd64 entry holding the windows zip", func(c *dist.Catalog) {
			win, _ := c.Providers[1].Package("windows", "amd64")
			lin := &c.Providers[1].Packages[0]
			lin.Digest, lin.Size, lin.H1 = win.Digest, win.Size, win.H1
		}, []string{"provider registry.opentofu.org/hashicorp/null 3.2.2 linux_amd64", "its signed SHA256SUMS says"}, false},
		{"linux_amd64 entry holding the windows zip under its own name", func(c *dist.Catalog) {
			win, _ := c.Providers[1].Package("windows", "amd64")
			lin := &c.Providers[1].Packages[0]
			lin.Filename, lin.Digest, lin.Size, lin.H1 = win.Filename, win.Digest, win.Size, win.H1
		}, []string{"provider registry.opentofu.org/hashicorp/null 3.2.2 linux_amd64", "is not for linux_amd64"}, false},
		{"wrong h1", func(c *dist.Catalog) {
			c.Providers[0].Packages[1].H1 = c.Providers[0].Packages[0].H1
		}, []string{"provider registry.terraform.io/hashicorp/random 3.6.0 linux_amd64", "the package hashes to"}, false},
		{"SHA256SUMS signature not by the carried keys", func(c *dist.Catalog) {
			c.Providers[0].SigningKeys = []dist.SigningKey{{KeyID: verify.KeyID(stranger), ASCIIArmor: bundletest.Armor(t, stranger)}}
		}, []string{"provider registry.terraform.io/hashicorp/random 3.6.0", "does not verify against the keys the bundle carries"}, false},
		{"unmarked re-signature by the site key", func(c *dist.Catalog) {
			c.Providers[1].SigningKeys[0].Source = check.SiteKeySource
		}, []string{"provider registry.opentofu.org/hashicorp/null 3.2.2", "without being marked as re-signed"}, false},
		{"site re-signature claimed for a publisher's signature", func(c *dist.Catalog) {
			c.Providers[1].SiteSigned = true
		}, []string{"provider registry.opentofu.org/hashicorp/null 3.2.2", "not by the key that signed the bundle"}, false},
		{"site re-signature for a host that publishes keys", func(c *dist.Catalog) {
			c.Providers[0].SiteSigned = true
		}, []string{"provider registry.terraform.io/hashicorp/random 3.6.0", "only registry.opentofu.org providers"}, false},
		{"name outside the grammar", func(c *dist.Catalog) {
			c.Providers[0].Namespace = "hashi\x1b[2Jcorp"
		}, []string{`registry.terraform.io/hashi\x1b[2Jcorp/random 3.6.0`, "invalid provider address"}, false},
		{"version that is not semver", func(c *dist.Catalog) {
			c.Modules[0].Version = "1.0.0.0.1"
		}, []string{"registry.terraform.io/example/vpc/aws 1.0.0.0.1", "invalid module address or version"}, false},
		{"duplicate differing only in case", func(c *dist.Catalog) {
			dup := c.Modules[0]
			dup.Namespace, dup.Name, dup.Archive, dup.Size = "Example", "VPC", netOther.Archive, netOther.Size
			c.Modules = append(c.Modules, dup)
		}, []string{"module registry.terraform.io/Example/VPC/aws 1.0.0", "listed twice"}, false},
		{"provider version the store has as another build", func(c *dist.Catalog) {
			c.Providers = append(c.Providers, tlsB)
		}, []string{"provider registry.terraform.io/hashicorp/tls 4.0.5", "differs from the one the store serves"}, true},
		{"module version the store has, in other case and content", func(c *dist.Catalog) {
			c.Modules = append(c.Modules, netOther)
		}, []string{"module registry.terraform.io/Example/net/aws 2.0.0", "differs from the store's"}, true},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cat := clone(t, good)
			tc.edit(&cat)
			path := w.Write(t, "hostile-"+string(rune('a'+i)), cat)
			out, err := harness.CmdRun(t, w.Work, nil, harness.Bin, "verify", "--keyring", w.Keyring, path)
			switch {
			case tc.storeOnly && err != nil:
				t.Errorf("verify refused a bundle that only conflicts with a store: %v\n%s", err, out)
			case !tc.storeOnly:
				if harness.ExitCode(err) != 1 {
					t.Errorf("verify accepted it (exit %d):\n%s", harness.ExitCode(err), out)
				}
				for _, s := range append(tc.want, "hint:") {
					if !strings.Contains(out, s) {
						t.Errorf("verify's message lacks %q:\n%s", s, out)
					}
				}
			}
			out, err = harness.CmdRun(t, w.Work, nil, harness.Bin, "import", "--keyring", w.Keyring, "--store", root, path)
			if harness.ExitCode(err) != 1 {
				t.Errorf("import accepted it (exit %d):\n%s", harness.ExitCode(err), out)
			}
			for _, s := range append(tc.want, "hint:", "the store was not changed") {
				if !strings.Contains(out, s) {
					t.Errorf("import's message lacks %q:\n%s", s, out)
				}
			}
			t.Logf("airgap import says:\n%s", out)
			if strings.ContainsRune(out, 0x1b) {
				t.Errorf("a name from the bundle reached the terminal unescaped:\n%q", out)
			}
			bundletest.SameTree(t, before, bundletest.Snapshot(t, root))
		})
	}

	// The control: the same bundle untampered verifies, says what it
	// checked, and imports.
	path := w.Write(t, "good", clone(t, good))
	out := harness.MustRun(t, w.Work, nil, harness.Bin, "verify", "--keyring", w.Keyring, path)
	if !strings.Contains(out, "consistent: 2 SHA256SUMS signatures verified against the carried keys, 4 packages found in them, 4 h1 hashes recomputed") {
		t.Errorf("verify of the good bundle:\n%s", out)
	}
	harness.MustRun(t, w.Work, nil, harness.Bin, "import", "--keyring", w.Keyring, "--store", root, path)
}

// expiringKey is a real RSA key created at made that expires after life.
func expiringKey(t *testing.T, name string, made time.Time, life time.Duration) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity(name, "", name+"@example.test", &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048,
		DefaultHash: crypto.SHA256, Time: func() time.Time { return made }, KeyLifetimeSecs: uint32(life / time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestExpiredPublisherKey: a publisher key that expired between signing
// and import (as HashiCorp's did on 2026-04-18) does not stop the import —
// the signature is judged as of its creation — and inventory says the key
// has expired since.
func TestExpiredPublisherKey(t *testing.T) {
	t.Parallel()
	w := harness.NewHostileWorld(t)
	made := time.Now().Add(-60 * 24 * time.Hour).Truncate(time.Second)
	old := expiringKey(t, "old publisher", made, 30*24*time.Hour) // expired thirty days ago
	p := w.Provider(t, "old", "registry.terraform.io", "old", "1.0.0", old, 4<<10, "linux_amd64")
	path := w.Write(t, "old", dist.Catalog{Providers: []dist.ProviderVersion{p}})
	expired := made.Add(30 * 24 * time.Hour).UTC().Format("2006-01-02")
	out := harness.MustRun(t, w.Work, nil, harness.Bin, "verify", "--keyring", w.Keyring, path)
	if !strings.Contains(out, "! key expired since: key "+verify.GroupFingerprint(verify.Fingerprint(old))+" (old publisher <old publisher@example.test>) expired on "+expired) {
		t.Errorf("verify does not say the key has expired since:\n%s", out)
	}
	root := filepath.Join(w.Work, "store")
	harness.MustRun(t, w.Work, nil, harness.Bin, "import", "--keyring", w.Keyring, "--store", root, path)
	out = harness.MustRun(t, w.Work, nil, harness.Bin, "inventory", "--store", root)
	if !strings.Contains(out, "signing key "+verify.KeyID(old)+" expired "+expired) {
		t.Errorf("inventory does not say the key has expired since:\n%s", out)
	}
}
