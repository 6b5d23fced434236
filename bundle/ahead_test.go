package bundle

import (
	"bytes"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// aheadWriter writes exactly what it is given, in order, to a new file (in
// O_DIRECT where the file system allows it, the last partial chunk
// without), to a file at an unaligned offset (through the page cache) and
// to a non-file.
func TestAheadWriter(t *testing.T) {
	rnd := rand.New(rand.NewPCG(3, 4))
	data := make([]byte, 5*aheadChunk+12345)
	for i := range data {
		data[i] = byte(rnd.Uint32())
	}
	write := func(w io.Writer) *aheadWriter {
		a := newAheadWriter(w)
		for rest := data; len(rest) > 0; {
			n := min(len(rest), 1+rnd.IntN(3*aheadChunk/2))
			if _, err := a.Write(rest[:n]); err != nil {
				t.Fatal(err)
			}
			rest = rest[n:]
		}
		if err := a.Close(); err != nil {
			t.Fatal(err)
		}
		return a
	}
	for _, prefix := range []string{"", "odd"} {
		path := filepath.Join(t.TempDir(), "bundle")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString(prefix)
		a := write(f)
		if prefix != "" && a.written != int64(len(prefix)+len(data)) {
			t.Errorf("written %d", a.written)
		}
		f.Close()
		got, _ := os.ReadFile(path)
		if !bytes.Equal(got, append([]byte(prefix), data...)) {
			t.Fatalf("prefix %q: the file differs from what was written (%d bytes, want %d)", prefix, len(got), len(prefix)+len(data))
		}
		t.Logf("prefix %q: %d bytes written with O_DIRECT", prefix, a.directBytes)
		if prefix != "" && a.directBytes != 0 {
			t.Error("O_DIRECT used at an unaligned offset")
		}
	}
	var b bytes.Buffer
	write(&b)
	if !bytes.Equal(b.Bytes(), data) {
		t.Fatal("a buffer got other bytes")
	}
	// A failed writer returns its error and stops.
	a := newAheadWriter(failingWriter{})
	a.Write(make([]byte, 2*aheadChunk))
	if err := a.Close(); err == nil {
		t.Fatal("a failing write was not reported")
	}
}

type failingWriter struct{}

func (failingWriter) Write(p []byte) (int, error) { return 0, io.ErrShortWrite }

// readAhead gives back exactly the file's bytes (read with O_DIRECT where
// the file system allows it, the tail without), whatever the reads' sizes,
// and stops when closed early.
func TestReadAhead(t *testing.T) {
	rnd := rand.New(rand.NewPCG(5, 6))
	data := make([]byte, 6*aheadChunk+777)
	for i := range data {
		data[i] = byte(rnd.Uint32())
	}
	path := filepath.Join(t.TempDir(), "bundle")
	os.WriteFile(path, data, 0o644)
	for _, stopAt := range []int{-1, aheadChunk + 5} {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		r := newReadAhead(f)
		var got []byte
		for stopAt < 0 || len(got) < stopAt {
			p := make([]byte, 1+rnd.IntN(300<<10))
			n, err := r.Read(p)
			got = append(got, p[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if stopAt < 0 && !bytes.Equal(got, data) || stopAt >= 0 && !bytes.Equal(got, data[:len(got)]) {
			t.Fatalf("read %d bytes that differ from the file's %d", len(got), len(data))
		}
	}
}
