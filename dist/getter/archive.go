package getter

import (
	"archive/tar"
	"archive/zip"
	"compress/bzip2"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/airgap/airgap/dist"
	"github.com/airgap/airgap/dist/portable"
)

// Limits on what one module archive (or git checkout, for Normalize) may
// hold; see the package documentation for the worst case they allow.
const (
	// MaxArchiveEntries: entries of any kind, and every directory created
	// for them (an entry "a/b/c" that creates "a" and "a/b" counts three).
	// The largest real module repositories hold a few thousand files.
	MaxArchiveEntries = 100_000
	// MaxArchiveBytes: the sum of the sizes of regular files (hard links
	// count as the copies they become). Module sources are configuration:
	// the largest real ones are a few MB.
	MaxArchiveBytes int64 = 1 << 30
	// MaxArchiveLinks: symbolic links, which are kept in memory until every
	// other entry is unpacked.
	MaxArchiveLinks = 4096
	// MaxArchiveName: bytes in an entry name or link target (PATH_MAX).
	MaxArchiveName = 4096
	// MaxArchiveDepth: path components in an entry name. Real modules nest
	// a handful of directories; the bound keeps the directories one entry
	// can create, and the os.Root walk of every path, small.
	MaxArchiveDepth = 64
	// MaxZipDirectory: bytes of a zip's central directory (names, extra
	// fields and comments included), checked before archive/zip parses it
	// into memory.
	MaxZipDirectory = 32 << 20
)

type limits struct {
	entries, links int
	bytes          int64
}

var defaultLimits = limits{entries: MaxArchiveEntries, links: MaxArchiveLinks, bytes: MaxArchiveBytes}

// extract unpacks an archive of the given kind into dir, which it creates
// and which must not exist. Every file operation goes through an os.Root on
// dir (see the package documentation for the rules); on error dir is
// removed.
func extract(ctx context.Context, file, kind, dir string) error {
	return extractLimited(ctx, file, kind, dir, defaultLimits)
}

func extractLimited(ctx context.Context, file, kind, dir string, lim limits) (err error) {
	switch kind {
	case "zip", "tar.gz", "tgz", "tar", "tar.bz2", "tbz2":
	case "tar.xz", "txz":
		return fmt.Errorf("%w: xz archives are not supported; publish the module as .tar.gz or .zip", ErrUnsupported)
	default:
		return fmt.Errorf("%w: unknown archive kind %q", ErrUnsupported, kind)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			if rerr := os.RemoveAll(dir); rerr != nil {
				err = fmt.Errorf("%w (and removing the partial tree: %v)", err, rerr)
			}
		}
	}()
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	u := &unpacker{ctx: ctx, root: root, lim: lim, seed: maphash.MakeSeed(), dirs: map[uint64]struct{}{}, names: portable.NewSet()}
	if kind == "zip" {
		err = u.zip(file)
	} else {
		err = u.tar(file, kind)
	}
	if err != nil {
		return err
	}
	return u.links()
}

type unpacker struct {
	ctx     context.Context
	root    *os.Root
	lim     limits
	entries int // entries and the directories created for them
	bytes   int64
	symlink [][2]string // name, target: created after every other entry
	// dirs holds a hash (keyed with a random seed) of every directory
	// created, so implicit parents are counted once and MkdirAll is not
	// repeated: 8 bytes per directory, not its name.
	seed maphash.Seed
	dirs map[uint64]struct{}
	// names: every entry name, refused when it is not the same file on
	// every file system the clients run on (portable.Set).
	names *portable.Set
}

// entry counts an entry and checks its name (see entryName, and
// portableName against the entries before it); it also stops at a
// cancelled context.
func (u *unpacker) entry(raw string) (string, error) {
	if err := u.ctx.Err(); err != nil {
		return "", err
	}
	if err := u.count(); err != nil {
		return "", err
	}
	name, err := entryName(raw)
	if err == nil && name != "" {
		err = portableName(u.names, filepath.ToSlash(name))
	}
	return name, err
}

// portableName adds name (a slash path in the module) to names, refusing
// it (ErrUnsafeArchive) when it is not the same file on Linux, macOS and
// Windows or is one with a name added before (see package portable): on
// an engineer's Mac or Windows machine the two would merge, and the file
// airgap read would not be the one the client loads.
func portableName(names *portable.Set, name string) error {
	if err := names.Add(name); err != nil {
		return fmt.Errorf("%w: %v", ErrUnsafeArchive, err)
	}
	return nil
}

