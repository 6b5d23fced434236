package kube

import (
	"archive/tar"
	"bytes"
	"crypto/x509"
	"debug/elf"
	"encoding/pem"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/layout"

	"github.com/airgap/airgap/testdata/e2e/harness"
)

// makeImage runs 'make image' into dir and returns the digest it prints
// and the archive's path.
func makeImage(t *testing.T, dir, epoch string) (digest, archive string) {
	t.Helper()
	archive = filepath.Join(dir, "airgap.oci.tar")
	cmd := exec.Command("make", "--no-print-directory", "image", "IMAGE="+archive, "IMAGE_BIN="+filepath.Join(dir, "bin"))
	cmd.Dir = harness.Root()
	cmd.Env = append(harness.BaseEnv(), "SOURCE_DATE_EPOCH="+epoch)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("make image: %v\n%s%s", err, out, exitStderr(err))
	}
	digest = strings.TrimSpace(string(out))
	if !regexp.MustCompile(`^sha256:[0-9a-f]{64}$`).MatchString(digest) {
		t.Fatalf("make image printed %q, not a digest", out)
	}
	return digest, archive
}

func exitStderr(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

// TestImageReproducible: 'make image' twice from the same commit gives the
// same digest and the same archive, byte for byte; another epoch another
// digest. The image is an index of linux/amd64 and linux/arm64, each one
// layer: the binary for its platform, a CA bundle, /etc/passwd, /store
// owned by 65532; no shell; it runs as 65532 and every time in it is the
// epoch.
func TestImageReproducible(t *testing.T) {
	const epoch = "1764000000"
	d1, a1 := makeImage(t, t.TempDir(), epoch)
	d2, a2 := makeImage(t, t.TempDir(), epoch)
	if d1 != d2 {
		t.Fatalf("two builds from the same commit: %s and %s", d1, d2)
	}
	b1, _ := os.ReadFile(a1)
	b2, _ := os.ReadFile(a2)
	if !bytes.Equal(b1, b2) {
		t.Fatalf("the same digest, but the archives differ (%d and %d bytes)", len(b1), len(b2))
	}
	t.Logf("make image: %s, %d bytes, twice", d1, len(b1))

	lay := filepath.Join(t.TempDir(), "layout")
	untar(t, b1, lay)
	p, err := layout.FromPath(lay)
	if err != nil {
		t.Fatal(err)
	}
	top, err := p.ImageIndex()
	if err != nil {
		t.Fatal(err)
	}
	tm, _ := top.IndexManifest()
	if len(tm.Manifests) != 1 || tm.Manifests[0].Digest.String() != d1 {
		t.Fatalf("index.json does not name the printed index %s alone: %+v", d1, tm.Manifests)
	}
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	if err != nil {
		t.Fatal(err)
	}
	im, _ := idx.IndexManifest()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}
	when := time.Unix(1764000000, 0).UTC()
	for _, m := range im.Manifests {
		arch := m.Platform.Architecture
		machine, ok := want[arch]
		if !ok || m.Platform.OS != "linux" {
			t.Fatalf("unexpected platform %+v", m.Platform)
		}
		delete(want, arch)
		img, err := idx.Image(m.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		if cf.Config.User != "65532:65532" || cf.Architecture != arch || !cf.Created.Time.Equal(when) {
			t.Errorf("%s: user %q, architecture %q, created %v", arch, cf.Config.User, cf.Architecture, cf.Created)
		}
		if strings.Join(cf.Config.Entrypoint, " ") != "/airgap" {
			t.Errorf("%s: entrypoint %v", arch, cf.Config.Entrypoint)
		}
		layers, _ := img.Layers()
		if len(layers) != 1 {
			t.Fatalf("%s: %d layers", arch, len(layers))
		}
		rc, err := layers[0].Uncompressed()
		if err != nil {
			t.Fatal(err)
		}
		files := map[string]*tar.Header{}
		tr := tar.NewReader(rc)
		var exe, ca []byte
		for {
			h, err := tr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = h
			if !h.ModTime.Equal(when) {
				t.Errorf("%s: %s has time %v, not the epoch", arch, h.Name, h.ModTime)
			}
			switch h.Name {
			case "airgap":
				exe, _ = io.ReadAll(tr)
			case "etc/ssl/certs/ca-certificates.crt":
				ca, _ = io.ReadAll(tr)
			}
		}
		rc.Close()
		for _, sh := range []string{"bin/sh", "bin/", "usr/", "bin/busybox"} {
			if files[sh] != nil {
				t.Errorf("%s: the image has %s", arch, sh)
			}
		}
		if h := files["store/"]; h == nil || h.Uid != 65532 {
			t.Errorf("%s: /store is not owned by 65532: %+v", arch, h)
		}
		f, err := elf.NewFile(bytes.NewReader(exe))
		if err != nil || f.Machine != machine {
			t.Errorf("%s: /airgap is not an ELF binary for %v (%v)", arch, machine, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(ca) || strings.Count(string(ca), "BEGIN CERTIFICATE") < 100 {
			t.Errorf("%s: the CA bundle holds %d certificates", arch, strings.Count(string(ca), "BEGIN CERTIFICATE"))
		}
		if b, _ := pem.Decode(ca); b == nil {
			t.Errorf("%s: the CA bundle is not PEM", arch)
		}
	}
	if len(want) != 0 {
		t.Errorf("the index lacks %v", want)
	}

	d3, _ := makeImage(t, t.TempDir(), "1764000001")
	if d3 == d1 {
		t.Errorf("another SOURCE_DATE_EPOCH gave the same digest %s", d3)
	}
}

// untar unpacks a tar of regular files and folders (the OCI archive).
func untar(t *testing.T, b []byte, dir string) {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(b))
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		if h.Typeflag == tar.TypeDir {
			os.MkdirAll(p, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(p), 0o755)
		data, _ := io.ReadAll(tr)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
