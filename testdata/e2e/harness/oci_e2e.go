package harness

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/airgap/airgap/dist/registrytest"
	"golang.org/x/crypto/bcrypt"
)

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
