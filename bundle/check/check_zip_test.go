package check

import (
	"archive/zip"
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// zipH1 is the h1 ScanPackage computes within the zip bounds.
func zipH1(path string) (string, error) {
	h1, _, err := ScanPackage(path)
	return h1, err
}

// TestZipBounds: a zip with more entries than MaxZipEntries is refused
// before archive/zip reads its directory; one within the bound hashes.
func TestZipBounds(t *testing.T) {
	write := func(n int) string {
		p := filepath.Join(t.TempDir(), fmt.Sprintf("z%d.zip", n))
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		zw := zip.NewWriter(f)
		for i := range n {
			w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("f%05d", i), Method: zip.Store})
			if err != nil {
				t.Fatal(err)
			}
			w.Write([]byte("x"))
		}
		zw.Close()
		f.Close()
		return p
	}
	if _, err := zipH1(write(MaxZipEntries)); err != nil {
		t.Errorf("a zip of %d files: %v", MaxZipEntries, err)
	}
	// 65535 entries or more: archive/zip writes a zip64 end record.
	for _, n := range []int{MaxZipEntries + 1, 70000} {
		if _, err := zipH1(write(n)); err == nil || !strings.Contains(err.Error(), "more than 256 entries") {
			t.Errorf("a zip of %d files: %v", n, err)
		}
	}
}

// lyingZip writes a zip of n empty stored files whose central directory is
// complete but whose end record says n mod 65536 entries (no zip64 record).
func lyingZip(t *testing.T, n int) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "lying.zip")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	var size uint32
	le := binary.LittleEndian
	for i := range n {
		name := fmt.Sprintf("f%07d", i)
		h := make([]byte, 46)
		copy(h, "PK\x01\x02")
		le.PutUint16(h[4:], 20)
		le.PutUint16(h[6:], 20)
		le.PutUint16(h[28:], uint16(len(name)))
		w.Write(h)
		w.WriteString(name)
		size += uint32(46 + len(name))
	}
	end := make([]byte, 22)
	copy(end, "PK\x05\x06")
	le.PutUint16(end[8:], uint16(n))
	le.PutUint16(end[10:], uint16(n))
	le.PutUint32(end[12:], size)
	w.Write(end)
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return p
}

// TestZipEntryCountWraps: the end record's entry count has 16 bits, and
// archive/zip compares only those 16 bits with the directory it reads. A
// zip whose end record says 1 entry but whose directory holds 65536+1 is
// refused by counting the directory's headers (and their bytes), before
// archive/zip loads them: checking it allocates about the fixed 64 KiB buffer, not the
// directory.
func TestZipEntryCountWraps(t *testing.T) {
	const n = 65536 + 1
	p := lyingZip(t, n)
	fi, _ := os.Stat(p)
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := zipH1(p)
	runtime.ReadMemStats(&after)
	if err == nil || !strings.Contains(err.Error(), "more than") {
		t.Errorf("a zip of %d entries whose end record says %d: %v", n, n%65536, err)
	}
	got := after.TotalAlloc - before.TotalAlloc
	t.Logf("refusing a %d KiB zip of %d entries allocated %d KiB: %v", fi.Size()>>10, n, got>>10, err)
	if got > 1<<20 {
		t.Errorf("refusing a %d KiB zip allocated %d KiB", fi.Size()>>10, got>>10)
	}
}

// TestZipRatioBound: a zip that unpacks to more than MaxZipRatio times its
// size (and more than MinZipUnpackedLimit) is refused before it is hashed:
// 80 MiB of zeros pack into ~80 KiB.
func TestZipRatioBound(t *testing.T) {
	p := filepath.Join(t.TempDir(), "zeros.zip")
	f, _ := os.Create(p)
	zw := zip.NewWriter(f)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "terraform-provider-x_v1.0.0", Method: zip.Deflate})
	zero := bytes.NewReader(make([]byte, 1<<20))
	for range 80 {
		zero.Seek(0, io.SeekStart)
		io.Copy(w, zero)
	}
	zw.Close()
	f.Close()
	fi, _ := os.Stat(p)
	start := time.Now()
	_, err := zipH1(p)
	if err == nil || !strings.Contains(err.Error(), "over the limit of 100×") {
		t.Errorf("a %d KiB zip of 80 MiB unpacked: %v", fi.Size()>>10, err)
	}
	took := time.Since(start)
	t.Logf("a %d KiB zip declaring 80 MiB refused in %v", fi.Size()>>10, took)
	if took > 100*time.Millisecond {
		t.Errorf("refusing it took %v: it was unpacked", took)
	}
}
