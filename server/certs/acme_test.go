package certs_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"

	"github.com/airgap/airgap/server/certs"
)

// TestACMEWithPebble obtains a certificate through certmagic's ACME issuer
// from a real ACME server (Pebble) on loopback. Pebble is told to consider
// challenges valid (PEBBLE_VA_ALWAYS_VALID), as it cannot resolve test names.
func TestACMEWithPebble(t *testing.T) {
	t.Setenv("PEBBLE_VA_ALWAYS_VALID", "1")
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	logger := log.New(io.Discard, "", 0)
	store := db.NewMemoryStore()
	pca := ca.New(logger, store, "", "ecdsa", 0, 1, map[string]ca.Profile{"default": {Description: "default"}})
	pva := va.New(logger, 5002, 5001, false, "", store)
	pwfe := wfe.New(logger, store, pva, pca, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	acme := httptest.NewTLSServer(pwfe.Handler())
	defer acme.Close()
	mgmt := httptest.NewTLSServer(pwfe.ManagementHandler())
	defer mgmt.Close()

	rootFile := t.TempDir() + "/acme-root.pem"
	writePEM(t, rootFile, "CERTIFICATE", acme.Certificate().Raw)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port := func() int {
		ln, _ := net.Listen("tcp", "127.0.0.1:0")
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port
	}
	st, err := certs.New(ctx, certs.Options{
		Mode: certs.ModeACME, Dir: t.TempDir(), Names: []string{"airgap.site.test"},
		ACMECA: acme.URL + wfe.DirectoryPath, ACMECARoot: rootFile, ACMEEmail: "ops@site.test",
		ACMEHTTPPort: port(), ACMETLSALPNPort: port(),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()

	// The issued chain verifies against Pebble's root.
	resp, err := mgmt.Client().Get(mgmt.URL + wfe.RootCertPath + "0")
	if err != nil {
		t.Fatal(err)
	}
	rootPEM, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(rootPEM) {
		t.Fatalf("pebble root: %s", rootPEM)
	}
	ln, _ := tls.Listen("tcp", "127.0.0.1:0", st.Config)
	defer ln.Close()
	go http.Serve(ln, http.NotFoundHandler())
	conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "airgap.site.test"})
	if err != nil {
		t.Fatalf("the ACME certificate does not verify: %v", err)
	}
	conn.Close()
}
