package docs

import (
	"archive/tar"
	"bufio"
	"errors"
	"fmt"
	"io"
	"path"
	"sort"
	"strings"
)

// Categories are the registry's kinds of provider pages, in the order the
// registry lists them. "overview" is the provider's index page.
var Categories = []Category{
	{"overview", "Overview"},
	{"guides", "Guides"},
	{"resources", "Resources"},
	{"data-sources", "Data sources"},
	{"ephemeral-resources", "Ephemeral resources"},
	{"functions", "Functions"},
	{"list-resources", "List resources"},
	{"actions", "Actions"},
}

// Category is one kind of page: its name in URLs and its title.
type Category struct{ Name, Title string }

// legacyDirs maps website/docs folders to categories.
var legacyDirs = map[string]string{"r": "resources", "d": "data-sources"}

// Entry is one file of a docs tar: its name in the tar, where its bytes
// are, and for a page its category and name ("resources", "s3_bucket").
type Entry struct {
	Path           string
	Offset, Size   int64
	Category, Name string
}

// Index is the table of contents of one docs tar.
type Index struct {
	Entries []Entry // in tar order (by Path)
	byPath  map[string]int
	byPage  map[string]int // category + "/" + name
}

// ReadIndex reads the headers of the docs tar r (size bytes), skipping
// file contents, and checks them as Check does. Memory: one Entry per
// file and its name in a portable.Set, at most dist.MaxDocsFiles.
func ReadIndex(r io.ReaderAt, size, maxBytes int64) (*Index, error) {
	pr := &posReader{r: io.NewSectionReader(r, 0, size)}
	ix := &Index{byPath: map[string]int{}, byPage: map[string]int{}}
	_, err := walk(pr, maxBytes, func(h *tar.Header, _ *tar.Reader) error {
		e := Entry{Path: h.Name, Offset: pr.pos, Size: h.Size}
		if IsPage(h.Name) {
			e.Category, e.Name = PageOf(h.Name)
		}
		ix.byPath[e.Path] = len(ix.Entries)
		if e.Category != "" {
			if _, dup := ix.byPage[e.Category+"/"+e.Name]; !dup {
				ix.byPage[e.Category+"/"+e.Name] = len(ix.Entries)
			}
		}
		ix.Entries = append(ix.Entries, e)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return ix, nil
}

// posReader is a ReadSeeker that knows its offset (where a file's bytes
// start after tar.Reader.Next, which seeks past contents).
type posReader struct {
	r   *io.SectionReader
	pos int64
}

func (p *posReader) Read(b []byte) (int, error) {
	n, err := p.r.Read(b)
	p.pos += int64(n)
	return n, err
}

func (p *posReader) Seek(off int64, whence int) (int64, error) {
	n, err := p.r.Seek(off, whence)
	p.pos = n
	return n, err
}

// PageOf is the category and name of the page at name (a path in the
// docs folder): "resources/s3_bucket.md" and the legacy
// "r/s3_bucket.html.markdown" are both ("resources", "s3_bucket"); the
// index page is ("overview", "index"); a page in a folder of no known
// category is in "guides" under its path ("misc/notes" → "misc-notes").
func PageOf(name string) (category, page string) {
	base := strings.TrimSuffix(name, pageExt(name))
	dir, file := path.Split(base)
	dir = strings.TrimSuffix(dir, "/")
	if dir == "" {
		if file == "index" {
			return "overview", "index"
		}
		return "guides", file
	}
	first, rest, _ := strings.Cut(dir, "/")
	if c, ok := legacyDirs[first]; ok {
		first = c
	}
	for _, c := range Categories {
		if c.Name == first && c.Name != "overview" {
			if rest != "" {
				file = strings.ReplaceAll(rest, "/", "-") + "-" + file
			}
			return first, file
		}
	}
	return "guides", strings.ReplaceAll(dir, "/", "-") + "-" + file
}

// Page finds a page by category and name.
func (ix *Index) Page(category, name string) (Entry, bool) {
	i, ok := ix.byPage[category+"/"+name]
	if !ok {
		return Entry{}, false
	}
	return ix.Entries[i], true
}

// File finds a file by its path in the docs folder.
func (ix *Index) File(p string) (Entry, bool) {
	i, ok := ix.byPath[p]
	if !ok {
		return Entry{}, false
	}
	return ix.Entries[i], true
}

// Pages lists the pages of a category, sorted by name.
func (ix *Index) Pages(category string) []Entry {
	var out []Entry
	for _, e := range ix.Entries {
		if e.Category == category && ix.byPage[category+"/"+e.Name] == ix.byPath[e.Path] {
			out = append(out, e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Find looks a page up by what a person types: "resources/s3_bucket",
// "s3_bucket" or "aws_s3_bucket" (with the provider's type as prefix),
// trying the categories in order.
func (ix *Index) Find(typ, q string) (Entry, bool) {
	if c, n, ok := strings.Cut(q, "/"); ok {
		return ix.Page(c, n)
	}
	for _, n := range []string{q, strings.TrimPrefix(q, typ+"_")} {
		for _, c := range Categories {
			if e, ok := ix.Page(c.Name, n); ok {
				return e, true
			}
		}
	}
	return Entry{}, false
}

// FrontMatter is what a page's YAML front matter says that the pages use.
type FrontMatter struct {
	Title, Subcategory, Description string
}

// maxFrontMatter bounds the front matter read (bytes).
const maxFrontMatter = 16 << 10

// SplitFrontMatter splits a page into its front matter and body. The
// front matter is the block between a first line "---" and the next
// "---" (at most maxFrontMatter bytes); of it only the top-level scalar
// keys page_title, subcategory and description are read (a quoted or
// plain value on the key's line; "|-" blocks take the indented lines
// after). It is not a YAML parser: the registry's pages use these keys in
// these forms, and a page that does otherwise keeps its body and gets no
// title, rather than bringing a YAML parser into serve for three strings.
func SplitFrontMatter(page []byte) (FrontMatter, []byte) {
	var fm FrontMatter
	bodyStart := indexAfterFrontMatter(page)
	if bodyStart < 0 {
		return fm, page
	}
	block := strings.ReplaceAll(string(page[:bodyStart]), "\r\n", "\n")
	block = strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(block, "\n"), "---"), "---\n")
	sc := bufio.NewScanner(strings.NewReader(block))
	var key string
	var multi []string
	flush := func() {
		if key != "" {
			set(&fm, key, strings.Join(multi, " "))
		}
		key, multi = "", nil
	}
	for sc.Scan() {
		line := sc.Text()
		if key != "" && (strings.HasPrefix(line, " ") || strings.HasPrefix(line, "\t") || line == "") {
			multi = append(multi, strings.TrimSpace(line))
			continue
		}
		flush()
		k, v, ok := strings.Cut(line, ":")
		if !ok || strings.HasPrefix(k, " ") {
			continue
		}
		v = strings.TrimSpace(v)
		if v == "|" || v == "|-" || v == ">" || v == ">-" {
			key = k
			continue
		}
		set(&fm, k, unquote(v))
	}
	flush()
	return fm, page[bodyStart:]
}

// indexAfterFrontMatter is the offset of the body in page (after the
// closing "---" line of front matter that starts on the first line), or
// -1 when the page has none within maxFrontMatter bytes.
func indexAfterFrontMatter(page []byte) int {
	s := string(page[:min(len(page), maxFrontMatter)])
	first, rest, ok := strings.Cut(s, "\n")
	if !ok || strings.TrimRight(first, "\r") != "---" {
		return -1
	}
	i := len(first) + 1
	for rest != "" {
		line, next, nl := strings.Cut(rest, "\n")
		if strings.TrimRight(line, "\r") == "---" {
			if !nl {
				return len(s)
			}
			return i + len(line) + 1
		}
		i += len(line) + 1
		rest = next
	}
	return -1
}

func set(fm *FrontMatter, k, v string) {
	switch strings.TrimSpace(k) {
	case "page_title":
		fm.Title = v
	case "subcategory":
		fm.Subcategory = v
	case "description":
		fm.Description = v
	}
}

func unquote(v string) string {
	if len(v) >= 2 && (v[0] == '"' && v[len(v)-1] == '"' || v[0] == '\'' && v[len(v)-1] == '\'') {
		return v[1 : len(v)-1]
	}
	return v
}

// ReadFile returns the bytes of e from the docs tar r, at most max of
// them (errTooBig beyond).
func ReadFile(r io.ReaderAt, e Entry, max int64) ([]byte, error) {
	if e.Size > max {
		return nil, fmt.Errorf("%w: %q is %d bytes, over %d", ErrPageTooLarge, e.Path, e.Size, max)
	}
	b := make([]byte, e.Size)
	_, err := r.ReadAt(b, e.Offset)
	if err == io.EOF && e.Size == 0 {
		err = nil
	}
	return b, err
}

// ErrPageTooLarge is returned by ReadFile for a file over its bound.
var ErrPageTooLarge = errors.New("page too large")