func (u *unpacker) count() error {
	u.entries++
	if u.entries > u.lim.entries {
		return fmt.Errorf("%w: more than %d entries (directories included)", ErrArchiveLimit, u.lim.entries)
	}
	return nil
}

// entryName checks an entry name: relative, no "..", not too long or too
// deep, printable. It returns the name for os.Root, or "" for the root
// itself.
func entryName(raw string) (string, error) {
	if len(raw) > MaxArchiveName {
		return "", fmt.Errorf("%w: an entry name is longer than %d bytes", ErrUnsafeArchive, MaxArchiveName)
	}
	if err := printableName("entry", raw); err != nil {
		return "", err
	}
	if strings.Count(strings.Trim(raw, "/"), "/") >= MaxArchiveDepth {
		return "", fmt.Errorf("%w: entry %q is more than %d directories deep", ErrArchiveLimit, raw, MaxArchiveDepth)
	}
	if raw == "" || strings.HasPrefix(raw, "/") || slices.Contains(strings.Split(raw, "/"), "..") {
		return "", fmt.Errorf("%w: entry %q is not a relative path inside the module", ErrUnsafeArchive, raw)
	}
	c := path.Clean(raw)
	if c == "." {
		return "", nil
	}
	name := filepath.FromSlash(c)
	if !filepath.IsLocal(name) {
		return "", fmt.Errorf("%w: entry %q is not a relative path inside the module", ErrUnsafeArchive, raw)
	}
	return name, nil
}

// printableName refuses names with control characters, Unicode format
// characters or invalid UTF-8 (see dist.Printable): they would reach the
// bundle, the offline side and every terminal that lists the module.
func printableName(what, raw string) error {
	if dist.Printable(raw) != raw {
		return fmt.Errorf("%w: %s %q has control characters or invalid UTF-8 in its name; airgap does not carry such names", ErrUnsafeArchive, what, raw)
	}
	return nil
}

// errno drops the path from an *fs.PathError or *os.LinkError: the path
// comes from the archive, the message names the entry itself (quoted).
func errno(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
}

// mkdir creates directory name and its parents, counting every directory
// it creates against the entry limit; an explicit directory entry (counted
// as an entry already) is not counted twice.
func (u *unpacker) mkdir(name string, explicit bool) error {
	if name == "" || name == "." {
		return nil
	}
	created := 0
	for p := name; p != "." && p != string(filepath.Separator); p = filepath.Dir(p) {
		h := maphash.String(u.seed, p)
		if _, ok := u.dirs[h]; ok {
			break
		}
		u.dirs[h] = struct{}{}
		created++
		if explicit && p == name {
			continue
		}
		if err := u.count(); err != nil {
			return err
		}
	}
	if created == 0 {
		return nil
	}
	if err := u.root.MkdirAll(name, 0o755); err != nil {
		return fmt.Errorf("%w: directory %q: %v", ErrUnsafeArchive, filepath.ToSlash(name), errno(err))
	}
	return nil
}

// file creates name (which must not exist) with size bytes from r.
func (u *unpacker) file(name string, r io.Reader, size int64, mode fs.FileMode) error {
	if name == "" {
		return fmt.Errorf("%w: a file entry names the module root", ErrUnsafeArchive)
	}
	if size < 0 || size > u.lim.bytes-u.bytes {
		return fmt.Errorf("%w: unpacks to more than %d bytes", ErrArchiveLimit, u.lim.bytes)
	}
	u.bytes += size
	if err := u.mkdir(filepath.Dir(name), false); err != nil {
		return err
	}
	perm := fs.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := u.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("%w: entry %q appears twice", ErrUnsafeArchive, filepath.ToSlash(name))
	}
	if err != nil {
		return fmt.Errorf("%w: entry %q: %v", ErrUnsafeArchive, filepath.ToSlash(name), errno(err))
	}
	n, err := io.Copy(f, io.LimitReader(dist.ContextReader(u.ctx, r), size+1))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil && n != size {
		err = fmt.Errorf("%d bytes where the header says %d", n, size)
	}
	if err != nil {
		return fmt.Errorf("entry %q: %w", filepath.ToSlash(name), errno(err))
	}
	return nil
}

