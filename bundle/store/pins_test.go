package store_test

import (
	"bytes"
	"crypto"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// pinWorld builds providers signed by named keys and imports bundles of
// them with the pins policy, as 'airgap import' does.
type pinWorld struct {
	t    *testing.T
	dir  string
	site *openpgp.Entity
	kr   openpgp.EntityList
	root string
	n    int
}

func newPinWorld(t *testing.T) *pinWorld {
	site := bundletest.Key(t, "site")
	kr, err := verify.ReadKeyring(strings.NewReader(bundletest.Armor(t, site)))
	if err != nil {
		t.Fatal(err)
	}
	return &pinWorld{t: t, dir: t.TempDir(), site: site, kr: kr, root: filepath.Join(t.TempDir(), "store")}
}

func (w *pinWorld) provider(host, ns, typ, version string, signer *openpgp.Entity, site bool) *bundletest.BuiltProvider {
	w.n++
	return bundletest.BuildProvider(w.t, filepath.Join(w.dir, fmt.Sprint(w.n)), bundletest.Provider{Host: host, Namespace: ns, Type: typ,
		Version: version, Platforms: []string{"linux_amd64"}, Signer: signer, SiteSigned: site})
}

func (w *pinWorld) bundle(decls []bundle.PublisherKeyDecl, ps ...*bundletest.BuiltProvider) []byte {
	s := bundletest.NewSet()
	for _, p := range ps {
		s.AddProvider(p)
	}
	s.PublisherKeys = decls
	var b bytes.Buffer
	s.WriteBundle(w.t, &b, w.site, bundle.CompressionNone)
	return b.Bytes()
}

func (w *pinWorld) importWith(b []byte, kp *store.KeyPins) (*store.ImportResult, error) {
	return store.Import(w.root, bytes.NewReader(b), store.ImportOptions{Keyring: w.kr, Policies: []store.Policy{kp}})
}

func (w *pinWorld) history() []dist.NamespaceKeys {
	inv, err := store.LoadInventory(w.root)
	if err != nil {
		w.t.Fatal(err)
	}
	return inv.PublisherKeys
}

// TestPublisherKeyPins: the first key of a namespace is pinned (trust on
// first use); a provider of that namespace signed by another key is
// refused, naming the namespace and both keys, and the store is unchanged;
// the bundle's signed declaration or --accept-publisher-key approves it; a
// key re-published with a later expiry is the same key; another namespace
// is not affected.
func TestPublisherKeyPins(t *testing.T) {
	w := newPinWorld(t)
	old, rotated := bundletest.Key(t, "publisher"), bundletest.Key(t, "rotated publisher")
	const tf = "registry.terraform.io"
	kp := &store.KeyPins{}
	if _, err := w.importWith(w.bundle(nil, w.provider(tf, "hashicorp", "random", "3.6.0", old, false)), kp); err != nil {
		t.Fatal(err)
	}
	h := w.history()
	if len(h) != 1 || h[0].Namespace != "registry.terraform.io/hashicorp" || len(h[0].Keys) != 1 || h[0].Keys[0].Fingerprint != verify.Fingerprint(old) || h[0].Keys[0].How != dist.PinFirstUse {
		t.Fatalf("first use not pinned: %+v", h)
	}

	newKey := w.bundle(nil, w.provider(tf, "hashicorp", "random", "3.6.1", rotated, false))
	before := snapshot(t, w.root)
	_, err := w.importWith(newKey, &store.KeyPins{})
	if !errors.Is(err, store.ErrPublisherKey) {
		t.Fatalf("a new key for a pinned namespace: %v", err)
	}
	for _, s := range []string{"registry.terraform.io/hashicorp", verify.GroupFingerprint(verify.Fingerprint(rotated)), "rotated publisher", verify.GroupFingerprint(verify.Fingerprint(old)),
		"publisher@example.test", "--accept-publisher-key '" + verify.GroupFingerprint(verify.Fingerprint(rotated)) + "'", "the store was not changed"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("the refusal lacks %q:\n%v", s, err)
		}
	}
	sameTree(t, before, snapshot(t, w.root))

	// An --accept-publisher-key that signs nothing in the bundle is refused.
	if _, err := w.importWith(newKey, &store.KeyPins{Accept: []string{verify.Fingerprint(w.site)}}); err == nil || !strings.Contains(err.Error(), "no provider of the bundle is signed by that key") {
		t.Fatalf("an unused --accept-publisher-key: %v", err)
	}
	// Approved at import.
	kp = &store.KeyPins{Accept: []string{verify.Fingerprint(rotated)}}
	res, err := w.importWith(newKey, kp)
	if err != nil {
		t.Fatal(err)
	}
	if p := store.PinnedBy(kp.Decisions); len(p) != 1 || p[0].How != dist.PinOperator || p[0].Bundle != res.Bundle {
		t.Errorf("pinned: %+v", p)
	}
	if h := w.history(); len(h[0].Keys) != 2 {
		t.Errorf("history after approval: %+v", h)
	}
	// Both keys are the namespace's now.
	if _, err := w.importWith(w.bundle(nil, w.provider(tf, "hashicorp", "random", "3.5.0", old, false)), &store.KeyPins{}); err != nil {
		t.Errorf("the old key after the rotation: %v", err)
	}

	// Declared by the bundle (signed by the site key): accepted.
	third := bundletest.Key(t, "third publisher")
	decl := []bundle.PublisherKeyDecl{{Namespace: "registry.terraform.io/hashicorp", Fingerprint: verify.Fingerprint(third)}}
	kp = &store.KeyPins{}
	if _, err := w.importWith(w.bundle(decl, w.provider(tf, "hashicorp", "random", "3.7.0", third, false)), kp); err != nil {
		t.Fatalf("a declared key: %v", err)
	}
	if p := store.PinnedBy(kp.Decisions); len(p) != 1 || p[0].How != dist.PinDeclared {
		t.Errorf("declared key pinned as %+v", p)
	}
	// Another namespace is a first use of its own.
	if _, err := w.importWith(w.bundle(nil, w.provider(tf, "example", "thing", "1.0.0", rotated, false)), &store.KeyPins{}); err != nil {
		t.Errorf("another namespace: %v", err)
	}
	// One new key for two pinned namespaces: the hint names it once, with
	// both namespaces.
	fourth := bundletest.Key(t, "fourth publisher")
	fp4 := verify.GroupFingerprint(verify.Fingerprint(fourth))
	_, err = w.importWith(w.bundle(nil, w.provider(tf, "hashicorp", "random", "3.8.0", fourth, false), w.provider(tf, "example", "thing", "1.1.0", fourth, false)), &store.KeyPins{})
	if err == nil {
		t.Fatal("a new key for two pinned namespaces was accepted")
	}
	_, hint, _ := strings.Cut(err.Error(), "\nhint: ")
	if strings.Count(hint, fp4) != 2 || strings.Count(hint, "--accept-publisher-key '"+fp4+"'") != 1 ||
		!strings.Contains(hint, fp4+" for registry.terraform.io/hashicorp, registry.terraform.io/example;") && !strings.Contains(hint, fp4+" for registry.terraform.io/example, registry.terraform.io/hashicorp;") {
		t.Errorf("the hint for one key new in two namespaces:\n%s", hint)
	}
}

