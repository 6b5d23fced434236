package export_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/store"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/export"
	"github.com/airgap/airgap/dist/registry"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/dist/tfconfig"
	"github.com/airgap/airgap/verify"
)

// world is registrytest.World plus a module that calls a non-registry source.
func world(t *testing.T) *registrytest.Internet {
	t.Helper()
	in := registrytest.World(t)
	in.AddGitRepo(t, "example/legacy", "v1.0.0", map[string]string{"main.tf": "\n\n\n\n\n\n\n\n\nmodule \"remote\" {\n  source = \"git::https://git.example.com/x.git\"\n}\n"})
	in.AddModule("registry.terraform.io", "example", "legacy", "aws", "1.0.0", "git::https://github.com/example/legacy?ref=v1.0.0")
	// An HTTP tarball with a top-level folder, stripped by //*.
	loc := in.AddArchive(t, "star-1.0.0.tar.gz", map[string]string{"star-1.0.0/main.tf": "output \"id\" {\n  value = \"s\"\n}\n"})
	in.AddModule("registry.terraform.io", "example", "star", "aws", "1.0.0", loc+"//*")
	// GitHub shorthand, with a subdirectory and a ref.
	in.AddModule("registry.terraform.io", "example", "gh", "aws", "1.0.0", "github.com/example/mono//modules/sub?ref=v2.0.0")
	return in
}

