package access

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestObjectStoreLoginListingLongNames: objects under state/logins/tokens/
// with long names (S3 allows 1,024 bytes; anyone with write access to the
// prefix can put 100,000 of them, the listing's bound) do not make every
// replica hold all those names each time it lists the tokens (every 10 s):
// names that cannot be a record's are dropped as they are listed, so
// serve's peak memory stays within its stated bound of some 20 MiB for a
// full listing.
func TestObjectStoreLoginListingLongNames(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	const n = 60000
	long := filepath.Join(s.Dir, s.Bucket, "site", "state", "logins", "tokens", strings.Repeat("a", 250), strings.Repeat("b", 250), strings.Repeat("c", 250))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range n {
		name := fmt.Sprintf("%0200d", i)
		if err := os.WriteFile(filepath.Join(long, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d objects of 1,000-byte names written in %s", n, time.Since(start).Round(time.Millisecond))
	work := t.TempDir()
	secretFile := filepath.Join(work, "oidc-secret")
	os.WriteFile(secretFile, []byte("s\n"), 0o600)
	accessFile := filepath.Join(work, "access.hcl")
	os.WriteFile(accessFile, []byte(fmt.Sprintf("login {\n  issuer = %q\n  client_id = \"airgap\"\n  client_secret_file = %q\n}\n", dexIssuer(harness.FreePort(t), false), secretFile)), 0o600)
	start = time.Now()
	srv := harness.Serve(t, harness.ServeOptions{Store: s.Addr("site"), Env: s.Env(), Args: []string{"--metrics-listen", "off", "--access", accessFile}})
	var cl *http.Client
	for deadline := time.Now().Add(60 * time.Second); cl == nil; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up:\n%s", srv.Logs.String())
		}
		pemData, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "ca", "--store", s.Addr("site"))
		if err != nil || !strings.Contains(pemData, "-----BEGIN") {
			continue
		}
		pool := x509.NewCertPool()
		pool.AppendCertsFromPEM([]byte(pemData[strings.Index(pemData, "-----BEGIN"):]))
		c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
		if code, _, err := harness.Fetch(c, srv.Base+"healthz"); err == nil && code == 200 {
			cl = c
		}
	}
	t.Logf("serve up in %s", time.Since(start).Round(time.Millisecond))
	peak := int64(0)
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", srv.Proc.Pid))
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			peak = kb << 10
		}
	}
	t.Logf("serve's peak RSS after its start-up listing of %d long names: %d MiB", n, peak>>20)
	if peak > 80<<20 {
		t.Errorf("serve's peak RSS %d MiB, over 80 MiB", peak>>20)
	}
}
