package bundle

import (
	"bytes"
	"io"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// FuzzFrames: whatever is written, in whatever kinds of frame and pieces,
// any zstd decoder gives it back, and the output depends only on the input.
func FuzzFrames(f *testing.F) {
	f.Add([]byte("\x01manifest\x00\x00blob"), uint16(3))
	f.Add(bytes.Repeat([]byte{0, 1, 2, 3}, 70000), uint16(65535))
	f.Add([]byte{}, uint16(0))
	// One encoder and decoder for every input (as one bundle reuses its
	// encoder for every frame): making them costs far more than a run.
	enc, err := newEncoder(nil)
	if err != nil {
		f.Fatal(err)
	}
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(2), zstd.WithDecoderMaxWindow(64<<20), zstd.WithDecoderLowmem(true))
	if err != nil {
		f.Fatal(err)
	}
	defer d.Close()
	f.Fuzz(func(t *testing.T, data []byte, kinds uint16) {
		write := func() []byte {
			var out bytes.Buffer
			fr := newFrames(&out, enc)
			// Cut data into up to 16 pieces, each in the kind of frame
			// the bit of kinds says; the last piece may be huge (raw
			// blocks of 128 KiB and a partial one).
			rest, k := data, kinds
			for i := 0; len(rest) > 0; i++ {
				n := len(rest)
				if i < 15 {
					n = min(n, 1+int(rest[0])*int(rest[0]))
				}
				if err := fr.open(k&1 == 1); err != nil {
					t.Fatal(err)
				}
				if _, err := fr.Write(rest[:n]); err != nil {
					t.Fatal(err)
				}
				rest, k = rest[n:], k>>1|k<<15
			}
			if err := fr.Close(); err != nil {
				t.Fatal(err)
			}
			return out.Bytes()
		}
		a := write()
		if !bytes.Equal(a, write()) {
			t.Fatal("same input, different frames")
		}
		if err := d.Reset(bytes.NewReader(a)); err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(d)
		if err != nil || !bytes.Equal(got, data) {
			t.Fatalf("decoded %d bytes (%v), want %d", len(got), err, len(data))
		}
	})
}
