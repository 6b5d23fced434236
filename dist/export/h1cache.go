package export

import (
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// The cache keeps the h1: hash of every package it holds, in
// h1/<hex> beside blobs/sha256/<hex>: computing it unpacks the whole zip
// (4-5 times its size, at about 400 MB/s of output per core), so without it
// a re-export with a warm cache spent 80% of its time recomputing what it
// already knew. h1 is a function of the package's bytes, which the cache
// holds under their sha256, so the hash is kept for as long as the file.
// A damaged or planted h1 file cannot reach a site unnoticed: the bundle's
// h1 hashes are recomputed from the zips by 'airgap verify' and 'airgap
// import' (bundle.Checker), which refuse a bundle whose catalog disagrees.

// h1 returns the h1: hash of the cached package d at path.
func (e *exporter) h1(d verify.Digest, path string) (string, error) {
	kept := filepath.Join(e.opt.CacheDir, "h1", d.Hex())
	if b, err := os.ReadFile(kept); err == nil {
		if h := strings.TrimSpace(string(b)); validH1(h) {
			return h, nil
		}
	}
	h, err := dist.H1(path)
	if err != nil {
		return "", err
	}
	// Kept through a temporary file, so a killed export leaves no torn
	// hash; a failure to keep it costs only its recomputation next time.
	tmp := e.tmpPath()
	if os.WriteFile(tmp, []byte(h+"\n"), 0o644) != nil || os.Rename(tmp, kept) != nil {
		os.Remove(tmp)
	}
	return h, nil
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
