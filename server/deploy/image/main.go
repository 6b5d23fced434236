// Command image builds airgap's container image without a container
// daemon: an OCI image index of linux/amd64 and linux/arm64 images, each
// one layer holding the static binary, a CA bundle, /etc/passwd naming the
// non-root user 65532, an empty /store and /tmp; no shell, nothing else.
// It is written as an OCI image layout in a tar file (an "oci-archive",
// which podman, skopeo and crane load), and its digest is printed.
//
// The image is reproducible: every time in it (file times, the config's
// created, history) is SOURCE_DATE_EPOCH, files are added in a fixed order
// with fixed owners and modes, and the CA bundle comes from a pinned Go
// module (golang.org/x/crypto/x509roots/fallback), not from the build
// machine. The same binaries and epoch give the same digest. 'make image'
// builds the binaries (-trimpath) and takes the epoch from the commit.
//
// Usage:
//
//	image -version V -epoch SECONDS -out FILE.tar linux/amd64=BIN linux/arm64=BIN
//
// Worst case: it reads each binary whole into memory (airgap is about
// 40 MiB), refuses one over 512 MiB, and writes about twice the binaries'
// compressed size to a temporary folder beside -out.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/crypto/x509roots/fallback/bundle"
)

// The user the image runs as (the distroless "nonroot" uid), the store's
// owner.
const uid = 65532

// maxBinary bounds what is read into memory per platform.
const maxBinary = 512 << 20

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fl := flag.NewFlagSet("image", flag.ContinueOnError)
	version := fl.String("version", "", "the version in the image's labels and its ref.name")
	epoch := fl.String("epoch", os.Getenv("SOURCE_DATE_EPOCH"), "every time in the image, in seconds since 1970 (default $SOURCE_DATE_EPOCH)")
	revision := fl.String("revision", "", "the commit, for the org.opencontainers.image.revision label")
	out := fl.String("out", "", "the OCI archive (a tar of an OCI image layout) to write")
	if err := fl.Parse(args); err != nil {
		return err
	}
	if *version == "" || *out == "" || fl.NArg() == 0 {
		return errors.New("usage: image -version V -epoch SECONDS -out FILE.tar linux/ARCH=BINARY...\nhint: make image runs it")
	}
	secs, err := strconv.ParseInt(*epoch, 10, 64)
	if err != nil || secs < 0 {
		return fmt.Errorf("epoch %q is not a number of seconds\nhint: set SOURCE_DATE_EPOCH (git log -1 --format=%%ct)", *epoch)
	}
	when := time.Unix(secs, 0).UTC()
	ca, err := caBundle()
	if err != nil {
		return err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, a := range fl.Args() {
		plat, bin, ok := strings.Cut(a, "=")
		osName, arch, ok2 := strings.Cut(plat, "/")
		if !ok || !ok2 || osName != "linux" || (arch != "amd64" && arch != "arm64") {
			return fmt.Errorf("%q is not linux/amd64=BINARY or linux/arm64=BINARY", a)
		}
		img, err := platformImage(bin, arch, ca, *version, *revision, when)
		if err != nil {
			return err
		}
		p := v1.Platform{OS: "linux", Architecture: arch}
		if arch == "arm64" {
			p.Variant = "v8"
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &p}})
	}
	idx = mutate.Annotations(idx, labels(*version, *revision, when)).(v1.ImageIndex)
	digest, err := idx.Digest()
	if err != nil {
		return err
	}
	if err := writeArchive(*out, idx, *version, when); err != nil {
		return err
	}
	fmt.Println(digest)
	return nil
}

func labels(version, revision string, when time.Time) map[string]string {
	l := map[string]string{
		"org.opencontainers.image.title":    "airgap",
		"org.opencontainers.image.version":  version,
		"org.opencontainers.image.created":  when.Format(time.RFC3339),
		"org.opencontainers.image.licenses": "Apache-2.0",
	}
	if revision != "" {
		l["org.opencontainers.image.revision"] = revision
	}
	return l
}

