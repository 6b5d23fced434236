package journey

import (
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestVendoredModulesOffline (issue 16): a registry module that calls a
// git::https://…//sub?ref=v1 module, a GitHub shorthand module (which calls
// its sibling through ../ and an HTTP archive) and an HTTP tar.gz module is
// exported with its sources vendored; offline, with the route out dead, the
// real terraform runs init, validate and plan in both client modes, and
// the innermost module's output reaches the root.
func TestVendoredModulesOffline(t *testing.T) {
	t.Parallel()
	tf := harness.TerraformBin(t)
	in := registrytest.World(t)
	in.AddVendorModules(t)
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"), "SOURCE_DATE_EPOCH=1767225600")
	harness.MustRun(t, work, nil, harness.Bin, "keygen", "--out", "k/site", "--no-passphrase")
	manifest := filepath.Join(work, "airgap.hcl")
	os.WriteFile(manifest, []byte("platforms = [\"linux_amd64\"]\nmodule \"example/wrap/aws\" {}\n"), 0o644)
	bundleFile := filepath.Join(work, "v.bundle")
	out := harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", manifest, "--sign-key", "k/site.key.asc", "--out", bundleFile, "--cache", filepath.Join(work, "cache"))
	t.Log(out)
	exportOut := out
	// Sources that cannot be vendored fail the export, all listed with
	// file:line and what to do; --allow-unvendored makes them warnings.
	os.WriteFile(filepath.Join(work, "bad.hcl"), []byte("platforms = [\"linux_amd64\"]\nmodule \"example/bad/aws\" {}\n"), 0o644)
	bad := []string{"export", "--manifest", "bad.hcl", "--dry-run", "--cache", filepath.Join(work, "cache")}
	out, err := harness.CmdRun(t, work, online, harness.Bin, bad...)
	for _, want := range []string{`main.tf:4: module "bucket"`, `main.tf:8: module "computed"`, `main.tf:12: module "gone"`, "hint:", "--allow-unvendored"} {
		if err == nil || !strings.Contains(out, want) {
			t.Errorf("export of unvendorable sources (err %v) lacks %q:\n%s", err, want, out)
		}
	}
	out = harness.MustRun(t, work, online, harness.Bin, append(bad, "--allow-unvendored")...)
	for _, line := range []string{"4: module \"bucket\"", "8: module \"computed\"", "12: module \"gone\": fetching git::https://github.com/example/does-not-exist.git"} {
		if !strings.Contains(out, "warning: module registry.terraform.io/example/bad/aws 1.0.0: main.tf:"+line) {
			t.Errorf("--allow-unvendored: no warning for main.tf:%s\n%s", line, out)
		}
	}
	// The same with --no-vendor: the old warnings, naming file:line.
	out = harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", manifest, "--no-vendor", "--dry-run", "--cache", filepath.Join(work, "cache"))
	if !strings.Contains(out, "main.tf:2") || !strings.Contains(out, "non-registry source") {
		t.Errorf("--no-vendor did not warn with file:line:\n%s", out)
	}

	store := filepath.Join(work, "store")
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", store, bundleFile)
	inv := harness.MustRun(t, work, nil, harness.Bin, "inventory", "--store", store)
	if !strings.Contains(inv, "vendored main.tf:4 git::https://github.com/example/net.git//sub?ref=v1 -> ./.airgap/modules/") {
		t.Errorf("inventory does not show the rewrites:\n%s", inv)
	}
	srv := harness.StartServe(t, store, "--hostname", "registry.terraform.io", "--hostname", "registry.opentofu.org")
	base, caFile := srv.Base, srv.CAFile

	project := "module \"wrap\" {\n  source  = \"example/wrap/aws\"\n  version = \"1.0.0\"\n}\n\n" +
		"output \"leaf\" {\n  value = module.wrap.leaf\n}\n\noutput \"net\" {\n  value = module.wrap.net\n}\n\noutput \"direct\" {\n  value = module.wrap.direct\n}\n"
	offline := func(t *testing.T, base, caFile, mode string) (env []string, dir string) {
		rc := filepath.Join(t.TempDir(), "airgap.tfrc")
		cfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", mode)
		os.WriteFile(rc, []byte(cfg), 0o644)
		dir = t.TempDir()
		os.WriteFile(filepath.Join(dir, "main.tf"), []byte(project), 0o644)
		// The route out is dead: git and HTTP fetches of the original
		// sources fail (git's too: every proxy variable).
		return append([]string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile, "NO_PROXY=localhost,127.0.0.1"},
			registrytest.ProxyEnv("http://127.0.0.1:9")...), dir
	}
	for _, mode := range []string{"registry", "mirror"} {
		t.Run(mode, func(t *testing.T) {
			offline, dir := offline(t, base, caFile, mode)
			harness.MustRun(t, dir, offline, tf, "init", "-input=false", "-no-color")
			if out := harness.MustRun(t, dir, offline, tf, "validate", "-no-color"); !strings.Contains(out, "Success") {
				t.Errorf("validate: %s", out)
			}
			out := harness.MustRun(t, dir, offline, tf, "plan", "-input=false", "-no-color")
			for _, want := range []string{`leaf   = "` + registrytest.VendorLeaf + `"`, `direct = "` + registrytest.VendorLeaf + `"`, `net    = "` + registrytest.VendorNet + `"`} {
				if !strings.Contains(out, want) {
					t.Errorf("plan lacks %s:\n%s", want, out)
				}
			}
			mods, _ := os.ReadFile(filepath.Join(dir, ".terraform", "modules", "modules.json"))
			if !strings.Contains(string(mods), `"wrap.app.lib.subnet"`) || !strings.Contains(string(mods), ".airgap/modules/") {
				t.Errorf("modules.json: %s", mods)
			}
		})
	}
	// DNS override: registry.terraform.io (and every other name) leads to
	// the appliance, and there is no client configuration at all.
	t.Run("dns-override", func(t *testing.T) {
		u, _ := url.Parse(base)
		env := []string{"TF_CLI_CONFIG_FILE=" + filepath.Join(t.TempDir(), "none.tfrc"), "SSL_CERT_FILE=" + caFile,
			"HTTPS_PROXY=" + registrytest.DNSOverride(t, "127.0.0.1:"+u.Port()), "NO_PROXY="}
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "main.tf"), []byte(project), 0o644)
		harness.MustRun(t, dir, env, tf, "init", "-input=false", "-no-color")
		if out := harness.MustRun(t, dir, env, tf, "plan", "-input=false", "-no-color"); !strings.Contains(out, `leaf   = "`+registrytest.VendorLeaf+`"`) {
			t.Errorf("plan:\n%s", out)
		}
	})
	t.Run("tofu", func(t *testing.T) { vendoredModulesTofu(t, in, work, store, base, caFile, exportOut) })
	// The control: the same module exported with --no-vendor does not
	// install offline (so the test above can fail).
	t.Run("no-vendor fails offline", func(t *testing.T) {
		plain := filepath.Join(work, "plain.bundle")
		harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", manifest, "--no-vendor", "--sign-key", "k/site.key.asc", "--out", plain, "--cache", filepath.Join(work, "cache"))
		// A store keeps one archive per module version: the vendored
		// store refuses the unvendored one rather than change what it serves.
		if out, err := harness.CmdRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", store, plain); err == nil || !strings.Contains(out, "example/wrap/aws") {
			t.Errorf("the store took another archive for the same module version (err %v):\n%s", err, out)
		}
		store2 := filepath.Join(t.TempDir(), "store")
		harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", store2, plain)
		srv2 := harness.StartServe(t, store2)
		base2, ca2 := srv2.Base, srv2.CAFile
		env, dir := offline(t, base2, ca2, "registry")
		if out, err := harness.CmdRun(t, dir, env, tf, "init", "-input=false", "-no-color"); err == nil || !strings.Contains(out, "github.com") {
			t.Errorf("init without vendoring succeeded offline (err %v):\n%s", err, out)
		}
	})
}

