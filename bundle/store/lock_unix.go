//go:build unix

package store

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// lockStore takes the store's exclusive lock. If wait is false and another
// process holds it, it returns ErrLocked at once; if wait is true it waits
// until the lock is free or ctx is done. The lock dies with the process, so
// a killed import never leaves the store locked.
//
// A failed first import removes the lock file it created (see
// importer.close); whoever was waiting on that file then holds a lock on
// a file that is no longer the store's, so the lock is taken again until
// the file locked is the one at the path.
func lockStore(ctx context.Context, root string, wait bool) (func(), error) {
	for {
		f, err := os.OpenFile(lockPath(root), os.O_CREATE|os.O_RDWR, 0o644)
		if err != nil {
			return nil, err
		}
		if err := flockCtx(ctx, f, wait); err != nil {
			f.Close()
			return nil, err
		}
		held, err1 := f.Stat()
		now, err2 := os.Stat(lockPath(root))
		if err1 == nil && err2 == nil && os.SameFile(held, now) {
			return func() {
				syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				f.Close()
			}, nil
		}
		f.Close() // the file was removed or replaced meanwhile: lock the new one
	}
}

// flockCtx takes an exclusive flock on f: at once or ErrLocked, or (wait)
// polling until it is free or ctx is done.
func flockCtx(ctx context.Context, f *os.File, wait bool) error {
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if !wait {
			return ErrLocked
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// HoldServing marks the store as served by this process until release is
// called (or the process ends): a shared flock on STORE/serve.lock, which
// every 'airgap serve' of the store holds at once. Served asks whether any
// does, so that a tool about to delete a store (the demo) can refuse.
func HoldServing(root string) (release func(), err error) {
	f, err := os.OpenFile(servePath(root), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, err
	}
	return func() { f.Close() }, nil
}

// Served reports whether a running 'airgap serve' holds the store at root
// (see HoldServing).
func Served(root string) bool {
	f, err := os.Open(servePath(root))
	if err != nil {
		return false
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return errors.Is(err, syscall.EWOULDBLOCK)
	}
	syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	return false
}
