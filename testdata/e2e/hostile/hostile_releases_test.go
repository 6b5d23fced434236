package hostile

import (
	"bytes"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
	"github.com/airgap/airgap/verify"
)

// releaseSet is a bundle set of one stand-in terraform release as a
// publisher signed it, carried with the publisher key in keyFile, pinned
// as pin; edit changes its record or files before the bundle is written.
func releaseSet(t *testing.T, rel *registrytest.CLIRelease, keyFile, pin string, edit func(r *dist.CLIRelease, files map[verify.Digest]string)) *bundletest.Set {
	t.Helper()
	set := bundletest.NewSet()
	add := func(p, role string) verify.Digest {
		d := bundletest.FileDigest(t, p)
		set.Files[d], set.Roles[d] = p, role
		return d
	}
	r := dist.CLIRelease{Product: rel.Product, Version: rel.Version, ShasumsName: dist.ReleaseShasumsName(rel.Product, rel.Version), KeyPin: pin}
	r.Shasums = add(rel.Files[r.ShasumsName], dist.RoleReleaseShasums)
	r.Key = add(keyFile, dist.RoleReleaseKey)
	kr, err := verify.ReadKeyringFile(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	r.KeyFingerprint = verify.Fingerprint(kr[0])
	for _, n := range dist.ReleaseSignatureNames(rel.Product, rel.Version) {
		r.Signatures = append(r.Signatures, dist.ReleaseSignature{Name: n, Digest: add(rel.Files[n], dist.RoleReleaseSignature)})
	}
	zip := dist.ReleaseZipName(rel.Product, rel.Version, "linux", "amd64")
	fi, _ := os.Stat(rel.Files[zip])
	r.Builds = []dist.ReleaseBuild{{OS: "linux", Arch: "amd64", Filename: zip, Digest: add(rel.Files[zip], dist.RoleReleaseZip), Size: fi.Size()}}
	if edit != nil {
		edit(&r, set.Files)
		for d := range set.Files { // roles of what edit added
			if set.Roles[d] == "" {
				set.Roles[d] = dist.RoleReleaseSignature
				if strings.HasSuffix(set.Files[d], ".zip") {
					set.Roles[d] = dist.RoleReleaseZip
				}
			}
		}
		used := map[verify.Digest]bool{}
		cat := dist.Catalog{Releases: []dist.CLIRelease{r}}
		for d := range cat.Blobs() {
			used[d] = true
		}
		for d := range set.Files {
			if !used[d] {
				delete(set.Files, d)
				delete(set.Roles, d)
			}
		}
	}
	set.Catalog.Releases = []dist.CLIRelease{r}
	return set
}

// TestHostileReleases: a release whose zip differs by one byte from its
// SHA256SUMS line, one whose SHA256SUMS is signed by another key than the
// one carried, and one whose key airgap does not pin (the bundle says
// "default" for a key that is not the publisher's) are refused by verify
// and import, naming the release, the store unchanged; the same release
// as signed is accepted, so the refusals are the edits'.
func TestHostileReleases(t *testing.T) {
	work, site, keyring, root, _ := harness.TrustWorld(t)
	in := registrytest.New(t)
	rel := harness.ReleaseWorld(t, in)
	var published *registrytest.CLIRelease
	for _, r := range in.CLIReleases("terraform") {
		if r.Version == "1.14.3" {
			published = r
		}
	}
	write := func(name string, set *bundletest.Set) string {
		p := filepath.Join(work, name+".bundle")
		set.WriteBundleFile(t, p, site, bundle.CompressionAuto)
		return p
	}
	good := write("good", releaseSet(t, published, rel.HashiCorpKey, dist.KeyPinManifest, nil))
	harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", keyring, good)

	oneByte := write("one-byte", releaseSet(t, published, rel.HashiCorpKey, dist.KeyPinManifest, func(r *dist.CLIRelease, files map[verify.Digest]string) {
		b, _ := os.ReadFile(files[r.Builds[0].Digest])
		b[len(b)/2] ^= 0x01
		p := filepath.Join(work, "tampered", r.Builds[0].Filename)
		bundletest.WriteFile(t, p, b)
		d := verify.DigestBytes(b)
		files[d] = p
		r.Builds[0].Digest = d
	}))
	harness.ExpectRefused(t, work, keyring, root, oneByte, "release terraform 1.14.3", "terraform_1.14.3_linux_amd64.zip", "the signed SHA256SUMS says")

	otherKey := write("other-key", releaseSet(t, published, rel.HashiCorpKey, dist.KeyPinManifest, func(r *dist.CLIRelease, files map[verify.Digest]string) {
		sums, _ := os.ReadFile(files[r.Shasums])
		var sig bytes.Buffer
		other := bundletest.Key(t, "someone else")
		if err := verify.SignDetachedAt(&sig, other, bytes.NewReader(sums), other.PrimaryKey.CreationTime.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		for i := range r.Signatures {
			p := filepath.Join(work, "resigned", r.Signatures[i].Name)
			bundletest.WriteFile(t, p, sig.Bytes())
			d := verify.DigestBytes(sig.Bytes())
			files[d] = p
			r.Signatures[i].Digest = d
		}
	}))
	harness.ExpectRefused(t, work, keyring, root, otherKey, "release terraform 1.14.3", "does not verify its SHA256SUMS with the pinned key")

	unpinned := write("unpinned", releaseSet(t, published, rel.HashiCorpKey, dist.KeyPinDefault, nil))
	harness.ExpectRefused(t, work, keyring, root, unpinned, "release terraform 1.14.3", "which is not the key airgap pins for terraform",
		verify.GroupFingerprint(dist.DefaultReleaseKey("terraform")))
}

// TestHostileReleasesExport: export refuses, naming the release and
// writing no bundle, a zip changed by one byte on the way, a SHA256SUMS
// signed by another key than the manifest pins, and a release whose key is
// not the one airgap pins when the manifest pins none.
func TestHostileReleasesExport(t *testing.T) {
	in := registrytest.New(t)
	rel := harness.ReleaseWorld(t, in)
	work := t.TempDir()
	keys := filepath.Join(work, "keys", "site")
	os.MkdirAll(filepath.Dir(keys), 0o700)
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", keys)
	env := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"))
	export := func(name, manifest string, want ...string) {
		t.Helper()
		mf := filepath.Join(work, name+".hcl")
		os.WriteFile(mf, []byte(manifest), 0o644)
		out := filepath.Join(work, name+".bundle")
		stdout, stderr, code := harness.RunSplit(t, work, env, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", out, "--cache", filepath.Join(work, "cache-"+name))
		if code != 1 {
			t.Errorf("%s: export exit %d, want 1\n%s%s", name, code, stdout, stderr)
		}
		for _, w := range append(want, "hint:", "nothing was written") {
			if !strings.Contains(stderr, w) {
				t.Errorf("%s: export's message lacks %q:\n%s", name, w, stderr)
			}
		}
		if _, err := os.Stat(out); err == nil {
			t.Errorf("%s: export wrote %s", name, out)
		}
	}
	pinned := `platforms = ["linux_amd64"]
cli "terraform" {
  versions      = "1.14.3"
  publisher_key = "` + rel.HashiCorpKey + `"
}
`
	in.Tamper.Store("terraform_1.14.3_linux_amd64.zip")
	export("one-byte", pinned, "release terraform 1.14.3", "terraform_1.14.3_linux_amd64.zip")
	in.Tamper.Store("")

	export("other-key", strings.Replace(pinned, rel.HashiCorpKey, rel.OpenTofuKey, 1), "release terraform 1.14.3", "does not verify its SHA256SUMS with the pinned key")

	export("unpinned", `platforms = ["linux_amd64"]
cli "terraform" {
  versions = "1.14.3"
}
`, "release terraform 1.14.3", "not the key airgap pins for terraform", "publisher_key")
	// The same manifest with the pin exports.
	harness.MustRun(t, work, env, harness.Bin, "export", "--manifest", writeFile(t, work, "ok.hcl", pinned), "--sign-key", keys+".key.asc", "--out", filepath.Join(work, "ok.bundle"), "--cache", filepath.Join(work, "cache-ok"))
}

func writeFile(t *testing.T, dir, name, text string) string {
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestHostileReleasesStoreRules: once a store holds terraform releases,
// a release signed by another key (a new publisher key) is refused by
// import and forecast so by 'verify --against' until the site accepts
// the key (--accept-publisher-key), and a release the store holds with
// another SHA256SUMS is refused as a conflict; the store unchanged.
func TestHostileReleasesStoreRules(t *testing.T) {
	work, site, keyring, root, _ := harness.TrustWorld(t)
	in := registrytest.New(t)
	rel := harness.ReleaseWorld(t, in)
	find := func(in *registrytest.Internet, v string) *registrytest.CLIRelease {
		for _, r := range in.CLIReleases("terraform") {
			if r.Version == v {
				return r
			}
		}
		t.Fatalf("terraform %s is not published", v)
		return nil
	}
	write := func(name string, set *bundletest.Set) string {
		p := filepath.Join(work, name+".bundle")
		set.WriteBundleFile(t, p, site, bundle.CompressionAuto)
		return p
	}
	first := write("first", releaseSet(t, find(in, "1.14.2"), rel.HashiCorpKey, dist.KeyPinManifest, nil))
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", root, first)

	// terraform 1.15.0, signed by another key than the store's releases.
	in.AddCLIRelease(t, "terraform", "1.15.0", harness.ReleasePlatforms, harness.CLIStub(t), rel.OpenTofu)
	rotated := write("rotated", releaseSet(t, find(in, "1.15.0"), rel.OpenTofuKey, dist.KeyPinManifest, nil))
	newFP := verify.GroupFingerprint(verify.Fingerprint(rel.OpenTofu))
	before := bundletest.Snapshot(t, root)
	out, code := harness.RunBounded(t, work, "import", "--keyring", keyring, "--store", root, rotated)
	if code != 1 || !strings.Contains(out, "release terraform 1.15.0: signed by key "+newFP) || !strings.Contains(out, "hint:") {
		t.Errorf("import of a release signed by a new key: exit %d\n%s", code, out)
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, root))
	inv := filepath.Join(work, "inventory.json")
	os.WriteFile(inv, []byte(harness.MustRunStdout(t, work, "inventory", "--store", root, "--json")), 0o644)
	out, code = harness.RunBounded(t, work, "verify", "--keyring", keyring, "--against", inv, rotated)
	if !strings.Contains(out, "WILL REFUSE") || !strings.Contains(out, "release terraform 1.15.0") {
		t.Errorf("verify --against does not forecast the refusal (exit %d):\n%s", code, out)
	}
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", keyring, "--store", root, "--accept-publisher-key", verify.Fingerprint(rel.OpenTofu), rotated)

	// terraform 1.14.2 again, with another SHA256SUMS (one platform only).
	in2 := registrytest.New(t)
	in2.AddCLIRelease(t, "terraform", "1.14.2", []string{"linux_amd64"}, harness.CLIStub(t), rel.HashiCorp)
	other := write("other-sums", releaseSet(t, find(in2, "1.14.2"), rel.HashiCorpKey, dist.KeyPinManifest, nil))
	before = bundletest.Snapshot(t, root)
	out, code = harness.RunBounded(t, work, "import", "--keyring", keyring, "--store", root, other)
	if code != 1 || !strings.Contains(out, "release terraform 1.14.2: its SHA256SUMS") || !strings.Contains(out, "differs from the one the store serves") {
		t.Errorf("import of a release the store holds with another SHA256SUMS: exit %d\n%s", code, out)
	}
	bundletest.SameTree(t, before, bundletest.Snapshot(t, root))
}

// TestHostileReleasesDuplicateVersions: a publisher's list that names
// its newest version twice (OpenTofu's api.json with "1.11.2" listed
// twice) is one version: "latest = 2" still carries the two newest
// releases, each once, rather than the same one twice (which export then
// refused as listed twice) or one fewer.
func TestHostileReleasesDuplicateVersions(t *testing.T) {
	in := registrytest.New(t)
	rel := harness.ReleaseWorld(t, in)
	in.Handle(registrytest.TofuGetHost+"/tofu/api.json", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"versions":[{"id":"1.11.2","files":[]},{"id":"1.11.2","files":[]},{"id":"1.11.0","files":[]},{"id":"1.10.7","files":[]}]}`))
	}))
	work := t.TempDir()
	keys := filepath.Join(work, "keys", "site")
	os.MkdirAll(filepath.Dir(keys), 0o700)
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", keys)
	env := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"))
	mf := writeFile(t, work, "tofu.hcl", `platforms = ["linux_amd64"]
cli "tofu" {
  latest        = 2
  publisher_key = "`+rel.OpenTofuKey+`"
}
`)
	out := filepath.Join(work, "tofu.bundle")
	stdout, stderr, code := harness.RunSplit(t, work, env, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", out, "--cache", filepath.Join(work, "cache"))
	if code != 0 {
		t.Fatalf("export of a list naming a version twice: exit %d\n%s%s", code, stdout, stderr)
	}
	pub := filepath.Join(work, "keys", "site.pub.asc")
	if _, err := os.Stat(pub); err != nil {
		t.Fatal(err)
	}
	v := harness.MustRunStdout(t, work, "verify", "--keyring", pub, out)
	for _, want := range []string{"tofu 1.11.2", "tofu 1.11.0"} {
		if !strings.Contains(v, "release:    "+want) {
			t.Errorf("the bundle does not carry %s:\n%s", want, v)
		}
	}
}

// TestHostileReleasesShasumsTwice: a SHA256SUMS, signed by the pinned
// key, that lists the carried zip twice with two digests says two things
// about one file: airgap held the zip to the first line while
// hc-install holds it to the last, so one of them accepts what the other
// refuses. verify and import refuse it, naming the file; the same
// SHA256SUMS with the line repeated identically is accepted (so the
// refusal is the disagreement's).
func TestHostileReleasesShasumsTwice(t *testing.T) {
	work, site, keyring, root, _ := harness.TrustWorld(t)
	in := registrytest.New(t)
	rel := harness.ReleaseWorld(t, in)
	var published *registrytest.CLIRelease
	for _, r := range in.CLIReleases("terraform") {
		if r.Version == "1.14.3" {
			published = r
		}
	}
	zip := dist.ReleaseZipName("terraform", "1.14.3", "linux", "amd64")
	resigned := func(name, extra string) string {
		var sumsDigest verify.Digest
		set := releaseSet(t, published, rel.HashiCorpKey, dist.KeyPinManifest, func(r *dist.CLIRelease, files map[verify.Digest]string) {
			sums, _ := os.ReadFile(files[r.Shasums])
			sums = append(sums, []byte(extra)...)
			p := filepath.Join(work, name, r.ShasumsName)
			bundletest.WriteFile(t, p, sums)
			sumsDigest = verify.DigestBytes(sums)
			files[sumsDigest], r.Shasums = p, sumsDigest
			var sig bytes.Buffer
			if err := verify.SignDetachedAt(&sig, rel.HashiCorp, bytes.NewReader(sums), rel.HashiCorp.PrimaryKey.CreationTime.Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			for i := range r.Signatures {
				p := filepath.Join(work, name, r.Signatures[i].Name)
				bundletest.WriteFile(t, p, sig.Bytes())
				d := verify.DigestBytes(sig.Bytes())
				files[d], r.Signatures[i].Digest = p, d
			}
		})
		set.Roles[sumsDigest] = dist.RoleReleaseShasums
		p := filepath.Join(work, name+".bundle")
		set.WriteBundleFile(t, p, site, bundle.CompressionAuto)
		return p
	}
	line := func() string {
		b, _ := os.ReadFile(published.Files[zip])
		return verify.DigestBytes(b).Hex() + "  " + zip + "\n"
	}()
	harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", keyring, resigned("same-twice", line))
	other := strings.Repeat("ab", 32) + "  " + zip + "\n"
	harness.ExpectRefused(t, work, keyring, root, resigned("two-digests", other), "release terraform 1.14.3", zip, "twice")
}

// TestHostileReleasesIndex: releases.hashicorp.com's index.json over 32
// MiB, or nested deeper than 8, is refused by export with the bound in
// the message, nothing written; versions that are not versions ("../x",
// "1.14.3/../../y", markup) are left out, so the valid one still exports.
func TestHostileReleasesIndex(t *testing.T) {
	in := registrytest.New(t)
	rel := harness.ReleaseWorld(t, in)
	work := t.TempDir()
	keys := filepath.Join(work, "keys", "site")
	os.MkdirAll(filepath.Dir(keys), 0o700)
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--no-passphrase", "--out", keys)
	env := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"))
	mf := writeFile(t, work, "tf.hcl", `platforms = ["linux_amd64"]
cli "terraform" {
  all           = true
  publisher_key = "`+rel.HashiCorpKey+`"
}
`)
	index := func(body string) {
		in.Handle("releases.hashicorp.com/terraform/index.json", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
		}))
	}
	export := func(name string) (string, int) {
		out := filepath.Join(work, name+".bundle")
		stdout, stderr, code := harness.RunSplit(t, work, env, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", out, "--cache", filepath.Join(work, "cache-"+name))
		if _, err := os.Stat(out); code != 0 && err == nil {
			t.Errorf("%s: export failed and wrote %s", name, out)
		}
		return stdout + stderr, code
	}
	index(`{"name":"terraform","versions":{"1.14.3":{},"x":` + strings.Repeat(`{"a":`, 10) + `1` + strings.Repeat(`}`, 10) + `}}`)
	if out, code := export("deep"); !strings.Contains(out, "hint:") || code != 1 || !strings.Contains(out, "index.json") {
		t.Errorf("an index.json nested 12 deep: exit %d\n%s", code, out)
	}
	index(`{"name":"terraform","versions":{"1.14.3":{},"pad":"` + strings.Repeat("a", 33<<20) + `"}}`)
	if out, code := export("huge"); !strings.Contains(out, "hint:") || code != 1 || !strings.Contains(out, "index.json") {
		t.Errorf("an index.json of 33 MiB: exit %d\n%s", code, out)
	}
	index(`{"name":"terraform","versions":{"1.14.3":{},"../x":{},"1.14.3/../../y":{},"<b>1.0.0</b>":{},"1.0.0\n":{}}}`)
	out, code := export("names")
	if code != 0 || !strings.Contains(out, "terraform 1.14.3") || strings.Contains(out, "../") {
		t.Errorf("an index.json with names that are not versions: exit %d\n%s", code, out)
	}
}
