// Package docs is the form a provider's documentation takes in a bundle
// and a store: the markdown pages and images of the docs/ (or legacy
// website/docs/) folder of the provider's repository, as one deterministic
// tar (Pack), what a reader of such a tar may rely on (Check), the index
// serve and 'airgap docs' read pages through (Index), and the registry's
// categories of pages (guides, resources, data sources, functions,
// ephemeral resources).
//
// # The unit: one tar per docs tree
//
// A version's docs are one blob, not a blob per page: the manifest and the
// catalog then hold one record per version whatever the page count (AWS
// has about 2,000 pages), the bundle's check and the store's gc treat it
// like a module archive, and versions whose docs are identical share one
// digest. What this costs — a version that changes one page carries the
// whole tree again — is measured in docs/documentation.md; the bundle's
// zstd frames shrink markdown about fivefold.
//
// # The tar
//
// USTAR, regular files only (no directories, links or devices), names in
// strictly increasing byte order relative to the docs folder, mode 0644,
// uid and gid 0, no owner names, mtime the epoch: the same tree gives the
// same bytes. Names are held to Allowed: markdown pages (.md, .markdown,
// .html.md, .html.markdown) and images (.png, .jpg, .jpeg, .gif, .webp,
// .svg), printable, at most MaxDepth components, each the same file on
// every file system (dist/portable), at most 255 bytes. Check refuses
// anything else, so a hostile bundle's docs tar holds nothing a page or
// 'airgap docs' would not expect.
//
// It does not fetch (dist/getter does), render (server does) or know
// about modules' docs (dist.ModuleDocs).
package docs

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/portable"
)

// MaxDepth bounds the components of a name in a docs tree (docs/ folders
// nest two or three deep).
const MaxDepth = 8

// maxName bounds a name's bytes (what USTAR's name and prefix hold).
const maxName = 255

// ErrTooLarge is returned when a tree holds more than the bound given.
var ErrTooLarge = errors.New("the docs are over the bound")

// ErrInvalid is returned by Check for a tar that is not a docs tar.
var ErrInvalid = errors.New("not a valid docs archive")

var pageExts = []string{".html.markdown", ".html.md", ".markdown", ".md"}
var imageExts = []string{".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg"}

// IsPage reports whether name is a markdown page.
func IsPage(name string) bool { return pageExt(name) != "" }

func pageExt(name string) string {
	for _, e := range pageExts {
		if strings.HasSuffix(name, e) && len(name) > len(e) {
			return e
		}
	}
	return ""
}

// IsImage reports whether name is an image a page may show.
func IsImage(name string) bool {
	for _, e := range imageExts {
		if strings.HasSuffix(name, e) && len(name) > len(e) {
			return true
		}
	}
	return false
}

// Exts lists the extensions Allowed keeps (for a sparse checkout).
func Exts() []string { return append(append([]string(nil), pageExts...), imageExts...) }

// Allowed reports why name (slash-separated, relative to the docs folder)
// may not be in a docs tree, or nil.
func Allowed(name string) error {
	switch {
	case !IsPage(name) && !IsImage(name):
		return errors.New("neither a markdown page nor an image")
	case len(name) > maxName:
		return fmt.Errorf("a name longer than %d bytes", maxName)
	case dist.Printable(name) != name || strings.ContainsAny(name, "\\:*?\"<>|"):
		return errors.New("a name with characters no file system takes")
	case strings.Count(name, "/") >= MaxDepth:
		return fmt.Errorf("more than %d folders deep", MaxDepth)
	case !fs.ValidPath(name) || strings.HasPrefix(path.Base(name), "."):
		return errors.New("not a plain relative name")
	}
	return nil
}

// Stats is what a docs tree holds.
type Stats struct {
	Pages, Files int
	Bytes        int64
	// Skipped counts files of the folder left out: not a page or image,
	// a link, or a name Allowed refuses (Skips names a few).
	Skipped int
	Skips   []string
}

func (s *Stats) skip(name, why string) {
	s.Skipped++
	if len(s.Skips) < 5 {
		s.Skips = append(s.Skips, fmt.Sprintf("%q (%s)", dist.Printable(name), why))
	}
}

var epoch = time.Unix(0, 0)

