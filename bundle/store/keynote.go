package store

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/airgap/airgap/bundle"
	"github.com/airgap/airgap/bundle/check"
	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/verify"
)

// keyNote says, for inventory, what a provider version's SHA256SUMS signature
// looks like by now: "" when its key is still valid, else a note that the key
// has expired since it signed (which import accepted: signatures are judged
// as of their creation), or that the signature no longer checks out. It reads
// the two small blobs from the store.
func keyNote(root string, p dist.ProviderVersion, now time.Time) string {
	sums, err1 := readBlob(root, p.Shasums, dist.MaxShasumsSize)
	sig, err2 := readBlob(root, p.ShasumsSig, bundle.MaxSignatureSize)
	if err1 != nil || err2 != nil {
		return "(SHA256SUMS or its signature is missing from the store)"
	}
	c, err := check.ProviderSignature(p, sums, sig)
	if err != nil {
		return fmt.Sprintf("(SHA256SUMS signature no longer verifies: %v)", err)
	}
	if c.ExpiredSince(now) {
		return fmt.Sprintf("(signing key %s expired %s; it signed %s, while valid)",
			c.Signer.KeyID, c.KeyExpires.UTC().Format("2006-01-02"), c.Created.UTC().Format("2006-01-02"))
	}
	return ""
}

func readBlob(root string, d verify.Digest, limit int64) ([]byte, error) {
	f, err := os.Open(BlobPath(root, d))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}
