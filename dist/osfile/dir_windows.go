//go:build windows

package osfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// ErrNotRegular marks a name that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// Dir is a directory named by path. Windows has no root that chowns
// another user's files, so the operations are the plain ones by path;
// links are still not read through (Lstat before reading).
type Dir struct{ path string }

// OpenDir names base joined with rel.
func OpenDir(base string, rel ...string) (*Dir, error) {
	p := filepath.Join(append([]string{base}, rel...)...)
	fi, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", p)
	}
	return &Dir{path: p}, nil
}

func (d *Dir) Close() error      { return nil }
func (d *Dir) Path() string      { return d.path }
func (d *Dir) Sync() error       { return nil }
func (d *Dir) p(n string) string { return filepath.Join(d.path, n) }

func (d *Dir) checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, `/\`) {
		return fmt.Errorf("%s: %q is not a file name", d.path, name)
	}
	return nil
}

func (d *Dir) writeTemp(data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(d.path, ".tmp-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

func (d *Dir) WriteFileAtomic(name string, data []byte, perm os.FileMode) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	tmp, err := d.writeTemp(data, perm)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, d.p(name)); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func (d *Dir) LinkNewFile(name string, data []byte, perm os.FileMode) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	tmp, err := d.writeTemp(data, perm)
	if err != nil {
		return err
	}
	defer os.Remove(tmp)
	return os.Link(tmp, d.p(name))
}

func (d *Dir) Remove(name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	return os.Remove(d.p(name))
}

func (d *Dir) lstat(name string) (os.FileInfo, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	return os.Lstat(d.p(name))
}

// ModTime is the modification time of the entry name itself.
func (d *Dir) ModTime(name string) (time.Time, error) {
	fi, err := d.lstat(name)
	if err != nil {
		return time.Time{}, err
	}
	return fi.ModTime(), nil
}

// OpenRegular opens the regular file name for reading.
func (d *Dir) OpenRegular(name string) (*os.File, error) {
	fi, err := d.lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: d.p(name), Err: ErrNotRegular}
	}
	return os.Open(d.p(name))
}

func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	fi, err := d.lstat(name)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, &fs.PathError{Op: "open", Path: d.p(name), Err: ErrNotRegular}
	}
	f, err := os.Open(d.p(name))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAllLimit(f, max)
}

func (d *Dir) Names(max int) ([]string, error) {
	f, err := os.Open(d.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(max)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return names, err
}

// OpenLockFile opens name read-write, created if absent.
func (d *Dir) OpenLockFile(name string) (*os.File, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	return os.OpenFile(d.p(name), os.O_RDWR|os.O_CREATE, 0o600)
}

// LockFile opens name (created if absent) and locks it (LockPath).
func (d *Dir) LockFile(name string) (unlock func(), err error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	return LockPath(d.p(name))
}

// OpenAppend opens name for appending, created if absent.
func (d *Dir) OpenAppend(name string, perm os.FileMode) (*os.File, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	return os.OpenFile(d.p(name), os.O_WRONLY|os.O_APPEND|os.O_CREATE, perm)
}

// Stat describes the directory.
func (d *Dir) Stat() (os.FileInfo, error) { return os.Stat(d.path) }

// NewFile is one file MakeDirAtomic writes.
type NewFile struct {
	Name string
	Data []byte
	Perm os.FileMode
}

// MakeDirAtomic creates the directory name holding files, whole or not at
// all: a temporary directory renamed to name (an error wrapping
// fs.ErrExist when name exists already).
func (d *Dir) MakeDirAtomic(name string, files []NewFile) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(d.path, ".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	for _, nf := range files {
		if err := d.checkName(nf.Name); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, nf.Name), nf.Data, nf.Perm); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, d.p(name)); err != nil {
		if _, serr := os.Lstat(d.p(name)); serr == nil {
			return fmt.Errorf("%s: %w", d.p(name), fs.ErrExist)
		}
		return err
	}
	return nil
}
