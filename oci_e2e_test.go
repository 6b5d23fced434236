package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/oci"
	"github.com/airgap/airgap/dist/registrytest"
	"golang.org/x/crypto/bcrypt"
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
func exportImportServe(t *testing.T, in *registrytest.Internet, manifest string, serveArgs ...string) (storeDir, base, caFile string) {
	t.Helper()
	storeDir = exportImport(t, in, manifest)
	base, caFile = startServe(t, storeDir, serveArgs...)
	return storeDir, base, caFile
}

// exportImport is exportImportServe without the serve: it returns the
// store.
func exportImport(t *testing.T, in *registrytest.Internet, manifest string) string {
	t.Helper()
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"), "SOURCE_DATE_EPOCH=1767225600")
	keys := filepath.Join(work, "keys", "site")
	os.MkdirAll(filepath.Dir(keys), 0o700)
	mustRun(t, work, nil, airgapBin, "keygen", "--no-passphrase", "--out", keys, "--name", "Site Ops <ops@site.test>")
	mf := filepath.Join(work, "airgap.hcl")
	os.WriteFile(mf, []byte(manifest), 0o644)
	b := filepath.Join(work, "site.bundle")
	mustRun(t, work, online, airgapBin, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", b, "--cache", filepath.Join(work, "cache"))
	storeDir := filepath.Join(work, "store")
	mustRun(t, work, nil, airgapBin, "import", "--keyring", keys+".pub.asc", "--store", storeDir, b)
	return storeDir
}

// registryShasum asks the appliance's provider registry protocol for the
// sha256 of one package (what a registry-protocol lock file records as zh:).
func registryShasum(t *testing.T, base, caFile, path string) string {
	t.Helper()
	resp, err := caFileClient(t, caFile).Get(base + path)
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
	tofu := tofuBin(t)
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	_, base, caFile := exportImportServe(t, in, e2eManifest)
	host := strings.TrimSuffix(strings.TrimPrefix(base, "https://"), "/")
	project := strings.ReplaceAll(ociProject, "HOST", host)

	locks := map[string]string{}
	for _, mode := range []string{"registry", "mirror", "oci"} {
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

// distributionVersion is the CNCF distribution registry the push tests
// publish into.
const distributionVersion = "3.1.2"

// registryMain is distribution's cmd/registry with only the filesystem
// storage driver and htpasswd auth: the cloud storage SDKs it leaves out
// are most of the registry's build time.
const registryMain = `package main

import (
	"github.com/distribution/distribution/v3/registry"
	_ "github.com/distribution/distribution/v3/registry/auth/htpasswd"
	_ "github.com/distribution/distribution/v3/registry/storage/driver/filesystem"
)

func main() { registry.RootCmd.Execute() }
`

// ociRegistry is a real OCI registry (CNCF distribution, built from its Go
// module once and cached like tofu) on loopback with TLS and htpasswd auth.
type ociRegistry struct {
	host, caFile, user, password string
}

func startRegistry(t *testing.T) *ociRegistry {
	t.Helper()
	bin, errText := buildFromModule("github.com/distribution/distribution/v3", distributionVersion, "./cmd/registry", "registry-slim-"+distributionVersion, registryMain)
	if errText != "" {
		t.Fatalf("the distribution registry %s is required by the OCI push tests and could not be built: %s", distributionVersion, errText)
	}
	dir := t.TempDir()
	caFile, certFile, keyFile := writeTestPKI(t, dir)
	reg := &ociRegistry{host: fmt.Sprintf("127.0.0.1:%d", freePort(t)), caFile: caFile, user: "pusher", password: "s3cret-pw"}
	hash, err := bcrypt.GenerateFromPassword([]byte(reg.password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(reg.user+":"+string(hash)+"\n"), 0o600)
	cfg := fmt.Sprintf(`version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: %s
http:
  addr: %s
  tls:
    certificate: %s
    key: %s
auth:
  htpasswd:
    realm: test
    path: %s
`, filepath.Join(dir, "data"), reg.host, certFile, keyFile, filepath.Join(dir, "htpasswd"))
	cfgFile := filepath.Join(dir, "config.yml")
	os.WriteFile(cfgFile, []byte(cfg), 0o600)
	cmd := exec.Command(bin, "serve", cfgFile)
	cmd.Env = append(baseEnv(), "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true")
	var logs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("registry log:\n%s", logs.String())
		}
	})
	cl := caFileClient(t, caFile)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := cl.Get("https://" + reg.host + "/v2/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return reg
			}
		}
	}
	t.Fatalf("the registry did not come up:\n%s", logs.String())
	return nil
}

