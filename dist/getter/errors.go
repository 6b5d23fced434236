package getter

import "errors"

// ErrUnsupported: a source kind airgap cannot fetch.
var ErrUnsupported = errors.New("unsupported module source")

// ErrUnsafeArchive: a module archive or checkout has an entry that could
// reach outside its root, or a kind of entry airgap does not unpack.
var ErrUnsafeArchive = errors.New("unsafe module archive")

// ErrArchiveLimit: a module archive or checkout exceeds MaxArchiveEntries,
// MaxArchiveBytes or MaxArchiveLinks.
var ErrArchiveLimit = errors.New("module archive too large")
