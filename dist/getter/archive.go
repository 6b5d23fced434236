package getter

import (
	"archive/tar"
	"archive/zip"
	"compress/bzip2"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"
)

// maxExtract bounds what an archive may unpack to.
const maxExtract = 4 << 30

func safeJoin(root, name string) (string, error) {
	name = filepath.ToSlash(name)
	clean := path.Clean("/" + name)
	if strings.HasPrefix(name, "/") || strings.Contains("/"+name+"/", "/../") {
		return "", fmt.Errorf("unsafe path %q in archive", name)
	}
	return filepath.Join(root, filepath.FromSlash(clean)), nil
}

// extract unpacks an archive of the given kind into root, refusing paths
// that escape it and links that point outside it.
func extract(file, kind, root string) error {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	switch kind {
	case "zip":
		return extractZip(file, root)
	case "tar.gz", "tgz", "tar", "tar.bz2", "tbz2":
	case "tar.xz", "txz":
		return fmt.Errorf("xz archives are not supported; publish the module as .tar.gz or .zip")
	default:
		return fmt.Errorf("unknown archive kind %q", kind)
	}
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
			return err
		}
		r = gz
	case "tar.bz2", "tbz2":
		r = bzip2.NewReader(f)
	}
	tr := tar.NewReader(r)
	var total int64
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		if h.Typeflag == tar.TypeXGlobalHeader || h.Name == "pax_global_header" {
			continue
		}
		dst, err := safeJoin(root, h.Name)
		if err != nil {
			return err
		}
		switch h.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
		case tar.TypeReg:
			total += h.Size
			if total > maxExtract {
				return fmt.Errorf("archive unpacks to more than %d bytes", maxExtract)
			}
			if err := writeFile(dst, tr, h.FileInfo().Mode()); err != nil {
				return err
			}
		case tar.TypeSymlink:
			target := h.Linkname
			if filepath.IsAbs(target) {
				return fmt.Errorf("symlink %q points outside the module (%q)", h.Name, target)
			}
			if _, err := safeJoin(root, path.Join(path.Dir(filepath.ToSlash(h.Name)), target)); err != nil {
				return fmt.Errorf("symlink %q points outside the module (%q)", h.Name, target)
			}
			os.MkdirAll(filepath.Dir(dst), 0o755)
			if err := os.Symlink(target, dst); err != nil {
				return err
			}
		default:
			return fmt.Errorf("entry %q has unsupported type %q", h.Name, h.Typeflag)
		}
	}
}

func extractZip(file, root string) error {
	zr, err := zip.OpenReader(file)
	if err != nil {
		return err
	}
	defer zr.Close()
	var total int64
	for _, f := range zr.File {
		dst, err := safeJoin(root, f.Name)
		if err != nil {
			return err
		}
		if f.FileInfo().IsDir() {
			if err := os.MkdirAll(dst, 0o755); err != nil {
				return err
			}
			continue
		}
		if !f.Mode().IsRegular() {
			return fmt.Errorf("zip entry %q is not a regular file", f.Name)
		}
		total += int64(f.UncompressedSize64)
		if total > maxExtract {
			return fmt.Errorf("archive unpacks to more than %d bytes", maxExtract)
		}
		rc, err := f.Open()
		if err != nil {
			return err
		}
		err = writeFile(dst, rc, f.Mode())
		rc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

func writeFile(dst string, r io.Reader, mode fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if mode&0o111 != 0 {
		perm = 0o755
	}
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, io.LimitReader(r, maxExtract)); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// NormalizeToFile writes the deterministic archive of root to dst.
func NormalizeToFile(root, dst string) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	err = Normalize(root, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(dst)
	}
	return err
}

// Normalize writes a gzip'd tar of the tree at root: entries in lexical
// order, mtime at the epoch, uid/gid 0, no owner names, directories 0755,
// files 0644 or 0755, symlinks replaced by what they point to (which must be
// inside root), .git skipped.
func Normalize(root string, w io.Writer) error {
	rootAbs, err := filepath.EvalSymlinks(root)
	if err != nil {
		return err
	}
	gz, _ := gzip.NewWriterLevel(w, gzip.BestCompression)
	tw := tar.NewWriter(gz)
	epoch := time.Unix(0, 0)
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == root {
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		src := p
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode()&fs.ModeSymlink != 0 {
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return fmt.Errorf("symlink %s: %w", rel, err)
			}
			if target != rootAbs && !strings.HasPrefix(target, rootAbs+string(filepath.Separator)) {
				return fmt.Errorf("symlink %s points outside the module source (%s)", rel, target)
			}
			if info, err = os.Stat(target); err != nil {
				return err
			}
			if info.IsDir() {
				return fmt.Errorf("symlink %s points to a directory; not supported in module archives", rel)
			}
			src = target
		}
		h := &tar.Header{Name: rel, ModTime: epoch, Format: tar.FormatPAX}
		switch {
		case info.IsDir():
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, rel+"/", 0o755
			return tw.WriteHeader(h)
		case info.Mode().IsRegular():
			h.Typeflag, h.Size, h.Mode = tar.TypeReg, info.Size(), 0o644
			if info.Mode()&0o111 != 0 {
				h.Mode = 0o755
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			f, err := os.Open(src)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.CopyN(tw, f, info.Size())
			return err
		default:
			return fmt.Errorf("%s is not a regular file or directory", rel)
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