// A declaration must be needed by a provider of the bundle: one for
// another namespace (or a key that signs nothing) is refused by the check
// itself, so a bundle cannot pre-approve keys.
func TestPublisherKeyDeclarationMustMatch(t *testing.T) {
	w := newPinWorld(t)
	pub, evil := bundletest.Key(t, "publisher"), bundletest.Key(t, "evil")
	p := w.provider("registry.terraform.io", "hashicorp", "random", "3.6.0", pub, false)
	for name, d := range map[string]bundle.PublisherKeyDecl{
		"other namespace": {Namespace: "registry.terraform.io/victim", Fingerprint: verify.Fingerprint(pub)},
		"unused key":      {Namespace: "registry.terraform.io/hashicorp", Fingerprint: verify.Fingerprint(evil)},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := w.importWith(w.bundle([]bundle.PublisherKeyDecl{d}, p), &store.KeyPins{})
			if !errors.Is(err, bundle.ErrInconsistent) || !strings.Contains(err.Error(), "no provider of that namespace in the bundle is signed by it") {
				t.Fatalf("%v", err)
			}
		})
	}
}

// A key re-published with a later expiry (HashiCorp's, 2026) has the same
// fingerprint: not a new key; the later expiry is recorded.
func TestPublisherKeyRenewedExpiry(t *testing.T) {
	w := newPinWorld(t)
	made := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
	key, err := openpgp.NewEntity("renewing publisher", "", "", &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048,
		DefaultHash: crypto.SHA256, Time: func() time.Time { return made }, KeyLifetimeSecs: 30 * 86400})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.importWith(w.bundle(nil, w.provider("registry.terraform.io", "hashicorp", "aws", "5.0.0", key, false)), &store.KeyPins{}); err != nil {
		t.Fatal(err)
	}
	first := w.history()[0].Keys[0].Expires
	// Re-publish: a new self-signature with a longer lifetime.
	cfg := &packet.Config{DefaultHash: crypto.SHA256, KeyLifetimeSecs: 400 * 86400}
	for _, id := range key.Identities {
		sig := id.SelfSignature
		sig.KeyLifetimeSecs = &cfg.KeyLifetimeSecs
		if err := sig.SignUserId(id.UserId.Id, key.PrimaryKey, key.PrivateKey, cfg); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.importWith(w.bundle(nil, w.provider("registry.terraform.io", "hashicorp", "aws", "5.1.0", key, false)), &store.KeyPins{}); err != nil {
		t.Fatalf("the same key with a later expiry: %v", err)
	}
	h := w.history()
	if len(h[0].Keys) != 1 || h[0].Keys[0].Expires == nil || first == nil || !h[0].Keys[0].Expires.After(*first) {
		t.Errorf("renewed key: %+v (first expiry %v)", h[0].Keys, first)
	}
}

