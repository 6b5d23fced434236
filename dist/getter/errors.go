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
