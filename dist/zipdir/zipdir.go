// Package zipdir bounds what archive/zip will hold in memory before it is
// asked to parse a zip. archive/zip reads the whole central directory into
// a []*zip.File (and preallocates it from the end record's count) before a
// caller can look at a single entry, and it compares only 16 bits of that
// count with what it reads, so a zip whose end record says 1 entry may hold
// 65536·k+1: an archive of a few hundred MB of minimal headers costs GBs.
// Both the module getter (dist/getter) and the bundle consistency check
// (bundle) call Check first. It imports nothing of airgap's. Written here
// because archive/zip offers no hook before it parses the directory.
//
// It does not unpack anything: it reads the end record and walks the
// directory's headers, then the caller hands the zip to archive/zip.
package zipdir

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// Error is what Check refuses a zip for. Limit tells a zip over one of the
// limits from one whose directory is inconsistent.
type Error struct {
	Limit bool
	msg   string
}

func (e *Error) Error() string { return e.msg }

// Check reads, with a fixed 64 KiB buffer:
//
//   - the end-of-central-directory record (and the zip64 one it points to),
//     found exactly as archive/zip (Go 1.26, its readDirectoryEnd)
//     finds it: the last signature in the final 65 KiB whose comment fits;
//   - the record count, which must be at most maxEntries, and the directory
//     size, at most maxDirBytes;
//   - then the central directory headers from where archive/zip starts
//     reading them, counted the way its loop counts them (consecutive
//     headers with the right signature, whatever the end record's count
//     says), which must be at most maxEntries and hold at most maxDirBytes
//     bytes.
//
// A zip whose directory does not end where the end record says (data
// prepended to the archive, which archive/zip would compensate for with a
// base offset) is refused: neither module archives nor provider packages are
// self-extracting. So archive/zip then parses at most maxEntries headers in
// maxDirBytes bytes: it holds about maxDirBytes + maxEntries × 300 bytes.
// Refusals are *Error; a failure to read is returned as it is.
func Check(r io.ReaderAt, size int64, maxEntries int, maxDirBytes int64) error {
	const (
		endLen      = 22
		end64LocLen = 20
		end64Len    = 56
		headerLen   = 46
	)
	bad := func(what string) error {
		return &Error{msg: fmt.Sprintf("the zip's central directory is inconsistent (%s)", what)}
	}
	tooMany := &Error{Limit: true, msg: fmt.Sprintf("more than %d entries", maxEntries)}
	tooBig := &Error{Limit: true, msg: fmt.Sprintf("a central directory of more than %d bytes", maxDirBytes)}
	n := min(size, 65*1024)
	buf := make([]byte, n)
	if _, err := r.ReadAt(buf, size-n); err != nil && err != io.EOF {
		return fmt.Errorf("reading the archive: %w", err)
	}
	p := -1
	for i := len(buf) - endLen; i >= 0; i-- {
		if binary.LittleEndian.Uint32(buf[i:]) == 0x06054b50 {
			if int(binary.LittleEndian.Uint16(buf[i+endLen-2:]))+endLen+i <= len(buf) {
				p = i
			}
			break
		}
	}
	if p < 0 {
		return fmt.Errorf("reading the archive: not a zip file (no end of central directory)")
	}
	endOff := size - n + int64(p)
	e := buf[p:]
	records := uint64(binary.LittleEndian.Uint16(e[10:]))
	dirSize := uint64(binary.LittleEndian.Uint32(e[12:]))
	dirOff := uint64(binary.LittleEndian.Uint32(e[16:]))
	if records == 0xffff || dirSize == 0xffff || dirOff == 0xffffffff {
		if loc := endOff - end64LocLen; loc >= 0 {
			var l [end64LocLen]byte
			if _, err := r.ReadAt(l[:], loc); err != nil {
				return fmt.Errorf("reading the archive: %w", err)
			}
			if binary.LittleEndian.Uint32(l[0:]) == 0x07064b50 && binary.LittleEndian.Uint32(l[4:]) == 0 &&
				binary.LittleEndian.Uint32(l[16:]) == 1 {
				off := binary.LittleEndian.Uint64(l[8:])
				if off > uint64(size) {
					return bad("zip64 end record outside the file")
				}
				var d [end64Len]byte
				if _, err := r.ReadAt(d[:], int64(off)); err != nil {
					return fmt.Errorf("reading the archive: %w", err)
				}
				if binary.LittleEndian.Uint32(d[0:]) != 0x06064b50 {
					return bad("zip64 end record")
				}
				endOff = int64(off)
				records = binary.LittleEndian.Uint64(d[32:])
				dirSize = binary.LittleEndian.Uint64(d[40:])
				dirOff = binary.LittleEndian.Uint64(d[48:])
			}
		}
	}
	if records > uint64(maxEntries) {
		return tooMany
	}
	if dirSize > uint64(maxDirBytes) {
		return tooBig
	}
	if dirOff > uint64(endOff) || uint64(endOff)-dirOff != dirSize {
		return bad("it does not end where the end record says; data before the archive?")
	}
	br := bufio.NewReaderSize(io.NewSectionReader(r, int64(dirOff), size-int64(dirOff)), 64*1024)
	var h [headerLen]byte
	var count int
	var total int64
	for {
		if _, err := io.ReadFull(br, h[:]); err != nil || binary.LittleEndian.Uint32(h[:]) != 0x02014b50 {
			return nil
		}
		if count++; count > maxEntries {
			return tooMany
		}
		v := int64(binary.LittleEndian.Uint16(h[28:])) + int64(binary.LittleEndian.Uint16(h[30:])) + int64(binary.LittleEndian.Uint16(h[32:]))
		if total += headerLen + v; total > maxDirBytes {
			return tooBig
		}
		if _, err := br.Discard(int(v)); err != nil {
			return nil
		}
	}
}
