//go:build !unix

package store

import (
	"context"
	"errors"
	"os"
)

// lockStore on systems without flock: an exclusive-create lock file. A
// crashed import leaves it behind; the error says how to clear it.
func lockStore(_ context.Context, root string, wait bool) (func(), error) {
	p := lockPath(root) + ".held"
	f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return nil, ErrLocked
		}
		return nil, err
	}
	f.Close()
	return func() { os.Remove(p) }, nil
}

// HoldServing does nothing on systems without flock.
func HoldServing(string) (func(), error) { return func() {}, nil }

// Served cannot tell on systems without flock.
func Served(string) bool { return false }
