package export

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/verify"
)

// The cache keeps what the one pass over a package's zip computes
// (check.ScanPackage) — its h1: hash and its plugin's Go build
// information — in h1/<hex> beside blobs/sha256/<hex>: the pass unpacks the
// whole zip (4-5 times its size, at about 400 MB/s of output per core), so
// without it a re-export with a warm cache spent 80% of its time computing
// again what it already knew. Both are functions of the package's bytes,
// which the cache holds under their sha256, so they are kept for as long
// as the file.
//
// The file is the h1 on its first line, then scanLine and the build
// information in goinfo's canonical form (goinfo.Encode); anything else (a
// torn, older or damaged file) is computed again and rewritten. A damaged
// or planted file cannot reach a site unnoticed: 'airgap verify' and
// 'airgap import' (check.Checker) compute both again from the zips and
// refuse a bundle whose catalog or build-information blob disagrees; they
// never read this cache.

// scanLine names what the build information was read with: a change to
// goinfo.Scanner that could find something else in the same bytes bumps
// it, so that no export carries what an older scanner found (verify would
// refuse that bundle).
const scanLine = "goinfo-scan 1"

// maxScanFile bounds a kept file: the h1 line, scanLine and one document.
const maxScanFile = 128 + goinfo.MaxDocument

// scan returns the h1: hash of the cached package d at path and its
// plugin's Go build information: what the cache kept, or check.ScanPackage
// (within the bundle check's bounds on zips), then kept.
func (e *exporter) scan(d verify.Digest, path string) (string, *goinfo.Info, error) {
	kept := e.scanPath(d)
	if h1, info, ok := readScan(kept); ok {
		return h1, info, nil
	}
	h1, info, err := check.ScanPackage(path)
	if err != nil {
		return "", nil, err
	}
	// Kept through a temporary file, so a killed export leaves no torn
	// file; a failure to keep it costs only the pass next time.
	tmp := e.tmpPath()
	if os.WriteFile(tmp, scanFile(h1, info), 0o644) != nil || os.Rename(tmp, kept) != nil {
		os.Remove(tmp)
	}
	return h1, info, nil
}

// scanPath is where the cache keeps what scan computed for d.
func (e *exporter) scanPath(d verify.Digest) string { return scanPathIn(e.opt.CacheDir, d) }

func scanPathIn(cacheDir string, d verify.Digest) string {
	return filepath.Join(cacheDir, "h1", d.Hex())
}

func scanFile(h1 string, info *goinfo.Info) []byte {
	return fmt.Appendf(nil, "%s\n%s\n%s", h1, scanLine, goinfo.Encode(info))
}

// readScan reads a kept file, within maxScanFile bytes.
func readScan(path string) (string, *goinfo.Info, bool) {
	f, err := os.Open(path)
	if err != nil {
		return "", nil, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxScanFile+1))
	if err != nil || len(b) > maxScanFile {
		return "", nil, false
	}
	h1, rest, _ := bytes.Cut(b, []byte("\n"))
	line, doc, _ := bytes.Cut(rest, []byte("\n"))
	if !validH1(string(h1)) || string(line) != scanLine {
		return "", nil, false
	}
	info, err := goinfo.Decode(doc)
	if err != nil {
		return "", nil, false
	}
	return string(h1), info, true
}

// validH1 reports whether s is "h1:" and the base64 of 32 bytes.
func validH1(s string) bool {
	b64, ok := strings.CutPrefix(s, "h1:")
	if !ok {
		return false
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	return err == nil && len(raw) == 32
}
