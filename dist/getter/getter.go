package getter

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/airgap/airgap/dist"
)

// Source is a parsed module source address.
type Source struct {
	Kind   string // "git" or "http"
	URL    string // without the forced-getter prefix, subdir, ref
	Ref    string // git ref, if any
	Subdir string // "" or a path; "*" or "*/x" strips a top-level folder
	Raw    string
}

var archiveExts = []string{".tar.gz", ".tgz", ".tar.bz2", ".tbz2", ".tar", ".zip", ".tar.xz", ".txz"}

// splitSubdir splits "x//sub?q" into "x?q" and "sub", as go-getter does.
func splitSubdir(src string) (string, string) {
	start := 0
	if i := strings.Index(src, "://"); i >= 0 {
		start = i + 3
	}
	i := strings.Index(src[start:], "//")
	if i < 0 {
		return src, ""
	}
	i += start
	rest := src[i+2:]
	sub, query, hasQ := strings.Cut(rest, "?")
	out := src[:i]
	if hasQ {
		out += "?" + query
	}
	return out, sub
}

// Parse reads a module source address.
func Parse(raw string) (*Source, error) {
	s := &Source{Raw: raw}
	src := raw
	forced := ""
	if i := strings.Index(src, "::"); i > 0 && !strings.Contains(src[:i], "/") {
		forced, src = src[:i], src[i+2:]
	}
	switch forced {
	case "", "git", "http", "https":
	case "s3", "gcs", "hg":
		return nil, fmt.Errorf("%w %q: %s:: sources cannot be fetched by airgap; mirror the module into a git repository or an HTTP archive", ErrUnsupported, raw, forced)
	default:
		return nil, fmt.Errorf("%w %q: unknown getter %q", ErrUnsupported, raw, forced)
	}
	src, s.Subdir = splitSubdir(src)
	if forced == "" {
		switch {
		case strings.HasPrefix(src, "github.com/"), strings.HasPrefix(src, "bitbucket.org/"):
			// go-getter asks Bitbucket's API whether a repository is git or
			// Mercurial; Bitbucket has hosted only git since 2020.
			forced, src = "git", "https://"+src
			if !strings.HasSuffix(strings.SplitN(src, "?", 2)[0], ".git") {
				p, q, hasQ := strings.Cut(src, "?")
				src = p + ".git"
				if hasQ {
					src += "?" + q
				}
			}
		case strings.HasPrefix(src, "git@"):
			forced = "git"
		case strings.HasPrefix(src, "https://") || strings.HasPrefix(src, "http://"):
			forced = "http"
		default:
			return nil, fmt.Errorf("%w %q: not a git or HTTP source", ErrUnsupported, raw)
		}
	}
	if forced == "https" {
		forced = "http"
	}
	s.Kind = forced
	if s.Kind == "git" {
		if strings.HasPrefix(src, "git@") {
			// scp-like: git@host:path?ref=x
			p, q, _ := strings.Cut(src, "?")
			vals, _ := url.ParseQuery(q)
			s.Ref = vals.Get("ref")
			s.URL = p
		} else {
			u, err := url.Parse(src)
			if err != nil {
				return nil, fmt.Errorf("module source %q: %w", raw, err)
			}
			q := u.Query()
			s.Ref = q.Get("ref")
			q.Del("ref")
			q.Del("depth")
			u.RawQuery = q.Encode()
			s.URL = u.String()
		}
		if err := checkGitURL(s.URL); err != nil {
			return nil, fmt.Errorf("%w %q: %v\nhint: a registry must give git module locations as https://, ssh:// or git@host: addresses; a local path here is hostile or a publishing mistake; tell the module's publisher", ErrUnsupported, raw, err)
		}
		if strings.HasPrefix(s.Ref, "-") {
			return nil, fmt.Errorf("%w %q: a git ref cannot start with '-'", ErrUnsupported, raw)
		}
		return s, nil
	}
	u, err := url.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("module source %q: %w", raw, err)
	}
	if u.Query().Get("archive") == "" {
		ok := false
		for _, e := range archiveExts {
			if strings.HasSuffix(u.Path, e) {
				ok = true
			}
		}
		if !ok {
			return nil, fmt.Errorf("%w %q: an HTTP source must name an archive (.tar.gz, .zip, … or ?archive=); Terraform would ask it for ?terraform-get=1, which airgap does not follow", ErrUnsupported, raw)
		}
	}
	s.URL = u.String()
	return s, nil
}

