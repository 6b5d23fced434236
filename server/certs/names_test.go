package certs_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/airgap/airgap/server/certs"
)

// In local TLS mode the certificates cover the machine's own name and
// addresses, so clients on other machines can connect without --hostname;
// a client asking for a name that is not covered is logged with the hint.
func TestLocalTLSCoversMachineNames(t *testing.T) {
	var logBuf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	st, err := certs.New(context.Background(), certs.Options{Mode: certs.ModeLocal, Dir: t.TempDir(), Names: []string{"localhost", "127.0.0.1"}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(st.CAPEM)
	want := []string{strings.ToLower(host)}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() && !ipn.IP.IsLinkLocalUnicast() && ipn.IP.To4() != nil {
			want = append(want, ipn.IP.String())
			break
		}
	}
	for _, name := range want {
		cert, err := st.Config.GetCertificate(&tls.ClientHelloInfo{ServerName: name})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		leaf, _ := x509.ParseCertificate(cert.Certificate[0])
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("the local certificate does not cover %s: %v", name, err)
		}
	}
	if !strings.Contains(logBuf.String(), "local TLS certificates cover") || !strings.Contains(logBuf.String(), strings.ToLower(host)) {
		t.Errorf("the names covered are not logged: %s", logBuf.String())
	}
	c1, c2 := net.Pipe()
	defer c1.Close()
	defer c2.Close()
	st.Config.GetCertificate(&tls.ClientHelloInfo{ServerName: "other.example", Conn: c1})
	st.Config.GetCertificate(&tls.ClientHelloInfo{ServerName: "other.example", Conn: c1})
	if got := strings.Count(logBuf.String(), `asked="\"other.example\""`); got != 1 || !strings.Contains(logBuf.String(), "--hostname") {
		t.Errorf("an uncovered name is logged %d times (want once, with the --hostname hint): %s", got, logBuf.String())
	}
}
