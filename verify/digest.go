package verify

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"io"
	"strings"
)

// Digest is a typed content digest, always "sha256:<64 lowercase hex>".
type Digest string

// ParseDigest checks the form of s and returns it as a Digest.
func ParseDigest(s string) (Digest, error) {
	hexPart, ok := strings.CutPrefix(s, "sha256:")
	if !ok || !IsHex64(hexPart) {
		return "", fmt.Errorf("malformed digest %q: want sha256:<64 lowercase hex>", s)
	}
	return Digest(s), nil
}

// Hex returns the hexadecimal part of the digest.
func (d Digest) Hex() string { return strings.TrimPrefix(string(d), "sha256:") }

// Short is the first 12 hex digits, for messages.
func (d Digest) Short() string {
	h := d.Hex()
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

func (d Digest) String() string { return string(d) }

// IsHex64 reports whether s is exactly 64 lowercase hex digits.
func IsHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// FromHash makes a Digest of a finished sha256 hash.
func FromHash(h hash.Hash) Digest {
	return Digest("sha256:" + hex.EncodeToString(h.Sum(nil)))
}

// DigestBytes hashes b.
func DigestBytes(b []byte) Digest {
	s := sha256.Sum256(b)
	return Digest("sha256:" + hex.EncodeToString(s[:]))
}

// Digester counts and hashes everything written to it.
type Digester struct {
	h hash.Hash
	n int64
}

// NewDigester returns an empty Digester.
func NewDigester() *Digester { return &Digester{h: sha256.New()} }

func (d *Digester) Write(p []byte) (int, error) {
	d.n += int64(len(p))
	return d.h.Write(p)
}

// Digest returns the digest of what has been written so far.
func (d *Digester) Digest() Digest { return FromHash(d.h) }

// Size returns how many bytes have been written.
func (d *Digester) Size() int64 { return d.n }

// Check compares what was written with the expected digest and size
// (size < 0 skips the size check).
func (d *Digester) Check(want Digest, size int64) error {
	if size >= 0 && d.n != size {
		return fmt.Errorf("%w: got %d bytes, want %d", ErrSizeMismatch, d.n, size)
	}
	if got := d.Digest(); got != want {
		return fmt.Errorf("%w: got %s, want %s", ErrDigestMismatch, got, want)
	}
	return nil
}

// CopyDigest copies src to dst (dst may be io.Discard) and returns the digest
// and length of what was copied.
func CopyDigest(dst io.Writer, src io.Reader) (Digest, int64, error) {
	d := NewDigester()
	n, err := io.Copy(io.MultiWriter(dst, d), src)
	return d.Digest(), n, err
}
