package osfile

import (
	"crypto/rand"
	"errors"
)

// ErrTooLarge marks a file Dir.ReadFile refused because it is larger than
// the caller's limit.
var ErrTooLarge = errors.New("file larger than the limit")

var randReader = rand.Reader
