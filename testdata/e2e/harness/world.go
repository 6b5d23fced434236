package harness

import (
	"bufio"
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
	"io/fs"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/airgap/airgap/dist/registrytest"
)

func CopyTree(t *testing.T, src, dst string) {
	t.Helper()
	filepath.Walk(src, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if strings.HasPrefix(rel, ".terraform"+string(filepath.Separator)) || rel == ".terraform" {
			if fi.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if fi.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, _ := os.ReadFile(p)
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
}

const E2EProject = `terraform {
  required_providers {
    random = {
      source  = "hashicorp/random"
      version = "~> 3.5"
    }
  }
}

module "vpc" {
  source  = "example/vpc/aws"
  version = "1.0.0"
}

module "sub" {
  source  = "example/sub/aws"
  version = "2.0.0"
}

output "vpc" {
  value = module.vpc.name
}
`

const E2EManifest = `
platforms = ["linux_amd64", "darwin_arm64", "windows_amd64"]

provider "hashicorp/random" {
  versions = "~> 3.5"
  latest   = 2
}
provider "registry.opentofu.org/hashicorp/local" {
  versions = "2.5.1"
}
module "example/vpc/aws" {
  versions = "1.0.0"
}
module "example/sub/aws" {}
module "registry.opentofu.org/example/tofu/aws" {}
`

// The OpenTofu project of the journey's offline step. Addresses are spelled
// out where OpenTofu's default registry (registry.opentofu.org) is not the
// origin; "hashicorp/local" and "example/tofu/aws" are OpenTofu's own.
const E2ETofuProject = `terraform {
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

module "sub" {
  source  = "registry.terraform.io/example/sub/aws"
  version = "2.0.0"
}

module "t" {
  source = "example/tofu/aws"
}
`

// LockHashes returns the hashes a lock file records for one provider.
func LockHashes(t *testing.T, lock, addr string) []string {
	t.Helper()
	b, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(b), "provider \""+addr+"\" {")
	if !ok {
		t.Fatalf("%s has no block for %s:\n%s", lock, addr, b)
	}
	block, _, _ = strings.Cut(block, "\n}")
	var out []string
	for _, m := range regexp.MustCompile(`"((?:h1|zh):[^"]+)"`).FindAllStringSubmatch(block, -1) {
		out = append(out, m[1])
	}
	sort.Strings(out)
	return out
}

// registryZH returns the zh: hashes the appliance's provider registry
// protocol gives for a provider version: one per line of the SHA256SUMS its
// download answer points at (resolved against the answer's URL, as the
// clients do).
func registryZH(t *testing.T, base, caFile, origin, ns, typ, version string) []string {
	t.Helper()
	pemData, _ := os.ReadFile(caFile)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pemData)
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	dl, _ := url.Parse(base + "origin/" + origin + "/v1/providers/" + ns + "/" + typ + "/" + version + "/download/linux/amd64")
	resp, err := cl.Get(dl.String())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		ShasumsURL string `json:"shasums_url"`
	}
	err = json.NewDecoder(resp.Body).Decode(&doc)
	resp.Body.Close()
	if err != nil || !strings.HasPrefix(doc.ShasumsURL, "/") {
		t.Fatalf("download answer for %s/%s: %v, shasums_url %q (want relative)", ns, typ, err, doc.ShasumsURL)
	}
	ref, _ := url.Parse(doc.ShasumsURL)
	resp, err = cl.Get(dl.ResolveReference(ref).String())
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("SHA256SUMS: %v %v", resp, err)
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if sum, _, ok := strings.Cut(sc.Text(), "  "); ok {
			out = append(out, "zh:"+sum)
		}
	}
	sort.Strings(out)
	return out
}

func OnlyPrefix(hs []string, prefix string) []string {
	var out []string
	for _, h := range hs {
		if strings.HasPrefix(h, prefix) {
			out = append(out, h)
		}
	}
	return out
}

