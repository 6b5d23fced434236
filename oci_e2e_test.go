package main

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/airgap/airgap/dist/registrytest"
)

// ociProject is a tofu project that takes providers from two origins and
// modules through oci:// (a plain one by tag, one in a subdirectory of its
// source repository, one by "latest"). HOST is the appliance.
const ociProject = `terraform {
  required_providers {
    random = {
      source  = "registry.terraform.io/hashicorp/random"
      version = "~> 3.5"
    }
    local = {
      source  = "hashicorp/local"
      version = "2.5.1"
    }
  }
}

module "subnet" {
  source = "oci://HOST/registry.terraform.io/modules/example/subnet/aws?tag=2.1.0"
}

module "sub" {
  source = "oci://HOST/registry.terraform.io/modules/example/sub/aws//modules/sub?tag=2.0.0"
}

module "tofu" {
  source = "oci://HOST/registry.opentofu.org/modules/example/tofu/aws"
}

output "ids" {
  value = [module.subnet.id, module.sub.x, module.tofu.t]
}
`

// exportImportServe runs the connected and offline sides of the journey
// for manifest against the stand-in internet in: keygen, export, import,
// serve. It returns the store, the appliance's base URL and its CA file.
func exportImportServe(t *testing.T, in *registrytest.Internet, manifest string) (storeDir, base, caFile string) {
	t.Helper()
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"), "SOURCE_DATE_EPOCH=1767225600")
	keys := filepath.Join(work, "keys", "site")
	os.MkdirAll(filepath.Dir(keys), 0o700)
	mustRun(t, work, nil, airgapBin, "keygen", "--out", keys, "--name", "Site Ops <ops@site.test>")
	mf := filepath.Join(work, "airgap.hcl")
	os.WriteFile(mf, []byte(manifest), 0o644)
	b := filepath.Join(work, "site.bundle")
	mustRun(t, work, online, airgapBin, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", b, "--cache", filepath.Join(work, "cache"))
	storeDir = filepath.Join(work, "store")
	mustRun(t, work, nil, airgapBin, "import", "--keyring", keys+".pub.asc", "--store", storeDir, b)
	base, caFile = startServe(t, storeDir)
	return storeDir, base, caFile
}

// registryShasum asks the appliance's provider registry protocol for the
// sha256 of one package (what a registry-protocol lock file records as zh:).
func registryShasum(t *testing.T, base, caFile, path string) string {
	t.Helper()
	pem, _ := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	cl := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := cl.Get(base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct{ Shasum string }
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil || d.Shasum == "" {
		t.Fatalf("%s: %s %v", path, resp.Status, err)
	}
	return "zh:" + d.Shasum
}

// TestOpenTofuOCI: offline 'tofu init' installs providers through
// oci_mirror and modules through oci:// from 'airgap serve', and the
// registry-mode journey works with tofu too. The zh: hashes OCI mode records
// are those of the registry protocol.
func TestOpenTofuOCI(t *testing.T) {
	tofu := tofuBin(t)
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	_, base, caFile := exportImportServe(t, in, e2eManifest)
	host := strings.TrimSuffix(strings.TrimPrefix(base, "https://"), "/")
	project := strings.ReplaceAll(ociProject, "HOST", host)

	locks := map[string]string{}
	for _, mode := range []string{"registry", "oci"} {
		t.Run(mode, func(t *testing.T) {
			rc := filepath.Join(t.TempDir(), "tofu.rc")
			cfg := mustRun(t, t.TempDir(), []string{"SSL_CERT_FILE=" + caFile}, airgapBin, "client-config", "--url", base, "--tool", "tofu", "--mode", mode)
			if !strings.Contains(cfg, "TF_CLI_CONFIG_FILE") || strings.Contains(cfg, "TOFU_CLI_CONFIG_FILE") {
				t.Errorf("the tofu config must name TF_CLI_CONFIG_FILE:\n%s", cfg)
			}
			os.WriteFile(rc, []byte(cfg), 0o644)
			offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
				"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
			dir := filepath.Join(t.TempDir(), "project")
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "main.tf"), []byte(project), 0o644)
			out := mustRun(t, dir, offline, tofu, "init", "-input=false", "-no-color")
			// oci_mirror is the only installation method in OCI mode: the
			// packages are checked against the layer digest, not a signature.
			if mode == "oci" && strings.Count(out, "(verified checksum)") != 2 {
				t.Errorf("providers were not installed through oci_mirror: %s", out)
			}
			for _, f := range []string{"subnet/main.tf", "sub/modules/sub/main.tf", "tofu/main.tf"} {
				if _, err := os.Stat(filepath.Join(dir, ".terraform", "modules", filepath.FromSlash(f))); err != nil {
					t.Errorf("module file %s not installed from oci://: %v", f, err)
				}
			}
			// The installed plugins run.
			if out := mustRun(t, dir, offline, tofu, "validate", "-no-color"); !strings.Contains(out, "Success") {
				t.Errorf("validate: %s", out)
			}
			lock, _ := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
			locks[mode] = string(lock)
			t.Logf("tofu init (%s mode):\n%s\nlock:\n%s", mode, out, lock)
			if mode == "oci" {
				// Another platform for the lock, through the appliance's network mirror.
				mustRun(t, dir, offline, tofu, "providers", "lock", "-no-color", "-platform=linux_amd64", "-platform=darwin_arm64", "-net-mirror="+base+"mirror/")
			}
		})
	}
	// zh: of the linux_amd64 packages, as the registry protocol reports them.
	want := []string{
		registryShasum(t, base, caFile, "origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.2/download/linux/amd64"),
		registryShasum(t, base, caFile, "origin/registry.opentofu.org/v1/providers/hashicorp/local/2.5.1/download/linux/amd64"),
	}
	for _, zh := range want {
		for mode, lock := range locks {
			if !strings.Contains(lock, zh) {
				t.Errorf("%s mode lock file lacks %s (the registry protocol's hash):\n%s", mode, zh, lock)
			}
		}
	}
	if n := strings.Count(locks["oci"], "zh:"); n != len(want) {
		t.Errorf("oci mode lock records %d zh: hashes, want the %d installed ones:\n%s", n, len(want), locks["oci"])
	}
}
