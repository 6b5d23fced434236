//go:build unix

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

	"golang.org/x/sys/unix"
)

// Dir is a directory opened without following a link another user could
// have put on the way (OpenDir), and the operations on the files in it
// that never follow a link either: a verb run as root that writes serve's
// state (owned by serve's user, who may swap any name in it for a link
// at any moment) creates, renames, removes, reads and chowns through the
// directory's descriptor and the open file's, never by path.
type Dir struct {
	f    *os.File
	path string // for messages only
	uid  int    // the directory's owner, when it is opened
	gid  int
}

// ErrNotRegular marks a name in the state that is not a regular file (a
// FIFO, a device, a link, a directory): never opened for reading, so a
// FIFO cannot hang whoever reads the state.
var ErrNotRegular = errors.New("not a regular file")

// ErrHardLinked marks a file root would append to, in a directory another
// user can write, that has more than one hard link.
var ErrHardLinked = errors.New("the file has more than one hard link")

// OpenDir opens base (a path the operator gave: followed as given) and
// then each of rel below it. A component is looked up with O_NOFOLLOW
// unless the directory holding it is owned by this process's user and
// writable by nobody else: a link there was put by the same user, and an
// operator may well have made STORE/state a link to another disk.
func OpenDir(base string, rel ...string) (*Dir, error) {
	fd, err := unix.Open(base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: base, Err: err}
	}
	path := base
	for _, name := range rel {
		if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
			unix.Close(fd)
			return nil, fmt.Errorf("%s: %q is not a directory name", path, name)
		}
		flags := unix.O_RDONLY | unix.O_DIRECTORY | unix.O_CLOEXEC
		if !ownedAlone(fd) {
			flags |= unix.O_NOFOLLOW
		}
		next, err := unix.Openat(fd, name, flags, 0)
		unix.Close(fd)
		path = filepath.Join(path, name)
		if err == unix.ELOOP || err == unix.ENOTDIR {
			return nil, fmt.Errorf("%s is not a directory (a link, in a directory another user can write, is not followed)", path)
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: path, Err: err}
		}
		fd = next
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, &os.PathError{Op: "stat", Path: path, Err: err}
	}
	return &Dir{f: os.NewFile(uintptr(fd), path), path: path, uid: int(st.Uid), gid: int(st.Gid)}, nil
}

// ownedAlone reports whether the directory fd is owned by this process's
// user and writable by no one else.
func ownedAlone(fd int) bool {
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return false
	}
	return int(st.Uid) == os.Geteuid() && st.Mode&0o022 == 0
}

// Close closes the directory.
func (d *Dir) Close() error { return d.f.Close() }

// Path is the directory's path, for messages.
func (d *Dir) Path() string { return d.path }

func (d *Dir) fd() int { return int(d.f.Fd()) }

func (d *Dir) err(op, name string, err error) error {
	return &os.PathError{Op: op, Path: filepath.Join(d.path, name), Err: err}
}

// checkName refuses a name that is not one entry of the directory.
func (d *Dir) checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("%s: %q is not a file name", d.path, name)
	}
	return nil
}

// createTemp creates a new file (O_EXCL: never a name that exists, so
// never a link) and, when this process is root and the directory belongs
// to another user, gives the open file to that user (fchown), so serve,
// running as the directory's owner, can read what root wrote.
func (d *Dir) createTemp(perm os.FileMode) (*os.File, string, error) {
	var buf [8]byte
	for range 100 {
		if _, err := io.ReadFull(randReader, buf[:]); err != nil {
			return nil, "", err
		}
		name := fmt.Sprintf(".tmp-%x", buf)
		fd, err := unix.Openat(d.fd(), name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(perm.Perm()))
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			return nil, "", d.err("create", name, err)
		}
		f := os.NewFile(uintptr(fd), filepath.Join(d.path, name))
		if os.Geteuid() == 0 && d.uid != 0 {
			if err := f.Chown(d.uid, d.gid); err != nil {
				f.Close()
				unix.Unlinkat(d.fd(), name, 0)
				return nil, "", fmt.Errorf("giving %s to its directory's owner (uid %d): %w", f.Name(), d.uid, err)
			}
		}
		return f, name, nil
	}
	return nil, "", fmt.Errorf("%s: no free temporary name", d.path)
}

// writeTemp writes data to a new temporary file, synced, and returns its
// name.
func (d *Dir) writeTemp(data []byte, perm os.FileMode) (string, error) {
	f, name, err := d.createTemp(perm)
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
		unix.Unlinkat(d.fd(), name, 0)
		return "", err
	}
	return name, nil
}

// WriteFileAtomic replaces name with data, whole: a new temporary file
// (owned as createTemp says), synced, renamed over name (rename replaces a
// link, never follows it), then the directory synced.
func (d *Dir) WriteFileAtomic(name string, data []byte, perm os.FileMode) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	tmp, err := d.writeTemp(data, perm)
	if err != nil {
		return err
	}
	if err := unix.Renameat(d.fd(), tmp, d.fd(), name); err != nil {
		unix.Unlinkat(d.fd(), tmp, 0)
		return d.err("rename", name, err)
	}
	return d.Sync()
}

