package zipdir

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

func zipOf(t testing.TB, n int) []byte {
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := range n {
		w, err := zw.Create(fmt.Sprintf("f%d", i))
		if err != nil {
			t.Fatal(err)
		}
		w.Write([]byte("x"))
	}
	zw.Close()
	return b.Bytes()
}

// TestCountWraps: an end record whose 16-bit count wrapped (it says 1, the
// directory holds 65537 headers) is refused by counting the headers.
func TestCountWraps(t *testing.T) {
	z := zipOf(t, 65537)
	// archive/zip wrote a zip64 end record for so many entries; drop it and
	// make the classic end record say 65537 mod 65536 = 1 entry.
	end := bytes.LastIndex(z, []byte("PK\x05\x06"))
	loc := bytes.LastIndex(z[:end], []byte("PK\x06\x07"))
	rec := bytes.LastIndex(z[:loc], []byte("PK\x06\x06"))
	dirSize := binary.LittleEndian.Uint64(z[rec+40:])
	dirOff := binary.LittleEndian.Uint64(z[rec+48:])
	e := append([]byte(nil), z[end:end+22]...)
	binary.LittleEndian.PutUint16(e[8:], 1)
	binary.LittleEndian.PutUint16(e[10:], 1)
	binary.LittleEndian.PutUint32(e[12:], uint32(dirSize))
	binary.LittleEndian.PutUint32(e[16:], uint32(dirOff))
	lying := append(append([]byte(nil), z[:rec]...), e...)
	if zr, err := zip.NewReader(bytes.NewReader(lying), int64(len(lying))); err != nil || len(zr.File) != 65537 {
		t.Fatalf("archive/zip should read all 65537 entries of the lying zip: %v", err)
	}
	err := Check(bytes.NewReader(lying), int64(len(lying)), 256, 1<<30)
	var ze *Error
	if !errors.As(err, &ze) || !ze.Limit {
		t.Errorf("a zip of 65537 entries whose end record says 1: %v", err)
	}
	if err := Check(bytes.NewReader(z), int64(len(z)), 70000, 1<<30); err != nil {
		t.Errorf("the honest zip within the limits: %v", err)
	}
}

// FuzzCheck: whatever Check accepts, archive/zip reads at most maxEntries
// files from.
func FuzzCheck(f *testing.F) {
	f.Add(zipOf(f, 3))
	f.Add(zipOf(f, 9))
	f.Add([]byte("PK\x05\x06" + string(make([]byte, 18))))
	f.Fuzz(func(t *testing.T, b []byte) {
		const maxEntries, maxDir = 4, 4096
		if Check(bytes.NewReader(b), int64(len(b)), maxEntries, maxDir) != nil {
			return
		}
		zr, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
		if err == nil && len(zr.File) > maxEntries {
			t.Fatalf("Check accepted a zip of %d entries (limit %d)", len(zr.File), maxEntries)
		}
	})
}