func caFileClient(t *testing.T, caFile string) *http.Client {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
}

// writeTestPKI writes a CA and a leaf for 127.0.0.1 and localhost.
func writeTestPKI(t *testing.T, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test registry CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalPKCS8PrivateKey(key)
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644)
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o644)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600)
	return
}

// TestPushToDistribution: 'airgap push' publishes the store into a real
// registry (idempotently: the second run sends nothing), the registry then
// holds exactly the appliance's layout (same digests), and offline 'tofu
// init' installs providers and a module from that registry.
func TestPushToDistribution(t *testing.T) {
	tofu := tofuBin(t)
	reg := startRegistry(t)
	in := registrytest.WorldWith(t, registrytest.BuildFixtureProvider(t, t.TempDir()))
	storeDir, base, caFile := exportImportServe(t, in, e2eManifest)
	target := reg.host + "/site/tf"
	pushEnv := []string{"SSL_CERT_FILE=" + reg.caFile, oci.PasswordEnv + "=" + reg.password, "DOCKER_CONFIG=" + t.TempDir()}

	// Without credentials: a clear refusal that says how to log in.
	out, err := cmdRun(t, "", []string{"SSL_CERT_FILE=" + reg.caFile, "DOCKER_CONFIG=" + t.TempDir()}, airgapBin, "push", "--store", storeDir, "--to", target)
	if err == nil || !strings.Contains(out, "hint:") || !strings.Contains(out, "--username") {
		t.Fatalf("push without credentials: %v\n%s", err, out)
	}
	start := time.Now()
	out = mustRun(t, "", pushEnv, airgapBin, "push", "--store", storeDir, "--to", target, "--username", reg.user, "--json")
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
	acl := caFileClient(t, caFile)
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
	cmd := exec.Command(airgapBin, "push", "--store", storeDir, "--to", target, "--username", reg.user, "--password-stdin", "--json")
	cmd.Env = append(baseEnv(), "SSL_CERT_FILE="+reg.caFile, "DOCKER_CONFIG="+t.TempDir())
	cmd.Stdin = strings.NewReader(reg.password + "\n")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("second push: %v\n%s", err, b)
	}
	var again oci.PushResult
	if err := json.Unmarshal(b, &again); err != nil || again.TagsPushed != 0 || again.BlobsPushed != 0 || len(again.Tags) != len(res.Tags) {
		t.Fatalf("second push was not a no-op: %v %+v", err, again)
	}

	// OpenTofu, offline, from the site registry, with the block push prints.
	out = mustRun(t, "", pushEnv, airgapBin, "push", "--store", storeDir, "--to", target, "--username", reg.user)
	blocks := hclBlocks(t, out)
	if len(blocks) != 1 || !strings.Contains(blocks[0], "oci_mirror") {
		t.Fatalf("push prints no provider_installation block:\n%s", out)
	}
	parseHCL(t, "push", blocks[0])
	rc := filepath.Join(t.TempDir(), "tofu.rc")
	os.WriteFile(rc, []byte(blocks[0]+fmt.Sprintf(`oci_credentials %q {
  username = %q
  password = %q
}
`, reg.host, reg.user, reg.password)), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + reg.caFile, "DOCKER_CONFIG=" + t.TempDir(),
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	dir := filepath.Join(t.TempDir(), "project")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(strings.ReplaceAll(ociProject, "HOST", target)), 0o644)
	out = mustRun(t, dir, offline, tofu, "init", "-input=false", "-no-color")
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
