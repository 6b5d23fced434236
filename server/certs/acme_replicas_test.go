package certs_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"log"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/letsencrypt/challtestsrv"
	"github.com/letsencrypt/pebble/v2/ca"
	"github.com/letsencrypt/pebble/v2/db"
	"github.com/letsencrypt/pebble/v2/va"
	"github.com/letsencrypt/pebble/v2/wfe"

	"github.com/airgap/airgap/dist/registrytest"
	"github.com/airgap/airgap/server/certs"
)

// syncLog is a log.Logger sink safe for Pebble's goroutines.
type syncLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncLog) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncLog) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestACMEReplicasShareIssuance: two replicas (two certmagic instances)
// over one STORE/tls start at the same moment against a real ACME server,
// Pebble, with challenge validation ON: Pebble resolves the name through a
// DNS server on loopback (challtestsrv) to 127.0.0.1 and connects to the
// HTTP-01 / TLS-ALPN-01 ports the replicas answer on. One replica obtains
// the certificate; the other waits on certmagic's storage lock and reuses
// it, so both serve the same leaf and Pebble validated exactly one order.
// Once with HTTP-01 only, once with TLS-ALPN-01 only.
func TestACMEReplicasShareIssuance(t *testing.T) {
	for _, challenge := range []string{"http-01", "tls-alpn-01"} {
		t.Run(challenge, func(t *testing.T) { acmeReplicas(t, challenge) })
	}
}

func acmeReplicas(t *testing.T, challenge string) {
	t.Setenv("PEBBLE_VA_ALWAYS_VALID", "0")
	t.Setenv("PEBBLE_VA_NOSLEEP", "1")
	t.Setenv("PEBBLE_WFE_NONCEREJECT", "0")
	// Ports certmagic and the DNS server bind later: outside the ephemeral
	// range, where the ACME server's own httptest listener (and every other
	// test's) cannot take them first.
	dnsPort, httpPort, alpnPort := registrytest.FreePort(t), registrytest.FreePort(t), registrytest.FreePort(t)
	dns, err := challtestsrv.New(challtestsrv.Config{DNSAddrs: []string{fmt.Sprintf("127.0.0.1:%d", dnsPort)}, Log: log.New(&syncLog{}, "", 0)})
	if err != nil {
		t.Fatal(err)
	}
	dns.SetDefaultDNSIPv4("127.0.0.1")
	dns.SetDefaultDNSIPv6("")
	dns.Run()
	defer dns.Shutdown()

	pebbleLog := &syncLog{}
	logger := log.New(pebbleLog, "", 0)
	store := db.NewMemoryStore()
	pca := ca.New(logger, store, "", "ecdsa", 0, 1, map[string]ca.Profile{"default": {Description: "default"}})
	pva := va.New(logger, httpPort, alpnPort, false, fmt.Sprintf("127.0.0.1:%d", dnsPort), store)
	pwfe := wfe.New(logger, store, pva, pca, []string{"pebble.letsencrypt.org"}, false, false, 0, 0)
	acme := httptest.NewTLSServer(pwfe.Handler())
	defer acme.Close()
	rootFile := t.TempDir() + "/acme-root.pem"
	writePEM(t, rootFile, "CERTIFICATE", acme.Certificate().Raw)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	shared := t.TempDir() // STORE/tls on the shared filesystem
	const name = "airgap.site.test"
	setups := make([]*certs.Setup, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range setups {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			setups[i], errs[i] = certs.New(ctx, certs.Options{
				Mode: certs.ModeACME, Dir: shared, Names: []string{name},
				ACMECA: acme.URL + wfe.DirectoryPath, ACMECARoot: rootFile, ACMEEmail: "ops@site.test",
				ACMEHTTPPort: httpPort, ACMETLSALPNPort: alpnPort,
				ACMENoHTTP01: challenge != "http-01", ACMENoTLSALPN01: challenge != "tls-alpn-01",
			})
		}(i)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v\npebble:\n%s", i, err, pebbleLog.String())
		}
		defer setups[i].Stop()
	}
	leaf := func(s *certs.Setup) string {
		c, err := s.Config.GetCertificate(&tls.ClientHelloInfo{ServerName: name})
		if err != nil || c == nil || c.Leaf == nil {
			t.Fatalf("no certificate for %s: %v", name, err)
		}
		return c.Leaf.SerialNumber.String()
	}
	if a, b := leaf(setups[0]), leaf(setups[1]); a != b {
		t.Fatalf("the replicas hold different certificates (serials %s, %s): both issued", a, b)
	}
	pl := pebbleLog.String()
	if strings.Contains(pl, "Skipping real validation") {
		t.Fatal("Pebble skipped validation")
	}
	if n := strings.Count(pl, "set VALID by completed challenge"); n != 1 {
		t.Fatalf("Pebble validated %d authorizations, want 1 (one replica obtains, the other reuses):\n%s", n, pl)
	}
	if http := strings.Contains(pl, "Attempting to validate w/ HTTP"); http != (challenge == "http-01") {
		t.Fatalf("Pebble did not validate with %s:\n%s", challenge, pl)
	}
}