// hardlink unpacks name as a copy of target, an entry already unpacked.
func (u *unpacker) hardlink(name, target string) error {
	t, err := entryName(target)
	if err != nil || t == "" {
		return fmt.Errorf("%w: hard link %q -> %q leads outside the module", ErrUnsafeArchive, filepath.ToSlash(name), target)
	}
	src, err := u.root.Open(t)
	if err != nil {
		return fmt.Errorf("%w: hard link %q -> %q: the target is not an earlier entry of the archive", ErrUnsafeArchive, filepath.ToSlash(name), target)
	}
	defer src.Close()
	fi, err := src.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: hard link %q -> %q: the target is not a regular file", ErrUnsafeArchive, filepath.ToSlash(name), target)
	}
	return u.file(name, src, fi.Size(), fi.Mode())
}

// link records a symbolic link, created by links once every other entry is
// unpacked.
func (u *unpacker) link(name, target string) error {
	switch {
	case name == "":
		return fmt.Errorf("%w: a symlink entry names the module root", ErrUnsafeArchive)
	case len(u.symlink) >= u.lim.links:
		return fmt.Errorf("%w: more than %d symbolic links", ErrArchiveLimit, u.lim.links)
	case target == "" || len(target) > MaxArchiveName || dist.Printable(target) != target:
		return fmt.Errorf("%w: symlink %q has an empty, overlong or unprintable target", ErrUnsafeArchive, filepath.ToSlash(name))
	case path.IsAbs(target) || filepath.IsAbs(target):
		return fmt.Errorf("%w: symlink %q -> %q is absolute; links in modules must stay inside the module", ErrUnsafeArchive, filepath.ToSlash(name), target)
	}
	u.symlink = append(u.symlink, [2]string{name, target})
	return nil
}

// links creates the recorded symbolic links, then checks that each leads,
// inside the root, to a regular file.
func (u *unpacker) links() error {
	for _, l := range u.symlink {
		if err := u.ctx.Err(); err != nil {
			return err
		}
		if err := u.mkdir(filepath.Dir(l[0]), false); err != nil {
			return err
		}
		err := u.root.Symlink(l[1], l[0])
		if errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("%w: symlink %q: another entry has that name or a path through it (airgap does not unpack through links)", ErrUnsafeArchive, filepath.ToSlash(l[0]))
		}
		if err != nil {
			return fmt.Errorf("%w: symlink %q -> %q: %v", ErrUnsafeArchive, filepath.ToSlash(l[0]), l[1], errno(err))
		}
	}
	for _, l := range u.symlink {
		if _, err := linkedFile(u.root, l[0]); err != nil {
			return err
		}
	}
	return nil
}

// linkedFile follows the symlink name inside root: it must lead, without
// leaving root, to a regular file.
func linkedFile(root *os.Root, name string) (fs.FileInfo, error) {
	target, _ := root.Readlink(name)
	fi, err := root.Stat(name)
	if err != nil {
		err = errno(err)
		return nil, fmt.Errorf("%w: symlink %q -> %q does not lead to a file inside the module (%v)", ErrUnsafeArchive, filepath.ToSlash(name), target, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: symlink %q -> %q leads to a directory or special file; links in modules may point only to files", ErrUnsafeArchive, filepath.ToSlash(name), target)
	}
	return fi, nil
}

func (u *unpacker) tar(file, kind string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	var r io.Reader = f
	switch kind {
	case "tar.gz", "tgz":
		gz, err := gzip.NewReader(f)
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		r = gz
	case "tar.bz2", "tbz2":
		r = bzip2.NewReader(f)
	}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		if h.Typeflag == tar.TypeXGlobalHeader {
			continue
		}
		name, err := u.entry(h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			err = u.mkdir(name, true)
		case tar.TypeReg:
			err = u.file(name, tr, h.Size, h.FileInfo().Mode())
		case tar.TypeSymlink:
			err = u.link(name, h.Linkname)
		case tar.TypeLink:
			err = u.hardlink(name, h.Linkname)
		default:
			err = fmt.Errorf("%w: entry %q has type %q (devices, FIFOs and the like are not unpacked)", ErrUnsafeArchive, name, h.Typeflag)
		}
		if err != nil {
			return err
		}
	}
}

