package dist

import (
	"archive/zip"
	"bufio"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/klauspost/compress/flate"

	"github.com/airgap/airgap/verify"
	"golang.org/x/mod/sumdb/dirhash"
)

// H1 computes the h1: hash Terraform records for a provider zip file:
// dirhash.Hash1 over the zip's files, exactly as dirhash.HashZip computes
// it, but inflated by klauspost/compress's flate (about 1.25x the standard
// library's speed on provider binaries, measured: 505 against 400 MB/s of
// output) through 256 KiB reads. Unpacking is what h1 costs: a provider zip
// unpacks to 4-5 times its size. The zip must be the publisher's bytes.
func H1(zipPath string) (string, error) { return H1Tap(zipPath, nil) }

// H1Tap is H1 that also shows the inflated bytes to tap, in the same pass:
// tap (when not nil) is called with each file's name as the hash opens it,
// in sorted order, one file after another, and the writer it returns (nil
// for none) sees every byte of that file, in order; when the file is
// closed, so is the writer, if it is an io.Closer (a tap frees what it
// held for the file there). A name listed twice is opened twice. The
// writer must not fail: its error would fail the hash.
// It is the one walk over a zip's files that computes h1 (goinfo.ScanZip
// reads the plugin's Go build information through it).
func H1Tap(zipPath string, tap func(name string) io.Writer) (string, error) {
	h, err := hashZip(zipPath, tap)
	if err != nil {
		return "", fmt.Errorf("computing h1 hash of %s: %w", zipPath, err)
	}
	return h, nil
}

// hashZip is dirhash.HashZip(zipPath, dirhash.Hash1) with a faster
// inflater: the same files in the same order (a name listed twice hashes
// the last entry of that name twice, as HashZip does), each checked against
// its CRC-32 and sizes by archive/zip.
func hashZip(zipPath string, tap func(name string) io.Writer) (string, error) {
	z, err := zip.OpenReader(zipPath)
	if err != nil {
		return "", err
	}
	defer z.Close()
	z.RegisterDecompressor(zip.Deflate, inflate)
	files := make([]string, 0, len(z.File))
	byName := make(map[string]*zip.File, len(z.File))
	for _, f := range z.File {
		files = append(files, f.Name)
		byName[f.Name] = f
	}
	return dirhash.Hash1(files, func(name string) (io.ReadCloser, error) {
		rc, err := byName[name].Open()
		if err != nil || tap == nil {
			return rc, err
		}
		if w := tap(name); w != nil {
			return teeCloser{io.TeeReader(rc, w), rc, w}, nil
		}
		return rc, nil
	})
}

// teeCloser shows what r reads to w, and closes w (if it is an io.Closer)
// after the file.
type teeCloser struct {
	io.Reader
	file io.Closer
	w    io.Writer
}

func (t teeCloser) Close() error {
	err := t.file.Close()
	if c, ok := t.w.(io.Closer); ok {
		c.Close()
	}
	return err
}

// inflaters are reused: each holds a 32 KiB window, tables and a 256 KiB
// read buffer.
var inflaters sync.Pool

type inflater struct {
	br *bufio.Reader
	fr io.ReadCloser
}

func (i *inflater) Read(p []byte) (int, error) { return i.fr.Read(p) }

func (i *inflater) Close() error {
	err := i.fr.Close()
	i.br.Reset(nil)
	inflaters.Put(i)
	return err
}

func inflate(r io.Reader) io.ReadCloser {
	if i, ok := inflaters.Get().(*inflater); ok {
		i.br.Reset(r)
		if err := i.fr.(flate.Resetter).Reset(i.br, nil); err == nil {
			return i
		}
	}
	br := bufio.NewReaderSize(r, 256<<10)
	return &inflater{br: br, fr: flate.NewReader(br)}
}

// ZH is the zh: hash of a package with sha256 digest d.
func ZH(d verify.Digest) string { return "zh:" + d.Hex() }

// ShasumsLine is one line of a SHA256SUMS file.
type ShasumsLine struct {
	Hex      string
	Filename string
}

// MaxShasumsSize bounds a SHA256SUMS file we read.
const MaxShasumsSize = 4 << 20

// ParseShasums parses a SHA256SUMS file ("<64 hex>  <filename>" lines). It
// returns the lines and whether every line was well-formed (Terraform records
// zh: hashes from SHA256SUMS only when all are).
func ParseShasums(r io.Reader) (lines []ShasumsLine, allValid bool, err error) {
	sc := bufio.NewScanner(io.LimitReader(r, MaxShasumsSize))
	sc.Buffer(make([]byte, 0, 4096), 64<<10)
	allValid = true
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		h, name, ok := strings.Cut(line, "  ")
		if !ok || !verify.IsHex64(strings.ToLower(h)) || name == "" || strings.ContainsAny(name, " \t") {
			allValid = false
			continue
		}
		lines = append(lines, ShasumsLine{Hex: strings.ToLower(h), Filename: name})
	}
	return lines, allValid, sc.Err()
}

// ShasumFor returns the hex sha256 recorded for filename.
func ShasumFor(lines []ShasumsLine, filename string) (string, bool) {
	for _, l := range lines {
		if l.Filename == filename {
			return l.Hex, true
		}
	}
	return "", false
}
