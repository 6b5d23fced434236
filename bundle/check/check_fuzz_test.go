package check_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// FuzzCheckManifest feeds arbitrary manifests, and an arbitrary SHA256SUMS
// (validly signed) for the first provider version, to the consistency check.
// It must never panic; a manifest it passes has no duplicate versions and
// only packages named for their platform; and a check that passes means
// every package of that provider is in the fuzzed SHA256SUMS with its
// sha256.
func FuzzCheckManifest(f *testing.F) {
	signer := bundletest.Key(f, "site")
	dir := f.TempDir()
	set := bundletest.Standard(f, filepath.Join(dir, "src"), signer)
	m := set.Manifest(f)
	good, err := m.Marshal()
	if err != nil {
		f.Fatal(err)
	}
	sums, err := os.ReadFile(set.Files[m.Catalog.Providers[0].Shasums])
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good, sums)
	f.Add(good, []byte{})
	f.Add(good, append(sums, sums...))
	f.Add(bytes.Replace(good, []byte(`"registry.opentofu.org"`), []byte(`"registry.terraform.io"`), 1), sums)
	f.Add(bytes.Replace(good, []byte(`"example"`), []byte(`"Example"`), 1), sums)
	h1s := map[verify.Digest]string{}
	for _, p := range m.Catalog.Providers {
		for _, pk := range p.Packages {
			h1s[pk.Digest] = pk.H1
		}
	}
	sigs := map[string][]byte{}
	sumsPath, sigPath := filepath.Join(dir, "sums"), filepath.Join(dir, "sig")
	f.Fuzz(func(t *testing.T, data, sums []byte) {
		m, err := bundle.ParseManifest(data)
		if err != nil {
			return
		}
		if err := check.Manifest(m); err != nil {
			return
		}
		keys := map[string]bool{}
		for _, p := range m.Catalog.Providers {
			if keys[p.Key()] {
				t.Fatalf("duplicate provider version %s passed", p)
			}
			keys[p.Key()] = true
			for _, pk := range p.Packages {
				if !strings.HasSuffix(pk.Filename, "_"+pk.Platform()+".zip") {
					t.Fatalf("%s %s: package %s passed", p, pk.Platform(), pk.Filename)
				}
			}
			if p.SiteSigned && p.Host != check.SiteResignHost {
				t.Fatalf("site re-signature for %s passed", p)
			}
		}
		for _, mv := range m.Catalog.Modules {
			if keys[mv.Key()] {
				t.Fatalf("duplicate module version %s passed", mv)
			}
			keys[mv.Key()] = true
		}
		if len(m.Catalog.Providers) == 0 || len(sums) > dist.MaxShasumsSize {
			return
		}
		// The first provider's SHA256SUMS is the fuzzed one, signed (each
		// distinct one once: signing dominates an execution otherwise).
		p0 := m.Catalog.Providers[0]
		sig, ok := sigs[string(sums)]
		if !ok {
			var b bytes.Buffer
			if err := verify.SignDetached(&b, signer, bytes.NewReader(sums)); err != nil {
				t.Fatal(err)
			}
			if len(sigs) > 256 {
				clear(sigs)
			}
			sig = b.Bytes()
			sigs[string(sums)] = sig
		}
		if err := os.WriteFile(sumsPath, sums, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(sigPath, sig, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := check.New(m, check.Options{
			// The zips' h1 is not what is fuzzed here, and hashing them
			// would dominate; the real values are known.
			Known:  func(d verify.Digest, h1 string, _ verify.Digest) bool { return h1s[d] == h1 },
			Signer: verify.Signer{Fingerprint: verify.Fingerprint(signer)},
			Have: func(d verify.Digest) (string, bool) {
				switch d {
				case p0.Shasums:
					return sumsPath, true
				case p0.ShasumsSig:
					return sigPath, true
				}
				p, ok := set.Files[d]
				return p, ok
			},
		})
		if err != nil {
			t.Fatalf("Manifest passed, New failed: %v", err)
		}
		defer c.Close()
		if _, err := c.Finish(); err != nil {
			return
		}
		lines, _, _ := dist.ParseShasums(bytes.NewReader(sums))
		for _, pk := range p0.Packages {
			if h, ok := dist.ShasumFor(lines, pk.Filename); !ok || h != pk.Digest.Hex() {
				t.Fatalf("%s %s passed, but the SHA256SUMS does not list %s with %s", p0, pk.Platform(), pk.Filename, pk.Digest.Hex())
			}
		}
	})
}
