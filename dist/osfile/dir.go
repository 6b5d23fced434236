package osfile

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"os"
)

// ErrTooLarge marks a file Dir.ReadFile refused because it is larger than
// the caller's limit.
var ErrTooLarge = errors.New("file larger than the limit")

var randReader = rand.Reader

// readAllLimit reads f whole, refusing it (ErrTooLarge) past max bytes.
func readAllLimit(f *os.File, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, fmt.Errorf("%s: %w (%d bytes)", f.Name(), ErrTooLarge, max)
	}
	return b, nil
}
