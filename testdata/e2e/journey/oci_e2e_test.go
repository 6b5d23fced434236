package journey

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// exportImportServe runs the connected and offline sides of the journey
// for manifest against the stand-in internet in: keygen, export, import,
// serve. It returns the store, the appliance's base URL and its CA file.
func exportImportServe(t *testing.T, in *registrytest.Internet, manifest string, serveArgs ...string) (storeDir, base, caFile string) {
	t.Helper()
	storeDir = harness.ExportImport(t, in, manifest)
	srv := harness.StartServe(t, storeDir, serveArgs...)
	base, caFile = srv.Base, srv.CAFile
	return storeDir, base, caFile
}

// registryShasum asks the appliance's provider registry protocol for the
// sha256 of one package (what a registry-protocol lock file records as zh:).
func registryShasum(t *testing.T, base, caFile, path string) string {
	t.Helper()
	resp, err := harness.CAFileClient(t, caFile).Get(base + path)
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
// registry and mirror modes work with tofu too. The zh: hashes OCI mode records
// are those of the registry protocol.
func TestOpenTofuOCI(t *testing.T) {
	t.Parallel()
	tofu := harness.TofuBin(t)
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	_, base, caFile := exportImportServe(t, in, harness.E2EManifest)
	host := strings.TrimSuffix(strings.TrimPrefix(base, "https://"), "/")
	project := strings.ReplaceAll(harness.OCIProject, "HOST", host)

	locks := map[string]string{}
	for _, mode := range []string{"registry", "mirror", "oci"} {
		t.Run(mode, func(t *testing.T) {
			rc := filepath.Join(t.TempDir(), "tofu.rc")
			cfg := harness.MustRun(t, t.TempDir(), []string{"SSL_CERT_FILE=" + caFile}, harness.Bin, "client-config", "--url", base, "--tool", "tofu", "--mode", mode)
			if !strings.Contains(cfg, "TF_CLI_CONFIG_FILE") || strings.Contains(cfg, "TOFU_CLI_CONFIG_FILE") {
				t.Errorf("the tofu config must name TF_CLI_CONFIG_FILE:\n%s", cfg)
			}
			os.WriteFile(rc, []byte(cfg), 0o644)
			offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
				"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
			dir := filepath.Join(t.TempDir(), "project")
			os.MkdirAll(dir, 0o755)
			os.WriteFile(filepath.Join(dir, "main.tf"), []byte(project), 0o644)
			out := harness.MustRun(t, dir, offline, tofu, "init", "-input=false", "-no-color")
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
			if out := harness.MustRun(t, dir, offline, tofu, "validate", "-no-color"); !strings.Contains(out, "Success") {
				t.Errorf("validate: %s", out)
			}
			lock, _ := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
			locks[mode] = string(lock)
			t.Logf("tofu init (%s mode):\n%s\nlock:\n%s", mode, out, lock)
			if mode == "oci" {
				// Another platform for the lock, through the appliance's network mirror.
				harness.MustRun(t, dir, offline, tofu, "providers", "lock", "-no-color", "-platform=linux_amd64", "-platform=darwin_arm64", "-net-mirror="+base+"mirror/")
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

// TestPushToDistribution: 'airgap push' publishes the store into a real
// registry (idempotently: the second run sends nothing), the registry then
// holds exactly the appliance's layout (same digests), and offline 'tofu
// init' installs providers and a module from that registry.
func TestPushToDistribution(t *testing.T) {
	tofu := harness.TofuBin(t)
	reg := harness.StartRegistry(t)
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	storeDir, base, caFile := exportImportServe(t, in, harness.E2EManifest)
	target := reg.Host + "/site/tf"
	pushEnv := []string{"SSL_CERT_FILE=" + reg.CAFile, oci.PasswordEnv + "=" + reg.Password, "DOCKER_CONFIG=" + t.TempDir()}

	// Without credentials: a clear refusal that says how to log in.
	out, err := harness.CmdRun(t, "", []string{"SSL_CERT_FILE=" + reg.CAFile, "DOCKER_CONFIG=" + t.TempDir()}, harness.Bin, "push", "--store", storeDir, "--to", target)
	if err == nil || !strings.Contains(out, "hint:") || !strings.Contains(out, "--username") {
		t.Fatalf("push without credentials: %v\n%s", err, out)
	}
	start := time.Now()
	out = harness.MustRun(t, "", pushEnv, harness.Bin, "push", "--store", storeDir, "--to", target, "--username", reg.User, "--json")
	took := time.Since(start)
	var res oci.PushResult
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("push --json: %v\n%s", err, out)
	}
	if res.TagsPushed == 0 || res.TagsPushed != len(res.Tags) || res.BytesPushed == 0 {
		t.Fatalf("first push: %+v", res)
	}
	t.Logf("first push: %d repositories, %d tags, %d blobs, %d bytes in %v", res.Repositories, len(res.Tags), res.BlobsPushed, res.BytesPushed, took)
	// The registry serves each tag with the digest the appliance serves.
	acl := harness.CAFileClient(t, caFile)
	for _, tg := range res.Tags {
		name := strings.TrimPrefix(tg.Repository, target+"/")
		req, _ := http.NewRequest(http.MethodHead, base+"v2/"+name+"/manifests/"+tg.Tag, nil)
		resp, err := acl.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Docker-Content-Digest"); got != string(tg.Digest) {
			t.Errorf("%s:%s: pushed %s, the appliance serves %s", name, tg.Tag, tg.Digest, got)
		}
	}
	// Again: everything is there, nothing is sent (password on stdin this time).
	cmd := exec.Command(harness.Bin, "push", "--store", storeDir, "--to", target, "--username", reg.User, "--password-stdin", "--json")
	cmd.Env = append(harness.BaseEnv(), "SSL_CERT_FILE="+reg.CAFile, "DOCKER_CONFIG="+t.TempDir())
	cmd.Stdin = strings.NewReader(reg.Password + "\n")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("second push: %v\n%s", err, b)
	}
	var again oci.PushResult
	if err := json.Unmarshal(b, &again); err != nil || again.TagsPushed != 0 || again.BlobsPushed != 0 || len(again.Tags) != len(res.Tags) {
		t.Fatalf("second push was not a no-op: %v %+v", err, again)
	}

	// OpenTofu, offline, from the site registry, with the block push prints.
	out = harness.MustRun(t, "", pushEnv, harness.Bin, "push", "--store", storeDir, "--to", target, "--username", reg.User)
	blocks := harness.HCLBlocks(t, out)
	if len(blocks) != 1 || !strings.Contains(blocks[0], "oci_mirror") {
		t.Fatalf("push prints no provider_installation block:\n%s", out)
	}
	harness.ParseHCL(t, "push", blocks[0])
	rc := filepath.Join(t.TempDir(), "tofu.rc")
	os.WriteFile(rc, []byte(blocks[0]+fmt.Sprintf(`oci_credentials %q {
  username = %q
  password = %q
}
`, reg.Host, reg.User, reg.Password)), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + reg.CAFile, "DOCKER_CONFIG=" + t.TempDir(),
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	dir := filepath.Join(t.TempDir(), "project")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(strings.ReplaceAll(harness.OCIProject, "HOST", target)), 0o644)
	out = harness.MustRun(t, dir, offline, tofu, "init", "-input=false", "-no-color")
	if strings.Count(out, "(verified checksum)") != 2 {
		t.Errorf("providers not installed from the registry: %s", out)
	}
	for _, f := range []string{"subnet/main.tf", "sub/modules/sub/main.tf", "tofu/main.tf"} {
		if _, err := os.Stat(filepath.Join(dir, ".terraform", "modules", filepath.FromSlash(f))); err != nil {
			t.Errorf("module file %s not installed from the registry: %v", f, err)
		}
	}
	lock, _ := os.ReadFile(filepath.Join(dir, ".terraform.lock.hcl"))
	for _, zh := range []string{
		registryShasum(t, base, caFile, "origin/registry.terraform.io/v1/providers/hashicorp/random/3.6.2/download/linux/amd64"),
		registryShasum(t, base, caFile, "origin/registry.opentofu.org/v1/providers/hashicorp/local/2.5.1/download/linux/amd64"),
	} {
		if !strings.Contains(string(lock), zh) {
			t.Errorf("lock from the registry lacks %s:\n%s", zh, lock)
		}
	}
}
