package journey

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/getter"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// A connected side behind a company's proxy registry: registry.terraform.io
// and its download host cannot be reached; the only route is a CLI config
// host block pointing registry.terraform.io's services at the proxy, whose
// API wants a token that only a credentials helper (a real executable the
// test writes into ~/.terraform.d/plugins) knows.
const corpManifest = `platforms = ["linux_amd64"]

provider "hashicorp/random" {
  versions = "3.6.2"
}
module "example/subnet/aws" {
  versions = "2.1.0"
}
`

const proxyRC = `host "registry.terraform.io" {
  services = {
    "providers.v1" = "https://proxy.corp.example/api/terraform/tfc/v1/providers/"
    "modules.v1"   = "https://proxy.corp.example/api/terraform/tfc/v1/modules/"
  }
}

credentials_helper "corp" {
  args = ["--vault", "team-a"]
}
`

// corpHome makes a home directory whose ~/.terraform.d/plugins holds a
// credentials helper that runs script (a POSIX shell body), and a CLI
// config with rc; it returns the environment that uses them.
func corpHome(t *testing.T, in *registrytest.Internet, rc, script string) (env []string, home string) {
	t.Helper()
	home = t.TempDir()
	plugins := filepath.Join(home, ".terraform.d", "plugins")
	os.MkdirAll(plugins, 0o755)
	os.WriteFile(filepath.Join(plugins, "terraform-credentials-corp"), []byte("#!/bin/sh\n"+script), 0o755)
	os.WriteFile(filepath.Join(home, "cli.tfrc"), []byte(rc), 0o644)
	return append(in.Env(), "HOME="+home, "TF_CLI_CONFIG_FILE="+filepath.Join(home, "cli.tfrc"), "SOURCE_DATE_EPOCH=1767225600"), home
}

// goodHelper answers registry.terraform.io with the proxy's token and logs
// how it was called.
const goodHelper = `echo "$@" >> "$HOME/helper.log"
if [ "$3" = get ] && [ "$4" = registry.terraform.io ]; then
  printf '{"token": "` + registrytest.ProxyToken + `"}'
else
  printf '{}'
fi
`