func gitEnv(t *testing.T, in *registrytest.Internet) {
	for _, kv := range in.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// options exports from in: the registry client through in.Transport, and
// git (modules, each provider's docs repository) through in's proxy
// (gitEnv), so that nothing is asked of the network guard.
func options(t *testing.T, in *registrytest.Internet, cache string, site *openpgp.Entity) export.Options {
	gitEnv(t, in)
	c := registry.New(registry.Options{Transport: in.Transport()})
	c.Backoff = 10 * time.Millisecond
	return export.Options{Client: c, CacheDir: cache, Jobs: 4, SiteKey: site}
}

// writeBundle writes res as a bundle signed by site at (zero: now), as
// export.WriteBundle does but into memory.
func writeBundle(t *testing.T, res *export.Result, site *openpgp.Entity, at time.Time) []byte {
	t.Helper()
	var b bytes.Buffer
	bw, err := bundle.NewWriter(&b, res.Manifest, site, bundle.WriterOptions{ModTime: at})
	if err != nil {
		t.Fatal(err)
	}
	if err := bw.WriteFiles(res.Files); err != nil {
		t.Fatal(err)
	}
	if err := bw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func writeSpec(t *testing.T, body string) string {
	p := filepath.Join(t.TempDir(), "airgap.hcl")
	os.WriteFile(p, []byte(body), 0o644)
	return p
}

const fullSpec = `
platforms = ["linux_amd64", "darwin_arm64"]

provider "hashicorp/random" {
  versions = ">= 3.5, < 4.0"
  latest   = 2
}
provider "registry.opentofu.org/hashicorp/local" {
  versions  = "2.5.1"
  platforms = ["linux_amd64"]
}
module "example/vpc/aws" {
  versions = "1.0.0"
}
module "example/sub/aws" {}
module "registry.opentofu.org/example/tofu/aws" {}
module "example/legacy/aws" {}
module "example/star/aws" {}
module "example/gh/aws" {}
`

func TestExportEverythingAndImport(t *testing.T) {
	in := world(t)
	gitEnv(t, in)
	site := bundletest.Key(t, "site")
	req, err := export.ParseSpec(writeSpec(t, fullSpec), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.NoVendor = true // example/legacy's source is unreachable: today's warning (the vendoring tests vendor it)
	cache := t.TempDir()
	res, err := export.Run(context.Background(), req, options(t, in, cache, site))
	if err != nil {
		t.Fatal(err)
	}
	cat := res.Manifest.Catalog
	var got []string
	for _, p := range cat.Providers {
		var plats []string
		for _, pk := range p.Packages {
			plats = append(plats, pk.Platform())
		}
		got = append(got, p.String()+" "+strings.Join(plats, ","))
	}
	want := []string{
		"registry.opentofu.org/hashicorp/local 2.5.1 linux_amd64",
		"registry.terraform.io/hashicorp/null 3.2.2 darwin_arm64,linux_amd64", // a dependency of the vpc module
		"registry.terraform.io/hashicorp/random 3.6.0 darwin_arm64,linux_amd64",
		"registry.terraform.io/hashicorp/random 3.6.2 darwin_arm64,linux_amd64",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("providers:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	mods := map[string]dist.ModuleVersion{}
	for _, m := range cat.Modules {
		mods[m.String()] = m
	}
	if len(mods) != 7 {
		t.Fatalf("modules: %v", mods)
	}
	vpc := mods["registry.terraform.io/example/vpc/aws 1.0.0"]
	if len(vpc.Commit) != 40 || vpc.Subdir != "" {
		t.Errorf("vpc: %+v", vpc)
	}
	if sub := mods["registry.terraform.io/example/sub/aws 2.0.0"]; sub.Subdir != "modules/sub" {
		t.Errorf("sub: %+v", sub)
	}
	if gh := mods["registry.terraform.io/example/gh/aws 1.0.0"]; gh.Subdir != "modules/sub" || len(gh.Commit) != 40 {
		t.Errorf("gh (GitHub shorthand): %+v", gh)
	}
	if star := mods["registry.terraform.io/example/star/aws 1.0.0"]; star.Subdir != "" || star.Size == 0 {
		t.Errorf("star (//*): %+v", star)
	}
	if _, ok := mods["registry.terraform.io/example/subnet/aws 2.1.0"]; !ok {
		t.Errorf("the vpc module's dependency subnet ~> 2.0 was not exported: %v", mods)
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "git.example.com") || !strings.Contains(res.Warnings[0], "main.tf:10") {
		t.Errorf("warnings: %v", res.Warnings)
	}
	// Upstream bytes are kept; hashes are Terraform's.
	up := in.Provider("registry.terraform.io", "hashicorp", "random", "3.6.2")
	for _, p := range cat.Providers {
		if p.String() == "registry.terraform.io/hashicorp/random 3.6.2" {
			if p.Shasums != up.Shasums || p.ShasumsSig != up.ShasumsSig || p.SiteSigned {
				t.Errorf("SHA256SUMS or signature not byte-identical to upstream")
			}
			lin, _ := p.Package("linux_amd64", "")
			for _, pk := range p.Packages {
				if upk, _ := up.Package(pk.OS, pk.Arch); upk.H1 != pk.H1 || upk.Digest != pk.Digest {
					t.Errorf("%s: hashes differ from upstream", pk.Platform())
				}
			}
			_ = lin
		}
		if p.Host == "registry.opentofu.org" {
			if !p.SiteSigned || p.SigningKeys[0].KeyID != verify.KeyID(site) {
				t.Errorf("opentofu provider without keys should be re-signed by the site key: %+v", p.SigningKeys)
			}
		}
	}
	// Write, verify and import the bundle.
	b := writeBundle(t, res, site, time.Time{})
	if _, err := store.Import(t.TempDir(), bytes.NewReader(b), store.ImportOptions{Keyring: openpgp.EntityList{site}}); err != nil {
		t.Fatal(err)
	}

	// A re-run downloads nothing: the cache holds every verified package.
	var before int32
	in.Downloads.Range(func(_, v any) bool { before += v.(*atomic.Int32).Load(); return true })
	res2, err := export.Run(context.Background(), req, options(t, in, cache, site))
	if err != nil {
		t.Fatal(err)
	}
	var after int32
	in.Downloads.Range(func(_, v any) bool { after += v.(*atomic.Int32).Load(); return true })
	if after != before || res2.Bytes != 0 || res2.Cached != 7 {
		t.Errorf("second run downloaded %d packages (%d bytes), %d from cache", after-before, res2.Bytes, res2.Cached)
	}
}

func TestExportFailures(t *testing.T) {
	in := world(t)
	gitEnv(t, in)
	site := bundletest.Key(t, "site")
	run := func(spec string, mutate func()) error {
		if mutate != nil {
			mutate()
		}
		req, err := export.ParseSpec(writeSpec(t, spec), nil)
		if err != nil {
			return err
		}
		_, err = export.Run(context.Background(), req, options(t, in, t.TempDir(), site))
		return err
	}
	cases := []struct {
		name, spec string
		mutate     func()
		want       []string
	}{
		{"unknown provider", `provider "hashicorp/nope" {}`, nil, []string{"registry.terraform.io/hashicorp/nope", "does not exist"}},
		{"no matching version", `provider "hashicorp/random" { versions = "~> 9.0" }`, nil, []string{"no version matches", "3.5.1, 3.6.0, 3.6.2"}},
		{"no platform", `platforms = ["plan9_amd64"]
provider "hashicorp/random" {}`, nil, []string{"none of the requested platforms"}},
		{"checksum mismatch", `provider "hashicorp/null" {}`, func() { in.Tamper.Store("terraform-provider-null_3.2.2_linux_amd64.zip") },
			[]string{"null 3.2.2 linux_amd64", "digest mismatch", "does not match the signed SHA256SUMS"}},
		{"unreachable host", `provider "unreachable.invalid/x/y" {}`, nil, []string{"unreachable.invalid"}},
		{"bad manifest syntax", "provider \"hashicorp/random\" {\n  versions = \n}", nil, []string{"airgap.hcl:2:14", "Invalid expression"}},
		{"unknown setting", "provider \"hashicorp/random\" {\n  verions = \"1\"\n}", nil, []string{"airgap.hcl:2", "verions"}},
		{"s3 module", `module "example/vpc/aws" {}`, func() {
			in.AddModule("registry.terraform.io", "example", "vpc", "aws", "9.0.0", "s3::https://s3.amazonaws.com/b/m.zip")
		}, []string{"s3::", "vpc"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := run(c.spec, c.mutate)
			in.Tamper.Store("")
			if err == nil {
				t.Fatal("export succeeded")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestExportBadSignature(t *testing.T) {
	in := world(t)
	// A provider whose SHA256SUMS is signed by a key the registry does not list.
	bp := in.AddProvider(t, "registry.terraform.io", "evil", "thing", "1.0.0", []string{"linux_amd64"}, 1024)
	other := bundletest.Key(t, "impostor")
	var sig bytes.Buffer
	sums, _ := os.ReadFile(bp.Files[bp.ShasumsName])
	verify.SignDetached(&sig, other, bytes.NewReader(sums))
	os.WriteFile(bp.Files[bp.ShasumsName+".sig"], sig.Bytes(), 0o644)
	req, _ := export.ParseSpec(writeSpec(t, `platforms = ["linux_amd64"]
provider "evil/thing" {}`), nil)
	cache := t.TempDir()
	_, err := export.Run(context.Background(), req, options(t, in, cache, nil))
	if !errors.Is(err, verify.ErrUnknownSigner) || !strings.Contains(err.Error(), "evil/thing 1.0.0 linux_amd64") {
		t.Fatalf("err = %v", err)
	}
	// Nothing unverified entered the cache.
	ents, _ := os.ReadDir(filepath.Join(cache, "blobs", "sha256"))
	if len(ents) != 0 {
		t.Errorf("cache holds %d files after a failed verification", len(ents))
	}
}

func TestExportRetriesAndLockFile(t *testing.T) {
	in := world(t)
	in.FailNext.Store(2) // two 503s, then success
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(`terraform {
  required_providers {
    random = { source = "hashicorp/random", version = "~> 3.5" }
  }
}
module "local" { source = "./mod" }
`), 0o644)
	os.MkdirAll(filepath.Join(dir, "mod"), 0o755)
	os.WriteFile(filepath.Join(dir, "mod", "main.tf"), []byte(`terraform {
  required_providers {
    null = { source = "hashicorp/null" }
  }
}
`), 0o644)
	up := in.Provider("registry.terraform.io", "hashicorp", "random", "3.6.0")
	lin, _ := up.Package("linux_amd64", "")
	for _, pk := range up.Packages {
		if pk.OS == "linux" {
			lin = pk
		}
	}
	os.WriteFile(filepath.Join(dir, ".terraform.lock.hcl"), []byte(`provider "registry.terraform.io/hashicorp/random" {
  version     = "3.6.0"
  constraints = "~> 3.5"
  hashes = [
    "`+lin.H1+`",
  ]
}
`), 0o644)
	req, err := export.FromProject(dir, []string{"linux_amd64"}, tfconfig.Inputs{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := export.Run(context.Background(), req, options(t, in, t.TempDir(), nil))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range res.Manifest.Catalog.Providers {
		got = append(got, p.String())
	}
	if strings.Join(got, ",") != "registry.terraform.io/hashicorp/null 3.2.2,registry.terraform.io/hashicorp/random 3.6.0" {
		t.Fatalf("locked version not exported exactly, or local module not followed: %v", got)
	}
	// darwin package does not match the lock (which only has linux h1): fail naming it.
	req, _ = export.FromProject(dir, []string{"linux_amd64", "darwin_arm64"}, tfconfig.Inputs{})
	_, err = export.Run(context.Background(), req, options(t, in, t.TempDir(), nil))
	if err == nil || !strings.Contains(err.Error(), "random 3.6.0 darwin_arm64") || !strings.Contains(err.Error(), ".terraform.lock.hcl") {
		t.Fatalf("lock mismatch: %v", err)
	}
}

func TestExportDeterministic(t *testing.T) {
	in := world(t)
	gitEnv(t, in)
	site := bundletest.Key(t, "site")
	at := time.Unix(1767225600, 0)
	var out [2][]byte
	for i := range out {
		req, _ := export.ParseSpec(writeSpec(t, fullSpec), nil)
		req.NoVendor = true // see TestExportEverythingAndImport; the vendoring tests check vendored archives
		res, err := export.Run(context.Background(), req, options(t, in, t.TempDir(), site))
		if err != nil {
			t.Fatal(err)
		}
		out[i] = writeBundle(t, res, site, at)
	}
	if !bytes.Equal(out[0], out[1]) {
		t.Fatal("two exports of the same inputs differ")
	}
}

func TestExportPrivateRegistryCredentials(t *testing.T) {
	in := world(t)
	in.AddProvider(t, "registry.example.com", "corp", "internal", "1.2.0", []string{"linux_amd64"}, 1024)
	spec := writeSpec(t, `platforms = ["linux_amd64"]
provider "registry.example.com/corp/internal" {}`)
	req, err := export.ParseSpec(spec, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("TF_CLI_CONFIG_FILE", filepath.Join(t.TempDir(), "none.tfrc"))
	t.Setenv("TF_TOKEN_registry_example_com", "")
	_, err = export.Run(context.Background(), req, options(t, in, t.TempDir(), nil))
	if err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "TF_TOKEN_registry_example_com") {
		t.Fatalf("without a token: %v", err)
	}
	// From TF_TOKEN_<host>.
	t.Setenv("TF_TOKEN_registry_example_com", registrytest.PrivateToken)
	if _, err := export.Run(context.Background(), req, options(t, in, t.TempDir(), nil)); err != nil {
		t.Fatalf("with TF_TOKEN_: %v", err)
	}
	// From a credentials block in the CLI config; never sent to download hosts
	// (the stand-in refuses downloads that carry credentials).
	t.Setenv("TF_TOKEN_registry_example_com", "")
	rc := filepath.Join(t.TempDir(), "cli.tfrc")
	os.WriteFile(rc, []byte(`credentials "registry.example.com" {
  token = "`+registrytest.PrivateToken+`"
}
`), 0o644)
	t.Setenv("TF_CLI_CONFIG_FILE", rc)
	creds, err := registry.LoadCredentials()
	if err != nil {
		t.Fatal(err)
	}
	opt := options(t, in, t.TempDir(), nil)
	opt.Client = registry.New(registry.Options{Transport: in.Transport(), Credentials: creds})
	if _, err := export.Run(context.Background(), req, opt); err != nil {
		t.Fatalf("with a credentials block: %v", err)
	}
}

func TestExportNoDeps(t *testing.T) {
	in := world(t)
	gitEnv(t, in)
	req, err := export.ParseSpec(writeSpec(t, "platforms = [\"linux_amd64\"]\nmodule \"example/vpc/aws\" {}\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	req.NoDeps = true
	res, err := export.Run(context.Background(), req, options(t, in, t.TempDir(), nil))
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Manifest.Catalog; len(c.Modules) != 1 || len(c.Providers) != 0 {
		t.Fatalf("--no-deps exported %d modules and %d providers", len(c.Modules), len(c.Providers))
	}
}
