package access

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/airgap/airgap/dist/osfile"
	"github.com/airgap/airgap/server/internal/filestamp"
)

// LoginStore is where a store's single sign-on state lives: a directory
// (STORE/state/logins, LoginDir) or the store's bucket (the server
// package's, over the objects state/logins/…). LoginState holds every rule
// of sign-in and login tokens and calls only these; the two kinds of
// store differ only in how a file is read, created, taken and listed.
//
// Names are sub ("", "tokens", "codes", "used") and a name in it that
// LoginState made (hex, an extension); a listing may hold other names
// (anything another writer put there), which LoginState skips.
type LoginStore interface {
	// Read reads a file of at most maxLoginStateFile bytes (larger, or
	// not a regular file: an error); fs.ErrNotExist when there is none.
	Read(sub, name string) ([]byte, error)
	// Create writes a file whole only if there is none; an error wrapping
	// fs.ErrExist when another writer was first.
	Create(sub, name string, data []byte) error
	// Write writes a file whole, replacing any.
	Write(sub, name string, data []byte) error
	// Remove removes a file; fs.ErrNotExist when there is none (a store
	// that cannot tell returns nil).
	Remove(sub, name string) error
	// List lists at most max names of sub, with their modification times
	// when times is set.
	List(sub string, max int, times bool) ([]LoginEntry, error)
	// Take reads a file and removes it so that exactly one caller, of
	// every process sharing the store, gets its bytes; the others get
	// fs.ErrNotExist.
	Take(sub, name string) ([]byte, error)
	// Stamp changes whenever a file of tokens is created, replaced or
	// removed (cheap: asked every second).
	Stamp() (string, error)
	// Where names a file for messages.
	Where(sub, name string) string
}

// LoginEntry is a listed file.
type LoginEntry struct {
	Name     string
	Modified time.Time
}

// LoginDir is the directory store of a store's sign-in state, under
// stateDir (STORE/state): see LoginState for the layout. Every file is
// reached through the directory's descriptor (osfile.Dir): no link is
// followed below the store (unless the directory holding it is root's
// alone), a file root writes is created anew and given to the directory's
// owner through its open descriptor (fchown) before it is renamed into
// place, and a name is only read when it is a regular file, opened
// non-blocking (a FIFO is refused at once, never waited on).
func LoginDir(stateDir string) LoginStore {
	return &loginDir{dir: filepath.Join(stateDir, loginsDir)}
}

type loginDir struct{ dir string }

// mkdirs creates the directories (mode 0700).
func (l *loginDir) mkdirs() error {
	for _, d := range []string{l.dir, filepath.Join(l.dir, "tokens"), filepath.Join(l.dir, "codes"), filepath.Join(l.dir, "used")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return fmt.Errorf("the login state: %w", err)
		}
	}
	return nil
}

// open opens the subdirectory sub of the state ("" for the state itself)
// from the store down, following no link another user could have put
// (osfile.OpenDir).
func (l *loginDir) open(sub string) (*osfile.Dir, error) {
	state := filepath.Dir(l.dir)
	rel := []string{filepath.Base(state), loginsDir}
	if sub != "" {
		rel = append(rel, sub)
	}
	return osfile.OpenDir(filepath.Dir(state), rel...)
}

func (l *loginDir) Where(sub, name string) string { return filepath.Join(l.dir, sub, name) }

func (l *loginDir) Read(sub, name string) ([]byte, error) {
	d, err := l.open(sub)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	b, err := d.ReadFile(name, maxLoginStateFile)
	if errors.Is(err, osfile.ErrTooLarge) {
		return nil, fmt.Errorf("%s is larger than %d bytes", l.Where(sub, name), maxLoginStateFile)
	}
	return b, err
}

func (l *loginDir) Create(sub, name string, data []byte) error {
	d, err := l.open(sub)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.LinkNewFile(name, data, 0o600)
}

func (l *loginDir) Write(sub, name string, data []byte) error {
	d, err := l.open(sub)
	if err != nil {
		return err
	}
	defer d.Close()
	// Run as root ('airgap token revoke'), the new file is given to the
	// directory's owner, serve's user, who must read it (mode 0600), through
	// its descriptor before it has a name serve's user could swap.
	return d.WriteFileAtomic(name, data, 0o600)
}

func (l *loginDir) Remove(sub, name string) error {
	d, err := l.open(sub)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Remove(name); err != nil {
		return err
	}
	d.Sync()
	return nil
}

func (l *loginDir) List(sub string, max int, times bool) ([]LoginEntry, error) {
	d, err := l.open(sub)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Names(max)
	if err != nil {
		return nil, err
	}
	out := make([]LoginEntry, 0, len(names))
	for _, n := range names {
		e := LoginEntry{Name: n}
		if times {
			if e.Modified, err = d.ModTime(n); err != nil {
				continue
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// Take: the one whose remove succeeds has it.
func (l *loginDir) Take(sub, name string) ([]byte, error) {
	d, err := l.open(sub)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	b, err := d.ReadFile(name, maxLoginStateFile)
	if err != nil {
		return nil, err
	}
	if err := d.Remove(name); err != nil {
		return nil, fs.ErrNotExist // another request took it first
	}
	return b, nil
}

// Stamp is the tokens directory's (its modification time and size).
func (l *loginDir) Stamp() (string, error) {
	return filestamp.Of(filepath.Join(l.dir, "tokens"))
}