// LinkNewFile creates name with data only if no entry of that name exists
// (an error wrapping fs.ErrExist otherwise), whole: a synced temporary
// file hard-linked to name.
func (d *Dir) LinkNewFile(name string, data []byte, perm os.FileMode) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	tmp, err := d.writeTemp(data, perm)
	if err != nil {
		return err
	}
	defer unix.Unlinkat(d.fd(), tmp, 0)
	if err := unix.Linkat(d.fd(), tmp, d.fd(), name, 0); err != nil {
		return d.err("link", name, err)
	}
	return d.Sync()
}

// Remove removes the entry name (a link itself, never what it names).
func (d *Dir) Remove(name string) error {
	if err := d.checkName(name); err != nil {
		return err
	}
	if err := unix.Unlinkat(d.fd(), name, 0); err != nil {
		return d.err("remove", name, err)
	}
	return nil
}

// ModTime is the modification time of the entry name itself (a link is
// not followed).
func (d *Dir) ModTime(name string) (time.Time, error) {
	if err := d.checkName(name); err != nil {
		return time.Time{}, err
	}
	var st unix.Stat_t
	if err := unix.Fstatat(d.fd(), name, &st, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return time.Time{}, d.err("stat", name, err)
	}
	return time.Unix(int64(st.Mtim.Sec), int64(st.Mtim.Nsec)), nil
}

