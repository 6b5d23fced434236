package access

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/airgap/airgap/server/access"
	"github.com/airgap/airgap/testdata/e2e/harness"
)

// TestObjectStoreRevokedWhileStateUnreadable: a replica that cannot read
// the sign-in state in the bucket (here every request it sends is refused
// with 403, as when its own credentials were revoked or its network to
// the bucket is cut, while 'airgap token revoke' reaches the bucket) must
// not go on admitting a token revoked meanwhile. Before, it kept the
// records it last read and admitted the revoked token for as long as the
// bucket stayed unreadable to it (here, the 25 s watched); now it refuses
// every login token (503, Retry-After) once it has not read the state for
// 15 s, and, the bucket readable again, refuses the token as revoked.
func TestObjectStoreRevokedWhileStateUnreadable(t *testing.T) {
	t.Parallel()
	s := harness.StartS3(t)
	target, _ := url.Parse(s.Endpoint)
	rp := httputil.NewSingleHostReverseProxy(target)
	var failing atomic.Bool
	px := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if failing.Load() {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(px.Close)
	addr := "s3://" + s.Bucket + "/site?use_path_style=true&endpoint=" + px.URL
	direct := s.Addr("site")

	work := t.TempDir()
	issuer := dexIssuer(harness.FreePort(t), false) // nobody answers: the token is minted by writing its record
	secretFile := filepath.Join(work, "oidc-secret")
	os.WriteFile(secretFile, []byte("s\n"), 0o600)
	accessFile := filepath.Join(work, "access.hcl")
	os.WriteFile(accessFile, []byte(fmt.Sprintf("login {\n  issuer = %q\n  client_id = \"airgap\"\n  client_secret_file = %q\n}\nuser \"alice@site.example\" {\n  allow = [\"registry.terraform.io/**\"]\n}\n", issuer, secretFile)), 0o600)
	srv := harness.Serve(t, harness.ServeOptions{Store: addr, Env: s.Env(), Args: []string{"--metrics-listen", "off", "--access", accessFile}})
	var cl *http.Client
	for deadline := time.Now().Add(20 * time.Second); cl == nil; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("serve did not come up:\n%s", srv.Logs.String())
		}
		pemData, err := harness.CmdRun(t, work, s.Env(), harness.Bin, "ca", "--store", direct)
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

	var raw [32]byte
	rand.Read(raw[:])
	secret := "airgap_" + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(secret))
	now := time.Now().UTC().Truncate(time.Second)
	rec := access.LoginToken{SHA256: hex.EncodeToString(sum[:]), User: "alice@site.example", Subject: "alice", Issuer: issuer,
		Via: "cli", Created: now, Expires: now.Add(time.Hour)}
	rec.Name = access.LoginNamePrefix + rec.SHA256[:16]
	b, _ := json.Marshal(rec)
	putObject(t, s, "site/state/logins/tokens/"+rec.SHA256+".json", b)
	status := func() int {
		req, _ := http.NewRequest("GET", srv.Base, nil)
		req.Header.Set("Authorization", "Bearer "+secret)
		resp, err := cl.Do(req)
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for deadline := time.Now().Add(10 * time.Second); status() != 200; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the token was not admitted: %d\n%s", status(), srv.Logs.String())
		}
	}

	failing.Store(true)
	harness.MustRun(t, work, s.Env(), harness.Bin, "token", "revoke", "--store", direct, rec.Name)
	cut := time.Now()
	for status() == 200 {
		if time.Since(cut) > 25*time.Second {
			t.Fatalf("the revoked token was still admitted %s after its revocation, the bucket unreadable to the replica", time.Since(cut).Round(time.Second))
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("refused %s after the revocation, the bucket unreadable to the replica", time.Since(cut).Round(100*time.Millisecond))
	if code := status(); code != http.StatusServiceUnavailable {
		t.Errorf("a login token while the state cannot be read: %d, want 503", code)
	}
	failing.Store(false)
	for deadline := time.Now().Add(10 * time.Second); status() != http.StatusUnauthorized; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the bucket readable again, the revoked token: %d, want 401", status())
		}
	}
}
