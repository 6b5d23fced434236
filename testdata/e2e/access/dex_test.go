package access

import (
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
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// A real identity provider for the single sign-on tests: Dex v2.45.1, from
// ../shared/clients (its README says how it was built), run offline on
// loopback with a memory store, a mockCallback connector (logs in
// kilgore@kilgore.trout, groups ["authors"], with no form) and static
// passwords (users without groups).

const dexVersion = "2.45.1"

// dexEnv names a Dex binary to use instead of unpacking ../shared/clients'
// (.ci/run sets it).
const dexEnv = "AIRGAP_TEST_DEX"

var (
	dexOnce           sync.Once
	dexPath, dexError string
)

// dexBin returns Dex: $AIRGAP_TEST_DEX, or the binary unpacked once from
// ../shared/clients/dex-2.45.1-linux-amd64.xz into the test cache and
// checked against SHA256SUMS. Missing, it fails the test: single sign-on
// must not go untested.
func dexBin(t *testing.T) string {
	t.Helper()
	dexOnce.Do(func() {
		if p := os.Getenv(dexEnv); p != "" {
			dexPath = p
			return
		}
		cache, err := harness.CacheDir()
		if err != nil {
			dexError = err.Error()
			return
		}
		p, err := harness.UnpackShared(harness.SharedClients, cache, "dex-"+dexVersion+"-linux-amd64", "dex-"+dexVersion)
		if err != nil {
			dexError = err.Error()
		}
		dexPath = p
	})
	if dexError != "" {
		t.Fatalf("Dex %s is required by the single sign-on tests: %s\nhint: set %s to a Dex binary, or keep ../shared/clients/dex-%s-linux-amd64.xz and SHA256SUMS in place (.ci/run unpacks it)",
			dexVersion, dexError, dexEnv, dexVersion)
	}
	return dexPath
}

// dexUser is a static-password user of the test IdP.
type dexUser struct{ email, password string }

// dexIdP is a running Dex.
type dexIdP struct {
	issuer   string
	caFile   string // its CA (https), or ""
	pool     *x509.CertPool
	clientID string
	secret   string
	logs     *harness.LockedBuffer
	cmd      *exec.Cmd
	port     int
}

// dexOptions configure startDex.
type dexOptions struct {
	port         int      // its port (harness.FreePort when 0)
	tlsDir       string   // serve TLS with the test CA testCA wrote there (the login block's ca_file)
	secret       string   // the airgap client's secret ("" for a new one)
	redirectURIs []string // of the airgap client
	users        []dexUser
	noMock       bool // without the mockCallback connector (the password form only)
	onlyMock     bool // without the password database (no connector choice page)
	idTokens     string
}

// startDex starts Dex and waits for its discovery document.
func startDex(t *testing.T, opt dexOptions) *dexIdP {
	t.Helper()
	bin := dexBin(t)
	dir := t.TempDir()
	if opt.port == 0 {
		opt.port = harness.FreePort(t)
	}
	d := &dexIdP{clientID: "airgap", secret: opt.secret, port: opt.port}
	if d.secret == "" {
		d.secret = "dex-client-secret-" + randomWord(t)
	}
	d.issuer = dexIssuer(opt.port, opt.tlsDir != "")
	web := fmt.Sprintf("  http: 127.0.0.1:%d\n", opt.port)
	if opt.tlsDir != "" {
		d.caFile = filepath.Join(opt.tlsDir, "ca.pem")
		pem, _ := os.ReadFile(d.caFile)
		d.pool = x509.NewCertPool()
		d.pool.AppendCertsFromPEM(pem)
		web = fmt.Sprintf("  https: 127.0.0.1:%d\n  tlsCert: %s\n  tlsKey: %s\n", opt.port, filepath.Join(opt.tlsDir, "leaf.pem"), filepath.Join(opt.tlsDir, "leaf.key"))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "issuer: %s\nstorage:\n  type: memory\nweb:\n%slogger:\n  level: debug\noauth2:\n  skipApprovalScreen: true\n", d.issuer, web)
	if opt.idTokens != "" {
		fmt.Fprintf(&b, "expiry:\n  idTokens: %q\n", opt.idTokens)
	}
	fmt.Fprintf(&b, "staticClients:\n- id: %s\n  name: airgap\n  secret: %s\n  redirectURIs:\n", d.clientID, d.secret)
	for _, u := range opt.redirectURIs {
		fmt.Fprintf(&b, "  - %q\n", u)
	}
	if !opt.noMock {
		b.WriteString("connectors:\n- type: mockCallback\n  id: mock\n  name: Example\n")
	}
	if !opt.onlyMock {
		b.WriteString("enablePasswordDB: true\nstaticPasswords:\n")
		for i, u := range opt.users {
			h, err := bcrypt.GenerateFromPassword([]byte(u.password), 10) // Dex refuses cheaper hashes
			if err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "- email: %q\n  hash: %q\n  username: %q\n  userID: \"user-%d\"\n", u.email, h, strings.Split(u.email, "@")[0], i)
		}
	}
	cfg := filepath.Join(dir, "config.yaml")
	os.WriteFile(cfg, []byte(b.String()), 0o600)
	d.logs = &harness.LockedBuffer{}
	d.cmd = exec.Command(bin, "serve", cfg)
	d.cmd.Stdout, d.cmd.Stderr = d.logs, d.logs
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		d.stop()
		if t.Failed() {
			t.Logf("Dex log:\n%s", d.logs.String())
		}
	})
	cl := d.client()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if resp, err := cl.Get(d.issuer + "/.well-known/openid-configuration"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return d
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("Dex did not come up:\n%s", d.logs.String())
	return nil
}

// dexIssuer is the issuer of a Dex on port.
func dexIssuer(port int, https bool) string {
	if https {
		return fmt.Sprintf("https://127.0.0.1:%d/dex", port)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/dex", port)
}

// stop ends Dex (the IdP "goes away").
func (d *dexIdP) stop() {
	if d.cmd.Process != nil && d.cmd.ProcessState == nil {
		d.cmd.Process.Kill()
		d.cmd.Wait()
	}
}

// client trusts Dex's CA.
func (d *dexIdP) client() *http.Client {
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: d.pool}}}
}

// testCA writes a CA (ca.pem) and a leaf for host signed by it (leaf.pem,
// leaf.key) into dir and returns the CA's file and pool.
func testCA(t *testing.T, dir, host string) (string, *x509.CertPool) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test IdP CA"}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	leafKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: host}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(24 * time.Hour), ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature}
	if ip := net.ParseIP(host); ip != nil {
		leafTmpl.IPAddresses = []net.IP{ip}
	} else {
		leafTmpl.DNSNames = []string{host}
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &leafKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, _ := x509.MarshalECPrivateKey(leafKey)
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	os.WriteFile(filepath.Join(dir, "ca.pem"), caPEM, 0o644)
	os.WriteFile(filepath.Join(dir, "leaf.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o644)
	os.WriteFile(filepath.Join(dir, "leaf.key"), pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	return filepath.Join(dir, "ca.pem"), pool
}

func randomWord(t *testing.T) string {
	var b [9]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%x", b)
}
