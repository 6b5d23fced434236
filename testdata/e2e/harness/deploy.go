package harness

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/verify"
)

// OpsStore imports the standard fixture bundle into a new store with the
// real binary and returns the store and the bundle's keyring.
func OpsStore(t *testing.T) (root, keyring string, signerSet func(name string) string) {
	t.Helper()
	work := t.TempDir()
	signer := bundletest.Key(t, "site")
	pub, _ := verify.PublicArmor(signer)
	keyring = filepath.Join(work, "site.pub.asc")
	os.WriteFile(keyring, []byte(pub), 0o644)
	set := bundletest.Standard(t, filepath.Join(work, "fixtures"), signer)
	b := filepath.Join(work, "site.bundle")
	set.WriteBundleFile(t, b, signer, bundle.CompressionZstd)
	root = filepath.Join(work, "store")
	MustRun(t, work, nil, Bin, "import", "--keyring", keyring, "--store", root, b)
	// more bundles for tests that import while serving
	n := 0
	signerSet = func(name string) string {
		n++
		s := bundletest.NewSet()
		s.AddProvider(bundletest.BuildProvider(t, filepath.Join(work, fmt.Sprint("extra", n)), bundletest.Provider{
			Host: "registry.terraform.io", Namespace: "example", Type: name, Version: "1.0.0",
			Platforms: []string{"linux_amd64"}, Signer: bundletest.Key(t, "publisher"), PackageSize: 16 << 10,
		}))
		p := filepath.Join(work, name+".bundle")
		s.WriteBundleFile(t, p, signer, bundle.CompressionZstd)
		return p
	}
	return root, keyring, signerSet
}

// LockedBuffer collects a process's output while the test reads it.
type LockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *LockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *LockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// JSONLines returns the log records (one JSON object per line).
func JSONLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(logs))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Text())
		}
		out = append(out, m)
	}
	return out
}

// WaitLog polls logs until one record satisfies ok.
func WaitLog(t *testing.T, logs *LockedBuffer, what string, ok func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		for _, r := range JSONLines(t, logs.String()) {
			if ok(r) {
				return r
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no log record for %s:\n%s", what, logs.String())
	return nil
}

func WriteConfig(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func CAClient(t *testing.T, storeDir string) (*http.Client, *x509.CertPool, string) {
	t.Helper()
	pemOut := MustRun(t, "", nil, Bin, "ca", "--store", storeDir)
	i := strings.Index(pemOut, "-----BEGIN")
	pemOut = pemOut[i:]
	if j := strings.Index(pemOut, "-----END CERTIFICATE-----"); j >= 0 {
		pemOut = pemOut[:j+len("-----END CERTIFICATE-----")] + "\n"
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, []byte(pemOut), 0o644)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM([]byte(pemOut)) {
		t.Fatalf("airgap ca printed no certificate: %s", pemOut)
	}
	return &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}, pool, caFile
}

func HTTPGet(t *testing.T, cl *http.Client, url string, hdr ...string) (*http.Response, []byte) {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := cl.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func MetricValue(text, series string) float64 {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, series+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return -1
}

// ResolveRef resolves a URL from an answer (relative since the answers stopped
// repeating the Host) against the URL of the request, as the clients do.
func ResolveRef(request, ref string) string {
	b, err := url.Parse(request)
	if err != nil {
		return ref
	}
	r, err := url.Parse(ref)
	if err != nil {
		return ref
	}
	return b.ResolveReference(r).String()
}