func (u *unpacker) zip(file string) error {
	f, err := os.Open(file)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if err := checkZipDirectory(f, fi.Size(), u.lim.entries); err != nil {
		return err
	}
	zr, err := zip.NewReader(f, fi.Size())
	if err != nil {
		return fmt.Errorf("reading the archive: %w", err)
	}
	if len(zr.File) > u.lim.entries {
		return fmt.Errorf("%w: more than %d entries", ErrArchiveLimit, u.lim.entries)
	}
	for _, f := range zr.File {
		name, err := u.entry(f.Name)
		if err != nil {
			return err
		}
		mode := f.Mode()
		switch {
		case mode.IsDir():
			err = u.mkdir(name, true)
		case mode&fs.ModeSymlink != 0:
			var target []byte
			if target, err = readZip(f, MaxArchiveName+1); err == nil {
				err = u.link(name, string(target))
			}
		case mode.IsRegular():
			if f.UncompressedSize64 > uint64(u.lim.bytes) {
				return fmt.Errorf("%w: unpacks to more than %d bytes", ErrArchiveLimit, u.lim.bytes)
			}
			var rc io.ReadCloser
			if rc, err = f.Open(); err == nil {
				err = u.file(name, rc, int64(f.UncompressedSize64), mode)
				rc.Close()
			}
		default:
			err = fmt.Errorf("%w: zip entry %q is not a file, directory or symlink (%v)", ErrUnsafeArchive, name, mode)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func readZip(f *zip.File, max int64) ([]byte, error) {
	rc, err := f.Open()
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(io.LimitReader(rc, max))
}

// NormalizeToFile writes the deterministic archive of root to dst.
func NormalizeToFile(ctx context.Context, root, dst string) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	err = Normalize(ctx, root, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

// Normalize writes a gzip'd tar of the tree at dir: entries in lexical
// order, mtime at the epoch, uid/gid 0, no owner names, directories 0755,
// files 0644 or 0755, symlinks replaced by the file they lead to (which must
// be inside dir), .git skipped (and any name a case-insensitive file system
// takes for it: portable.Equal). It reads only through an os.Root on dir,
// applies MaxArchiveEntries, MaxArchiveBytes and MaxArchiveDepth, refuses
// unprintable names, and stops when ctx is cancelled.
func Normalize(ctx context.Context, dir string, w io.Writer) error {
	return normalize(ctx, dir, w, defaultLimits)
}

func normalize(ctx context.Context, dir string, w io.Writer, lim limits) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	gz, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	epoch := time.Unix(0, 0)
	names := portable.NewSet()
	var entries int
	var total int64
	err = fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("%q: %w", rel, errno(err))
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if rel == "." {
			return nil
		}
		if portable.Equal(d.Name(), ".git") {
			// Spelled in any case (".GIT", ".Git", ".gıt"): on macOS and
			// Windows that is the .git of the engineer's checkout of the
			// module, whose config (core.fsmonitor, core.pager, …) git runs
			// on the first "git status" there.
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if entries++; entries > lim.entries {
			return fmt.Errorf("%w: more than %d entries", ErrArchiveLimit, lim.entries)
		}
		if err := printableName("file", rel); err != nil {
			return err
		}
		if err := portableName(names, rel); err != nil {
			return err
		}
		if strings.Count(rel, "/") >= MaxArchiveDepth {
			return fmt.Errorf("%w: %q is more than %d directories deep", ErrArchiveLimit, rel, MaxArchiveDepth)
		}
		name := filepath.FromSlash(rel)
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("%q: %w", rel, errno(err))
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			if info, err = linkedFile(root, name); err != nil {
				return err
			}
		}
		h := &tar.Header{Name: rel, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case info.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, rel+"/", 0o755
			return tw.WriteHeader(h)
		case info.Mode().IsRegular():
			if total += info.Size(); total > lim.bytes {
				return fmt.Errorf("%w: more than %d bytes", ErrArchiveLimit, lim.bytes)
			}
			h.Typeflag, h.Size, h.Mode = tar.TypeReg, info.Size(), 0o644
			if info.Mode()&0o111 != 0 {
				h.Mode = 0o755
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			f, err := root.Open(name)
			if err != nil {
				return fmt.Errorf("%q: %w", rel, errno(err))
			}
			defer f.Close()
			_, err = io.CopyN(tw, dist.ContextReader(ctx, f), info.Size())
			return errno(err)
		default:
			return fmt.Errorf("%w: %q is not a regular file or directory", ErrUnsafeArchive, rel)
		}
	})
	if err != nil {
		return err
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}