func TestExportThroughProxyRegistry(t *testing.T) {
	in := registrytest.World(t)
	in.Block("registry.terraform.io")
	in.Block("releases.hashicorp.com")
	in.Block("archives.example.com")
	work := t.TempDir()
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "airgap.hcl"), []byte(corpManifest), 0o644)
	export := func(env []string, out string, extra ...string) (string, error) {
		args := append([]string{"export", "--manifest", "airgap.hcl", "--sign-key", "k/site.key.asc", "--out", out, "--cache", t.TempDir()}, extra...)
		return harness.CmdRun(t, work, env, harness.Bin, args...)
	}

	// The control: without the host block there is no route at all.
	env, _ := corpHome(t, in, "", "")
	if out, err := export(env, "none.bundle"); err == nil || !strings.Contains(out, "registry.terraform.io") {
		t.Fatalf("an export with no route succeeded (err %v):\n%s", err, out)
	}

	env, home := corpHome(t, in, proxyRC, goodHelper)
	out, err := export(env, "proxy.bundle")
	if err != nil {
		t.Fatalf("export through the proxy: %v\n%s", err, out)
	}
	if !strings.Contains(out, "1 provider versions, 1 module versions") {
		t.Errorf("export output:\n%s", out)
	}
	log, _ := os.ReadFile(filepath.Join(home, "helper.log"))
	if !strings.Contains(string(log), "--vault team-a get registry.terraform.io") {
		t.Errorf("the credentials helper was not asked as Terraform asks it: %q", log)
	}
	rep := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", "proxy.bundle")
	if strings.Contains(rep, "mirror") {
		t.Errorf("a proxied provider is not publisher-signed:\n%s", rep)
	}

	// Hostile and broken helpers and proxies: each fails naming the source,
	// quickly, and writes no bundle.
	for _, c := range []struct {
		name, rc, helper string
		foreign          bool
		want             []string
	}{
		{"helper hangs", proxyRC, "sleep 60\n", false, []string{"terraform-credentials-corp", "no answer within 2s", "registry.terraform.io"}},
		{"helper prints garbage", proxyRC, "echo token=abc\n", false, []string{"terraform-credentials-corp", "is not a JSON object"}},
		{"helper floods", proxyRC, "yes\n", false, []string{"terraform-credentials-corp", "printed more than 65536 bytes"}},
		{"helper token with a newline", proxyRC, `printf '{"token": "a\\nb"}'` + "\n", false, []string{"terraform-credentials-corp", "control character"}},
		{"helper fails", proxyRC, "echo 'vault is sealed' >&2; exit 3\n", false, []string{"terraform-credentials-corp", "vault is sealed"}},
		{"helper gives no token", proxyRC, "printf '{}'\n", false, []string{"401", "TF_TOKEN_registry_terraform_io"}},
		{"proxy gives another host's URLs", proxyRC, goodHelper, true, []string{"the proxy registry for registry.terraform.io (host block at", "cli.tfrc:1", "https://releases.hashicorp.com/"}},
		{"helper not installed", strings.Replace(proxyRC, `"corp"`, `"vault"`, 1), goodHelper, false, []string{`credentials_helper "vault"`, "no executable terraform-credentials-vault"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in.Corp.ProxyForeign.Store(c.foreign)
			defer in.Corp.ProxyForeign.Store(false)
			env, _ := corpHome(t, in, c.rc, c.helper)
			start := time.Now()
			out, err := export(append(env, "TF_REGISTRY_CLIENT_TIMEOUT=2"), "bad.bundle")
			for _, w := range c.want {
				if err == nil || !strings.Contains(out, w) {
					t.Errorf("err %v; output lacks %q:\n%s", err, w, out)
				}
			}
			if el := time.Since(start); el > 20*time.Second {
				t.Errorf("took %s", el)
			}
			if strings.Contains(out, registrytest.ProxyToken) {
				t.Errorf("the message repeats the token:\n%s", out)
			}
			if ents, _ := filepath.Glob(filepath.Join(work, "bad.bundle*")); len(ents) > 0 {
				t.Errorf("a failed export left %v", ents)
			}
		})
	}
}