// Site re-signed providers: accepted without a pin where the namespace has
// no publisher key; refused as a downgrade where it has one, unless
// approved.
func TestPublisherKeySiteResignDowngrade(t *testing.T) {
	w := newPinWorld(t)
	const tofu = "registry.opentofu.org"
	pub := bundletest.Key(t, "publisher")
	if _, err := w.importWith(w.bundle(nil, w.provider(tofu, "unsigned", "a", "1.0.0", w.site, true)), &store.KeyPins{}); err != nil {
		t.Fatalf("a site re-signature in a namespace without keys: %v", err)
	}
	if h := w.history(); len(h) != 0 {
		t.Errorf("a site key was pinned: %+v", h)
	}
	if _, err := w.importWith(w.bundle(nil, w.provider(tofu, "hashicorp", "local", "2.5.0", pub, false)), &store.KeyPins{}); err != nil {
		t.Fatal(err)
	}
	down := w.bundle(nil, w.provider(tofu, "hashicorp", "local", "2.5.1", w.site, true))
	_, err := w.importWith(down, &store.KeyPins{})
	if !errors.Is(err, store.ErrPublisherKey) || !strings.Contains(err.Error(), "downgrade") {
		t.Fatalf("a site re-signature where the namespace has a publisher key: %v", err)
	}
	if _, err := w.importWith(down, &store.KeyPins{Accept: []string{verify.Fingerprint(w.site)}}); err != nil {
		t.Fatalf("an approved downgrade: %v", err)
	}
	if h := w.history(); len(h) != 1 || len(h[0].Keys) != 2 || h[0].Keys[1].Tier != dist.TrustSite {
		t.Errorf("history: %+v", h)
	}
}

// The pins file decides for the namespaces it lists, from the very first
// import, and refuses unlisted ones when told to.
func TestPublisherPinsFile(t *testing.T) {
	w := newPinWorld(t)
	pub, evil := bundletest.Key(t, "publisher"), bundletest.Key(t, "evil")
	pf, err := store.ParsePinsFile([]byte(fmt.Sprintf("namespace \"Registry.Terraform.io/HashiCorp\" {\n  keys = [%q]\n}\n", spaced(verify.Fingerprint(pub)))), "pins.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.importWith(w.bundle(nil, w.provider("registry.terraform.io", "hashicorp", "random", "3.6.0", evil, false)), &store.KeyPins{Pins: pf, Accept: []string{verify.Fingerprint(evil)}}); !errors.Is(err, store.ErrPublisherKey) || !strings.Contains(err.Error(), "pins file") {
		t.Fatalf("a first import against the pins file: %v", err)
	}
	kp := &store.KeyPins{Pins: pf}
	if _, err := w.importWith(w.bundle(nil, w.provider("registry.terraform.io", "hashicorp", "random", "3.6.0", pub, false)), kp); err != nil {
		t.Fatal(err)
	}
	if p := store.PinnedBy(kp.Decisions); len(p) != 1 || p[0].How != dist.PinFile {
		t.Errorf("pinned: %+v", p)
	}
	strict, err := store.ParsePinsFile([]byte("unlisted = \"refuse\"\n"), "strict.hcl")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.importWith(w.bundle(nil, w.provider("registry.terraform.io", "other", "x", "1.0.0", pub, false)), &store.KeyPins{Pins: strict}); !errors.Is(err, store.ErrPublisherKey) {
		t.Fatalf("an unlisted namespace with unlisted = refuse: %v", err)
	}
}