// openRegular opens name for reading without following a link and without
// waiting on a FIFO (O_NONBLOCK), and refuses anything but a regular file
// (ErrNotRegular).
func (d *Dir) openRegular(name string) (*os.File, error) {
	flags := unix.O_RDONLY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	fd, err := unix.Openat(d.fd(), name, flags, 0)
	if err == unix.ELOOP {
		return nil, d.err("open", name, ErrNotRegular)
	}
	if err != nil {
		return nil, d.err("open", name, err)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return nil, d.err("stat", name, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		unix.Close(fd)
		return nil, d.err("open", name, ErrNotRegular)
	}
	return os.NewFile(uintptr(fd), filepath.Join(d.path, name)), nil
}

// OpenRegular opens the regular file name for reading, never through a
// link and never a FIFO or device (ErrNotRegular).
func (d *Dir) OpenRegular(name string) (*os.File, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	return d.openRegular(name)
}

// ReadFile reads the regular file name, at most max bytes (an error
// wrapping ErrTooLarge beyond), never following a link and never waiting
// on a FIFO or device (ErrNotRegular): what it reads is bounded by max and
// by the file system, not by whoever put the name there.
func (d *Dir) ReadFile(name string, max int64) ([]byte, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	f, err := d.openRegular(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readAllLimit(f, max)
}

// Names lists at most max names of the directory.
func (d *Dir) Names(max int) ([]string, error) {
	f, err := d.Open(".")
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

// Open opens "." (the directory itself, anew, for listing).
func (d *Dir) Open(name string) (*os.File, error) {
	if name != "." {
		return nil, fmt.Errorf("%s: Open takes only \".\"", d.path)
	}
	fd, err := unix.Openat(d.fd(), ".", unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, d.err("open", ".", err)
	}
	return os.NewFile(uintptr(fd), d.path), nil
}

// Sync flushes the directory's entries to disk.
func (d *Dir) Sync() error { return d.f.Sync() }

// LockFile opens name (OpenLockFile) and takes an exclusive lock on it,
// waiting for whoever holds it. unlock releases the lock and closes the
// file.
func (d *Dir) LockFile(name string) (unlock func(), err error) {
	f, err := d.OpenLockFile(name)
	if err != nil {
		return nil, err
	}
	if err := Lock(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() { Unlock(f); f.Close() }, nil
}

// OpenLockFile opens name read-write (created 0600 if absent, and then
// given to the directory's owner as createTemp does; it holds nothing),
// never through a link and never a FIFO (ErrNotRegular).
func (d *Dir) OpenLockFile(name string) (*os.File, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	f, _, created, err := d.openCreate(name, unix.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if created {
		d.giveAway(f) // root just created it: serve's user must open it too
	}
	return f, nil
}

// openCreate opens name with flags (O_WRONLY|O_APPEND or O_RDWR),
// creating it with perm when absent: first with O_EXCL, so that created
// says this call made the file (and only such a file is given away: a
// file that was there, root's own included, keeps its owner); never
// through a link, never a FIFO or device (ErrNotRegular), never waiting.
func (d *Dir) openCreate(name string, flags int, perm os.FileMode) (*os.File, unix.Stat_t, bool, error) {
	var st unix.Stat_t
	base := flags | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	created := true
	fd, err := unix.Openat(d.fd(), name, base|unix.O_CREAT|unix.O_EXCL, uint32(perm.Perm()))
	if err == unix.EEXIST {
		created = false
		fd, err = unix.Openat(d.fd(), name, base, 0)
	}
	if err == unix.ELOOP || err == unix.ENXIO { // a link; a FIFO nobody reads
		return nil, st, false, d.err("open", name, ErrNotRegular)
	}
	if err != nil {
		return nil, st, false, d.err("open", name, err)
	}
	f := os.NewFile(uintptr(fd), filepath.Join(d.path, name))
	if err := unix.Fstat(fd, &st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFREG {
		f.Close()
		return nil, st, false, d.err("open", name, ErrNotRegular)
	}
	return f, st, created, nil
}

// giveAway gives f, which this process just created, to the directory's
// owner when this process is root and the directory another user's.
func (d *Dir) giveAway(f *os.File) {
	if os.Geteuid() == 0 && d.uid != 0 {
		f.Chown(d.uid, d.gid)
	}
}

// OpenAppend opens name for appending (created with perm if absent, and
// then given to the directory's owner as createTemp does), never through
// a link and never a FIFO or device (ErrNotRegular).
func (d *Dir) OpenAppend(name string, perm os.FileMode) (*os.File, error) {
	if err := d.checkName(name); err != nil {
		return nil, err
	}
	f, st, created, err := d.openCreate(name, unix.O_WRONLY|unix.O_APPEND, perm)
	if err != nil {
		return nil, err
	}
	if os.Geteuid() == 0 && d.uid != 0 && st.Nlink != 1 {
		// A name with more than one link, in a directory another user can
		// write: whoever put it there may have linked a file of root's
		// (where hard links to others' files are allowed), which root
		// would then append to.
		f.Close()
		return nil, d.err("open", name, fmt.Errorf("%w (%d): another name of the same file may be anywhere on this file system, so root does not write to it", ErrHardLinked, st.Nlink))
	}
	if created {
		d.giveAway(f) // root just created it: the directory's owner (serve) appends to it too
	}
	return f, nil
}

// Stat describes the directory itself (the one opened, not its path now).
func (d *Dir) Stat() (os.FileInfo, error) { return d.f.Stat() }

// NewFile is one file MakeDirAtomic writes.
type NewFile struct {
	Name string
	Data []byte
	Perm os.FileMode
}

// MakeDirAtomic creates the directory name (mode 0700) holding files,
// whole or not at all: a new temporary directory in d, the files written
// and synced in it through its descriptor (O_EXCL, never through a link),
// then renamed to name, which fails (an error wrapping fs.ErrExist) when
// name exists already, as a directory another process made first. Nothing
// is done by path, so a directory on the way swapped for a link meanwhile
// redirects none of it. On any failure the temporary directory is removed.
func (d *Dir) MakeDirAtomic(name string, files []NewFile) (err error) {
	if err := d.checkName(name); err != nil {
		return err
	}
	var buf [8]byte
	tmp := ""
	for range 100 {
		if _, err := io.ReadFull(randReader, buf[:]); err != nil {
			return err
		}
		n := fmt.Sprintf(".tmp-%x", buf)
		err := unix.Mkdirat(d.fd(), n, 0o700)
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			return d.err("mkdir", n, err)
		}
		tmp = n
		break
	}
	if tmp == "" {
		return fmt.Errorf("%s: no free temporary name", d.path)
	}
	tfd, err := unix.Openat(d.fd(), tmp, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		unix.Unlinkat(d.fd(), tmp, unix.AT_REMOVEDIR)
		return d.err("open", tmp, err)
	}
	td := &Dir{f: os.NewFile(uintptr(tfd), filepath.Join(d.path, tmp)), path: filepath.Join(d.path, tmp), uid: d.uid, gid: d.gid}
	defer td.Close()
	var made []string
	defer func() {
		if err != nil {
			for _, n := range made {
				unix.Unlinkat(td.fd(), n, 0)
			}
			unix.Unlinkat(d.fd(), tmp, unix.AT_REMOVEDIR)
		}
	}()
	for _, nf := range files {
		if err := td.checkName(nf.Name); err != nil {
			return err
		}
		fd, err := unix.Openat(td.fd(), nf.Name, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, uint32(nf.Perm.Perm()))
		if err != nil {
			return td.err("create", nf.Name, err)
		}
		made = append(made, nf.Name)
		f := os.NewFile(uintptr(fd), filepath.Join(td.path, nf.Name))
		_, err = f.Write(nf.Data)
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	if err := td.Sync(); err != nil {
		return err
	}
	if err := unix.Renameat(d.fd(), tmp, d.fd(), name); err != nil {
		if err == unix.ENOTEMPTY || err == unix.EEXIST {
			return d.err("rename", name, fs.ErrExist)
		}
		return d.err("rename", name, err)
	}
	return d.Sync()
}