// A network mirror as the provider source (CLI config or --provider-mirror).
// With the origin reachable, every package is checked against the
// publisher's signed SHA256SUMS (and a mirror serving other bytes fails the
// export); with the origin unreachable the export is refused unless
// --trust-mirror-hashes, which marks the provider "mirror hashes only":
// verify and inventory say so, import --require-publisher-signatures
// refuses it, and the real terraform installs it from the appliance. A
// later publisher-signed bundle of the same version upgrades it.
func TestExportFromNetworkMirror(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	in := registrytest.World(t)
	work := t.TempDir()
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	os.WriteFile(filepath.Join(work, "airgap.hcl"), []byte("platforms = [\"linux_amd64\", \"darwin_arm64\"]\nprovider \"hashicorp/random\" {\n  versions = \"3.6.2\"\n}\n"), 0o644)
	rc := "provider_installation {\n  network_mirror {\n    url     = \"" + registrytest.MirrorURL + "\"\n    include = [\"registry.terraform.io/hashicorp/*\"]\n  }\n  direct {\n    exclude = [\"registry.terraform.io/hashicorp/*\"]\n  }\n}\n"
	env, _ := corpHome(t, in, rc, "")
	bundleOut := func(name string) string { return filepath.Join(work, name) }
	export := func(out string, extra ...string) (string, error) {
		args := append([]string{"export", "--manifest", "airgap.hcl", "--sign-key", "k/site.key.asc", "--out", bundleOut(out), "--cache", t.TempDir()}, extra...)
		return harness.CmdRun(t, work, env, harness.Bin, args...)
	}
	noBundle := func(t *testing.T, name string) {
		if ents, _ := filepath.Glob(bundleOut(name) + "*"); len(ents) > 0 {
			t.Errorf("a failed export left %v", ents)
		}
	}

	// Origin reachable: checked against the publisher's signature.
	out, err := export("signed.bundle")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", bundleOut("signed.bundle")); strings.Contains(rep, "mirror hashes only") {
		t.Errorf("a mirrored provider checked against its origin is marked:\n%s", rep)
	}
	in.Corp.MirrorTamper.Store("terraform-provider-random_3.6.2_linux_amd64.zip")
	out, err = export("tampered.bundle")
	if err == nil || !strings.Contains(out, "from the network mirror "+registrytest.MirrorURL) || !strings.Contains(out, "does not match the signed SHA256SUMS") {
		t.Errorf("a mirror serving other bytes than the publisher signed (err %v):\n%s", err, out)
	}
	noBundle(t, "tampered.bundle")
	in.Corp.MirrorTamper.Store("")

	// Origin unreachable.
	in.Block("registry.terraform.io")
	in.Block("releases.hashicorp.com")
	out, err = export("refused.bundle")
	if err == nil || !strings.Contains(out, "its origin registry registry.terraform.io cannot be reached") || !strings.Contains(out, "--trust-mirror-hashes") {
		t.Errorf("an unverifiable mirror was not refused (err %v):\n%s", err, out)
	}
	noBundle(t, "refused.bundle")
	for _, c := range []struct {
		name, hashes, tamper string
		foreign              bool
		want                 string
	}{
		{"mirror lists no hashes", "none", "", false, "lists no h1: or zh: hash"},
		{"mirror bytes differ from its hashes", "both", "terraform-provider-random_3.6.2_darwin_arm64.zip", false, "does not match the zh: hash the mirror lists"},
		{"mirror bytes differ from its h1", "h1", "terraform-provider-random_3.6.2_darwin_arm64.zip", false, "match none of the hashes the mirror lists"},
		{"mirror gives another host's URLs", "both", "", true, "the network mirror " + registrytest.MirrorURL + " gave \"https://releases.hashicorp.com/"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in.Corp.MirrorHashes.Store(c.hashes)
			in.Corp.MirrorTamper.Store(c.tamper)
			in.Corp.MirrorForeign.Store(c.foreign)
			defer func() {
				in.Corp.MirrorHashes.Store("both")
				in.Corp.MirrorTamper.Store("")
				in.Corp.MirrorForeign.Store(false)
			}()
			out, err := export("bad.bundle", "--trust-mirror-hashes")
			if err == nil || !strings.Contains(out, c.want) {
				t.Errorf("err %v, want %q:\n%s", err, c.want, out)
			}
			noBundle(t, "bad.bundle")
		})
	}
	// Only h1: listed: the download is checked against it after the fact.
	in.Corp.MirrorHashes.Store("h1")
	out, err = export("mirror.bundle", "--trust-mirror-hashes", "--provider-mirror", registrytest.MirrorURL)
	in.Corp.MirrorHashes.Store("both")
	if err != nil || !strings.Contains(out, "carried with a network mirror's hashes only") {
		t.Fatalf("--trust-mirror-hashes (err %v):\n%s", err, out)
	}
	rep := harness.MustRun(t, work, nil, harness.Bin, "verify", "--keyring", "k/site.pub.asc", bundleOut("mirror.bundle"))
	if !strings.Contains(rep, "! mirror hashes only: provider registry.terraform.io/hashicorp/random 3.6.2 carries only the network mirror "+registrytest.MirrorURL) ||
		!strings.Contains(rep, "registry.terraform.io/hashicorp/random 3.6.2  mirror hashes only") {
		t.Errorf("verify does not show the tier:\n%s", rep)
	}

	// The offline side.
	storeDir := filepath.Join(work, "store")
	out, err = harness.CmdRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", storeDir, "--require-publisher-signatures", bundleOut("mirror.bundle"))
	if err == nil || !strings.Contains(out, "refused by --require-publisher-signatures") || !strings.Contains(out, "registry.terraform.io/hashicorp/random 3.6.2: mirror hashes only (from the network mirror "+registrytest.MirrorURL) {
		t.Errorf("import --require-publisher-signatures took it (err %v):\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(storeDir, "index.json")); err == nil {
		t.Error("the refused import wrote an index")
	}
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", storeDir, bundleOut("mirror.bundle"))
	if inv := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", storeDir); !strings.Contains(inv, "(mirror hashes only, from "+registrytest.MirrorURL) {
		t.Errorf("inventory does not show the tier:\n%s", inv)
	}
	srv := harness.StartServe(t, storeDir)
	base, caFile := srv.Base, srv.CAFile
	cl, _, _ := harness.CAClient(t, storeDir)
	if _, page := harness.HTTPGet(t, cl, base+"ui/providers/registry.terraform.io/hashicorp/random"); !bytes.Contains(page, []byte("mirror hashes only")) || !bytes.Contains(page, []byte(registrytest.MirrorURL)) {
		t.Errorf("the catalog page does not show the tier:\n%s", page)
	}
	// Terraform installs it from the appliance (the SHA256SUMS the site
	// wrote, signed by the site key: "self-signed" to terraform).
	rcFile := filepath.Join(t.TempDir(), "airgap.tfrc")
	os.WriteFile(rcFile, []byte(harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", base)), 0o644)
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte("terraform {\n  required_providers {\n    random = {\n      source  = \"hashicorp/random\"\n      version = \"3.6.2\"\n    }\n  }\n}\n"), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rcFile, "SSL_CERT_FILE=" + caFile, "HTTPS_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	out = harness.MustRun(t, dir, offline, tf, "init", "-input=false", "-no-color")
	if !strings.Contains(out, "Installed hashicorp/random v3.6.2 (self-signed") {
		t.Errorf("terraform init:\n%s", out)
	}
	if zh := zhHashes(t, filepath.Join(dir, ".terraform.lock.hcl")); len(zh) != 2 {
		t.Errorf("the lock file has %d zh: hashes, want the 2 carried platforms: %v", len(zh), zh)
	}

	// The publisher-signed bundle of the same version (exported while the
	// origin could be reached) takes its place.
	out = harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", storeDir, "--require-publisher-signatures", bundleOut("signed.bundle"))
	if !strings.Contains(out, "now publisher-signed") {
		t.Errorf("the upgrade is not reported:\n%s", out)
	}
	// (the history lists the trust change from the mirror's hashes to the publisher's signature)
	if inv := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", storeDir); strings.Contains(inv, "(mirror hashes only, from") || !strings.Contains(inv, "trust change: provider registry.terraform.io/hashicorp/random 3.6.2: its SHA256SUMS (mirror hashes only) and signature changes") {
		t.Errorf("inventory still shows the mirror tier:\n%s", inv)
	}
	// … and the mirror bundle cannot take it back.
	if out, err := harness.CmdRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", storeDir, bundleOut("mirror.bundle")); err == nil || !strings.Contains(out, "mirror hashes only, which cannot replace") {
		t.Errorf("a mirror-hashes bundle replaced the publisher's signature (err %v):\n%s", err, out)
	}
	_ = fmt.Sprint
}

// TestProxyAllowDownloadHost: through a proxy registry, a module whose
// download answer names another host (registry.terraform.io's own point at
// github.com) is refused by default, with a hint naming the flag; allowed
// with --allow-download-host HOST (or allow_download_hosts in the
// manifest), it is fetched from that host as any git source is — said in
// the output, still within the git size bound — and no other host is let
// through. Bad values are refused before anything is fetched.
func TestProxyAllowDownloadHost(t *testing.T) {
	t.Parallel()
	in := registrytest.World(t)
	for _, h := range []string{"registry.terraform.io", "releases.hashicorp.com", "archives.example.com"} {
		in.Block(h)
	}
	work := t.TempDir()
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	const manifest = "platforms = [\"linux_amd64\"]\n\nmodule \"example/vpc/aws\" {\n  versions = \"1.0.0\"\n}\n"
	os.WriteFile(filepath.Join(work, "airgap.hcl"), []byte(manifest), 0o644)
	os.WriteFile(filepath.Join(work, "allowing.hcl"), []byte("allow_download_hosts = [\"github.com\"]\n"+manifest), 0o644)
	env, _ := corpHome(t, in, proxyRC, goodHelper)
	export := func(m, out string, extra ...string) (string, error) {
		args := append([]string{"export", "--manifest", m, "--sign-key", "k/site.key.asc", "--out", out, "--cache", t.TempDir()}, extra...)
		return harness.CmdRun(t, work, env, harness.Bin, args...)
	}
	out, err := export("airgap.hcl", "refused.bundle")
	for _, want := range []string{`the proxy registry for registry.terraform.io (host block at`, `gave "git::https://github.com/example/terraform-aws-vpc?ref=v1.0.0"`,
		"hint: through a proxy registry airgap fetches only from the proxy itself unless told otherwise: if this machine may reach github.com, allow it with --allow-download-host github.com (or allow_download_hosts = [\"github.com\"] in the manifest)"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("by default (err %v) the export does not say %q:\n%s", err, want, out)
		}
	}
	notice := "fetching from https://github.com:443, outside the proxy registry for registry.terraform.io (host block at "
	for _, c := range []struct {
		name, manifest string
		extra          []string
	}{
		{"flag", "airgap.hcl", []string{"--allow-download-host", "github.com"}},
		{"manifest", "allowing.hcl", nil},
	} {
		out, err := export(c.manifest, c.name+".bundle", c.extra...)
		if err != nil || !strings.Contains(out, notice) || !strings.Contains(out, "allowed by --allow-download-host github.com") || !strings.Contains(out, "2 module versions") {
			t.Errorf("allowed by the %s (err %v):\n%s", c.name, err, out)
		}
	}
	// Another host is still refused; the allowed host is still bounded.
	if out, err := export("airgap.hcl", "other.bundle", "--allow-download-host", "gitlab.com"); err == nil || !strings.Contains(out, `gave "git::https://github.com/`) {
		t.Errorf("allowing gitlab.com let github.com through (err %v):\n%s", err, out)
	}
	bomb := in.AddDeltaBomb(t, "evil/bomb", 1<<30)
	in.AddModule("registry.terraform.io", "evil", "gitbomb", "aws", "1.0.0", "git::"+bomb)
	os.WriteFile(filepath.Join(work, "bomb.hcl"), []byte("module \"evil/gitbomb/aws\" {}\n"), 0o644)
	if out, err := export("bomb.hcl", "bomb.bundle", "--allow-download-host", "github.com"); err == nil || !strings.Contains(out, fmt.Sprintf("takes more than %d bytes to unpack", getter.MaxGitAllocation)) {
		t.Errorf("a git source on the allowed host is not bounded as any git source (err %v):\n%s", err, out)
	}
	for _, bad := range []string{"https://github.com", "*.github.com", "github.com/example", "", "user@github.com", "github.com:99999"} {
		out, err := export("airgap.hcl", "bad.bundle", "--allow-download-host", bad)
		if harness.ExitCode(err) != 2 || !strings.Contains(out, "--allow-download-host") {
			t.Errorf("--allow-download-host %q: exit %d\n%s", bad, harness.ExitCode(err), out)
		}
	}
	os.WriteFile(filepath.Join(work, "bad.hcl"), []byte("allow_download_hosts = [\"*.github.com\"]\n"+manifest), 0o644)
	if out, err := export("bad.hcl", "bad.bundle"); err == nil || !strings.Contains(out, `bad.hcl:1:1: allow_download_hosts: "*.github.com": give a host name`) {
		t.Errorf("a bad allow_download_hosts (err %v):\n%s", err, out)
	}
	if ents, _ := filepath.Glob(filepath.Join(work, "*.bundle")); len(ents) != 2 {
		t.Errorf("bundles written: %v, want flag.bundle and manifest.bundle", ents)
	}
}