func spaced(fp string) string {
	var b strings.Builder
	for i := 0; i < len(fp); i += 4 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(fp[i : i+4])
	}
	return strings.ToLower(b.String())
}

// A store that predates pins: the first import records the keys its
// namespaces' providers were signed by, and a new key is refused at once.
func TestPublisherKeysSeededFromOldStore(t *testing.T) {
	w := newPinWorld(t)
	pub, rotated := bundletest.Key(t, "publisher"), bundletest.Key(t, "rotated publisher")
	// An import without the policy: a store as an older airgap left it.
	if _, err := store.Import(w.root, bytes.NewReader(w.bundle(nil, w.provider("registry.terraform.io", "hashicorp", "random", "3.6.0", pub, false))), store.ImportOptions{Keyring: w.kr}); err != nil {
		t.Fatal(err)
	}
	h := w.history()
	if len(h) != 1 || h[0].Keys[0].How != dist.PinExisting {
		t.Fatalf("derived history: %+v", h)
	}
	if _, err := w.importWith(w.bundle(nil, w.provider("registry.terraform.io", "hashicorp", "random", "3.6.1", rotated, false)), &store.KeyPins{}); !errors.Is(err, store.ErrPublisherKey) {
		t.Fatalf("a new key in an old store: %v", err)
	}
}

func TestParsePinsFileMistakes(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"bare namespace": {`namespace "hashicorp" { keys = ["` + strings.Repeat("A", 40) + `"] }`, `"registry.terraform.io/hashicorp"`},
		"key id":         {`namespace "registry.terraform.io/hashicorp" { keys = ["34365D9472D7468F"] }`, "a key ID, not a fingerprint"},
		"twice":          {"namespace \"registry.terraform.io/a\" { keys = [\"" + strings.Repeat("A", 40) + "\"] }\nnamespace \"REGISTRY.terraform.io:443/a\" { keys = [\"" + strings.Repeat("B", 40) + "\"] }", "listed twice"},
		"typo":           {`namespaces "registry.terraform.io/a" { keys = [] }`, "pins.hcl:1"},
		"unlisted":       {`unlisted = "maybe"`, "trust-on-first-use"},
		"control chars":  {"namespace \"registry.terraform.io/\x1b[2J\" { keys = [\"" + strings.Repeat("A", 40) + "\"] }", `\x1b`},
		"empty keys":     {`namespace "registry.terraform.io/a" { keys = [] }`, "give 1 to"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := store.ParsePinsFile([]byte(tc.src), "pins.hcl")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("%v, want %q", err, tc.want)
			}
			if strings.ContainsRune(err.Error(), 0x1b) {
				t.Errorf("raw escape in %q", err)
			}
		})
	}
}

func FuzzParsePinsFile(f *testing.F) {
	f.Add([]byte("namespace \"registry.terraform.io/hashicorp\" {\n  keys = [\"C874 011F 0AB4 0511 0D02  1055 3436 5D94 72D7 468F\"]\n}\nunlisted = \"refuse\"\n"))
	f.Add([]byte("namespace \"a/b\" { keys = [\"x\"] }"))
	f.Fuzz(func(t *testing.T, src []byte) {
		pf, err := store.ParsePinsFile(src, "pins.hcl")
		if err != nil {
			if strings.ContainsRune(err.Error(), 0x1b) {
				t.Fatalf("raw escape in the error: %q", err)
			}
			return
		}
		for ns, fps := range pf.Namespaces {
			host, n, ok := strings.Cut(ns, "/")
			if !ok || dist.NamespaceKey(host, n) != ns || len(fps) == 0 {
				t.Fatalf("namespace %q %v", ns, fps)
			}
			for _, fp := range fps {
				if got, err := verify.ParseFingerprint(fp); err != nil || got != fp {
					t.Fatalf("fingerprint %q", fp)
				}
			}
		}
	})
}

