package osfile

import "os"

// LockPath opens path (created 0600 if absent; it holds nothing) and takes
// an exclusive lock on it, waiting for whoever holds it. unlock releases
// the lock and closes the file.
func LockPath(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := Lock(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { Unlock(f); f.Close() }, nil
}