// TofuOfflineInit is the journey's offline 'init' step with the real
// OpenTofu client: 'airgap client-config --tool tofu' in the given mode,
// TF_CLI_CONFIG_FILE, no network but the appliance. It proves the relative
// URLs in the appliance's answers work for OpenTofu (package, SHA256SUMS
// and signature URLs; module locations with //subdir; mirror archive URLs),
// and that in registry mode the lock holds exactly the zh: hashes the
// registry protocol gives.
func TofuOfflineInit(t *testing.T, work, base, caFile, mode string) {
	tofu := TofuBin(t)
	rc := filepath.Join(t.TempDir(), "airgap.tofurc")
	cfg := MustRun(t, work, []string{"SSL_CERT_FILE=" + caFile}, Bin, "client-config", "--url", strings.TrimSuffix(base, "/"), "--mode", mode, "--tool", "tofu")
	os.WriteFile(rc, []byte(cfg), 0o644)
	offline := []string{"TF_CLI_CONFIG_FILE=" + rc, "SSL_CERT_FILE=" + caFile,
		"HTTPS_PROXY=http://127.0.0.1:9", "HTTP_PROXY=http://127.0.0.1:9", "NO_PROXY=localhost,127.0.0.1"}
	dir := filepath.Join(t.TempDir(), "tofu-project")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "main.tf"), []byte(E2ETofuProject), 0o644)
	out := MustRun(t, dir, offline, tofu, "init", "-input=false", "-no-color")
	t.Logf("tofu init (%s mode):\n%s", mode, out)
	lock := filepath.Join(dir, ".terraform.lock.hcl")
	for _, p := range []struct{ origin, typ, version string }{
		{"registry.terraform.io", "random", ""}, {"registry.opentofu.org", "local", "2.5.1"},
	} {
		addr := p.origin + "/hashicorp/" + p.typ
		got := LockHashes(t, lock, addr)
		if len(OnlyPrefix(got, "h1:")) == 0 {
			t.Errorf("%s: no h1: hash in the lock: %v", addr, got)
		}
		version := p.version
		if version == "" {
			b, _ := os.ReadFile(lock)
			m := regexp.MustCompile(`provider "` + regexp.QuoteMeta(addr) + `" \{\s*version\s*=\s*"([^"]+)"`).FindStringSubmatch(string(b))
			if m == nil {
				t.Fatalf("no version for %s in the lock:\n%s", addr, b)
			}
			version = m[1]
		}
		want := registryZH(t, base, caFile, p.origin, "hashicorp", p.typ, version)
		zh := OnlyPrefix(got, "zh:")
		switch mode {
		case "registry":
			if strings.Join(zh, ",") != strings.Join(want, ",") {
				t.Errorf("%s %s: lock zh: hashes differ from the registry protocol's SHA256SUMS:\n got %v\nwant %v", addr, version, zh, want)
			}
		case "mirror":
			// From a mirror OpenTofu records the installed platform's zh:.
			for _, h := range zh {
				if !strings.Contains(strings.Join(want, ","), h) {
					t.Errorf("%s %s: lock zh: %s is not in SHA256SUMS %v", addr, version, h, want)
				}
			}
		}
	}
	for _, f := range []string{"sub/modules/sub/main.tf", "t/main.tf"} {
		if _, err := os.Stat(filepath.Join(dir, ".terraform", "modules", f)); err != nil {
			t.Errorf("module file %s not installed by tofu: %v", f, err)
		}
	}
}

// CopyDir copies a tree of regular files (blobs keep their read-only mode).
func CopyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fi, _ := d.Info()
		return os.WriteFile(target, b, fi.Mode().Perm()|0o200)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// OCIProject is a tofu project that takes providers from two origins and
// modules through oci:// (a plain one by tag, one in a subdirectory of its
// source repository, one by "latest"). HOST is the appliance.
const OCIProject = `terraform {
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

// ExportImport is exportImportServe without the serve: it returns the
// store.
func ExportImport(t *testing.T, in *registrytest.Internet, manifest string) string {
	t.Helper()
	work := t.TempDir()
	online := append(in.Env(), "TF_CLI_CONFIG_FILE="+filepath.Join(work, "empty.tfrc"), "SOURCE_DATE_EPOCH=1767225600")
	keys := filepath.Join(work, "keys", "site")
	os.MkdirAll(filepath.Dir(keys), 0o700)
	MustRun(t, work, nil, Bin, "keygen", "--no-passphrase", "--out", keys, "--name", "Site Ops <ops@site.test>")
	mf := filepath.Join(work, "airgap.hcl")
	os.WriteFile(mf, []byte(manifest), 0o644)
	b := filepath.Join(work, "site.bundle")
	MustRun(t, work, online, Bin, "export", "--manifest", mf, "--sign-key", keys+".key.asc", "--out", b, "--cache", filepath.Join(work, "cache"))
	storeDir := filepath.Join(work, "store")
	MustRun(t, work, nil, Bin, "import", "--keyring", keys+".pub.asc", "--store", storeDir, b)
	return storeDir
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
	Host, CAFile, User, Password string
}

func StartRegistry(t *testing.T) *ociRegistry {
	t.Helper()
	bin, errText := BuildFromModule("github.com/distribution/distribution/v3", distributionVersion, "./cmd/registry", "registry-slim-"+distributionVersion, registryMain)
	if errText != "" {
		t.Fatalf("the distribution registry %s is required by the OCI push tests and could not be built: %s", distributionVersion, errText)
	}
	dir := t.TempDir()
	caFile, certFile, keyFile := writeTestPKI(t, dir)
	reg := &ociRegistry{Host: fmt.Sprintf("127.0.0.1:%d", FreePort(t)), CAFile: caFile, User: "pusher", Password: "s3cret-pw"}
	hash, err := bcrypt.GenerateFromPassword([]byte(reg.Password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "htpasswd"), []byte(reg.User+":"+string(hash)+"\n"), 0o600)
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
`, filepath.Join(dir, "data"), reg.Host, certFile, keyFile, filepath.Join(dir, "htpasswd"))
	cfgFile := filepath.Join(dir, "config.yml")
	os.WriteFile(cfgFile, []byte(cfg), 0o600)
	cmd := exec.Command(bin, "serve", cfgFile)
	cmd.Env = append(BaseEnv(), "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true")
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
	cl := CAFileClient(t, caFile)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if resp, err := cl.Get("https://" + reg.Host + "/v2/"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusUnauthorized {
				return reg
			}
		}
	}
	t.Fatalf("the registry did not come up:\n%s", logs.String())
	return nil
}

func CAFileClient(t *testing.T, caFile string) *http.Client {
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
