package store

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/goinfo"
	"github.com/airgap/airgap/dist/sbom"
	"github.com/airgap/airgap/verify"
)

// SBOM is the CycloneDX SBOM of what the store at root serves (IndexSBOM
// over its blobs).
func SBOM(root string, ix *Index, tool string) ([]byte, error) {
	return IndexSBOM(ix, func(d verify.Digest, limit int64) ([]byte, error) { return readBlobLimited(root, d, limit) }, tool)
}

// IndexSBOM is the CycloneDX SBOM of an index's catalog (see dist/sbom):
// each package's Go build information from its document (read through
// read, which checks the digest; checked against the zip when it was
// imported; a package imported from a bundle without one is "not
// recorded"), the publisher keys' fingerprints, and, as its time, the
// newest import. tool names the airgap that writes it. Memory: the SBOM
// itself plus one build information document at a time.
func IndexSBOM(ix *Index, read func(d verify.Digest, limit int64) ([]byte, error), tool string) ([]byte, error) {
	var at *time.Time
	for _, e := range ix.Imports {
		if t := e.Time.UTC(); at == nil || t.After(*at) {
			at = &t
		}
	}
	var readErr error
	b, err := sbom.Generate(sbom.Input{
		Subject: "airgap store", Tool: tool, Time: at, Catalog: &ix.Catalog, Keys: check.FingerprintCache(),
		BuildInfo: func(pk dist.Package) (*goinfo.Info, bool) {
			if pk.BuildInfo == "" || readErr != nil {
				return nil, false
			}
			info, err := readBuildInfo(read, pk.BuildInfo)
			if err != nil {
				readErr = err
			}
			return info, err == nil
		},
	})
	if readErr != nil {
		return nil, readErr
	}
	return b, err
}

// readBuildInfo reads and checks the Go build information document d.
func readBuildInfo(read func(verify.Digest, int64) ([]byte, error), d verify.Digest) (*goinfo.Info, error) {
	f, err := read(d, goinfo.MaxDocument)
	if err != nil {
		return nil, fmt.Errorf("the Go build information %s: %w\nhint: the store is damaged; import the bundle that carried it again", d.Short(), err)
	}
	return goinfo.Decode(f)
}

// ReadBlobFrom is readBlobLimited for the store directory root.
func ReadBlobFrom(root string, d verify.Digest, limit int64) ([]byte, error) {
	return readBlobLimited(root, d, limit)
}

// ReadRemoteBlob reads blob d from r (a store in object storage), at
// most limit bytes (a larger object is refused before it is read),
// verified against d as on disk.
func ReadRemoteBlob(ctx context.Context, r Remote, d verify.Digest, limit int64) ([]byte, error) {
	rc, size, err := r.Stream(ctx, d)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	if size > limit {
		return nil, fmt.Errorf("over the %d-byte limit", limit)
	}
	return ReadVerified(rc, d, limit)
}

// readBlobLimited reads blob d of at most limit bytes and checks its
// digest.
func readBlobLimited(root string, d verify.Digest, limit int64) ([]byte, error) {
	return readFileVerified(BlobPath(root, d), d, limit)
}

// readFileVerified reads the file at path, at most limit bytes, and checks
// that its bytes are d.
func readFileVerified(path string, d verify.Digest, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadVerified(f, d, limit)
}

// ReadVerified reads r, at most limit bytes, and checks that they are d.
func ReadVerified(r io.Reader, d verify.Digest, limit int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, limit+1))
	switch {
	case err != nil:
		return nil, err
	case int64(len(b)) > limit:
		return nil, fmt.Errorf("over the %d-byte limit", limit)
	case verify.DigestBytes(b) != d:
		return nil, fmt.Errorf("its bytes do not match its digest")
	}
	return b, nil
}
