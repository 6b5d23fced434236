package bundle_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/bundletest"
	"github.com/airgap/airgap/bundle/report"
)

// Open accepts real bundles (compressed or not, from a file or a pipe),
// keeps truncation its own error, and names what a non-bundle looks like.
func TestOpenSniffs(t *testing.T) {
	dir := t.TempDir()
	signer := bundletest.Key(t, "site")
	kr := openpgp.EntityList{signer}
	set := bundletest.Standard(t, filepath.Join(dir, "src"), signer)
	read := func(path string) error {
		o, err := bundle.Open(path, kr)
		if err != nil {
			return err
		}
		defer o.Close()
		var rep report.Report
		return report.Check(o, kr, &rep)
	}
	for _, c := range []bundle.Compression{bundle.CompressionNone, bundle.CompressionZstd} {
		p := filepath.Join(dir, fmt.Sprintf("b%v.bundle", c))
		set.WriteBundleFile(t, p, signer, c)
		if err := read(p); err != nil {
			t.Errorf("compression %v: %v", c, err)
		}
		// Cut in half: still truncated, not "not a bundle".
		data, _ := os.ReadFile(p)
		cut := p + ".cut"
		os.WriteFile(cut, data[:len(data)/2], 0o644)
		if err := read(cut); err == nil || errors.Is(err, bundle.ErrNotBundle) {
			t.Errorf("a cut bundle: %v", err)
		}
		// Through a pipe: the sniffed head is not lost.
		fifo := filepath.Join(dir, "fifo")
		os.Remove(fifo)
		if err := syscall.Mkfifo(fifo, 0o600); err != nil {
			t.Fatal(err)
		}
		go func() {
			w, err := os.OpenFile(fifo, os.O_WRONLY, 0)
			if err == nil {
				w.Write(data)
				w.Close()
			}
		}()
		if err := read(fifo); err != nil {
			t.Errorf("from a pipe: %v", err)
		}
	}
	for content, want := range map[string]string{
		"":                        "an empty file",
		"PK\x03\x04zipzipzip":     "a zip archive",
		"\x1f\x8b\x08gzip":        "a gzip file",
		"%PDF-1.7":                "a PDF document",
		"just some notes\n":       "text",
		"-----BEGIN PGP PUBLIC K": "OpenPGP",
		"\x00\x00\x00\x00":        "zeros",
	} {
		p := filepath.Join(dir, "x")
		os.WriteFile(p, []byte(content), 0o644)
		err := read(p)
		if !errors.Is(err, bundle.ErrNotBundle) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want ErrNotBundle naming %q", content, err, want)
		}
	}
	if err := read(dir); !errors.Is(err, bundle.ErrNotBundle) || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: %v", err)
	}
}
