package certs

import (
	"bytes"
	"crypto"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/airgap/airgap/dist/osfile"
)

// maxSharedCA bounds a shared CA's PEM (a P-256 key and its certificate
// are about 1 KiB).
const maxSharedCA = 64 << 10

// ExportCA is the local CA of dir as one PEM text, its certificate then
// its key, for replicas that share it (a store in object storage keeps
// it in the bucket). Whoever reads it can issue certificates clients of
// the appliance trust.
func ExportCA(dir string) ([]byte, error) {
	ca, err := readCA(dir)
	if err != nil {
		return nil, err
	}
	key, err := os.ReadFile(filepath.Join(caDir(dir), caKeyFile))
	if err != nil {
		return nil, err
	}
	return append(append([]byte{}, ca.PEM...), key...), nil
}

// InstallCA makes data (as ExportCA writes it) the local CA of dir, which
// must have none yet: it is checked first (one CA certificate, one key
// that is the certificate's, at most 64 KiB), then written whole as
// LoadOrCreateCA writes a new one.
func InstallCA(dir string, data []byte) error {
	if len(data) > maxSharedCA {
		return fmt.Errorf("shared local CA: more than %d bytes", maxSharedCA)
	}
	var certPEM, keyPEM []byte
	rest := data
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		switch {
		case b.Type == "CERTIFICATE" && certPEM == nil:
			certPEM = pem.EncodeToMemory(b)
		case b.Type == "PRIVATE KEY" && keyPEM == nil:
			keyPEM = pem.EncodeToMemory(b)
		default:
			return fmt.Errorf("shared local CA: unexpected PEM block %q", b.Type)
		}
	}
	if certPEM == nil || keyPEM == nil || len(bytes.TrimSpace(rest)) > 0 {
		return errors.New("shared local CA: want one certificate and one private key")
	}
	cb, _ := pem.Decode(certPEM)
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil || !cert.IsCA {
		return fmt.Errorf("shared local CA: not a CA certificate (%v)", err)
	}
	kb, _ := pem.Decode(keyPEM)
	key, err := x509.ParsePKCS8PrivateKey(kb.Bytes)
	if err != nil {
		return fmt.Errorf("shared local CA: %v", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return errors.New("shared local CA: not a signing key")
	}
	if k, ok := signer.Public().(interface{ Equal(crypto.PublicKey) bool }); !ok || !k.Equal(cert.PublicKey) {
		return errors.New("shared local CA: the key is not the certificate's")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// Written through the directory's descriptor, as LoadOrCreateCA does.
	d, err := osfile.OpenDir(filepath.Dir(dir), filepath.Base(dir))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.MakeDirAtomic(filepath.Base(caDir(dir)), []osfile.NewFile{
		{Name: caKeyFile, Data: keyPEM, Perm: 0o600},
		{Name: caCertFile, Data: certPEM, Perm: 0o644},
	})
}