// vendoredModulesTofu runs the vendored-module journey under OpenTofu
// 1.12.6. One difference is the client's: inside the vendored packages,
// ../lib calls "example/subnet/aws", a registry address without a host,
// which Terraform resolves to registry.terraform.io (what export follows)
// and OpenTofu to registry.opentofu.org. So tofu needs that module from
// registry.opentofu.org too: export says so (exportOut, a note), tofu init
// fails offline until a bundle carries it, and then installs in every mode.
func vendoredModulesTofu(t *testing.T, in *registrytest.Internet, work, store, base, caFile, exportOut string) {
	tofu := harness.TofuBinVersion(t, harness.TofuNewVersion)
	if !strings.Contains(exportOut, `note: module registry.terraform.io/example/wrap/aws 1.0.0 calls example/subnet/aws without a host`) ||
		!strings.Contains(exportOut, `add module "registry.opentofu.org/example/subnet/aws" to the manifest`) {
		t.Errorf("export did not note the host-less call OpenTofu resolves elsewhere:\n%s", exportOut)
	}
	project := "module \"wrap\" {\n  source  = \"registry.terraform.io/example/wrap/aws\"\n  version = \"1.0.0\"\n}\n\n" +
		"output \"leaf\" {\n  value = module.wrap.leaf\n}\n\noutput \"net\" {\n  value = module.wrap.net\n}\n\noutput \"direct\" {\n  value = module.wrap.direct\n}\n"
	offline := func(t *testing.T, mode string) ([]string, string) {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "main.tf"), []byte(project), 0o644)
		if mode == "dns" {
			u, _ := url.Parse(base)
			return []string{"TF_CLI_CONFIG_FILE=" + filepath.Join(t.TempDir(), "none.rc"), "SSL_CERT_FILE=" + caFile,
				"HTTPS_PROXY=" + registrytest.DNSOverride(t, "127.0.0.1:"+u.Port()), "NO_PROXY="}, dir
		}
		rc := filepath.Join(t.TempDir(), "tofu.rc")
		os.WriteFile(rc, []byte(harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", base, "--tool", "tofu", "--mode", mode)), 0o644)
		return append([]string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile, "NO_PROXY=localhost,127.0.0.1"},
			registrytest.ProxyEnv("http://127.0.0.1:9")...), dir
	}
	// Without registry.opentofu.org/example/subnet/aws on the appliance,
	// tofu fails where Terraform succeeded, naming the address it asked for.
	env, dir := offline(t, "registry")
	if out, err := harness.CmdRun(t, dir, env, tofu, "init", "-input=false", "-no-color"); err == nil || !strings.Contains(out, `module "subnet"`) || !strings.Contains(out, "from registry.opentofu.org") {
		t.Fatalf("tofu init without the module from registry.opentofu.org (err %v):\n%s", err, out)
	}
	// The stand-in's registry.opentofu.org lists the module too (as the
	// real one lists most modules of the public registry); a bundle that
	// carries it makes the vendored module install for tofu as well.
	in.AddModule("registry.opentofu.org", "example", "subnet", "aws", "2.1.0", "https://archives.example.com/subnet-2.1.0.tar.gz")
	mf := filepath.Join(work, "tofu.hcl")
	os.WriteFile(mf, []byte("module \"registry.opentofu.org/example/subnet/aws\" {\n  versions = \"~> 2.0\"\n}\n"), 0o644)
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "none.tfrc"), "SOURCE_DATE_EPOCH=1767225600")
	b := filepath.Join(work, "tofu.bundle")
	harness.MustRun(t, work, online, harness.Bin, "export", "--manifest", mf, "--sign-key", "k/site.key.asc", "--out", b, "--cache", filepath.Join(work, "cache"))
	harness.MustRun(t, work, nil, harness.Bin, "import", "--keyring", "k/site.pub.asc", "--store", store, b)
	// serve reloads the catalog within 2 s of an import; client-config asks
	// it which origins it serves.
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		cfg := harness.MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", base, "--tool", "tofu")
		if strings.Contains(cfg, `host "registry.opentofu.org"`) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not pick up the import:\n%s", cfg)
		}
	}
	for _, mode := range []string{"registry", "mirror", "dns"} {
		t.Run(mode, func(t *testing.T) {
			env, dir := offline(t, mode)
			harness.MustRun(t, dir, env, tofu, "init", "-input=false", "-no-color")
			out := harness.MustRun(t, dir, env, tofu, "plan", "-input=false", "-no-color")
			for _, want := range []string{`leaf   = "` + registrytest.VendorLeaf + `"`, `direct = "` + registrytest.VendorLeaf + `"`, `net    = "` + registrytest.VendorNet + `"`} {
				if !strings.Contains(out, want) {
					t.Errorf("tofu plan lacks %s:\n%s", want, out)
				}
			}
			mods, _ := os.ReadFile(filepath.Join(dir, ".terraform", "modules", "modules.json"))
			if !strings.Contains(string(mods), `"wrap.app.lib.subnet"`) || !strings.Contains(string(mods), ".airgap/modules/") || !strings.Contains(string(mods), "registry.opentofu.org/example/subnet/aws") {
				t.Errorf("modules.json: %s", mods)
			}
		})
	}
}
