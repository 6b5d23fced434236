package certs_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/airgap/airgap/server/certs"
)

func TestLocalTLS(t *testing.T) {
	dir := t.TempDir()
	st, err := certs.New(context.Background(), certs.Options{Mode: certs.ModeLocal, Dir: dir, Names: []string{"airgap.site.test", "127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Stop()
	fi, err := os.Stat(filepath.Join(dir, "ca", "ca.key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("CA key: %v %v", fi, err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(st.CAPEM)
	ln, _ := tls.Listen("tcp", "127.0.0.1:0", st.Config)
	defer ln.Close()
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, "ok") }))
	for _, name := range []string{"airgap.site.test", "127.0.0.1"} {
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: name, MinVersion: tls.VersionTLS12})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		leaf := conn.ConnectionState().PeerCertificates[0]
		if time.Until(leaf.NotAfter) < 80*24*time.Hour {
			t.Errorf("leaf expires too soon: %v", leaf.NotAfter)
		}
		conn.Close()
	}
	if _, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: pool, ServerName: "x", MaxVersion: tls.VersionTLS11}); err == nil {
		t.Error("TLS 1.1 accepted")
	}
	// A second start reuses the CA.
	st2, err := certs.New(context.Background(), certs.Options{Mode: certs.ModeLocal, Dir: dir, Names: []string{"airgap.site.test"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Stop()
	if !bytes.Equal(st.CAPEM, st2.CAPEM) {
		t.Error("the CA was replaced on restart")
	}
}

func TestFilesTLSReload(t *testing.T) {
	dir := t.TempDir()
	ca, err := certs.LoadOrCreateCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	write := func(cn string) {
		key, pub := newKey(t)
		der, err := ca.Sign(pub, []string{cn}, nil, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		writePEM(t, filepath.Join(dir, "cert.pem"), "CERTIFICATE", der)
		writePEM(t, filepath.Join(dir, "key.pem"), "PRIVATE KEY", key)
	}
	write("one.test")
	st, err := certs.New(context.Background(), certs.Options{Mode: certs.ModeFiles, CertFile: filepath.Join(dir, "cert.pem"), KeyFile: filepath.Join(dir, "key.pem")})
	if err != nil {
		t.Fatal(err)
	}
	c1, _ := st.Config.GetCertificate(&tls.ClientHelloInfo{})
	time.Sleep(1100 * time.Millisecond)
	write("two.test")
	os.Chtimes(filepath.Join(dir, "cert.pem"), time.Now().Add(time.Second), time.Now().Add(time.Second))
	c2, _ := st.Config.GetCertificate(&tls.ClientHelloInfo{})
	l1, _ := x509.ParseCertificate(c1.Certificate[0])
	l2, _ := x509.ParseCertificate(c2.Certificate[0])
	if l1.Subject.CommonName != "one.test" || l2.Subject.CommonName != "two.test" {
		t.Fatalf("not reloaded: %s then %s", l1.Subject.CommonName, l2.Subject.CommonName)
	}
}
