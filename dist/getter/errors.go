package getter

import (
	"errors"
	"fmt"
)

// ErrUnsupported: a source kind airgap cannot fetch.
var ErrUnsupported = errors.New("unsupported module source")

// ErrUnsafeArchive: a module archive or checkout has an entry that could
// reach outside its root, or a kind of entry airgap does not unpack.
var ErrUnsafeArchive = errors.New("unsafe module archive")

// ErrArchiveLimit: a module archive or checkout exceeds MaxArchiveEntries,
// MaxArchiveBytes or MaxArchiveLinks.
var ErrArchiveLimit = errors.New("module archive too large")

// ErrGitTooLarge (an ErrArchiveLimit): a git fetch passed Options.MaxGitSize.
var ErrGitTooLarge = fmt.Errorf("%w: git repository too large", ErrArchiveLimit)

// ErrUnreachable: a git repository's host (or the proxy to it) could not
// be reached: its name did not resolve, the connection failed or got no
// answer in time. Another repository on that host will not fare better.
var ErrUnreachable = errors.New("the repository's host could not be reached")

// ErrRefNotFound: a git source's ref (tag, branch or commit) is not in the
// repository, which was cloned.
var ErrRefNotFound = errors.New("not found in the repository")

// ErrCloneFailed: git could not clone a git source at all: the repository
// is not there (a wrong URL), or not reachable, or refuses this machine's
// credentials. Errors that wrap it keep git's own message as their text.
var ErrCloneFailed = errors.New("git clone failed")

// cloneError is a failed clone: git's message, marked ErrCloneFailed.
type cloneError struct{ err error }

func (e cloneError) Error() string   { return e.err.Error() }
func (e cloneError) Unwrap() []error { return []error{e.err, ErrCloneFailed} }
