package store

import "errors"

var (
	// ErrNoStore: the directory is not an airgap store (no index.json).
	ErrNoStore = errors.New("not an airgap store")
	// ErrBlobMissing: a blob the catalog (or a delta bundle) needs is absent.
	ErrBlobMissing = errors.New("blob missing from the store")
	// ErrLocked: another import holds the store lock.
	ErrLocked = errors.New("another import is running on this store")
	// ErrCorrupt: the index is unreadable.
	ErrCorrupt = errors.New("store index is corrupt")
)
