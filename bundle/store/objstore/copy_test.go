package objstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"testing"
)

// TestHashingReaderFailsBeforeTheLastByte: a body of declared length is
// read as an HTTP client does (up to the length, no read for EOF); bytes
// that do not match the name fail on the read that completes the length,
// and that read's bytes are withheld, so the server never has the whole
// body (it would refuse it with its own error first, racing ours).
func TestHashingReaderFailsBeforeTheLastByte(t *testing.T) {
	good := bytes.Repeat([]byte("blob "), 20000)
	sum := sha256.Sum256(good)
	want := hex.EncodeToString(sum[:])
	bad := bytes.Clone(good)
	bad[len(bad)-1] ^= 1

	var sent bytes.Buffer
	r := NewHashingReader(bytes.NewReader(bad), want, int64(len(bad)), "blob")
	n, err := io.Copy(&sent, io.LimitReader(r, int64(len(bad))))
	if !errors.Is(err, ErrDigest) {
		t.Fatalf("damaged body read to its length: %d bytes, %v; want ErrDigest", n, err)
	}
	if n >= int64(len(bad)) {
		t.Fatalf("all %d bytes of a damaged body were passed on", n)
	}

	sent.Reset()
	r = NewHashingReader(bytes.NewReader(good), want, int64(len(good)), "blob")
	if n, err := io.Copy(&sent, io.LimitReader(r, int64(len(good)))); err != nil || n != int64(len(good)) {
		t.Fatalf("good body: %d bytes, %v", n, err)
	}
}