func FuzzParseAgainst(f *testing.F) {
	f.Add([]byte(`{"format":2,"catalog":{"providers":[{"host":"registry.terraform.io","namespace":"hashicorp","type":"random","version":"3.6.0","shasums_name":"terraform-provider-random_3.6.0_SHA256SUMS","shasums":"sha256:` + strings.Repeat("a", 64) + `","shasums_signature":"sha256:` + strings.Repeat("b", 64) + `","signing_keys":[],"packages":[{"os":"linux","arch":"amd64","filename":"terraform-provider-random_3.6.0_linux_amd64.zip","digest":"sha256:` + strings.Repeat("c", 64) + `","size":1,"h1":"h1:` + strings.Repeat("A", 43) + `="}]}],"modules":[]},"imports":[],"publisher_keys":[{"namespace":"registry.terraform.io/hashicorp","keys":[{"fingerprint":"` + strings.Repeat("A", 40) + `","key_id":"X","tier":"publisher_signed","accepted":"2026-01-01T00:00:00Z","how":"first_use"}]}],"withdrawn":[{"kind":"provider","addr":"registry.terraform.io/hashicorp/random","version":"3.5.0","reason":"r","bundle":"sha256:` + strings.Repeat("d", 64) + `","signer":{"key_id":"","fingerprint":""},"time":"2026-01-01T00:00:00Z"}],"blobs":[]}`))
	f.Add([]byte(`{"format":1,"catalog":{"providers":null,"modules":null}}`))
	f.Add([]byte(`{"format":3,"policy":{"file":"import.hcl","require_gates":["modules:trivy"],"require_publisher_signatures":true,"publisher_key_approvals":"anywhere",` +
		`"publisher_pins":{"file":"pins.hcl","unlisted":"refuse","namespaces":[{"namespace":"registry.terraform.io/hashicorp","keys":["` + strings.Repeat("A", 40) + `"]}]}},` +
		`"revoked_keys":[{"fingerprint":"` + strings.Repeat("B", 40) + `","key_id":"X","revoked":"2026-01-01T00:00:00Z","recorded":"2026-01-01T00:00:00Z","source":"s"}],"signers":{"x":{"fingerprint":"F"}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := store.ParseAgainst(bytes.NewReader(data))
		if err != nil {
			return
		}
		// The policy it accepted builds the import's rules.
		if a.Policy != nil {
			if _, err := a.Policy.Rules(store.Extra{}); err != nil && !strings.Contains(err.Error(), "--") {
				t.Fatalf("an accepted policy builds no rules: %v", err)
			}
		}
		// What it accepted is well-formed: a review against it cannot
		// print a name that forges a line.
		for _, n := range a.PublisherKeys {
			if dist.Printable(n.Namespace) != n.Namespace {
				t.Fatalf("namespace %q", n.Namespace)
			}
		}
	})
}

// An inventory for --against is bounded before it is read, and must be
// one whole document.
func TestReadAgainstLimits(t *testing.T) {
	dir := t.TempDir()
	huge := filepath.Join(dir, "huge.json")
	f, err := os.Create(huge)
	if err != nil {
		t.Fatal(err)
	}
	f.Truncate(store.MaxInventorySize + 1)
	f.Close()
	start := time.Now()
	if _, err := store.ReadAgainst(huge); err == nil || !strings.Contains(err.Error(), "over the") || time.Since(start) > 2*time.Second {
		t.Errorf("an inventory over the limit: %v after %v", err, time.Since(start))
	}
	for name, doc := range map[string]string{
		"trailing":  `{"format":2}{"format":2}`,
		"format":    `{"format":9}`,
		"names":     `{"format":2,"catalog":{"providers":[{"host":"x","namespace":"\u001b[2J","type":"t","version":"1.0.0"}]}}`,
		"keys":      `{"format":2,"publisher_keys":[{"namespace":"registry.terraform.io/a","keys":[{"fingerprint":"not hex"}]}]}`,
		"required":  `{"format":3,"policy":{"approvals":{"keyring":"k","required":99,"armor":""}}}`,
		"keyring":   `{"format":3,"policy":{"approvals":{"keyring":"k","required":1,"armor":"not a key"}}}`,
		"station":   `{"format":3,"policy":{"publisher_key_approvals":"station"}}`,
		"approvals": `{"format":3,"policy":{"publisher_key_approvals":"laptop"}}`,
		"gates":     `{"format":3,"policy":{"require_gates":["tools:x"]}}`,
		"pins":      `{"format":3,"policy":{"publisher_pins":{"file":"p","unlisted":"refuse","namespaces":[{"namespace":"hashicorp","keys":["AB"]}]}}}`,
		"revoked":   `{"format":3,"revoked_keys":[{"fingerprint":"\u001b[2J"}]}`,
	} {
		if _, err := store.ParseAgainst(strings.NewReader(doc)); err == nil {
			t.Errorf("%s: accepted %s", name, doc)
		}
	}
	a, err := store.ParseAgainst(strings.NewReader(`{"format":2,"blobs":["sha256:x",{"deep":[[[1]]]}],"imports":null,"catalog":{"modules":null,"providers":[]}}`))
	if err != nil || a.Format != 2 {
		t.Errorf("a minimal inventory: %v", err)
	}
}
