package bundle

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/ProtonMail/go-crypto/openpgp"

	"github.com/airgap/airgap/bundle/progress"
)

// Opened is a bundle file, or a split set read as one stream.
type Opened struct {
	io.ReadCloser
	Parts int   // parts of a split set; 0 for one file
	Size  int64 // bytes the stream will give (for progress)
}

// Open opens a bundle file, or a split set given any of its parts (checking
// every part against the signed index first). A file that is not a bundle
// at all is refused with ErrNotBundle and what it looks like. It never
// changes the files. It reads at most 512 bytes before returning.
func Open(path string, kr openpgp.EntityList) (*Opened, error) {
	if IsSplitSet(path) {
		rc, ix, err := OpenSet(path, kr)
		if err != nil {
			return nil, err
		}
		return &Opened{ReadCloser: rc, Parts: len(ix.Parts), Size: ix.Size}, nil
	}
	f, err := os.Open(path)
	if err != nil {
		if prefix, ok := SetPrefix(path); ok {
			return nil, fmt.Errorf("%w: the index %s.000 is missing\nhint: copy every part, including .000", ErrParts, filepath.Base(prefix))
		}
		return nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	if fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("%w: %s is a directory\nhint: give the bundle file (or any part of a split set)", ErrNotBundle, path)
	}
	var rc io.ReadCloser = f
	if fi.Mode().IsRegular() {
		rc = newReadAhead(f) // read ahead, and past the page cache
	}
	head := make([]byte, 512)
	n, _ := io.ReadFull(rc, head)
	if what := sniff(head[:n]); what != "" {
		rc.Close()
		return nil, fmt.Errorf("%w: %s looks like %s\nhint: give the file written by 'airgap export' (NAME.bundle, or a part NAME.bundle.001 of a split set)", ErrNotBundle, path, what)
	}
	// The head is read again from memory, not by seeking: the bundle may
	// be a pipe.
	return &Opened{ReadCloser: headFile{io.MultiReader(bytes.NewReader(head[:n]), rc), rc}, Size: fi.Size()}, nil
}

type headFile struct {
	io.Reader
	c io.Closer
}

func (h headFile) Close() error { return h.c.Close() }

// sniff returns what the start of a file looks like when it is not a bundle
// ("a zip archive", "an empty file", "text"…), or "" when it may be one: a
// zstd frame or a tar header. A cut-off bundle still sniffs as a bundle, so
// truncation keeps its own message.
func sniff(head []byte) string {
	switch {
	case len(head) == 0:
		return "an empty file"
	case bytes.HasPrefix(head, zstdMagic):
		return ""
	case len(head) >= 262 && string(head[257:262]) == "ustar":
		return ""
	}
	for _, m := range magics {
		if bytes.HasPrefix(head, []byte(m.magic)) {
			return m.what
		}
	}
	if bytes.Count(head, []byte{0}) == len(head) {
		return "zeros (a file that was never written, or a sparse copy)"
	}
	if utf8.Valid(head) && !bytes.ContainsRune(head, 0) {
		return "text"
	}
	return "data of an unknown kind"
}

var magics = []struct{ magic, what string }{
	{"PK\x03\x04", "a zip archive"},
	{"PK\x05\x06", "an empty zip archive"},
	{"\x1f\x8b", "a gzip file (e.g. a .tar.gz)"},
	{"%PDF", "a PDF document"},
	{"BZh", "a bzip2 file"},
	{"\xfd7zXZ\x00", "an xz file"},
	{"7z\xbc\xaf\x27\x1c", "a 7-Zip archive"},
	{"-----BEGIN PGP", "an OpenPGP key or signature (ASCII armor)"},
	{"-----BEGIN", "a PEM file (certificate or key)"},
	{"\x7fELF", "a program (ELF executable)"},
	{"MZ", "a Windows program"},
	{"{", "JSON"},
	{"<", "HTML or XML"},
}

// CreateAtomic creates out through a temporary file in the same directory:
// fill, fsync, rename, fsync of the directory. If anything fails, nothing is
// left behind.
func CreateAtomic(out string, fill func(f *os.File) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".partial-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := fill(f); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(f.Name(), out); err != nil {
		return err
	}
	if d, err := os.Open(filepath.Dir(out)); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}

// WriteText lists the parts of a split of path for people.
func (ix *PartsIndex) WriteText(w io.Writer, path string) {
	fmt.Fprintf(w, "split %s (%s) into %d parts plus the signed index %s.000:\n", path, progress.Size(ix.Size), len(ix.Parts), filepath.Base(path))
	for _, p := range ix.Parts {
		fmt.Fprintf(w, "  %s  %s  %s\n", p.Name, progress.Size(p.Size), p.Digest.Short())
	}
}

// SourceDate is SOURCE_DATE_EPOCH as a time (for reproducible bundles and
// indexes), zero when unset, and an error when it is not a number of seconds.
func SourceDate() (time.Time, error) {
	s := os.Getenv("SOURCE_DATE_EPOCH")
	if s == "" {
		return time.Time{}, nil
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < 0 {
		return time.Time{}, fmt.Errorf("SOURCE_DATE_EPOCH=%q is not a number of seconds", s)
	}
	return time.Unix(n, 0).UTC(), nil
}
