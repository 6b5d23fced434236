package store

import (
	"errors"
	"fmt"
	"strings"
	"syscall"

	"github.com/airgap/airgap/dist"
)

// errNoRoom is what checkRoom found: the new blobs would not fit.
var errNoRoom = errors.New("the bundle's new blobs do not fit on the disk holding the store (nothing was staged)")

// noSpace turns a full-disk error into one that says how much was needed
// (and, once importer.close has cleaned up, how much is free).
func noSpace(root string, err error, what string, need int64) error {
	if !isNoSpace(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return &noSpaceError{what: what, err: err, need: need}
}

type noSpaceError struct {
	what      string // what failed with ENOSPC; "" for checkRoom's refusal
	err       error
	need      int64
	free      int64 // measured after the import removed its temporary files
	freeKnown bool
}

func (e *noSpaceError) Error() string {
	free := ""
	if e.freeKnown {
		free = fmt.Sprintf(", and %s are free now", human(e.free))
	}
	first := e.err.Error() // checkRoom's refusal, before anything was written
	if e.what != "" {
		first = fmt.Sprintf("%s: %v: the disk holding the store is full", e.what, e.err)
	}
	return fmt.Sprintf("%s\nhint: this import needs about %s for its new blobs and index%s; free space (or move the store) and run the import again",
		first, human(e.need), free)
}

func (e *noSpaceError) Unwrap() error { return e.err }

func human(n int64) string { return dist.HumanSize(n) }

func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || err != nil && strings.Contains(err.Error(), "no space left on device")
}
