package bundle

// ATTACK TESTS (atk-bundle review, issue 11), internal part: zip bounds of
// the h1 check. A FAILING test marks an open finding.

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
	"testing"
	"time"
)

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

// TestAttackZipEntryCountWraps (FAILING, finding D): the end record's 16-bit
// entry count is all zipEntryCount reads, and archive/zip compares only 16
// bits of it with the directory it reads (reader.go: "only compare 16 bits
// here"). A zip whose end record says 1 entry holds 65536·k+1: the pre-check
// passes and archive/zip loads the whole directory into memory before
// zipH1's own count refuses it — the ≈ 50 MiB bound in the doc comment does
// not hold (memory grows with the zip: ~N/46 entries of ~300 bytes each).
// The zip is hashed as it streams, before any SHA256SUMS signature is
// checked, so any package blob of a site-signed bundle reaches this.
func TestAttackZipEntryCountWraps(t *testing.T) {
	const n = 8*65536 + 1
	p := lyingZip(t, n)
	fi, _ := os.Stat(p)
	if err := zipEntryCount(p); err == nil {
		t.Errorf("a zip of %d entries whose end record says %d passes the end-record pre-check", n, n%65536)
	}
	zr, err := zip.OpenReader(p)
	if err != nil {
		t.Fatalf("archive/zip refuses it: %v", err)
	}
	t.Logf("archive/zip read %d entries from a %d-byte zip whose end record says %d", len(zr.File), fi.Size(), n%65536)
	zr.Close()
	zr = nil
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err = zipH1(p)
	runtime.ReadMemStats(&after)
	t.Logf("zipH1: %v; allocated %d MiB for a %d MiB zip", err, (after.TotalAlloc-before.TotalAlloc)>>20, fi.Size()>>20)
	if got := after.TotalAlloc - before.TotalAlloc; got > 50<<20 {
		t.Errorf("checking one package allocated %d MiB, over the ≈ 50 MiB the doc comment states", got>>20)
	}
}

// TestAttackH1Amplification (passes, measurement; finding E, low): the h1
// check unpacks up to MaxZipUnpacked (8 GiB) per zip, and deflate packs
// zeros ~1000:1, so a few MiB of package cost seconds to minutes of CPU
// each. Measured here with 1 GiB unpacked.
func TestAttackH1Amplification(t *testing.T) {
	if testing.Short() {
		t.Skip("unpacks 1 GiB")
	}
	p := filepath.Join(t.TempDir(), "zeros.zip")
	f, _ := os.Create(p)
	zw := zip.NewWriter(f)
	w, _ := zw.CreateHeader(&zip.FileHeader{Name: "terraform-provider-x_v1.0.0", Method: zip.Deflate})
	zero := bytes.NewReader(make([]byte, 1<<20))
	for range 1024 {
		zero.Seek(0, io.SeekStart)
		io.Copy(w, zero)
	}
	zw.Close()
	f.Close()
	fi, _ := os.Stat(p)
	start := time.Now()
	if _, err := zipH1(p); err != nil {
		t.Fatal(err)
	}
	t.Logf("h1 of a %d KiB zip (1 GiB unpacked) took %v; MaxZipUnpacked allows 8× that per package", fi.Size()>>10, time.Since(start))
}
