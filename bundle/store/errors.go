package store

import "errors"

var (
	// ErrNoStore: the directory is not an airgap store (no index.json).
	ErrNoStore = errors.New("not an airgap store")
	// ErrBlobMissing: a blob the catalog (or a delta bundle) needs is absent.
	ErrBlobMissing = errors.New("blob missing from the store")
	// ErrLocked: another import, prune or gc holds the store lock.
	ErrLocked = errors.New("another import, prune or gc is running on this store")
	// ErrConflict: a bundle would change what the store serves under a
	// provider or module version it already has.
	ErrConflict = errors.New("the bundle conflicts with what the store serves")
	// ErrWithdrawn: a bundle carries a version the store has withdrawn
	// and does not reinstate it.
	ErrWithdrawn = errors.New("the bundle carries a withdrawn version")
	// ErrPublisherKey: a provider is signed by a publisher key its
	// namespace has not had, and nobody approved it (the publisher-key pins).
	ErrPublisherKey = errors.New("publisher key not accepted")
	// ErrInterrupted: the import was stopped (Ctrl-C, SIGTERM) before its
	// commit; the store was not changed.
	ErrInterrupted = errors.New("the import was stopped before its commit")
	// ErrChainUntrusted: the bundle's chain of custody has a hop the
	// store's chain policy does not trust (ChainPolicy).
	ErrChainUntrusted = errors.New("the bundle's chain of custody is not trusted here")
	// ErrCorrupt: the index is unreadable.
	ErrCorrupt = errors.New("store index is corrupt")
)
