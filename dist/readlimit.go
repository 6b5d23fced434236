package dist

import (
	"errors"
	"io"
	"os"
)

// ErrFileTooLarge: a file over the size its reader allows (ReadFileLimit).
var ErrFileTooLarge = errors.New("over the size limit")

// ReadFileLimit reads the file at path whole, refusing (ErrFileTooLarge)
// one over limit bytes before holding more than limit+1 of them: the one
// way airgap reads a small file it did not write (a manifest, a signature,
// a state file) into memory.
func ReadFileLimit(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit {
		return nil, ErrFileTooLarge
	}
	return b, nil
}
