package protocol

import (
	"bytes"
	"errors"
	"io"
	"testing"
)

// endReader hands out data a few bytes per read and then ends with err,
// either with the last bytes (withData) or in a read of its own.
type endReader struct {
	data     []byte
	err      error
	withData bool
}

func (r *endReader) Read(p []byte) (int, error) {
	n := min(len(p), 1000, len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	if len(r.data) == 0 && (r.withData || n == 0) {
		return n, r.err
	}
	return n, nil
}

// TestCopyHeld: a stream that ends cleanly is copied whole; one that fails
// at its end (a digest mismatch) leaves the copy short — whether the
// failure comes with the last bytes or after them, and whether the data
// ends on a chunk boundary or not.
func TestCopyHeld(t *testing.T) {
	bad := errors.New("mismatch")
	for _, size := range []int{1, 1000, 64 << 10, 128 << 10, 200_000} {
		data := bytes.Repeat([]byte{7}, size)
		for _, withData := range []bool{false, true} {
			var w bytes.Buffer
			if err := copyHeld(&w, &endReader{data: data, err: io.EOF, withData: withData}); err != nil || !bytes.Equal(w.Bytes(), data) {
				t.Errorf("%d bytes, clean end (with data %v): %v, copied %d", size, withData, err, w.Len())
			}
			for _, bad := range []error{bad, io.ErrUnexpectedEOF} { // (a body whose connection broke)
				w.Reset()
				if err := copyHeld(&w, &endReader{data: data, err: bad, withData: withData}); !errors.Is(err, bad) || w.Len() >= size {
					t.Errorf("%d bytes, failing end %q (with data %v): %v, copied %d (want fewer)", size, bad, withData, err, w.Len())
				}
			}
		}
	}
}
