package certs

import (
	"bytes"
	"strings"
	"testing"
)

// TestShareCA: a CA exported from one TLS directory installs into
// another as the same CA; a key that is not the certificate's, an extra
// block and an oversized text are refused.
func TestShareCA(t *testing.T) {
	a, b := t.TempDir(), t.TempDir()
	caA, err := LoadOrCreateCA(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LoadOrCreateCA(b); err != nil {
		t.Fatal(err)
	}
	pemA, err := ExportCA(a)
	if err != nil {
		t.Fatal(err)
	}
	pemB, _ := ExportCA(b)
	dst := t.TempDir()
	if err := InstallCA(dst, pemA); err != nil {
		t.Fatal(err)
	}
	got, err := LoadOrCreateCA(dst)
	if err != nil || !bytes.Equal(got.PEM, caA.PEM) {
		t.Fatalf("installed CA differs: %v", err)
	}
	certA := pemA[:bytes.Index(pemA, []byte("-----BEGIN PRIVATE KEY"))]
	keyB := pemB[bytes.Index(pemB, []byte("-----BEGIN PRIVATE KEY")):]
	for name, tc := range map[string]struct {
		data []byte
		want string
	}{
		"other key": {append(append([]byte{}, certA...), keyB...), "not the certificate's"},
		"extra":     {append(append([]byte{}, pemA...), certA...), "unexpected PEM block"},
		"no key":    {certA, "one certificate and one private key"},
		"oversized": {bytes.Repeat([]byte("x"), 70<<10), "more than"},
		"not PEM":   {[]byte("hello"), "one certificate and one private key"},
	} {
		err := InstallCA(t.TempDir(), tc.data)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}