// Result is a fetched, normalized module source.
type Result struct {
	Archive string // path of the .tar.gz
	Subdir  string // subdirectory within the archive root
	Commit  string // git commit, if any
	Root    string // the unpacked tree (for scanning)
}

// DownloadFunc downloads url to path.
type DownloadFunc func(ctx context.Context, url, path string) error

// Options configure FetchWith.
type Options struct {
	// Download fetches HTTP archives.
	Download DownloadFunc
	// MaxGitSize bounds the git objects of one git source, its submodules
	// included, on top of the files its tree checks out (0:
	// MaxGitRepository); see sizeWatch.
	MaxGitSize int64
}

// fetch fetches src into work (a fresh directory it may fill) and writes
// the normalized archive.
func fetch(ctx context.Context, src *Source, work string, download DownloadFunc) (*Result, error) {
	return FetchWith(ctx, src, work, Options{Download: download})
}

// FetchWith is fetch with options.
func FetchWith(ctx context.Context, src *Source, work string, opt Options) (*Result, error) {
	root := filepath.Join(work, "src")
	res := &Result{Root: root}
	switch src.Kind {
	case "git":
		commit, err := gitFetch(ctx, src, root, opt.MaxGitSize)
		if err != nil {
			err = hinted(err)
		}
		if err != nil {
			return nil, err
		}
		res.Commit = commit
	case "http":
		arch := filepath.Join(work, "download")
		if err := opt.Download(ctx, src.URL, arch); err != nil {
			return nil, err
		}
		if err := extract(ctx, arch, archiveKind(src.URL), root); err != nil {
			return nil, fmt.Errorf("unpacking %s: %w", dist.RedactSource(src.URL), hinted(err))
		}
	}
	sub := src.Subdir
	if sub == "*" || strings.HasPrefix(sub, "*/") {
		ents, err := os.ReadDir(root)
		if err != nil {
			return nil, err
		}
		if len(ents) != 1 || !ents[0].IsDir() {
			return nil, fmt.Errorf("module source %q: //* needs exactly one top-level folder, found %d entries", dist.RedactSource(src.Raw), len(ents))
		}
		root = filepath.Join(root, ents[0].Name())
		res.Root = root
		sub = strings.TrimPrefix(strings.TrimPrefix(sub, "*"), "/")
	}
	sub = strings.Trim(filepath.ToSlash(filepath.Clean("/"+sub)), "/")
	if sub != "" && !isDirIn(root, sub) {
		return nil, fmt.Errorf("module source %q: subdirectory %q does not exist in the module", dist.RedactSource(src.Raw), sub)
	}
	res.Subdir = sub
	res.Archive = filepath.Join(work, "module.tar.gz")
	if err := NormalizeToFile(ctx, root, res.Archive); err != nil {
		return nil, fmt.Errorf("archiving module source %q: %w", dist.RedactSource(src.Raw), hinted(err))
	}
	return res, nil
}

// hinted adds what to do to the errors of hostile or oversized sources.
func hinted(err error) error {
	switch {
	case errors.Is(err, ErrGitTooLarge):
		return err // the caller knows the limit's name
	case errors.Is(err, ErrUnsafeArchive):
		return fmt.Errorf("%w\nhint: the module source is malformed or hostile; nothing was written outside its own directory; tell the module's publisher", err)
	case errors.Is(err, ErrArchiveLimit):
		return fmt.Errorf("%w\nhint: module sources hold configuration, not data; this one is far larger than any real module; tell its publisher", err)
	}
	return err
}

// isDirIn reports whether sub is a directory inside root, following links
// only within root.
func isDirIn(root, sub string) bool {
	r, err := os.OpenRoot(root)
	if err != nil {
		return false
	}
	defer r.Close()
	fi, err := r.Stat(filepath.FromSlash(sub))
	return err == nil && fi.IsDir()
}

func archiveKind(u string) string {
	pu, err := url.Parse(u)
	if err == nil {
		if a := pu.Query().Get("archive"); a != "" {
			return a
		}
		u = pu.Path
	}
	for _, e := range archiveExts {
		if strings.HasSuffix(u, e) {
			return strings.TrimPrefix(e, ".")
		}
	}
	return ""
}
