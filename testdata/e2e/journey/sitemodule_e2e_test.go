package journey

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// The site's own modules: site.example/net/vpc/aws is published from the
// site's git server (smart HTTP on loopback, tags v1.0.0 and v1.1.0) and
// calls site.example/net/subnet/aws, published from an HTTP archive per
// version, and the public example/subnet/aws. The bundle imports and serves
// them under site.example, and the real terraform installs them offline
// (host block from client-config, and DNS pointing site.example at the
// appliance), and so does OpenTofu; plan shows the outputs of the version
// asked for.
const siteVPCv1 = `output "name" {
  value = "vpc-1.0.0"
}
`

const siteVPCv11 = `module "subnet" {
  source  = "site.example/net/subnet/aws"
  version = "~> 1.0"
}

module "public" {
  source  = "example/subnet/aws"
  version = "~> 2.0"
}

output "name" {
  value = "vpc-1.1.0+${module.subnet.cidr}"
}
`

const siteManifest = `platforms = ["linux_amd64"]

module "site.example/net/vpc/aws" {
  source   = "git::https://git.site.example/net/vpc.git"
  versions = ["1.0.0", "1.1.0"]
}

module "site.example/net/subnet/aws" {
  source   = "https://archives.example.com/site-subnet-${version}.tar.gz"
  versions = ["1.0.0"]
}
`

const siteProject = `module "vpc" {
  source  = "site.example/net/vpc/aws"
  version = "1.1.0"
}

output "vpc" {
  value = module.vpc.name
}
`