// Pack writes the docs tar of the folder root (opened as an os.Root by the
// caller: nothing outside it is read, and links are left out, never
// followed) to w: every regular file Allowed keeps, sorted by name. It
// stops with ErrTooLarge past maxBytes of files or dist.MaxDocsFiles
// files; names two file systems would fold into one are an error.
func Pack(root *os.Root, w io.Writer, maxBytes int64) (*Stats, error) {
	st := &Stats{}
	type file struct {
		name string
		size int64
	}
	var files []file
	names := portable.NewSet()
	walked := 0
	err := fs.WalkDir(root.FS(), ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if walked++; walked > 4*dist.MaxDocsFiles {
			return fmt.Errorf("%w: more than %d entries in the folder", ErrTooLarge, 4*dist.MaxDocsFiles)
		}
		if name == "." {
			return nil
		}
		if d.IsDir() {
			if strings.Count(name, "/") >= MaxDepth {
				st.skip(name, "too deep")
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			st.skip(name, "not a regular file")
			return nil
		}
		if err := Allowed(name); err != nil {
			st.skip(name, err.Error())
			return nil
		}
		if err := names.Add(name); err != nil {
			return fmt.Errorf("the docs hold %v", err)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if st.Bytes += info.Size(); st.Bytes > maxBytes {
			return fmt.Errorf("%w: more than %s of pages and images (the bound is %s)", ErrTooLarge, dist.HumanSize(maxBytes), dist.HumanSize(maxBytes))
		}
		if len(files) >= dist.MaxDocsFiles {
			return fmt.Errorf("%w: more than %d pages and images", ErrTooLarge, dist.MaxDocsFiles)
		}
		files = append(files, file{name, info.Size()})
		return nil
	})
	if err != nil {
		return nil, err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].name < files[j].name })
	tw := tar.NewWriter(w)
	for _, f := range files {
		if err := tw.WriteHeader(header(f.name, f.size)); err != nil {
			return nil, err
		}
		r, err := root.Open(f.name)
		if err != nil {
			return nil, err
		}
		_, err = io.CopyN(tw, r, f.size)
		r.Close()
		if err != nil {
			return nil, fmt.Errorf("%q: %w", dist.Printable(f.name), err)
		}
		st.Files++
		if IsPage(f.name) {
			st.Pages++
		}
	}
	return st, tw.Close()
}

func header(name string, size int64) *tar.Header {
	return &tar.Header{Typeflag: tar.TypeReg, Name: name, Size: size, Mode: 0o644, ModTime: epoch, Format: tar.FormatUSTAR}
}

// Check reads a docs tar to its end and returns what it holds, refusing
// anything Pack would not have written: another entry kind, a name Allowed
// refuses or out of order, names that fold into one, headers other than
// Pack's, more than dist.MaxDocsFiles files or maxBytes bytes. Memory: the
// names (portable.Set), at most dist.MaxDocsFiles × 255 bytes.
func Check(r io.Reader, maxBytes int64) (*Stats, error) {
	return walk(r, maxBytes, func(_ *tar.Header, tr *tar.Reader) error {
		_, err := io.Copy(io.Discard, tr)
		return err
	})
}

// walk reads the entries of a docs tar, holds each to Pack's form (see
// Check) and the bounds, counts them, and calls each with it.
func walk(r io.Reader, maxBytes int64, each func(*tar.Header, *tar.Reader) error) (*Stats, error) {
	st := &Stats{}
	tr := tar.NewReader(r)
	names := portable.NewSet()
	prev := ""
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return st, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if err := checkHeader(h, prev); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		if err := names.Add(h.Name); err != nil {
			return nil, fmt.Errorf("%w: it holds %v", ErrInvalid, err)
		}
		prev = h.Name
		if st.Files++; st.Files > dist.MaxDocsFiles {
			return nil, fmt.Errorf("%w: more than %d files", ErrInvalid, dist.MaxDocsFiles)
		}
		if st.Bytes += h.Size; st.Bytes > maxBytes {
			return nil, fmt.Errorf("%w: more than %d bytes", ErrInvalid, maxBytes)
		}
		if IsPage(h.Name) {
			st.Pages++
		}
		if err := each(h, tr); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
	}
}

// checkHeader holds one header to Pack's form.
func checkHeader(h *tar.Header, prev string) error {
	want := header(h.Name, h.Size)
	switch {
	case h.Typeflag != tar.TypeReg:
		return fmt.Errorf("%q is not a regular file", dist.Printable(h.Name))
	case h.Mode != want.Mode || !h.ModTime.Equal(epoch) || h.Uid != 0 || h.Gid != 0 || h.Uname != "" || h.Gname != "" || len(h.PAXRecords) > 0 || h.Size < 0:
		return fmt.Errorf("%q has a header other than airgap writes", dist.Printable(h.Name))
	case h.Name <= prev:
		return fmt.Errorf("%q is out of order or listed twice", dist.Printable(h.Name))
	}
	if err := Allowed(h.Name); err != nil {
		return fmt.Errorf("%q: %v", dist.Printable(h.Name), err)
	}
	return nil
}
