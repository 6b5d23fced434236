package bundle

import "errors"

// Sentinel errors; wrapped with context where they are returned.
var (
	// ErrFormat: the stream is not a well-formed bundle (bad tar, wrong,
	// extra, missing or duplicate entries, unsafe entry names or types).
	ErrFormat = errors.New("malformed bundle")
	// ErrTruncated: the stream ended early.
	ErrTruncated = errors.New("bundle is truncated")
	// ErrManifest: the manifest is unreadable or inconsistent.
	ErrManifest = errors.New("invalid manifest")
	// ErrInconsistent: a validly signed manifest contradicts itself or the
	// blobs it lists (see check.Manifest and check.Checker).
	ErrInconsistent = errors.New("the bundle contradicts itself")
	// ErrTooNew: the bundle format is newer than this program.
	ErrTooNew = errors.New("bundle format is newer than this airgap understands")
	// ErrNotBundle: the file is something else (a zip, a PDF, text…).
	ErrNotBundle = errors.New("not an airgap bundle")
	// ErrSignatureTime: a signature is dated where it cannot be: the
	// bundle's after this machine's clock allows, or a provider's
	// SHA256SUMS signature after the bundle's (see check.Options).
	ErrSignatureTime = errors.New("a signature is dated impossibly")
	// ErrRevokedPublisherKey: a provider's SHA256SUMS is signed by a key
	// the publisher revoked (the keys the bundle carries for it hold the
	// revocation). The bundle says nothing wrong: it brings a version the
	// publisher's key no longer vouches for.
	ErrRevokedPublisherKey = errors.New("signed by a publisher key that is revoked")
)

// HintInconsistent is the hint of an ErrInconsistent (or ErrManifest) error:
// what a signed bundle that contradicts itself means and what to do.
const HintInconsistent = "\nhint: the bundle is signed by a key you trust, but what it says is wrong: it was built wrong or altered before it was signed. " +
	"Do not import it; export it again on the connected side, and tell whoever holds the site key"
