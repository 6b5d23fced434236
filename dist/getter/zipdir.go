package getter

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
)

// checkZipDirectory bounds what archive/zip will hold in memory before it
// is asked to parse a zip: archive/zip reads the whole central directory
// into a []*zip.File (and preallocates it from the record count) before a
// caller can look at a single entry, so an archive of a few hundred MB of
// minimal headers costs GBs. This reads, with a fixed 64 KiB buffer:
//
//   - the end-of-central-directory record (and the zip64 one it points to),
//     found exactly as archive/zip (Go 1.26, reader.go readDirectoryEnd)
//     finds it: the last signature in the final 65 KiB whose comment fits;
//   - the record count, which must be at most maxEntries;
//   - then the central directory headers from where archive/zip starts
//     reading them, counted the way its loop counts them (consecutive
//     headers with the right signature), which must be at most maxEntries
//     and hold at most MaxZipDirectory bytes.
//
// A zip whose directory does not end where the end record says (data
// prepended to the archive, which archive/zip would compensate for with a
// base offset) is refused: module archives are never self-extracting. So
// archive/zip then parses at most maxEntries headers in MaxZipDirectory
// bytes. Written here because archive/zip offers no hook before it parses
// the directory.
func checkZipDirectory(r io.ReaderAt, size int64, maxEntries int) error {
	const (
		endLen      = 22
		end64LocLen = 20
		end64Len    = 56
		headerLen   = 46
	)
	bad := func(what string) error {
		return fmt.Errorf("%w: the zip's central directory is inconsistent (%s)", ErrUnsafeArchive, what)
	}
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
		return fmt.Errorf("%w: more than %d entries", ErrArchiveLimit, maxEntries)
	}
	if dirSize > MaxZipDirectory {
		return fmt.Errorf("%w: a central directory of more than %d bytes", ErrArchiveLimit, MaxZipDirectory)
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
			return fmt.Errorf("%w: more than %d entries", ErrArchiveLimit, maxEntries)
		}
		v := int64(binary.LittleEndian.Uint16(h[28:])) + int64(binary.LittleEndian.Uint16(h[30:])) + int64(binary.LittleEndian.Uint16(h[32:]))
		if total += headerLen + v; total > MaxZipDirectory {
			return fmt.Errorf("%w: a central directory of more than %d bytes", ErrArchiveLimit, MaxZipDirectory)
		}
		if _, err := br.Discard(int(v)); err != nil {
			return nil
		}
	}
}