// caBundle is the Mozilla root set as PEM, from the pinned module. Roots
// that carry a constraint (distrust after a date) cannot be expressed in
// a PEM bundle and are left out, as Debian's ca-certificates does.
func caBundle() ([]byte, error) {
	var b bytes.Buffer
	n := 0
	for r := range bundle.Roots() {
		if r.Constraint != nil {
			continue
		}
		pem.Encode(&b, &pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate})
		n++
	}
	if n < 50 {
		return nil, fmt.Errorf("the CA bundle has only %d roots", n)
	}
	return b.Bytes(), nil
}

func platformImage(bin, arch string, ca []byte, version, revision string, when time.Time) (v1.Image, error) {
	fi, err := os.Stat(bin)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() || fi.Size() > maxBinary {
		return nil, fmt.Errorf("%s is not a regular file of at most %d MiB", bin, maxBinary>>20)
	}
	exe, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	entry := func(name string, mode int64, owner int, typ byte, data []byte) {
		tw.WriteHeader(&tar.Header{Typeflag: typ, Name: name, Mode: mode, Size: int64(len(data)),
			Uid: owner, Gid: owner, ModTime: when, Format: tar.FormatPAX})
		tw.Write(data)
	}
	entry("airgap", 0o755, 0, tar.TypeReg, exe)
	entry("etc/", 0o755, 0, tar.TypeDir, nil)
	entry("etc/group", 0o644, 0, tar.TypeReg, []byte("root:x:0:\nnonroot:x:65532:\n"))
	entry("etc/passwd", 0o644, 0, tar.TypeReg, []byte("root:x:0:0:root:/:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/store:/sbin/nologin\n"))
	entry("etc/ssl/", 0o755, 0, tar.TypeDir, nil)
	entry("etc/ssl/certs/", 0o755, 0, tar.TypeDir, nil)
	entry("etc/ssl/certs/ca-certificates.crt", 0o644, 0, tar.TypeReg, ca)
	entry("store/", 0o750, uid, tar.TypeDir, nil)
	entry("store/tls/", 0o750, uid, tar.TypeDir, nil)
	entry("tmp/", 0o1777, 0, tar.TypeDir, nil)
	if err := tw.Close(); err != nil {
		return nil, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: when}, CreatedBy: "airgap server/deploy/image " + version}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture, cf.Created = "linux", arch, v1.Time{Time: when}
	if arch == "arm64" {
		cf.Variant = "v8"
	}
	cf.Config = v1.Config{
		User:         fmt.Sprintf("%d:%d", uid, uid),
		Entrypoint:   []string{"/airgap"},
		Cmd:          []string{"serve", "--store", "/store", "--log-format", "json"},
		Env:          []string{"AIRGAP_LISTEN=:8443", "SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		ExposedPorts: map[string]struct{}{"8443/tcp": {}},
		WorkingDir:   "/",
		Labels:       labels(version, revision, when),
	}
	return mutate.ConfigFile(img, cf)
}

// writeArchive writes idx as an OCI image layout whose index.json names
// it (org.opencontainers.image.ref.name = version) and tars the layout
// into out: entries sorted, times and owners fixed.
func writeArchive(out string, idx v1.ImageIndex, version string, when time.Time) error {
	dir, err := os.MkdirTemp(filepath.Dir(out), ".image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return err
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": version})); err != nil {
		return err
	}
	var names []string
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		names = append(names, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	part := out + ".partial"
	f, err := os.Create(part)
	if err != nil {
		return err
	}
	defer os.Remove(part)
	tw := tar.NewWriter(f)
	for _, n := range names {
		fi, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			return err
		}
		h := &tar.Header{Name: n, Mode: 0o644, ModTime: when, Typeflag: tar.TypeReg, Size: fi.Size(), Format: tar.FormatPAX}
		if fi.IsDir() {
			h.Name, h.Mode, h.Typeflag, h.Size = n+"/", 0o755, tar.TypeDir, 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		if !fi.IsDir() {
			src, err := os.Open(filepath.Join(dir, n))
			if err != nil {
				return err
			}
			_, err = io.Copy(tw, src)
			src.Close()
			if err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(part, out)
}
