// Package modzip turns a normalized module archive (the gzip'd tar that
// dist/getter writes) into the deterministic zip that OpenTofu's oci://
// module packages must be. It imports nothing of airgap's, so fixtures
// (bundle/bundletest) can use it without depending on the getter.
//
// It does not fetch, check or publish modules: it converts one archive.
package modzip

import (
	"archive/tar"
	"archive/zip"
	"compress/flate"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"time"
)

// Limits of ZipFromTarGz. The input has passed dist/getter's limits
// already (at most 1 GiB of content, 100 000 entries); these bound a
// conversion of anything else.
const (
	maxZipEntries       = 200_000
	maxZipName          = 4096
	maxZipBytes   int64 = 1 << 30
)

// zipEpoch is the modification time of every zip entry (the earliest a zip
// can record).
var zipEpoch = time.Date(1980, 1, 1, 0, 0, 0, 0, time.UTC)

// ZipFromTarGz converts a module archive as Normalize writes it (a gzip'd
// tar of directories and regular files) into a zip of the same tree, for
// OpenTofu's oci:// module packages, which must be zips. The output is a
// function of the input alone: entries in the archive's order, fixed
// times, modes 0755/0644, deflate at the default level. It streams (memory
// does not grow with the archive) and refuses links, devices, unsafe paths,
// more than 200 000 entries or more than 1 GiB of content, since the
// archive came from the internet.
func ZipFromTarGz(r io.Reader, w io.Writer) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return fmt.Errorf("module archive: %w", err)
	}
	tr := tar.NewReader(gz)
	zw := zip.NewWriter(w)
	zw.RegisterCompressor(zip.Deflate, func(out io.Writer) (io.WriteCloser, error) {
		return flate.NewWriter(out, flate.DefaultCompression)
	})
	var total int64
	for n := 0; ; n++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("module archive: %w", err)
		}
		if n >= maxZipEntries {
			return fmt.Errorf("module archive has more than %d entries", maxZipEntries)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name := strings.TrimSuffix(h.Name, "/")
		if name == "" || len(name) > maxZipName || strings.HasPrefix(name, "/") || strings.Contains(name, "\\") ||
			path.Clean(name) != name || name == ".." || strings.HasPrefix(name, "../") {
			return fmt.Errorf("module archive: unsafe path %q", h.Name)
		}
		fh := &zip.FileHeader{Name: name, Modified: zipEpoch}
		switch h.Typeflag {
		case tar.TypeDir:
			fh.Name += "/"
			fh.Method = zip.Store
			fh.SetMode(fs.ModeDir | 0o755)
			if _, err := zw.CreateHeader(fh); err != nil {
				return err
			}
		case tar.TypeReg:
			total += h.Size
			if total > maxZipBytes {
				return fmt.Errorf("module archive holds more than %d bytes", maxZipBytes)
			}
			fh.Method = zip.Deflate
			fh.SetMode(0o644)
			if h.Mode&0o111 != 0 {
				fh.SetMode(0o755)
			}
			fw, err := zw.CreateHeader(fh)
			if err != nil {
				return err
			}
			if _, err := io.CopyN(fw, tr, h.Size); err != nil {
				return fmt.Errorf("module archive: %s: %w", name, err)
			}
		default:
			return fmt.Errorf("module archive: %q is not a regular file or directory (type %q)", h.Name, h.Typeflag)
		}
	}
	return zw.Close()
}
