package check

import (
	"archive/tar"
	"archive/zip"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/modzip"
	"github.com/airgap/airgap/dist/portable"
	"github.com/airgap/airgap/dist/zipdir"
	"github.com/airgap/airgap/verify"
)

// checkH1 computes the h1 of the zip at path and, in the same pass, the Go
// build information of its plugin (ScanPackage), and compares both with
// what the catalog says for every package with digest d.
func (c *Checker) checkH1(d verify.Digest, path string) error {
	want := c.wantH1[d]
	got, info, err := ScanPackage(path)
	if err != nil {
		return inconsistent(c.m.Describe(d), "package %s is not a usable provider zip: %v", d.Short(), err)
	}
	if got != want {
		return inconsistent(c.m.Describe(d), "the catalog says h1 %s, but the package hashes to %s", want, got)
	}
	doc := goinfo.Encode(info)
	if wantBI := c.wantBI[d]; wantBI != "" {
		if bi := verify.DigestBytes(doc); bi != wantBI {
			return inconsistent(c.m.Describe(d), "the catalog gives it the Go build information %s, but its plugin's is %s: the SBOM would not describe what it carries",
				wantBI.Short(), bi.Short())
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.wantBI[d] != "" {
		c.rep.BuildInfo += c.uses[d]
		if info.None != "" {
			c.rep.BuildInfoNone += c.uses[d]
		}
	}
	c.rep.noteBuild(d, info)
	if c.m.SBOM == "" {
		return nil
	}
	// Kept for checkSBOM: at most MaxSBOMSize in all (checkBuildInfoTotal),
	// and refused here, while the stream goes on, once they list more
	// modules than checkSBOM would build (MaxSBOMModules).
	c.infos[d] = doc
	if c.modules += (info.Modules() + 1) * c.uses[d]; c.modules > MaxSBOMModules {
		return tooManyModules()
	}
	return nil
}

// checkModule checks the module archive at path (digest d): its names
// (moduleNames), then, where the catalog gives it a zip, that zip.
func (c *Checker) checkModule(d verify.Digest, path string) error {
	if err := moduleNames(path); err != nil {
		return inconsistent(c.m.Describe(d), "%v", err)
	}
	if c.wantZip[d] == "" {
		return nil
	}
	if err := c.checkModuleZip(d, path); err != nil {
		return err
	}
	c.mu.Lock()
	c.rep.ModuleZips++
	c.mu.Unlock()
	return nil
}

// moduleNames refuses a module archive with a name that is not the same
// file on Linux, macOS and Windows, or is one with another of its names
// there (package portable): export refuses them in every source it
// fetches, and the transfer station refuses them in bundles an older or
// hostile exporter made. It streams the archive's headers (memory:
// portable.Set's, at most about 30 MiB at the archive limits).
func moduleNames(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("its archive is unreadable: %v", err)
	}
	tr := tar.NewReader(gz)
	names := portable.NewSet()
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("its archive is unreadable: %v", err)
		}
		if name := strings.TrimSuffix(h.Name, "/"); name != "" {
			if err := names.Add(name); err != nil {
				return fmt.Errorf("its archive holds %v", err)
			}
		}
	}
}

// checkModuleZip rebuilds the zip of the module archive at path (digest d)
// and compares its sha256 with the catalog's zip for that archive.
func (c *Checker) checkModuleZip(d verify.Digest, path string) error {
	want := c.wantZip[d]
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	h := verify.NewDigester()
	if err := modzip.ZipFromTarGz(f, h); err != nil {
		return inconsistent(c.m.Describe(d), "its archive %s cannot be turned into a zip: %v", d.Short(), err)
	}
	if got := h.Digest(); got != want {
		return inconsistent(c.m.Describe(d), "the catalog gives it the zip %s, but its archive %s makes the zip %s: "+
			"OpenTofu's oci:// sources would get other files than the registry protocol serves", want.Short(), d.Short(), got.Short())
	}
	return nil
}

// ScanPackage is the h1 of a provider zip (dist.H1) and the Go build
// information of its plugin, read in one pass (goinfo.ScanZip), within the
// bounds MaxZipEntries, MaxZipDirectory, MaxZipUnpacked and MaxZipRatio.
// Export (for packages a publisher signed and for those only a mirror's
// hashes vouch for) and the consistency check use it.
func ScanPackage(path string) (h1 string, info *goinfo.Info, err error) {
	if err := checkZipLimits(path); err != nil {
		return "", nil, err
	}
	return goinfo.ScanZip(path)
}

// checkZipLimits refuses a zip over the bounds MaxZipEntries,
// MaxZipDirectory, MaxZipUnpacked and MaxZipRatio before it is unpacked.
func checkZipLimits(path string) error {
	size, err := checkZipDirectory(path)
	if err != nil {
		return err
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return err
	}
	var total uint64
	n := len(zr.File)
	for _, f := range zr.File {
		total += f.UncompressedSize64
	}
	zr.Close()
	if n > MaxZipEntries {
		return fmt.Errorf("%d files, over the limit of %d", n, MaxZipEntries)
	}
	if total > MaxZipUnpacked {
		return fmt.Errorf("%d bytes unpacked, over the limit of %d", total, uint64(MaxZipUnpacked))
	}
	if limit := max(uint64(size)*MaxZipRatio, MinZipUnpackedLimit); total > limit {
		return fmt.Errorf("%d bytes unpacked from %d packed, over the limit of %d× (or %d bytes)", total, size, MaxZipRatio, MinZipUnpackedLimit)
	}
	return nil
}

// checkZipDirectory refuses a zip whose central directory holds more than
// MaxZipEntries entries or MaxZipDirectory bytes, however its end record
// counts them, before archive/zip reads the directory into memory (it
// accepts as many as the file's size allows, and offers no limit). It
// returns the zip's size.
func checkZipDirectory(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), zipdir.Check(f, fi.Size(), MaxZipEntries, MaxZipDirectory)
}

// readLimited reads a small file of the bundle (dist.ReadFileLimit).
func readLimited(path string, limit int64) ([]byte, error) { return dist.ReadFileLimit(path, limit) }