func TestSiteModulesOffline(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	in := registrytest.World(t)
	in.AddGitRelease(t, "net/vpc", "v1.0.0", map[string]string{"main.tf": siteVPCv1})
	in.AddGitRelease(t, "net/vpc", "v1.1.0", map[string]string{"main.tf": siteVPCv11})
	in.AddArchive(t, "site-subnet-1.0.0.tar.gz", map[string]string{"main.tf": "output \"cidr\" {\n  value = \"10.0.0.0/24\"\n}\n"})
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"), "SOURCE_DATE_EPOCH=1767225600")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "site.hcl"), []byte(siteManifest), 0o644)
	cache := filepath.Join(work, "cache")
	out := harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", "site.hcl", "--sign-key", "k/site.key.asc", "--out", "site.bundle", "--cache", cache)
	t.Log(out)
	for _, want := range []string{"4 module versions"} {
		if !strings.Contains(out, want) {
			t.Errorf("export output lacks %q:\n%s", want, out)
		}
	}

	// Mistakes are errors that name the block and nothing is written.
	// The hint matches the failure: a missing ref is not a missing
	// repository.
	for _, c := range []struct{ name, manifest, want, notWant string }{
		{"missing ref", strings.Replace(siteManifest, `["1.0.0", "1.1.0"]`, `["1.0.0", "1.2.0"]`, 1), `ref "v1.2.0": not found in the repository
hint: bad.hcl:3 publishes version 1.2.0 from git ref "v1.2.0"; create that tag or branch in the repository`, ""},
		{"missing repository", strings.Replace(siteManifest, "net/vpc.git", "net/vcp.git", 1),
			"from git::https://git.site.example/net/vcp.git, which git could not clone: check the repository's URL in the block's source (is it there, is it spelled right?) and that this machine may read it", "tag or branch"},
		{"not semver", strings.Replace(siteManifest, `["1.0.0", "1.1.0"]`, `["v1.0.0"]`, 1), `bad.hcl:5:14: module "site.example/net/vpc/aws": version "v1.0.0" is not a semantic version`, ""},
		{"public host", strings.Replace(siteManifest, `"site.example/net/vpc/aws"`, `"registry.terraform.io/net/vpc/aws"`, 1), "registry.terraform.io is a public registry", ""},
		{"no host", strings.Replace(siteManifest, `"site.example/net/vpc/aws"`, `"net/vpc/aws"`, 1), "needs its host in the address", ""},
		{"ref in source", strings.Replace(siteManifest, `vpc.git"`, `vpc.git?ref=main"`, 1), "not ?ref= in source", ""},
		{"other variable", strings.Replace(siteManifest, `${version}`, `${var.x}`, 1), "may use ${version} and nothing else", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.WriteFile(filepath.Join(work, "bad.hcl"), []byte(c.manifest), 0o644)
			out, err := harness.CmdRun(t, work, online, harness.Bin, "export", "--manifest", "bad.hcl", "--sign-key", "k/site.key.asc", "--out", "bad.bundle", "--cache", cache)
			if err == nil || !strings.Contains(out, c.want) || (c.notWant != "" && strings.Contains(out, c.notWant)) {
				t.Errorf("err %v, want %q (and not %q) in:\n%s", err, c.want, c.notWant, out)
			}
			if _, err := os.Stat(filepath.Join(work, "bad.bundle")); err == nil {
				t.Error("a failed export left a bundle file")
			}
		})
	}
	if out, _ := harness.CmdRun(t, work, online, harness.Bin, "export", "--manifest", "site.hcl", "--dry-run", "--cache", cache); !strings.Contains(out, "module site.example/net/vpc/aws 1.1.0: git::https://git.site.example/net/vpc.git?ref=v1.1.0") {
		t.Errorf("the plan does not show where the site module comes from:\n%s", out)
	}

	storeDir := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", "site.bundle")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", storeDir, "site.bundle")
	inv := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", storeDir)
	for _, want := range []string{"site.example/net/vpc/aws", "site.example/net/subnet/aws", "registry.terraform.io/example/subnet/aws"} {
		if !strings.Contains(inv, want) {
			t.Errorf("inventory lacks %s:\n%s", want, inv)
		}
	}

	// The offline side publishes a release of its own: an export against
	// the site's git server with the offline side's key, with no registry
	// reachable (--no-deps: what the module needs from the internet comes
	// from the connected side), imported into the same store.
	in.AddGitRelease(t, "net/vpc", "v1.2.0", map[string]string{"main.tf": "output \"name\" {\n  value = \"vpc-1.2.0\"\n}\n"})
	for _, h := range []string{"registry.terraform.io", "releases.hashicorp.com", "archives.example.com", "github.com"} {
		in.Block(h)
	}
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/offline", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "offline.hcl"), []byte("module \"site.example/net/vpc/aws\" {\n  source   = \"git::https://git.site.example/net/vpc.git\"\n  versions = [\"1.2.0\"]\n}\n"), 0o644)
	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", "offline.hcl", "--no-deps", "--sign-key", "k/offline.key.asc", "--out", "offline.bundle", "--cache", filepath.Join(work, "cache2"))
	pub1, _ := os.ReadFile(filepath.Join(work, "k/site.pub.asc"))
	pub2, _ := os.ReadFile(filepath.Join(work, "k/offline.pub.asc"))
	os.WriteFile(filepath.Join(work, "both.asc"), append(pub1, pub2...), 0o644)
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "both.asc", "--store", storeDir, "offline.bundle")

	srv := harness.StartServe(t, storeDir, "--hostname", "site.example")
	base, caFile := srv.Base, srv.CAFile
	plan := func(t *testing.T, env []string, version, want string) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "main.tf"), []byte(strings.Replace(siteProject, "1.1.0", version, 1)), 0o644)
		harness.MustRun(t, dir, env, tf, "init", "-input=false", "-no-color")
		if out := harness.MustRun(t, dir, env, tf, "plan", "-input=false", "-no-color"); !strings.Contains(out, want) {
			t.Errorf("plan of version %s lacks %q:\n%s", version, want, out)
		}
	}
	t.Run("client-config", func(t *testing.T) {
		rc := filepath.Join(t.TempDir(), "airgap.tfrc")
		cfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", base)
		if !strings.Contains(cfg, `host "site.example"`) {
			t.Errorf("client-config has no host block for the site's module host:\n%s", cfg)
		}
		os.WriteFile(rc, []byte(cfg), 0o644)
		env := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
			"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
		plan(t, env, "1.1.0", `vpc = "vpc-1.1.0+10.0.0.0/24"`)
		plan(t, env, "1.2.0", `vpc = "vpc-1.2.0"`)
	})
	t.Run("tofu", func(t *testing.T) {
		rc := filepath.Join(t.TempDir(), "airgap.tofurc")
		os.WriteFile(rc, []byte(harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", base, "--tool", "tofu")), 0o644)
		env := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
			"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
		dir := t.TempDir()
		// 1.0.0 calls nothing: 1.1.0's short-form call of a public module
		// would mean registry.opentofu.org to OpenTofu.
		os.WriteFile(filepath.Join(dir, "main.tf"), []byte(strings.Replace(siteProject, "1.1.0", "1.0.0", 1)), 0o644)
		tofu := harness.TofuBin(t)
		harness.MustRun(t, dir, env, tofu, "init", "-input=false", "-no-color")
		if out := harness.MustRun(t, dir, env, tofu, "plan", "-input=false", "-no-color"); !strings.Contains(out, `vpc = "vpc-1.0.0"`) {
			t.Errorf("tofu plan:\n%s", out)
		}
	})
	t.Run("dns", func(t *testing.T) {
		u, _ := url.Parse(base)
		env := []string{"TF_CLI_CONFIG_FILE=" + filepath.Join(t.TempDir(), "none.tfrc"), "SSL_CERT_FILE=" + caFile,
			"HTTPS_PROXY=" + registrytest.DNSOverride(t, "127.0.0.1:"+u.Port()), "NO_PROXY="}
		plan(t, env, "1.0.0", `vpc = "vpc-1.0.0"`)
	})
	cl, _, _ := harness.CAClient(t, storeDir)
	if _, page := harness.HTTPGet(t, cl, base+"?q=site.example"); !strings.Contains(string(page), "site.example/net/vpc/aws") {
		t.Errorf("the catalog page does not list the site's module:\n%s", page)
	}
}
